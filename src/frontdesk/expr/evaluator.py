"""Safe, forgiving evaluation of IR expressions over chatbot data (no eval/exec)."""

from __future__ import annotations

import random as _random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from frontdesk.expr import functions
from frontdesk.expr.values import (  # noqa: F401  (compare and values_equal are part of this module's API)
    EvalError,
    arith,
    compare,
    is_set,
    is_true,
    negate,
    sort_key,
    values_equal,
)
from frontdesk.ir.expr import (
    Arith,
    BoolOp,
    Call,
    Compare,
    Each,
    Get,
    Implies,
    IsSet,
    ListLit,
    Lit,
    Local,
    Neg,
    Not,
    ObjLit,
    Ref,
)

MAX_EVAL_DEPTH = 200
MAX_ITEMS = 100_000  # longest list an item-wise operation walks

Resolver = Callable[[Ref], Any]


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _no_value(ref: Ref) -> Any:
    return None


@dataclass(frozen=True)
class EvalEnv:
    """What an evaluation may consult besides the expression: the resolver of Refs (`resolve`), the
    clock (an aware datetime, for NOW()) and the random source (for UNIQUE_ID()). Tests pass a fixed
    clock and a seeded `random.Random` to make both deterministic."""

    resolve: Resolver = _no_value
    clock: Callable[[], datetime] = _utc_now
    random: Any = field(default_factory=_random.SystemRandom)


class _Scope:
    """A chain of local bindings: the innermost binding of a name wins."""

    __slots__ = ("name", "parent", "value")

    def __init__(self, name: str, value: Any, parent: _Scope | None) -> None:
        self.name, self.value, self.parent = name, value, parent

    def get(self, name: str) -> Any:
        scope: _Scope | None = self
        while scope is not None:
            if scope.name == name:
                return scope.value
            scope = scope.parent
        raise EvalError(f"{name!r} is not bound here")


Locals = _Scope | None


def bind(locals_: Locals, name: str, value: Any) -> _Scope:
    """`locals_` with `name` bound to `value` (shadowing an outer binding of the same name)."""
    return _Scope(name, value, locals_)


def evaluate(expr: Any, lookup: Resolver | None = None, env: EvalEnv | None = None,
             locals_: Locals = None) -> Any:
    """The value of `expr`; `lookup` answers each Ref (returning None for an unset value).

    `env` supplies the clock and randomness (and the resolver when `lookup` is not given); without
    it NOW() reads the real clock and UNIQUE_ID() real randomness.
    """
    env = env or EvalEnv()
    resolve = lookup if lookup is not None else env.resolve
    return _Evaluator(resolve, env).eval(expr, locals_, 0)


def call_function(fn: str, args: list[Any], env: EvalEnv | None = None) -> Any:
    """Run a registered function on already evaluated arguments."""
    return functions.call(fn, args, env or EvalEnv())


