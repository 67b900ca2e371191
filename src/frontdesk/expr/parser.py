"""Parsing of condition and value text (ADL `if:`, `set:`, call arguments, template holes) into IR expressions."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput
from lark.tree import Meta

from frontdesk.diagnostics import did_you_mean
from frontdesk.expr import functions
from frontdesk.ir.expr import (
    MEMORY_ROOTS,
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
    ObjEntry,
    ObjLit,
    Ref,
)
from frontdesk.ir.models import ClaimsCondition, Condition, Expr, ExprCondition

MAX_NESTING_DEPTH = 64
MAX_TEXT_LENGTH = 10_000

# How a dotted name is read. "scoped" (ADL): `x` is an argument of the agent, `a.b` the value `b` of
# agent, tool or subflow `a`, and further parts are members. "flat" (ABL, Handlebars): `a` is a
# variable of the agent and every further part is a member.
PathMode = Literal["scoped", "flat"]

# Which language the text is written in. "adl" (the default) is the grammar above with `paths`;
# "abl" also takes upper-case AND / OR / NOT / IN / IMPLIES / TRUE / FALSE / NULL, `x matches /re/`,
# method tests (`input.contains("x")`), `{{name}}`, `match.0`, object shorthand `{a, b: 1}`, and reads
# names as ABL does (see AblNames and _Converter._abl_name).
Dialect = Literal["adl", "abl"]

# Item-wise operations written like calls with a function of each item: filter(items, i => i.price > 3).
EACH_FORMS: dict[str, str] = {
    "filter": "filter",
    "map": "map",
    "sort_by": "sort_by",
    "any": "any",
    "all": "all",
    "find": "find",
    "count": "count",
}
_EACH_EXAMPLE = "e.g. filter(items, item => item.price > 3)"
_SORT_DIRECTIONS = {"asc": False, "ascending": False, "desc": True, "descending": True}

LITERAL_WORDS: dict[str, Any] = {
    "None": None,
    "null": None,
    "True": True,
    "true": True,
    "False": False,
    "false": False,
}
_KEYWORDS = ("and", "or", "not", "in", "implies")

_CLAIMS_PREFIX = re.compile(r"\s*the\s+user\s+claims\b", re.IGNORECASE)
_CLAIMS_ANYWHERE = re.compile(r"\bthe\s+user\s+claims\b", re.IGNORECASE)
_CLAIMS_EXAMPLE_HINT = 'write it like: the user claims "I want a refund", "Give me my money back"'

_SIMPLE_ESCAPES = {"\\": "\\", '"': '"', "'": "'", "n": "\n", "t": "\t", "r": "\r"}
_OPEN_TO_CLOSE_QUOTE = {'"': '"', "'": "'", "\u201c": "\u201d"}

_CMP_TOKENS = {"EQ", "NE", "LE", "GE", "LT", "GT", "IN"}
_ARITH_TOKENS = {"PLUS", "MINUS", "STAR", "SLASH", "PERCENT"}
_VALUE_START_TOKENS = {"NAME", "STRING", "RAW_STRING", "NUMBER", "_LPAR", "_LSQB", "_LBRACE"}
_OPENERS = {"_LPAR": "_RPAR", "_LSQB": "_RSQB", "_LBRACE": "_RBRACE"}
_CLOSERS = {close: open_ for open_, close in _OPENERS.items()}
_TOKEN_TEXT = {
    "_IMPLIES": "implies",
    "_OR": "or",
    "_AND": "and",
    "NOT": "not",
    "IN": "in",
    "_LPAR": "(",
    "_RPAR": ")",
    "_LSQB": "[",
    "_RSQB": "]",
    "_LBRACE": "{",
    "_RBRACE": "}",
    "_COMMA": ",",
    "_COLON": ":",
    "_DOT": ".",
    "_ARROW": "=>",
}


class ExprSyntaxError(ValueError):
    """Text that is not a valid condition or expression; `column` is 1-based within the text."""

    def __init__(self, message: str, column: int, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.column = column
        self.hint = hint


@lru_cache(maxsize=1)
def _lark() -> Lark:
    grammar = (Path(__file__).parent / "grammar.lark").read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr", lexer="basic", propagate_positions=True, maybe_placeholders=True)


# ABL's additions to the one grammar: `x matches "re"` (a regex literal /re/ is turned into a string of
# the same length before parsing), `match.0`, and object shorthand `{destination, price: total}`.
_ABL_GRAMMAR_EXTENSION = """
%extend comparison: sum NAME STRING -> word_test
                  | sum NAME RAW_STRING -> word_test
