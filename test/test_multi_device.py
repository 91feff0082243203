"""Two opencl devices. These tests need two selected devices: scripts/test.sh runs this file in a
pass of its own with POCL_DEVICES="pthread pthread" (PoCL's CPU device twice) and
TORCH_OPENCL_TEST_DEVICES=2, which fails the run (conftest.py) rather than skip when the second
device is missing. In the ordinary one-device pass they skip."""
import pytest
import torch

import torch_opencl  # noqa: F401

pytestmark = pytest.mark.skipif(torch.opencl.device_count() < 2,
                                reason="needs two opencl devices (the two-device pass of scripts/test.sh)")

D0, D1 = torch.device("opencl", 0), torch.device("opencl", 1)


@pytest.fixture(autouse=True)
def current_device_is_0():
    torch.opencl.set_device(0)
    yield
    torch.opencl.set_device(0)


def test_copy_between_devices():
    x = torch.arange(10.0)
    a = x.to(D0)
    b = a.to(D1)
    assert b.device == D1
    torch.testing.assert_close(b.cpu(), x)
    torch.testing.assert_close(a[::2].to(D1, torch.float64).cpu(), x[::2].to(torch.float64))


def test_storage_resize_stays_on_the_storages_device():
    t = torch.arange(4.0, device=D1)
    storage = t.untyped_storage()
    storage.resize_(64)  # the current device is opencl:0
    assert storage.device == D1 and storage.nbytes() == 64
    torch.testing.assert_close(t.cpu(), torch.arange(4.0))  # the first 16 bytes are kept
    grown = torch.empty(0, device=D1).set_(storage, 0, (16,), (1,))
    grown[4:] = 7.0
    torch.testing.assert_close(grown.cpu()[:4], torch.arange(4.0))
    assert (grown[4:].cpu() == 7).all()


def test_tensor_resize_and_set_on_device_1():
    t = torch.arange(4.0, device=D1)
    t.resize_(100)  # grows the storage: on opencl:1, with the old values kept
    assert t.device == D1 and t.untyped_storage().device == D1
    torch.testing.assert_close(t[:4].cpu(), torch.arange(4.0))
    u = torch.empty(0, device=D1).set_(t.untyped_storage(), 2, (50,), (1,))
    torch.testing.assert_close(u[:2].cpu(), torch.tensor([2.0, 3.0]))


@pytest.mark.filterwarnings("ignore:The operator")
def test_native_and_fallback_operators_run_on_the_tensors_device():
    x = torch.randn(6, 6)
    d = x.to(D1)
    torch.testing.assert_close((d * 2 + 1).sum(0).cpu(), (x * 2 + 1).sum(0), rtol=1e-5, atol=1e-5)
    y = torch.hypot(d[:, ::2], d[:, 1::2])  # no opencl kernel: the fallback, back to opencl:1
    assert y.device == D1
    torch.testing.assert_close(y.cpu(), torch.hypot(x[:, ::2], x[:, 1::2]))


@pytest.mark.filterwarnings("ignore:The operator")
def test_tensors_on_two_devices_are_an_error():
    a, b = torch.ones(3, device=D0), torch.ones(3, device=D1)
    with pytest.raises(RuntimeError, match="same device"):
        a + b
    with pytest.raises(RuntimeError, match="same device"):
        torch.hypot(a, b)  # the fallback checks too


def test_memory_of_each_device_is_its_own():
    before = torch.opencl.memory_allocated(1)
    x = torch.empty(1 << 20, dtype=torch.uint8, device=D1)
    assert torch.opencl.memory_allocated(1) - before >= 1 << 20
    del x
    torch.opencl.empty_cache()
    assert torch.opencl.memory_allocated(1) == before

