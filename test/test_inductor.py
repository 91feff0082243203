"""torch.compile on opencl: Inductor's graphs as generated OpenCL C (python/torch_opencl/_inductor).

Each compiled graph costs Inductor's compile time (seconds on a 2-core machine) and one OpenCL program
(about a second of LLVM on PoCL, cold), so the tests put many operations into few graphs. Names with
"forms" run again under TORCH_OPENCL_KERNEL_CLASS=gpu (scripts/test.sh), for the GPU-shaped kernels.
"""
import copy
import functools
import itertools
import math
import os
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch
import torch._dynamo
import torch._inductor.config as inductor_config
from torch import nn
from torch.nn import functional as F

import torch_opencl
from _device_helpers import index_checks_deferred, kernel_class, launched_kernels, native_only, raises_index_error
from _philox import philox4x32_10

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from bench_training import digits_cnn, mlp, transformer  # noqa: E402

DEV = "opencl"


def assert_close(got, want, rtol=1e-5, atol=1e-5):
    if isinstance(want, (tuple, list)):
        for g, w in zip(got, want):
            assert_close(g, w, rtol, atol)
        return
    assert got.device.type == DEV
    torch.testing.assert_close(got.cpu(), want, rtol=rtol, atol=atol, equal_nan=True)


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    torch.manual_seed(0)
    yield


def test_issue_snippet_and_output_code(caplog):
    m = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4)).to(DEV)
    x = torch.randn(8, 16, device=DEV)
    with native_only():
        got = torch.compile(m)(x)
    assert_close(got, m.cpu()(x.cpu()), rtol=1e-4, atol=1e-5)
    # The generated module carries the OpenCL C of the graph (TORCH_LOGS=output_code prints it).
    from torch._inductor.utils import run_and_get_code

    torch._dynamo.reset()
    _, (code, *_) = run_and_get_code(torch.compile(lambda a: torch.relu(a) * 2 + 1), x)
    assert "__kernel void opencl_poi_0(" in code and "opencl_program.build(globals())" in code


def test_pointwise_broadcast_views_forms():
    def fn(a, b, c, s):
        t = a.t()  # a transposed view
        u = (t + b) * torch.sigmoid(c[:, 1::2].sum(1, keepdim=True))  # broadcasting, strided slice
        v = torch.where(u > 0, torch.exp(-u.abs()), torch.tanh(u)) / s
        w = torch.maximum(v, torch.full_like(v, 0.1)).pow(1.5) - torch.erf(v)
        return w, (v.floor() % 3).to(torch.int32), (u > 0.5) & (v < 0.7), v.sqrt().isnan()

    a = torch.randn(6, 5)
    b = torch.randn(1, 6)
    c = torch.randn(5, 8)
    want = fn(a, b, c, 3.0)
    with native_only():
        got = torch.compile(fn)(a.to(DEV), b.to(DEV), c.to(DEV), 3.0)
    assert_close(got, want)


def test_float_to_integer_conversions_forms():
    """Out-of-range and NaN floats convert as CPU PyTorch converts them (C leaves it undefined; NVIDIA
    saturates): through int32 for int8/16/32, through int64 for int64 and uint8 (kernels_cl/prelude.cl)."""
    def fn(x):
        y = x * 2
        return y.to(torch.int8), y.to(torch.int16), y.int(), y.long(), y.to(torch.uint8)

    big = [float("nan"), float("inf"), -float("inf"), 1.5e9, -1.5e9, 5e19, -5e19, 150.35, -150.35, 63.9, -64.4,
           0.25, -0.25, 2.0**30, -(2.0**30), 2.0**62, -(2.0**62), 40000.0, -40000.0]
    for dtype in (torch.float32, torch.float64):
        x = torch.tensor(big, dtype=dtype)
        with native_only():
            got = torch.compile(fn)(x.to(DEV))
        for g, w in zip(got, fn(x)):
            assert g.dtype == w.dtype and torch.equal(g.cpu(), w), (g.cpu(), w)


def test_half_bfloat16_double_forms():
    """float16 and bfloat16 are loaded to float, computed in float and rounded when stored (Inductor's
    semantics; eager rounds after each op, which exp() amplifies in bfloat16, so the reference computes
    in float32 too); float64 is computed in double (erfinv too, near +-1 where a Newton step on erf loses
    everything to cancellation)."""

    def fn(h, b, d, tails):
        return (h * 2 + 1).relu(), h.sum(1), (b * 3 - 1).exp(), b.amax(0), d.sqrt() * 2, d.var(1), tails.erfinv()

    torch.manual_seed(0)
    h, b = torch.randn(6, 40).half(), torch.randn(6, 40).bfloat16()
    d = torch.rand(6, 40, dtype=torch.float64)
    tails = 1 - torch.logspace(-16, -1, 40, dtype=torch.float64)
    tails = torch.cat([tails, -tails, torch.tensor([1.0, 0.3], dtype=torch.float64)])
    want = list(fn(h, b, d, tails))
    want[2] = (b.float() * 3 - 1).exp().bfloat16()
    with native_only():
        got = torch.compile(fn)(h.to(DEV), b.to(DEV), d.to(DEV), tails.to(DEV))
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        tol = {torch.float16: 1e-3, torch.bfloat16: 2e-2, torch.float64: 1e-12}[w.dtype]
        torch.testing.assert_close(g.cpu(), w, rtol=tol, atol=tol)