%extend postfix: postfix NUMBER -> dot_index
%extend entry: NAME -> shorthand_entry
"""

# Upper-case keywords of ABL, re-typed by the lexer (lower case stays a keyword too).
_ABL_KEYWORDS = {"AND": "_AND", "OR": "_OR", "NOT": "NOT", "IN": "IN", "IMPLIES": "_IMPLIES"}


def _abl_keyword(token: Token) -> Token:
    kind = _ABL_KEYWORDS.get(str(token))
    if kind is not None:
        token.type = kind
    return token


@lru_cache(maxsize=1)
def _abl_lark() -> Lark:
    grammar = (Path(__file__).parent / "grammar.lark").read_text(encoding="utf-8") + _ABL_GRAMMAR_EXTENSION
    return Lark(grammar, parser="lalr", lexer="basic", propagate_positions=True, maybe_placeholders=True,
                lexer_callbacks={"NAME": _abl_keyword})


# ---------------------------------------------------------------------------
# How ABL reads names
# ---------------------------------------------------------------------------

ABL_LITERAL_WORDS: dict[str, Any] = {**LITERAL_WORDS, "TRUE": True, "FALSE": False, "NULL": None}

# System-assigned variables (abl-specification 8.8, and the reserved identifiers of 3.7.2): read from
# Ref space "system" (scope "system") under these names. Any other name starting with "_" is one too.
ABL_SYSTEM_VARIABLES = frozenset({
    "input",  # the user's message (ON_INPUT conditions)
    "match",  # capture groups of the last successful `matches`: match.0, match.1, match.room_id
    "all_fields_gathered", "sentiment_trajectory", "tool_failures", "constraint_failures",
    "channel", "language", "user_id", "project_id", "tenant_id", "session_id",
})
# Two-part system variables (8.8): `user.intent` is Ref(system, "system", "user.intent").
ABL_SYSTEM_PATHS = frozenset({("user", "intent"), ("user", "sentiment"), ("handoff", "completed"),
                              ("escalate", "completed")})
# Roots whose next part names a system value: `system.turn`, `context.channel` (BEHAVIOR_PROFILES WHEN).
ABL_SYSTEM_ROOTS = frozenset({"system", "context"})
_LAST_RESULT = re.compile(r"last_(\w+?)_result")
# ON_INPUT's bare `yes` / `no` (3.14.3: `IF: input == "yes" OR yes`): whether the message says so.
ABL_INTENT_WORDS = {"yes": "SAYS_YES", "no": "SAYS_NO"}
# Method-style tests on a value: `input.contains("change")` is CONTAINS(input, "change").
ABL_METHODS = {"contains": "CONTAINS", "includes": "CONTAINS", "matches": "MATCHES"}
# Infix word tests: `input matches /room\s*\d+/`.
ABL_WORD_TESTS = {"matches": "MATCHES", "contains": "CONTAINS"}


@dataclass(frozen=True)
class AblNames:
    """What an ABL expression's names can refer to, beyond session variables.

    `memory_paths`: the agent's declared persistent paths (MEMORY persistent PATH), as path -> memory
    scope ("user", "project", "execution_tree") or just the paths (the scope follows the root:
    user., project., workflow.); `tools`: the agent's tool names (`search_hotels.total` reads its result).
    """

    memory_paths: Mapping[str, str] | None = None
    tools: frozenset[str] = frozenset()

    @staticmethod
    def make(memory_paths: Mapping[str, str] | Iterable[str] | None, tools: Iterable[str]) -> AblNames:
        if isinstance(memory_paths, frozenset) and isinstance(tools, frozenset):
            return _abl_names(memory_paths, tools)  # a front end asks with the same sets for each expression
        return AblNames._made(memory_paths, tools)

    @staticmethod
    def _made(memory_paths: Mapping[str, str] | Iterable[str] | None, tools: Iterable[str]) -> AblNames:
        paths: dict[str, str] | None = None
        if memory_paths is not None:
            if isinstance(memory_paths, Mapping):
                paths = {str(k): str(v) for k, v in memory_paths.items()}
            else:
                paths = {}
                for path in memory_paths:
                    root = str(path).split(".", 1)[0]
                    paths[str(path)] = MEMORY_ROOTS.get(root, "user")
        return AblNames(paths, frozenset(tools))


@lru_cache(maxsize=16)
def _abl_names(memory_paths: frozenset[str], tools: frozenset[str]) -> AblNames:
    return AblNames._made(memory_paths, tools)


_REGEX_LITERAL = re.compile(r"(?<![\w.])(matches|MATCHES)(\s+)/((?:[^/\\\n]|\\.)+)/([a-z]*)")
_BRACED_NAME = re.compile(r"\{\{\s*([^\W\d][\w.]*)\s*\}\}")
_EMPTY_BRACES = re.compile(r"\{\{\s*\}\}")
_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|\u201c[^\u201d]*\u201d', re.DOTALL)


def _in_quotes(text: str) -> Callable[[int], bool]:
    """Whether a position of `text` is inside a quoted text (rewrites must leave those alone)."""
    spans = [(m.start(), m.end()) for m in _QUOTED.finditer(text)]
    return lambda pos: any(lo <= pos < hi for lo, hi in spans)


def _abl_prepare(text: str) -> tuple[str, dict[int, str]]:
    """Text the ABL grammar reads, with the same columns: each regex literal after `matches` becomes a
    quoted placeholder whose pattern is kept by start position, and `{{name}}` loses its braces."""
    patterns: dict[int, str] = {}
    quoted = _in_quotes(text)

    def literal(found: re.Match[str]) -> str:
        if quoted(found.start()):
            return found.group(0)
        body, flags = found.group(3), found.group(4)
        start = found.start(3) - 1
        bad = next((f for f in flags if f not in "imsx"), None)
        if bad is not None:
            raise ExprSyntaxError(f"unknown regex flag {bad!r}", found.start(4) + 1 + flags.index(bad),
                                  hint="flags after /.../ can be i, m, s or x")
        patterns[start] = (f"(?{flags})" if flags else "") + body.replace("\\/", "/")
        return found.group(1) + found.group(2) + '"' + "_" * len(body) + '"' + " " * len(flags)

    text = _REGEX_LITERAL.sub(literal, text)
    quoted = _in_quotes(text)
    for empty in _EMPTY_BRACES.finditer(text):
        if not quoted(empty.start()):
            raise ExprSyntaxError("expected a name inside {{ }}", empty.start() + 1,
                                  hint="write {{name}}, or just name")

    def unbrace(m: re.Match[str]) -> str:
        if quoted(m.start()):
            return m.group(0)
        return " " * (m.start(1) - m.start()) + m.group(1) + " " * (m.end() - m.end(1))

    return _BRACED_NAME.sub(unbrace, text), patterns


def known_function_names() -> list[str]:
    """Every function a call may name: the registry's and the item-wise forms."""
    return sorted(set(functions.function_names()) | set(EACH_FORMS), key=str.lower)


# ---------------------------------------------------------------------------
# Public entry points
# ---------------------------------------------------------------------------


