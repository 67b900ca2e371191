"""ACDL text to syntax tree: tokenising, the LALR parse, syntax diagnostics and comment attachment."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from lark import Lark, Token, Transformer_NonRecursive, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken, VisitError

from frontdesk.diagnostics import Diagnostic, DiagnosticBag, Span

from . import codes
from .ast import (
    BLANK_LINE_BEFORE,
    ROLES,
    BinaryOp,
    BoolOp,
    Break,
    Comment,
    Compare,
    ContextVar,
    Continue,
    File,
    ForEach,
    FragInvoke,
    FunctionCall,
    If,
    IfBranch,
    ImplicitRange,
    ListComprehension,
    Literal,
    Mark,
    NameDef,
    NameRef,
    Not,
    Paren,
    PathSegment,
    PlainName,
    PromptEndsHere,
    PromptSpec,
    RoleMessage,
    RolesFragDef,
    StrFragDef,
    Switch,
    SwitchCase,
    Template,
    TimeIndex,
    TimeName,
    UnaryOp,
    walk,
)

__all__ = ["parse_syntax", "is_all_caps", "resolve_fragment_kinds"]

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_ALL_CAPS_RE = re.compile(r"[A-Z][A-Z0-9_]*\Z")

# Human names of terminals, for "expected ..." messages.
_TOKEN_TEXT = {
    "NAME": "a name",
    "TIME": "a time index like @T",
    "DOLLAR_NAME": "a $name",
    "TIME_NAME": "a Name used as a time index, like @$C",
    "NUMBER": "a number",
    "STRING": "a string",
    "ROLE": "a role marker like U:",
    "COMMENT": "a comment",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "_LPAR": "'('",
    "_RPAR": "')'",
    "_LSQB": "'['",
    "_RSQB": "']'",
    "_COLON": "':'",
    "_COMMA": "','",
    "_DOT": "'.'",
    "_ASSIGN": "':='",
    "CMP_OP": "a comparison",
    "ADD_OP": "'+' or '-'",
    "MUL_OP": "'*', '/' or '%'",
    "_FOREACH": "'ForEach'",
    "_IF": "'If'",
    "_ELSEIF": "'ElseIf'",
    "_ELSE": "'Else'",
    "_SWITCH": "'Switch'",
    "_CASE": "'Case'",
    "_DEFAULT": "'Default'",
    "_MARK": "'Mark'",
    "_NAME_KW": "'Name'",
    "_FRAG": "'Frag'",
    "_STRFRAG": "'StrFrag'",
    "_ROLESFRAG": "'RolesFrag'",
    "_ROLEFRAG": "'RoleFrag'",
    "_PROMPTENDSHERE": "'PromptEndsHere'",
    "_WHEN": "'when'",
    "_FOR": "'for'",
    "_IN": "'in'",
    "$END": "end of file",
}
# Terminals worth listing when saying what was expected (the rest is noise from LALR lookahead sets).
_EXPECTED_ORDER = [
    "RBRACE", "LBRACE", "_COLON", "_RPAR", "_RSQB", "_COMMA", "_ASSIGN", "NAME", "TIME", "NUMBER",
    "STRING", "ROLE", "_WHEN", "_IN", "_FOR",
]


def is_all_caps(name: str) -> bool:
    """True for template-style names: capitals, digits and underscores, starting with a capital."""
    return bool(_ALL_CAPS_RE.match(name))


@lru_cache(maxsize=1)
def _lark() -> Lark:
    grammar = (Path(__file__).parent / "grammar.lark").read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr", lexer="basic", propagate_positions=True, maybe_placeholders=False)


MAX_NESTING = 64
# levels of the parse tree (a sum of n terms is n levels deep): the checker and renderers recurse on it
MAX_TREE_DEPTH = 600


def _too_deep(tokens: list[Token]) -> Token | None:
    """The first opening bracket that goes deeper than MAX_NESTING, if any."""
    depth = 0
    for token in tokens:
        if token.type in ("LBRACE", "_LPAR", "_LSQB"):
            depth += 1
            if depth > MAX_NESTING:
                return token
        elif token.type in ("RBRACE", "_RPAR", "_RSQB"):
            depth = max(0, depth - 1)
    return None


def normalize_newlines(text: str) -> str:
    """CRLF and lone CR become LF (line numbers stay what editors show)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


# ---------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------