def test_reductions_along_each_dim_forms():
    def fn(x, i):
        return (
            x.sum(0), x.sum(1), x.sum(2), x.sum(),
            x.amax(1), x.amin(2), x.argmax(0), x.argmin(2),
            x.mean((0, 2)), torch.var_mean(x, dim=2, correction=0),
            x.prod(1), (x > 1).any(2), i.sum(1), x.softmax(-1), x.log_softmax(1),
        )  # fmt: skip

    x = torch.randn(4, 33, 70)
    x[1, 2, 3] = float("nan")  # NaN propagates through max and sum, argmax finds it
    i = torch.randint(-5, 5, (7, 300), dtype=torch.int64)
    want = fn(x, i)
    with native_only():
        got = torch.compile(fn)(x.to(DEV), i.to(DEV))
    assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_column_reductions_forms():
    """Reductions over a non-contiguous dim (bias and layer norm weight gradients): in the GPU form a work-group
    takes 32 adjacent outputs (x_lane), so that its loads are adjacent; shapes whose outputs are not a multiple
    of 32 keep a work-group per output."""
    from torch._inductor.utils import run_and_get_code

    def fn(x, w, y):
        z = x * w
        return (z.sum(0), x.amax(0), x.argmin(0), torch.var_mean(x, dim=0), (x > 0.5).any(0), y.sum(0),
                y.amax(0), x.reshape(8, 64, 96).sum(1))  # fmt: skip

    x, w, y = torch.randn(512, 96), torch.randn(512, 96), torch.randn(300, 45)
    x[7, 3] = float("nan")
    want = fn(x, w, y)
    with native_only():
        got = torch.compile(fn)(x.to(DEV), w.to(DEV), y.to(DEV))
    assert_close(got, want, rtol=1e-4, atol=1e-4)
    # Inductor marks a column reduction OUTER where it splits it in two (on a device of several compute
    # units); both stages then take the column form in the GPU class, and the CPU class never does.
    torch._dynamo.reset()
    with native_only():
        total, (code, *_) = run_and_get_code(torch.compile(lambda a: (a * 2).sum(0)), x.to(DEV))
    assert_close(total, (x * 2).sum(0), rtol=1e-4, atol=1e-4)
    split = code.count("__kernel void") == 2
    gpu_form = torch.opencl.get_device_properties(0).kernel_class == "gpu"
    assert code.count("x_lane = get_local_id(0)") == (2 if gpu_form and split else 0)
    # The CPU form keeps a reduction of up to 2^16 elements in one kernel (_inductor/choices.py): a second
    # launch costs more there than the cores save.
    assert gpu_form or not split

    # Layer norm's weight and bias gradients, and a linear layer's bias gradient, through backward.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 96), nn.LayerNorm(96))
    dev_model = copy.deepcopy(model).to(DEV)
    inp = torch.randn(256, 64)
    model(inp).square().mean().backward()
    with native_only():
        torch.compile(dev_model)(inp.to(DEV)).square().mean().backward()
    for p, ref in zip(dev_model.parameters(), model.parameters()):
        assert_close(p.grad, ref.grad, rtol=1e-3, atol=1e-5)