def parse_condition(text: str, agent: str, *, locals: Iterable[str] = (), paths: PathMode = "scoped",
                    dialect: Dialect = "adl", memory_paths: Mapping[str, str] | Iterable[str] | None = None,
                    tools: Iterable[str] = ()) -> Condition:
    """Parse an `if:` condition: `the user claims "..."` or an expression over arguments of `agent`.

    `locals` are names bound by an enclosing item-wise operation (they read as Local);
    `paths` says how dotted names are read (see PathMode). With `dialect="abl"` the text is an ABL
    condition (REQUIRE, WHEN, IF, COMPLETE_WHEN, FILTER): `paths` and the claims form do not apply,
    and `memory_paths` / `tools` say which dotted names are persistent memory and tool results (AblNames).
    """
    if dialect == "abl":
        expr = _parse(text, agent, what="condition", locals=locals, abl=AblNames.make(memory_paths, tools))
        return ExprCondition(source=text, expr=expr)
    if _CLAIMS_PREFIX.match(text):
        return ClaimsCondition(source=text, examples=_parse_claims(text))
    try:
        expr = _parse(text, agent, what="condition", locals=locals, paths=paths)
    except ExprSyntaxError:
        found = _CLAIMS_ANYWHERE.search(text)
        if found:
            raise ExprSyntaxError(
                "'the user claims' cannot be combined with 'and' / 'or'",
                found.start() + 1,
                hint="check it in its own if step and put the other condition in a nested if",
            ) from None
        raise
    return ExprCondition(source=text, expr=expr)


def parse_expression(text: str, agent: str, *, locals: Iterable[str] = (), paths: PathMode = "scoped",
                     dialect: Dialect = "adl", memory_paths: Mapping[str, str] | Iterable[str] | None = None,
                     tools: Iterable[str] = ()) -> Expr:
    """Parse a value expression (e.g. a `set:` value or call argument); bare names belong to `agent`.

    With `dialect="abl"`: an ABL value (SET, WITH, MAP, STORE, INPUT), names read as in parse_condition.
    """
    if dialect == "abl":
        return _parse(text, agent, what="value", locals=locals, abl=AblNames.make(memory_paths, tools))
    found = _CLAIMS_PREFIX.match(text)
    if found:
        raise ExprSyntaxError(
            "'the user claims' can only be used as an if / else if condition",
            len(text) - len(text.lstrip()) + 1,
        )
    return _parse(text, agent, what="value", locals=locals, paths=paths)


def child_exprs(node: Any) -> list[Any]:
    """The direct sub-expressions of an expression node, in source order."""
    if isinstance(node, (Compare, Arith, Implies)):
        return [node.left, node.right]
    if isinstance(node, (BoolOp, ListLit)):
        return list(node.items)
    if isinstance(node, (Not, IsSet, Neg)):
        return [node.item]
    if isinstance(node, Call):
        return list(node.args)
    if isinstance(node, Get):
        return [node.obj, node.key]
    if isinstance(node, ObjLit):
        return [entry.value for entry in node.entries]
    if isinstance(node, Each):
        return [node.source, node.body]
    return []


def collect_refs(expr: Expr) -> list[Ref]:
    """Every Ref in `expr`, in source order (duplicates kept); Locals are not Refs."""
    refs: list[Ref] = []
    stack: list[Any] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, Ref):
            refs.append(node)
        else:
            stack.extend(reversed(child_exprs(node)))
    return refs


def collect_calls(expr: Expr) -> list[Call]:
    """Every Call in `expr`, in source order."""
    calls: list[Call] = []
    stack: list[Any] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, Call):
            calls.append(node)
        stack.extend(reversed(child_exprs(node)))
    return calls


# ---------------------------------------------------------------------------
# String literals (shared with the claims form)
# ---------------------------------------------------------------------------


def unescape(body: str) -> str:
    """Resolve backslash escapes `\\\\ \\" \\' \\n \\t \\r`; any other backslash is kept (so regexes like `\\d` work)."""
    if "\\" not in body:
        return body
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in _SIMPLE_ESCAPES:
                out.append(_SIMPLE_ESCAPES[nxt])
            else:
                out.append(ch + nxt)
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _string_value(token: Token) -> str:
    raw = str(token)
    if token.type == "RAW_STRING":
        return raw[2:-1]
    if raw[0] == "\u201c":
        return raw[1:-1]
    return unescape(raw[1:-1])


# ---------------------------------------------------------------------------
# The claims form
# ---------------------------------------------------------------------------


