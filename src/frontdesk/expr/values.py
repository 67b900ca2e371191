"""The rules for chatbot values shared by the evaluator, the functions and templates: truth, equality, order, arithmetic, text."""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable
from typing import Any

_NUMERIC_TEXT = re.compile(r"\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*")
_FALSE_WORDS = frozenset({"", "false", "no", "none", "null"})
_BOOL_WORDS = {"true": True, "yes": True, "false": False, "no": False}
_ORDERINGS: dict[str, Callable[[Any, Any], Any]] = {
    "<": operator.lt,
    ">": operator.gt,
    "<=": operator.le,
    ">=": operator.ge,
}
_MAX_FORMAT_DEPTH = 32
MAX_BUILT_LENGTH = 1_000_000  # longest text or list `+` may build


class EvalError(Exception):
    """An expression that cannot be evaluated with the data at hand (e.g. `int('abc')`)."""


# ---------------------------------------------------------------------------
# Truth and "set"
# ---------------------------------------------------------------------------


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
        number = numeric_text(text)
        return number != 0 if number is not None else True
    try:
        return bool(value)
    except Exception:  # noqa: BLE001 (an odd object without a usable truth value)
        return True


def is_set(value: Any) -> bool:
    """`x is set`: not None and not empty or blank text. 0, False, [] and {} are set (someone gave them)."""
    if value is None:
        return False
    if isinstance(value, str):
        return bool(value.strip())
    return True


# ---------------------------------------------------------------------------
# Numbers
# ---------------------------------------------------------------------------


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def numeric_text(text: str) -> int | float | None:
    """The number a text spells (e.g. " 42 ", "3.5"), or None."""
    if len(text) > 100 or not _NUMERIC_TEXT.fullmatch(text):
        return None
    stripped = text.strip()
    try:
        return int(stripped)
    except ValueError:
        return float(stripped)


def to_number(value: Any) -> int | float | None:
    """A number, or the number a numeric text spells; None for anything else (True/False included)."""
    if is_number(value):
        return value
    if isinstance(value, str):
        return numeric_text(value)
    return None


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
    if is_number(left) and isinstance(right, str):
        number = numeric_text(right)
        return number is not None and left == number
    if is_number(right) and isinstance(left, str):
        number = numeric_text(left)
        return number is not None and right == number
    try:
        return bool(left == right)
    except Exception:  # noqa: BLE001 (odd operand types never make a comparison fail)
        return False


def _ordered(op: Callable[[Any, Any], Any], left: Any, right: Any) -> bool:
    if left is None or right is None:
        return False
    if is_number(left) and isinstance(right, str):
        right = numeric_text(right)
    elif is_number(right) and isinstance(left, str):
        left = numeric_text(left)
    if left is None or right is None:
        return False
    try:
        return bool(op(left, right))
    except Exception:  # noqa: BLE001 (odd operand types never make a comparison fail)
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


def sort_key(value: Any) -> tuple[int, Any]:
    """A key that orders any mix of values: numbers, then texts, then the rest as text (None is kept apart by callers)."""
    if is_number(value) and not (isinstance(value, float) and math.isnan(value)):
        return (0, value)
    if isinstance(value, bool):
        return (0, int(value))
    if isinstance(value, str):
        return (1, value)
    return (2, format_value(value))


# ---------------------------------------------------------------------------
# Arithmetic
# ---------------------------------------------------------------------------

_ARITH_NAMES = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide", "%": "take the remainder of"}


def _kind(value: Any) -> str:
    if value is None:
        return "no value"
    if isinstance(value, bool):
        return f"True/False ({value})"
    if isinstance(value, str):
        return f"the text {value[:40]!r}"
    if is_number(value):
        return f"the number {format_value(value)}"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def arith(op: str, left: Any, right: Any) -> Any:
    """`left op right`. Numbers (numeric text counts as its number, except that `+` joins two texts);
    `+` also joins two texts or two lists. Anything else is an EvalError, as is dividing by zero."""
    if op == "+":
        if isinstance(left, str) and isinstance(right, str):
            if len(left) + len(right) > MAX_BUILT_LENGTH:
                raise EvalError("the text would be too long")
            return left + right
        if isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
            if len(left) + len(right) > MAX_BUILT_LENGTH:
                raise EvalError("the list would be too long")
            return list(left) + list(right)
    a, b = to_number(left), to_number(right)
    if a is None or b is None:
        bad = left if a is None else right
        why = "it has no value" if bad is None else f"it is {_kind(bad)}"
        hint = " (join texts with +, turn a number into text with str())" if op == "+" and (
            isinstance(left, str) or isinstance(right, str)) else ""
        raise EvalError(f"cannot {_ARITH_NAMES[op]} {_kind(left)} and {_kind(right)}: {why}{hint}"
                        if op != "%" else f"cannot take the remainder of {_kind(left)} by {_kind(right)}: {why}")
    try:
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if b == 0:
            raise EvalError("division by zero" if op == "/" else "remainder of a division by zero")
        if op == "/":
            return a / b
        return a % b
    except OverflowError:
        raise EvalError("the number is too large") from None


def negate(value: Any) -> Any:
    number = to_number(value)
    if number is None:
        raise EvalError(f"cannot negate {_kind(value)}")
    return -number


# ---------------------------------------------------------------------------
# Values as text
# ---------------------------------------------------------------------------


def format_value(value: Any) -> str:
    """A value as plain text for expressions (`str()`, `in`, `re.match`): None as "", 3.0 as "3", lists and
    dicts as comma-separated text. Bot messages use `display_value`."""
    return _format(value, 0)


def _format(value: Any, depth: int) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer():
            return str(int(value))
        return format(value, ".15g") if math.isfinite(value) else str(value)
    if depth >= _MAX_FORMAT_DEPTH:
        return "..."
    if isinstance(value, dict):
        return ", ".join(f"{_format(k, depth + 1)}: {_format(v, depth + 1)}" for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return ", ".join(_format(item, depth + 1) for item in value)
    return str(value)
