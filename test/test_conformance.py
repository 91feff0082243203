"""Conformance (CI slice): the OpInfo samples of the most used operators, float32, on CPU and on
the opencl device, compared by test/_opinfo_harness.py (forward, non-contiguous copies, in-place
variants, mutated inputs, gradients). Known mismatches are listed in test/conformance_xfail.txt;
every listed (op, dtype) runs here as well, and a listed entry that starts passing fails the test
(XPASS) so the list only shrinks.
The full sweep over every OpInfo and dtype is scripts/conformance.sh; TestCommon's checks (out=, variants)
run over every OpInfo in test_conformance_common.py."""
import pytest
import torch

import _opinfo_harness as H
from torch.testing._internal.opinfo.core import OpInfo, SampleInput

# The CI slice: the operators training scripts use most (OpInfo full names), all samples, float32.
CI_OPS = [
    "add", "sub", "mul", "div.no_rounding_mode", "neg", "abs", "pow", "exp", "log", "sqrt", "rsqrt",
    "tanh", "sigmoid", "clamp", "maximum", "where", "eq", "lt",
    "matmul", "mm", "addmm", "bmm", "nn.functional.linear",
    "sum", "mean", "amax", "max.reduction_with_dim", "argmax", "var", "std", "norm", "logsumexp", "cumsum",
    "softmax", "log_softmax", "nn.functional.cross_entropy", "nn.functional.nll_loss", "nn.functional.mse_loss",
    "nn.functional.relu", "nn.functional.gelu", "nn.functional.silu", "nn.functional.dropout",
    "nn.functional.layer_norm", "nn.functional.batch_norm", "nn.functional.conv2d",
    "nn.functional.max_pool2d", "nn.functional.avg_pool2d", "nn.functional.embedding",
    "cat", "stack", "index_select", "gather", "scatter_add", "index_add", "masked_fill", "topk", "sort",
    "transpose", "view", "reshape", "permute", "expand", "unsqueeze", "squeeze", "zeros_like", "full_like",
]

OPS = H.all_ops()
XFAIL = H.read_xfail()


pytestmark = pytest.mark.usefixtures("silent_fallback")


@pytest.mark.parametrize("name", CI_OPS)
def test_opinfo_float32(name):
    r = H.check_op(OPS[name], "float32")
    assert r.forward != "skip", f"{name}: skipped ({r.skip_reason}); the CI slice must test it"
    problems = H.verdict(r, XFAIL)
    assert not problems, "\n".join(problems)


# Every listed expected failure runs here too (those the slice above does not already run): an entry
# that starts passing fails as XPASS, so the list only shrinks, and one that fails differently shows.
XFAIL_PAIRS = sorted({tuple(key.split()[:2]) for key in XFAIL} - {(name, "float32") for name in CI_OPS})


def test_listed_expected_failures():
    # One test over the whole list (empty once everything conforms), not one per entry.
    problems = [p for name, dtype in XFAIL_PAIRS for p in H.verdict(H.check_op(OPS[name], dtype), XFAIL)]
    assert not problems, "\n".join(problems)


# --- The harness itself: it must catch what it is there to catch. ------------------------------


def _fake_op(fn, autograd=True):
    def samples(op, device, dtype, requires_grad, **kw):
        g = torch.Generator().manual_seed(0)
        for shape in ((3, 4), (5,), ()):
            yield SampleInput(torch.randn(shape, generator=g, dtype=dtype).requires_grad_(requires_grad))

    return OpInfo("fake_conformance_op", op=fn, dtypes=(torch.float32, torch.float64),
                  sample_inputs_func=samples, supports_autograd=autograd)


def test_harness_catches_wrong_forward():
    op = _fake_op(lambda x: x * 2 + (1e-3 if x.device.type == H.DEV else 0))
    r = H.check_op(op, "float32")
    assert r.forward == "fail" and "not close" in r.error, r


def test_harness_catches_wrong_gradient():
    # Equal forward values; on the device the gradient is 3 instead of 2.
    op = _fake_op(lambda x: x * 2 + ((x - x.detach()) if x.device.type == H.DEV else 0))
    r = H.check_op(op, "float64")
    assert r.forward == "pass" and r.backward == "fail" and "grad" in r.grad_error, r