def parse_syntax(text: str, filename: str = "<acdl>") -> tuple[File | None, list[Diagnostic]]:
    """Parse ACDL text into a File; on a syntax error return None and one precise diagnostic.

    Diagnostics found while building the tree (malformed elements, empty roles, Switch order...)
    come back with the File. Fragment invocation kinds are resolved before returning.
    """
    text = normalize_newlines(text)
    bag = DiagnosticBag()
    try:
        raw_tokens = list(_lark().lex(text))
    except UnexpectedCharacters as exc:
        bag.add(_character_error(exc, text, filename))
        return None, bag.sorted()
    tokens = _adjust_tokens(raw_tokens)
    too_deep = _too_deep(tokens)
    if too_deep is not None:
        bag.error(
            codes.SYNTAX, f"blocks and brackets nest more than {MAX_NESTING} levels deep", _span_of(too_deep, filename),
            hint="split the specification into fragments (StrFrag / RolesFrag) or Name definitions",
        )
        return None, bag.sorted()
    parser = _lark().parse_interactive()
    index = 0
    try:
        for index, token in enumerate(tokens):
            parser.feed_token(token)
        index = len(tokens)
        tree = parser.feed_eof(tokens[-1] if tokens else None)
    except UnexpectedToken as exc:
        bag.add(_token_error(exc, tokens, index, filename, text.split("\n")))
        return None, bag.sorted()
    except UnexpectedInput as exc:  # pragma: no cover - other lark errors, kept precise anyway
        bag.error(codes.SYNTAX, str(exc).splitlines()[0], Span(file=filename, line=exc.line, column=exc.column))
        return None, bag.sorted()
    deep = _deeper_than(tree, MAX_TREE_DEPTH)
    if deep is not None:  # the checks that follow recurse on the tree: refuse it here, where it is
        meta = deep.meta
        bag.error(
            codes.SYNTAX, f"an expression is too long or nests too deeply to read (more than {MAX_TREE_DEPTH} levels)",
            Span(file=filename, line=meta.line, column=meta.column) if not meta.empty else Span(file=filename),
            hint="split long expressions with Name definitions",
        )
        return None, bag.sorted()
    builder = _TreeBuilder(filename, text, bag)
    try:
        file_node = builder.transform(tree)
    except VisitError as exc:  # never a traceback for users
        if isinstance(exc.orig_exc, RecursionError):
            bag.error(
                codes.SYNTAX, "an expression is too long or nests too deeply to read", Span(file=filename),
                hint="split long expressions with Name definitions",
            )
        else:  # pragma: no cover - a bug in the builder
            bag.error(codes.SYNTAX, f"internal error while reading the specification: {exc.orig_exc}", Span(file=filename), hint="please report this")
        return None, bag.sorted()
    resolve_fragment_kinds(file_node)
    return file_node, bag.sorted()


def _deeper_than(tree, limit: int):
    """The first subtree (in document order) lying more than `limit` levels down, or None; read without
    recursion."""
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return node
        stack.extend((child, depth + 1) for child in reversed(node.children) if hasattr(child, "children"))
    return None


# ---------------------------------------------------------------------------
# Token stream adjustments
# ---------------------------------------------------------------------------


def _retyped(token: Token, type_: str, value: str | None = None) -> Token:
    return Token.new_borrow_pos(type_, token.value if value is None else value, token)


def _adjust_tokens(tokens: list[Token]) -> list[Token]:
    """Make the token stream fit the line-insensitive grammar.

    - comments inside ( ) and [ ] are dropped (an expression spread over lines);
    - comments right before `{`, `Else` or `ElseIf` move just after the next `{`, so they land in
      the block they introduce instead of between grammar pieces;
    - a keyword right after `.` or `Name` is an ordinary name (`sys.in`, `env.when`);
    - `T:` right after `(` or `,` is a loop variable and a colon, not a role marker.
    """
    out: list[Token] = []
    pending: list[Token] = []  # comments seen since the last significant token
    held: list[Token] = []  # comments waiting for the next `{`
    depth = 0
    prev: Token | None = None
    for token in tokens:
        if token.type == "COMMENT":
            if depth == 0:
                pending.append(token)
            continue
        if prev is not None and prev.type in ("_DOT", "_NAME_KW") and token.type != "NAME" and _NAME_RE.match(token.value):
            token = _retyped(token, "NAME")
        if token.type == "ROLE" and prev is not None and prev.type in ("_LPAR", "_COMMA", "_LSQB"):
            letter = token.value[0]
            colon_offset = token.value.index(":")
            name_token = Token("NAME", letter, token.start_pos, token.line, token.column, token.line, token.column + 1, token.start_pos + 1)
            colon = Token(
                "_COLON", ":", token.start_pos + colon_offset, token.line, token.column + colon_offset,
                token.line, token.column + colon_offset + 1, token.start_pos + colon_offset + 1,
            )
            out.extend(pending)
            pending = []
            out.extend([name_token, colon])
            prev = colon
            continue
        if token.type in ("LBRACE", "_ELSE", "_ELSEIF") and pending:
            held.extend(pending)
            pending = []
        elif pending:
            out.extend(pending)
            pending = []
        out.append(token)
        if token.type == "LBRACE" and held:
            out.extend(held)
            held = []
        if token.type in ("_LPAR", "_LSQB"):
            depth += 1
        elif token.type in ("_RPAR", "_RSQB") and depth > 0:
            depth -= 1
        elif token.type in ("LBRACE", "RBRACE"):
            depth = 0
        prev = token
    out.extend(held)
    out.extend(pending)
    return out


# ---------------------------------------------------------------------------
# Syntax error diagnostics
# ---------------------------------------------------------------------------


def _span_of(token: Token, filename: str) -> Span:
    return Span(
        file=filename,
        line=token.line or 0,
        column=token.column or 0,
        end_line=token.end_line,
        end_column=token.end_column,
    )


