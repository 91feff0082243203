"""Sparse COO and CSR tensors on opencl, against CPU PyTorch: construction and the conversions,
coalesce, the accessors, moving between devices, sparse @ dense (with gradients, as a GCN layer
takes them), add, mul, sum, uncoalesced, empty and hybrid tensors, and the errors for what a
layout does not support. Structure runs natively; arithmetic through the counted CPU fallback."""
import pytest
import torch

import torch_opencl  # noqa: F401

DEV = "opencl"

pytestmark = pytest.mark.usefixtures("silent_fallback")


def dense_data(shape, seed=0, density=0.4, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g)
    x = x * (torch.rand(shape, generator=g) < density)
    return x.to(dtype)


def uncoalesced_coo(dtype=torch.float32):
    """A COO tensor with duplicate and unordered indices: (1,2) three times, (0,1) twice."""
    indices = torch.tensor([[1, 0, 1, 2, 0, 1], [2, 1, 2, 0, 1, 2]])
    values = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).to(dtype)
    return torch.sparse_coo_tensor(indices, values, (3, 4))


def assert_coo_equal(dev, cpu, rtol=1e-5, atol=1e-6):
    assert dev.device.type == DEV and dev.layout == torch.sparse_coo
    assert (dev.shape, dev.dtype, dev._nnz()) == (cpu.shape, cpu.dtype, cpu._nnz())
    assert (dev.sparse_dim(), dev.dense_dim(), dev.is_coalesced()) == (cpu.sparse_dim(), cpu.dense_dim(),
                                                                        cpu.is_coalesced())
    assert dev._indices().device.type == DEV and dev._values().device.type == DEV
    torch.testing.assert_close(dev._indices().cpu(), cpu._indices(), rtol=0, atol=0)
    torch.testing.assert_close(dev._values().cpu(), cpu._values(), rtol=rtol, atol=atol)


def assert_compressed_equal(dev, cpu, rtol=1e-5, atol=1e-6):
    assert dev.device.type == DEV and dev.layout == cpu.layout
    assert (dev.shape, dev.dtype, dev._nnz()) == (cpu.shape, cpu.dtype, cpu._nnz())
    if cpu.layout in (torch.sparse_csr, torch.sparse_bsr):
        compressed, plain = torch.Tensor.crow_indices, torch.Tensor.col_indices
    else:
        compressed, plain = torch.Tensor.ccol_indices, torch.Tensor.row_indices
    for part in (compressed, plain):
        assert part(dev).device.type == DEV
        torch.testing.assert_close(part(dev).cpu(), part(cpu), rtol=0, atol=0)
    torch.testing.assert_close(dev.values().cpu(), cpu.values(), rtol=rtol, atol=atol)


# --- COO: construction, coalesce, accessors ---------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_uncoalesced_coo_keeps_duplicates_and_coalesces_like_cpu(dtype):
    cpu = uncoalesced_coo(dtype)
    dev = torch.sparse_coo_tensor(cpu._indices().to(DEV), cpu._values().to(DEV), (3, 4))
    assert_coo_equal(dev, cpu)
    assert dev._nnz() == 6 and not dev.is_coalesced()
    coalesced = dev.coalesce()
    assert_coo_equal(coalesced, cpu.coalesce())
    assert coalesced.is_coalesced() and coalesced._nnz() == 3
    torch.testing.assert_close(coalesced.indices().cpu(), cpu.coalesce().indices())
    torch.testing.assert_close(dev.to_dense().cpu(), cpu.to_dense())


def test_sparse_coo_tensor_with_device_argument_and_cpu_indices():
    cpu = uncoalesced_coo()
    dev = torch.sparse_coo_tensor(cpu._indices(), cpu._values(), (3, 4), device=DEV)
    assert_coo_equal(dev, cpu)


def test_dense_to_sparse_and_back_like_cpu():
    x = dense_data((5, 6), seed=1)
    dev = x.to(DEV).to_sparse()
    assert_coo_equal(dev, x.to_sparse())
    torch.testing.assert_close(dev.to_dense().cpu(), x)


