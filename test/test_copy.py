"""Copies: dtypes x layouts x directions (CPU->opencl, opencl->CPU, opencl->opencl),
checked bit for bit against CPU PyTorch's own conversion (``x.to(dtype)`` on CPU).

Every dtype pair the device converts compiles one OpenCL program (about a second on
PoCL with a cold cache), so the default run covers a representative set of pairs:
each dtype to itself, each dtype to and from float32, and a few others that exercise
double rounding and integer wrap-around. TORCH_OPENCL_TEST_FULL=1 runs the full
10 x 10 matrix.

NaN payloads are not compared: CPU PyTorch itself does not agree with itself on them
(float32 NaN -> bfloat16 gives 0x7fc0 on its scalar path and 0xffff on its vector
path), so a NaN must stay a NaN and every other value must match bit for bit, the sign
of zero included.
"""
import itertools
import os
import warnings
import zlib

import pytest
import torch

import torch_opencl  # noqa: F401

from hypothesis import given, settings, strategies as st

DEV = torch.device("opencl")
FULL = os.environ.get("TORCH_OPENCL_TEST_FULL") == "1"

F32, F64, F16, BF16 = torch.float32, torch.float64, torch.float16, torch.bfloat16
I8, U8, I16, I32, I64, BOOL = torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64, torch.bool
DTYPES = [F32, F64, F16, BF16, I8, U8, I16, I32, I64, BOOL]
FLOATS = {F32, F64, F16, BF16}
INTS = {I8, U8, I16, I32, I64}

EXTRA_PAIRS = [
    (F64, F16), (F64, BF16),  # double -> half/bfloat16: rounded through float32, as CPU does
    (F16, BF16), (BF16, F16),
    (I64, F64), (F64, I64),
    (I32, I8), (I8, U8), (U8, I8),  # integer wrap-around
    (I64, BOOL), (BOOL, I64),
]


def _pairs():
    if FULL:
        return list(itertools.product(DTYPES, DTYPES))
    pairs = [(d, d) for d in DTYPES]
    pairs += [(d, F32) for d in DTYPES if d != F32] + [(F32, d) for d in DTYPES if d != F32]
    pairs += EXTRA_PAIRS
    assert len(set(pairs)) == len(pairs)
    return pairs


PAIRS = _pairs()


def _name(dt):
    return str(dt).replace("torch.", "")


def _pair_id(pair):
    return f"{_name(pair[0])}-{_name(pair[1])}"


pytestmark = pytest.mark.usefixtures("silent_fallback")


# --- values and comparison -------------------------------------------------------------------

_BITS = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _random_bits(dtype, n, g):
    """n values of dtype with uniformly random bit patterns (NaNs, infinities, subnormals...)."""
    int_dtype = _BITS[torch.empty(0, dtype=dtype).element_size()]
    info = torch.iinfo(int_dtype)
    return torch.randint(info.min, info.max, (n,), generator=g, dtype=int_dtype).view(dtype)


