"""Bot message templates: parsing `${arg}` / `${agent.arg}` holes and rendering values for humans."""

from __future__ import annotations

import math
from typing import Any, Callable

from frontdesk.ir.models import Ref, RefPart, Template, TextPart

_MAX_RENDER_DEPTH = 32
# What a bot message shows where a referenced value is unset.
MISSING_TEXT = "(none)"
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


def render_template(
    template: Template,
    lookup: Callable[[Ref], Any],
    on_missing: Callable[[Ref], None] | None = None,
    missing_text: str = MISSING_TEXT,
) -> str:
    """Fill every hole with `display_value(lookup(ref))`.

    A hole whose value is unset (None, empty or blank text, an empty list or mapping) shows
    `missing_text` instead of vanishing ("phone (none)." rather than "phone ."), and
    `on_missing(ref)` is called for it, once per such hole, so the caller can log a warning.
    """
    out: list[str] = []
    for part in template.parts:
        if isinstance(part, TextPart):
            out.append(part.text)
            continue
        value = lookup(part.ref)
        if is_unset(value):
            if on_missing is not None:
                on_missing(part.ref)
            out.append(missing_text)
        else:
            out.append(display_value(value, missing_text))
    return "".join(out)


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
    if depth >= _MAX_RENDER_DEPTH:
        return "..."
    if isinstance(value, dict):
        return ", ".join(f"{_format(k, depth + 1)}: {_format(v, depth + 1)}" for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return ", ".join(_format(item, depth + 1) for item in value)
    return str(value)