def test_reduction_lanes_forms():
    """The CPU form reduces a row in 8 lanes (element i in lane i % 8), combined in a tree after the loop,
    or, where the loads are adjacent for adjacent outputs, takes 8 adjacent outputs as its lanes. Rows of
    every length around multiples of 8 (the loop of whole blocks and the partial one after it); NaN in the
    whole blocks and in the partial one; ties for argmax/argmin in several lanes (the first index wins)."""
    from torch._inductor.utils import run_and_get_code

    def rows(x, b):
        return (x.sum(1), x.amax(1), x.amin(1), x.argmax(1), x.argmin(1), torch.var_mean(x, dim=1),
                x.prod(1), b.any(1), x.log_softmax(1), (x * 2).exp().sum(1))  # fmt: skip

    def columns(x, b):
        return (x.sum(0), x.amax(0), x.argmax(0), x.argmin(0), torch.var_mean(x, dim=0), b.any(0),
                torch.tanh(x.sum(0) * 0.1) + 1)  # fmt: skip

    cpu_form = kernel_class() == "cpu"
    for length in (1, 7, 8, 9, 15, 16, 17, 64, 131):
        x = torch.randn(6, length)
        x[:, length // 2:] = x[:, :length - length // 2].flip(1).clone()  # equal values in different lanes
        x[1, length - 1] = float("nan")  # in the partial block where there is one
        x[2, 0] = float("nan")
        x[3, :] = 0.5  # every lane ties
        b = x > 1.5
        torch._dynamo.reset()
        with native_only():
            got, (code, *_) = run_and_get_code(torch.compile(rows, dynamic=False), x.to(DEV), b.to(DEV))
        assert_close(got, rows(x, b), rtol=1e-4, atol=1e-5)
        if length > 8:  # Inductor unrolls reductions of up to 8 elements into pointwise code
            assert ("lane < 8" in code) == cpu_form
    y = torch.randn(200, 48)
    y[:, 24:] = y[:, :24]  # equal outputs in different lanes, ties within a column
    y[3, 5] = float("nan")
    y[199, 40] = float("nan")  # in the last row
    c = y > 1.0
    torch._dynamo.reset()
    with native_only():
        got, (code, *_) = run_and_get_code(torch.compile(columns, dynamic=False), y.to(DEV), c.to(DEV))
    assert_close(got, columns(y, c), rtol=1e-4, atol=1e-5)
    assert ("xblock" in code) == cpu_form
    # A load the same for every output (a per-row scale, as layer norm's rstd in its weight gradient) does
    # not keep a column reduction from the column lanes.
    # (128 rows of 96: one kernel, not split in two stages.)
    y, s = torch.randn(128, 96), torch.randn(128)
    torch._dynamo.reset()
    with native_only():
        got, (code, *_) = run_and_get_code(torch.compile(lambda y, s: (y * s[:, None]).sum(0), dynamic=False),
                                           y.to(DEV), s.to(DEV))
    assert_close(got, (y * s[:, None]).sum(0), rtol=1e-4, atol=1e-5)
    assert code.count("__kernel void") == 1 and ("xblock" in code) == cpu_form


def test_reduction_lanes_dynamic_lengths_forms():
    """Row lengths known only at run time: the lanes' loops bound by the kernel's r0_numel argument."""
    f = torch.compile(lambda x: (x.sum(1), x.amax(1), torch.var_mean(x, dim=1)), dynamic=True)
    for length in (5, 8, 19, 40):
        x = torch.randn(9, length)
        with native_only():
            got = f(x.to(DEV))
        assert_close(got, (x.sum(1), x.amax(1), torch.var_mean(x, dim=1)), rtol=1e-4, atol=1e-5)


def test_pointwise_by_rows_forms():
    """A CPU-form pointwise kernel whose indices split the flat index into rows walks rows and the places in
    them in two loops (x1 = xouter, x0 = xinner instead of a division per element): per-row and per-column
    broadcasts, a strided store, an embedding's gather, a transpose, and shapes that do not split."""
    from torch._inductor.utils import run_and_get_code

    def fn(x, r, c, idx, w):
        return ((x - r[:, None]).exp() * c, torch.cat([x, x * 2], 1), F.embedding(idx, w), x.t() * c[0],
                (x.reshape(-1, 8, x.shape[1]) + r.reshape(-1, 8)[:, :, None]).sum(1))  # fmt: skip

    cpu_form = kernel_class() == "cpu"
    for rows, width in ((256, 64), (64, 48), (40, 20), (48, 7)):
        x, r, c = torch.randn(rows, width), torch.randn(rows), torch.randn(width)
        idx, w = torch.randint(0, 50, (rows, 3)), torch.randn(50, 32)
        torch._dynamo.reset()
        with native_only():
            got, (code, *_) = run_and_get_code(
                torch.compile(fn, dynamic=False), *(t.to(DEV) for t in (x, r, c, idx, w))
            )
        assert_close(got, fn(x, r, c, idx, w), rtol=1e-5, atol=1e-5)
        # Rows of 16 or more, at least a work-group of 8 of them per core (the embedding's rows of 32 split
        # in every case).
        if width >= 16 and rows >= 8 * torch.opencl.get_device_properties(0).compute_units:
            assert ("xouter" in code) == cpu_form


def test_pointwise_vectors_forms(monkeypatch):
    """A CPU-form pointwise kernel whose body is float32 math with calls (exp, erf, tanh, ...) read and written
    at the flat index takes 16 outputs a step as float16 vectors (_inductor/vectors.py), a chunk's last ones one
    at a time. Over magnitudes from 1e-30 to 1e30, signed zeros, infinities and NaN the vector loop gives what
    the scalar loop gives (the same graph compiled without it), and both match CPU on normal draws; lengths
    that are and are not multiples of 16, dynamic lengths, an in-place update. A body with another index, a
    select or another dtype keeps the scalar loop, as every GPU-form kernel does."""
    from torch._inductor.utils import run_and_get_code

    from torch_opencl._inductor.kernel import OpenCLKernel

    def math_(x, g, y):
        return (F.gelu(x), F.gelu(x, approximate="tanh"), torch.erf(x), torch.exp(x), torch.sigmoid(x), torch.tanh(x),
                torch.ops.aten.gelu_backward(g, x), torch.ops.aten.gelu_backward(g, x, approximate="tanh"),
                torch.relu(x) + torch.maximum(x, y) * torch.exp(torch.minimum(x, y).abs().neg()),
                (torch.exp(y) / (1.0 + torch.exp(g).sqrt()) - torch.tanh(y * g)).clamp(-2.0, 2.0))

    def compiled(fn, vectors, *args, **kwargs):
        torch._dynamo.reset()
        with monkeypatch.context() as m, inductor_config.patch(force_disable_caches=True), native_only():
            if not vectors:  # the same code generator without its vector loop
                m.setattr(OpenCLKernel, "_vector_body", lambda self: None)
            return run_and_get_code(torch.compile(fn, **kwargs), *(a.to(DEV) for a in args))

    magnitudes = torch.logspace(-30, 30, 121)
    special = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan")])
    # The vector loop where the device takes pointwise_vectors (the CPU class on PoCL; not on Intel's runtime,
    # which vectorises across work-items).
    vectors = torch_opencl._C._device_properties(0)["pointwise_vectors"]
    for n, dynamic in ((4016, False), (4001, False), (3000, True)):
        x = torch.cat([torch.linspace(-12, 12, n), magnitudes, -magnitudes, special])
        g, y = torch.randn(x.shape), torch.randn(x.shape)
        got, (code, *_) = compiled(math_, True, x, g, y, dynamic=dynamic)
        assert ("vload16" in code) == vectors
        scalar, (code, *_) = compiled(math_, False, x, g, y, dynamic=dynamic)
        assert "vload16" not in code
        for out, want in zip(got, scalar):
            torch.testing.assert_close(out.cpu(), want.cpu(), rtol=1.3e-5, atol=1e-6, equal_nan=True)
    normal = [torch.randn(4001) * 3 for _ in range(3)]
    for vector_loop in (True, False):
        got, _ = compiled(math_, vector_loop, *normal, dynamic=False)
        assert_close(got, math_(*normal))
    x = torch.randn(1000)
    xd = x.to(DEV)
    torch._dynamo.reset()
    with native_only():
        got, (code, *_) = run_and_get_code(torch.compile(lambda t: t.mul_(0.5).exp_()), xd)
    assert got is xd
    assert_close(xd, x.mul(0.5).exp())
    assert ("vload16" in code) == vectors
    # Not vectors: a transposed read, a select, float64.
    a, b = torch.randn(64, 48), torch.randn(64, 48, dtype=torch.float64)

    def scalar_only(a, b):
        return torch.exp(a.t()), torch.where(a > 0, torch.exp(a), a), torch.exp(b)

    torch._dynamo.reset()
    with native_only():
        got, (code, *_) = run_and_get_code(torch.compile(scalar_only), a.to(DEV), b.to(DEV))
    assert_close(got, scalar_only(a, b))
    assert "vload16" not in code


def test_norms_train_forms():
    """Welford-style reductions and their pointwise epilogues, forward and backward."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.BatchNorm1d(8), nn.ReLU(), nn.Flatten(), nn.LayerNorm(8 * 36))
    dev_model = copy.deepcopy(model).to(DEV)
    x = torch.randn(5, 8, 36) * 3 + 1
    ref = model(x)
    ref.square().mean().backward()
    with native_only():
        out = torch.compile(dev_model)(x.to(DEV))
        out.square().mean().backward()
    assert_close(out, ref.detach(), rtol=1e-4, atol=1e-4)
    for p, want in zip(dev_model.parameters(), model.parameters()):
        assert_close(p.grad, want.grad, rtol=1e-3, atol=1e-4)
    assert_close(dev_model[0].running_mean, model[0].running_mean)
    assert_close(dev_model[0].running_var, model[0].running_var)
    if kernel_class() == "gpu":
        # The running statistics are updated in place by the group's item 0 after every item read them:
        # the store sits between barriers, or items would read while item 0 writes (Oclgrind's race).
        from torch._inductor.utils import run_and_get_code
        _, (code, *_) = run_and_get_code(torch.compile(copy.deepcopy(model).to(DEV)), x.to(DEV))
        fence = "barrier(CLK_GLOBAL_MEM_FENCE);"
        lines = [line.strip() for line in code.splitlines()]
        stores = [i for i, line in enumerate(lines) if line.startswith("if (r0_lid == 0)")]
        fenced = [lines[i] for i in stores if lines[i - 1] == fence and lines[i + 1] == fence]
        assert len(fenced) == 2, fenced  # running_mean and running_var


def _generated_kernels(fn, *args):
    """The names of the generated kernels one call of `fn` launches (after a first call compiled it)."""
    fn(*args)
    torch.opencl.synchronize()
    torch.opencl._C._record_kernel_names(True)
    try:
        out = fn(*args)
        torch.opencl.synchronize()
    finally:
        torch.opencl._C._record_kernel_names(False)
    return out, [n for n in torch.opencl._C._recorded_kernel_names() if n.startswith("opencl_")]


def test_foreach_is_one_kernel_forms(monkeypatch):
    """A foreach op over tensors of several sizes is one generated kernel (horizontal fusion), a buffer
    read by every sub-kernel included; with room for fewer parameters it splits into several."""
    sizes = [(3,), (1,), (17, 5), (64,), (2, 3, 7)]
    xs = [torch.randn(s) for s in sizes]
    ys = [torch.randn(s) for s in sizes]
    scale = torch.tensor(1.5)

    def fn(xs, ys, scale):
        return torch._foreach_add(torch._foreach_mul(xs, scale), ys)

    want = fn(xs, ys, scale)
    args = ([x.to(DEV) for x in xs], [y.to(DEV) for y in ys], scale.to(DEV))
    with native_only():
        got, names = _generated_kernels(torch.compile(fn), *args)
    assert_close(got, want)
    assert len(names) == 1 and names[0].startswith("opencl_combo"), names

    from torch_opencl._inductor import scheduling

    monkeypatch.setattr(scheduling, "max_params", lambda device: 8)  # 3 parameters a sub-kernel here
    torch._dynamo.reset()
    with native_only(), inductor_config.patch(fx_graph_cache=False):  # generate the code again
        got, names = _generated_kernels(torch.compile(fn), *args)
    assert_close(got, want)
    assert len(names) == 3 and all(n.startswith("opencl_combo") for n in names[:2]), names


def test_foreach_in_place_reading_its_own_outputs_forms():
    """An in-place foreach op whose sub-kernels read tensors that other sub-kernels write, combined into
    one kernel: every sub-kernel reads the values from before the op, as Inductor's functional form
    says (eager CPU walks the list in order, so its c += a sees the new a: Inductor's CPU backend
    differs from it the same way)."""
    def fn(a, b, c):
        torch._foreach_add_([a, b, c], [b, c, a])
        torch._foreach_mul_([a, b, c], [c, c, c])

    a, b, c = (torch.randn(300) for _ in range(3))
    a1, b1, c1 = a + b, b + c, c + a
    want = [a1 * c1, b1 * c1, c1 * c1]
    dev = [t.to(DEV) for t in (a, b, c)]
    with native_only():
        torch.compile(fn)(*dev)
    assert_close(dev, want)


def test_combo_kernels_forms():
    """With Inductor's combo_kernels on, independent kernels (reductions of several kinds and widths,
    pointwise ones) share combined kernels and give what they give alone."""
    def fn(a, b, c, d, e):
        # (d and e apart from the reductions' inputs: a pointwise value of a reduced input fuses into its reduction.)
        return a.sum(1), b.amax(0), torch.var_mean(c, dim=1), a.argmax(1), d * 2 + 1, (e - 1).relu(), e.exp()

    a, b, c, d, e = torch.randn(6, 300), torch.randn(40, 9), torch.randn(5, 70), torch.randn(7, 11), torch.randn(13)
    b[3, 4] = float("nan")
    want = fn(a, b, c, d, e)
    args = (a.to(DEV), b.to(DEV), c.to(DEV), d.to(DEV), e.to(DEV))
    with native_only(), inductor_config.patch(combo_kernels=True, fx_graph_cache=False):
        got, names = _generated_kernels(torch.compile(fn), *args)
    assert_close(got, want, rtol=1e-4, atol=1e-4)
    # CPU form: one kernel for all; GPU form: the pointwise ones together, the reductions apart (their
    # rows of 300, 9 and 70 take work-groups of 256, 32 and 128).
    cpu_form = torch.opencl.get_device_properties(0).kernel_class == "cpu"
    assert len(names) == (1 if cpu_form else 4) and names[-1].startswith("opencl_combo"), names


def test_independent_kernels_share_a_launch_by_default_forms(monkeypatch):
    """Without config.combo_kernels, the independent kernels of an opencl graph are combined (combo.py): ten
    row sums and a view of each input, one level of the graph, are one launch (Inductor's own grouping
    takes 8 nodes at a time, views included, before it drops what cannot be combined); with
    combo.enabled = False they are ten."""
    from torch_opencl._inductor import combo

    xs = [torch.randn(37, 8 + i) for i in range(10)]  # (rows under 8 would be unrolled: pointwise kernels)

    def fn(xs):
        return [x.sum(1) for x in xs] + [x.t() for x in xs]

    dev = [x.to(DEV) for x in xs]
    for enabled, launches in ((True, 1), (False, 10)):
        monkeypatch.setattr(combo, "enabled", enabled)
        torch._dynamo.reset()
        compiled = torch.compile(fn)
        with inductor_config.patch(fx_graph_cache=False):
            compiled(dev)
        with native_only(), launched_kernels() as names:
            got = compiled(dev)
        assert_close(got, fn(xs))
        assert len(names) == launches, names


def test_compiled_optimizer_step_matches_eager_forms():
    """clip_grad_norm_ + AdamW.step compiled: the parameters eager's foreach step gives, the per-parameter
    updates in combined kernels rather than one kernel a parameter."""
    def run(compiled, steps=3):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 3)).to(DEV)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
        x = torch.randn(9, 12, device=DEV)

        def update():
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            opt.step()

        step = torch.compile(update) if compiled else update
        for _ in range(steps - 1):
            opt.zero_grad()
            model(x).square().mean().backward()
            step()
        opt.zero_grad()
        model(x).square().mean().backward()
        torch.opencl.synchronize()
        torch.opencl._C._record_kernel_names(True)
        try:
            step()
            torch.opencl.synchronize()
        finally:
            torch.opencl._C._record_kernel_names(False)
        names = list(torch.opencl._C._recorded_kernel_names())
        return [p.detach().cpu() for p in model.parameters()], names

    with native_only():
        eager, _ = run(False)
        compiled, names = run(True)
    torch.testing.assert_close(compiled, eager, rtol=1e-5, atol=1e-6)
    # Four launches for the four parameters: the partial norms of all of them (foreach_norm.py), the total
    # norm, the clip's scaling, the Adam update; eager's _foreach_norm kernels are not called.
    assert len(names) == 4 and sum(n.startswith("opencl_combo") for n in names) == 3, names
    assert sum(n.startswith("opencl_red") for n in names) == 1, names


def test_foreach_norm_generated_forms():
    """_foreach_norm compiled (foreach_norm.py): the norms CPU gives for orders 2, 1 and inf, of tensors of one
    element, of sizes that do not divide into its rows, of one larger than all its rows together, of a
    transposed one; the partial norms of every tensor one launch. Orders, dtypes and lists it does not take
    give eager's norms."""
    sizes = [(1,), (3,), (17, 5), (300, 70), (8193,), (2, 3, 7), (600, 1000)]
    xs = [torch.randn(s) for s in sizes] + [torch.randn(50, 40).t()]
    dtypes = [torch.float32, torch.float16, torch.bfloat16] + (
        [torch.float64] if torch.opencl.get_device_properties(0).fp64 else [])
    for order, dtype in itertools.product((2, 1, math.inf), dtypes):
        torch._dynamo.reset()
        # (The reference sums in float64: CPU's float32 norm of 600000 elements is off by 5e-6 of it, ours by 1e-7.)
        want = [n.to(dtype) for n in torch._foreach_norm([x.to(dtype).double() for x in xs], order)]
        dev = [x.to(dtype).to(DEV) for x in xs]
        tol = {torch.float16: 1e-3, torch.bfloat16: 1e-2}.get(dtype, 1e-5)  # the norm rounded to dtype
        compiled = torch.compile(lambda xs: torch._foreach_norm(xs, order))
        compiled(dev)
        with native_only(), launched_kernels() as names:
            got = compiled(dev)
        assert_close(list(got), want, rtol=tol, atol=tol)
        # One launch of partial norms, then the norms read out of them (a combined kernel of pointwise ones).
        assert names[0].startswith("opencl_combo") and not any("foreach_norm" in n for n in names), names
    # NaN in a tensor: its norm is NaN for each order, as on CPU.
    nan = [torch.tensor([1.0, float("nan"), 2.0]), torch.ones(20000)]
    for order in (2, 1, math.inf):
        torch._dynamo.reset()
        got = torch.compile(lambda xs: torch._foreach_norm(xs, order))([x.to(DEV) for x in nan])
        assert_close(list(got), torch._foreach_norm(nan, order))  # (NaN equals NaN here)
    # Left to eager's kernels: order 3, another output dtype, more tensors than MAX_TENSORS.
    from torch_opencl._inductor import foreach_norm

    many = [torch.randn(4) for _ in range(foreach_norm.MAX_TENSORS + 1)]
    for fn, args in ((lambda xs: torch._foreach_norm(xs, 3), xs),
                     (lambda xs: torch._foreach_norm(xs, 2, dtype=torch.float64), xs[:3]),
                     (lambda xs: torch._foreach_norm(xs), many)):
        torch._dynamo.reset()
        with launched_kernels() as names:
            got = torch.compile(fn)([x.to(DEV) for x in args])
        want = [n.to(g.dtype) for n, g in zip(fn([x.double() for x in args]), got)]
        assert_close(list(got), want, rtol=1e-5, atol=1e-5)
        assert names and not any(n.startswith("opencl_") for n in names), names  # eager's kernels alone