def make_source(src, dst, shape=(6, 10), seed=0):
    """CPU values of dtype src whose conversion to dst is defined behaviour in C (so CPU's
    result is the reference): floats converted to an integer type keep their integral part
    within the target's range; everything else (wrap-around of integers, overflow of
    floats to infinity, NaN, -0.0, subnormals) is allowed."""
    n = 1
    for s in shape:
        n *= s
    g = torch.Generator().manual_seed(zlib.crc32(f"{src}{dst}{seed}".encode()))

    def put(v, specials):
        k = min(len(specials), n)
        v[:k] = torch.tensor(specials[:k]).to(v.dtype)
        return v

    if src == BOOL:
        return torch.randint(0, 2, shape, generator=g).to(BOOL)
    if src in INTS:
        info = torch.iinfo(src)
        v = torch.randint(info.min, info.max, (n,), generator=g, dtype=src)
        return put(v, [0, 1, info.max, info.min, info.min + 1 if info.min else 2]).reshape(shape)
    # floating source
    finfo = torch.finfo(src)
    if dst in INTS:
        info = torch.iinfo(dst)
        digits = len(str(info.max))
        mags = 10.0 ** torch.randint(0, digits, (n,), generator=g).double()
        v = (torch.randn(n, generator=g, dtype=torch.float64) * mags).clamp(-finfo.max, finfo.max).to(src)
        put(v, [0.0, -0.0, 0.5, -0.75, 1.5, 2.999])
        # Out-of-range float -> int conversion is undefined in C: keep such values out.
        t = v.double().trunc()
        ok = (t >= float(info.min)) & (t < float(info.max) + 1)
        return torch.where(ok, v, torch.zeros((), dtype=src)).reshape(shape)
    half_n = n // 2
    scaled = torch.randn(half_n, generator=g, dtype=torch.float64) * 10.0 ** torch.randint(-8, 9, (half_n,), generator=g)
    v = torch.cat([scaled.to(src), _random_bits(src, n - half_n, g)])
    specials = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), finfo.tiny, finfo.tiny / 4, -finfo.max, 0.1, -2.5]
    return put(v, [float(x) for x in torch.tensor(specials, dtype=torch.float64).to(src).double()]).reshape(shape)


def assert_same(actual, expected):
    """actual (a CPU tensor) equals expected bit for bit, except that NaN payloads may differ."""
    assert actual.device.type == "cpu"
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if expected.is_complex():
        actual, expected = torch.view_as_real(actual.resolve_conj()), torch.view_as_real(expected.resolve_conj())
    if not expected.is_floating_point():
        if not torch.equal(actual, expected):
            a, e = actual.reshape(-1), expected.reshape(-1)
            bad = (a != e).nonzero().flatten()[:5]
            raise AssertionError(f"mismatch at flat {bad.tolist()}: got {a[bad].tolist()}, want {e[bad].tolist()}")
        return
    a, e = actual.contiguous(), expected.contiguous()
    a_nan, e_nan = a.isnan(), e.isnan()
    assert torch.equal(a_nan, e_nan), f"NaN positions differ:\n{a}\n{e}"
    int_dtype = _BITS[a.element_size()]
    a_bits = a.view(int_dtype).masked_fill(a_nan, 0)
    e_bits = e.view(int_dtype).masked_fill(e_nan, 0)
    if not torch.equal(a_bits, e_bits):
        a, e, differ = a.reshape(-1), e.reshape(-1), (a_bits != e_bits).reshape(-1)
        bad = differ.nonzero().flatten()[:5]
        raise AssertionError(
            f"{differ.sum().item()} values differ, e.g. at flat {bad.tolist()}: got "
            f"{a[bad].double().tolist()} want {e[bad].double().tolist()} ({expected.dtype})"
        )


# --- layouts ---------------------------------------------------------------------------------
# Each takes a (6, 10) base tensor and returns a view of it; they apply alike on CPU and opencl.

LAYOUTS = {
    "contiguous": lambda b: b,
    "transposed": lambda b: b.t(),
    "step": lambda b: b[::2, 1::3],
    "offset": lambda b: b[1:, 3:],
    "row_offset": lambda b: b[2:5],  # contiguous, with a storage offset
    "expanded": lambda b: b[2].expand(4, 10),
    "broadcast_col": lambda b: b[:, 4:5].expand(6, 3),
    "permuted3d": lambda b: b.reshape(2, 3, 10).permute(2, 0, 1)[1:, :, ::2],
    "scalar": lambda b: b[1, 2],
    "empty": lambda b: b[:, 3:3],
    "empty_at_end": lambda b: b[6:],
}


def _check_layout(name, actual, expected):
    try:
        assert_same(actual, expected)
    except AssertionError as exc:
        raise AssertionError(f"layout {name!r}: {exc}") from None


# --- the matrix ------------------------------------------------------------------------------