def _character_error(exc: UnexpectedCharacters, text: str, filename: str) -> Diagnostic:
    char = text[exc.pos_in_stream] if 0 <= exc.pos_in_stream < len(text) else ""
    span = Span(file=filename, line=exc.line, column=exc.column, end_line=exc.line, end_column=exc.column + 1)
    if char == "=":
        return Diagnostic(
            codes.SINGLE_EQUALS, "a single '=' is not an ACDL operator", span,
            hint="compare with '==', or bind a name with 'Name x := ...'",
        )
    if char in "\"'":
        return Diagnostic(
            codes.BAD_CHARACTER, "unterminated string", span,
            hint=f"close the string with {char} on the same line",
        )
    if char == "@":
        return Diagnostic(
            codes.BAD_CHARACTER, "'@' must be followed by a time index name or number", span,
            hint="write a time index like @T, @t, @T.I, @t.i or @1",
        )
    if char == "$":
        return Diagnostic(
            codes.BAD_CHARACTER, "'$' must be followed by a defined name", span,
            hint="reference a Name definition like $docs",
        )
    shown = repr(char) if char else "end of input"
    return Diagnostic(
        codes.BAD_CHARACTER, f"unexpected character {shown}", span,
        hint="ACDL uses names, @time indices, $names, numbers, \"strings\", // comments and { } ( ) [ ] , . : := == != < > <= >= & | + - * / %",
    )


def _describe(token: Token) -> str:
    if token.type == "$END":
        return "end of file"
    if token.type == "COMMENT":
        return "a comment"
    return repr(str(token.value))


def _open_brackets(tokens: list[Token], upto: int) -> tuple[list[Token], list[Token]]:
    """The `{` tokens and the `(`/`[` tokens still open before tokens[upto]."""
    braces: list[Token] = []
    parens: list[Token] = []
    for token in tokens[:upto]:
        if token.type == "LBRACE":
            braces.append(token)
            parens = []
        elif token.type == "RBRACE":
            if braces:
                braces.pop()
            parens = []
        elif token.type in ("_LPAR", "_LSQB"):
            parens.append(token)
        elif token.type in ("_RPAR", "_RSQB") and parens:
            parens.pop()
    return braces, parens


def _expected_text(exc: UnexpectedToken, in_brackets: bool = False) -> str:
    expected = set(exc.expected or ())
    try:
        expected = set(exc.interactive_parser.accepts()) if exc.interactive_parser is not None else expected
    except Exception:  # accepts() replays the parser; fall back to the LALR lookahead set
        pass
    if not in_brackets:
        expected -= {"_FOR", "_IN"}  # LALR lookahead shared with list comprehensions
    listed = [_TOKEN_TEXT[t] for t in _EXPECTED_ORDER if t in expected]
    if not listed:
        return ""
    if len(listed) > 5:
        listed = listed[:5] + ["..."]
    return "; expected " + ", ".join(listed)


def _indent(lines: list[str], line: int) -> int:
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return len(text) - len(text.lstrip())


def _likely_unclosed(tokens: list[Token], lines: list[str]) -> Token | None:
    """The `{` most likely missing its `}`: the first one whose `}` (by counting) sits on a line
    indented less than the line that opened it, i.e. a `}` meant for an outer block."""
    stack: list[Token] = []
    for token in tokens:
        if token.type == "LBRACE":
            stack.append(token)
        elif token.type == "RBRACE" and stack:
            opener = stack.pop()
            starts_line = lines[token.line - 1][: token.column - 1].strip() == "" if 0 < token.line <= len(lines) else False
            if starts_line and _indent(lines, token.line) < _indent(lines, opener.line):
                return opener
    return None