def test_random_seeds_drawn_on_the_host_forms():
    """A compiled graph's random ops take their seeds by value, drawn from the device generator on the
    host (seeds.py): no launch draws them, the generator advances as Inductor's randint on the device would
    advance it, torch.manual_seed repeats a run, and two random ops in one kernel draw different numbers."""
    def fn(x):
        return F.dropout(x.relu(), 0.5, training=True) + torch.rand_like(x)

    x = torch.randn(64, 48, device=DEV)
    compiled = torch.compile(fn)
    torch.manual_seed(3)
    first = compiled(x)
    with launched_kernels() as names:
        torch.manual_seed(3)
        state = torch.opencl.get_rng_state()
        again = compiled(x)
        after = torch.opencl.get_rng_state()
    assert torch.equal(first.cpu(), again.cpu())
    assert not any("random" in n for n in names) and len(names) == 1, names
    # Two seeds: one Philox block of the device generator (four 32-bit words), as eager's randint of 2 int64s.
    torch.opencl.set_rng_state(state)
    torch.randint(-(2**63), 2**63 - 1, (2,), device=DEV)
    assert torch.equal(torch.opencl.get_rng_state(), after)
    torch.manual_seed(4)
    other = compiled(x).cpu()
    assert not torch.equal(other, first.cpu())
    # Two random ops of one kernel take two seeds: different numbers.
    torch._dynamo.reset()
    both = torch.compile(lambda x: torch.stack([torch.rand_like(x), torch.rand_like(x)]))
    both(x)
    with launched_kernels() as names:
        u, v = both(x).cpu()
    assert len(names) == 1 and not torch.equal(u, v) and abs(u.mean() - 0.5) < 0.02 and abs(v.mean() - 0.5) < 0.02