@pytest.mark.parametrize("non_blocking", [False, True], ids=["sync", "non_blocking"])
@pytest.mark.parametrize("pair", PAIRS, ids=_pair_id)
def test_cpu_to_opencl(pair, non_blocking):
    src, dst = pair
    base = make_source(src, dst)
    for name, layout in LAYOUTS.items():
        s = layout(base)
        expected = s.to(dst)
        out = s.to(DEV, dst, non_blocking=non_blocking)
        assert out.device.type == "opencl"
        _check_layout(name, out.cpu(), expected)
        into = torch.empty(s.shape, dtype=dst, device=DEV)
        assert into.copy_(s, non_blocking=non_blocking) is into
        _check_layout(name + " (copy_)", into.cpu(), expected)


@pytest.mark.parametrize("non_blocking", [False, True], ids=["sync", "non_blocking"])
@pytest.mark.parametrize("pair", PAIRS, ids=_pair_id)
def test_opencl_to_cpu(pair, non_blocking):
    src, dst = pair
    base = make_source(src, dst)
    base_dev = base.to(DEV)
    for name, layout in LAYOUTS.items():
        expected = layout(base).to(dst)
        out = layout(base_dev).to("cpu", dst, non_blocking=non_blocking)
        if non_blocking:
            torch.opencl.synchronize()
        _check_layout(name, out, expected)
        into = torch.empty(expected.shape, dtype=dst)
        into.copy_(layout(base_dev), non_blocking=non_blocking)
        if non_blocking:
            torch.opencl.synchronize()
        _check_layout(name + " (copy_)", into, expected)


@pytest.mark.parametrize("non_blocking", [False, True], ids=["sync", "non_blocking"])
@pytest.mark.parametrize("pair", PAIRS, ids=_pair_id)
def test_opencl_to_opencl(pair, non_blocking):
    src, dst = pair
    base = make_source(src, dst)
    base_dev = base.to(DEV)
    for name, layout in LAYOUTS.items():
        expected = layout(base).to(dst)
        v = layout(base_dev)
        out = v.to(dst, non_blocking=non_blocking)
        assert out.device.type == "opencl"
        assert (out is v) == (src == dst)  # .to() of the same dtype and device returns self
        _check_layout(name, out.cpu(), expected)
        into = torch.empty(expected.shape, dtype=dst, device=DEV)
        into.copy_(layout(base_dev), non_blocking=non_blocking)
        _check_layout(name + " (copy_)", into.cpu(), expected)
        cloned = layout(base_dev).clone()
        _check_layout(name + " (clone)", cloned.cpu(), layout(base))


# --- rounding and special values -------------------------------------------------------------


def _ties_for(dtype):
    """float64 values exactly halfway between two neighbours of a 16-bit float type, and
    values just off the halfway point, around 1.0 and elsewhere in the range."""
    mant = 10 if dtype == F16 else 7
    ulp = 2.0 ** -mant
    vals = []
    for scale in [1.0, 2.0**-3, 2.0**5, -1.0, -(2.0**7)]:
        for k in range(8):
            lo = 1.0 + k * ulp
            vals += [scale * (lo + ulp / 2), scale * (lo + ulp / 2 + ulp / 64), scale * (lo + ulp / 2 - ulp / 64)]
    if dtype == F16:
        vals += [65504.0, 65519.99, 65520.0, 2.0**-24, 2.0**-25, 3 * 2.0**-26, 2.0**-14 - 2.0**-25]
    else:
        vals += [3.3895313892515355e38, 2.0**-133, 2.0**-126 * 1.5]
    # One past a float32 tie: double rounding (float64 -> float32 -> 16 bits) lands on the tie.
    vals += [1.0 + ulp / 2 + 2.0**-40, 1.0 + 3 * ulp / 2 - 2.0**-40]
    return torch.tensor(vals, dtype=torch.float64)


@pytest.mark.parametrize("src", [F32, F64], ids=_name)
@pytest.mark.parametrize("dst", [F16, BF16], ids=_name)
def test_half_and_bfloat16_round_to_nearest_even(src, dst):
    v = _ties_for(dst).to(src)
    expected = v.to(dst)
    assert_same(v.to(DEV).to(dst).cpu(), expected)  # on the device
    assert_same(v.to(DEV, dst).cpu(), expected)  # on upload
    assert_same(v.to(DEV).to("cpu", dst), expected)  # on download
    # Strided too (the strided kernel, not the contiguous one).
    assert_same(v.to(DEV)[::2].to(dst).cpu(), expected[::2])


