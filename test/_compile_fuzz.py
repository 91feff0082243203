"""torch.compile's differential fuzzer: random graphs compiled for opencl against CPU eager.

A case is a seed. It draws a base shape (1-4 dims, odd and even sizes), a dtype, one to three inputs
(contiguous, transposed or every other column; some broadcast) and two to seven steps: pointwise math of one
or two tensors, reductions along a dim (sum, var, argmax, softmax, layer norm, ...), views (transpose, slices,
flips, cat, index_select). The graph runs on CPU eager and compiled on opencl (Inductor's OpenCL code
generator); with `grad`, float32/float64 inputs require grad and the inputs' gradients of a random weighting of
the outputs are compared too. Inductor computes float16/bfloat16 chains in float32, so the fuzzer turns on
its emulate_precision_casts (round where eager rounds) to compare with eager.

Where the compiled result is not close to eager's, the same graph compiled for CPU (Inductor's C++ backend)
is the second opinion: if opencl matches it, the difference is Inductor's own numerics (its decompositions,
e.g. floor(inf / 2.5) is inf compiled and NaN in eager), counted as "inductor" rather than a failure. With
`--products` (matrix products among the steps: the product template's epilogues, gemm.py), a float32 result
no farther from the graph run in float64 than 4x eager's distance is "precision": the products sum in
another order than CPU's, and steps such as frac or a sum over thousands of rows amplify that.

It found, in its first 1000 cases: a compiled index_select backward in float64 that crashed ("atomic_add store
of torch.float64"), and NaN constants through floor/exp/... that PoCL's compiler dropped the store of.

    cd test && ../.venv/bin/python _compile_fuzz.py 0 300 [--grad] [--dynamic]     # seeds 0..299
    cd test && ../.venv/bin/python _compile_fuzz.py --seeds 1149,1080 --grad

(TORCH_OPENCL_KERNEL_CLASS=gpu for the GPU-shaped kernels; each case is one Inductor compile and one OpenCL
program, about two seconds on PoCL. Chains through exp, sinh or a floor can amplify a last-bit difference
beyond the tolerance: read a mismatch before calling it a bug.)
"""
from __future__ import annotations

import argparse
import math
import random
import traceback
from typing import Callable, List, Tuple

import torch
import torch._dynamo
import torch._inductor.config as inductor_config
from torch.nn import functional as F

import torch_opencl  # noqa: F401

DEV = "opencl"
F32_TOL = (1e-4, 1e-5)
TOLERANCE = {torch.float16: (2e-3, 2e-3), torch.bfloat16: (2e-2, 2e-2), torch.float32: F32_TOL,
             torch.float64: (1e-9, 1e-10)}

