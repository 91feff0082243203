"""The CPU form's vector loop for generated pointwise kernels (runtime/kernel_forms.h's pointwise_vectors).

PoCL vectorises a work-item's loop over outputs, but not around a call of a math builtin or helper: exp or
erf_of stay one scalar call per element (a compiled GELU's backward over 4M floats took twice eager's time,
whose kernel runs float16 vectors: kernels_cl/pointwise.cl's pointwise_contiguous_v16). A generated kernel
whose body is such math over float32 values, read and written at the flat output index, takes 16 outputs a
step as float16 vectors, the same text with vector declarations, vload16 and vstore16; the scalar body
finishes a chunk's last outputs. Anything else in the body (another index, dtype, a comparison or select,
a cast, a function without a float16 form that is known to match the scalar one) keeps the scalar loop.
"""
from __future__ import annotations

import re

from torch._inductor.codegen.common import DeferredLineBase, IndentedBuffer

WIDTH = 16

# Calls (as overrides.py writes them) whose float16 forms compute what the scalar ones do, lane by lane: exp,
# and the helpers kernels_cl/pointwise_functions.cl gives float16 forms (eager's vector kernel uses them). Not
# the logarithms or expm1, macros over float_math.cl where the device takes its own float math, nor sin/cos
# (PoCL's float16 forms are wrong for tiny arguments), nor calls of several arguments that may mix a vector
# and a hoisted scalar (fma has no such overload).
_VECTOR_CALLS = frozenset({"exp", "erf_of", "tanh_of"})
# Calls that PoCL vectorises by itself: allowed in a vector body, but they alone do not call for one. The
# macros' selects take a vector condition lane by lane and widen a scalar operand.
_PLAIN_CALLS = frozenset({"sqrt", "fabs", "TOCL_FMAX", "TOCL_FMIN"})
_CONSTANTS = frozenset({"INFINITY", "TOCL_NAN"})

_INDEX = re.compile(r"^int (x\d+) = xindex;$")
# Where each step's first index is a multiple of WIDTH (the product template's epilogue): the place in a row
# of n, and the row, for n a multiple of WIDTH (a step never crosses a row's end).
_COLUMN = re.compile(r"^int (x\d+) = \(xindex\) % \((\d+)\);$")
_ROW = re.compile(r"^int (x\d+) = \(xindex\) / \((\d+)\);$")
_LOAD = re.compile(r"^float (tmp\d+) = ((?:in_ptr|in_out_ptr)\d+)\[(\w+)\];$")
_DEFINE = re.compile(r"^float (tmp\d+) = (.+);$")
_STORE = re.compile(r"^((?:out_ptr|in_out_ptr)\d+)\[(\w+)\] = \(float\)\((tmp\d+)\);$")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_NUMBER = re.compile(r"\b\d+(?:\.\d*)?(?:e[+-]?\d+)?f\b|\b\d+\.\d*(?:e[+-]?\d+)?f?\b")
# What an expression may hold besides identifiers and float literals: arithmetic, calls, commas.
_ARITHMETIC = re.compile(r"^[\s()+\-*/,.]*$")


def vector_body(lines: list, hoisted: list, vectors: tuple = (), aligned: bool = False,
                require_calls: bool = True) -> IndentedBuffer | None:
    """The body's lines as a 16-output step, or None where the body does not qualify (see the module's
    note). The float values `hoisted` computes once before the loop are used as they are (scalars); those
    named in `vectors` are float16 values the step defines before the body. `aligned`: each step's first
    index is a multiple of WIDTH, so an index's place in a row of a multiple of WIDTH is adjacent across the
    step and its row is one (a load at it is a scalar). `require_calls`: only bodies with a call PoCL does
    not vectorise by itself qualify."""
    scalar_vars = {m.group(1) for line in hoisted if isinstance(line, str) for m in [_DEFINE.match(line.strip())] if m}
    index_vars = {"xindex"}
    row_vars: set[str] = set()
    vector_vars: set[str] = set(vectors)
    out, calls = IndentedBuffer(), False
    for line in lines:
        text = line.line if isinstance(line, DeferredLineBase) else line
        if not isinstance(text, str):
            return None
        text = text.strip()
        if m := _INDEX.match(text):
            index_vars.add(m.group(1))
            new = text
        elif aligned and (m := _COLUMN.match(text) or _ROW.match(text)) and int(m.group(2)) % WIDTH == 0:
            (index_vars if "%" in text else row_vars).add(m.group(1))
            new = text
        elif m := _LOAD.match(text):
            var, buf, idx = m.groups()
            if idx in row_vars:  # one element for the whole step
                scalar_vars.add(var)
                new = text
            elif idx in index_vars:
                vector_vars.add(var)
                new = f"float{WIDTH} {var} = vload{WIDTH}(0, {buf} + {idx});"
            else:
                return None
        elif m := _STORE.match(text):
            buf, idx, var = m.groups()
            if idx not in index_vars or var not in vector_vars:
                return None
            new = f"vstore{WIDTH}({var}, 0, {buf} + {idx});"
        elif m := _DEFINE.match(text):
            var, expr = m.groups()
            without_numbers = _NUMBER.sub(" ", expr)
            for name in _IDENTIFIER.findall(without_numbers):
                if name in _VECTOR_CALLS:
                    calls = True
                elif not (name in vector_vars or name in scalar_vars or name in _PLAIN_CALLS or name in _CONSTANTS):
                    return None
            if not _ARITHMETIC.match(_IDENTIFIER.sub(" ", without_numbers)):
                return None
            vector_vars.add(var)
            new = f"float{WIDTH} {var} = {expr};"
        else:
            return None
        out.writeline(line._new_line(new) if isinstance(line, DeferredLineBase) else new)
    return out if calls or not require_calls else None
