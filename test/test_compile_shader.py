"""torch.opencl.compile_shader: user kernels called with tensors (python/torch_opencl/shader.py,
aten/user_kernel.cpp, runtime/kernel_signature.cpp). One program per test module where possible:
each distinct source costs PoCL about a second of LLVM on a cold cache."""
import os
import subprocess
import sys
import textwrap

import pytest
import torch

SOURCE = textwrap.dedent(
    """
    // A comment that mentions __kernel void not_a_kernel(int x) is no kernel.
    #define SCALE(v, a) ((a) * (v))
    __kernel void saxpy(__global float* y, __global const float* x, float a, int n) {
        int i = get_global_id(0);
        if (i < n) y[i] += SCALE(x[i], a);
    }

    /* one work-group per row; the group's partial sums meet in local memory */
    __kernel __attribute__((reqd_work_group_size(64, 1, 1)))
    void row_sum(__global const float* restrict x, __global float* out, unsigned int cols,
                 __local float* scratch) {
        const size_t row = get_group_id(0), lid = get_local_id(0);
        float acc = 0.0f;
        for (uint c = lid; c < cols; c += 64) acc += x[row * cols + c];
        scratch[lid] = acc;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint s = 32; s > 0; s >>= 1) {
            if (lid < s) scratch[lid] += scratch[lid + s];
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (lid == 0) out[row] = scratch[0];
    }

    __kernel void add_bytes(__global uchar* dst, __constant uchar* src, long n) {
        long i = get_global_id(0);
        if (i < n) dst[i] = (uchar)(dst[i] + src[i]);
    }

    __kernel void strided_scale(__global float* x, long stride, float a) {
        x[get_global_id(0) * stride] *= a;
    }

    __kernel void scale4(__global float4* x, float a) {
        x[get_global_id(0)] *= a;
    }

    __kernel void copy_const(__global float* const dst,
                             __global const float* const src) {
        dst[get_global_id(0)] = src[get_global_id(0)];
    }
    """
)


@pytest.fixture(scope="module")
def lib():
    return torch.opencl.compile_shader(SOURCE)


def test_kernels_are_attributes(lib):
    assert sorted(lib.kernel_names) == ["add_bytes", "copy_const", "row_sum", "saxpy", "scale4", "strided_scale"]
    assert "saxpy" in dir(lib)
    assert "__global float* y" in repr(lib.saxpy)
    with pytest.raises(AttributeError, match="no kernel 'nope'.*saxpy"):
        lib.nope


