"""Inductor's pointwise ops as OpenCL C snippets (the role of MetalOverrides in Inductor's mps.py).

Each method returns the text of one expression over CSE variables, which the kernel declares with
their dtype. An op this file does not define raises ``Unsupported``; the lowering check in
``fallback.py`` keeps such ops out of generated kernels (they run as eager ATen calls instead).
"""
import math

import torch
from torch._inductor.codegen.common import OpOverrides
from torch._inductor.utils import get_bounds_index_expr
from torch._inductor.virtualized import V, ops

# The OpenCL C type a value of each dtype is computed in (float16/bfloat16 are loaded as float).
COMPUTE_TYPE = {
    torch.bool: "bool",
    torch.int8: "char",
    torch.uint8: "uchar",
    torch.int16: "short",
    torch.uint16: "ushort",
    torch.int32: "int",
    torch.uint32: "uint",
    torch.int64: "long",
    torch.uint64: "ulong",
    torch.float32: "float",
    torch.float64: "double",
    torch.float16: "float",
    torch.bfloat16: "float",
}

# The OpenCL C type each dtype is stored as in a buffer.
STORAGE_TYPE = {**COMPUTE_TYPE, torch.bool: "uchar", torch.float16: "half", torch.bfloat16: "ushort"}

_INT_LIMITS = {
    torch.int8: ("CHAR_MIN", "CHAR_MAX"),
    torch.uint8: ("0", "UCHAR_MAX"),
    torch.int16: ("SHRT_MIN", "SHRT_MAX"),
    torch.uint16: ("0", "USHRT_MAX"),
    torch.int32: ("INT_MIN", "INT_MAX"),
    torch.uint32: ("0", "UINT_MAX"),
    torch.int64: ("LONG_MIN", "LONG_MAX"),
    torch.uint64: ("0", "ULONG_MAX"),
    torch.bool: ("false", "true"),
}


class Unsupported(NotImplementedError):
    """A construct the OpenCL code generator cannot express."""


def compute_type(dtype: torch.dtype) -> str:
    try:
        return COMPUTE_TYPE[dtype]
    except KeyError:
        raise Unsupported(f"dtype {dtype} in a generated OpenCL kernel") from None


def storage_type(dtype: torch.dtype) -> str:
    try:
        return STORAGE_TYPE[dtype]
    except KeyError:
        raise Unsupported(f"dtype {dtype} in a generated OpenCL kernel") from None


def lowest(dtype: torch.dtype) -> str:
    return "(-INFINITY)" if dtype.is_floating_point else _INT_LIMITS[dtype][0]


def highest(dtype: torch.dtype) -> str:
    return "INFINITY" if dtype.is_floating_point else _INT_LIMITS[dtype][1]


