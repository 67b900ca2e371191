"""Safe, forgiving evaluation of IR expressions over chatbot data (no eval/exec)."""

from __future__ import annotations

import math
import operator
import re
from typing import Any, Callable

from frontdesk.expr.template import format_value
from frontdesk.ir.models import BoolOp, Call, Compare, Lit, Not, Ref

MAX_EVAL_DEPTH = 200

_NUMERIC_TEXT = re.compile(r"\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*")
_FALSE_WORDS = frozenset({"", "false", "no", "none", "null"})
_BOOL_WORDS = {"true": True, "yes": True, "false": False, "no": False}
_ORDERINGS: dict[str, Callable[[Any, Any], Any]] = {
    "<": operator.lt,
    ">": operator.gt,
    "<=": operator.le,
    ">=": operator.ge,
}


class EvalError(Exception):
    """An expression that cannot be evaluated with the data at hand (e.g. `int('abc')`)."""


def evaluate(expr: Any, lookup: Callable[[Ref], Any]) -> Any:
    """The value of `expr`; `lookup` answers each Ref (returning None for an unset value)."""
    return _eval(expr, lookup, 0)


def is_true(value: Any) -> bool:
    """Truthiness for chatbot data: like Python, but the texts "false", "no", "none", "null" and "0" are false."""
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value != 0
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _FALSE_WORDS:
            return False
        number = _numeric_text(text)
        return number != 0 if number is not None else True
    try:
        return bool(value)
    except Exception:  # an odd object without a usable truth value
        return True


def _eval(expr: Any, lookup: Callable[[Ref], Any], depth: int) -> Any:
    if depth > MAX_EVAL_DEPTH:
        raise EvalError(f"the expression is nested too deeply (more than {MAX_EVAL_DEPTH} levels)")
    if isinstance(expr, Lit):
        return expr.value
    if isinstance(expr, Ref):
        return lookup(expr)
    if isinstance(expr, BoolOp):
        if expr.op == "and":
            return all(is_true(_eval(item, lookup, depth + 1)) for item in expr.items)
        return any(is_true(_eval(item, lookup, depth + 1)) for item in expr.items)
    if isinstance(expr, Not):
        return not is_true(_eval(expr.item, lookup, depth + 1))
    if isinstance(expr, Compare):
        left = _eval(expr.left, lookup, depth + 1)
        right = _eval(expr.right, lookup, depth + 1)
        return compare(expr.cmp, left, right)
    if isinstance(expr, Call):
        args = [_eval(arg, lookup, depth + 1) for arg in expr.args]
        return call_function(expr.fn, args)
    raise EvalError(f"cannot evaluate {type(expr).__name__}")


# ---------------------------------------------------------------------------
# Comparisons
# ---------------------------------------------------------------------------


def compare(op: str, left: Any, right: Any) -> bool:
    """Apply a comparison operator with the forgiving rules (never raises for odd operand types)."""
    if op == "==":
        return values_equal(left, right)
    if op == "!=":
        return not values_equal(left, right)
    if op == "in":
        return _contains(right, left)
    if op == "not in":
        return not _contains(right, left)
    if op in _ORDERINGS:
        return _ordered(_ORDERINGS[op], left, right)
    raise EvalError(f"unknown comparison {op!r}")


def values_equal(left: Any, right: Any) -> bool:
    """Equality: None only equals None; a number equals a numeric text of the same value; text is exact."""
    if left is None or right is None:
        return left is None and right is None
    if isinstance(left, bool) and isinstance(right, str):
        return _BOOL_WORDS.get(right.strip().lower()) is left
    if isinstance(right, bool) and isinstance(left, str):
        return _BOOL_WORDS.get(left.strip().lower()) is right
    if _is_number(left) and isinstance(right, str):
        number = _numeric_text(right)
        return number is not None and left == number
    if _is_number(right) and isinstance(left, str):
        number = _numeric_text(left)
        return number is not None and right == number
    try:
        return bool(left == right)
    except Exception:
        return False


def _ordered(op: Callable[[Any, Any], Any], left: Any, right: Any) -> bool:
    if left is None or right is None:
        return False
    if _is_number(left) and isinstance(right, str):
        right = _numeric_text(right)
    elif _is_number(right) and isinstance(left, str):
        left = _numeric_text(left)
    if left is None or right is None:
        return False
    try:
        return bool(op(left, right))
    except Exception:
        return False


def _contains(container: Any, item: Any) -> bool:
    if container is None:
        return False
    if isinstance(container, str):
        if item is None:
            return False
        return (item if isinstance(item, str) else format_value(item)) in container
    if isinstance(container, dict):
        return any(values_equal(item, key) for key in container)
    if isinstance(container, (list, tuple, set, frozenset)):
        return any(values_equal(item, element) for element in container)
    return False


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _numeric_text(text: str) -> int | float | None:
    """The number a text spells (e.g. " 42 ", "3.5"), or None."""
    if len(text) > 100 or not _NUMERIC_TEXT.fullmatch(text):
        return None
    stripped = text.strip()
    try:
        return int(stripped)
    except ValueError:
        return float(stripped)


# ---------------------------------------------------------------------------
# Built-in functions
# ---------------------------------------------------------------------------


def call_function(fn: str, args: list[Any]) -> Any:
    """Run an allow-listed built-in function on already evaluated arguments."""
    impl = _FUNCTIONS.get(fn)
    if impl is None:
        raise EvalError(f"unknown function {fn!r}")
    expected = 2 if fn.startswith("re.") else 1
    if len(args) != expected:
        raise EvalError(f"{fn}() takes {expected} argument{'s' if expected > 1 else ''}, got {len(args)}")
    return impl(*args)


def _regex(kind: str) -> Callable[[Any, Any], bool]:
    def run(pattern: Any, value: Any) -> bool:
        if not isinstance(pattern, str):
            raise EvalError(f"the pattern of re.{kind}() must be text, got {format_value(pattern)!r}")
        if value is None:
            return False
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise EvalError(f"invalid regular expression {pattern!r}: {exc}") from None
        text = value if isinstance(value, str) else format_value(value)
        return getattr(compiled, kind)(text) is not None

    return run


def _len(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, (str, list, tuple, dict, set, frozenset)):
        return len(value)
    raise EvalError(f"len() needs text, a list or a dict, not {format_value(value)!r}")


def _lower(value: Any) -> str | None:
    return None if value is None else format_value(value).lower()


def _upper(value: Any) -> str | None:
    return None if value is None else format_value(value).upper()


def _int(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise EvalError(f"cannot convert {value!r} to a whole number")
        return int(value)
    if isinstance(value, str):
        number = _numeric_text(value)
        if number is not None and math.isfinite(number):
            return int(number)
    raise EvalError(f"cannot convert {format_value(value)!r} to a whole number")


def _float(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, (bool, int, float)):
        return float(value)
    if isinstance(value, str):
        number = _numeric_text(value)
        if number is not None:
            return float(number)
    raise EvalError(f"cannot convert {format_value(value)!r} to a number")


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "re.match": _regex("match"),
    "re.search": _regex("search"),
    "re.fullmatch": _regex("fullmatch"),
    "len": _len,
    "lower": _lower,
    "upper": _upper,
    "str": format_value,
    "int": _int,
    "float": _float,
}
