"""The compile fuzzer's fixed cases (test/_compile_fuzz.py): random graphs of pointwise math, reductions and
views (and with `products`, matrix products), compiled on opencl, against CPU eager (values, and with `grad` the inputs' gradients). Each case is
one Inductor compile and one OpenCL program, so CI runs a few dozen; `_compile_fuzz.py START COUNT` hunts
longer. Names with "forms" run again under TORCH_OPENCL_KERNEL_CLASS=gpu (scripts/test.sh)."""
import pytest
import torch

import _compile_fuzz as Z

CASES = ([("values", seed) for seed in range(16)] + [("grad", seed) for seed in range(8)]
         + [("dynamic", seed) for seed in range(4)] + [("products", seed) for seed in range(8)]
         + [("products-grad", seed) for seed in range(4)])


@pytest.mark.parametrize("mode,seed", CASES, ids=[f"{m}-{s}" for m, s in CASES])
def test_compiled_graph_matches_cpu_forms(mode, seed):
    grad, products = mode.endswith("grad"), mode.startswith("products")
    status, description, message = Z.run_case(seed, grad=grad, dynamic=mode == "dynamic", products=products)
    # "precision": a result with products as close to the float64 answer as eager's (see _compile_fuzz.py).
    assert status in ("ok", "skip", "precision"), (
        f"{status}: {description}\n{message}\n"
        f"reproduce: cd test && ../.venv/bin/python _compile_fuzz.py --seeds {seed}"
        + (" --grad" if grad else "") + (" --dynamic" if mode == "dynamic" else "")
        + (" --products" if products else ""))


def test_fuzzer_reports_a_wrong_compiled_answer(monkeypatch):
    """A graph that computes something else on opencl is a mismatch (CPU Inductor's second opinion, which
    computes the CPU branch, does not excuse it)."""

    def graph(x):
        return [x.exp() if x.device.type == "cpu" else x.exp() * 1.001]

    monkeypatch.setattr(Z, "make_case", lambda seed, grad=False, products=False: (graph, [torch.randn(5)], "exp, off by 0.1%"))
    status, description, message = Z.run_case(0)
    assert status == "mismatch" and "not close" in message