def test_harness_catches_wrong_layout_handling():
    # Right for contiguous inputs only: the non-contiguous copy must expose it.
    def fn(x):
        if x.device.type == H.DEV and not x.is_contiguous():
            return x.flatten().flip(0).view(x.shape) * 2
        return x * 2

    r = H.check_op(_fake_op(fn), "float32")
    assert r.forward == "fail" and "noncontig" in r.error, r


def test_harness_passes_a_correct_op_and_reports_native():
    r = H.check_op(_fake_op(lambda x: x * 2), "float32")
    assert (r.forward, r.backward, r.native, r.samples) == ("pass", "pass", True, 5), r


def _fake_topk(fn):
    def samples(op, device, dtype, requires_grad, **kw):
        yield SampleInput(torch.tensor([[1, 3, 3, 2, 3, 0, 3], [5, 5, 5, 5, 1, 1, 2]], dtype=dtype), args=(3,))

    return OpInfo("topk", op=fn, dtypes=(torch.int64,), sample_inputs_func=samples, supports_autograd=False)


def test_harness_accepts_any_order_of_topk_ties_and_nothing_else():
    # CPU's order of tied indices ([1, 6, 4]) is its heap's; lowest-first is as right.
    def lowest_first(x, k):
        v, i = torch.topk(x, k)
        if x.device.type == H.DEV:
            i = torch.sort(i, dim=-1).values
        return v, i

    assert H.check_op(_fake_topk(lowest_first), "int64").forward == "pass"

    def wrong_index(x, k):
        v, i = torch.topk(x, k)
        return (v, (i + 1) % x.size(-1)) if x.device.type == H.DEV else (v, i)

    r = H.check_op(_fake_topk(wrong_index), "int64")
    assert r.forward == "fail" and "do not select" in r.error, r

    def repeated_index(x, k):
        v, i = torch.topk(x, k)
        return (v, i[:, :1].expand_as(i)) if x.device.type == H.DEV else (v, i)

    r = H.check_op(_fake_topk(lambda x, k: repeated_index(x, k)), "int64")
    assert r.forward == "fail", r


def test_copies_keep_layout_and_noncontig_keeps_values():
    base = torch.arange(24.0).view(4, 6)
    t = base[1:, ::2].t()  # offset, strided, transposed
    d = H._copy_layout(t, H.DEV)
    assert (d.shape, d.stride(), d.storage_offset()) == (t.shape, t.stride(), t.storage_offset())
    torch.testing.assert_close(d.cpu(), t)
    e = H._copy_layout(torch.ones(3).expand(2, 3), H.DEV)  # overlapping memory stays overlapping
    assert e.stride() == (0, 1)
    nc = H._noncontig(base)
    assert not nc.is_contiguous()
    torch.testing.assert_close(nc, base)


def test_verdict_reports_unexpected_failures_and_xpasses():
    r = H.Result("add", "float32", forward="fail", backward="pass", error="boom")
    assert H.verdict(r, {}) == ["FAIL add float32 forward: boom"]
    problems = H.verdict(r, {"add float32 forward": "boom", "add float32 backward": "old"})
    assert len(problems) == 1 and problems[0].startswith("XPASS add float32 backward")


def test_xfail_file_is_well_formed_and_sorted(tmp_path):
    entries = H.read_xfail()
    for key in entries:
        op, dtype, phase = key.split()
        assert op in OPS, f"{H.XFAIL_PATH}: {op} is not an OpInfo"
        assert dtype in H.DTYPES and phase in ("forward", "backward"), key
    # Writing what was read gives the same entries back, sorted (update mode is deterministic).
    path = tmp_path / "x.txt"
    H.write_xfail(entries, str(path))
    assert H.read_xfail(str(path)) == entries
    lines = [ln.split("#")[0].strip() for ln in path.read_text().splitlines() if ln and not ln.startswith("#")]
    assert lines == sorted(lines)
