"""Checking a tool's value against its `returns`, a JSON Schema, with the `jsonschema` library.

The schema is read as JSON Schema 2020-12 (`oneOf` means exactly one branch fits), with what tool
contracts add: a type name JSON Schema does not know (an ABL "date", "any", a named type such as
"Hotel") accepts any value, and `nullable: true` also accepts null. A `$ref` that points outside
the schema is never fetched, a `pattern` runs with a time limit, and a schema the library cannot
use accepts the value. The problem is said in words, at its place in the value: "items[1].price
is a string, not number".
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

_KNOWN_TYPES = ("string", "number", "integer", "boolean", "array", "object", "null")
_NULLABLE_KEYWORDS = ("type", "enum", "const", "anyOf", "oneOf", "allOf", "not")
# keyword -> rank: when a value breaks several, the first in this order is reported
_ORDER = {k: i for i, k in enumerate(("const", "enum", "anyOf", "oneOf", "type", "required", "properties",
                                      "additionalProperties", "minItems", "maxItems", "items"))}
_PATTERN_SECONDS = 0.2  # time limit of one `pattern` match
_TEXT = 200  # characters of the library's own message kept for keywords said here in its words


def schema_problem(value: Any, schema: Any, path: str = "the value") -> str | None:
    """The first way `value` does not fit `schema`, in words (`path` names the value), or None when
    it fits. Never raises."""
    if not isinstance(schema, dict) or not schema:
        return None
    validator = _validator_for(schema)
    try:
        errors = list(validator.iter_errors(value))
    except RecursionError:  # a schema that refers to itself, over a value nested that deep
        return None
    except Exception:  # noqa: BLE001 - a malformed schema (a keyword of the wrong kind, a $ref that does not resolve)
        return None
    if not errors:
        return None
    return _words(_first(errors), path)


def _validator_for(schema: dict) -> Any:
    try:
        key = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError):  # not JSON data: a validator just for this call
        return _make_validator()(schema)
    return _cached_validator(key)


@lru_cache(maxsize=256)
def _cached_validator(key: str) -> Any:
    return _make_validator()(json.loads(key))


@lru_cache(maxsize=1)
def _make_validator() -> Any:
    """A maker of Draft 2020-12 validators with the tool-contract rules above; jsonschema is imported
    at the first check, not with the runtime."""
    import regex
    from jsonschema import Draft202012Validator, ValidationError, validators
    from referencing import Registry

    base = Draft202012Validator.VALIDATORS

    def types(validator: Any, declared: Any, instance: Any, schema: dict) -> Iterable[Any]:
        names = declared if isinstance(declared, list) else [declared]
        if not names or not all(isinstance(n, str) and n in _KNOWN_TYPES for n in names):
            return  # no type, or one JSON Schema does not know: any value fits
        if not any(validator.is_type(instance, n) for n in names):
            yield ValidationError(f"{instance!r} is not of type {', '.join(map(repr, names))}")

    def nullable(check: Any) -> Any:
        def wrapped(validator: Any, value: Any, instance: Any, schema: dict) -> Iterable[Any]:
            if instance is None and schema.get("nullable") is True:
                return
            yield from check(validator, value, instance, schema)
        return wrapped

    def pattern(validator: Any, expected: Any, instance: Any, schema: dict) -> Iterable[Any]:
        # an authored pattern runs with a time limit, as guardrail patterns do (the re module has none)
        if not isinstance(instance, str) or not isinstance(expected, str):
            return
        try:
            found = regex.search(expected, instance, timeout=_PATTERN_SECONDS) is not None
        except TimeoutError:
            found = False
        except regex.error:
            return  # a pattern that does not compile checks nothing
        if not found:
            yield ValidationError(f"{_show(instance)} does not match {expected!r}")

    own = {k: nullable(base[k]) for k in _NULLABLE_KEYWORDS}
    own["type"] = nullable(types)
    own["pattern"] = pattern
    extended = validators.extend(Draft202012Validator, own)
    empty = Registry()  # a $ref outside the schema resolves to nothing: no file or network is read

    def make(schema: dict) -> Any:
        return extended(schema, registry=empty)

    return make


def _first(errors: list[Any]) -> Any:
    """The error to report: by keyword rank at the top of the schema, then in the library's order."""
    def rank(error: Any) -> int:
        top = error.relative_schema_path[0] if error.relative_schema_path else error.validator
        return _ORDER.get(top, len(_ORDER))
    return min(errors, key=rank)


def _words(error: Any, root: str) -> str:
    where = _place(root, error.absolute_path)
    keyword, expected, value = error.validator, error.validator_value, error.instance
    if keyword == "type":
        names = expected if isinstance(expected, list) else [expected]
        return f"{where} is {_kind(value)}, not {' or '.join(names)}"
    if keyword == "const":
        return f"{where} is {_show(value)}, not {_show(expected)}"
    if keyword == "enum":
        return f"{where} is {_show(value)}, not one of {', '.join(_show(v) for v in expected)}"
    if keyword == "required":
        missing = [n for n in expected if isinstance(n, str) and isinstance(value, dict) and n not in value]
        return f"{where} has no {', '.join(missing)}"
    if keyword == "additionalProperties":
        extra = _extra_names(value, error.schema)
        return f"{_place(root, [*error.absolute_path, extra[0]])} is not expected" if extra else \
            f"{where} has properties that are not expected"
    if keyword == "minItems":
        return f"{where} has {len(value)} items, fewer than {expected}"
    if keyword == "maxItems":
        return f"{where} has {len(value)} items, more than {expected}"
    if keyword in ("anyOf", "oneOf"):
        if keyword == "oneOf" and not error.context:  # the library's "valid under each of" error
            return f"{where} fits more than one of its allowed shapes, and oneOf allows exactly one"
        branches = expected if isinstance(expected, list) else []
        first = [_Branch(e) for e in error.context if e.relative_schema_path and e.relative_schema_path[0] == 0]
        problem = _words(_first(first), root) if first else None
        if len(branches) == 1 and problem:
            return problem
        return f"{where} fits none of its allowed shapes ({problem})" if problem else \
            f"{where} fits none of its allowed shapes"
    text = error.message if len(error.message) <= _TEXT else error.message[:_TEXT - 3] + "..."
    return f"{where}: {text}"


class _Branch:
    """An error inside an anyOf/oneOf branch, seen from inside the branch (for ranking and words)."""

    def __init__(self, error: Any) -> None:
        self._error = error
        self.relative_schema_path = list(error.relative_schema_path)[1:]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._error, name)


def _extra_names(value: Any, schema: dict) -> list[str]:
    """The names in an object that neither `properties` nor `patternProperties` allows."""
    import re

    if not isinstance(value, dict):
        return []
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    patterns = schema.get("patternProperties") if isinstance(schema.get("patternProperties"), dict) else {}
    extra = []
    for name in value:
        if name in properties:
            continue
        try:
            if any(re.search(p, name) for p in patterns):
                continue
        except re.error:
            continue
        extra.append(name)
    return extra


def _place(root: str, parts: Iterable[Any]) -> str:
    """Where in the value: `root` itself, `name`, `name.inner`, `root[1]` or `items[1].price`."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text = f"{text or root}[{part}]"
        else:
            text = f"{text}.{part}" if text else (f"{root}.{part}" if root != "the value" else str(part))
    return text or root


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