def test_float_to_bool():
    v = torch.tensor([0.0, -0.0, 0.5, -1.0, float("nan"), float("inf"), -float("inf"), 1e-45, 1e-40, 1e30])
    assert_same(v.to(DEV).to(BOOL).cpu(), v.to(BOOL))
    assert_same(v.to(DEV, BOOL).cpu(), v.to(BOOL))
    assert_same(v.to(DEV).to("cpu", BOOL), v.to(BOOL))
    assert v.to(DEV).to(BOOL).cpu().tolist() == [False, False, True, True, True, True, True, True, True, True]


def test_int_to_bool_and_back():
    v = torch.tensor([0, 1, -1, 2**40, -(2**63), 256], dtype=I64)
    b = v.to(DEV).to(BOOL)
    assert b.cpu().tolist() == [False, True, True, True, True, True]
    # bool storage written by the device holds 0 or 1 only
    assert b.cpu().view(U8).tolist() == [0, 1, 1, 1, 1, 1]
    assert b.to(I64).cpu().tolist() == [0, 1, 1, 1, 1, 1]


def test_integer_wraparound():
    v = torch.tensor([127, 128, 255, 256, -1, -129, 2**31 - 1, -(2**31)], dtype=I32)
    assert_same(v.to(DEV).to(I8).cpu(), v.to(I8))
    assert_same(v.to(DEV).to(U8).cpu(), v.to(U8))


def test_large_int64_to_float_rounds_to_nearest_even():
    v = torch.tensor([2**53 + 1, 2**53 + 3, 2**24 + 1, 2**24 + 3, 2**63 - 1, -(2**63), 2**62 + 2**38], dtype=I64)
    assert_same(v.to(DEV).to(F64).cpu(), v.to(F64))
    assert_same(v.to(DEV).to(F32).cpu(), v.to(F32))


def test_subnormals_survive():
    v = torch.tensor([1e-40, -1e-42, 1.4e-45, 1.1754942e-38], dtype=F32)
    assert_same(v.to(DEV).to(F64).cpu(), v.to(F64))
    w = torch.tensor([4.9e-324, 1e-310, -2.2e-308], dtype=F64)
    assert_same(w.to(DEV).to(F32).cpu(), w.to(F32))
    h = torch.tensor([6e-8, 1e-5, -3e-6], dtype=F16)
    assert_same(h.to(DEV).to(F32).cpu(), h.to(F32))


# --- complex (host path) and math bits -------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=_name)
def test_complex_round_trip(dtype):
    g = torch.Generator().manual_seed(3)
    base = torch.randn(6, 10, dtype=dtype, generator=g)
    base[0, 0] = complex(float("nan"), -0.0)
    base_dev = base.to(DEV)
    assert base_dev.dtype == dtype and base_dev.device.type == "opencl"
    for name, layout in LAYOUTS.items():
        _check_layout(name, layout(base_dev).cpu(), layout(base))  # opencl -> cpu
        _check_layout(name, layout(base).to(DEV).cpu(), layout(base))  # cpu -> opencl
        _check_layout(name, layout(base_dev).clone().cpu(), layout(base))  # opencl -> opencl
        into = torch.zeros(layout(base).shape, dtype=dtype, device=DEV)
        into.copy_(layout(base_dev))
        _check_layout(name + " (copy_)", into.cpu(), layout(base))


def test_complex_conversions():
    z = torch.tensor([1 + 2j, -3.5 - 0.25j, 0j], dtype=torch.complex64)
    assert_same(z.to(DEV).to(torch.complex128).cpu(), z.to(torch.complex128))
    r = torch.tensor([1.5, -2.0, 0.0])
    assert_same(r.to(DEV).to(torch.complex64).cpu(), r.to(torch.complex64))
    assert_same(r.to(DEV, torch.complex64).cpu(), r.to(torch.complex64))
    assert_same(r.to(DEV).to("cpu", torch.complex64), r.to(torch.complex64))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Casting complex values to real discards the imaginary part"
        assert_same(z.to(DEV).to(F32).cpu(), z.to(F32))
        assert_same(z.to(DEV).to("cpu", F64), z.to(F64))


