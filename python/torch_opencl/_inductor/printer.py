"""Sympy index and size expressions as OpenCL C (the role of MetalExprPrinter in Inductor's mps.py)."""
import sympy
from sympy.printing.precedence import PRECEDENCE
from torch.utils._sympy.printers import ExprPrinter

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def _nonnegative(expr) -> bool:
    return bool(getattr(expr, "is_nonnegative", False))


class OpenCLExprPrinter(ExprPrinter):
    def _print_Integer(self, expr):
        value = int(expr)
        return str(value) if _INT32_MIN <= value <= _INT32_MAX else f"{value}L"

    def _print_Float(self, expr):
        if expr.is_integer:  # sympy calls 0.0 an integer; OpenCL would read an int
            return f"{int(expr)}.0f"
        return f"{float(expr)!r}f"

    def _print_Infinity(self, expr):
        return "INFINITY"

    def _print_NegativeInfinity(self, expr):
        return "(-INFINITY)"

    def _print_NaN(self, expr):
        return "TOCL_NAN"  # not NAN: see kernels_cl/inductor.cl

    def _print_BooleanTrue(self, expr):
        return "true"

    def _print_BooleanFalse(self, expr):
        return "false"

    def _print_Not(self, expr):
        return f"!({self._print(expr.args[0])})"

    def _print_And(self, expr):
        return self.stringify(expr.args, " && ", PRECEDENCE["And"])

    def _print_Or(self, expr):
        return self.stringify(expr.args, " || ", PRECEDENCE["Or"])

    def _print_FloorDiv(self, expr):
        x, div = expr.args
        if expr.is_integer:
            # Index arithmetic is on nonnegative values almost always: C's division is then floor division.
            if _nonnegative(x) and getattr(div, "is_positive", False):
                return f"({self.doprint(x)}) / ({self.doprint(div)})"
            return f"tocl_floordiv({self.doprint(x)}, {self.doprint(div)})"
        return f"floor(({self.doprint(x)}) / ({self.doprint(div)}))"

    def _print_ModularIndexing(self, expr):
        x, div, mod = expr.args
        x = self.doprint(x)
        if div != 1:
            x = f"({x}) / ({self.doprint(div)})"
        return f"({x}) % ({self.doprint(mod)})"

    def _print_PythonMod(self, expr):
        a, b = expr.args
        if _nonnegative(a) and getattr(b, "is_positive", False):
            return f"({self.doprint(a)}) % ({self.doprint(b)})"
        return f"tocl_pymod({self.doprint(a)}, {self.doprint(b)})"

    def _print_Mod(self, expr):
        return self._print_PythonMod(expr)

    def _print_min_max(self, expr, op):
        args = [self.doprint(a) for a in expr.args]
        result = args[0]
        for arg in args[1:]:
            result = f"(({result}) {op} ({arg}) ? ({result}) : ({arg}))"
        return result

    def _print_Min(self, expr):
        return self._print_min_max(expr, "<")

    def _print_Max(self, expr):
        return self._print_min_max(expr, ">")

    def _print_Abs(self, expr):
        # OpenCL's abs() of a signed integer returns an unsigned one.
        x = self.doprint(expr.args[0])
        return f"(({x}) < 0 ? -({x}) : ({x}))"

    def _print_Where(self, expr):
        c, p, q = (self.doprint(a) for a in expr.args)
        return f"(({c}) ? ({p}) : ({q}))"

    def _print_ToFloat(self, expr):
        return f"((float)({self.doprint(expr.args[0])}))"

    def _print_TruncToInt(self, expr):
        return f"((long)trunc({self.doprint(expr.args[0])}))"

    def _print_FloorToInt(self, expr):
        return f"((long)floor({self.doprint(expr.args[0])}))"

    def _print_CeilToInt(self, expr):
        return f"((long)ceil({self.doprint(expr.args[0])}))"

    def _print_RoundToInt(self, expr):
        return f"((long)rint({self.doprint(expr.args[0])}))"

    def _print_IntTrueDiv(self, expr):
        a, b = expr.args
        return f"((float)({self.doprint(a)}) / (float)({self.doprint(b)}))"

    def _print_FloatTrueDiv(self, expr):
        a, b = expr.args
        return f"(({self.doprint(a)}) / ({self.doprint(b)}))"

    def _print_PowByNatural(self, expr):
        base, exp = expr.args
        if isinstance(exp, sympy.Integer) and 0 <= int(exp) <= 8:
            return "(" + " * ".join([f"({self.doprint(base)})"] * int(exp)) + ")" if int(exp) else "1"
        return f"((long)pow((float)({self.doprint(base)}), (float)({self.doprint(exp)})))"

    def _print_FloatPow(self, expr):
        base, exp = expr.args
        return f"pow({self.doprint(base)}, {self.doprint(exp)})"

    def _print_OpaqueUnaryFn_sqrt(self, expr):
        return f"sqrt({self.doprint(expr.args[0])})"

    def _print_OpaqueUnaryFn_log2(self, expr):
        return f"log2({self.doprint(expr.args[0])})"


_printer = OpenCLExprPrinter()


def cexpr(expr) -> str:
    return _printer.doprint(expr)
