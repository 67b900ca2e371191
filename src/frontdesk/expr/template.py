"""Bot message templates: parsing ADL `${arg}` / `${agent.arg}` holes, rendering every part kind, and showing values to people."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from frontdesk.expr.evaluator import EvalEnv, Locals, bind, evaluate, iterable_items
from frontdesk.expr.parser import MAX_NESTING_DEPTH, collect_refs
from frontdesk.expr.values import EvalError, format_value, is_true
from frontdesk.ir.expr import (
    EachPart,
    Expr,
    ExprPart,
    Get,
    IfPart,
    Lit,
    Ref,
    Template,
    TemplatePart,
    TextPart,
)

__all__ = [
    "MISSING_TEXT",
    "TemplateSyntaxError",
    "display_value",
    "format_value",
    "is_unset",
    "parse_template",
    "render_template",
    "template_exprs",
    "template_refs",
]

_MAX_RENDER_DEPTH = 32
MAX_RENDERED_LENGTH = 1_000_000  # a bot message built by loops stops growing here
# What a bot message shows where a referenced value is unset.
MISSING_TEXT = "(none)"
_NAME_HINT = "write ${name} or ${agent.name}"


class TemplateSyntaxError(ValueError):
    """A malformed hole or block; `column` is 1-based within the template text."""

    def __init__(self, message: str, column: int, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.column = column
        self.hint = hint


def parse_template(text: str, agent: str) -> Template:
    """Split `text` into literal text and `${...}` holes; bare names belong to `agent`.

    `${x}` is the argument x of `agent`, `${a.b}` the value b of agent, tool or subflow a, and
    further parts (`${a.b.c}`) are members of that value.
    """
    parts: list[TemplatePart] = []
    literal: list[str] = []
    pos = 0
    while True:
        start = text.find("${", pos)
        if start < 0:
            literal.append(text[pos:])
            break
        literal.append(text[pos:start])
        end = text.find("}", start + 2)
        inner = text[start + 2 : end] if end >= 0 else ""
        if end < 0 or "${" in inner or "\n" in inner:
            raise TemplateSyntaxError("unclosed '${'", start + 1, hint="close it with '}': " + _NAME_HINT)
        expr = _parse_hole(inner, start + 2, agent)
        if literal and "".join(literal):
            parts.append(TextPart(text="".join(literal)))
        literal = []
        parts.append(ExprPart(expr=expr))
        pos = end + 1
    if "".join(literal):
        parts.append(TextPart(text="".join(literal)))
    return Template(source=text, parts=parts)


def _parse_hole(inner: str, offset: int, agent: str) -> Expr:
    """Parse the inside of `${...}`; `offset` is its 0-based position in the template text."""
    stripped = inner.strip()
    if not stripped:
        raise TemplateSyntaxError("empty '${}'", offset - 1, hint=_NAME_HINT)
    column = offset + (len(inner) - len(inner.lstrip())) + 1
    names = [piece.strip() for piece in stripped.split(".")]
    if not all(name.isidentifier() for name in names):
        raise TemplateSyntaxError(f"{stripped!r} is not a valid name", column, hint=_NAME_HINT)
    if len(names) > MAX_NESTING_DEPTH:  # each part is one more level for everything that reads the IR
        raise TemplateSyntaxError(f"'${{...}}' names more than {MAX_NESTING_DEPTH} parts", column, hint=_NAME_HINT)
    if len(names) == 1:
        return Ref(scope=agent, name=names[0])
    expr: Expr = Ref(scope=names[0], name=names[1])
    for name in names[2:]:
        expr = Get(obj=expr, key=Lit(value=name))
    return expr


def template_exprs(template: Template | list[TemplatePart]) -> list[Expr]:
    """Every expression of a template (holes, each sources, if conditions), in order."""
    found: list[Expr] = []
    stack: list[Any] = list(reversed(template.parts if isinstance(template, Template) else template))
    while stack:
        part = stack.pop()
        if isinstance(part, ExprPart):
            found.append(part.expr)
        elif isinstance(part, EachPart):
            found.append(part.items)
            stack.extend(reversed(part.body))
        elif isinstance(part, IfPart):
            found.append(part.condition)
            stack.extend(reversed(part.then + part.otherwise))
    return found


def template_refs(template: Template) -> list[Ref]:
    """The references of a template, in order (duplicates kept)."""
    return [ref for expr in template_exprs(template) for ref in collect_refs(expr)]


def _hole_ref(expr: Expr) -> Ref | None:
    """The Ref a hole shows (the root of a member path), for the missing-value callback."""
    node: Any = expr
    while isinstance(node, Get):
        node = node.obj
    if isinstance(node, Ref):
        return node
    refs = collect_refs(expr)
    return refs[0] if refs else None


def render_template(
    template: Template,
    lookup: Callable[[Ref], Any],
    on_missing: Callable[[Ref], None] | None = None,
    missing_text: str = MISSING_TEXT,
    env: EvalEnv | None = None,
    on_error: Callable[[Expr, EvalError], None] | None = None,
) -> str:
    """Fill every hole with `display_value(value)`, repeat each blocks, choose if branches.

    A hole whose value is unset (None, empty or blank text, an empty list or mapping) shows
    `missing_text` instead of vanishing ("phone (none)." rather than "phone ."), and
    `on_missing(ref)` is called for it, once per such hole (with the Ref the hole reads, the root
    of a member path), so the caller can log a warning. A hole whose expression cannot be
    evaluated shows `missing_text` too and is reported to `on_error` (the message is still sent).
    An each block over an unset list renders nothing; `env` gives NOW() its clock and UNIQUE_ID()
    its randomness.
    """
    env = env or EvalEnv()
    out: list[str] = []
    _Renderer(lookup, env, on_missing, on_error, missing_text, out).parts(template.parts, None, 0)
    return "".join(out)


class _Renderer:
    def __init__(self, lookup: Callable[[Ref], Any], env: EvalEnv, on_missing: Callable[[Ref], None] | None,
                 on_error: Callable[[Expr, EvalError], None] | None, missing_text: str, out: list[str]) -> None:
        self.lookup, self.env = lookup, env
        self.on_missing, self.on_error = on_missing, on_error
        self.missing_text = missing_text
        self.out = out
        self.size = 0

    def value(self, expr: Expr, locals_: Locals) -> tuple[bool, Any]:
        try:
            return True, evaluate(expr, self.lookup, self.env, locals_)
        except EvalError as exc:
            if self.on_error is not None:
                self.on_error(expr, exc)
            return False, None

    def emit(self, text: str) -> None:
        if self.size >= MAX_RENDERED_LENGTH:
            return
        self.out.append(text[: MAX_RENDERED_LENGTH - self.size])
        self.size += len(text)

    def parts(self, parts: list[TemplatePart], locals_: Locals, depth: int) -> None:
        if depth > _MAX_RENDER_DEPTH:
            self.emit("...")
            return
        for part in parts:
            if isinstance(part, TextPart):
                self.emit(part.text)
            elif isinstance(part, ExprPart):
                ok, value = self.value(part.expr, locals_)
                if ok and not is_unset(value):
                    self.emit(display_value(value, self.missing_text))
                    continue
                if ok and self.on_missing is not None:
                    ref = _hole_ref(part.expr)
                    if ref is not None:
                        self.on_missing(ref)
                self.emit(self.missing_text)
            elif isinstance(part, IfPart):
                ok, value = self.value(part.condition, locals_)
                self.parts(part.then if ok and is_true(value) else part.otherwise, locals_, depth + 1)
            elif isinstance(part, EachPart):
                ok, value = self.value(part.items, locals_)
                try:
                    items = iterable_items(value, "{{#each}}") if ok else []
                except EvalError as exc:
                    if self.on_error is not None:
                        self.on_error(part.items, exc)
                    items = []
                last = len(items) - 1
                for index, item in enumerate(items):
                    if self.size >= MAX_RENDERED_LENGTH:
                        break
                    scope = bind(bind(bind(bind(locals_, "@index", index), "@first", index == 0),
                                      "@last", index == last), part.var, item)
                    self.parts(part.body, scope, depth + 1)


def is_unset(value: Any, _depth: int = 0) -> bool:
    """True for what a person would call "no value": None, blank text, an empty list or mapping,
    a list of nothing but such values."""
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, dict):
        return not value
    if isinstance(value, (list, tuple, set, frozenset)):
        return _depth < _MAX_RENDER_DEPTH and all(is_unset(item, _depth + 1) for item in value)
    return False


def display_value(value: Any, missing_text: str = MISSING_TEXT) -> str:
    """Render a value in a bot message: lists as "A, B and C" (unset items left out), mappings as
    "key: value, ...", numbers as `format_value` does, an unset value as `missing_text`."""
    return _display(value, missing_text, 0)


def _display(value: Any, missing_text: str, depth: int) -> str:
    if is_unset(value):
        return missing_text
    if depth >= _MAX_RENDER_DEPTH:
        return "..."
    if isinstance(value, dict):
        return ", ".join(f"{_display(k, missing_text, depth + 1)}: {_display(v, missing_text, depth + 1)}"
                         for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [item for item in value if not is_unset(item)]
        texts = [_display(item, missing_text, depth + 1) for item in items]
        if isinstance(value, (set, frozenset)):
            texts.sort()
        return _join_for_people(texts)
    return format_value(value)


def _join_for_people(texts: list[str]) -> str:
    """["A"] -> "A"; ["A", "B"] -> "A and B"; ["A", "B", "C"] -> "A, B and C"; items that hold commas
    themselves (mappings) are separated by "; " so they stay apart."""
    if len(texts) <= 1:
        return "".join(texts)
    if any(", " in text for text in texts):
        return "; ".join(texts)
    return ", ".join(texts[:-1]) + " and " + texts[-1]
