"""TestCommon's checks of a device, over EVERY OpInfo of PyTorch's op_db (test/_common_checks.py says which and
how cheaply): the device against CPU, non-contiguous samples, method/in-place/alias variants, and out= (matching,
strided, resized with its warning, wrong device, unsafe dtype). float32, the first samples of each op.
What does not conform yet is listed in test/conformance_common_xfail.txt with its reason; a listed entry that
starts passing fails here (XPASS), so the list only shrinks."""
import pytest
import torch

import _common_checks as C
import _opinfo_harness as H
from torch.testing._internal.opinfo.core import OpInfo, SampleInput

OPS = H.all_ops()
XFAIL = C.read_xfail()

pytestmark = pytest.mark.usefixtures("silent_fallback")


def problems_of(name, failures):
    out = [f"FAIL {name} {check}: {text}" for check, text in sorted(failures.items())
           if f"{name} {check}" not in XFAIL]
    out += [f"XPASS {key}: now passes; remove it from test/conformance_common_xfail.txt"
            for key in sorted(XFAIL) if key.split()[0] == name and key.split()[1] not in failures]
    return out


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", sorted(OPS))
def test_common(name):
    problems = problems_of(name, C.check(OPS[name]))
    assert not problems, "\n".join(problems)


def test_xfail_list_names_opinfos_and_checks_sorted():
    lines = [ln.split("#")[0].split() for ln in open(C.XFAIL_PATH) if ln.split("#")[0].strip()]
    assert lines == sorted(lines), "keep test/conformance_common_xfail.txt sorted"
    for op, check in lines:
        assert op in OPS, f"{op} is not an OpInfo"
        assert check in C.CHECKS, f"{check} is not one of {C.CHECKS}"
    for key, reason in XFAIL.items():
        assert reason, f"{key}: an expected failure says why"


# --- The checks must catch what they are there to catch ----------------------------------------


def _fake(fn, out_fn=None, method=None, inplace=None):
    def samples(op, device, dtype, requires_grad, **kw):
        g = torch.Generator().manual_seed(0)
        for shape in ((3, 4), (5,)):
            yield SampleInput(torch.randn(shape, generator=g, dtype=dtype))

    def op(x, *, out=None):
        return fn(x) if out is None else out_fn(x, out)

    return OpInfo("fake_common_op", op=op, method_variant=method, inplace_variant=inplace,
                  dtypes=(torch.float32,), sample_inputs_func=samples, supports_out=out_fn is not None,
                  supports_autograd=False)


def _right_out(x, out):
    return torch.mul(x, 2, out=out)


def test_a_conforming_op_passes_every_check():
    op = _fake(lambda x: x * 2, _right_out, method=lambda x: x.mul(2), inplace=lambda x: x.mul_(2))
    assert C.check(op) == {}


def test_catches_a_wrong_device_answer():
    op = _fake(lambda x: x * 2 + (1e-3 if x.device.type == H.DEV else 0))
    assert "not close" in C.check(op)["compare_cpu"]


def test_catches_a_wrong_method_and_inplace_variant():
    op = _fake(lambda x: x * 2, method=lambda x: x.mul(3), inplace=lambda x: x.add_(x).add_(1))
    assert "method" in C.check(op)["variants"]
    op = _fake(lambda x: x * 2, inplace=lambda x: x.add_(x).add_(1))
    assert "in-place" in C.check(op)["variants"]


def test_catches_an_out_on_the_wrong_device_and_an_unsafe_dtype():
    def lenient(x, out):  # on the device, writes wherever out is, as ATen's composite out= forms do
        if x.device.type != H.DEV:
            return torch.mul(x, 2, out=out)
        r = x * 2
        out.resize_(r.shape).copy_(r)
        return out

    failures = C.check(_fake(lambda x: x * 2, lenient))
    assert "on the CPU" in failures["out_device"]
    assert "CPU raises" in failures["out_dtype"]


def test_catches_an_out_that_is_reallocated_or_not_resized_with_a_warning():
    def reallocates(x, out):
        if x.device.type != H.DEV:
            return torch.mul(x, 2, out=out)
        out.set_(x * 2)  # same values, new storage
        return out

    assert "reallocated" in C.check(_fake(lambda x: x * 2, reallocates))["out"]

    def resizes_quietly(x, out):
        if x.device.type != H.DEV:
            return torch.mul(x, 2, out=out)
        r = x * 2
        out.resize_(r.shape).copy_(r)
        return out

    assert "did not warn" in C.check(_fake(lambda x: x * 2, resizes_quietly))["out_resize"]
