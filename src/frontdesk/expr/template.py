"""Bot message templates: parsing `${arg}` / `${agent.arg}` holes and rendering values for humans."""

from __future__ import annotations

import math
from typing import Any, Callable

from frontdesk.ir.models import Ref, RefPart, Template, TextPart

_MAX_RENDER_DEPTH = 32
_NAME_HINT = "write ${name} or ${agent.name}"


class TemplateSyntaxError(ValueError):
    """A malformed `${...}` hole; `column` is 1-based within the template text."""

    def __init__(self, message: str, column: int, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.column = column
        self.hint = hint


def parse_template(text: str, agent: str) -> Template:
    """Split `text` into literal text and `${...}` references; bare names belong to `agent`."""
    parts: list[TextPart | RefPart] = []
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
        ref = _parse_hole(inner, start + 2, agent)
        if literal and "".join(literal):
            parts.append(TextPart(text="".join(literal)))
        literal = []
        parts.append(RefPart(ref=ref))
        pos = end + 1
    if "".join(literal):
        parts.append(TextPart(text="".join(literal)))
    return Template(source=text, parts=parts)


def _parse_hole(inner: str, offset: int, agent: str) -> Ref:
    """Parse the inside of `${...}`; `offset` is its 0-based position in the template text."""
    stripped = inner.strip()
    if not stripped:
        raise TemplateSyntaxError("empty '${}'", offset - 1, hint=_NAME_HINT)
    column = offset + (len(inner) - len(inner.lstrip())) + 1
    names = [piece.strip() for piece in stripped.split(".")]
    if not all(name.isidentifier() for name in names):
        raise TemplateSyntaxError(f"{stripped!r} is not a valid name", column, hint=_NAME_HINT)
    if len(names) > 2:
        raise TemplateSyntaxError(f"{stripped!r} has too many parts", column, hint=_NAME_HINT)
    if len(names) == 1:
        return Ref(scope=agent, name=names[0])
    return Ref(scope=names[0], name=names[1])


def template_refs(template: Template) -> list[Ref]:
    """The references of a template, in order (duplicates kept)."""
    return [part.ref for part in template.parts if isinstance(part, RefPart)]


def render_template(template: Template, lookup: Callable[[Ref], Any]) -> str:
    """Fill every hole with `format_value(lookup(ref))`."""
    out: list[str] = []
    for part in template.parts:
        if isinstance(part, TextPart):
            out.append(part.text)
        else:
            out.append(format_value(lookup(part.ref)))
    return "".join(out)


def format_value(value: Any) -> str:
    """Render a value for a human: None as "", 3.0 as "3", lists and dicts as comma-separated text."""
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
    if depth >= _MAX_RENDER_DEPTH:
        return "..."
    if isinstance(value, dict):
        return ", ".join(f"{_format(k, depth + 1)}: {_format(v, depth + 1)}" for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return ", ".join(_format(item, depth + 1) for item in value)
    return str(value)
