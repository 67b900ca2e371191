"""Checking a tool's value against its `returns`: the part of JSON Schema a tool contract uses.

Understood: `type` (one name or a list; "integer" accepts whole floats, "number" any number but
not a boolean), `enum`, `const`, `properties`, `required`, `additionalProperties` (false or a
schema), `items`, `minItems`, `maxItems`, `anyOf` / `oneOf` (one of them fits), `nullable`. A type
name JSON Schema does not know (an ABL "date", a named type such as "Hotel") accepts any value, and
so does every keyword not listed.
"""

from __future__ import annotations

from typing import Any

_MAX_PROBLEM_DEPTH = 64


def schema_problem(value: Any, schema: Any, path: str = "the value", depth: int = 0) -> str | None:
    """The first way `value` does not fit `schema`, in words, or None when it fits."""
    if not isinstance(schema, dict) or not schema or depth > _MAX_PROBLEM_DEPTH:
        return None
    if value is None and schema.get("nullable") is True:
        return None
    if "const" in schema and value != schema["const"]:
        return f"{path} is {_show(value)}, not {_show(schema['const'])}"
    if isinstance(schema.get("enum"), list) and value not in schema["enum"]:
        return f"{path} is {_show(value)}, not one of {', '.join(_show(v) for v in schema['enum'])}"
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            problems = [schema_problem(value, option, path, depth + 1) for option in options]
            if all(problems):
                return problems[0] if len(problems) == 1 else f"{path} fits none of its allowed shapes ({problems[0]})"
    problem = _type_problem(value, schema.get("type"), path)
    if problem:
        return problem
    if isinstance(value, dict):
        return _object_problem(value, schema, path, depth)
    if isinstance(value, list):
        return _array_problem(value, schema, path, depth)
    return None


def _type_problem(value: Any, declared: Any, path: str) -> str | None:
    names = declared if isinstance(declared, list) else [declared] if isinstance(declared, str) else []
    known = [n for n in names if n in _CHECKS]
    if not known or len(known) < len(names):  # no type, or one this checker does not know
        return None
    if any(_CHECKS[n](value) for n in known):
        return None
    return f"{path} is {_kind(value)}, not {' or '.join(known)}"


_CHECKS = {
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
    "any": lambda v: True,
}


def _object_problem(value: dict, schema: dict, path: str, depth: int) -> str | None:
    required = schema.get("required")
    if isinstance(required, list):
        missing = [name for name in required if isinstance(name, str) and name not in value]
        if missing:
            return f"{path} has no {', '.join(missing)}"
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    for name, sub in properties.items():
        if name in value:
            problem = schema_problem(value[name], sub, f"{path}.{name}" if path != "the value" else name, depth + 1)
            if problem:
                return problem
    extra = schema.get("additionalProperties")
    for name, item in value.items():
        if name in properties:
            continue
        shown = f"{path}.{name}" if path != "the value" else name
        if extra is False:
            return f"{shown} is not expected"
        if isinstance(extra, dict):
            problem = schema_problem(item, extra, shown, depth + 1)
            if problem:
                return problem
    return None


def _array_problem(value: list, schema: dict, path: str, depth: int) -> str | None:
    least, most = schema.get("minItems"), schema.get("maxItems")
    if isinstance(least, int) and len(value) < least:
        return f"{path} has {len(value)} items, fewer than {least}"
    if isinstance(most, int) and len(value) > most:
        return f"{path} has {len(value)} items, more than {most}"
    items = schema.get("items")
    if isinstance(items, dict):
        for i, item in enumerate(value):
            problem = schema_problem(item, items, f"{path}[{i}]", depth + 1)
            if problem:
                return problem
    return None


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