def test_hybrid_coo_with_dense_dims():
    x = dense_data((4, 3, 2), seed=2, density=0.5)
    x[1] = 0  # a whole sparse row of zeros is left out, as on CPU
    dev = x.to(DEV).to_sparse(sparse_dim=1)
    cpu = x.to_sparse(sparse_dim=1)
    assert (dev.sparse_dim(), dev.dense_dim()) == (1, 2)
    assert_coo_equal(dev, cpu)
    torch.testing.assert_close(dev.to_dense().cpu(), x)
    torch.testing.assert_close((dev + dev).to_dense().cpu(), (cpu + cpu).to_dense())
    torch.testing.assert_close(torch.sparse.sum(dev, dim=0).cpu(), torch.sparse.sum(cpu, dim=0))
    # hybrid values travel between devices with their dense dims
    assert_coo_equal(cpu.to(DEV), cpu)


def test_empty_sparse_tensors():
    cpu = torch.sparse_coo_tensor(torch.empty(2, 0, dtype=torch.long), torch.empty(0), (3, 4))
    dev = torch.sparse_coo_tensor(size=(3, 4), device=DEV)
    assert_coo_equal(dev, cpu)
    assert_coo_equal(dev.coalesce(), cpu.coalesce())
    torch.testing.assert_close(dev.to_dense().cpu(), torch.zeros(3, 4))
    m = dense_data((4, 2), seed=4, density=1.0)
    torch.testing.assert_close(torch.sparse.mm(dev, m.to(DEV)).cpu(), torch.zeros(3, 2))
    zeros = torch.zeros(3, 4, device=DEV)
    assert_coo_equal(zeros.to_sparse(), torch.zeros(3, 4).to_sparse())
    assert_compressed_equal(zeros.to_sparse_csr(), torch.zeros(3, 4).to_sparse_csr())


def test_moving_between_devices_keeps_structure():
    cpu = uncoalesced_coo()
    dev = cpu.to(DEV)
    assert_coo_equal(dev, cpu)
    back = dev.cpu()
    assert back.device.type == "cpu" and back.layout == torch.sparse_coo and not back.is_coalesced()
    torch.testing.assert_close(back._indices(), cpu._indices())
    torch.testing.assert_close(back._values(), cpu._values())
    csr = dense_data((4, 5), seed=5).to_sparse_csr()
    assert_compressed_equal(csr.to(DEV), csr)
    assert csr.to(DEV).cpu().layout == torch.sparse_csr
    torch.testing.assert_close(csr.to(DEV).cpu().to_dense(), csr.to_dense())


def test_structure_is_native_and_arithmetic_is_counted():
    """Construction, accessors and moves run no CPU fallback; coalesce does, counted and refused by
    TORCH_OPENCL_FALLBACK=error like every fallback."""
    cpu = uncoalesced_coo()
    torch.opencl.reset_fallback_stats()
    dev = cpu.to(DEV)
    dev._indices(), dev._values(), dev._nnz(), dev.is_coalesced(), dev.sparse_dim(), dev.dense_dim()
    dev.clone().cpu()
    assert torch.opencl.fallback_stats() == {}
    dev.coalesce()
    assert torch.opencl.fallback_stats().get("aten::_coalesce") == 1
    previous = torch.opencl.fallback_mode()
    torch.opencl.set_fallback_mode("error")
    try:
        with pytest.raises(RuntimeError, match=r"aten::_coalesce.*TORCH_OPENCL_FALLBACK=error"):
            dev.coalesce()
    finally:
        torch.opencl.set_fallback_mode(previous)


# --- COO arithmetic ---------------------------------------------------------------------------------

