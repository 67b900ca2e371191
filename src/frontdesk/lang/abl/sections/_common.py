"""Small readers the section compilers share: keys in any case, quoted text, parts of a line, and expressions that never raise."""

from __future__ import annotations

import re

from frontdesk.diagnostics import Span
from frontdesk.ir.expr import Condition, Expr, ExprCondition, Lit

from .. import codes
from ..context import SectionContext
from ..lineparts import split_top
from ..outline import Node

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.(?:[A-Za-z_][A-Za-z0-9_]*|\*))*")
_TEMPLATE_REF = re.compile(r"TEMPLATE\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)")


def key(node: Node) -> str:
    """The node's key in upper case ("" for a bare line)."""
    return (node.key or "").upper()


def unquote(text: str) -> tuple[str, bool]:
    """`text` without the quotes around it (and whether it had them)."""
    text = text.strip()
    if len(text) >= 2 and text[0] in "\"'" and text[-1] == text[0]:
        body = text[1:-1]
        if text[0] == '"':
            body = re.sub(r'\\(["\\])', r"\1", body).replace("\\n", "\n")
        return body, True
    return text, False


def template_ref(text: str) -> str | None:
    """The name in `TEMPLATE(name)`, when `text` is exactly that."""
    found = _TEMPLATE_REF.fullmatch(text.strip())
    return found.group(1) if found else None


def span_at(node: Node, offset: int = 0) -> Span:
    """Where character `offset` of the node's value is (the value's start when the node has none)."""
    base = node.value_span()
    if not node.value_column:
        return base
    return Span(file=base.file, line=base.line, column=base.column + offset)


def value_offset(node: Node) -> int:
    """How far the node's text starts after its value column (1 for a quoted value, its quote)."""
    return 1 if node.quoted else 0


def condition(ctx: SectionContext, text: str, node: Node | None, offset: int = 0) -> Condition:
    """`text` (from character `offset` of the node's value) as a condition; problems become ABL013."""
    try:
        return ctx.condition(text, node, offset)
    except (ValueError, TypeError, RecursionError) as exc:  # a parser problem that is not a syntax error
        ctx.error(codes.BAD_EXPRESSION, f"bad expression: {exc}", span_at(node, offset) if node else None)
        return ExprCondition(source=text, expr=Lit(value=False))


def node_condition(ctx: SectionContext, node: Node) -> Condition:
    """The node's value as a condition."""
    return condition(ctx, node.text.strip(), node, value_offset(node))


def expression(ctx: SectionContext, text: str, node: Node | None, offset: int = 0) -> Expr:
    """`text` (from character `offset` of the node's value) as a value; problems become ABL013."""
    try:
        return ctx.expression(text, node, offset)
    except (ValueError, TypeError, RecursionError) as exc:
        ctx.error(codes.BAD_EXPRESSION, f"bad expression: {exc}", span_at(node, offset) if node else None)
        return Lit(value=None)


def find_word(text: str, word: str, start: int = 0) -> int:
    """Where the whole word `word` (any case) first occurs in `text` outside quotes, brackets and
    /regex/ literals, from `start`; -1 when it does not."""
    depth, quote = 0, ""
    wanted = word.upper()
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "\"'" or (ch == "/" and text[:i].rstrip().lower().endswith("matches")):
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif (depth == 0 and i >= start and text[i:i + len(word)].upper() == wanted
              and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] in "_."))
              and (i + len(word) == len(text) or not (text[i + len(word)].isalnum() or text[i + len(word)] == "_"))):
            return i
        i += 1
    return -1


def names_with_offsets(text: str) -> list[tuple[str, int]]:
    """The names of `a, b, c` or `[a, b, c]` or `{a, b}` with their offsets in `text`."""
    stripped = text.strip()
    lead = len(text) - len(text.lstrip())
    if len(stripped) >= 2 and stripped[0] + stripped[-1] in ("[]", "{}"):
        return [(part.strip("\"'"), lead + 1 + at) for part, at in split_top(stripped[1:-1])]
    return [(part.strip("\"'"), lead + at) for part, at in split_top(stripped)]


def flatten(node: Node) -> list[Node]:
    """An item's properties: the children of its first line and its other lines (`- name: required`
    with `type: date` under it or beside it)."""
    if not node.children:
        return []
    first = node.children[0]
    return [*first.children, *node.children[1:]]


def value_of(ctx: SectionContext, node: Node) -> Expr:
    """An entry's value as an expression: a quoted value is text (with `{{...}}` filled in), an
    unquoted one an expression (`selected_hotel.name`, `NOW()`, `5`)."""
    if not node.quoted:
        return expression(ctx, node.text.strip(), node, 0)
    try:
        return ctx.value(node)
    except (ValueError, TypeError, RecursionError) as exc:
        ctx.error(codes.BAD_TEMPLATE, f"bad template: {exc}", node.value_span())
        return Lit(value=node.text)
