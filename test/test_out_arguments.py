"""out= refuses what CPU and CUDA refuse (aten/kernel_support/out_arguments.h, shared by the CPU fallback and the
native out= kernels): an out= on another device, 0-dim inputs or not, and a float result into an integer out=.
And what it accepts it writes as CPU does (mode's out= form). test_conformance_common.py checks every OpInfo so."""
import pytest
import torch

import torch_opencl  # noqa: F401

D = "opencl"
pytestmark = pytest.mark.usefixtures("silent_fallback")

X0 = 2.5  # a 0-dim input: a CPU 0-dim tensor passes for a scalar among device tensors, never as an out=
ZERO_DIM_OPS = {
    "mvlgamma": lambda x, out: torch.mvlgamma(x, 1, out=out),
    "igamma": lambda x, out: torch.igamma(x, x, out=out),
    "igammac": lambda x, out: torch.igammac(x, x, out=out),
    "gcd": lambda x, out: torch.gcd(x.long(), x.long(), out=out.long()),
    "lcm": lambda x, out: torch.lcm(x.long(), x.long(), out=out.long()),
    "zeta": lambda x, out: torch.special.zeta(x, x, out=out),
    "bessel_j0": lambda x, out: torch.special.bessel_j0(x, out=out),
    "modified_bessel_k1": lambda x, out: torch.special.modified_bessel_k1(x, out=out),
    "chebyshev_polynomial_t": lambda x, out: torch.special.chebyshev_polynomial_t(x, x, out=out),
    "hermite_polynomial_h": lambda x, out: torch.special.hermite_polynomial_h(x, x, out=out),
    "polar": lambda x, out: torch.polar(x, x, out=out.to(torch.complex64)),
    "complex": lambda x, out: torch.complex(x, x, out=out.to(torch.complex64)),
    "add": lambda x, out: torch.add(x, x, out=out),
}


@pytest.mark.parametrize("name", sorted(ZERO_DIM_OPS))
def test_a_cpu_out_for_0dim_device_inputs_raises(name):
    fn = ZERO_DIM_OPS[name]
    want = fn(torch.tensor(X0), torch.empty(()))  # CPU's answer: the op itself works
    with pytest.raises(RuntimeError, match="device"):
        fn(torch.tensor(X0, device=D), torch.empty(()))
    out = torch.empty((), device=D)
    got = fn(torch.tensor(X0, device=D), out)
    torch.testing.assert_close(got.cpu(), want)


def test_addr_refuses_an_out_on_the_other_device_both_ways():
    a, v1, v2 = torch.randn(3, 4), torch.randn(3), torch.randn(4)
    with pytest.raises(RuntimeError, match="out= tensor is on cpu"):
        torch.addr(a.to(D), v1.to(D), v2.to(D), out=torch.empty(3, 4))
    with pytest.raises(RuntimeError, match="device"):
        torch.addr(a, v1, v2, out=torch.empty(3, 4, device=D))
    out = torch.empty(3, 4, device=D)
    assert torch.addr(a.to(D), v1.to(D), v2.to(D), out=out) is out
    torch.testing.assert_close(out.cpu(), torch.addr(a, v1, v2))
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.addr(a.to(D), v1.to(D), v2.to(D), out=torch.empty(3, 4, dtype=torch.long, device=D))


@pytest.mark.parametrize("op", [torch.mean, torch.nansum])
@pytest.mark.parametrize("dims", [dict(dim=0), dict()])
def test_a_float_reduction_into_an_int64_out_raises_as_on_cpu(op, dims):
    x = torch.tensor([[1.5, float("nan")], [2.5, 3.0]])
    shape = (2,) if dims else ()
    with pytest.raises(RuntimeError):
        op(x, **dims, out=torch.empty(shape, dtype=torch.long))
    with pytest.raises(RuntimeError, match="can't be cast"):
        op(x.to(D), **dims, out=torch.empty(shape, dtype=torch.long, device=D))


def test_nansum_and_mean_of_integers_and_into_wider_floats_as_cpu():
    x = torch.tensor([[1.5, float("nan")], [2.5, 3.0]])
    for op in (torch.mean, torch.nansum):
        out = torch.empty(2, dtype=torch.float64, device=D)
        op(x.to(D), dim=0, out=out)
        torch.testing.assert_close(out.cpu(), op(x, dim=0, out=torch.empty(2, dtype=torch.float64)), equal_nan=True)
    n = torch.tensor([[1, 2], [3, 4]])
    out = torch.empty(2, dtype=torch.long, device=D)
    torch.nansum(n.to(D), dim=0, out=out)
    torch.testing.assert_close(out.cpu(), torch.nansum(n, dim=0))


@pytest.mark.parametrize("shape,dim,keepdim", [((4, 5), 1, False), ((4, 5), 0, True), ((), 0, False)])
def test_mode_out_as_cpu(shape, dim, keepdim):
    x = torch.randint(0, 3, shape).float()
    want = torch.mode(x, dim, keepdim)
    values, indices = torch.empty(0, device=D), torch.empty(0, dtype=torch.long, device=D)
    got = torch.mode(x.to(D), dim, keepdim, out=(values, indices))
    assert got[0] is values and got[1] is indices
    torch.testing.assert_close(values.cpu(), want.values)
    if x.dim():  # indices point at the values (ties: any of the equal elements)
        picked = x.gather(dim, indices.cpu() if keepdim else indices.cpu().unsqueeze(dim))
        torch.testing.assert_close(picked if keepdim else picked.squeeze(dim), want.values)
    else:
        assert indices.shape == () and indices.item() == 0
    with pytest.raises(RuntimeError, match="for indices output"):
        torch.mode(x.to(D), dim, keepdim, out=(values, torch.empty(0, dtype=torch.int32, device=D)))
    with pytest.raises(RuntimeError, match="device"):
        torch.mode(x.to(D), dim, keepdim, out=(torch.empty(0), torch.empty(0, dtype=torch.long)))