def test_conjugate_view_copies():
    z = torch.tensor([[1 + 2j, 3 - 4j], [-5j, 6.0 + 0j]], dtype=torch.complex64)
    zd = z.to(DEV)
    c = zd.conj()
    assert c.is_conj()
    want = z.conj().resolve_conj()
    assert_same(c.cpu().resolve_conj(), want)  # opencl -> cpu
    assert_same(c.clone().cpu().resolve_conj(), want)  # opencl -> opencl
    assert_same(c.resolve_conj().cpu(), want)
    assert_same(c.to(torch.complex128).cpu().resolve_conj(), want.to(torch.complex128))
    # cpu (conj) -> opencl
    assert_same(z.conj().to(DEV).cpu().resolve_conj(), want)
    # into a conjugate destination: the stored bytes are the conjugate of what is written
    dst = torch.zeros(2, 2, dtype=torch.complex64, device=DEV)
    dst.conj().copy_(z)
    assert_same(dst.cpu(), want)
    assert c[0, 1].item() == 3 + 4j


def test_negative_view_copies():
    x = torch.tensor([[1.0, -2.0, 0.0], [3.5, -0.0, 7.0]])
    xd = x.to(DEV)
    n = torch._neg_view(xd)
    assert n.is_neg()
    want = torch._neg_view(x).resolve_neg()
    assert_same(n.cpu().resolve_neg(), want)
    assert_same(n.clone().cpu(), want)
    assert_same(n.to(F64).cpu(), want.to(F64))
    assert_same(n.to("cpu", I32), want.to(I32))
    assert_same(n.t().contiguous().cpu(), want.t().contiguous())
    assert_same(torch._neg_view(x).to(DEV).cpu().resolve_neg(), want)
    dst = torch.zeros(2, 3, device=DEV)
    torch._neg_view(dst).copy_(x)  # stores -x
    assert_same(dst.cpu(), want)
    assert n[0, 1].item() == 2.0


# --- destinations that are views ------------------------------------------------------------


DST_VIEWS = {
    "columns_step2": (lambda d: d[:, ::2], (5, 4)),
    "transposed": (lambda d: d.t(), (8, 5)),
    "offset_block": (lambda d: d[1:4, 3:7], (3, 4)),
    "row": (lambda d: d[2], (8,)),
    "element": (lambda d: d[3, 5], ()),
}


@pytest.mark.parametrize("pair", [(F32, F32), (F64, F32), (I32, F32), (F32, F16)], ids=_pair_id)
@pytest.mark.parametrize("direction", ["cpu_to_opencl", "opencl_to_opencl", "opencl_to_cpu"])
def test_copy_into_view_leaves_the_rest_alone(pair, direction):
    src_dt, dst_dt = pair
    sentinel = torch.full((5, 8), -7, dtype=dst_dt)
    for name, (view, shape) in DST_VIEWS.items():
        src = make_source(src_dt, dst_dt, shape=shape, seed=len(name)).clamp(-1000, 1000)
        want = sentinel.clone()
        view(want).copy_(src)
        if direction == "opencl_to_cpu":
            got = sentinel.clone()
            view(got).copy_(src.to(DEV))
        else:
            dst = sentinel.to(DEV)
            view(dst).copy_(src if direction == "cpu_to_opencl" else src.to(DEV))
            got = dst.cpu()
        _check_layout(name, got, want)