def _token_error(exc: UnexpectedToken, tokens: list[Token], index: int, filename: str, lines: list[str]) -> Diagnostic:
    token: Token = exc.token
    prev = tokens[index - 1] if 0 < index <= len(tokens) else None
    braces, parens = _open_brackets(tokens, index)
    if token.type == "$END":
        where = tokens[-1] if tokens else None
        if parens:
            opener = parens[-1]
            return Diagnostic(
                codes.UNCLOSED_PAREN, f"'{opener.value}' is never closed", _span_of(opener, filename),
                hint=f"add '{')' if opener.value == '(' else ']'}' to close it",
            )
        if braces:
            opener = _likely_unclosed(tokens, lines) or braces[-1]
            return Diagnostic(
                codes.UNCLOSED_BRACE, "'{' is never closed", _span_of(opener, filename),
                hint="add '}' to close the block opened here (blocks nest: every '{' needs its '}')",
            )
        if prev is not None and prev.type == "ROLE":
            return _empty_role(prev, filename)
        span = _span_of(where, filename) if where is not None else Span(file=filename, line=1, column=1)
        return Diagnostic(codes.SYNTAX, f"unexpected end of file{_expected_text(exc, bool(parens))}", span)

    span = _span_of(token, filename)
    if parens and token.type in ("LBRACE", "RBRACE"):
        opener = parens[-1]
        closer = ")" if opener.value == "(" else "]"
        return Diagnostic(
            codes.UNCLOSED_PAREN, f"'{opener.value}' is not closed before {_describe(token)}",
            _span_of(opener, filename), hint=f"add '{closer}'",
        )
    if token.type == "RBRACE" and not braces:
        return Diagnostic(codes.UNMATCHED_BRACE, "'}' does not close any block", span, hint="remove it, or add the '{' it should close")
    if prev is not None and prev.type == "ROLE" and token.type in ("RBRACE", "COMMENT"):
        return _empty_role(prev, filename)
    if token.type == "ROLE" and not braces:
        return Diagnostic(
            codes.ROLE_OUTSIDE_SPEC, f"role message '{token.value[0]}:' outside a specification", span,
            hint="put role messages inside a specification: Prompt[@T]: { ... }",
        )
    if token.type == "_COLON" and prev is not None and prev.type in ("NAME", "TIME") and index >= 2 and tokens[index - 2].type == "_NAME_KW":
        return Diagnostic(codes.SYNTAX, "a Name definition binds with ':='", span, hint=f"write 'Name {prev.value} := ...'")
    if token.type == "_COLON" and prev is not None and prev.type == "NAME" and braces:
        name = str(prev.value)
        prev_span = _span_of(prev, filename)
        if name.upper() in ROLES and len(name) == 1:
            return Diagnostic(codes.UNKNOWN_ROLE, f"unknown role '{name}:'", prev_span, hint=f"roles are upper case: write '{name.upper()}:'")
        return Diagnostic(
            codes.UNKNOWN_ROLE, f"unknown role '{name}:'", prev_span,
            hint="the roles are S: (system), U: (user), A: (assistant), T: (tool) and N: (none, completion format)",
        )
    if token.type == "LBRACE" and prev is not None and prev.type == "NAME" and prev.value in ROLES:
        return Diagnostic(
            codes.MISSING_ROLE_COLON, f"missing ':' after role letter '{prev.value}'", _span_of(prev, filename),
            hint=f"write '{prev.value}: {{ ... }}'",
        )
    if token.type in ("_ELSE", "_ELSEIF"):
        return Diagnostic(
            codes.ELSE_WITHOUT_IF, f"'{token.value}' without a matching 'If'", span,
            hint="Else and ElseIf must follow the closing '}' of an If (or ElseIf) block",
        )
    if token.type in ("_CASE", "_DEFAULT"):
        return Diagnostic(
            codes.BAD_SWITCH, f"'{token.value}' outside a Switch block", span,
            hint="write Switch expr { Case value { ... } Default { ... } }",
        )
    hint = None
    opener = _statement_keyword(tokens, index)
    if opener == "_MARK":
        hint = "write Mark 1 { ... }"
    elif opener == "_FOREACH":
        hint = "write ForEach(t: range(1, @T)) { ... } or ForEach(@t: range(1, @T)) { ... }"
    elif opener == "_NAME_KW":
        hint = "write Name x := expression"
    elif opener in ("_STRFRAG", "_ROLESFRAG", "_ROLEFRAG"):
        hint = "write StrFrag Name[params]: { ... } or RolesFrag Name[params]: { ... }"
    elif token.type == "NAME" and prev is not None and prev.type in ("NAME", "TIME", "_RPAR", "_RSQB", "NUMBER", "STRING") and braces and _inside_condition(tokens, index):
        hint = "a condition ends at '{'; join comparisons with & or |"
    elif opener == "_FRAG":
        hint = "write Frag Name[args]"
    elif not braces and token.type in ("LBRACE", "_LSQB", "NAME"):
        hint = "a specification is written Name[@T]: { ... }"
    elif _inside_condition(tokens, index):
        hint = "a condition is an expression such as sys.x[@t] == \"value\" & @t > 1, followed by '{'"
    else:
        hint = "each line holds an element: a role message (U: ...), ForEach(...) { }, If cond { }, Switch, Mark 1 { }, Name x := ..., Frag Name[...] or content"
    return Diagnostic(codes.SYNTAX, f"unexpected {_describe(token)}{_expected_text(exc, bool(parens))}", span, hint=hint)


def _statement_keyword(tokens: list[Token], index: int) -> str | None:
    """The keyword that starts the construct being parsed at tokens[index], if it is still open."""
    for token in reversed(tokens[:index]):
        if token.type in ("_MARK", "_FOREACH", "_NAME_KW", "_STRFRAG", "_ROLESFRAG", "_ROLEFRAG", "_FRAG"):
            return token.type
        if token.type in ("LBRACE", "RBRACE", "ROLE", "COMMENT"):
            return None
    return None


def _inside_condition(tokens: list[Token], index: int) -> bool:
    for token in reversed(tokens[:index]):
        if token.type in ("_IF", "_ELSEIF", "_SWITCH", "_WHEN", "_CASE"):
            return True
        if token.type in ("LBRACE", "RBRACE", "ROLE"):
            return False
    return False


def _empty_role(role: Token, filename: str) -> Diagnostic:
    letter = role.value[0]
    return Diagnostic(
        codes.EMPTY_ROLE, f"role message '{letter}:' has no content", _span_of(role, filename),
        hint=f"put one element on the same line ('{letter}: env.x[@t]') or use braces ('{letter}: {{ ... }}')",
    )


# ---------------------------------------------------------------------------
# Parse tree -> syntax tree
# ---------------------------------------------------------------------------


@dataclass
class _Block:
    open: Token
    items: list[Any]
    close: Token


@dataclass
class _Chain:
    """`name` plus trailers ("call", args) / ("index", exprs) / ("field", name); meaning decided by use."""

    head: Token
    trailers: list[tuple[str, Any, Any]]
    meta: Any
    ref: bool = False  # True for `$name...`


@dataclass
class _Split:
    """Elements that stand in a body one after the other (an empty role and what followed it)."""

    items: list[Any]


@dataclass
class _ElseIf:
    condition: Any
    block: _Block
    meta: Any


@dataclass
class _Else:
    block: _Block
    meta: Any


@dataclass
class _Default:
    block: _Block
    meta: Any


_BLOCK_NODES = (ForEach, If, Switch, Mark, PromptSpec, StrFragDef, RolesFragDef)


def _is_braced(node: Any) -> bool:
    return isinstance(node, _BLOCK_NODES) or (isinstance(node, RoleMessage) and node.form == "block")


