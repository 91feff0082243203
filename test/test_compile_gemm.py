"""torch.compile's matrix products on opencl: on CPU-class devices a template whose kernel runs the product's
epilogue (python/torch_opencl/_inductor/gemm.py, kernels_cl/inductor_gemm.cl); on GPU-class devices (and for
what the template does not take) the extern products. Tests named *_forms also run in the GPU class
(scripts/test.sh), where they check the extern path gives the same answers."""
import pytest
import torch
import torch._dynamo
from torch import nn
from torch.nn import functional as F

from _device_helpers import kernel_class, launched_kernels, native_only

DEV = "opencl"


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    torch.manual_seed(0)
    yield


def _gemm_kernels(names):
    return [n for n in names if n.startswith("opencl_gemm")]


def _operand(rows, cols, layout, gen):
    """A (rows, cols) CPU tensor laid out as `layout`: contiguous, transposed (columns adjacent), or a
    stepped slice at an offset."""
    if layout == "t":
        return torch.randn(cols, rows, generator=gen).t()
    if layout == "slice":
        return torch.randn(rows + 1, 2 * cols + 3, generator=gen)[1:, 3::2]
    return torch.randn(rows, cols, generator=gen)


# (m, k, n): partial tiles, a single row or column, k of 1, the nt form's row limit and past it, panels
# reused by many row tiles (m and k >= 256), a panel too large to stage in local memory (k = 2100: eager's
# pack, launched before).
SHAPES = [(37, 50, 45), (1, 20, 33), (19, 7, 1), (5, 1, 40), (128, 64, 40), (130, 64, 40), (260, 260, 40),
          (9, 2100, 40)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("layouts", ["nn", "nt", "tn", "tt", "slice"])
def test_products_match_cpu_forms(shape, layouts):
    m, k, n = shape
    gen = torch.Generator().manual_seed(m * 1000 + n)
    la, lb = ("slice", "slice") if layouts == "slice" else ({"n": "c", "t": "t"}[layouts[0]], {"n": "c", "t": "t"}[layouts[1]])
    a, b = _operand(m, k, la, gen), _operand(k, n, lb, gen)
    bias = torch.randn(n, generator=gen)
    fn = torch.compile(lambda a, b, bias: (a @ b, torch.relu(torch.addmm(bias, a, b)), torch.addmm(bias, a, b, beta=0.5, alpha=2)))
    with native_only(), launched_kernels() as names:
        got = fn(a.to(DEV), b.to(DEV), bias.to(DEV))
        torch.opencl.synchronize()
    want = (a @ b, torch.relu(torch.addmm(bias, a, b)), torch.addmm(bias, a, b, beta=0.5, alpha=2))
    for g, w in zip(got, want):
        torch.testing.assert_close(g.cpu(), w, rtol=1e-4, atol=1e-4)
    # Every layout goes through the template on CPU-class devices (B packed where eager would pack it); Inductor
    # writes a product over k = 1 as pointwise code.
    extern = [n for n in names if n in ("gemm_tile_wide", "gemm_tile_narrow")]  # the CPU class's extern GEMM
    templates = 3 if kernel_class() == "cpu" and k > 1 else 0
    assert len(_gemm_kernels(names)) == templates and not extern, names


def test_epilogue_runs_in_the_product_kernel_forms():
    """relu(x @ w.t() + b): one launch on CPU-class devices (the template with bias and ReLU fused); the extern
    product on GPU-class ones. The same values either way."""
    lin = nn.Linear(50, 45).to(DEV)
    x = torch.randn(37, 50, device=DEV)
    fn = torch.compile(lambda x: torch.relu(lin(x)))
    fn(x)
    with launched_kernels() as names:
        got = fn(x)
        torch.opencl.synchronize()
    torch.testing.assert_close(got.cpu(), torch.relu(lin.cpu()(x.cpu())), rtol=1e-4, atol=1e-4)
    if kernel_class() == "cpu":
        assert names == ["opencl_gemm_0"], names
    else:
        assert not _gemm_kernels(names), names


@pytest.mark.parametrize("n", [48, 64, 40])
def test_vector_epilogue_matches_cpu_forms(n):
    """The epilogue over 16 columns a step as float vectors (gemm.py's _vector_epilogue, where n is a multiple
    of 16): GELU after a biased product, GELU's gradient from a saved input, a per-row scale (one element for
    the whole step) after exp. n = 48 ends in half a column tile; n = 40 keeps one element a step."""
    from torch._inductor.utils import run_and_get_code

    gen = torch.Generator().manual_seed(n)
    a, b, bias = torch.randn(70, 24, generator=gen), torch.randn(24, n, generator=gen), torch.randn(n, generator=gen)
    h, scale = torch.randn(70, n, generator=gen), torch.randn(70, 1, generator=gen)

    def fn(a, b, bias, h, scale):
        return (F.gelu(torch.addmm(bias, a, b)), torch.ops.aten.gelu_backward(a @ b, h), torch.exp(a @ b) * scale)

    with native_only():
        got, code = run_and_get_code(torch.compile(fn), *(t.to(DEV) for t in (a, b, bias, h, scale)))
    for g, w in zip(got, fn(a, b, bias, h, scale)):
        torch.testing.assert_close(g.cpu(), w, rtol=1e-4, atol=1e-4)
    if kernel_class() == "cpu":
        assert ("vload16(0, &tile[r][j])" in "".join(code)) == (n % 16 == 0)


# (batch, in, out): partial row and column tiles, more than one block of 64 summed apart (batch 200), one
# output (m = 1), a batch of one.
@pytest.mark.parametrize("shape", [(37, 50, 45), (200, 20, 16), (30, 12, 1), (1, 9, 24)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("batch_dims", [1, 2])
def test_bias_gradient_in_weight_gradient_kernel_forms(shape, batch_dims):
    """A linear layer's bias gradient (the column sums of its output's gradient) comes from the kernel of its
    weight gradient's product on CPU-class devices (gemm.pair_layer_gradients): no reduction kernel of its own in the
    backward. Inputs of two and three dims (the product then reads the gradient through a view)."""
    batch, inp, out = shape
    gen = torch.Generator().manual_seed(batch + inp + out)
    lin = nn.Linear(inp, out)
    x = torch.randn(*((2, batch) if batch_dims == 2 else (batch,)), inp, generator=gen)
    target = torch.randn(*x.shape[:-1], out, generator=gen)

    def loss(lin, x):
        return (torch.tanh(lin(x)) - target.to(x.device)).square().sum()

    grads = []
    for dev in ("cpu", DEV):
        layer = nn.Linear(inp, out).to(dev)
        layer.load_state_dict(lin.state_dict())
        xd = x.to(dev).detach().requires_grad_()
        fn = torch.compile(loss) if dev == DEV else loss
        with native_only():
            value = fn(layer, xd)
            with launched_kernels() as backward:
                value.backward()
                torch.opencl.synchronize()
        grads.append((xd.grad, layer.weight.grad, layer.bias.grad))
    for got, want in zip(grads[1], grads[0]):
        torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-4)
    if kernel_class() == "cpu" and batch * (2 if batch_dims == 2 else 1) > 1:
        assert not [n for n in backward if n.startswith("opencl_red")], backward


@pytest.mark.parametrize("batch", [37, 300])
def test_layer_gradients_in_one_launch_forms(batch):
    """Each linear layer's input gradient T @ W, weight gradient T.t() @ X and bias gradient come from one
    launch on CPU-class devices (gemm.tuned_mm_group), the activation gradient's mask (ReLU) or formula
    (GELU) fused into the input gradient: the backward of three layers is the loss's gradient and three
    product kernels. The same gradients as CPU in both classes."""
    gen = torch.Generator().manual_seed(batch)
    ref = nn.Sequential(nn.Linear(50, 45), nn.ReLU(), nn.Linear(45, 64), nn.GELU(), nn.Linear(64, 7))
    x = torch.randn(batch, 50, generator=gen)
    grads = []
    for dev in ("cpu", DEV):
        model = nn.Sequential(nn.Linear(50, 45), nn.ReLU(), nn.Linear(45, 64), nn.GELU(), nn.Linear(64, 7)).to(dev)
        model.load_state_dict(ref.state_dict())
        xd = x.to(dev).detach().requires_grad_()
        fn = (lambda x: model(x).square().sum())
        with native_only():
            value = (torch.compile(fn) if dev == DEV else fn)(xd)
            with launched_kernels() as backward:
                value.backward()
                torch.opencl.synchronize()
        grads.append([xd.grad] + [p.grad for p in model.parameters()])
    for got, want in zip(grads[1], grads[0]):
        torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-4)
    if kernel_class() == "cpu":
        assert len(_gemm_kernels(backward)) == 3 and len(backward) == 4, backward


def test_outputs_of_a_product_kernel_read_in_the_same_graph():
    """The row sums and a grouped product are outputs the product's kernel writes besides its own; other
    kernels of the graph read them after it (they are not fused into it as epilogues)."""
    gen = torch.Generator().manual_seed(3)
    t, x, w = torch.randn(37, 45, generator=gen), torch.randn(37, 50, generator=gen), torch.randn(45, 20, generator=gen)

    def fn(t, x, w):
        dx, dw, db = t @ w, t.t() @ x, t.sum(0)
        return torch.relu(dx), db * 2 + 1, (db.unsqueeze(1) * dw).sum(), dw.t() + 1

    with native_only(), launched_kernels() as names:
        got = torch.compile(fn)(t.to(DEV), x.to(DEV), w.to(DEV))
        torch.opencl.synchronize()
    for g, want in zip(got, fn(t, x, w)):
        torch.testing.assert_close(g.cpu(), want, rtol=1e-4, atol=1e-4)
    if kernel_class() == "cpu":  # the three products in one kernel
        assert len(_gemm_kernels(names)) == 1, names


@pytest.mark.parametrize("x_of_dx", [False, True])
def test_grouped_products_with_x_computed_late_forms(x_of_dx):
    """The weight gradient's X computed after the input gradient in the graph (as the partitioner recomputes
    a saved activation's reshape): moved before it and grouped into one launch; where X depends on the input
    gradient itself, two launches. The same values as CPU either way."""
    gen = torch.Generator().manual_seed(5)
    t, w, a = torch.randn(37, 45, generator=gen), torch.randn(45, 20, generator=gen), torch.randn(20, 37, generator=gen)

    def fn(t, w, a):
        dx = t @ w
        x = torch.relu(dx) if x_of_dx else torch.cos(a).t()
        return dx, t.t() @ x

    with native_only(), launched_kernels() as names:
        got = torch.compile(fn)(t.to(DEV), w.to(DEV), a.to(DEV))
        torch.opencl.synchronize()
    for g, want in zip(got, fn(t, w, a)):
        torch.testing.assert_close(g.cpu(), want, rtol=1e-4, atol=1e-4)
    if kernel_class() == "cpu":
        assert len(_gemm_kernels(names)) == (2 if x_of_dx else 1), names


@pytest.mark.parametrize("reduce", ["all", "dims_none", "float64", "dim1"])
def test_sums_beside_a_weight_gradient_that_stay_reductions_forms(reduce):
    """Sums of T that are not a bias gradient's (all of T, dims None, another dtype, along dim 1) beside
    T.t() @ X: the device pass leaves them to Inductor (dims None crashed it once), with CPU's values."""
    gen = torch.Generator().manual_seed(7)
    t, x = torch.randn(37, 45, generator=gen), torch.randn(37, 50, generator=gen)
    total = {"all": lambda t: torch.sum(t), "dims_none": lambda t: torch.ops.aten.sum.dim_IntList(t, None),
             "float64": lambda t: torch.ops.aten.sum.dim_IntList(t, [0], False, dtype=torch.float64),
             "dim1": lambda t: t.sum(1)}[reduce]

    def fn(t, x):
        return t.t() @ x, total(t)

    with native_only():
        got = torch.compile(fn)(t.to(DEV), x.to(DEV))
    for g, want in zip(got, fn(t, x)):
        torch.testing.assert_close(g.cpu(), want, rtol=1e-4, atol=1e-4)


def test_product_kept_for_outside_readers_and_unfusable_epilogues():
    """The product is stored when something outside its kernel reads it; an epilogue that reads it at another
    index (its transpose) is not fused."""
    a, b = torch.randn(33, 20), torch.randn(20, 33)
    fn = torch.compile(lambda a, b: (lambda y: (y, torch.sigmoid(y), y.t() * y))(a @ b))
    with native_only():
        got = fn(a.to(DEV), b.to(DEV))
    y = a @ b
    for g, w in zip(got, (y, torch.sigmoid(y), y.t() * y)):
        torch.testing.assert_close(g.cpu(), w, rtol=1e-4, atol=1e-4)


def test_addmm_beta_zero_ignores_nan():
    a, b = torch.randn(9, 12), torch.randn(12, 17)
    bias = torch.full((9, 17), float("nan"))
    got = torch.compile(lambda bias, a, b: torch.addmm(bias, a, b, beta=0))(bias.to(DEV), a.to(DEV), b.to(DEV))
    torch.testing.assert_close(got.cpu(), a @ b, rtol=1e-4, atol=1e-4)


# (batch, hidden): the dot-product form with Philox blocks whole in its tile rows (hidden a multiple of 4),
# and the register tile with a hidden width that splits blocks across rows (a memo per call site).
@pytest.mark.parametrize("batch,hidden", [(48, 64), (160, 30)])
@pytest.mark.parametrize("dropout", [0.0, 0.3])
def test_template_and_extern_products_agree_in_training(dropout, batch, hidden, monkeypatch):
    """A linear + ReLU + dropout MLP trained compiled: with the template (dropout and the gradients' masks in
    the products' kernels) and with extern products, the same Inductor graph and random stream, so the same
    losses and gradients; and without dropout, eager's too."""
    from torch_opencl._inductor import gemm

    def run(template):
        monkeypatch.setattr(gemm, "enabled", template)
        torch._dynamo.reset()
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(40, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, 10)).to(DEV)
        x, y = torch.randn(batch, 40, device=DEV), torch.randint(0, 10, (batch,), device=DEV)
        step = torch.compile(lambda x, y: F.cross_entropy(model(x), y))
        losses = []
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            loss = step(x, y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, [p.grad.cpu() for p in model.parameters()]

    with torch._inductor.config.patch(force_disable_caches=True):
        template, extern = run(True), run(False)
    torch.testing.assert_close(template, extern, rtol=1e-4, atol=1e-5)
    if dropout == 0.0:
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(40, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, 10))
        x, y = torch.randn(batch, 40, device=DEV).cpu(), torch.randint(0, 10, (batch,), device=DEV).cpu()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        losses = []
        for _ in range(3):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        torch.testing.assert_close(template[0], losses, rtol=1e-4, atol=1e-5)


def test_dynamic_sizes_keep_the_extern_product():
    fn = torch.compile(lambda a, b: torch.relu(a @ b), dynamic=True)
    for m in (6, 11):
        a, b = torch.randn(m, 13), torch.randn(13, 21)
        with launched_kernels() as names:
            got = fn(a.to(DEV), b.to(DEV))
            torch.opencl.synchronize()
        torch.testing.assert_close(got.cpu(), torch.relu(a @ b), rtol=1e-4, atol=1e-4)
        assert not _gemm_kernels(names), names
