"""Tool signatures of ABL's TOOLS section and ABL type expressions, read into JSON schemas.

`parse_signature("search_hotels(destination: string, guests: number = 2) -> Hotel[]")` gives the
tool's name, its parameters (JSON schema, required, default) and its return schema;
`type_to_schema("{allowed: boolean, reason?: string}")` reads a type alone (GATHER `type:`,
DELEGATE `RETURNS:` fields).

Type mapping (abl-specification 3.5 and 7.1):
- string, number, integer, boolean, any: the JSON-schema type of that name (`any` is `{}`);
- date: `{"type": "string", "format": "date"}` (also datetime → date-time, time, email, phone, url → uri);
- array: `{"type": "array"}`; object: `{"type": "object"}`; `T[]` and `array<T>`: an array of T;
- `{a: T, b?: U}`: an object with `properties` and `required` (fields without `?`);
- `"a" | "b"`: an `enum` of the texts; other unions are `anyOf`; `T | null` is T with `nullable`;
- a named type (`Hotel`, `GuestInfo`: a name starting with an upper-case letter that is not a built-in
  type) is `{"$ref": "#/types/Hotel"}`: the name is kept for a front end that knows the type's
  fields, and a value checker that does not resolve `$ref` accepts any value (no false alarms).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput

from frontdesk.diagnostics import did_you_mean

TYPE_REF_PREFIX = "#/types/"
MAX_NESTING = 64  # brackets ((, [, {, <) a signature or type may hold open at once: reading them recurses

BUILTIN_TYPES: dict[str, dict[str, Any]] = {
    "string": {"type": "string"},
    "text": {"type": "string"},
    "number": {"type": "number"},
    "integer": {"type": "integer"},
    "int": {"type": "integer"},
    "boolean": {"type": "boolean"},
    "bool": {"type": "boolean"},
    "date": {"type": "string", "format": "date"},
    "datetime": {"type": "string", "format": "date-time"},
    "time": {"type": "string", "format": "time"},
    "email": {"type": "string", "format": "email"},
    "phone": {"type": "string", "format": "phone"},
    "url": {"type": "string", "format": "uri"},
    "array": {"type": "array"},
    "list": {"type": "array"},
    "object": {"type": "object"},
    "any": {},
    "null": {"type": "null"},
}
_ARRAY_GENERICS = frozenset({"array", "list"})
_WORD_VALUES: dict[str, Any] = {"true": True, "false": False, "null": None, "none": None}


class SignatureError(ValueError):
    """A signature or type that cannot be read; `column` is 1-based within the text given (a joined
    multi-line text counts its newlines as characters), `line` the 1-based line."""

    def __init__(self, message: str, column: int, hint: str | None = None, line: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.column = column
        self.hint = hint
        self.line = line


@dataclass(frozen=True)
class SignatureParam:
    """One parameter: its JSON schema, whether a call must give it, and its default (if `has_default`)."""

    name: str
    schema: dict[str, Any]
    required: bool = True
    default: Any = None
    has_default: bool = False
    column: int = 1

    @property
    def type_name(self) -> str:
        """The JSON-schema type name for a flat parameter list ("object" for a named type, "any" for none)."""
        declared = self.schema.get("type")
        if isinstance(declared, str):
            return declared
        if "$ref" in self.schema:
            return "object"
        return "any"


@dataclass(frozen=True)
class ToolSignature:
    """A TOOLS line read: name, parameters, return schema (None without `->`) and the named types used."""

    name: str
    params: tuple[SignatureParam, ...] = ()
    returns: dict[str, Any] | None = None
    types: tuple[str, ...] = ()
    source: str = ""

    def params_schema(self) -> dict[str, Any]:
        """The parameters as one JSON schema object (what an LLM tool definition takes)."""
        properties: dict[str, Any] = {}
        for param in self.params:
            schema = dict(param.schema)
            if param.has_default:
                schema["default"] = param.default
            properties[param.name] = schema
        out: dict[str, Any] = {"type": "object", "properties": properties}
        required = [p.name for p in self.params if p.required]
        if required:
            out["required"] = required
        return out


@dataclass(frozen=True)
class TypeInfo:
    """A type read alone: its JSON schema and the named types it mentions (in order of appearance)."""

    schema: dict[str, Any]
    types: tuple[str, ...] = field(default=())


@lru_cache(maxsize=1)
def _lark() -> Lark:
    grammar = (Path(__file__).parent / "signature.lark").read_text(encoding="utf-8")
    return Lark(grammar, start=["signature", "type_only"], parser="lalr", propagate_positions=True,
                maybe_placeholders=True)


# ---------------------------------------------------------------------------
# Public entry points
# ---------------------------------------------------------------------------


def parse_signature(text: str) -> ToolSignature:
    """Read one TOOLS signature (`name(params) -> type`; the text may span lines)."""
    tree = _parse(text, "signature")
    try:
        return _signature(text, tree)
    except RecursionError:  # _parse bounds the nesting; this is the last line of defence
        raise _error(text, "the signature is nested too deeply to read", 0, _FLATTEN) from None


def _signature(text: str, tree: Tree) -> ToolSignature:
    builder = _Builder(text)
    name_token, params_tree, returns_tree = tree.children
    params: list[SignatureParam] = []
    seen: set[str] = set()
    for param_tree in params_tree.children if params_tree is not None else []:
        param = builder.param(param_tree)
        if param.name in seen:
            raise _error(text, f"the parameter {param.name!r} is given twice", param.column - 1)
        seen.add(param.name)
        params.append(param)
    returns = builder.type(returns_tree) if returns_tree is not None else None
    return ToolSignature(name=str(name_token), params=tuple(params), returns=returns,
                         types=tuple(builder.types), source=text)


def parse_type(text: str) -> TypeInfo:
    """Read a type alone (`string`, `Hotel[]`, `{points: number, rewards: Reward[]}`)."""
    tree = _parse(text, "type_only")
    builder = _Builder(text)
    try:
        schema = builder.type(tree.children[0])
    except RecursionError:  # _parse bounds the nesting; this is the last line of defence
        raise _error(text, "the type is nested too deeply to read", 0, _FLATTEN) from None
    return TypeInfo(schema=schema, types=tuple(builder.types))


def type_to_schema(text: str) -> dict[str, Any]:
    """The JSON schema of an ABL type (see the module's mapping); raises SignatureError."""
    return parse_type(text).schema


# ---------------------------------------------------------------------------
# Parsing and errors
# ---------------------------------------------------------------------------


def _error(text: str, message: str, offset: int, hint: str | None = None) -> SignatureError:
    offset = max(0, min(offset, len(text)))
    return SignatureError(message, offset + 1, hint, line=text.count("\n", 0, offset) + 1)


_EXPECTED_WORDS = {
    "_RPAR": "')'", "_LPAR": "'('", "_COLON": "':'", "_COMMA": "','", "NAME": "a name", "_ARROW": "'->'",
    "_RBRACE": "'}'", "_RSQB": "']'", "_GT": "'>'", "_EQUALS": "'='", "STRING": "a quoted text",
    "NUMBER": "a number", "$END": "the end",
}


_FLATTEN = "name a type for an inner object (Address, with its own fields) instead of nesting it"


def _too_deep(text: str) -> int | None:
    """The 0-based position of a bracket opened more than MAX_NESTING levels deep (outside quoted
    texts), or None."""
    depth, quote = 0, ""
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "([{<":
            depth += 1
            if depth > MAX_NESTING:
                return i
        elif ch in ")]}>" and depth:
            depth -= 1
    return None


def _parse(text: str, start: str) -> Tree:
    what = "tool signature" if start == "signature" else "type"
    if not text.strip():
        raise SignatureError(f"the {what} is empty", 1)
    deep = _too_deep(text)
    if deep is not None:
        raise _error(text, f"the {what} nests brackets more than {MAX_NESTING} deep", deep, _FLATTEN)
    try:
        return _lark().parse(text, start=start)
    except UnexpectedCharacters as err:
        ch = text[err.pos_in_stream]
        hint = None
        if ch in "\"'":
            message, hint = "unclosed text", f"add the closing {ch}"
        elif ch == "=" and text[err.pos_in_stream:err.pos_in_stream + 2] == "=>":
            message, hint = "unexpected '=>'", "write the return type after '->'"
        else:
            message = f"unexpected character {ch!r}"
        raise _error(text, message, err.pos_in_stream, hint) from None
    except UnexpectedEOF:
        raise _error(text, f"the {what} ends too early", len(text.rstrip()),
                     hint="check for a missing ')', '}' or type") from None
    except UnexpectedInput as err:
        token: Token | None = getattr(err, "token", None)
        if token is None or token.type == "$END":
            raise _error(text, f"the {what} ends too early", len(text.rstrip()),
                         hint="check for a missing ')', '}' or type") from None
        expected = sorted(getattr(err, "expected", ()) or ())
        words = [w for w in (_EXPECTED_WORDS.get(e) for e in expected) if w]
        hint = f"expected {' or '.join(words[:4])}" if words else None
        if start == "signature" and token.start_pos == 0:
            hint = "write a signature like search_hotels(destination: string, guests: number = 2) -> Hotel[]"
        elif token.type == "_COLON" and start == "signature" and "(" not in text[:token.start_pos]:
            hint = "write the parameters in parentheses: name(param: type) -> type"
        raise _error(text, f"unexpected {str(token)!r}", token.start_pos or 0, hint) from None


class _Builder:
    """Turns parse trees into JSON schemas, collecting the named types used."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.types: list[str] = []

    def param(self, tree: Tree) -> SignatureParam:
        name_token, optional, type_tree, value_tree = tree.children
        schema = self.type(type_tree)
        column = (name_token.start_pos or 0) + 1
        if value_tree is None:
            return SignatureParam(str(name_token), schema, required=optional is None, column=column)
        default = self.value(value_tree)
        problem = _default_problem(default, schema)
        if problem:
            raise _error(self.text, f"the default of {str(name_token)!r} {problem}", _offset(value_tree))
        return SignatureParam(str(name_token), schema, required=False, default=default, has_default=True,
                              column=column)

    def type(self, tree: Any) -> dict[str, Any]:
        kind = tree.data
        if kind == "union":
            return self._union([self.type(child) for child in tree.children], tree)
        if kind == "postfix":
            base, *suffixes = tree.children
            schema = self.type(base)
            for _ in suffixes:
                schema = {"type": "array", "items": schema}
            return schema
        if kind == "named":
            return self._named(tree.children[0])
        if kind == "generic":
            name, inner = tree.children
            if str(name).lower() not in _ARRAY_GENERICS:
                raise _error(self.text, f"unknown generic type {str(name)!r}", name.start_pos or 0,
                             hint="write an array of T as T[] or array<T>")
            return {"type": "array", "items": self.type(inner)}
        if kind == "inline_object":
            return self._object(tree.children[0])
        if kind == "literal_type":
            return {"const": _text_value(tree.children[0])}
        raise _error(self.text, f"unsupported type construct {kind!r}", _offset(tree))  # pragma: no cover

    def _named(self, token: Token) -> dict[str, Any]:
        name = str(token)
        builtin = BUILTIN_TYPES.get(name.lower())
        if builtin is not None:
            return dict(builtin)
        if not name[0].isupper():
            guess = did_you_mean(name, list(BUILTIN_TYPES))
            raise _error(self.text, f"unknown type {name!r}", token.start_pos or 0,
                         hint=f"did you mean {guess!r}? (named types start with a capital letter)" if guess
                         else "built-in types: " + ", ".join(BUILTIN_TYPES) + "; named types start with a capital")
        if name not in self.types:
            self.types.append(name)
        return {"$ref": TYPE_REF_PREFIX + name}

    def _object(self, fields_tree: Tree | None) -> dict[str, Any]:
        properties: dict[str, Any] = {}
        required: list[str] = []
        for field_tree in fields_tree.children if fields_tree is not None else []:
            name_token, optional, type_tree = field_tree.children
            name = _text_value(name_token) if name_token.type == "STRING" else str(name_token)
            if name in properties:
                raise _error(self.text, f"the field {name!r} is given twice", name_token.start_pos or 0)
            properties[name] = self.type(type_tree)
            if optional is None:
                required.append(name)
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        return schema

    def _union(self, options: list[dict[str, Any]], tree: Tree) -> dict[str, Any]:
        if len(options) == 1:
            return options[0]
        nullable = any(o == {"type": "null"} for o in options)
        rest = [o for o in options if o != {"type": "null"}]
        if rest and all(set(o) == {"const"} for o in rest):
            schema: dict[str, Any] = {"enum": [o["const"] for o in rest]}
        elif len(rest) == 1:
            schema = dict(rest[0])
        else:
            schema = {"anyOf": rest}
        if nullable:
            schema["nullable"] = True
        return schema

    def value(self, tree: Any) -> Any:
        kind = tree.data
        if kind == "string_value":
            return _text_value(tree.children[0])
        if kind == "number_value":
            return _number(str(tree.children[0]))
        if kind == "negative_value":
            return -_number(str(tree.children[1]))
        if kind == "word_value":
            word = str(tree.children[0])
            return _WORD_VALUES.get(word.lower(), word)  # a bare word is text: `currency: string = USD`
        if kind == "empty_list":
            return []
        if kind == "list_value":
            return [self.value(child) for child in tree.children if child is not None]
        if kind == "object_value":
            out: dict[str, Any] = {}
            for pair in tree.children:
                if pair is None:
                    continue
                key_token, item = pair.children
                out[_text_value(key_token) if key_token.type == "STRING" else str(key_token)] = self.value(item)
            return out
        raise _error(self.text, f"unsupported default {kind!r}", _offset(tree))  # pragma: no cover


def _offset(tree: Any) -> int:
    if isinstance(tree, Token):
        return tree.start_pos or 0
    if isinstance(tree, Tree) and not tree.meta.empty:
        return tree.meta.start_pos
    return 0


def _text_value(token: Token) -> str:
    raw = str(token)
    if raw[0] == '"':
        return json.loads(raw)
    body = raw[1:-1]
    return body.replace("\\'", "'").replace("\\\\", "\\")


def _number(text: str) -> int | float:
    return float(text) if any(c in text for c in ".eE") else int(text)


_DEFAULT_KINDS = {
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def _default_problem(value: Any, schema: dict[str, Any]) -> str | None:
    """Why a literal default does not fit a simple declared type, or None."""
    if value is None:
        return None
    if "enum" in schema:
        return None if value in schema["enum"] else f"must be one of {', '.join(map(repr, schema['enum']))}"
    declared = schema.get("type")
    kinds = _DEFAULT_KINDS.get(declared) if isinstance(declared, str) else None
    if kinds is None:
        return None
    if isinstance(value, bool) and declared != "boolean":
        return f"must be a {declared}, not {json.dumps(value)}"
    if not isinstance(value, kinds):
        return f"must be a{'n' if declared[0] in 'aeiou' else ''} {declared}, not {json.dumps(value)}"
    return None