class _TreeBuilder(Transformer_NonRecursive):
    """Turns the Lark parse tree into ast nodes, attaching comments by line."""

    def __init__(self, filename: str, text: str, bag: DiagnosticBag) -> None:
        super().__init__(visit_tokens=False)
        self.filename = filename
        self.lines = text.split("\n")
        self.bag = bag

    # ---- spans and comments

    def _span(self, meta: Any) -> Span:
        if meta is None or getattr(meta, "empty", True):
            return Span(file=self.filename)
        return Span(file=self.filename, line=meta.line, column=meta.column, end_line=meta.end_line, end_column=meta.end_column)

    def _tok_span(self, token: Token) -> Span:
        return _span_of(token, self.filename)

    def _between(self, start: Span, end_token: Token) -> Span:
        return Span(file=self.filename, line=start.line, column=start.column, end_line=end_token.end_line, end_column=end_token.end_column)

    def _comment_text(self, token: Token) -> str:
        return str(token.value)[2:].strip()

    def _is_inline(self, token: Token) -> bool:
        line = self.lines[token.line - 1] if 0 < token.line <= len(self.lines) else ""
        return line[: max(0, token.column - 1)].strip() != ""

    def _comment_node(self, token: Token, inline: bool) -> Comment:
        return self._trivia(Comment(self._comment_text(token), inline, span=self._tok_span(token)))

    def _trivia(self, node: Any) -> Any:
        """Record whether an empty source line precedes `node` (layout only, see ast.BLANK_LINE_BEFORE)."""
        line = node.span.line
        if line >= 2 and line - 2 < len(self.lines) and self.lines[line - 2].strip() == "":
            setattr(node, BLANK_LINE_BEFORE, True)
        return node

    def _attach(self, items: list[Any], open_line: int | None) -> tuple[str | None, list[Any]]:
        """Body items (nodes and COMMENT tokens) -> (comment for the owner, body elements)."""
        owner_comment: str | None = None
        body: list[Any] = []
        seen_element = False
        flat: list[Any] = []
        for item in items:
            flat.extend(item.items if isinstance(item, _Split) else [item])
        for item in flat:
            if not isinstance(item, Token):
                body.append(self._trivia(item))
                seen_element = True
                continue
            inline = self._is_inline(item)
            text = self._comment_text(item)
            if not inline:
                body.append(self._comment_node(item, False))
                continue
            if not seen_element and open_line is not None and item.line == open_line and owner_comment is None:
                owner_comment = text
                continue
            prev = body[-1] if body else None
            if prev is not None and not isinstance(prev, Comment):
                if self._give_comment(prev, item.line, text):
                    continue
                if prev.span.end_line == item.line:
                    body.append(self._comment_node(item, True))
                    continue
            body.append(self._comment_node(item, False))
        return owner_comment, body

    def _give_comment(self, node: Any, line: int, text: str) -> bool:
        """Attach an inline comment to `node` if it is on the node's line; False if it does not fit."""
        starts_here = node.span.line == line
        ends_here = node.span.end_line == line and not _is_braced(node)
        if not (starts_here or ends_here):
            return False
        if isinstance(node, If):
            if node.else_body is not None:
                if node.else_comment is None:
                    node.else_comment = text
                    return True
                return False
            last = node.branches[-1]
            if last.comment is None:
                last.comment = text
                return True
            return False
        if hasattr(node, "comment") and node.comment is None:
            node.comment = text
            return True
        return False

    def _body(self, block: _Block) -> tuple[str | None, list[Any]]:
        return self._attach(block.items, block.open.line)

    # ---- expressions

    def _expr(self, value: Any) -> Any:
        if isinstance(value, _Chain):
            return self._chain_node(value, content=False)
        return value

    def _exprs(self, values: list[Any]) -> list[Any]:
        return [self._expr(v) for v in values]

    def _bad(self, message: str, span: Span, hint: str | None = None) -> None:
        self.bag.error(codes.BAD_ELEMENT, message, span, hint)

    def _indices_of(self, trailer: tuple[str, Any, Any], span: Span) -> list[Any]:
        values = trailer[1]
        if not values:
            self._bad("empty index list '[]'", self._span(trailer[2]) if trailer[2] is not None else span, "put an index inside, e.g. [@t], or remove the brackets")
        return values

    def _segments(self, trailers: list[tuple[str, Any, Any]], span: Span, head: str) -> list[PathSegment]:
        """`.field[idx]` trailers -> path segments; calls and doubled index lists are reported."""
        segments: list[PathSegment] = []
        for kind, value, meta in trailers:
            what = "'" + head + "".join("." + seg.name for seg in segments) + "'"
            if kind == "field":
                seg_span = self._span(meta)
                segments.append(PathSegment(value, [], span=seg_span))
            elif kind == "index":
                if segments and segments[-1].indices:
                    # `x[@t][m]`: a further index list on the value the first one gave (an element of a
                    # list kept per turn); it is kept as a segment with no name
                    segments.append(PathSegment("", self._indices_of((kind, value, meta), span), span=self._span(meta)))
                    continue
                if not segments:
                    self._bad(
                        f"two index lists in a row in {what}", self._span(meta) if meta is not None else span,
                        "put all indices in one list: x[@t, item]",
                    )
                    continue
                segments[-1].indices = self._indices_of((kind, value, meta), span)
                if meta is not None and not getattr(meta, "empty", True):
                    segments[-1].span = Span(
                        file=self.filename, line=segments[-1].span.line, column=segments[-1].span.column,
                        end_line=meta.end_line, end_column=meta.end_column,
                    )
            else:
                self._bad(
                    f"{what} cannot be called like a function", self._span(meta) if meta is not None else span,
                    "functions are written name(args)[indices]; a dotted variable takes only [indices]",
                )
        return segments

    def _chain_node(self, chain: _Chain, content: bool) -> Any:
        span = self._span(chain.meta)
        name = str(chain.head.value)
        trailers = chain.trailers
        if chain.ref:
            ref_name = name[1:]
            indices: list[Any] = []
            rest = trailers
            if rest and rest[0][0] == "index":
                indices = self._indices_of(rest[0], span)
                rest = rest[1:]
            return NameRef(ref_name, indices, self._segments(rest, span, f"${ref_name}"), span=span)
        if not trailers:
            if content:
                return Template(name, None, span=span)
            return PlainName(name, span=span)
        first_kind = trailers[0][0]
        if first_kind == "call":
            args = trailers[0][1]
            rest = trailers[1:]
            indices = []
            if rest and rest[0][0] == "index":
                indices = self._indices_of(rest[0], span)
                rest = rest[1:]
            if rest:
                meta = rest[0][2]
                self._bad(
                    f"'{name}(...)' can be followed only by one index list", self._span(meta) if meta is not None else span,
                    "functions are written name(args)[indices]; give the field a Name: Name x := f(...) then $x.field",
                )
            if is_all_caps(name) and not indices:
                return Template(name, args, span=span)
            return FunctionCall(name, args, indices, span=span)
        namespace_indices: list[Any] = []
        rest = trailers
        if first_kind == "index":
            namespace_indices = self._indices_of(trailers[0], span)
            rest = trailers[1:]
        return ContextVar(name, self._segments(rest, span, name), namespace_indices, span=span)

    # ---- top level

    def start(self, items: list[Any]) -> File:
        _, body = self._attach(items, None)
        span = Span(file=self.filename, line=1, column=1, end_line=len(self.lines), end_column=len(self.lines[-1]) + 1 if self.lines else 1)
        return File(body, span=span)

    @v_args(meta=True)
    def header(self, meta: Any, children: list[Any]) -> list[Any]:
        return self._exprs(children)

    def _def_parts(self, children: list[Any]) -> tuple[Token, list[Any], _Block]:
        name = children[0]
        if len(children) == 3:
            return name, children[1], children[2]
        return name, [], children[1]

    @v_args(meta=True)
    def spec(self, meta: Any, children: list[Any]) -> PromptSpec:
        name, indices, block = self._def_parts(children)
        comment, body = self._body(block)
        return PromptSpec(str(name), indices, body, comment=comment, span=self._span(meta))

    @v_args(meta=True)
    def str_frag(self, meta: Any, children: list[Any]) -> StrFragDef:
        name, params, block = self._def_parts(children)
        comment, body = self._body(block)
        return StrFragDef(str(name), params, body, comment=comment, span=self._span(meta))

    @v_args(meta=True)
    def roles_frag(self, meta: Any, children: list[Any]) -> RolesFragDef:
        name, params, block = self._def_parts(children)
        comment, body = self._body(block)
        return RolesFragDef(str(name), params, body, comment=comment, span=self._span(meta))

    def block(self, children: list[Any]) -> _Block:
        return _Block(children[0], children[1:-1], children[-1])

    # ---- elements

    @v_args(meta=True)
    def role_message(self, meta: Any, children: list[Any]) -> RoleMessage:
        role_token, inner = children
        role = str(role_token.value)[0]
        span = self._span(meta)
        if isinstance(inner, _Block):
            comment, body = self._body(inner)
            return RoleMessage(role, "block", body, comment=comment, span=span)
        if inner.span.line != role_token.line:
            # `U:` with nothing on its line: report it once and keep what follows as a sibling,
            # so the next line is not also reported as nested in this message.
            self.bag.add(_empty_role(role_token, self.filename))
            empty = RoleMessage(role, "single", [], span=self._tok_span(role_token))
            return _Split([empty, *(inner.items if isinstance(inner, _Split) else [inner])])
        if isinstance(inner, _Split):  # `U: A:` then a newline: keep the pieces apart as well
            return _Split([RoleMessage(role, "single", [inner.items[0]], span=span), *inner.items[1:]])
        return RoleMessage(role, "single", [inner], span=span)

    @v_args(meta=True)
    def content(self, meta: Any, children: list[Any]) -> Any:
        return self._chain_node(children[0], content=True)

    @v_args(meta=True)
    def string_content(self, meta: Any, children: list[Any]) -> Literal:
        return self.string(meta, children)

    @v_args(meta=True)
    def number_content(self, meta: Any, children: list[Any]) -> Literal:
        return self.number(meta, children)

    @v_args(meta=True)
    def foreach(self, meta: Any, children: list[Any]) -> ForEach:
        (var, time_var), iterable, block = children
        comment, body = self._body(block)
        return ForEach(var, iterable, body, time_var, comment=comment, span=self._span(meta))

    @v_args(meta=True)
    def loop_var(self, meta: Any, children: list[Any]) -> tuple[str, bool]:
        token = children[0]
        value = str(token.value)
        if token.type == "TIME":
            name = value[1:]
            if not _NAME_RE.match(name) or name[0].isdigit():
                self.bag.error(
                    codes.BAD_LOOP_VAR, f"'{value}' cannot be a loop variable", self._tok_span(token),
                    "loop over a plain name (i) or a time variable (@t); use @t.i inside the loop",
                )
            return name, True
        return value, False

    @v_args(meta=True)
    def iterable(self, meta: Any, children: list[Any]) -> Any:
        values = self._exprs(children)
        if len(values) == 1:
            return values[0]
        return ImplicitRange(values, span=self._span(meta))

    @v_args(meta=True)
    def if_stmt(self, meta: Any, children: list[Any]) -> If:
        condition = self._expr(children[0])
        block: _Block = children[1]
        comment, body = self._body(block)
        start = self._span(meta)
        branches = [IfBranch(condition, body, comment=comment, span=self._between(start, block.close))]
        else_body = None
        else_comment = None
        for extra in children[2:]:
            if isinstance(extra, _ElseIf):
                c, b = self._body(extra.block)
                branches.append(IfBranch(extra.condition, b, comment=c, span=self._span(extra.meta)))
            else:
                else_comment, else_body = self._body(extra.block)
        return If(branches, else_body, else_comment, span=start)

    @v_args(meta=True)
    def else_if(self, meta: Any, children: list[Any]) -> _ElseIf:
        return _ElseIf(self._expr(children[0]), children[1], meta)

    @v_args(meta=True)
    def else_clause(self, meta: Any, children: list[Any]) -> _Else:
        return _Else(children[0], meta)

    @v_args(meta=True)
    def switch_stmt(self, meta: Any, children: list[Any]) -> Switch:
        subject = self._expr(children[0])
        open_token: Token = children[1]
        span = self._span(meta)
        node = Switch(subject, span=span)
        waiting: list[Comment] = []  # standalone comments waiting for the next branch
        last: Any = None  # the SwitchCase, or "default", most recently added
        last_lines = (0, 0)
        for item in children[2:-1]:
            if isinstance(item, Token):
                inline = self._is_inline(item)
                text = self._comment_text(item)
                if inline and last is None and item.line == open_token.line and node.comment is None:
                    node.comment = text
                    continue
                if inline and last is not None and item.line == last_lines[0]:
                    if last == "default" and node.default_comment is None:
                        node.default_comment = text
                        continue
                    if isinstance(last, SwitchCase) and last.comment is None:
                        last.comment = text
                        continue
                if inline and last is not None and item.line == last_lines[1]:
                    # `} // note` after a branch: keep it at the end of that branch
                    (node.default if last == "default" else last.body).append(self._comment_node(item, False))  # type: ignore[union-attr]
                    continue
                waiting.append(self._comment_node(item, False))
                continue
            if isinstance(item, SwitchCase):
                if node.default is not None:
                    self.bag.error(codes.BAD_SWITCH, "'Case' after 'Default'", item.span, hint="Default must be the last branch of a Switch")
                item.body[:0] = waiting
                waiting = []
                node.cases.append(item)
                last, last_lines = item, (item.span.line, item.span.end_line or item.span.line)
                continue
            comment, body = self._body(item.block)
            if node.default is not None:
                self.bag.error(codes.BAD_SWITCH, "a second 'Default' in one Switch", self._span(item.meta), hint="keep one Default branch")
                continue
            node.default = waiting + body
            node.default_comment = comment
            waiting = []
            last, last_lines = "default", (item.meta.line, item.meta.end_line)
        if waiting:
            if last == "default":
                node.default.extend(waiting)  # type: ignore[union-attr]
            elif last is not None:
                last.body.extend(waiting)
            else:
                self.bag.error(codes.BAD_SWITCH, "a Switch without any Case or Default", span, hint="add Case value { ... } branches")
        elif last is None:
            self.bag.error(codes.BAD_SWITCH, "a Switch without any Case or Default", span, hint="add Case value { ... } branches")
        return node

    @v_args(meta=True)
    def case(self, meta: Any, children: list[Any]) -> SwitchCase:
        comment, body = self._body(children[1])
        return SwitchCase(self._expr(children[0]), body, comment=comment, span=self._span(meta))

    @v_args(meta=True)
    def default_clause(self, meta: Any, children: list[Any]) -> _Default:
        return _Default(children[0], meta)

    @v_args(meta=True)
    def mark(self, meta: Any, children: list[Any]) -> Mark:
        number: int | None = None
        if len(children) == 2:
            text = str(children[0].value)
            if text.isdigit():
                number = int(text)
        comment, body = self._body(children[-1])
        return Mark(number, body, comment=comment, span=self._span(meta))

    @v_args(meta=True)
    def name_def(self, meta: Any, children: list[Any]) -> NameDef:
        return NameDef(str(children[0].value), self._expr(children[1]), span=self._span(meta))

    @v_args(meta=True)
    def list_comp(self, meta: Any, children: list[Any]) -> ListComprehension:
        element, (var, time_var), iterable = children
        return ListComprehension(self._expr(element), var, self._expr(iterable), time_var, span=self._span(meta))

    @v_args(meta=True)
    def frag_invoke(self, meta: Any, children: list[Any]) -> FragInvoke:
        args: list[Any] = []
        if len(children) == 2:
            args = children[1][1]
        return FragInvoke(str(children[0].value), args, span=self._span(meta))

    @v_args(meta=True)
    def break_stmt(self, meta: Any, children: list[Any]) -> Break:
        return Break(span=self._span(meta))

    @v_args(meta=True)
    def continue_stmt(self, meta: Any, children: list[Any]) -> Continue:
        return Continue(span=self._span(meta))

    @v_args(meta=True)
    def ends_here(self, meta: Any, children: list[Any]) -> PromptEndsHere:
        cond = self._expr(children[0]) if children else None
        return PromptEndsHere(cond, span=self._span(meta))

    # ---- expression rules

    @v_args(meta=True)
    def chain(self, meta: Any, children: list[Any]) -> _Chain:
        return _Chain(children[0], children[1:], meta)

    @v_args(meta=True)
    def name_ref(self, meta: Any, children: list[Any]) -> _Chain:
        return _Chain(children[0], children[1:], meta, ref=True)

    @v_args(meta=True)
    def call_args(self, meta: Any, children: list[Any]) -> tuple[str, Any, Any]:
        return ("call", self._exprs(children), meta)

    @v_args(meta=True)
    def index_list(self, meta: Any, children: list[Any]) -> tuple[str, Any, Any]:
        return ("index", self._exprs(children), meta)

    @v_args(meta=True)
    def field(self, meta: Any, children: list[Any]) -> tuple[str, Any, Any]:
        return ("field", str(children[0].value), meta)

    @v_args(meta=True)
    def time(self, meta: Any, children: list[Any]) -> TimeIndex:
        text = str(children[0].value)[1:]
        parts: list[str | int] = [int(p) if p.isdigit() else p for p in text.split(".")]
        return TimeIndex(parts, span=self._span(meta))

    @v_args(meta=True)
    def time_name(self, meta: Any, children: list[Any]) -> TimeName:
        return TimeName(str(children[0].value)[2:], span=self._span(meta))

    @v_args(meta=True)
    def number(self, meta: Any, children: list[Any]) -> Literal:
        text = str(children[0].value)
        value: int | float = int(text) if text.isdigit() else float(text)
        return Literal(value, "number", span=self._span(meta))

    @v_args(meta=True)
    def string(self, meta: Any, children: list[Any]) -> Literal:
        return Literal(_unquote(str(children[0].value)), "string", span=self._span(meta))

    @v_args(meta=True)
    def paren(self, meta: Any, children: list[Any]) -> Paren:
        return Paren(self._expr(children[0]), span=self._span(meta))

    @v_args(meta=True)
    def binop(self, meta: Any, children: list[Any]) -> BinaryOp:
        left, op, right = children
        return BinaryOp(str(op.value), self._expr(left), self._expr(right), span=self._span(meta))

    @v_args(meta=True)
    def unary(self, meta: Any, children: list[Any]) -> UnaryOp:
        op, operand = children
        return UnaryOp(str(op.value), self._expr(operand), span=self._span(meta))

    @v_args(meta=True)
    def compare(self, meta: Any, children: list[Any]) -> Compare:
        left, op, right = children
        return Compare(str(op.value), self._expr(left), self._expr(right), span=self._span(meta))

    @v_args(meta=True)
    def bool_or(self, meta: Any, children: list[Any]) -> BoolOp:
        left, op, right = children
        return BoolOp("or", self._expr(left), self._expr(right), op, span=self._span(meta))

    @v_args(meta=True)
    def bool_and(self, meta: Any, children: list[Any]) -> BoolOp:
        left, op, right = children
        return BoolOp("and", self._expr(left), self._expr(right), op, span=self._span(meta))

    @v_args(meta=True)
    def not_(self, meta: Any, children: list[Any]) -> Not:
        op, operand = children
        return Not(self._expr(operand), op, span=self._span(meta))

    def or_op(self, children: list[Any]) -> str:
        return str(children[0].value)

    def and_op(self, children: list[Any]) -> str:
        return str(children[0].value)

    def not_op(self, children: list[Any]) -> str:
        return str(children[0].value)


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'"}


