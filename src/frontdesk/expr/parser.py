"""Parsing of condition and value text (ADL `if:`, `set:`, call arguments) into IR expressions."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput

from frontdesk.diagnostics import did_you_mean
from frontdesk.ir.models import (
    BoolOp,
    Call,
    ClaimsCondition,
    Compare,
    Condition,
    Expr,
    ExprCondition,
    Lit,
    Not,
    Ref,
)

MAX_NESTING_DEPTH = 64
MAX_TEXT_LENGTH = 10_000

# Allowed functions and the parameters they take (names are only used in messages).
KNOWN_FUNCTIONS: dict[str, tuple[str, ...]] = {
    "re.match": ("pattern", "value"),
    "re.search": ("pattern", "value"),
    "re.fullmatch": ("pattern", "value"),
    "len": ("value",),
    "lower": ("value",),
    "upper": ("value",),
    "str": ("value",),
    "int": ("value",),
    "float": ("value",),
}
REGEX_FUNCTIONS = frozenset({"re.match", "re.search", "re.fullmatch"})

LITERAL_WORDS: dict[str, Any] = {
    "None": None,
    "null": None,
    "True": True,
    "true": True,
    "False": False,
    "false": False,
}

_CLAIMS_PREFIX = re.compile(r"\s*the\s+user\s+claims\b", re.IGNORECASE)
_CLAIMS_ANYWHERE = re.compile(r"\bthe\s+user\s+claims\b", re.IGNORECASE)
_CLAIMS_EXAMPLE_HINT = 'write it like: the user claims "I want a refund", "Give me my money back"'

_SIMPLE_ESCAPES = {"\\": "\\", '"': '"', "'": "'", "n": "\n", "t": "\t", "r": "\r"}
_OPEN_TO_CLOSE_QUOTE = {'"': '"', "'": "'", "\u201c": "\u201d"}

_CMP_TOKENS = {"EQ", "NE", "LE", "GE", "LT", "GT", "IN"}
_VALUE_START_TOKENS = {"NAME", "STRING", "RAW_STRING", "NUMBER", "_LPAR", "_LSQB"}
_TOKEN_TEXT = {
    "_OR": "or",
    "_AND": "and",
    "NOT": "not",
    "IN": "in",
    "_LPAR": "(",
    "_RPAR": ")",
    "_LSQB": "[",
    "_RSQB": "]",
    "_COMMA": ",",
    "_DOT": ".",
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


# ---------------------------------------------------------------------------
# Public entry points
# ---------------------------------------------------------------------------


def parse_condition(text: str, agent: str) -> Condition:
    """Parse an `if:` condition: `the user claims "..."` or an expression over arguments of `agent`."""
    if _CLAIMS_PREFIX.match(text):
        return ClaimsCondition(source=text, examples=_parse_claims(text))
    try:
        expr = _parse(text, agent, what="condition")
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


def parse_expression(text: str, agent: str) -> Expr:
    """Parse a value expression (e.g. a `set:` value or call argument); bare names belong to `agent`."""
    found = _CLAIMS_PREFIX.match(text)
    if found:
        raise ExprSyntaxError(
            "'the user claims' can only be used as an if / else if condition",
            len(text) - len(text.lstrip()) + 1,
        )
    return _parse(text, agent, what="value")


def collect_refs(expr: Expr) -> list[Ref]:
    """Every Ref in `expr`, in source order (duplicates kept)."""
    refs: list[Ref] = []
    stack: list[Any] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, Ref):
            refs.append(node)
        elif isinstance(node, Compare):
            stack.extend((node.right, node.left))
        elif isinstance(node, BoolOp):
            stack.extend(reversed(node.items))
        elif isinstance(node, Not):
            stack.append(node.item)
        elif isinstance(node, Call):
            stack.extend(reversed(node.args))
    return refs


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


def _parse(text: str, agent: str, what: str) -> Expr:
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
    return _Converter(agent).convert(tree)


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
    if ch in "+-*/%":
        return ExprSyntaxError(f"arithmetic ({ch!r}) is not supported here", col)
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
        if t.type in ("_LPAR", "_LSQB"):
            openers.append(t)
        elif t.type in ("_RPAR", "_RSQB") and openers:
            openers.pop()

    if at_end:
        if prev is None:
            return ExprSyntaxError(f"the {what} is empty", 1)
        pcol = prev.start_pos + 1
        if prev.type in _CMP_TOKENS or (prev.type == "IN"):
            return ExprSyntaxError(f"expected a value after {_describe(prev)}", pcol)
        if prev.type == "NOT" and len(tokens) >= 2 and tokens[index - 2].type != "NOT" and _ends_value(tokens[index - 2]):
            return ExprSyntaxError("expected 'in' after 'not'", pcol, hint="write 'not in' to test membership")
        if prev.type in ("_AND", "_OR", "NOT"):
            return ExprSyntaxError(f"expected a condition after {_describe(prev)}", pcol)
        if prev.type == "_DOT":
            return ExprSyntaxError("expected a name after '.'", pcol, hint="write agent.argument")
        if prev.type == "_COMMA" and not openers:
            return ExprSyntaxError("unexpected ','", pcol)
        if openers:
            opener = openers[-1]
            closer = ")" if opener.type == "_LPAR" else "]"
            return ExprSyntaxError(
                f"unclosed {_describe(opener)}", opener.start_pos + 1, hint=f"add the matching {closer!r}"
            )
        return ExprSyntaxError(f"the {what} ends too early", col)

    assert token is not None
    desc = _describe(token)
    if token.type in ("_RPAR", "_RSQB"):
        want = "_LPAR" if token.type == "_RPAR" else "_LSQB"
        if not openers or openers[-1].type != want:
            if prev is not None and prev.type in _CMP_TOKENS | {"_AND", "_OR", "NOT", "_COMMA"}:
                return ExprSyntaxError(f"expected a value after {_describe(prev)} but found {desc}", col)
            return ExprSyntaxError(f"unmatched {desc}", col)
    if prev is not None and prev.type in _CMP_TOKENS:
        return ExprSyntaxError(f"expected a value after {_describe(prev)} but found {desc}", col)
    if prev is not None and prev.type in ("_AND", "_OR"):
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
    if token.type == "NAME" and _ends_value(prev):
        word = str(token)
        if word == "is":
            return ExprSyntaxError("'is' is not supported", col, hint="write '== None' or '!= None' instead")
        if word.lower() in ("and", "or", "not", "in"):
            return ExprSyntaxError(f"write {word.lower()!r} in lower case", col)
    if token.type in _VALUE_START_TOKENS and _ends_value(prev):
        return ExprSyntaxError(
            f"expected an operator before {desc}",
            col,
            hint="compare with ==, !=, <, >, <=, >=, in, not in; combine with and / or; quote text with spaces",
        )
    if token.type == "_COMMA" and not openers:
        return ExprSyntaxError("unexpected ','", col, hint="put lists in brackets: [1, 2]")
    return ExprSyntaxError(f"unexpected {desc}", col)


def _ends_value(token: Token) -> bool:
    return token.type in ("NAME", "STRING", "RAW_STRING", "NUMBER", "_RPAR", "_RSQB")


def _after_comparison(tokens: list[Token], index: int) -> bool:
    """Whether a comparison operator already occurs in the current operand chain before `index`."""
    depth = 0
    for t in reversed(tokens[:index]):
        if t.type in ("_RPAR", "_RSQB"):
            depth += 1
        elif t.type in ("_LPAR", "_LSQB"):
            if depth == 0:
                return False
            depth -= 1
        elif depth == 0 and t.type in ("_AND", "_OR", "_COMMA"):
            return False
        elif depth == 0 and t.type in _CMP_TOKENS:
            return True
    return False


_NESTING_RULES = frozenset({"or_", "and_", "not_", "compare", "call", "list"})


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
    """Turns a lark parse tree into IR expressions, checking names, calls and regexes."""

    def __init__(self, agent: str) -> None:
        self.agent = agent

    def convert(self, node: Tree) -> Expr:
        kind = node.data
        if kind in ("or_", "and_"):
            items = [self.convert(child) for child in node.children if isinstance(child, Tree)]
            return BoolOp(op="or" if kind == "or_" else "and", items=items)
        if kind == "not_":
            return Not(item=self.convert(node.children[-1]))
        if kind == "compare":
            left, op_tree, right = node.children
            op = " ".join(str(t) for t in op_tree.children)
            return Compare(cmp=op, left=self.convert(left), right=self.convert(right))
        if kind == "path":
            return self._path(node)
        if kind in ("string", "raw_string"):
            return Lit(value=_string_value(node.children[0]))
        if kind == "number":
            try:
                return Lit(value=_number_value(str(node.children[0])))
            except ValueError:
                raise ExprSyntaxError("this number is too long", _column(node)) from None
        if kind == "list":
            return self._list(node)
        if kind == "call":
            return self._call(node)
        raise ExprSyntaxError(f"unsupported construct {kind!r}", _column(node))  # pragma: no cover

    def _path(self, node: Tree) -> Expr:
        parts = [str(t) for t in node.children]
        column = _column(node)
        if len(parts) == 1:
            name = parts[0]
            if name in LITERAL_WORDS:
                return Lit(value=LITERAL_WORDS[name])
            return Ref(scope=self.agent, name=name)
        for part in parts:
            if part in LITERAL_WORDS:
                raise ExprSyntaxError(f"{part!r} is a value and cannot be part of a name like {'.'.join(parts)!r}", column)
        if len(parts) > 2:
            raise ExprSyntaxError(
                f"{'.'.join(parts)!r} has too many parts",
                column,
                hint="refer to an argument as name or agent.name",
            )
        return Ref(scope=parts[0], name=parts[1])

    def _list(self, node: Tree) -> Lit:
        args = node.children[0]
        values: list[Any] = []
        for child in args.children if args is not None else []:
            item = self.convert(child)
            if not isinstance(item, Lit):
                raise ExprSyntaxError(
                    "list items must be fixed values (text, numbers, True, False, None)", _column(child)
                )
            values.append(item.value)
        return Lit(value=values)

    def _call(self, node: Tree) -> Call:
        path_tree, args_tree = node.children
        fn = ".".join(str(t) for t in path_tree.children)
        column = _column(node)
        if fn not in KNOWN_FUNCTIONS:
            known = ", ".join(sorted(KNOWN_FUNCTIONS))
            guess = did_you_mean(fn, KNOWN_FUNCTIONS)
            raise ExprSyntaxError(
                f"unknown function {fn!r}; known functions: {known}",
                column,
                hint=f"did you mean {guess!r}?" if guess else None,
            )
        arg_trees = list(args_tree.children) if args_tree is not None else []
        params = KNOWN_FUNCTIONS[fn]
        if len(arg_trees) != len(params):
            plural = "argument" if len(params) == 1 else "arguments"
            raise ExprSyntaxError(
                f"{fn}() takes {len(params)} {plural} ({', '.join(params)}), but {len(arg_trees)} given",
                column,
            )
        args = [self.convert(child) for child in arg_trees]
        if fn in REGEX_FUNCTIONS and isinstance(args[0], Lit):
            pattern = args[0].value
            if not isinstance(pattern, str):
                raise ExprSyntaxError(f"the pattern of {fn}() must be text in quotes", _column(arg_trees[0]))
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ExprSyntaxError(f"invalid regular expression: {exc}", _column(arg_trees[0])) from None
        return Call(fn=fn, args=args)


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
