"""Safe arithmetic over a run's metrics and variables, for derived metrics.

    derived: {events_per_s: "events / total_time_s", hit_rate: "hits / (hits + misses)"}

An expression is parsed once (at validation) into Python's AST and evaluated
by walking it: numbers, names (dotted ones too: `sched.runtime_ms` is one
metric's name), + - * / // % **, unary minus, parentheses and the functions
below. Nothing else is accepted (no attribute access, no calls of other
names, no `eval`).
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping

_BINARY: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type, Callable[[float], float]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}
FUNCTIONS: dict[str, Callable[..., float]] = {
    "min": min, "max": max, "abs": abs, "log": math.log, "log2": math.log2, "log10": math.log10, "sqrt": math.sqrt,
}  # fmt: skip


class ExpressionError(ValueError):
    pass


def _dotted(node: ast.AST) -> str | None:
    """`sched.runtime_ms` as one name: instruments' metrics are dotted, and
    nothing has attributes here."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def parse(text: str) -> ast.Expression:
    """Parse and check an expression; ExpressionError names what is not allowed."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"not an expression: {exc.msg}") from None
    for node in ast.walk(tree):
        if isinstance(node, (ast.Expression, ast.Load, ast.Name, ast.BinOp, ast.UnaryOp, *_BINARY, *_UNARY)):
            continue
        if isinstance(node, ast.Attribute) and _dotted(node):
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            continue
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in FUNCTIONS
            and not node.keywords
        ):
            continue
        raise ExpressionError(f"{ast.unparse(node) if hasattr(node, 'lineno') else type(node).__name__!r} is not allowed "
                              f"(numbers, names, + - * / // % **, and {', '.join(FUNCTIONS)})")  # fmt: skip
    return tree


def names(tree: ast.Expression) -> set[str]:
    """The metric and variable names an expression reads."""
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    found = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in called | inner}
    return found | {str(_dotted(n)) for n in ast.walk(tree) if isinstance(n, ast.Attribute) and id(n) not in inner}


def evaluate(tree: ast.Expression, values: Mapping[str, object]) -> float | None:
    """The expression's value; None when a name it reads is missing or not a
    number, or when the arithmetic is undefined (a division by zero)."""

    def walk(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant):
            return float(node.value)  # type: ignore[arg-type]  # parse() admits only int and float
        if isinstance(node, (ast.Name, ast.Attribute)):
            name = str(_dotted(node))
            value = values.get(name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise LookupError(name)
            return float(value)
        if isinstance(node, ast.BinOp):
            return _BINARY[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.UnaryOp):
            return _UNARY[type(node.op)](walk(node.operand))
        if isinstance(node, ast.Call):
            return float(FUNCTIONS[node.func.id](*(walk(a) for a in node.args)))  # type: ignore[attr-defined]
        raise ExpressionError(type(node).__name__)

    try:
        result = walk(tree)
    except (LookupError, ZeroDivisionError, ValueError, OverflowError):
        return None
    return result if math.isfinite(result) else None
