"""What a user does with an opencl tensor before any kernel matters: views that share
storage, in-place ops through views, printing, item(), out-of-bounds views, the
module/tensor helpers and autograd through the alias keys."""
import pytest
import torch
from torch import nn

pytestmark = pytest.mark.skipif(not torch.opencl.is_available(), reason="no OpenCL device")

DEV = torch.device("opencl")


def test_device_type_and_helpers():
    x = torch.ones(3).opencl()
    assert x.device.type == "opencl" and x.device.index == 0
    assert x.is_opencl and not torch.ones(1).is_opencl
    m = nn.Linear(2, 2).opencl()
    assert all(p.device.type == "opencl" for p in m.parameters())
    assert torch.device("opencl:0") == x.device
    s = torch.ones(3).untyped_storage().opencl()
    assert s.device.type == "opencl"


@pytest.mark.parametrize(
    "make_view",
    [
        lambda t: t.view(4, 6),
        lambda t: t[1:3],
        lambda t: t.t(),
        lambda t: t[:, ::2],
        lambda t: t.reshape(24),
        lambda t: t.unsqueeze(0).expand(2, 6, 4)[1],
        lambda t: t.narrow(1, 1, 2),
        lambda t: t.select(0, 2),
        lambda t: t.transpose(0, 1)[1:],
        lambda t: t.as_strided((2, 2), (5, 1), 3),
    ],
    ids=["view", "slice", "t", "step", "reshape", "expand", "narrow", "select", "transpose_slice", "as_strided"],
)
def test_views_share_storage_and_in_place_shows_in_base(make_view):
    base_cpu = torch.arange(24, dtype=torch.float32).reshape(6, 4)
    base = base_cpu.to(DEV)
    v, v_cpu = make_view(base), make_view(base_cpu)
    assert v._base is base or v.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
    assert v.shape == v_cpu.shape and v.stride() == v_cpu.stride()
    assert v.storage_offset() == v_cpu.storage_offset()
    torch.testing.assert_close(v.cpu(), v_cpu)
    if v_cpu.is_contiguous() or v_cpu._is_view():
        try:
            v_cpu.mul_(10)
        except RuntimeError:  # expanded views refuse in-place writes on CPU too
            with pytest.raises(RuntimeError):
                v.mul_(10)
            return
        v.mul_(10)
        torch.testing.assert_close(base.cpu(), base_cpu)


def test_copy_into_a_view_and_fill_through_a_view():
    base = torch.zeros(5, 5, device=DEV)
    base[1:4, 1:4] = 7
    base[:, 0].fill_(3)
    base.diagonal().zero_()
    want = torch.zeros(5, 5)
    want[1:4, 1:4] = 7
    want[:, 0].fill_(3)
    want.diagonal().zero_()
    assert torch.equal(base.cpu(), want)


def test_views_outside_their_storage_are_refused_as_on_cpu():
    for t in (torch.zeros(4), torch.zeros(4, device=DEV)):
        with pytest.raises(RuntimeError, match="out of bounds for storage"):
            t.as_strided((3,), (2,), 0)
        with pytest.raises(RuntimeError, match="out of bounds for storage"):
            t.as_strided((2,), (1,), 3)


def test_set_and_resize_keep_contents():
    x = torch.arange(6.0, device=DEV)
    x.resize_(10)
    assert torch.equal(x[:6].cpu(), torch.arange(6.0))
    y = torch.empty(0, device=DEV)
    y.set_(x.untyped_storage(), 2, (2, 2), (2, 1))
    assert torch.equal(y.cpu(), torch.tensor([[2.0, 3.0], [4.0, 5.0]]))
    y[0, 0] = 100
    assert x[2].item() == 100


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int32, torch.bool,
                                   torch.float16, torch.bfloat16, torch.uint8])
def test_item_and_printing_match_cpu(dtype):
    cpu = (torch.arange(12) % 5).reshape(3, 4).to(dtype)
    dev = cpu.to(DEV)
    assert dev[1, 2].item() == cpu[1, 2].item()
    assert type(dev[0, 0].item()) is type(cpu[0, 0].item())
    # repr is CPU's, with the device named.
    text = repr(dev)
    assert text.startswith("tensor(") and "device='opencl:0'" in text
    assert repr(cpu).split("]]")[0] == text.split("]]")[0]
    assert str(dev[0]) .startswith("tensor([")
    assert dev.tolist() == cpu.tolist()


def test_item_of_a_many_element_tensor_is_an_error():
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        torch.ones(2, device=DEV).item()


def _same_text_but_device(dev, cpu):
    # The device suffix may wrap the last line; compare with whitespace removed.
    squeeze = lambda t: "".join(repr(t).split())  # noqa: E731
    assert squeeze(dev).replace(",device='opencl:0'", "") == squeeze(cpu)


def test_printing_large_and_special_values():
    _same_text_but_device(torch.tensor([float("nan"), float("inf"), -float("inf"), 1e-30, 3.5]).to(DEV),
                          torch.tensor([float("nan"), float("inf"), -float("inf"), 1e-30, 3.5]))
    big = torch.arange(5000, dtype=torch.float32)
    _same_text_but_device(big.to(DEV), big)  # summarised with "..." as on CPU


def test_autograd_through_views_and_in_place():
    a_cpu = torch.randn(4, 5, requires_grad=True)
    a = a_cpu.detach().to(DEV).requires_grad_()
    for t in (a_cpu, a):
        y = t * 2
        y[:, 1:3].mul_(3)
        (y.t() * y.t()).sum().backward()
    torch.testing.assert_close(a.grad.cpu(), a_cpu.grad)
    assert a.grad.device == torch.device("opencl:0")


def test_empty_and_zero_size_tensors():
    for shape in [(0,), (3, 0), (0, 4, 2)]:
        x = torch.empty(shape, device=DEV)
        assert x.shape == shape and x.numel() == 0
        assert x.cpu().shape == shape
        assert (x + 1).shape == shape
    z = torch.zeros((), device=DEV)
    assert z.dim() == 0 and z.item() == 0.0