def _parse_claims(text: str) -> list[str]:
    prefix = _CLAIMS_PREFIX.match(text)
    assert prefix is not None
    pos = prefix.end()
    examples: list[str] = []
    n = len(text)

    def skip_ws(p: int) -> int:
        while p < n and text[p].isspace():
            p += 1
        return p

    def word_at(p: int) -> str:
        m = re.match(r"[^\W\d]\w*", text[p:])
        return m.group(0) if m else ""

    pos = skip_ws(pos)
    if text[pos : pos + 1] == ":":  # tolerate `the user claims: "..."`
        pos = skip_ws(pos + 1)
    expecting_after = "'the user claims'"
    while True:
        if pos >= n:
            raise ExprSyntaxError(
                f"expected a quoted example after {expecting_after}", n + 1, hint=_CLAIMS_EXAMPLE_HINT
            )
        quote = text[pos]
        if quote not in _OPEN_TO_CLOSE_QUOTE:
            word = word_at(pos).lower()
            if examples and word in ("and", "or"):
                raise ExprSyntaxError(
                    "'the user claims' cannot be combined with 'and' / 'or'",
                    pos + 1,
                    hint="check it in its own if step and put the other condition in a nested if",
                )
            raise ExprSyntaxError(
                f"the examples after 'the user claims' must be in quotes (found {text[pos:pos + 20]!r})",
                pos + 1,
                hint=_CLAIMS_EXAMPLE_HINT,
            )
        close = _OPEN_TO_CLOSE_QUOTE[quote]
        start = pos
        pos += 1
        buf_start = pos
        while pos < n and text[pos] != close:
            if text[pos] == "\\" and quote != "\u201c":
                pos += 1
            pos += 1
        if pos >= n:
            raise ExprSyntaxError("unclosed string", start + 1, hint=f"add the closing {close}")
        body = text[buf_start:pos]
        example = body if quote == "\u201c" else unescape(body)
        if not example.strip():
            raise ExprSyntaxError("an example cannot be empty", start + 1, hint=_CLAIMS_EXAMPLE_HINT)
        examples.append(example)
        pos = skip_ws(pos + 1)
        if pos >= n:
            return examples
        if text[pos] == ",":
            expecting_after = "','"
            pos = skip_ws(pos + 1)
            if word_at(pos).lower() == "or":
                pos = skip_ws(pos + 2)
                expecting_after = "'or'"
            continue
        word = word_at(pos).lower()
        if word == "or":
            after = skip_ws(pos + 2)
            if after < n and text[after] in _OPEN_TO_CLOSE_QUOTE:
                pos = after
                continue
        if word in ("and", "or"):
            raise ExprSyntaxError(
                "'the user claims' cannot be combined with 'and' / 'or'",
                pos + 1,
                hint="check it in its own if step and put the other condition in a nested if; "
                "separate several examples with commas",
            )
        hint = "separate examples with commas"
        if quote == "'":
            hint += "; an example that contains ' must be wrapped in double quotes"
        raise ExprSyntaxError("expected ',' between examples", pos + 1, hint=hint)


# ---------------------------------------------------------------------------
# Expressions
# ---------------------------------------------------------------------------


def _parse(text: str, agent: str, what: str, locals: Iterable[str] = (), paths: PathMode = "scoped",
           abl: AblNames | None = None) -> Expr:
    if not text.strip():
        raise ExprSyntaxError(f"the {what} is empty", 1)
    if len(text) > MAX_TEXT_LENGTH:
        raise ExprSyntaxError(f"the {what} is too long (more than {MAX_TEXT_LENGTH} characters)", MAX_TEXT_LENGTH + 1)
    patterns: dict[int, str] = {}
    if abl is not None:
        text, patterns = _abl_prepare(text)
        if not text.strip():
            raise ExprSyntaxError(f"the {what} is empty", 1)
    parser = _abl_lark() if abl is not None else _lark()
    try:
        tree = parser.parse(text)
    except UnexpectedInput as err:
        # the tokens only say what went wrong; lark builds a lexer for each lex(), so only then
        try:
            tokens = list(parser.lex(text))
        except UnexpectedCharacters as bad:
            raise _bad_character(text, bad.pos_in_stream) from None
        raise _unexpected_token(text, tokens, err, what) from None
    _check_depth(tree)
    return _Converter(agent, frozenset(locals), paths, abl, patterns).convert(tree)


def _bad_character(text: str, pos: int) -> ExprSyntaxError:
    ch = text[pos]
    col = pos + 1
    if ch in _OPEN_TO_CLOSE_QUOTE:
        return ExprSyntaxError("unclosed string", col, hint=f"add the closing {_OPEN_TO_CLOSE_QUOTE[ch]}")
    if ch == "=":
        return ExprSyntaxError("use '==' to compare values, not '='", col)
    if ch == "!":
        return ExprSyntaxError("unexpected '!'", col, hint="write '!=' for 'not equal' or 'not' to negate")
    if text.startswith("&&", pos) or ch == "&":
        return ExprSyntaxError(f"unexpected {ch!r}", col, hint="write 'and' to combine conditions")
    if text.startswith("||", pos) or ch == "|":
        return ExprSyntaxError(f"unexpected {ch!r}", col, hint="write 'or' to combine conditions")
    if ch == "$":
        return ExprSyntaxError(
            "unexpected '$'", col, hint="conditions use argument names directly: write name, not ${name}"
        )
    if ch == "@":
        return ExprSyntaxError("unexpected '@'", col, hint="names start with a letter or '_'")
    return ExprSyntaxError(f"unexpected character {ch!r}", col)


def _describe(token: Token) -> str:
    if token.type == "$END":
        return "the end"
    if token.type in ("_IMPLIES", "_OR", "_AND", "NOT", "IN"):  # as written (ABL also takes AND, OR, ...)
        return repr(str(token))
    return repr(_TOKEN_TEXT.get(token.type, str(token)))