def _unquote(raw: str) -> str:
    body = raw[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append(_ESCAPES.get(nxt, "\\" + nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


# ---------------------------------------------------------------------------
# Fragment kinds
# ---------------------------------------------------------------------------


def resolve_fragment_kinds(file_node: File) -> None:
    """Set every FragInvoke.kind: the definition's kind when defined in the file, else by context
    (inside a role message or a StrFrag body -> "str", elsewhere -> "roles")."""
    defined: dict[str, str] = {}
    for node in _all_fragment_defs(file_node):
        defined.setdefault(node.name, "str" if isinstance(node, StrFragDef) else "roles")

    for node in walk(file_node):  # invocations inside expressions produce content
        if isinstance(node, FragInvoke):
            node.kind = defined.get(node.name, "str")  # type: ignore[assignment]

    def visit(elements: list[Any], in_role: bool) -> None:
        for element in elements:
            if isinstance(element, FragInvoke):
                element.kind = defined.get(element.name, "str" if in_role else "roles")  # type: ignore[assignment]
            elif isinstance(element, RoleMessage):
                visit(element.body, True)
            elif isinstance(element, StrFragDef):
                visit(element.body, True)
            elif isinstance(element, (RolesFragDef, PromptSpec)):
                visit(element.body, False)
            elif isinstance(element, If):
                for branch in element.branches:
                    visit(branch.body, in_role)
                if element.else_body is not None:
                    visit(element.else_body, in_role)
            elif isinstance(element, Switch):
                for case in element.cases:
                    visit(case.body, in_role)
                if element.default is not None:
                    visit(element.default, in_role)
            elif isinstance(element, (ForEach, Mark)):
                visit(element.body, in_role)

    visit(file_node.items, False)


def _all_fragment_defs(file_node: File) -> list[StrFragDef | RolesFragDef]:
    return [n for n in walk(file_node) if isinstance(n, (StrFragDef, RolesFragDef))]

