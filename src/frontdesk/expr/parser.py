"""Parsing of condition and value text (ADL `if:`, `set:`, call arguments, template holes) into IR expressions."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput

from frontdesk.diagnostics import did_you_mean
from frontdesk.expr import functions
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


def known_function_names() -> list[str]:
    """Every function a call may name: the registry's and the item-wise forms."""
    return sorted(set(functions.function_names()) | set(EACH_FORMS), key=str.lower)


# ---------------------------------------------------------------------------
# Public entry points
# ---------------------------------------------------------------------------


def parse_condition(text: str, agent: str, *, locals: Iterable[str] = (), paths: PathMode = "scoped") -> Condition:
    """Parse an `if:` condition: `the user claims "..."` or an expression over arguments of `agent`.

    `locals` are names bound by an enclosing item-wise operation (they read as Local);
    `paths` says how dotted names are read (see PathMode).
    """
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


def parse_expression(text: str, agent: str, *, locals: Iterable[str] = (), paths: PathMode = "scoped") -> Expr:
    """Parse a value expression (e.g. a `set:` value or call argument); bare names belong to `agent`."""
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


def _parse(text: str, agent: str, what: str, locals: Iterable[str] = (), paths: PathMode = "scoped") -> Expr:
    if not text.strip():
        raise ExprSyntaxError(f"the {what} is empty", 1)
    if len(text) > MAX_TEXT_LENGTH:
        raise ExprSyntaxError(f"the {what} is too long (more than {MAX_TEXT_LENGTH} characters)", MAX_TEXT_LENGTH + 1)
    parser = _lark()
    try:
        tokens = list(parser.lex(text))
    except UnexpectedCharacters as err:
        raise _bad_character(text, err.pos_in_stream) from None
    try:
        tree = parser.parse(text)
    except UnexpectedInput as err:
        raise _unexpected_token(text, tokens, err, what) from None
    _check_depth(tree)
    return _Converter(agent, frozenset(locals), paths).convert(tree)


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
    "obj", "lambda",
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

    def __init__(self, agent: str, locals: frozenset[str], paths: PathMode) -> None:
        self.agent = agent
        self.locals = locals
        self.paths = paths

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
            op = " ".join(str(t) for t in op_tree.children)
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
        if kind in ("name", "attr", "index"):
            return self._postfix(node)
        if kind in ("string", "raw_string"):
            return Lit(value=_string_value(node.children[0]))
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
        while isinstance(root, Tree) and root.data in ("attr", "index"):
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
            else:
                key = self.convert(trailer.children[1])
            expr = Get(obj=expr, key=key)
        return expr

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
        inner = _Converter(self.agent, self.locals | {var}, self.paths)
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


def _number_value(text: str) -> int | float:
    if any(c in text for c in ".eE"):
        return float(text)
    return int(text)