class _Evaluator:
    def __init__(self, resolve: Resolver, env: EvalEnv) -> None:
        self.resolve = resolve
        self.env = env

    def eval(self, expr: Any, locals_: Locals, depth: int) -> Any:
        if depth > MAX_EVAL_DEPTH:
            raise EvalError(f"the expression is nested too deeply (more than {MAX_EVAL_DEPTH} levels)")
        deeper = depth + 1
        if isinstance(expr, Lit):
            return expr.value
        if isinstance(expr, Ref):
            return self.resolve(expr)
        if isinstance(expr, Local):
            if locals_ is None:
                raise EvalError(f"{expr.name!r} is not bound here")
            return locals_.get(expr.name)
        if isinstance(expr, Get):
            return get_member(self.eval(expr.obj, locals_, deeper), self.eval(expr.key, locals_, deeper))
        if isinstance(expr, BoolOp):
            if expr.op == "and":
                return all(is_true(self.eval(item, locals_, deeper)) for item in expr.items)
            return any(is_true(self.eval(item, locals_, deeper)) for item in expr.items)
        if isinstance(expr, Not):
            return not is_true(self.eval(expr.item, locals_, deeper))
        if isinstance(expr, Implies):
            return not is_true(self.eval(expr.left, locals_, deeper)) or is_true(self.eval(expr.right, locals_, deeper))
        if isinstance(expr, IsSet):
            return is_set(self.eval(expr.item, locals_, deeper))
        if isinstance(expr, Compare):
            left = self.eval(expr.left, locals_, deeper)
            right = self.eval(expr.right, locals_, deeper)
            return compare(expr.cmp, left, right)
        if isinstance(expr, Arith):
            left = self.eval(expr.left, locals_, deeper)
            right = self.eval(expr.right, locals_, deeper)
            return arith(expr.arith, left, right)
        if isinstance(expr, Neg):
            return negate(self.eval(expr.item, locals_, deeper))
        if isinstance(expr, Call):
            args = [self.eval(arg, locals_, deeper) for arg in expr.args]
            return functions.call(expr.fn, args, self.env)
        if isinstance(expr, ListLit):
            return [self.eval(item, locals_, deeper) for item in expr.items]
        if isinstance(expr, ObjLit):
            return {entry.key: self.eval(entry.value, locals_, deeper) for entry in expr.entries}
        if isinstance(expr, Each):
            return self._each(expr, locals_, deeper)
        raise EvalError(f"cannot evaluate {type(expr).__name__}")

    def _each(self, expr: Each, locals_: Locals, depth: int) -> Any:
        items = iterable_items(self.eval(expr.source, locals_, depth), expr.kind)

        def body(item: Any) -> Any:
            return self.eval(expr.body, bind(locals_, expr.var, item), depth)

        kind = expr.kind
        if kind == "filter":
            return [item for item in items if is_true(body(item))]
        if kind == "map":
            return [body(item) for item in items]
        if kind == "any":
            return any(is_true(body(item)) for item in items)
        if kind == "all":
            return all(is_true(body(item)) for item in items)
        if kind == "count":
            return sum(1 for item in items if is_true(body(item)))
        if kind == "find":
            return next((item for item in items if is_true(body(item))), None)
        if kind == "sort_by":
            keyed = [(body(item), item) for item in items]
            present = [pair for pair in keyed if pair[0] is not None]
            absent = [item for key, item in keyed if key is None]
            present.sort(key=lambda pair: sort_key(pair[0]), reverse=expr.descending)
            return [item for _, item in present] + absent
        raise EvalError(f"unknown item-wise operation {kind!r}")


def iterable_items(value: Any, what: str) -> list[Any]:
    """The items an item-wise operation (or a template's each block) walks: None is no items, a mapping its values."""
    if value is None:
        return []
    if isinstance(value, dict):
        items = list(value.values())
    elif isinstance(value, (list, tuple)):
        items = list(value)
    elif isinstance(value, (set, frozenset)):
        items = sorted(value, key=sort_key)
    else:
        raise EvalError(f"{what} needs a list, not {type(value).__name__} {value!r:.40}")
    if len(items) > MAX_ITEMS:
        raise EvalError(f"{what} walks at most {MAX_ITEMS} items")
    return items


def get_member(obj: Any, key: Any) -> Any:
    """`obj[key]` for chatbot data: a missing key, an index out of range or a value without members gives None."""
    if obj is None or key is None:
        return None
    if isinstance(obj, dict):
        try:
            if key in obj:
                return obj[key]
        except TypeError:  # an unhashable key
            return None
        if isinstance(key, str):  # JSON turned a number key into text, or the other way round
            return None
        if isinstance(key, (int, float)) and not isinstance(key, bool):
            return obj.get(str(key))
        return None
    if isinstance(obj, (list, tuple, str)):
        if isinstance(key, bool) or not isinstance(key, (int, float)):
            return None
        if isinstance(key, float):
            if not key.is_integer():
                return None
            key = int(key)
        if -len(obj) <= key < len(obj):
            return obj[key]
        return None
    return None
