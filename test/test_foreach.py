"""The _foreach_* operators (aten/native/foreach.cpp) against CPU: every overload torch.optim's
SGD/Adam/AdamW and clip_grad_norm_ use, in place and out of place, over lists of mixed
sizes (empty and 0-d tensors among them), a list longer than one launch's 16 tensors,
and a list with a non-dense tensor that takes ATen's per-tensor path; all native.
Also: a long list takes one launch per 16 tensors, and AdamW + clip_grad_norm_ with
foreach=True matches CPU."""
import copy

import pytest
import torch
from torch import nn

from _device_helpers import native_only

torch_opencl = pytest.importorskip("torch_opencl")
if not torch.opencl.is_available():
    pytest.skip("no OpenCL device", allow_module_level=True)

DEV = "opencl"
MIXED = [(3, 4), (0,), (), (17,), (2, 3, 5), (1000,), (64, 33), (5,)]
LONG = [MIXED[i % len(MIXED)] for i in range(40)]


def _lists(layout, dtype):
    """Three CPU lists of one layout: self, a, b (b is positive, for divisions and sqrt)."""
    g = torch.Generator().manual_seed(0)
    shapes = LONG if layout == "long" else MIXED
    s = [torch.randn(sh, generator=g, dtype=dtype) for sh in shapes]
    a = [torch.randn(sh, generator=g, dtype=dtype) for sh in shapes]
    b = [torch.rand(sh, generator=g, dtype=dtype) + 0.5 for sh in shapes]
    if layout == "noncontig":
        # Every other element of a longer tensor: not dense, so the list takes the per-tensor path.
        s[3] = torch.randn(34, generator=g, dtype=dtype)[::2]
    return s, a, b


def _to(lists, device):
    out = []
    for lst in lists:
        moved = []
        for t in lst:
            if t.is_contiguous():
                moved.append(t.to(device))
            else:  # keep the view's layout on the device
                base = t._base.to(device)
                moved.append(base.as_strided(t.size(), t.stride(), t.storage_offset()))
        out.append(moved)
    return out


def _scalars(n):
    return [0.25 + 0.1 * i for i in range(n)]


def _inplace(fn):
    def run(s, a, b, dev):
        fn(s, a, b, dev)
        return s
    return run