def test_saxpy(lib):
    x = torch.randn(1000)
    y = torch.randn(1000)
    yo = y.to("opencl")
    lib.saxpy(yo, x.to("opencl"), 2.5, 1000, threads=1000)
    torch.testing.assert_close(yo.cpu(), y + 2.5 * x)
    # Without threads=, one work-item per element of the first tensor.
    lib.saxpy(yo, x.to("opencl"), -2.5, 1000)
    torch.testing.assert_close(yo.cpu(), y, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("offset", [1, 3, 33])
def test_views_with_odd_offsets(lib, offset):
    """A view's first element sits at any byte of its buffer; the kernel sees it as element 0."""
    base_y = torch.randn(300)
    base_x = torch.randn(300)
    y = base_y.to("opencl")[offset : offset + 200]
    x = base_x.to("opencl")[offset + 7 : offset + 207]
    assert y.storage_offset() == offset
    lib.saxpy(y, x, 3.0, 200, threads=256, group_size=64)
    want = base_y.clone()
    want[offset : offset + 200] += 3.0 * base_x[offset + 7 : offset + 207]
    torch.testing.assert_close(y._base.cpu(), want)  # the elements around the view are untouched
    # Bytes: offsets 1..3 bytes from the block's start, in a __global and a __constant parameter.
    a = torch.randint(0, 100, (64,), dtype=torch.uint8)
    b = torch.randint(0, 100, (64,), dtype=torch.uint8)
    ad, bd = a.to("opencl"), b.to("opencl")
    lib.add_bytes(ad[offset:], bd[offset + 1 :], 20, threads=20)
    want = a.clone()
    want[offset : offset + 20] += b[offset + 1 : offset + 21]
    assert torch.equal(ad.cpu(), want)
    # `T* const` parameters cannot be moved by the offset: they are rebuilt as locals instead.
    dst = torch.zeros(60, device="opencl")
    src = torch.arange(60.0, device="opencl")
    lib.copy_const(dst[offset:], src[offset + 2 :], threads=10)
    assert torch.equal(dst.cpu()[offset : offset + 10], torch.arange(offset + 2.0, offset + 12.0))


def test_row_reduction_with_local_memory(lib):
    x = torch.randn(37, 500)
    out = torch.empty(37, device="opencl")
    lib.row_sum(x.to("opencl"), out, 500, torch.opencl.LocalMemory(64 * 4), threads=37 * 64, group_size=64)
    torch.testing.assert_close(out.cpu(), x.sum(1), rtol=1e-4, atol=1e-4)


def test_strided_kernel_and_vector_types():
    lib = torch.opencl.compile_shader(SOURCE, require_contiguous=False)
    x = torch.arange(24.0).reshape(4, 6)
    xo = x.to("opencl")
    column = xo[:, 2]  # stride 6, offset 2
    lib.strided_scale(column, 6, 10.0, threads=4)
    want = x.clone()
    want[:, 2] *= 10
    assert torch.equal(xo.cpu(), want)
    v = torch.arange(16.0, device="opencl")
    lib.scale4(v, 2.0, threads=4)
    assert torch.equal(v.cpu(), torch.arange(16.0) * 2)
    # float4 needs 16-byte alignment: a view one float in is refused, four floats in is fine.
    with pytest.raises(RuntimeError, match="multiple of 16"):
        lib.scale4(v[1:], 2.0, threads=3)
    lib.scale4(v[4:], 0.5, threads=3)
    assert torch.equal(v.cpu(), torch.cat([torch.arange(4.0) * 2, torch.arange(4.0, 16.0)]))


def test_argument_errors_leave_the_device_working(lib):
    y = torch.zeros(8, device="opencl")
    x = torch.ones(8, device="opencl")
    with pytest.raises(TypeError, match=r"takes 4 argument\(s\), got 3.*saxpy\(__global float\* y"):
        lib.saxpy(y, x, 1.0, threads=8)
    with pytest.raises(TypeError, match="needs a torch.float32 tensor; got torch.int64"):
        lib.saxpy(y, torch.ones(8, dtype=torch.long, device="opencl"), 1.0, 8, threads=8)
    with pytest.raises(RuntimeError, match="expected an opencl tensor, got one on cpu"):
        lib.saxpy(y, torch.ones(8), 1.0, 8, threads=8)
    with pytest.raises(TypeError, match="takes a tensor; got a float"):
        lib.saxpy(y, 1.0, 1.0, 8, threads=8)
    with pytest.raises(TypeError, match="takes an int; got a float"):
        lib.saxpy(y, x, 1.0, 8.0, threads=8)
    with pytest.raises(ValueError, match="does not fit in int"):
        lib.saxpy(y, x, 1.0, 2**40, threads=8)
    with pytest.raises(RuntimeError, match="not contiguous.*x.contiguous"):
        lib.saxpy(y, torch.ones(8, 2, device="opencl")[:, 0], 1.0, 8, threads=8)
    with pytest.raises(ValueError, match="not a multiple of group_size"):
        lib.saxpy(y, x, 1.0, 8, threads=10, group_size=4)
    with pytest.raises(ValueError, match="more than this kernel can run"):
        lib.saxpy(y, x, 1.0, 8, threads=1 << 20, group_size=1 << 20)
    with pytest.raises(TypeError, match="LocalMemory"):
        lib.row_sum(x, y, 8, 256, threads=64, group_size=64)
    with pytest.raises(TypeError, match="kernels take tensors, ints, floats"):
        lib.saxpy(y, x, 1.0, "8", threads=8)
    launches = torch.opencl._C._launch_count()
    lib.saxpy(y, x, 1.0, 8, threads=8)
    assert torch.opencl._C._launch_count() == launches + 1
    assert torch.equal(y.cpu(), torch.ones(8))


def test_signature_errors():
    with pytest.raises(RuntimeError, match=r"kernel 'f' \(line 1\), parameter 'bool flag'.*forbids bool"):
        torch.opencl.compile_shader("__kernel void f(__global float* x, bool flag) { }")
    with pytest.raises(RuntimeError, match="needs __global, __constant or __local"):
        torch.opencl.compile_shader("__kernel void f(float* x) { }")
    with pytest.raises(ValueError, match="defines no kernel"):
        torch.opencl.compile_shader("float f(float x) { return x; }")


def test_build_error_carries_the_log_with_line_numbers(lib):
    bad = "__kernel void f(__global float* x) {\n    int i = get_global_id(0);\n    x[i] = undefined_name;\n}\n"
    with pytest.raises(torch.opencl.OpenCLError) as info:
        torch.opencl.compile_shader(bad)
    message = str(info.value)
    assert "undefined_name" in message and ":3:" in message, message  # the author's line 3
    # The message names the program by its kernels.
    with pytest.raises(torch.opencl.OpenCLError, match=r"OpenCL program \(kernels f\) failed to build"):
        torch.opencl.compile_shader("\n\n" + bad)
    # The device keeps working after a failed build.
    y = torch.zeros(4, device="opencl")
    lib.saxpy(y, torch.ones(4, device="opencl"), 2.0, 4, threads=4)
    assert torch.equal(y.cpu(), torch.full((4,), 2.0))


def test_programs_go_through_the_cache(tmp_path):
    torch.opencl.compile_shader(SOURCE)  # built here or by an earlier test: the second one must not build
    stats = torch.opencl._C._program_cache_stats()
    torch.opencl.compile_shader(SOURCE)
    after = torch.opencl._C._program_cache_stats()
    assert after["source_builds"] == stats["source_builds"] and after["memory_hits"] > stats["memory_hits"]
    # A second process loads the binary from disk (our disk cache, forced on: on PoCL, PoCL's own cache
    # keeps programs instead, see binaries_worth_keeping in runtime/program_cache.cpp).
    script = textwrap.dedent(
        f"""
        import torch, torch_opencl
        torch.opencl._C._force_binaries_on_disk(1)
        lib = torch.opencl.compile_shader({SOURCE!r})
        s = torch.opencl._C._program_cache_stats()
        print(s["source_builds"], s["disk_loads"])
        """
    )
    env = dict(os.environ, TORCH_OPENCL_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
            for _ in range(2)]
    first, second = [tuple(map(int, r.stdout.split()[-2:])) for r in runs]
    assert first[0] >= 1
    assert second[0] == 0 and second[1] >= 1, (first, second)


# --- a custom operator backed by a user kernel: fake function, autograd formula, opcheck

_SCALE_SOURCE = """
__kernel void scaled_tanh(__global float* out, __global const float* x, float a, long n) {
    long i = get_global_id(0);
    if (i < n) out[i] = a * tanh(x[i]);
}
"""
_scale_lib = None


@torch.library.custom_op("opencl_test::scaled_tanh", mutates_args=())
def scaled_tanh(x: torch.Tensor, a: float) -> torch.Tensor:
    if x.device.type != "opencl":
        return a * torch.tanh(x)
    global _scale_lib
    if _scale_lib is None:
        _scale_lib = torch.opencl.compile_shader(_SCALE_SOURCE)
    x = x.contiguous()
    out = torch.empty_like(x)
    _scale_lib.scaled_tanh(out, x, a, x.numel(), threads=max(x.numel(), 1))
    return out


@scaled_tanh.register_fake
def _(x, a):
    return torch.empty_like(x)


def _setup_context(ctx, inputs, output):
    x, a = inputs
    ctx.save_for_backward(x)
    ctx.a = a


def _backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return grad * ctx.a * (1 - torch.tanh(x) ** 2), None


scaled_tanh.register_autograd(_backward, setup_context=_setup_context)


def test_custom_op_trains_and_passes_opcheck():
    x = torch.randn(5, 7)
    xo = x.to("opencl").requires_grad_()
    out = scaled_tanh(xo, 1.5)
    torch.testing.assert_close(out.cpu(), 1.5 * torch.tanh(x))
    out.sum().backward()
    torch.testing.assert_close(xo.grad.cpu(), 1.5 * (1 - torch.tanh(x) ** 2))
    # opcheck's test_autograd_registration is NYI for devices other than CPU/CUDA/XPU in PyTorch itself
    # (torch/testing/_internal/optests/autograd_registration.py): the other three run on opencl, that one
    # on CPU inputs (it inspects the registration, which is the same for every device).
    torch.library.opcheck(scaled_tanh, (torch.randn(4, 3, device="opencl", requires_grad=True), 0.5),
                          test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"))
    torch.library.opcheck(scaled_tanh, (torch.randn(4, 3, requires_grad=True), 0.5),
                          test_utils=("test_autograd_registration",))