def test_checkpointed_dropout_recomputes_the_forward_mask_forms():
    """A checkpointed dropout compiled: the backward recomputes the mask from the seeds the forward saved
    (there they stay a device tensor Inductor draws, seeds.py), so the input's gradient goes through the
    elements the forward kept."""
    from torch.utils.checkpoint import checkpoint

    lin = nn.Linear(8, 8).to(DEV)

    def block(x):
        return F.dropout(lin(x).relu(), 0.5, training=True)

    x = torch.randn(64, 8, device=DEV, requires_grad=True)
    out = torch.compile(lambda x: checkpoint(block, x, use_reentrant=False))(x)
    out.sum().backward()
    kept = (out != 0).float()
    with torch.no_grad():
        want = (kept * 2 * (lin(x) > 0).float()) @ lin.weight
    assert 0.15 < kept.mean().item() < 0.35  # half the ReLU's outputs are 0, half of the rest dropped
    assert_close(x.grad, want.cpu())


def test_inplace_and_mutated_inputs():
    def fn(x, y):
        x.add_(1)  # a mutated graph input
        y[:, 0] = x.sum(1)  # an indexed store into another input
        return (x * 2).relu_()

    x, y = torch.randn(4, 6), torch.zeros(4, 3)
    xd, yd = x.to(DEV), y.to(DEV)
    want = fn(x, y)
    with native_only():
        got = torch.compile(fn)(xd, yd)
    assert_close(got, want)
    assert_close(xd, x)
    assert_close(yd, y)