@pytest.mark.parametrize("coalesced", [False, True])
def test_sparse_mm_and_addmm_like_cpu(coalesced):
    cpu = uncoalesced_coo()
    if coalesced:
        cpu = cpu.coalesce()
    dev = cpu.to(DEV)
    m = dense_data((4, 3), seed=6, density=1.0)
    bias = dense_data((3, 3), seed=7, density=1.0)
    torch.testing.assert_close(torch.sparse.mm(dev, m.to(DEV)).cpu(), torch.sparse.mm(cpu, m), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(torch.mm(dev, m.to(DEV)).cpu(), torch.mm(cpu, m), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close((dev @ m.to(DEV)).cpu(), cpu @ m, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(torch.addmm(bias.to(DEV), dev, m.to(DEV), beta=0.5, alpha=2.0).cpu(),
                               torch.addmm(bias, cpu, m, beta=0.5, alpha=2.0), rtol=1e-4, atol=1e-5)
    row = bias[0]
    torch.testing.assert_close(torch.addmm(row.to(DEV), dev, m.to(DEV)).cpu(), torch.addmm(row, cpu, m),
                               rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(bias.to(DEV).addmm_(dev, m.to(DEV), beta=2.0).cpu(), bias.clone().addmm_(cpu, m, beta=2.0),
                               rtol=1e-4, atol=1e-5)
    nan = torch.full((3, 3), float("nan"))  # beta=0 ignores self, as on CPU
    torch.testing.assert_close(torch.addmm(nan.to(DEV), dev, m.to(DEV), beta=0).cpu(), torch.addmm(nan, cpu, m, beta=0),
                               rtol=1e-4, atol=1e-5)
    torch.testing.assert_close((m.t().to(DEV) @ dev.t()).cpu(), m.t() @ cpu.t(), rtol=1e-4, atol=1e-5)


def test_sparse_mm_runs_on_the_device_and_refuses_like_cpu():
    cpu = uncoalesced_coo()
    dev = cpu.to(DEV)
    m = dense_data((4, 3), seed=6, density=1.0)
    torch.opencl.reset_fallback_stats()
    torch.sparse.mm(dev, m.to(DEV))
    torch.addmm(torch.ones(3, 3, device=DEV), dev, m.to(DEV))
    assert torch.opencl.fallback_stats() == {}
    # what the device path does not take runs CPU's kernel: its results, and its errors
    torch.testing.assert_close(torch.mm(dev.long(), m.long().to(DEV)).cpu(), torch.mm(cpu.long(), m.long()))
    for a, b in ((cpu, torch.ones(3, 3)), (cpu.double(), m)):
        with pytest.raises(RuntimeError) as cpu_error:
            torch.mm(a, b)
        with pytest.raises(RuntimeError) as dev_error:
            torch.mm(a.to(DEV), b.to(DEV))
        assert str(cpu_error.value).splitlines()[0] in str(dev_error.value)


def test_add_mul_sum_like_cpu():
    a_cpu = uncoalesced_coo()
    b_cpu = dense_data((3, 4), seed=8).to_sparse()
    a, b = a_cpu.to(DEV), b_cpu.to(DEV)
    assert_coo_equal((a + b).coalesce(), (a_cpu + b_cpu).coalesce())
    assert_coo_equal(torch.add(a, b, alpha=-2.0).coalesce(), torch.add(a_cpu, b_cpu, alpha=-2.0).coalesce())
    assert_coo_equal((a * 2.5).coalesce(), (a_cpu * 2.5).coalesce())
    dense = dense_data((3, 4), seed=9, density=1.0)
    torch.testing.assert_close((dense.to(DEV) + a).cpu(), dense + a_cpu)
    torch.testing.assert_close(a.sum().cpu(), a_cpu.sum())
    torch.testing.assert_close(torch.sparse.sum(a).cpu(), torch.sparse.sum(a_cpu))
    assert_coo_equal(torch.sparse.sum(a, dim=1).coalesce(), torch.sparse.sum(a_cpu, dim=1).coalesce())
    in_place = a.clone()
    in_place.add_(b).mul_(3.0)
    expected = a_cpu.clone().add_(b_cpu).mul_(3.0)
    assert in_place.device.type == DEV
    torch.testing.assert_close(in_place.to_dense().cpu(), expected.to_dense())


def test_dense_plus_sparse_runs_on_the_device():
    a_cpu = uncoalesced_coo()
    hybrid_cpu = dense_data((4, 3, 2), seed=17).to_sparse(sparse_dim=2)
    dense = dense_data((3, 4), seed=18, density=1.0)
    dense_3d = dense_data((4, 3, 2), seed=19, density=1.0)
    a, hybrid = a_cpu.to(DEV), hybrid_cpu.to(DEV)
    torch.opencl.reset_fallback_stats()
    torch.testing.assert_close(torch.add(dense.to(DEV), a, alpha=-0.5).cpu(), torch.add(dense, a_cpu, alpha=-0.5))
    torch.testing.assert_close((dense_3d.to(DEV) + hybrid).cpu(), dense_3d + hybrid_cpu)
    transposed = dense.t().contiguous().to(DEV).t()  # a strided self that is not contiguous
    torch.testing.assert_close(transposed.add_(a).cpu(), dense + a_cpu)
    out = torch.empty(0, device=DEV)
    torch.testing.assert_close(torch.add(dense.to(DEV), a, out=out).cpu(), dense + a_cpu)
    torch.testing.assert_close(a.to_dense().cpu(), a_cpu.to_dense())
    torch.testing.assert_close(hybrid.to_dense().cpu(), hybrid_cpu.to_dense())
    assert torch.opencl.fallback_stats() == {}
    # dtype promotion and sizes that differ go to CPU's kernel, with its results and errors
    torch.testing.assert_close((dense.double().to(DEV) + a).cpu(), dense.double() + a_cpu)
    with pytest.raises(RuntimeError) as cpu_error:
        torch.ones(3, 5) + a_cpu
    with pytest.raises(RuntimeError) as dev_error:
        torch.ones(3, 5, device=DEV) + a
    assert str(cpu_error.value).splitlines()[0] in str(dev_error.value)


def test_sparse_embedding_gradients_step_like_cpu():
    """nn.Embedding(sparse=True) makes sparse COO gradients; SGD adds them into the weights."""
    weights = {}
    for device in ("cpu", DEV):
        torch.manual_seed(0)
        emb = torch.nn.Embedding(10, 4, sparse=True).to(device)
        opt = torch.optim.SGD(emb.parameters(), lr=0.1)
        idx = torch.tensor([1, 3, 3, 7], device=device)
        for _ in range(2):
            opt.zero_grad()
            emb(idx).pow(2).sum().backward()
            opt.step()
        assert emb.weight.grad.layout == torch.sparse_coo
        weights[device] = emb.weight.detach().cpu()
    torch.testing.assert_close(weights[DEV], weights["cpu"])


def test_transpose_permute_unsqueeze_like_cpu():
    cpu = uncoalesced_coo().coalesce()
    dev = cpu.to(DEV)
    assert_coo_equal(dev.t().coalesce(), cpu.t().coalesce())
    assert_coo_equal(dev.permute(1, 0).coalesce(), cpu.permute(1, 0).coalesce())
    assert_coo_equal(dev.unsqueeze(0).coalesce(), cpu.unsqueeze(0).coalesce())


# --- gradients through sparse @ dense ------------------------------------------------------------

def test_gcn_layer_gradients_match_cpu():
    """A two-layer GCN: relu(adj @ (x @ W1)) then adj @ (h @ W2), adj normalised and sparse."""
    n, f, hidden, out = 7, 5, 4, 3
    g = torch.Generator().manual_seed(10)
    edges = torch.randint(0, n, (2, 16), generator=g)
    edges = torch.cat([edges, torch.arange(n).repeat(2, 1)], dim=1)  # self loops, some duplicates
    weights = torch.rand(edges.shape[1], generator=g)
    adj_cpu = torch.sparse_coo_tensor(edges, weights, (n, n)).coalesce()
    x_cpu = torch.randn(n, f, generator=g)
    params_cpu = [torch.randn(f, hidden, generator=g), torch.randn(hidden, out, generator=g)]

    def run(adj, x, w1, w2):
        h = torch.relu(torch.sparse.mm(adj, x @ w1))
        return torch.sparse.mm(adj, h @ w2).log_softmax(dim=1)

    grads = {}
    for device in ("cpu", DEV):
        params = [p.to(device, copy=True).requires_grad_() for p in params_cpu]
        x = x_cpu.to(device, copy=True).requires_grad_()
        adj = adj_cpu.to(device)
        torch.opencl.reset_fallback_stats()
        logits = run(adj, x, *params)
        logits[:, 0].sum().backward()
        fallback_calls = torch.opencl.fallback_stats()
        grads[device] = [logits.detach().cpu(), x.grad.cpu()] + [p.grad.cpu() for p in params]
    for got, want in zip(grads[DEV], grads["cpu"]):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    assert not any("mm" in name for name in fallback_calls), fallback_calls  # forward and backward on the device


def test_gradient_of_sparse_values_matches_cpu():
    adj_cpu = uncoalesced_coo().coalesce()
    m_cpu = dense_data((4, 2), seed=11, density=1.0)
    grads = {}
    for device in ("cpu", DEV):
        adj = adj_cpu.to(device, copy=True).requires_grad_()
        m = m_cpu.to(device, copy=True).requires_grad_()
        torch.sparse.mm(adj, m).pow(2).sum().backward()
        assert adj.grad.layout == torch.sparse_coo
        grads[device] = (adj.grad.coalesce().to_dense().cpu(), m.grad.cpu())
    for got, want in zip(grads[DEV], grads["cpu"]):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


# --- CSR ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_csr_conversions_and_accessors_like_cpu(dtype):
    x = dense_data((5, 6), seed=12, dtype=dtype)
    dev = x.to(DEV).to_sparse_csr()
    cpu = x.to_sparse_csr()
    assert_compressed_equal(dev, cpu)
    torch.testing.assert_close(dev.to_dense().cpu(), x)
    assert_coo_equal(dev.to_sparse(), cpu.to_sparse())
    assert_compressed_equal(x.to(DEV).to_sparse().to_sparse_csr(), x.to_sparse().to_sparse_csr())
    assert_compressed_equal(x.to(DEV).to_sparse_csc(), x.to_sparse_csc())


def test_sparse_csr_tensor_with_device_argument():
    crow, col, values = torch.tensor([0, 2, 2, 3]), torch.tensor([0, 3, 1]), torch.tensor([1.0, 2.0, 3.0])
    cpu = torch.sparse_csr_tensor(crow, col, values, size=(3, 4))
    dev = torch.sparse_csr_tensor(crow.to(DEV), col.to(DEV), values.to(DEV), size=(3, 4))
    assert_compressed_equal(dev, cpu)
    assert_compressed_equal(torch.sparse_csr_tensor(crow, col, values, size=(3, 4), device=DEV), cpu)


def test_csr_arithmetic_like_cpu():
    x = dense_data((5, 6), seed=13)
    y = dense_data((5, 6), seed=14)
    m = dense_data((6, 3), seed=15, density=1.0)
    a, b = x.to(DEV).to_sparse_csr(), y.to(DEV).to_sparse_csr()
    a_cpu, b_cpu = x.to_sparse_csr(), y.to_sparse_csr()
    torch.testing.assert_close((a @ m.to(DEV)).cpu(), a_cpu @ m, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(torch.addmm(m[:5, :].to(DEV) * 0 + 1, a, m.to(DEV)).cpu(),
                               torch.addmm(m[:5, :] * 0 + 1, a_cpu, m), rtol=1e-4, atol=1e-5)
    assert_compressed_equal(a + b, a_cpu + b_cpu)
    assert_compressed_equal(a * 2.0, a_cpu * 2.0)
    torch.testing.assert_close(a.sum().cpu(), a_cpu.sum(), rtol=1e-4, atol=1e-5)


# --- what a layout does not support --------------------------------------------------------------

def test_unsupported_layout_errors_name_the_layout():
    x = dense_data((4, 4), seed=16, density=0.6)
    bsr_cpu = x.to_sparse_bsr((2, 2))
    bsr = x.to(DEV).to_sparse_bsr((2, 2))
    assert_compressed_equal(bsr, bsr_cpu)  # BSR converts, as on CPU
    with pytest.raises(RuntimeError, match="SparseBsr"):
        torch.exp(bsr_cpu)
    with pytest.raises(RuntimeError, match="SparseBsr"):
        torch.exp(bsr)
    # an operator CPU has no kernel for with the layout: refused on both, and opencl says what works
    with pytest.raises(RuntimeError, match="SparseCsrCPU"):
        torch.sparse.sum(bsr_cpu, dim=0)
    with pytest.raises(RuntimeError, match=r"aten::_indices.*torch\.sparse_bsr.*to_dense\(\)"):
        torch.sparse.sum(bsr, dim=0)
    # a CPU kernel that refuses the layout: its error, and where it came from
    with pytest.raises(RuntimeError, match="non-square blocks") as dev_error:
        bsr_rect = x.to(DEV).to_sparse_bsr((1, 2))
        bsr_rect @ torch.ones(4, 2, device=DEV)
    with pytest.raises(RuntimeError, match="non-square blocks"):
        x.to_sparse_bsr((1, 2)) @ torch.ones(4, 2)
    assert "torch.sparse_bsr" in str(dev_error.value) and "to_dense()" in str(dev_error.value)
    with pytest.raises(RuntimeError, match="mkldnn"):
        x.to(DEV).to_mkldnn()
