"""Device-generic tests, instantiated for the opencl device by PyTorch's own framework
(torch.testing._internal.common_device_type, through PrivateUse1TestBase), the way PyTorch
instantiates its tests for cuda: the test methods take `device` ("opencl:0") and `dtype` / `op`
parameters. Unlike test_conformance.py (samples made on the CPU, then copied), here the OpInfo
sample inputs are generated on the device itself, which exercises the factory functions and
random fills on the device too."""
import torch

import torch_opencl  # noqa: F401  (must precede common_device_type: it looks for the backend at import)
from torch.testing._internal.common_device_type import (
    PrivateUse1TestBase,
    dtypes,
    instantiate_device_type_tests,
    ops,
)
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import TestCase

import _opinfo_harness as H

# A small set of frequent ops: the full CI slice already runs in test_conformance.py.
GENERIC_OPS = [
    "add", "mul", "div.no_rounding_mode", "exp", "tanh", "sigmoid", "sum", "mean", "mm",
    "softmax", "nn.functional.relu", "where", "cat", "transpose", "clamp",
]
generic_op_db = [op for op in op_db if op.full_name in GENERIC_OPS]
assert len(generic_op_db) == len(GENERIC_OPS), "an OpInfo of GENERIC_OPS is missing from op_db"


class _SilentFallback:
    """The CPU fallback serves most ops today; keep it quiet while these tests run."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls._mode = torch.opencl.fallback_mode()
        torch.opencl.set_fallback_mode("silent")

    @classmethod
    def tearDownClass(cls):
        torch.opencl.set_fallback_mode(cls._mode)
        super().tearDownClass()


def _to_cpu(x):
    return H.tree_map(lambda t: t.detach().cpu().requires_grad_(t.requires_grad), x)


class TestOpenCLOps(_SilentFallback, TestCase):
    @ops(generic_op_db, allowed_dtypes=(torch.float32,))
    def test_compare_cpu(self, device, dtype, op):
        self.assertEqual(torch.device(device).type, "opencl")
        for sample in op.sample_inputs(device, dtype):
            self.assertEqual(sample.input.device.type if isinstance(sample.input, torch.Tensor) else "opencl", "opencl")
            dev_out = sample.output_process_fn_grad(op(sample.input, *sample.args, **sample.kwargs))
            cpu_in, cpu_args, cpu_kwargs = _to_cpu(sample.input), _to_cpu(sample.args), _to_cpu(sample.kwargs)
            cpu_out = sample.output_process_fn_grad(op(cpu_in, *cpu_args, **cpu_kwargs))
            for d in H.tree_tensors(dev_out):
                self.assertEqual(d.device.type, "opencl")
            self.assertEqual(_to_cpu(dev_out), cpu_out, atol=1e-5, rtol=1e-4)

    @ops([op for op in generic_op_db if op.supports_out], allowed_dtypes=(torch.float32,))
    def test_out(self, device, dtype, op):
        for sample in op.sample_inputs(device, dtype):
            expected = op(sample.input, *sample.args, **sample.kwargs)
            if not isinstance(expected, torch.Tensor):
                continue
            out = torch.full_like(expected, float("nan"))
            ret = op(sample.input, *sample.args, **sample.kwargs, out=out)
            self.assertIs(ret, out)
            self.assertEqual(out.cpu(), expected.cpu())


class TestOpenCLTensorBasics(_SilentFallback, TestCase):
    @dtypes(torch.float32, torch.float64, torch.int64, torch.bool)
    def test_factories(self, device, dtype):
        self.assertEqual(torch.zeros(2, 3, device=device, dtype=dtype).cpu(), torch.zeros(2, 3, dtype=dtype))
        self.assertEqual(torch.ones(4, device=device, dtype=dtype).cpu(), torch.ones(4, dtype=dtype))
        self.assertEqual(torch.full((2, 2), 1, device=device, dtype=dtype).cpu(), torch.full((2, 2), 1, dtype=dtype))
        e = torch.empty(3, 0, 2, device=device, dtype=dtype)
        self.assertEqual((e.shape, e.dtype, e.device.type), (torch.Size([3, 0, 2]), dtype, "opencl"))
        if dtype != torch.bool:
            self.assertEqual(torch.arange(7, device=device, dtype=dtype).cpu(), torch.arange(7, dtype=dtype))

    @dtypes(torch.float32, torch.float64, torch.int64)
    def test_round_trip_and_dtype_conversion(self, device, dtype):
        x = torch.testing.make_tensor((5, 7), device="cpu", dtype=dtype, noncontiguous=True)
        d = x.to(device)
        self.assertEqual(d.device.type, "opencl")
        self.assertEqual(d.cpu(), x)
        self.assertEqual(d.to(torch.float32).cpu(), x.to(torch.float32))
        self.assertEqual(d.t().contiguous().cpu(), x.t().contiguous())

    @dtypes(torch.float32, torch.float64)
    def test_make_tensor_on_device(self, device, dtype):
        t = torch.testing.make_tensor((4, 5), device=device, dtype=dtype, low=-2, high=3)
        self.assertEqual(t.device.type, "opencl")
        c = t.cpu()
        self.assertTrue(bool(((c >= -2) & (c <= 3)).all()))

    def test_device_is_the_primary_device(self, device):
        self.assertEqual(device, self.get_primary_device())
        self.assertEqual(torch.device(device).type, torch._C._get_privateuse1_backend_name())


instantiate_device_type_tests(TestOpenCLOps, globals(), only_for="privateuse1")
instantiate_device_type_tests(TestOpenCLTensorBasics, globals(), only_for="privateuse1")

# pytest collects the instantiated classes (TestOpenCLOpsPRIVATEUSE1, ...); a missing backend
# would instantiate nothing and pass silently, so say so.
_instantiated = [n for n, v in list(globals().items()) if isinstance(v, type) and issubclass(v, PrivateUse1TestBase)
                 and n.startswith("TestOpenCL")]
assert len(_instantiated) == 2, f"instantiate_device_type_tests made {_instantiated}, expected two opencl classes"

if __name__ == "__main__":
    from torch.testing._internal.common_utils import run_tests

    run_tests()