def test_atomic_adds_of_every_dtype_forms():
    """index_add, index_put with accumulate and scatter_add with repeated indices are atomic adds in the
    generated kernels: a compare-and-swap for float32 and float64 (the latter with 64-bit atomics), on the
    enclosing 32-bit word for float16, bfloat16 and 8- and 16-bit integers (neighbours untouched), atomic_add
    for int32. One graph for every dtype (one program). float64's once crashed the compile ("atomic_add store
    of torch.float64"), and a narrow type's update must not clobber the element beside it."""
    from torch._inductor.utils import run_and_get_code

    dtypes = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int16, torch.int8,
              torch.uint8]

    def fn(idx, *pairs):
        out = []
        for x, src in zip(pairs[0::2], pairs[1::2]):
            out.append(x.index_add(0, idx, src))
            out.append(torch.zeros_like(x).index_put_((idx,), src, accumulate=True))
            out.append(x.scatter_add(0, idx.unsqueeze(1).expand(-1, x.shape[1]), src))
        return out

    g = torch.Generator().manual_seed(3)
    idx = torch.randint(0, 7, (40,), generator=g)
    pairs = []
    for dtype in dtypes:
        scale = 4 if dtype.is_floating_point else 3  # small integers: int8 sums stay in range
        pairs += [(torch.randn(7, 5, generator=g) * scale).to(dtype), (torch.randn(40, 5, generator=g) * scale).to(dtype)]
    want = fn(idx, *pairs)
    with native_only():
        got, (code, *_) = run_and_get_code(torch.compile(fn), idx.to(DEV), *[t.to(DEV) for t in pairs])
    for i, (gv, wv) in enumerate(zip(got, want)):
        dtype = dtypes[i // 3]
        tol = {torch.float16: 1e-2, torch.bfloat16: 5e-2}.get(dtype, 1e-5)  # sums in another order
        assert gv.dtype == dtype
        torch.testing.assert_close(gv.cpu(), wv, rtol=tol, atol=tol)
    assert "tocl_atomic_add_narrow(" in code and "atomic_add(&" in code
    assert ("tocl_atomic_add_double(" in code) == _int64_atomics()


def _int64_atomics():
    from torch_opencl._inductor.runtime import has_int64_atomics

    return has_int64_atomics(0)


def test_nan_constants_reach_math_functions_forms():
    """A NaN constant of the graph (here `x * nan`, which the OpenCL compiler folds to the constant) through
    the functions whose store PoCL 3.1's LLVM dropped for a NaN known at compile time: the compiled graph
    returned whatever the outputs' memory held. The generated code writes NaN constants as an opaque value."""

    def fn(x):
        n = x * float("nan")
        return [torch.floor(n), torch.ceil(n), torch.trunc(n), torch.round(n), torch.exp(n), torch.exp2(n),
                torch.expm1(n), torch.tanh(n), torch.sinh(n), torch.div(n, 2.5, rounding_mode="floor"),
                torch.where(x > 0, torch.floor(n), x)]

    x = torch.randn(37)
    want = fn(x)
    with native_only():
        got = torch.compile(fn)(x.to(DEV))
    assert_close(got, want)


def test_random_ops():
    def fn(x):
        return torch.rand_like(x), torch.randn_like(x), F.dropout(x, 0.25, training=True)

    x = torch.ones(256, 128, device=DEV)
    compiled = torch.compile(fn)
    torch.manual_seed(1)
    u, n, d = compiled(x)
    torch.manual_seed(1)
    u2, _, _ = compiled(x)
    assert torch.equal(u.cpu(), u2.cpu())  # the device generator's seed decides the stream
    u, n, d = u.cpu(), n.cpu(), d.cpu()
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.01
    assert abs(n.mean()) < 0.02 and abs(n.std() - 1) < 0.02
    kept = (d != 0).float().mean()
    assert abs(kept - 0.75) < 0.01 and torch.allclose(d[d != 0], torch.full_like(d[d != 0], 1 / 0.75))
    # With fallback_random, a compiled random op draws what eager draws. One random op a graph: torch 2.11's
    # Inductor may order several in another way than the program (then each draws another op's numbers).
    for one_draw in (lambda x: torch.rand_like(x) * 2 + 1, lambda x: torch.randn_like(x).abs(),
                     lambda x: F.dropout(x, 0.25, training=True) * 3):
        with inductor_config.patch(fallback_random=True):
            torch._dynamo.reset()
            torch.manual_seed(2)
            got = torch.compile(one_draw)(x)
            torch.manual_seed(2)
            want = one_draw(x)
        assert torch.equal(got.cpu(), want.cpu())


def test_small_cat_of_many_inputs_is_one_kernel_forms():
    """A stack of many small extern results (per-tensor norms of an order _foreach_norm's lowering leaves to
    ATen) is one kernel (_inductor/lowerings.py), not one copy launch per input; a large cat of many inputs
    stays Inductor's. The 2-norms clip_grad_norm_ stacks are generated: two launches in all, the partial
    norms of every tensor (foreach_norm.py) and the stack, which reads them."""

    def norms(xs, order):
        return torch.stack(torch._foreach_norm(xs, order))

    xs = [torch.randn(5 + i, 3) for i in range(12)]
    dev = [x.to(DEV) for x in xs]
    for order in (3.0, 2.0):
        torch._dynamo.reset()
        compiled = torch.compile(functools.partial(norms, order=order))
        compiled(dev)
        with launched_kernels() as names:
            got = compiled(dev)
        assert_close(got, norms(xs, order), rtol=1e-5, atol=1e-6)
        generated = [n for n in names if n.startswith("opencl_")]
        if order == 3.0:
            assert len(generated) == 1, names  # the stack; _foreach_norm is ATen's (its own launches)
        else:
            assert len(names) == 2 and names[0].startswith("opencl_combo"), names

    big = [torch.randn(600, 3) for _ in range(10)]  # 18000 elements: above the small-cat limit
    torch._dynamo.reset()
    cat = torch.compile(lambda xs: torch.cat([x * 2 for x in xs]))
    assert_close(cat([x.to(DEV) for x in big]), torch.cat([x * 2 for x in big]))


def test_index_out_of_range_raises_forms():
    """An index out of range in a generated kernel raises IndexError when the graph's run ends (eager raises
    at the call), or, where the device defers index checks, at the next synchronization; naming the index
    and the size. Nothing outside a buffer is touched, and the next run with good indices is right (the
    error buffer was cleared)."""

    def fn(table, idx, logits, target):
        return table[idx] * 2, F.cross_entropy(logits, target)

    table, logits = torch.randn(10, 3), torch.randn(4, 5)
    compiled = torch.compile(fn)
    dev = [t.to(DEV) for t in (table, logits)]
    good_idx, good_target = torch.tensor([0, 9, -1, -10]), torch.tensor([0, 4, 1, 2])
    if index_checks_deferred():  # the run returns without waiting; the copy to the host raises
        out, _ = compiled(dev[0], torch.tensor([0, 10], device=DEV), dev[1], good_target.to(DEV))
        with pytest.raises(IndexError, match="index 10 is out of bounds .* torch.compile'd graph"):
            out.cpu()
    for idx, target, bad in (
        (torch.tensor([0, 10, 1, 2]), good_target, "index 10 is out of bounds for dimension with size 10"),
        (torch.tensor([0, -11, 1, 2]), good_target, "index -11 is out of bounds for dimension with size 10"),
        (good_idx, torch.tensor([0, 5, 1, 2]), "index 5 is out of bounds for dimension with size 5"),
    ):
        with raises_index_error(bad):
            compiled(dev[0], idx.to(DEV), dev[1], target.to(DEV))
        got = compiled(dev[0], good_idx.to(DEV), dev[1], good_target.to(DEV))
        assert_close(got, fn(table, good_idx, logits, good_target))
    # Two gathers in one combo kernel share the graph's error buffer.
    with inductor_config.patch(combo_kernels=True):
        torch._dynamo.reset()
        both = torch.compile(lambda t, i, u, j: (t[i] + 1, u[j] * 2))
        other = torch.randn(7, 5)
        with raises_index_error("index 7 is out of bounds for dimension with size 7"):
            both(dev[0], good_idx.to(DEV), other.to(DEV), torch.tensor([6, 7], device=DEV))
        got = both(dev[0], good_idx.to(DEV), other.to(DEV), torch.tensor([6, 0], device=DEV))
        assert_close(got, (table[good_idx] + 1, other[torch.tensor([6, 0])] * 2))


def test_random_ops_draw_philox_blocks_forms():
    """The values a compiled rand/randn draws are fixed by the seed and the element's offset, whichever the
    kernel form: uniform i is lane i % 4 of block i / 4, normal i Box-Muller of words (x, y) or (z, w) of
    block i / 2 (the CPU form reuses a block across consecutive elements; a chunk may start mid-block; over a
    multiple of 4 elements it steps a block at a time, 40 x 29, with no memo)."""
    import numpy as np
    from torch._inductor.utils import run_and_get_code

    for shape, op in itertools.product([(37, 29), (40, 29)], ("rand", "randn")):
        x = torch.empty(*shape, device=DEV)
        n = x.numel()
        torch._dynamo.reset()
        fn = torch.compile(lambda x, op=op: getattr(torch, op + "_like")(x))
        torch.manual_seed(5)
        got, (code, *_) = run_and_get_code(fn, x)
        got = got.cpu().flatten().double().numpy()
        assert ("xblock" in code) == (kernel_class() == "cpu" and n % 4 == 0)
        torch.manual_seed(5)  # Inductor's seed: one draw of the device generator per graph run
        seed = int(torch.randint(-(2**63), 2**63 - 1, (1,), device=DEV).item()) & (2**64 - 1)
        i = np.arange(n, dtype=np.uint64)
        if op == "rand":
            words = philox4x32_10(seed, i >> np.uint64(2))[np.arange(n), (i & np.uint64(3)).astype(np.int64)]
            want = (words & np.uint64(0xFFFFFF)).astype(np.float64) / 2**24
            np.testing.assert_array_equal(got, want)
        else:
            blocks = philox4x32_10(seed, i >> np.uint64(1))
            lane = 2 * (i & np.uint64(1)).astype(np.int64)
            u1 = ((blocks[np.arange(n), lane] & np.uint64(0xFFFFFF)) + 1).astype(np.float64) / 2**24
            u2 = (blocks[np.arange(n), lane + 1] & np.uint64(0xFFFFFF)).astype(np.float64) / 2**24
            want = np.sqrt(-2 * np.log(u1)) * np.cos(2 * np.pi * u2)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_dynamic_shapes_and_recompiles():
    from torch._dynamo.utils import counters

    def fn(x, w):
        return (x * w).sum(-1) + x.mean()

    counters.clear()
    compiled = torch.compile(fn, dynamic=True)
    for n in (5, 17, 64):
        x, w = torch.randn(n, 9), torch.randn(9)
        with native_only():
            assert_close(compiled(x.to(DEV), w.to(DEV)), fn(x, w), rtol=1e-4, atol=1e-5)
    assert counters["stats"]["unique_graphs"] == 1  # one graph serves every size
    # A static compile recompiles for a new rank, and guards on it.
    counters.clear()
    torch._dynamo.reset()
    static = torch.compile(fn, dynamic=False)
    static(torch.randn(3, 9, device=DEV), torch.randn(9, device=DEV))
    out = static(torch.randn(2, 3, 9, device=DEV), torch.randn(9, device=DEV))
    assert out.shape == (2, 3) and counters["stats"]["unique_graphs"] == 2


def test_dynamic_sliced_size_in_a_fused_kernel_forms():
    """Under dynamic shapes a slice makes a size a sum (s0*s1*s2 - 4*s1*s2); splitting the kernel's flat
    range into a node's ranges then needs a division sympy cannot prove exact, and the compile failed with
    CantSplit. The node's own ranges are taken where they multiply out to the kernel's range."""

    def fn(x, y):
        a = x[:, :, 4:]
        a = a.index_select(0, torch.arange(a.shape[0] - 1, -1, -1, device=a.device))
        return torch.expm1(torch.where(a > 0.25, a, y.sum() * 0.01))

    x = torch.randn(16, 5, 100).permute(2, 1, 0)
    y = torch.randn(100, 5, 32)[..., ::2]
    compiled = torch.compile(fn, dynamic=True)
    for x, y in ((x, y), (x[:70, :3], y[:70, :3])):  # and at other sizes
        xd = torch.empty_strided(x.shape, x.stride(), device=DEV).copy_(x)
        yd = torch.empty_strided(y.shape, y.stride(), device=DEV).copy_(y)
        with native_only():
            got = compiled(xd, yd)
        assert_close(got, fn(x, y), rtol=1e-5, atol=1e-5)


def test_unsupported_op_runs_eager_counted():
    from torch_opencl._inductor import fallback

    def fn(x):
        return torch.special.i0e(x * 2) + 1  # no OpenCL code generator for i0e: that node runs eagerly

    fallback.reset_stats()
    x = torch.randn(40)
    previous = torch.opencl.fallback_mode()
    torch.opencl.set_fallback_mode("silent")  # i0e's eager kernel may itself be the CPU fallback
    try:
        # Counted when a graph is lowered: a graph served from Inductor's FX graph cache (on disk,
        # shared between runs) is not lowered again, so this compile must not come from it.
        with warnings.catch_warnings(record=True) as caught, inductor_config.patch(fx_graph_cache=False):
            warnings.simplefilter("always")
            got = torch.compile(fn)(x.to(DEV))
    finally:
        torch.opencl.set_fallback_mode(previous)
    assert_close(got, fn(x))
    assert fallback.stats().get("aten.special_i0e.default", 0) >= 1, fallback.stats()
    assert any("special_i0e" in str(w.message) and "eager ATen call" in str(w.message) for w in caught)


def test_generated_program_comes_from_the_disk_cache(tmp_path, monkeypatch):
    """A second process builds no program for the same graph: the binary is on disk."""
    fn_source = "lambda a: (a.sin() * 3).sum(0) + a.amin(0)"
    x = torch.arange(64.0, device=DEV).reshape(8, 8)
    monkeypatch.setenv("TORCH_OPENCL_CACHE_DIR", str(tmp_path / "programs"))  # read at each build
    # Our disk cache, forced on (on PoCL, PoCL's own cache keeps programs instead: binaries_worth_keeping
    # in runtime/program_cache.cpp).
    torch.opencl._C._force_binaries_on_disk(1)
    before = torch.opencl._C._program_cache_stats()
    try:
        want = torch.compile(eval(fn_source))(x).cpu()
    finally:
        torch.opencl._C._force_binaries_on_disk(-1)
    built = torch.opencl._C._program_cache_stats()["source_builds"] - before["source_builds"]
    assert built == 1  # the graph's one program
    script = textwrap.dedent(
        f"""
        import torch, torch_opencl
        torch.opencl._C._force_binaries_on_disk(1)
        x = torch.arange(64.0, device="opencl").reshape(8, 8)
        torch.compile(lambda a: a.cos())(x)  # Inductor's imports and the eager programs it uses
        torch._dynamo.reset()
        before = torch.opencl._C._program_cache_stats()
        got = torch.compile({fn_source})(x).cpu()
        after = torch.opencl._C._program_cache_stats()
        print(after["source_builds"] - before["source_builds"], after["disk_loads"] - before["disk_loads"])
        print(got.tolist())
        """
    )
    # A fresh Inductor cache: the second process generates the graph's code again, and its program
    # text is the same.
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"))
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    counts, values = run.stdout.strip().splitlines()[-2:]
    assert tuple(map(int, counts.split())) == (0, 1)
    assert torch.equal(torch.tensor(eval(values)), want)


@pytest.mark.parametrize("workload", [mlp, digits_cnn, transformer], ids=["mlp", "digits_cnn", "transformer"])
def test_training_workloads_match_eager(workload):
    """20 steps of each bench_training workload under torch.compile(model): the losses eager gives,
    no CPU fallback. fallback_random makes dropout draw what eager draws."""

    def losses(compiled, steps=20):
        torch.manual_seed(0)
        model, (x, y), make_opt, loss_fn = workload()
        model, x, y = model.to(DEV), x.to(DEV), y.to(DEV)
        opt = make_opt(model)
        run = torch.compile(model) if compiled else model
        out = []
        for _ in range(steps):
            opt.zero_grad()
            loss = loss_fn(run, x, y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            out.append(loss.detach())
        return torch.stack(out).cpu()

    with inductor_config.patch(fallback_random=True), native_only():
        eager = losses(False)
        compiled = losses(True)
    torch.testing.assert_close(compiled, eager, rtol=1e-4, atol=1e-5)