@pytest.mark.parametrize("direction", ["cpu_to_opencl", "opencl_to_opencl", "opencl_to_cpu"])
@pytest.mark.parametrize("pair", [(F32, F32), (I64, F32)], ids=_pair_id)
def test_copy_broadcasts(direction, pair):
    src_dt, dst_dt = pair
    for src_shape in [(4,), (1, 4), (3, 1), (), (1,)]:
        src = (torch.arange(torch.Size(src_shape).numel()) + 1).reshape(src_shape).to(src_dt)
        want = torch.zeros(3, 4, dtype=dst_dt).copy_(src)
        if direction == "opencl_to_cpu":
            got = torch.zeros(3, 4, dtype=dst_dt).copy_(src.to(DEV))
        else:
            dst = torch.zeros(3, 4, dtype=dst_dt, device=DEV)
            got = dst.copy_(src if direction == "cpu_to_opencl" else src.to(DEV)).cpu()
        _check_layout(str(src_shape), got, want)
    # Shapes that do not broadcast are refused as on CPU.
    with pytest.raises(RuntimeError):
        torch.zeros(3, 4).copy_(torch.ones(3))
    with pytest.raises(RuntimeError):
        torch.zeros(3, 4, dtype=dst_dt, device=DEV).copy_(torch.ones(3, dtype=src_dt, device=DEV))
    with pytest.raises(RuntimeError):
        torch.zeros(3, 4, dtype=dst_dt, device=DEV).copy_(torch.ones(3, dtype=src_dt))
    with pytest.raises(RuntimeError):
        torch.zeros(3, 4, dtype=dst_dt).copy_(torch.ones(3, dtype=src_dt, device=DEV))


# --- overlap and aliasing --------------------------------------------------------------------


def test_overlapping_copy_is_refused_as_on_cpu():
    x = torch.arange(6.0)
    with pytest.raises(RuntimeError, match="single memory location") as cpu_err:
        x[1:].copy_(x[:-1])
    xd = torch.arange(6.0).to(DEV)
    with pytest.raises(RuntimeError, match="single memory location") as dev_err:
        xd[1:].copy_(xd[:-1])
    assert str(dev_err.value) == str(cpu_err.value)
    assert xd.cpu().tolist() == [0, 1, 2, 3, 4, 5]
    # with a dtype conversion too (the strided kernel, not the byte copy)
    with pytest.raises(RuntimeError, match="single memory location"):
        x.view(I32)[1:].copy_(x[:-1])
    with pytest.raises(RuntimeError, match="single memory location"):
        xd.view(I32)[1:].copy_(xd[:-1])
    assert xd.cpu().tolist() == [0, 1, 2, 3, 4, 5]


def test_expanded_destination_is_refused_as_on_cpu():
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        torch.zeros(4).expand(3, 4).copy_(torch.ones(3, 4))
    for src in [torch.ones(3, 4), torch.ones(3, 4, device=DEV), torch.ones(3, 4, dtype=I32, device=DEV)]:
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            torch.zeros(4, device=DEV).expand(3, 4).copy_(src)


def test_copy_onto_itself():
    x = torch.arange(6.0).to(DEV)
    assert x.copy_(x) is x
    x.view(2, 3).copy_(x.view(2, 3))  # another view of the same elements
    x.view(6).copy_(x)
    assert x.cpu().tolist() == [0, 1, 2, 3, 4, 5]
    # Same bytes read as another dtype of the same size: an element-wise in-place conversion.
    y = torch.tensor([1.5, -2.0, 3.0]).to(DEV)
    want = torch.tensor([1.5, -2.0, 3.0]).view(I32).clone().to(F32)
    y.copy_(y.view(I32))
    assert_same(y.cpu(), want)


def test_copy_between_overlapping_disjoint_views():
    x = torch.arange(12.0).reshape(3, 4)
    xd = x.to(DEV)
    x[0].copy_(x[2])
    xd[0].copy_(xd[2])
    x[:, ::2].copy_(x[:, 1::2])  # interleaved but disjoint
    xd[:, ::2].copy_(xd[:, 1::2])
    assert_same(xd.cpu(), x)


# --- more geometry ---------------------------------------------------------------------------