def literal(value, dtype: torch.dtype | None = None) -> str:
    """A Python constant as an OpenCL C literal of `dtype` (float literals carry f unless double)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) or (dtype is not None and dtype.is_floating_point):
        value = float(value)
        if math.isnan(value):
            return "TOCL_NAN"  # not NAN: see kernels_cl/inductor.cl
        if math.isinf(value):
            return "INFINITY" if value > 0 else "(-INFINITY)"
        text = repr(value)
        if "e" not in text and "." not in text and "inf" not in text:
            text += ".0"
        return text if dtype == torch.float64 else f"{text}f"
    value = int(value)
    return str(value) if -(2**31) <= value < 2**31 else f"{value}L"


def _is_float(x) -> bool:
    dtype = getattr(x, "dtype", None)
    return dtype is not None and dtype.is_floating_point


def _is_double(x) -> bool:
    return getattr(x, "dtype", None) == torch.float64


def _arg(x) -> str:
    return literal(x) if isinstance(x, (bool, int, float)) else str(x)


def _unary(fn: str):
    return staticmethod(lambda x: f"{fn}({x})")


def _binary(fn: str):
    return staticmethod(lambda a, b: f"{fn}({_arg(a)}, {_arg(b)})")


def _rng_memo() -> str:
    """The Philox block memo of a random op's call site (kernels_cl/inductor.cl): in the CPU form the
    kernel's choice (OpenCLKernel.rng_memo: none where it steps a block at a time, else a variable declared
    before the loop over outputs, so consecutive elements reuse their block); in the GPU form (one element
    per work-item) none."""
    kernel = V.kernel
    if not getattr(kernel, "form", None) or not kernel.form.chunked:
        return "0"
    return kernel.rng_memo()


class OpenCLOverrides(OpOverrides):
    @staticmethod
    def constant(value, dtype):
        return literal(value, dtype)

    @staticmethod
    def to_dtype(x, dtype, src_dtype=None, use_compute_types=True):
        if dtype == torch.bool:
            return f"(({x}) != 0)"
        if dtype in (torch.float16, torch.bfloat16):
            if use_compute_types or src_dtype == dtype:
                return f"((float)({x}))"
            rounding = "tocl_round_half" if dtype == torch.float16 else "tocl_round_bf16"
            return f"{rounding}((float)({x}))"
        # Out-of-range floats convert as x86 CPU PyTorch converts them, on every device (prelude.cl).
        if dtype in (torch.int8, torch.int16, torch.int32):
            return f"(({compute_type(dtype)})tocl_to_i32({x}))"
        if dtype in (torch.int64, torch.uint8):
            return f"(({compute_type(dtype)})tocl_to_i64({x}))"
        return f"(({compute_type(dtype)})({x}))"

    @staticmethod
    def to_dtype_bitcast(x, dtype, src_dtype):
        if dtype in (torch.float16, torch.bfloat16, torch.bool) or src_dtype in (
            torch.float16,
            torch.bfloat16,
            torch.bool,
        ):
            raise Unsupported(f"bitcast between {src_dtype} and {dtype}")
        return f"as_{compute_type(dtype)}(({compute_type(src_dtype)})({x}))"

    @staticmethod
    def index_expr(expr, dtype):
        index = V.kernel.index_to_str(V.kernel.prepare_indexing(expr))
        var = V.kernel.cse.generate(
            V.kernel.compute, index, bounds=get_bounds_index_expr(expr), dtype=V.kernel.index_torch_dtype()
        )
        return ops.to_dtype(var, dtype)

    @staticmethod
    def value_expr(expr, dtype):
        # The same lowering as index_expr: the expression is computed in the index type, then cast.
        return OpenCLOverrides.index_expr(expr, dtype)

    @staticmethod
    def masked(mask, body, other):
        return V.kernel.masked(mask, body, other)

    @staticmethod
    def where(a, b, c):
        return f"(({a}) ? ({_arg(b)}) : ({_arg(c)}))"

    @staticmethod
    def neg(x):
        return f"(-({x}))"

    @staticmethod
    def floordiv(a, b):
        if _is_float(a) or _is_float(b):
            return f"floor(({a}) / ({b}))"
        return f"tocl_floordiv({a}, {b})"

    @staticmethod
    def truncdiv(a, b):
        if _is_float(a) or _is_float(b):
            return f"trunc(({a}) / ({b}))"
        return f"(({a}) / ({b}))"

    @staticmethod
    def mod(a, b):
        if _is_float(a) or _is_float(b):
            return f"fmod({a}, {b})"
        return f"(({a}) % ({b}))"

    @staticmethod
    def remainder(a, b):
        if _is_float(a) or _is_float(b):
            r = f"fmod({a}, {b})"
            return f"(({r} != 0 && (({r} < 0) != (({b}) < 0))) ? {r} + ({b}) : {r})"
        return f"tocl_pymod({a}, {b})"

    @staticmethod
    def pow(a, b):
        if not (_is_float(a) or _is_float(b)):
            raise Unsupported("integer pow")
        if _is_double(a) or _is_double(b):
            return f"pow((double)({_arg(a)}), (double)({_arg(b)}))"
        return f"tocl_powf({_arg(a)}, {_arg(b)})"

    @staticmethod
    def erf(x):
        return f"erf({x})" if _is_double(x) else f"erf_of({x})"

    @staticmethod
    def tanh(x):
        # tanh_of reaches +-1 as CPU's float tanh does (kernels_cl/pointwise_functions.cl).
        return f"tanh({x})" if _is_double(x) else f"tanh_of({x})"

    @staticmethod
    def erfinv(x):
        return f"tocl_erfinv_double({x})" if _is_double(x) else f"erfinv_of({x})"

    @staticmethod
    def minimum(a, b):
        if _is_float(a) or _is_float(b):
            return f"TOCL_FMIN({_arg(a)}, {_arg(b)})"
        return f"(({a}) < ({b}) ? ({a}) : ({b}))"

    @staticmethod
    def maximum(a, b):
        if _is_float(a) or _is_float(b):
            return f"TOCL_FMAX({_arg(a)}, {_arg(b)})"
        return f"(({a}) > ({b}) ? ({a}) : ({b}))"

    @staticmethod
    def abs(x):
        if _is_float(x):
            return f"fabs({x})"
        return f"(({x}) < 0 ? -({x}) : ({x}))"

    @staticmethod
    def sign(x):
        if _is_float(x):
            # torch.sign keeps NaN; OpenCL's sign() would return 0 for it.
            return f"(isnan({x}) ? ({x}) : sign({x}))"
        return f"((({x}) > 0) - (({x}) < 0))"

    @staticmethod
    def signbit(x):
        if _is_float(x):
            return f"(signbit({x}) != 0)"
        return f"(({x}) < 0)"

    @staticmethod
    def isnan(x):
        return f"(isnan({x}) != 0)" if _is_float(x) else "false"

    @staticmethod
    def isinf(x):
        return f"(isinf({x}) != 0)" if _is_float(x) else "false"

    @staticmethod
    def logical_not(a):
        return f"(!({a}))"

    @staticmethod
    def logical_and(a, b):
        return f"(({a}) && ({b}))"

    @staticmethod
    def logical_or(a, b):
        return f"(({a}) || ({b}))"

    @staticmethod
    def logical_xor(a, b):
        return f"((!({a})) != (!({b})))"

    @staticmethod
    def round(x):
        return f"rint({x})"

    @staticmethod
    def int_truediv(a, b):
        return f"((float)({a}) / (float)({b}))"

    @staticmethod
    def floor_to_int(x, dtype):
        return f"(({compute_type(dtype)})floor({x}))"

    @staticmethod
    def ceil_to_int(x, dtype):
        return f"(({compute_type(dtype)})ceil({x}))"

    @staticmethod
    def trunc_to_int(x, dtype):
        return f"(({compute_type(dtype)})trunc({x}))"

    @staticmethod
    def round_to_int(x, dtype):
        return f"(({compute_type(dtype)})rint({x}))"

    @staticmethod
    def fma(x, y, z):
        return f"fma({x}, {y}, {z})"

    @staticmethod
    def relu(x):
        return f"TOCL_FMAX({x}, 0.0f)" if _is_float(x) else f"(({x}) > 0 ? ({x}) : 0)"

    @staticmethod
    def sigmoid(x):
        return f"(1.0f / (1.0f + exp(-({x}))))"

    @staticmethod
    def rand(seed, offset):
        return f"tocl_rand_at({seed}, {offset}, {_rng_memo()})"

    @staticmethod
    def randn(seed, offset):
        return f"tocl_randn_at({seed}, {offset}, {_rng_memo()})"

    @staticmethod
    def randint64(seed, offset, low, high):
        return f"tocl_randint64_at({seed}, {offset}, {low}, {high}, {_rng_memo()})"

    @staticmethod
    def _default(name, args, kwargs):
        raise Unsupported(f"ops.{name}")


for _name in (
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "asin",
    "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erfc", "lgamma", "floor",
    "ceil", "trunc", "cbrt",
):  # fmt: skip
    setattr(OpenCLOverrides, _name, _unary(_name))
for _name in ("atan2", "hypot", "copysign", "nextafter", "fmod"):
    setattr(OpenCLOverrides, _name, _binary(_name))

# Everything an OpenCL kernel can compute: the lowering check (fallback.py) compares against it. The
# inherited C-syntax ops (add, mul, lt, bitwise_and, ...) and Inductor's decompositions (reciprocal,
# square, ...) count; the inherited ones that raise do not.
_INHERITED_BUT_MISSING = {"dot", "inline_asm_elementwise", "scan", "sort", "bucketize", "halide_clamp",
                          "output", "placeholder", "frexp"}
SUPPORTED_OPS = frozenset(
    name
    for cls in (OpenCLOverrides, *OpenCLOverrides.__mro__)
    if cls.__module__.startswith(("torch._inductor", "torch_opencl"))
    and cls.__name__ in ("OpenCLOverrides", "OpOverrides", "BasicMathOpsMixin", "OpDecompositions")
    for name in vars(cls)
    if not name.startswith("_") and name not in _INHERITED_BUT_MISSING
) | {"load", "store", "reduction", "store_reduction", "indirect_indexing", "check_bounds", "load_seed"}
