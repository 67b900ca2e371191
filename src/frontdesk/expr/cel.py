"""CEL checks of ABL GUARDRAILS (`check:`): validated and evaluated with cel-python (`celpy`, its interpreter, no exec).

A check is a violation predicate: true means the guardrail fires. The documented helpers
(abl-specification 3.9) are available both as `abl.word_count(x)` and as `word_count(x)`:

- contains_pii(text): an e-mail address, a phone number, a US social security number or a card
  number (13-19 digits passing the Luhn check) appears in the text;
- matches_pattern(text, pattern): the regular expression (Python syntax, `(?i)` allowed) is found;
- word_count(text), sentence_count(text): how many words / sentences the text has;
- contains_url(text), contains_email(text).

A value that is not text (a tool's input object, a list) is read as its JSON text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import celpy
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.celparser import CELParseError
from lark import Token, Tree

# CEL's own functions and macros (cel-spec language definition, as cel-python 0.5 provides them).
CEL_STANDARD_FUNCTIONS = frozenset({
    "size", "contains", "startsWith", "endsWith", "matches", "has", "dyn", "type", "int", "uint", "double",
    "string", "bytes", "bool", "list", "map", "duration", "timestamp", "null_type", "exists", "exists_one",
    "all", "filter", "reduce", "min", "getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear",
    "getFullYear", "getMonth", "getHours", "getMilliseconds", "getMinutes", "getSeconds",
})
HELPER_NAMESPACE = "abl"


@dataclass(frozen=True)
class CelProblem:
    """Why a check cannot be used: `column` and `line` are 1-based within the check's text."""

    message: str
    column: int
    line: int = 1
    hint: str | None = None


class CelError(ValueError):
    """A check that does not compile (with its problem) or that failed while evaluated."""

    def __init__(self, message: str, problem: CelProblem | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.problem = problem


# ---------------------------------------------------------------------------
# The helpers
# ---------------------------------------------------------------------------

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}")
_URL = re.compile(r"\b(?:https?://|www\.)[^\s<>\"']+|\b[\w-]+(?:\.[\w-]+)*\.(?:com|org|net|io|gov|edu)(?:/[^\s]*)?\b",
                  re.IGNORECASE)
_PHONE = re.compile(r"(?<![\w+])(?<!\d[\s.-])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)[\s.-]?|\d{2,4}[\s.-])\d{3,4}[\s.-]?\d{3,4}(?![\s.-]?\d)(?!\w)")
_SSN = re.compile(r"\b\d{3}-\d{2}-\d{4}\b")
_CARD = re.compile(r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)")
class _HelperError(Exception):
    """A helper that cannot do its work (a bad pattern); kept apart from the errors CEL turns into values."""