UNARY = {
    "exp": torch.exp, "log": lambda x: torch.log(x.abs() + 0.5), "sqrt": lambda x: torch.sqrt(x.abs()),
    "tanh": torch.tanh, "sigmoid": torch.sigmoid, "erf": torch.erf, "erfc": torch.erfc, "sin": torch.sin,
    "cos": torch.cos, "tan": lambda x: torch.tan(x.clamp(-1.2, 1.2)), "neg": torch.neg, "abs": torch.abs,
    "reciprocal": lambda x: 1.0 / (x.abs() + 1), "rsqrt": lambda x: torch.rsqrt(x.abs() + 0.5),
    "floor": torch.floor, "ceil": torch.ceil, "round": torch.round, "trunc": torch.trunc, "frac": torch.frac,
    "sign": torch.sign, "expm1": torch.expm1, "log1p": lambda x: torch.log1p(x.abs()), "relu": torch.relu,
    "gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "silu": F.silu, "softplus": F.softplus,
    "mish": F.mish, "hardswish": F.hardswish, "hardsigmoid": F.hardsigmoid, "elu": F.elu, "leaky_relu": F.leaky_relu,
    "clamp": lambda x: x.clamp(-0.5, 0.7), "square": torch.square, "atan": torch.atan, "asinh": torch.asinh,
    "asin": lambda x: torch.asin(x.clamp(-1, 1)), "acos": lambda x: torch.acos(x.clamp(-1, 1)),
    "atanh": lambda x: torch.atanh(x.clamp(-0.9, 0.9)), "sinh": torch.sinh, "cosh": torch.cosh,
    "pow3": lambda x: x.pow(3), "pow1.5": lambda x: x.abs().pow(1.5), "log2": lambda x: torch.log2(x.abs() + 0.5),
    "exp2": torch.exp2, "lgamma": lambda x: torch.lgamma(x.abs() + 0.3), "logit": lambda x: torch.logit(torch.sigmoid(x)),
    "nan_to_num": lambda x: torch.nan_to_num(torch.log(x)), "isnan": lambda x: torch.isnan(torch.log(x)).to(x.dtype),
    "signbit": lambda x: torch.signbit(x).to(x.dtype), "to_int32": lambda x: (x * 10).to(torch.int32).to(x.dtype),
    "to_int64": lambda x: (x * 7).to(torch.int64).to(x.dtype), "to_bool": lambda x: (x > 0).to(x.dtype),
    "to_half": lambda x: x.half().to(x.dtype), "to_bfloat16": lambda x: x.bfloat16().to(x.dtype),
    "to_double": lambda x: (x.double() * 1.5).to(x.dtype),
}
BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": lambda a, b: a / (b.abs() + 0.5), "div_raw": torch.div,
    "maximum": torch.maximum, "minimum": torch.minimum, "fmax": torch.fmax, "fmin": torch.fmin, "atan2": torch.atan2,
    "fmod": lambda a, b: torch.fmod(a, b.abs() + 0.5), "remainder": lambda a, b: torch.remainder(a, b.abs() + 0.5),
    "where": lambda a, b: torch.where(a > b, a, b * 2), "pow": lambda a, b: torch.pow(a.abs() + 0.1, b),
    "hypot": torch.hypot, "copysign": torch.copysign, "lt": lambda a, b: (a < b).to(a.dtype),
    "eq": lambda a, b: (a.round() == b.round()).to(a.dtype), "lerp": lambda a, b: torch.lerp(a, b, 0.3),
    "floor_divide": lambda a, b: torch.div(a, b.abs() + 0.5, rounding_mode="floor"),
    "trunc_divide": lambda a, b: torch.div(a, b.abs() + 0.5, rounding_mode="trunc"),
    "xlogy": lambda a, b: torch.xlogy(a, b.abs() + 0.1), "addcmul": lambda a, b: torch.addcmul(a, a, b, value=0.5),
    "logaddexp": torch.logaddexp,
    "bce_logits": lambda a, b: F.binary_cross_entropy_with_logits(a, torch.sigmoid(b), reduction="none"),
}


def _reduction(rng: random.Random, dims: int) -> Tuple[str, Callable]:
    d, keep = rng.randrange(dims), rng.random() < 0.5
    ops = {
        "sum": lambda x: x.sum(d, keepdim=keep), "mean": lambda x: x.mean(d, keepdim=keep),
        "amax": lambda x: x.amax(d, keepdim=keep), "amin": lambda x: x.amin(d, keepdim=keep),
        "var": lambda x: x.var(d, keepdim=keep), "std": lambda x: x.std(d, keepdim=keep, correction=0),
        "prod": lambda x: x.clamp(-1.5, 1.5).prod(d, keepdim=keep),
        "argmax": lambda x: x.argmax(d, keepdim=keep).to(x.dtype), "argmin": lambda x: x.argmin(d, keepdim=keep).to(x.dtype),
        "logsumexp": lambda x: x.logsumexp(d, keepdim=keep), "softmax": lambda x: x.softmax(d),
        "log_softmax": lambda x: x.log_softmax(d), "sum_all": lambda x: x.sum(), "max_all": lambda x: x.max(),
        "norm": lambda x: torch.linalg.vector_norm(x, dim=d, keepdim=keep),
        "any": lambda x: (x > 1).any(d, keepdim=keep).to(x.dtype), "all": lambda x: (x > -1).all(d, keepdim=keep).to(x.dtype),
        "cumsum": lambda x: x.cumsum(d), "var_mean": lambda x: sum(torch.var_mean(x, d, keepdim=keep)),
        "layer_norm": lambda x: F.layer_norm(x, x.shape[-1:]),
    }
    name = rng.choice(sorted(ops))
    return f"{name}(dim={d}, keepdim={keep})", ops[name]