def test_many_dimensions():
    # 13 dimensions that cannot be coalesced: more than the device kernel's 12, so the copy
    # takes the host path; the result must not change.
    base = torch.arange(3**13, dtype=I32).reshape((3,) * 13)
    view = base[(slice(0, 2),) * 13]
    assert view.dim() == 13
    want = view.to(F32)
    assert_same(base.to(DEV)[(slice(0, 2),) * 13].to(F32).cpu(), want)
    assert_same(view.to(DEV, F32).cpu(), want)
    assert_same(base.to(DEV)[(slice(0, 2),) * 13].to("cpu", F32), want)
    # 12 such dimensions still run on the device.
    base12 = torch.arange(3**12, dtype=I32).reshape((3,) * 12)
    view12 = base12[(slice(0, 2),) * 12]
    assert_same(base12.to(DEV)[(slice(0, 2),) * 12].to(F32).cpu(), view12.to(F32))


def test_large_copy():
    x = torch.randn(1000, 1031, generator=torch.Generator().manual_seed(0))
    xd = x.to(DEV)
    assert_same(xd.t().contiguous().cpu(), x.t().contiguous())
    assert_same(xd.to(F64).cpu(), x.to(F64))
    assert_same(xd[::3, 7::2].to(F16).cpu(), x[::3, 7::2].to(F16))


def test_device_index_and_to_forms():
    x = torch.arange(6, dtype=I32)
    for target in ["opencl", "opencl:0", torch.device("opencl", 0), DEV]:
        y = x.to(target)
        assert y.device == torch.device("opencl", 0)
        assert_same(y.cpu(), x)
    assert_same(x.opencl().cpu(), x)
    assert_same(torch.tensor([1, 2, 3], dtype=I32, device=DEV).cpu(), torch.tensor([1, 2, 3], dtype=I32))
    z = x.to(DEV)
    assert z.to(DEV) is z
    assert z.to(torch.float32).dtype == F32
    assert_same(z.to(x).cpu(), x)  # to(other): takes dtype and device of the other tensor
    assert z.to(torch.empty(0, dtype=F16)).device.type == "cpu"


# Copies between two devices: test_multi_device.py (the two-device pass of scripts/test.sh).


# --- random shapes and strides ---------------------------------------------------------------


@st.composite
def strided_views(draw):
    """(shape of a base tensor, function making a view of it): a random slicing with steps
    and offsets followed by a random permutation."""
    ndim = draw(st.integers(0, 4))
    shape = tuple(draw(st.integers(0, 6)) for _ in range(ndim))
    slices = []
    for size in shape:
        start = draw(st.integers(0, max(size - 1, 0)))
        step = draw(st.integers(1, 3))
        slices.append(slice(start, None, step))
    perm = draw(st.permutations(list(range(ndim))))

    def make(t):
        return t[tuple(slices)].permute(*perm) if ndim else t

    return shape, make


@settings(max_examples=30, deadline=None)
@given(
    src=strided_views(),
    dst_base_extra=st.integers(0, 2),
    pair=st.sampled_from([(F32, F32), (I64, F32), (F32, F16), (BOOL, F32)]),
    direction=st.sampled_from(["cpu_to_opencl", "opencl_to_opencl", "opencl_to_cpu"]),
    seed=st.integers(0, 2**16),
)
def test_random_strided_copies(src, dst_base_extra, pair, direction, seed):
    shape, make = src
    src_dt, dst_dt = pair
    base = make_source(src_dt, dst_dt, shape=shape, seed=seed)
    s = make(base)
    # Destination: a region of a larger tensor whose strides run the other way round.
    extra = dst_base_extra
    outer = tuple(n + extra for n in s.shape)
    big = torch.full(outer[::-1], 9, dtype=dst_dt).permute(list(reversed(range(len(outer)))))
    assert big.shape == outer

    def region(t):
        return t[tuple(slice(extra, None) for _ in outer)]

    want = big.clone()
    region(want).copy_(s)
    if direction == "opencl_to_cpu":
        got = big.clone()
        region(got).copy_(make(base.to(DEV)))
    else:
        dst = big.to(DEV)
        assert dst.stride() == big.stride()
        region(dst).copy_(s if direction == "cpu_to_opencl" else make(base.to(DEV)))
        got = dst.cpu()
    assert_same(got, want)