_WORD = re.compile(r"[^\W_]+(?:['\u2019-][^\W_]+)*")
_SENTENCE_END = re.compile(r"[.!?\u3002]+(?=\s|$)")


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return str(value)
    try:
        return json.dumps(_plain(value), ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def _plain(value: Any) -> Any:
    """A CEL value as plain Python data (for texts of objects and for results)."""
    if isinstance(value, celtypes.BoolType):
        return bool(value)
    if isinstance(value, (celtypes.IntType, celtypes.UintType)):
        return int(value)
    if isinstance(value, celtypes.DoubleType):
        return float(value)
    if isinstance(value, celtypes.StringType):
        return str(value)
    if isinstance(value, Mapping):
        return {str(_plain(k)): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _luhn(digits: str) -> bool:
    total = 0
    for index, ch in enumerate(reversed(digits)):
        n = int(ch)
        if index % 2 == 1:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


def contains_email(value: Any) -> bool:
    return _EMAIL.search(_text(value)) is not None


def contains_url(value: Any) -> bool:
    text = _EMAIL.sub(" ", _text(value))  # the domain of an e-mail address is not a link
    return _URL.search(text) is not None


def contains_pii(value: Any) -> bool:
    text = _text(value)
    if _EMAIL.search(text) or _SSN.search(text):
        return True
    for found in _CARD.finditer(text):
        digits = re.sub(r"\D", "", found.group(0))
        if 13 <= len(digits) <= 19 and _luhn(digits):
            return True
    return _PHONE.search(text) is not None


def matches_pattern(value: Any, pattern: Any) -> bool:
    # '\b' in a CEL string is a backspace (as in C), which nobody means in a pattern: a check written
    # "abl.matches_pattern(input, '\\bidiot\\b')" in a quoted ABL value reaches CEL as '\b'. It is read
    # as the word boundary it was meant to be.
    pattern = _text(pattern).replace("\x08", "\\b")
    try:
        return re.search(pattern, _text(value)) is not None
    except re.error as exc:
        raise _HelperError(f"invalid regular expression {_text(pattern)!r}: {exc}") from None


def word_count(value: Any) -> int:
    return len(_WORD.findall(_text(value)))


def sentence_count(value: Any) -> int:
    text = _text(value).strip()
    if not text:
        return 0
    ends = len(_SENTENCE_END.findall(text))
    return ends + (0 if _SENTENCE_END.search(text[-1:] + " ") else 1)


HELPERS: dict[str, Callable[..., Any]] = {
    "contains_pii": contains_pii,
    "matches_pattern": matches_pattern,
    "word_count": word_count,
    "sentence_count": sentence_count,
    "contains_url": contains_url,
    "contains_email": contains_email,
}


class _Namespace(celtypes.MapType):
    """The value of `abl`: `abl.word_count(x)` calls word_count with it as receiver, which is dropped."""


_ABL = _Namespace({})


def _cel_function(helper: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any) -> Any:
        if args and isinstance(args[0], _Namespace):
            args = args[1:]
        result = helper(*(_plain(a) for a in args))
        if isinstance(result, bool):
            return celtypes.BoolType(result)
        if isinstance(result, int):
            return celtypes.IntType(result)
        return json_to_cel(result)

    return run


_CEL_FUNCTIONS = {name: _cel_function(helper) for name, helper in HELPERS.items()}


# ---------------------------------------------------------------------------
# Validating and compiling
# ---------------------------------------------------------------------------

_ENV = celpy.Environment()  # the default runner is the tree-walking InterpretedRunner


@dataclass(frozen=True)
class CelCheck:
    """A compiled check: evaluate it with `evaluate(variables)` or `fires(variables)`."""

    source: str
    ast: Any

    def evaluate(self, variables: Mapping[str, Any]) -> Any:
        """The check's value (plain Python data) with `variables` bound; raises CelError."""
        return evaluate_check(self, variables)

    def fires(self, variables: Mapping[str, Any]) -> bool:
        """Whether the guardrail fires: the check is true (a check that fails to evaluate raises CelError)."""
        return evaluate_check(self, variables) is True


def check_cel(text: str, functions: Iterable[str] = ()) -> CelProblem | None:
    """None when `text` is a usable check, else its problem: malformed CEL, or a call of a function
    that is neither CEL's, a documented helper (`abl.word_count`, ...) nor one of `functions`."""
    try:
        compile_check(text, functions)
    except CelError as err:
        assert err.problem is not None
        return err.problem
    return None


def compile_check(text: str, functions: Iterable[str] = ()) -> CelCheck:
    """Compile a check once (for evaluating it many times); raises CelError with a CelProblem."""
    if not text or not text.strip():
        raise _problem("the check is empty", 1, 1)
    try:
        ast = _ENV.compile(text)
    except CELParseError as err:
        line = int(getattr(err, "line", None) or 1)
        column = int(getattr(err, "column", None) or 1)
        raise _problem(_parse_message(text, line, column), column, line, _parse_hint(text)) from None
    known = CEL_STANDARD_FUNCTIONS | set(HELPERS) | set(functions)
    for name, token, namespaced in _calls(ast):
        if namespaced and name not in HELPERS:
            raise _problem(f"unknown helper {HELPER_NAMESPACE}.{name}", _col(token), _line(token),
                           "documented helpers: " + ", ".join(f"{HELPER_NAMESPACE}.{h}" for h in HELPERS)
                           + "; judge tone or safety with llm_check")
        if not namespaced and name not in known:
            raise _problem(f"unknown function {name}", _col(token), _line(token),
                           "documented helpers: " + ", ".join(HELPERS) + "; judge tone or safety with llm_check")
    return CelCheck(source=text, ast=ast)


def evaluate_check(check: CelCheck | str, variables: Mapping[str, Any]) -> Any:
    """The value of a check (compiled or text) with `variables` (plain JSON-like data) bound, as plain
    Python data; raises CelError when it cannot be evaluated (an unbound variable, a type error)."""
    compiled = check if isinstance(check, CelCheck) else compile_check(check)
    activation: dict[str, Any] = {HELPER_NAMESPACE: _ABL}
    for name, value in variables.items():
        activation[name] = json_to_cel(_jsonable(value))
    try:
        program = _ENV.program(compiled.ast, functions=_CEL_FUNCTIONS)
        result = program.evaluate(activation)
    except celpy.CELEvalError as err:
        raise CelError(f"the check {compiled.source!r} failed: {_eval_message(err)}") from None
    except (_HelperError, ValueError, TypeError, KeyError) as err:
        raise CelError(f"the check {compiled.source!r} failed: {err}") from None
    return _plain(result)


# ---------------------------------------------------------------------------
# Helpers of the helpers
# ---------------------------------------------------------------------------


def _problem(message: str, column: int, line: int = 1, hint: str | None = None) -> CelError:
    return CelError(message, CelProblem(message, max(1, column), max(1, line), hint))


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    return str(value)


def _calls(ast: Any) -> list[tuple[str, Token, bool]]:
    """Every call in a CEL tree: (function name, its token, whether written as abl.name(...))."""
    found: list[tuple[str, Token, bool]] = []
    for node in ast.iter_subtrees_topdown():
        if node.data == "ident_arg":
            token = node.children[0]
            found.append((str(token), token, False))
        elif node.data == "member_dot_arg":
            member, token = node.children[0], node.children[1]
            namespaced = _is_namespace(member)
            if namespaced or str(token) in HELPERS:
                found.append((str(token), token, namespaced))
    return found


def _is_namespace(member: Any) -> bool:
    """Whether a member tree is just the identifier `abl`."""
    node = member
    while isinstance(node, Tree) and node.data in ("member", "primary") and len(node.children) == 1:
        node = node.children[0]
    return isinstance(node, Tree) and node.data == "ident" and str(node.children[0]) == HELPER_NAMESPACE


def _col(token: Token) -> int:
    return int(token.column or 1)


def _line(token: Token) -> int:
    return int(token.line or 1)


def _parse_message(text: str, line: int, column: int) -> str:
    lines = text.splitlines() or [text]
    row = lines[min(line, len(lines)) - 1]
    near = row[column - 1:column + 11].strip() if column - 1 < len(row) else ""
    return f"malformed CEL expression near {near!r}" if near else "the CEL expression ends too early"


def _parse_hint(text: str) -> str | None:
    if re.search(r"\b(and|or|not)\b", text):
        return "CEL writes && for and, || for or, ! for not"
    if re.search(r"(?<![=!<>])=(?!=)", text):
        return "compare with == (a single = is not CEL)"
    if text.count('"') % 2 or text.count("'") % 2:
        return "close the quoted text"
    return None


def _eval_message(err: Exception) -> str:
    message = str(err.args[0]) if err.args else str(err)
    return message.split(" (in activation", 1)[0]