def _view(rng: random.Random, shape: List[int]) -> Tuple[str, Callable]:
    dims = len(shape)
    kind = rng.choice(["transpose", "slice", "flip", "permute", "expand_sum", "reshape", "cat", "index_select", "clone"])
    if kind == "transpose" and dims >= 2:
        a, b = rng.sample(range(dims), 2)
        return f"transpose({a}, {b})", lambda x: x.transpose(a, b)
    if kind == "slice":
        d = rng.randrange(dims)
        start, step = rng.randrange(max(1, shape[d] // 2)), rng.choice([1, 2, 3])
        return f"slice(dim={d}, {start}::{step})", lambda x: x[(slice(None),) * d + (slice(start, None, step),)]
    if kind == "flip":
        d = rng.randrange(dims)
        return f"flip({d})", lambda x: x.flip(d)
    if kind == "permute" and dims >= 2:
        order = list(range(dims))
        rng.shuffle(order)
        return f"permute{order}", lambda x: x.permute(*order)
    if kind == "expand_sum":
        return "expand_sum", lambda x: x.unsqueeze(0).expand(2, *x.shape).sum(0)
    if kind == "reshape":
        return "reshape(-1)", lambda x: x.reshape(-1)
    if kind == "cat":
        d = rng.randrange(dims)
        return f"cat(dim={d})", lambda x: torch.cat([x, x * 2, x.sin()], d)
    if kind == "index_select":
        return "index_select(0, reversed)", lambda x: x.index_select(0, torch.arange(x.shape[0] - 1, -1, -1, device=x.device))
    return "clone", lambda x: x.contiguous() * 1


def _broadcasts(a, b) -> bool:
    return all(p == q or p == 1 or q == 1 for p, q in zip(reversed(a), reversed(b)))


PRODUCTS = ("mm", "mm_t", "linear", "addmm", "t_mm")


def make_case(seed: int, grad: bool = False, products: bool = False):
    """(graph function, CPU inputs, description) of case `seed`; with `products`, one or two matrix products
    inserted among its steps (drawn apart, so the case is otherwise the one without them)."""
    rng = random.Random(seed)
    dims = rng.randint(1, 4)
    shape = [rng.choice([1, 2, 3, 5, 7, 8, 16, 17, 31, 33, 64, 65, 100, 130]) for _ in range(dims)]
    while math.prod(shape) > 200000:
        shape[rng.randrange(dims)] //= 2
    shape = [max(1, s) for s in shape]
    if grad:
        dtype = rng.choice([torch.float32] * 3 + [torch.float64])
    else:
        dtype = rng.choice([torch.float32] * 6 + [torch.float16, torch.bfloat16, torch.float64])
    g = torch.Generator().manual_seed(seed)
    inputs, layouts = [], []
    for i in range(rng.randint(1, 3)):
        broadcast = i > 0 and rng.random() < 0.4
        sizes = [1 if broadcast and rng.random() < 0.4 else s for s in shape]
        layout = rng.choice(["contiguous", "contiguous", "transposed", "every other"]) if dims >= 2 else "contiguous"
        if layout == "transposed":
            t = torch.randn(*reversed(sizes), generator=g).to(dtype).permute(*reversed(range(dims)))
        elif layout == "every other":
            t = torch.randn(*sizes[:-1], 2 * sizes[-1], generator=g).to(dtype)[..., ::2]
        else:
            t = torch.randn(*sizes, generator=g).to(dtype)
        inputs.append(t)
        layouts.append(f"{layout} {list(sizes)}")
    steps, names = [], []
    for _ in range(rng.randint(2, 7)):
        kind = rng.choices(["unary", "binary", "reduction", "view"], [5, 4, 2, 2])[0]
        if kind == "unary":
            name = rng.choice(sorted(UNARY))
            steps.append(("unary", UNARY[name], None))
        elif kind == "binary":
            name, other = rng.choice(sorted(BINARY)), rng.randrange(len(inputs))
            steps.append(("binary", BINARY[name], other))
            name = f"{name}(input {other})"
        elif kind == "reduction":
            name, fn = _reduction(rng, dims)
            steps.append(("reduction", fn, None))
        else:
            name, fn = _view(rng, shape)
            steps.append(("view", fn, None))
        names.append(name)
    every_step_out = rng.random() < 0.3
    n_inputs = len(inputs)
    if products and dtype in (torch.float32, torch.float64):
        # The value's rows (all dims but the last, K) times a K x K weight, in one of the forms models write;
        # the weights (scaled by 1/sqrt(K), and a bias) are inputs after the case's own.
        prng, k = random.Random(seed + 1_000_003), shape[-1]
        for _ in range(prng.randint(1, 2)):
            form, at = prng.choice(PRODUCTS), prng.randint(0, len(steps))
            w = len(inputs)
            inputs.append(torch.randn(k, k, generator=g).to(dtype) / math.sqrt(k))
            inputs.append(torch.randn(k, generator=g).to(dtype))
            steps.insert(at, ("product", form, w))
            names.insert(at, f"{form}(weight {w})")

    def graph(*xs):
        x, outs = xs[0], []
        for kind, fn, other in steps:
            if kind == "product":
                if x.dim() == 0 or x.shape[-1] != shape[-1] or x.numel() == 0:
                    continue
                weight, bias, rows = xs[other], xs[other + 1], x.reshape(-1, shape[-1])
                y = {"mm": lambda: rows @ weight, "mm_t": lambda: rows @ weight.t(),
                     "linear": lambda: F.linear(rows, weight, bias),
                     "addmm": lambda: torch.addmm(bias, rows, weight, beta=0.5),
                     "t_mm": lambda: rows.t() @ torch.tanh(rows)}[fn]()  # a weight gradient's form, K x K
                x = y.reshape(x.shape) if y.numel() == x.numel() else y
            elif kind == "binary":
                y = xs[other]
                x = fn(x, y if _broadcasts(x.shape, y.shape) else y.sum())
            elif kind in ("reduction", "view") and (x.dim() != dims or x.numel() == 0):
                continue  # a step drawn for the base shape; the value has another by now
            else:
                x = fn(x)
            if every_step_out:
                outs.append(x)
        return outs if every_step_out else [x]

    description = f"{dtype} {shape} inputs {layouts}: " + " -> ".join(names)
    assert all(other is None or kind == "product" or other < n_inputs for kind, _, other in steps)
    return graph, inputs, description


def _on_device(t: torch.Tensor) -> torch.Tensor:
    """`t` on the device with the same strides (a transposed input stays transposed)."""
    return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=DEV).copy_(t)


def _close(got, want, tol) -> str:
    try:
        torch.testing.assert_close(got, want, rtol=tol[0], atol=tol[1], equal_nan=True)
        return ""
    except AssertionError as e:
        return str(e)[:500]


def run_case(seed: int, grad: bool = False, dynamic: bool = False, products: bool = False) -> Tuple[str, str, str]:
    """("ok" | "skip" | "inductor" | "mismatch" | "error", description, message) of case `seed`."""
    graph, inputs, description = make_case(seed, grad, products)
    torch._dynamo.reset()
    with inductor_config.patch(emulate_precision_casts=True):
        cpu_in = [t.detach().requires_grad_(grad) for t in inputs]
        device_in = [_on_device(t).detach().requires_grad_(grad) for t in inputs]
        try:
            want = graph(*cpu_in)
        except Exception as e:  # an invalid draw (CPU itself refuses it)
            return "skip", description, repr(e)[:200]
        weights = [torch.randn(w.shape, dtype=w.dtype, generator=torch.Generator().manual_seed(seed + 1))
                   if w.is_floating_point() else None for w in want]
        differentiable = grad and any(w is not None and o.requires_grad for w, o in zip(weights, want))
        want_grads = _input_grads(want, weights, cpu_in) if differentiable else []
        try:
            got = torch.compile(graph, dynamic=dynamic)(*device_in)
            got_grads = _input_grads(got, weights, device_in) if differentiable else []
        except Exception as e:
            return "error", description, "".join(traceback.format_exception_only(type(e), e))[-800:]
    for i, (g, w) in enumerate(zip(got, want)):
        if g.dtype != w.dtype or g.shape != w.shape:
            return "mismatch", description, f"output {i}: {g.dtype}{tuple(g.shape)}, CPU {w.dtype}{tuple(w.shape)}"
        tol = _tolerance(w.dtype, description)
        problem = _close(g.detach().cpu(), w.detach(), tol)
        if problem:
            if _matches_cpu_inductor(graph, inputs, dynamic, i, g.detach().cpu(), tol):
                return "inductor", description, f"output {i}: " + problem
            if products and _as_close_to_float64(graph, inputs, i, g.detach().cpu(), w.detach()):
                return "precision", description, f"output {i}: " + problem
            return "mismatch", description, f"output {i}: " + problem
    for i, (g, w) in enumerate(zip(got_grads, want_grads)):
        tol = TOLERANCE[inputs[i].dtype]
        problem = _close(g.cpu(), w, (tol[0] * 10, tol[1] * 10))
        if problem:
            return "mismatch", description, f"gradient of input {i}: " + problem
    return "ok", description, ""


# Steps that round to a narrower float: a last-bit difference before them can become one of its ulps.
_NARROWING = {"to_half": torch.float16, "to_bfloat16": torch.bfloat16}


def _tolerance(dtype: torch.dtype, description: str) -> Tuple[float, float]:
    tol = TOLERANCE.get(dtype, (0, 0))
    if dtype.is_floating_point:
        for step, narrow in _NARROWING.items():
            if step in description:
                tol = tuple(max(a, b) for a, b in zip(tol, TOLERANCE[narrow]))
    return tol


def _input_grads(outs, weights, inputs):
    total = sum((o * w.to(o.device)).sum() for o, w in zip(outs, weights) if w is not None and o.requires_grad)
    grads = torch.autograd.grad(total, inputs, allow_unused=True)
    return [torch.zeros_like(x) if g is None else g for g, x in zip(grads, inputs)]


def _as_close_to_float64(graph, inputs, index, got, want) -> bool:
    """Whether a float32 result with products is within 4x eager's distance from the graph run in float64: a
    product's sum in another order (our tiles' against CPU's blocked one), amplified by the steps after it
    (frac, ceil, a sum of thousands of rows), differs from eager without being less accurate."""
    if want.dtype != torch.float32:
        return False
    with torch.no_grad():
        exact = graph(*[t.detach().double() for t in inputs])[index]

    def distance(x):
        return (x.double() - exact).abs().nan_to_num(0).max().item()

    return distance(got) <= 4 * distance(want) + F32_TOL[1]


def _matches_cpu_inductor(graph, inputs, dynamic, index, got, tol) -> bool:
    torch._dynamo.reset()
    try:
        with inductor_config.patch(emulate_precision_casts=True), torch.no_grad():
            cpu_compiled = torch.compile(graph, dynamic=dynamic)(*[t.detach() for t in inputs])
    except Exception:
        return False
    return not _close(got, cpu_compiled[index], tol)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("start", type=int, nargs="?", default=0)
    parser.add_argument("count", type=int, nargs="?", default=100)
    parser.add_argument("--seeds", help="comma-separated seeds instead of start and count")
    parser.add_argument("--grad", action="store_true", help="compare the inputs' gradients too")
    parser.add_argument("--dynamic", action="store_true", help="torch.compile(dynamic=True)")
    parser.add_argument("--products", action="store_true", help="insert matrix products among the steps")
    args = parser.parse_args()
    torch._dynamo.config.cache_size_limit = 1000
    seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else range(args.start, args.start + args.count)
    counts = {}
    for seed in seeds:
        status, description, message = run_case(seed, args.grad, args.dynamic, args.products)
        counts[status] = counts.get(status, 0) + 1
        if status not in ("ok", "skip"):
            print(f"seed {seed}: {status}: {description}\n    {message}", flush=True)
    print(counts)


if __name__ == "__main__":
    main()
