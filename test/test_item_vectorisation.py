"""How the implementation vectorises work-items, and the line forms that follow it (runtime/item_vectorisation.h,
runtime/kernel_forms.h's vectorises_items and line_lanes). PoCL vectorises a work-item's own loops, Intel's CPU
runtime vectorises across work-items: the choice comes from the implementation, and the measurement an unknown
CPU implementation gets must agree with it on both. scripts/test.sh runs the line families' tests again with
TORCH_OPENCL_LINE_LANES=16 on PoCL (the lanes form Intel's runtime takes), and test_intel.sh --ci runs them
on Intel's runtime in its own form."""
import os
import subprocess
import sys

import pytest
import torch

import torch_opencl

PROPS = torch_opencl._C._device_properties(0)
FORCED = os.environ.get("TORCH_OPENCL_LINE_LANES")


def test_forms_follow_the_implementation():
    platform = PROPS["platform"]
    if FORCED:
        assert PROPS["line_lanes"] == int(FORCED)
        assert PROPS["lanes_reason"] == f"TORCH_OPENCL_LINE_LANES={FORCED}"
    elif "Portable Computing Language" in platform and PROPS["type"] == "cpu":
        assert (PROPS["vectorises_items"], PROPS["line_lanes"]) == (False, 1)
        assert "PoCL" in PROPS["lanes_reason"]
    elif "Intel" in platform and PROPS["type"] == "cpu":
        assert (PROPS["vectorises_items"], PROPS["line_lanes"]) == (True, 16)
        assert "Intel" in PROPS["lanes_reason"]
    # 16 floats as a vector per work-item pay only where a work-item's loop is vectorised.
    if PROPS["kernel_class"] == "cpu":
        assert PROPS["pointwise_vectors"] == (not PROPS["vectorises_items"])


@pytest.mark.skipif(PROPS["type"] != "cpu", reason="GPUs are not measured: they run work-items in lanes")
def test_measurement_agrees_with_the_known_implementations():
    # The measurement an unknown CPU implementation gets, made here on PoCL or Intel's runtime, whose layout is
    # known: it must choose the same (PoCL: 0.8 ms a run per item against 4.4 across items; Intel: 12.9 against 3.4).
    t = torch_opencl._C._measure_item_vectorisation(0)
    assert t["per_item_us"] > 0 and t["across_items_us"] > 0
    assert t["across_items"] == PROPS["vectorises_items"], t


def _run(code, **env):
    return subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("value", ["3", "0", "128", "many", "16x"])
def test_line_lanes_rejects_what_has_no_form(value):
    proc = _run("import torch, torch_opencl; torch.ones(2, device='opencl') + 1", TORCH_OPENCL_LINE_LANES=value)
    assert proc.returncode != 0
    assert f"TORCH_OPENCL_LINE_LANES='{value}'" in proc.stderr
    assert "power of two from 1" in proc.stderr


def test_line_lanes_override_reaches_the_kernels():
    # A forced width is a build option of every program (a new cache key) and the 2-D launch of the runs.
    code = ("import torch, torch_opencl\n"
            "p = torch_opencl._C._device_properties(0)\n"
            "x = torch.arange(3 * 1000.).view(3, 1000)\n"
            "y = torch.cat([x.to('opencl'), x.to('opencl').flip(1)], 1).cpu()\n"
            "assert torch.equal(y, torch.cat([x, x.flip(1)], 1))\n"
            "print(p['line_lanes'], p['lanes_reason'])\n")
    proc = _run(code, TORCH_OPENCL_LINE_LANES="8")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[:1] == ["8"]


# The families whose lanes forms differ most from a run per item (argreduce_lanes, scan_lines_tiles, the batch
# norm planes walked by a group): partial blocks of lines and tiles, strided outer dims, several ops. Exact: each
# lanes form keeps its family's order of operations (argmax's ties, a scan's sequence), or compares integers.
SCAN_SHAPES = [(1, 5), (17, 33), (40, 16), (3, 2, 100)]


@pytest.mark.parametrize("shape", SCAN_SHAPES)
def test_scans_of_contiguous_lines_match_cpu(shape):
    g = torch.Generator().manual_seed(len(shape) * 100 + shape[-1])
    x = torch.randn(shape, generator=g)
    d = x.to("opencl")
    for fn in (lambda t: t.cumsum(-1), lambda t: t.cumprod(-1), lambda t: t.logcumsumexp(-1),
               lambda t: t.transpose(0, -2).cumsum(-1), lambda t: (t * 10).long().cumsum(-1)):
        torch.testing.assert_close(fn(d).cpu(), fn(x), rtol=0, atol=0)


@pytest.mark.parametrize("shape", SCAN_SHAPES)
def test_argmax_of_contiguous_runs_matches_cpu(shape):
    g = torch.Generator().manual_seed(shape[-1])
    x = torch.randint(0, 4, shape, generator=g).float()  # many ties: the first index must win, as on CPU
    x.view(-1)[::7] = float("nan") if x.numel() > 20 else 0.0
    d = x.to("opencl")
    for fn in (lambda t: t.argmax(-1), lambda t: t.argmin(-1), lambda t: t.max(-1), lambda t: t.min(-1)):
        got, want = fn(d), fn(x)
        if isinstance(want, tuple):
            torch.testing.assert_close(got.values.cpu(), want.values, equal_nan=True)
            assert torch.equal(got.indices.cpu(), want.indices)
        else:
            assert torch.equal(got.cpu(), want)
