"""Property-based fuzzing against CPU PyTorch (cases and comparison: _fuzz.py): for each operator
family, random layouts (0- and 1-sized dims, transposes, stepped slices, expanded dims, offsets
up to the end of the storage), every dtype the device holds, and random bad arguments, forward
and backward; the device gives CPU's value or CPU's error.

CI runs a fixed (derandomized) set of examples per family, sized to keep the cold-cache cost of
this file near 5 minutes on the 2-core PoCL machine, once per kernel class. For a longer hunt:

    TORCH_OPENCL_FUZZ_EXAMPLES=2000 [TORCH_OPENCL_FUZZ_SEED=7] [TORCH_OPENCL_KERNEL_CLASS=gpu] \
        ../.venv/bin/python -m pytest -q test_fuzz.py

(random seeds unless TORCH_OPENCL_FUZZ_SEED is set). A failure ends with a one-line reproducer;
after a crash, $TMPDIR/torch_opencl_fuzz_last_case.json holds the case that was running.
"""
import os

import pytest
import torch
from hypothesis import HealthCheck, Phase, given, seed, settings

import _fuzz as Z

# Examples per family in CI: the families whose cases compile the fewest new programs get more.
CI_EXAMPLES = {"unary": 25, "binary": 25, "reduce": 30, "blas": 20, "conv": 20, "norm": 15, "loss": 20,
               "index": 30, "shape": 25, "random": 20, "fallback": 20, "wide": 25}
EXAMPLES = int(os.environ.get("TORCH_OPENCL_FUZZ_EXAMPLES", "0"))
SEED = os.environ.get("TORCH_OPENCL_FUZZ_SEED")


pytestmark = pytest.mark.usefixtures("silent_fallback")


def test_every_family_has_a_budget():
    assert set(CI_EXAMPLES) == set(Z.CASES) == set(Z.families())


@pytest.mark.parametrize("family", sorted(Z.CASES))
def test_fuzz(family):
    @settings(max_examples=EXAMPLES or CI_EXAMPLES[family], deadline=None, database=None,
              derandomize=not EXAMPLES and SEED is None, print_blob=False,
              suppress_health_check=list(HealthCheck),
              phases=[Phase.explicit, Phase.generate, Phase.target, Phase.shrink])
    @given(case=Z.CASES[family]())
    def run(case):
        Z.check_case(case)

    if SEED is not None:
        run = seed(int(SEED))(run)
    run()


# --- The fuzzer itself: it must catch what it is there to catch. -----------------------------


def test_fuzzer_catches_a_wrong_value_and_prints_a_reproducer(monkeypatch):
    case = {"family": "unary", "op": "neg", "grad": False, "args": {},
            "inputs": [{"dtype": "float32", "sizes": [3], "strides": [1], "offset": 0, "storage": 3, "seed": 1}]}
    Z.check_case(case)
    monkeypatch.setitem(Z.OPS, "neg", Z.Op("unary", lambda x, a: -x[0] + (x[0].device.type == Z.DEV)))
    with pytest.raises(Z.Mismatch, match=r"(?s)not close.*reproduce: cd test && .*_fuzz.py '\{"):
        Z.check_case(case)


def test_fuzzer_catches_a_missing_error(monkeypatch):
    def fn(x, a):
        if x[0].device.type == "cpu":
            raise RuntimeError("bad argument")
        return x[0]

    monkeypatch.setitem(Z.OPS, "neg", Z.Op("unary", fn))
    case = {"family": "unary", "op": "neg", "grad": False, "args": {},
            "inputs": [{"dtype": "int64", "sizes": [0, 2], "strides": [2, 1], "offset": 4, "storage": 4, "seed": 1}]}
    with pytest.raises(Z.Mismatch, match="CPU raised RuntimeError: bad argument; the device returned a value"):
        Z.check_case(case)


def test_layouts_reach_the_corners():
    """Drawn specs include views at the very end of their storage, expanded dims and empty tensors."""
    from hypothesis import find

    def spec_of(sizes):
        return Z.tensor_specs(sizes, "float32")

    at_end = find(Z.shapes(min_dims=1).flatmap(spec_of),
                  lambda s: 0 in s["sizes"] and s["offset"] == s["storage"] and s["offset"] > 0,
                  settings=settings(database=None, max_examples=2000))
    assert Z.make_tensor(at_end, Z.DEV).numel() == 0
    expanded = find(Z.shapes(min_dims=2).flatmap(spec_of), lambda s: 0 in s["strides"] and min(s["sizes"]) > 1,
                    settings=settings(database=None, max_examples=2000))
    torch.testing.assert_close(Z.make_tensor(expanded, Z.DEV).cpu(), Z.make_tensor(expanded, "cpu"))