F = torch
CASES = {
    "add.Scalar": lambda s, a, b, d: F._foreach_add(s, 2.5),
    "add_.Scalar": _inplace(lambda s, a, b, d: F._foreach_add_(s, 2.5)),
    "add.List": lambda s, a, b, d: F._foreach_add(s, a, alpha=0.3),
    "add_.List": _inplace(lambda s, a, b, d: F._foreach_add_(s, a, alpha=-1.5)),
    "add.ScalarList": lambda s, a, b, d: F._foreach_add(s, _scalars(len(s))),
    "add_.ScalarList": _inplace(lambda s, a, b, d: F._foreach_add_(s, _scalars(len(s)))),
    "add.Tensor": lambda s, a, b, d: F._foreach_add(s, torch.tensor(0.7, device=d), alpha=2),
    "add_.Tensor.cpu": _inplace(lambda s, a, b, d: F._foreach_add_(s, torch.tensor(1.0, dtype=s[0].dtype), alpha=1.0)),
    "sub.Scalar": lambda s, a, b, d: F._foreach_sub(s, 0.5),
    "sub_.List": _inplace(lambda s, a, b, d: F._foreach_sub_(s, a, alpha=0.5)),
    "sub.ScalarList": lambda s, a, b, d: F._foreach_sub(s, _scalars(len(s))),
    "mul.Scalar": lambda s, a, b, d: F._foreach_mul(s, 0.9),
    "mul_.Scalar": _inplace(lambda s, a, b, d: F._foreach_mul_(s, 0.999)),
    "mul_.List": _inplace(lambda s, a, b, d: F._foreach_mul_(s, a)),
    "mul.ScalarList": lambda s, a, b, d: F._foreach_mul(s, _scalars(len(s))),
    "mul_.Tensor": _inplace(lambda s, a, b, d: F._foreach_mul_(s, torch.tensor(0.37, device=d))),
    "mul.Tensor.float64": lambda s, a, b, d: F._foreach_mul(s, torch.tensor(0.37, device=d, dtype=torch.float64)),
    "mul.Tensor.cpu": lambda s, a, b, d: F._foreach_mul(s, torch.tensor(3.0, dtype=s[0].dtype)),
    "div.Scalar": lambda s, a, b, d: F._foreach_div(s, 3.0),
    "div_.List": _inplace(lambda s, a, b, d: F._foreach_div_(s, b)),
    "div_.ScalarList": _inplace(lambda s, a, b, d: F._foreach_div_(s, _scalars(len(s)))),
    "div.Tensor": lambda s, a, b, d: F._foreach_div(s, torch.tensor(7.0, device=d)),
    "addcmul_.Scalar": _inplace(lambda s, a, b, d: F._foreach_addcmul_(s, a, b, 0.001)),
    "addcmul.ScalarList": lambda s, a, b, d: F._foreach_addcmul(s, a, b, _scalars(len(s))),
    "addcmul_.Tensor": _inplace(lambda s, a, b, d: F._foreach_addcmul_(s, a, b, torch.tensor(_scalars(len(s))))),
    "addcdiv_.Scalar": _inplace(lambda s, a, b, d: F._foreach_addcdiv_(s, a, b, -0.01)),
    "addcdiv.Scalar": lambda s, a, b, d: F._foreach_addcdiv(s, a, b),
    "addcdiv_.ScalarList": _inplace(lambda s, a, b, d: F._foreach_addcdiv_(s, a, b, _scalars(len(s)))),
    "addcdiv.Tensor": lambda s, a, b, d: F._foreach_addcdiv(s, a, b, torch.tensor(_scalars(len(s)))),
    "lerp_.Scalar": _inplace(lambda s, a, b, d: F._foreach_lerp_(s, a, 0.1)),
    "lerp.Scalar.large": lambda s, a, b, d: F._foreach_lerp(s, a, 0.8),
    "lerp_.List": _inplace(lambda s, a, b, d: F._foreach_lerp_(s, a, [t - 0.5 for t in b])),
    "lerp.List": lambda s, a, b, d: F._foreach_lerp(s, a, b),
    "lerp_.ScalarList": _inplace(lambda s, a, b, d: F._foreach_lerp_(s, a, _scalars(len(s)))),
    "sqrt": lambda s, a, b, d: F._foreach_sqrt(b),
    "sqrt_": _inplace(lambda s, a, b, d: F._foreach_sqrt_(s)),  # NaN for negatives, as on CPU
    "neg": lambda s, a, b, d: F._foreach_neg(s),
    "neg_": _inplace(lambda s, a, b, d: F._foreach_neg_(s)),
    "maximum_.List": _inplace(lambda s, a, b, d: F._foreach_maximum_(s, a)),
    "maximum.Scalar": lambda s, a, b, d: F._foreach_maximum(s, 0.1),
    "minimum.List": lambda s, a, b, d: F._foreach_minimum(s, a),
    "minimum_.ScalarList": _inplace(lambda s, a, b, d: F._foreach_minimum_(s, _scalars(len(s)))),
    "clamp_min_.Scalar": _inplace(lambda s, a, b, d: F._foreach_clamp_min_(s, -0.2)),
    "clamp_max.ScalarList": lambda s, a, b, d: F._foreach_clamp_max(s, _scalars(len(s))),
    "norm.2": lambda s, a, b, d: F._foreach_norm(s),
    "norm.1": lambda s, a, b, d: F._foreach_norm(s, 1),
    "zero_": _inplace(lambda s, a, b, d: F._foreach_zero_(s)),
    "copy_": _inplace(lambda s, a, b, d: F._foreach_copy_(s, a)),
}


def _check(got, want, dtype, case):
    assert len(got) == len(want)
    rtol = 1e-4 if case.startswith("norm") else (1e-5 if dtype == torch.float32 else 1e-7)
    for g, w in zip(got, want):
        assert g.device.type == DEV
        torch.testing.assert_close(g.cpu(), w, rtol=rtol, atol=rtol, equal_nan=True)


# float64 runs the same kernels' other program: the mixed layout is enough there.
@pytest.mark.parametrize("dtype,layout", [(torch.float32, "mixed"), (torch.float32, "long"),
                                          (torch.float32, "noncontig"), (torch.float64, "mixed")],
                         ids=["f32-mixed", "f32-long", "f32-noncontig", "f64-mixed"])
@pytest.mark.parametrize("case", list(CASES))
def test_foreach_matches_cpu(case, dtype, layout):
    fn = CASES[case]
    cpu = _lists(layout, dtype)
    dev = _to(cpu, DEV)
    want = fn(*cpu, "cpu")
    with native_only():
        got = fn(*dev, DEV)
    _check(got, want, dtype, case)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
@pytest.mark.parametrize("case", ["add_.List", "mul.Scalar", "addcdiv_.ScalarList", "lerp_.Scalar", "sqrt", "norm.2"])
def test_foreach_half_storage(case, dtype):
    cpu = _lists("mixed", dtype)
    dev = _to(cpu, DEV)
    want = CASES[case](*cpu, "cpu")
    with native_only():
        got = CASES[case](*dev, DEV)
    for g, w in zip(got, want):
        assert g.dtype == dtype
        torch.testing.assert_close(g.cpu(), w, rtol=2e-2, atol=2e-2)


