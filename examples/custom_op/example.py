"""myops::myadd on the OpenCL device, forward and backward, checked against its CPU kernel.

    python examples/custom_op/example.py build/libmyops.so

The library is what examples/custom_op/CMakeLists.txt builds; loading it registers the operator for CPU,
opencl and autograd.
"""
import sys

import torch
import torch_opencl  # noqa: F401  (registers the opencl device; torch's backend autoload does it too)


def main(library):
    torch.ops.load_library(library)
    a = torch.randn(1000, requires_grad=True)
    b = torch.randn(1000, requires_grad=True)
    a_dev = a.detach().to("opencl").requires_grad_()
    b_dev = b.detach().to("opencl").requires_grad_()

    out = torch.ops.myops.myadd(a, b)
    out_dev = torch.ops.myops.myadd(a_dev, b_dev)
    (out * out).sum().backward()
    (out_dev * out_dev).sum().backward()

    torch.testing.assert_close(out_dev.cpu(), out)
    torch.testing.assert_close(a_dev.grad.cpu(), a.grad)
    torch.testing.assert_close(b_dev.grad.cpu(), b.grad)
    print(f"myops::myadd on {out_dev.device} matches CPU, forward and backward")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "build/libmyops.so")