def _unexpected_token(text: str, tokens: list[Token], err: UnexpectedInput, what: str) -> ExprSyntaxError:
    token: Token | None = getattr(err, "token", None)
    at_end = isinstance(err, UnexpectedEOF) or token is None or token.type == "$END"
    if at_end:
        index = len(tokens)
    else:
        index = next((i for i, t in enumerate(tokens) if t.start_pos == token.start_pos), len(tokens))
        token = tokens[index] if index < len(tokens) else token
    prev = tokens[index - 1] if index > 0 else None
    col = (token.start_pos + 1) if not at_end else len(text.rstrip()) + 1

    # Unbalanced brackets are the most useful thing to report.
    openers: list[Token] = []
    for t in tokens[:index]:
        if t.type in _OPENERS:
            openers.append(t)
        elif t.type in _CLOSERS and openers:
            openers.pop()

    if at_end:
        if prev is None:
            return ExprSyntaxError(f"the {what} is empty", 1)
        pcol = prev.start_pos + 1
        if prev.type in _CMP_TOKENS:
            return ExprSyntaxError(f"expected a value after {_describe(prev)}", pcol)
        if prev.type in _ARITH_TOKENS:
            return ExprSyntaxError(f"expected a value after {_describe(prev)}", pcol)
        if prev.type == "NOT" and index >= 3 and str(tokens[index - 2]).lower() == "is" and _ends_value(tokens[index - 3]):
            return ExprSyntaxError("expected 'set' after 'is not'", col, hint=_IS_HINT)
        if prev.type == "NOT" and len(tokens) >= 2 and tokens[index - 2].type != "NOT" and _ends_value(tokens[index - 2]):
            return ExprSyntaxError("expected 'in' after 'not'", pcol, hint="write 'not in' to test membership")
        if prev.type in ("_AND", "_OR", "NOT", "_IMPLIES"):
            return ExprSyntaxError(f"expected a condition after {_describe(prev)}", pcol)
        if prev.type == "_DOT":
            return ExprSyntaxError("expected a name after '.'", pcol, hint="write agent.argument")
        if prev.type in ("_COLON", "_ARROW"):
            return ExprSyntaxError(f"expected a value after {_describe(prev)}", pcol)
        if prev.type == "_COMMA" and not openers:
            return ExprSyntaxError("unexpected ','", pcol)
        if openers:
            opener = openers[-1]
            closer = _TOKEN_TEXT[_OPENERS[opener.type]]
            return ExprSyntaxError(
                f"unclosed {_describe(opener)}", opener.start_pos + 1, hint=f"add the matching {closer!r}"
            )
        if prev.type == "NAME" and index >= 2:
            before = tokens[index - 2]
            if str(prev).lower() == "is" and _ends_value(before):
                return ExprSyntaxError("expected 'set' or 'not set' after 'is'", pcol, hint=_IS_HINT)
            if before.type == "NAME" and str(before).lower() == "is" and index >= 3 and _ends_value(tokens[index - 3]):
                return ExprSyntaxError("expected 'set' after 'is not'", pcol, hint=_IS_HINT)
            if _ends_value(before):
                return _operator_expected(prev, pcol)
        return ExprSyntaxError(f"the {what} ends too early", col)

    assert token is not None
    desc = _describe(token)
    if token.type in _CLOSERS:
        want = _CLOSERS[token.type]
        if not openers or openers[-1].type != want:
            if prev is not None and prev.type in _CMP_TOKENS | _ARITH_TOKENS | {"_AND", "_OR", "NOT", "_COMMA", "_IMPLIES"}:
                return ExprSyntaxError(f"expected a value after {_describe(prev)} but found {desc}", col)
            return ExprSyntaxError(f"unmatched {desc}", col)
    if prev is not None and prev.type in _CMP_TOKENS | _ARITH_TOKENS | {"_COLON", "_ARROW"}:
        return ExprSyntaxError(f"expected a value after {_describe(prev)} but found {desc}", col)
    if prev is not None and prev.type in ("_AND", "_OR", "_IMPLIES"):
        return ExprSyntaxError(f"expected a condition after {_describe(prev)} but found {desc}", col)
    if prev is not None and prev.type == "NOT" and token.type != "IN":
        if index >= 2 and _ends_value(tokens[index - 2]):
            return ExprSyntaxError("expected 'in' after 'not'", prev.start_pos + 1, hint="write 'not in'")
        return ExprSyntaxError(f"expected a condition after 'not' but found {desc}", col)
    if prev is not None and prev.type == "_DOT":
        return ExprSyntaxError(f"expected a name after '.' but found {desc}", col, hint="write agent.argument")
    if prev is None:
        return ExprSyntaxError(f"a {what} cannot start with {desc}", col)
    if token.type in _CMP_TOKENS and _after_comparison(tokens, index):
        return ExprSyntaxError(
            "comparisons cannot be chained", col, hint="split them with 'and', e.g. 1 < x and x < 10"
        )
    if token.type == "_ARROW":
        return ExprSyntaxError(
            "'=>' can only follow the item name in filter, map, sort_by, any, all, find or count", col,
            hint=_EACH_EXAMPLE,
        )
    if token.type == "NAME" and _ends_value(prev):
        word = str(token)
        if word.lower() in _KEYWORDS:
            return ExprSyntaxError(f"write {word.lower()!r} in lower case", col)
        if prev.type == "NAME" and str(prev).lower() == "is":
            return ExprSyntaxError("'is' can only be used as 'is set' or 'is not set'", prev.start_pos + 1,
                                   hint=_IS_HINT)
    if token.type in _VALUE_START_TOKENS and _ends_value(prev):
        return _operator_expected(token, col)
    if token.type == "_COMMA" and not openers:
        return ExprSyntaxError("unexpected ','", col, hint="put lists in brackets: [1, 2]")
    return ExprSyntaxError(f"unexpected {desc}", col)


_IS_HINT = "write 'x is set' or 'x is not set'; compare with None using '== None'"


def _operator_expected(token: Token, col: int) -> ExprSyntaxError:
    word = str(token)
    if token.type == "NAME" and word.lower() in _KEYWORDS:
        return ExprSyntaxError(f"write {word.lower()!r} in lower case", col)
    return ExprSyntaxError(
        f"expected an operator before {_describe(token)}",
        col,
        hint="compare with ==, !=, <, >, <=, >=, in, not in; combine with and / or; quote text with spaces",
    )


def _ends_value(token: Token) -> bool:
    return token.type in ("NAME", "STRING", "RAW_STRING", "NUMBER", "_RPAR", "_RSQB", "_RBRACE")


def _after_comparison(tokens: list[Token], index: int) -> bool:
    """Whether a comparison operator already occurs in the current operand chain before `index`."""
    depth = 0
    for t in reversed(tokens[:index]):
        if t.type in _CLOSERS:
            depth += 1
        elif t.type in _OPENERS:
            if depth == 0:
                return False
            depth -= 1
        elif depth == 0 and t.type in ("_AND", "_OR", "_COMMA", "_IMPLIES"):
            return False
        elif depth == 0 and t.type in _CMP_TOKENS:
            return True
    return False


_NESTING_RULES = frozenset({
    "or_", "and_", "not_", "compare", "call", "list", "implies", "is_test", "arith", "neg", "attr", "index",
    "obj", "lambda", "word_test", "dot_index",
})