def test_norm_inf_and_nan():
    cpu = [torch.randn(50), torch.tensor([1.0, float("nan"), -3.0]), torch.tensor(-4.5), torch.empty(0)]
    dev = [t.to(DEV) for t in cpu]
    with native_only():
        got = torch._foreach_norm(dev[:3], float("inf"))
        got2 = torch._foreach_norm(dev, 2)
    for g, w in zip(got, torch._foreach_norm(cpu[:3], float("inf"))):
        torch.testing.assert_close(g.cpu(), w, equal_nan=True)
    for g, w in zip(got2, torch._foreach_norm(cpu, 2)):
        torch.testing.assert_close(g.cpu(), w, rtol=1e-4, atol=1e-5, equal_nan=True)


def test_maximum_propagates_nan():
    nan = float("nan")
    cpu = [[torch.tensor([nan, 1.0, 2.0])], [torch.tensor([1.0, nan, 1.0])]]
    dev = _to(cpu, DEV)
    with native_only():
        got = [torch._foreach_maximum(*dev), torch._foreach_minimum(dev[0], nan), torch._foreach_maximum(dev[0], 1.5)]
    want = [torch._foreach_maximum(*cpu), torch._foreach_minimum(cpu[0], nan), torch._foreach_maximum(cpu[0], 1.5)]
    for g, w in zip(got, want):
        torch.testing.assert_close(g[0].cpu(), w[0], equal_nan=True)


def test_long_list_takes_few_launches():
    s, a, _ = _to(_lists("long", torch.float32), DEV)
    count = torch_opencl._C._launch_count
    before = count()
    torch._foreach_add_(s, a, alpha=0.5)
    assert count() - before == 3  # 40 tensors, 16 per launch
    before = count()
    torch._foreach_norm(s)
    assert count() - before == 6  # a partial and a final launch per 16 tensors
    # The per-tensor path (one non-dense tensor) launches once per non-empty tensor.
    s2, a2, _ = _to(_lists("noncontig", torch.float32), DEV)
    before = count()
    torch._foreach_add_(s2, a2, alpha=0.5)
    assert count() - before >= sum(t.numel() > 0 for t in s2)


def test_errors_match_cpu():
    s = [torch.randn(3, device=DEV), torch.randn(4, device=DEV)]
    with pytest.raises(RuntimeError, match="same"):
        torch._foreach_add(s, [torch.randn(3, device=DEV)])
    with pytest.raises(RuntimeError):
        torch._foreach_mul_(s, [1.0])
    with pytest.raises(RuntimeError):
        torch._foreach_add(s, [torch.randn(3, device=DEV), torch.randn(5, device=DEV)])


def test_mixed_dtypes_take_the_slow_path():
    cpu = [torch.randn(5), torch.randn(3, dtype=torch.float64), torch.arange(4)]
    dev = [t.to(DEV) for t in cpu]
    with native_only():
        got = torch._foreach_mul(dev, 2)
    for g, w in zip(got, torch._foreach_mul(cpu, 2)):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g.cpu(), w)


def _mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(12, 32), nn.Tanh(), nn.Linear(32, 16), nn.Tanh(), nn.Linear(16, 3))


@pytest.mark.parametrize("opt", ["adamw", "adam_amsgrad", "sgd"])
def test_optimizer_step_with_clipping_matches_cpu(opt):
    cpu_model = _mlp()
    dev_model = copy.deepcopy(cpu_model).to(DEV)

    def make(params):
        if opt == "adamw":
            return torch.optim.AdamW(params, lr=1e-2, weight_decay=0.1, foreach=True)
        if opt == "adam_amsgrad":
            return torch.optim.Adam(params, lr=1e-2, weight_decay=0.1, amsgrad=True, maximize=True, foreach=True)
        return torch.optim.SGD(params, lr=1e-2, momentum=0.9, nesterov=True, weight_decay=0.1, foreach=True)

    opts = [make(cpu_model.parameters()), make(dev_model.parameters())]
    g = torch.Generator().manual_seed(1)
    for _ in range(3):
        x, y = torch.randn(8, 12, generator=g), torch.randn(8, 3, generator=g)
        for model, o, dev in ((cpu_model, opts[0], "cpu"), (dev_model, opts[1], DEV)):
            o.zero_grad()
            nn.functional.mse_loss(model(x.to(dev)), y.to(dev)).backward()
            with native_only():
                nn.utils.clip_grad_norm_(model.parameters(), 0.5, foreach=True)
                o.step()
    for p_cpu, p_dev in zip(cpu_model.parameters(), dev_model.parameters()):
        torch.testing.assert_close(p_dev.detach().cpu(), p_cpu.detach(), rtol=1e-4, atol=1e-5)