def _check_depth(tree: Tree) -> None:
    """Reject trees nested deeper than MAX_NESTING_DEPTH (walked without recursion)."""
    stack: list[tuple[Any, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, Tree):
            continue
        if node.data in _NESTING_RULES:
            depth += 1
            if depth > MAX_NESTING_DEPTH:
                column = getattr(node.meta, "start_pos", 0) + 1 if not node.meta.empty else 1
                raise ExprSyntaxError(
                    f"the expression is nested too deeply (more than {MAX_NESTING_DEPTH} levels)", column
                )
        for child in node.children:
            stack.append((child, depth))


class _Converter:
    """Turns a lark parse tree into IR expressions, resolving names and checking calls against the registry."""

    def __init__(self, agent: str, locals: frozenset[str], paths: PathMode, abl: AblNames | None = None,
                 patterns: dict[int, str] | None = None) -> None:
        self.agent = agent
        self.locals = locals
        self.paths = paths
        self.abl = abl  # None: ADL (or Handlebars with `paths`); else ABL's names
        self.patterns = patterns or {}  # ABL regex literals by the start of their placeholder

    def convert(self, node: Tree) -> Expr:
        kind = node.data
        if kind in ("or_", "and_"):
            items = [self.convert(child) for child in node.children if isinstance(child, Tree)]
            return BoolOp(op="or" if kind == "or_" else "and", items=items)
        if kind == "not_":
            return Not(item=self.convert(node.children[-1]))
        if kind == "implies":
            left, right = node.children
            return Implies(left=self.convert(left), right=self.convert(right))
        if kind == "compare":
            left, op_tree, right = node.children
            op = " ".join(str(t).lower() if t.type in ("NOT", "IN") else str(t) for t in op_tree.children)
            return Compare(cmp=op, left=self.convert(left), right=self.convert(right))
        if kind == "is_test":
            return self._is_test(node)
        if kind == "arith":
            left, op, right = node.children
            return Arith(arith=str(op), left=self.convert(left), right=self.convert(right))
        if kind == "neg":
            item = self.convert(node.children[-1])
            if isinstance(item, Lit) and isinstance(item.value, (int, float)) and not isinstance(item.value, bool):
                return Lit(value=-item.value)
            return Neg(item=item)
        if kind in ("name", "attr", "index", "dot_index"):
            return self._postfix(node)
        if kind in ("string", "raw_string"):
            token = node.children[0]
            if token.start_pos in self.patterns:
                return Lit(value=self.patterns[token.start_pos])
            return Lit(value=_string_value(token))
        if kind == "word_test":
            return self._word_test(node)
        if kind == "number":
            try:
                return Lit(value=_number_value(str(node.children[0])))
            except ValueError:
                raise ExprSyntaxError("this number is too long", _column(node)) from None
        if kind == "list":
            return self._list(node)
        if kind == "obj":
            return self._obj(node)
        if kind == "call":
            return self._call(node)
        if kind == "lambda":
            raise ExprSyntaxError(
                "'item => ...' can only be an argument of filter, map, sort_by, any, all, find or count",
                _column(node), hint=_EACH_EXAMPLE,
            )
        raise ExprSyntaxError(f"unsupported construct {kind!r}", _column(node))  # pragma: no cover

    # -- names, members and indexes ------------------------------------------------------

    def _postfix(self, node: Tree) -> Expr:
        """A name followed by `.member` / `[index]` parts, or members of any other value."""
        trailers: list[Tree] = []
        root: Any = node
        while isinstance(root, Tree) and root.data in ("attr", "index", "dot_index"):
            trailers.append(root)
            root = root.children[0]
        trailers.reverse()
        if not (isinstance(root, Tree) and root.data == "name"):
            expr = self.convert(root)
            return self._apply(expr, trailers)
        token = root.children[0]
        first = str(token)
        column = _column(root)
        if first in self.locals:
            return self._apply(Local(name=first), trailers)
        if first.startswith("@"):
            raise ExprSyntaxError(f"{first!r} can only be used inside {{{{#each}}}}", column,
                                  hint="names start with a letter or '_'")
        dotted = [first]
        for trailer in trailers:
            if trailer.data != "attr":
                break
            dotted.append(str(trailer.children[1]))
        if self.abl is not None:
            return self._abl_name(dotted, trailers, column)
        if first in LITERAL_WORDS:
            if not trailers:
                return Lit(value=LITERAL_WORDS[first])
            raise ExprSyntaxError(f"{first!r} is a value and cannot be part of a name like {'.'.join(dotted)!r}",
                                  column)
        if self.paths == "flat" or len(dotted) == 1:
            return self._apply(Ref(scope=self.agent, name=first), trailers)
        second = dotted[1]
        if second in LITERAL_WORDS:
            raise ExprSyntaxError(f"{second!r} is a value and cannot be part of a name like {'.'.join(dotted)!r}",
                                  column)
        return self._apply(Ref(scope=first, name=second), trailers[1:])

    def _apply(self, expr: Expr, trailers: list[Tree]) -> Expr:
        for trailer in trailers:
            if trailer.data == "attr":
                key: Expr = Lit(value=str(trailer.children[1]))
            elif trailer.data == "dot_index":
                key = Lit(value=_dot_index(trailer))
            else:
                key = self.convert(trailer.children[1])
            expr = Get(obj=expr, key=key)
        return expr

    def _abl_name(self, dotted: list[str], trailers: list[Tree], column: int) -> Expr:
        """An ABL name with its members: `x` and `a.b` are session variables (`a`, then member `b`),
        except the roots ABL gives a meaning (session., system., context., result., input, match,
        last_<tool>_result, declared tools and persistent memory paths, system-assigned variables)."""
        assert self.abl is not None
        first = dotted[0]
        if first in ABL_LITERAL_WORDS:
            if not trailers:
                return Lit(value=ABL_LITERAL_WORDS[first])
            raise ExprSyntaxError(f"{first!r} is a value and cannot be part of a name like {'.'.join(dotted)!r}",
                                  column)
        two = len(dotted) >= 2
        if first == "session" and two:
            return self._apply(Ref(space="var", scope="session", name=dotted[1]), trailers[1:])
        if first in ABL_SYSTEM_ROOTS and two:
            return self._apply(Ref(space="system", scope="system", name=dotted[1]), trailers[1:])
        if first == "result" and two:
            return self._apply(Ref(space="result", scope="result", name=dotted[1]), trailers[1:])
        last = _LAST_RESULT.fullmatch(first)
        if last is not None or first in self.abl.tools:
            tool = last.group(1) if last is not None else first
            if two:
                return self._apply(Ref(space="result", scope=tool, name=dotted[1]), trailers[1:])
            return self._apply(Ref(space="result", scope=tool, name="value"), trailers)
        memory = self._abl_memory(dotted)
        if memory is not None:
            ref, used = memory
            return self._apply(ref, trailers[used - 1:])
        if two and (first, dotted[1]) in ABL_SYSTEM_PATHS:
            return self._apply(Ref(space="system", scope="system", name=f"{first}.{dotted[1]}"), trailers[1:])
        if first in ABL_SYSTEM_VARIABLES or first.startswith("_"):
            return self._apply(Ref(space="system", scope="system", name=first), trailers)
        if first in ABL_INTENT_WORDS and not trailers:
            return Call(fn=ABL_INTENT_WORDS[first], args=[Ref(space="system", scope="system", name="input")])
        if first.startswith("@"):
            raise ExprSyntaxError(f"{first!r} can only be used inside {{{{#each}}}}", column,
                                  hint="names start with a letter or '_'")
        return self._apply(Ref(space="var", scope="session", name=first), trailers)

    def _abl_memory(self, dotted: list[str]) -> tuple[Ref, int] | None:
        """A declared persistent path that `dotted` starts with (the longest), as a memory Ref and the
        number of parts it used; None when memory paths were not given or none matches."""
        paths = self.abl.memory_paths if self.abl is not None else None
        if not paths or dotted[0] not in MEMORY_ROOTS or len(dotted) < 2:
            return None
        for used in range(len(dotted), 1, -1):
            path = ".".join(dotted[:used])
            if path in paths:
                return Ref(space="memory", scope=paths[path], name=".".join(dotted[1:used])), used
        return None

    def _word_test(self, node: Tree) -> Expr:
        """`x matches "re"` / `x matches /re/` (ABL) and `x contains "text"`."""
        subject, word, pattern = node.children
        fn = ABL_WORD_TESTS.get(str(word).lower()) if self.abl is not None else None
        if fn is None:
            raise _operator_expected(pattern, _column(pattern))
        pattern_tree = _token_tree("string" if pattern.type == "STRING" else "raw_string", pattern)
        return self._registered_call(fn, [subject, pattern_tree], _column(word))

    def _is_test(self, node: Tree) -> Expr:
        subject, *words = node.children
        is_word = words[0]
        if str(is_word).lower() != "is":
            second = words[1] if len(words) > 1 else None
            if second is not None and second.type == "NOT":
                raise ExprSyntaxError("expected 'in' after 'not'", _column(second), hint="write 'not in'")
            raise _operator_expected(is_word, _column(is_word))
        negated = len(words) == 3
        if negated and str(words[1]).lower() != "not":
            raise ExprSyntaxError("expected 'set' or 'not set' after 'is'", _column(words[1]), hint=_IS_HINT)
        last = words[-1]
        if str(last).lower() != "set":
            if str(last) in LITERAL_WORDS or len(words) == 2 and str(last).lower() == "none":
                raise ExprSyntaxError("'is' can only be used as 'is set' or 'is not set'", _column(is_word),
                                      hint=_IS_HINT)
            raise ExprSyntaxError(f"expected 'set' after {'is not' if negated else 'is'}", _column(last),
                                  hint=_IS_HINT)
        test = IsSet(item=self.convert(subject))
        return Not(item=test) if negated else test

    # -- literals --------------------------------------------------------------------------

    def _list(self, node: Tree) -> Expr:
        args = node.children[0]
        items = [self.convert(child) for child in (args.children if args is not None else [])]
        if all(isinstance(item, Lit) for item in items):
            return Lit(value=[item.value for item in items])  # type: ignore[union-attr]
        return ListLit(items=items)

    def _obj(self, node: Tree) -> Expr:
        entries_tree = node.children[0]
        entries: list[ObjEntry] = []
        seen: set[str] = set()
        for entry in entries_tree.children if entries_tree is not None else []:
            if entry.data == "shorthand_entry":  # ABL `{destination, price: total}`: the key is the name
                key_token = entry.children[0]
                value_tree = Tree("name", [key_token], meta=entry.meta)
            else:
                key_token, value_tree = entry.children
            key = _string_value(key_token) if key_token.type == "STRING" else str(key_token)
            if key in seen:
                raise ExprSyntaxError(f"the key {key!r} is given twice", _column(key_token))
            seen.add(key)
            entries.append(ObjEntry(key=key, value=self.convert(value_tree)))
        if all(isinstance(e.value, Lit) for e in entries):
            return Lit(value={e.key: e.value.value for e in entries})  # type: ignore[union-attr]
        return ObjLit(entries=entries)

    # -- calls -----------------------------------------------------------------------------

    def _call(self, node: Tree) -> Expr:
        callee, args_tree = node.children
        fn = _dotted_name(callee)
        column = _column(node)
        if self.abl is not None and isinstance(callee, Tree) and callee.data == "attr" and \
                (fn is None or functions.lookup(fn) is None) and str(callee.children[1]) in ABL_METHODS:
            # ABL's method tests: `input.contains("change")` is CONTAINS(input, "change")
            arg_trees = list(args_tree.children) if args_tree is not None else []
            method = ABL_METHODS[str(callee.children[1])]
            return self._registered_call(method, [callee.children[0], *arg_trees], _column(callee.children[1]))
        if fn is None:
            raise ExprSyntaxError("only functions can be called", column,
                                  hint="call a function by its name, e.g. len(x)")
        arg_trees = list(args_tree.children) if args_tree is not None else []
        if fn.lower() in EACH_FORMS and fn.split(".")[0] not in self.locals:
            return self._each(EACH_FORMS[fn.lower()], fn, arg_trees, column)
        for tree in arg_trees:
            if isinstance(tree, Tree) and tree.data == "lambda":
                raise ExprSyntaxError(
                    f"{fn}() does not take a function of each item", _column(tree), hint=_EACH_EXAMPLE
                )
        return self._registered_call(fn, arg_trees, column)

    def _registered_call(self, fn: str, arg_trees: list[Any], column: int) -> Expr:
        """A call of the registry's function `fn`: known name, number of arguments, literal checks."""
        spec = functions.lookup(fn)
        if spec is None:
            known = known_function_names()
            guess = did_you_mean(fn, known) or did_you_mean(fn.lower(), [k.lower() for k in known])
            raise ExprSyntaxError(
                f"unknown function {fn!r}; known functions: {', '.join(known)}",
                column,
                hint=f"did you mean {_registered_name(guess)!r}?" if guess else None,
            )
        problem = spec.arity_error(len(arg_trees))
        if problem is not None:
            raise ExprSyntaxError(problem, column)
        args = [self.convert(child) for child in arg_trees]
        for index, (arg, tree) in enumerate(zip(args, arg_trees)):
            param = spec.param_at(index)
            if param is not None and param.check is not None and isinstance(arg, Lit):
                message = param.check(arg.value)
                if message:
                    if message.startswith("must "):
                        message = f"the {param.name} of {spec.name}() {message}"
                    raise ExprSyntaxError(message, _column(tree))
        return Call(fn=spec.name, args=args)

    def _each(self, kind: str, written: str, arg_trees: list[Any], column: int) -> Each:
        usage = f"{written}(items, item => ...)" + (" with an optional \"desc\"" if kind == "sort_by" else "")
        max_args = 3 if kind == "sort_by" else 2
        if not 2 <= len(arg_trees) <= max_args:
            raise ExprSyntaxError(f"{written}() takes a list and a function of each item: {usage}", column,
                                  hint=_EACH_EXAMPLE)
        source_tree, fn_tree = arg_trees[0], arg_trees[1]
        if not (isinstance(fn_tree, Tree) and fn_tree.data == "lambda"):
            raise ExprSyntaxError(f"the second argument of {written}() must be a function of each item: "
                                  f"item => ...", _column(fn_tree), hint=_EACH_EXAMPLE)
        if isinstance(source_tree, Tree) and source_tree.data == "lambda":
            raise ExprSyntaxError(f"the first argument of {written}() must be a list", _column(source_tree),
                                  hint=_EACH_EXAMPLE)
        var_token, body_tree = fn_tree.children
        var = str(var_token)
        if var in LITERAL_WORDS:
            raise ExprSyntaxError(f"{var!r} is a value and cannot name an item", _column(var_token))
        source = self.convert(source_tree)
        inner = _Converter(self.agent, self.locals | {var}, self.paths, self.abl, self.patterns)
        body = inner.convert(body_tree)
        descending = False
        if len(arg_trees) == 3:
            direction = self.convert(arg_trees[2])
            if isinstance(direction, Lit) and isinstance(direction.value, bool):
                descending = direction.value
            elif isinstance(direction, Lit) and isinstance(direction.value, str) and \
                    direction.value.strip().lower() in _SORT_DIRECTIONS:
                descending = _SORT_DIRECTIONS[direction.value.strip().lower()]
            else:
                raise ExprSyntaxError('the direction of sort_by() must be "asc" or "desc"', _column(arg_trees[2]))
        return Each(kind=kind, source=source, var=var, body=body, descending=descending)


def _registered_name(name: str | None) -> str | None:
    if name is None:
        return None
    if name.lower() in EACH_FORMS:
        return name
    spec = functions.lookup(name)
    return spec.name if spec is not None else name


def _dotted_name(node: Any) -> str | None:
    """`re.match` for the callee tree of a call, or None when the callee is not a (dotted) name."""
    parts: list[str] = []
    while isinstance(node, Tree) and node.data == "attr":
        parts.append(str(node.children[1]))
        node = node.children[0]
    if not (isinstance(node, Tree) and node.data == "name"):
        return None
    parts.append(str(node.children[0]))
    return ".".join(reversed(parts))


def _column(node: Any) -> int:
    if isinstance(node, Token):
        return (node.start_pos or 0) + 1
    if isinstance(node, Tree) and not node.meta.empty:
        return node.meta.start_pos + 1
    return 1


def _token_tree(kind: str, token: Token) -> Tree:
    """A one-token tree (with the token's position) for a token the grammar did not wrap."""
    meta = Meta()
    meta.empty = False
    meta.start_pos, meta.end_pos = token.start_pos, token.end_pos
    meta.line, meta.column = token.line, token.column
    return Tree(kind, [token], meta=meta)


def _dot_index(trailer: Tree) -> int:
    """The index of ABL's `match.0`: a number token `.0` written right after the value."""
    token = trailer.children[1]
    text = str(token)
    obj = trailer.children[0]
    end = obj.meta.end_pos if isinstance(obj, Tree) and not obj.meta.empty else None
    if not re.fullmatch(r"\.\d+", text) or (end is not None and token.start_pos != end):
        raise _operator_expected(token, _column(token))
    return int(text[1:])


def _number_value(text: str) -> int | float:
    if any(c in text for c in ".eE"):
        return float(text)
    return int(text)
