"""Canonical ACDL text from a syntax tree: 4-space indentation, one element per line, comments in place."""

from __future__ import annotations

from typing import Any

from .ast import (
    BLANK_LINE_BEFORE,
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
    ImplicitRange,
    ListComprehension,
    Literal,
    Mark,
    NameDef,
    NameRef,
    Node,
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
    Template,
    TimeIndex,
    TimeName,
    UnaryOp,
)

__all__ = ["format_acdl", "format_expr"]

INDENT = "    "

# Binding strength, loosest first; atoms bind tightest.
_OR, _AND, _NOT, _CMP, _ADD, _MUL, _UNARY, _ATOM = range(1, 9)
_DEFAULT_SPELLING = {"and": "&", "or": "|"}


def format_acdl(file_ast: File) -> str:
    """The canonical text of a File (ends with one newline). One blank line separates top-level
    definitions; elsewhere a blank line is kept (at most one) where the source had one."""
    printer = _Printer()
    printer.items(file_ast.items, 0, top_level=True)
    text = "\n".join(line.rstrip() for line in printer.lines)
    return text.strip("\n") + "\n" if text.strip() else ""


def format_expr(expr: Any) -> str:
    """The text of one expression (index, argument, condition, Name value)."""
    return _expr(expr)


# ---------------------------------------------------------------------------
# Expressions
# ---------------------------------------------------------------------------


def _strength(expr: Any) -> int:
    if isinstance(expr, BoolOp):
        return _OR if expr.op == "or" else _AND
    if isinstance(expr, Not):
        return _NOT
    if isinstance(expr, Compare):
        return _CMP
    if isinstance(expr, BinaryOp):
        return _ADD if expr.op in "+-" else _MUL
    if isinstance(expr, UnaryOp):
        return _UNARY
    return _ATOM


def _wrapped(expr: Any, minimum: int) -> str:
    text = _expr(expr)
    return f"({text})" if _strength(expr) < minimum else text


def _list(values: list[Any]) -> str:
    return ", ".join(_expr(v) for v in values)


def _indices(values: list[Any]) -> str:
    return f"[{_list(values)}]" if values else ""


def _segments(path: list[PathSegment]) -> str:
    return "".join(f"{'.' + seg.name if seg.name else ''}{_indices(seg.indices)}" for seg in path)


def _string(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")
    return f'"{escaped}"'


def _number(value: int | float) -> str:
    if isinstance(value, bool):  # never produced by the parser; keep it printable anyway
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    text = repr(float(value))
    if "e" in text or "E" in text or "inf" in text or "nan" in text:
        text = f"{value:.12f}".rstrip("0").rstrip(".") or "0"
    return text


def _expr(expr: Any) -> str:
    if isinstance(expr, (TimeIndex, TimeName)):
        return expr.text
    if isinstance(expr, PlainName):
        return expr.name
    if isinstance(expr, Literal):
        return _string(str(expr.value)) if expr.kind == "string" else _number(expr.value)  # type: ignore[arg-type]
    if isinstance(expr, ContextVar):
        return f"{expr.namespace}{_indices(expr.namespace_indices)}{_segments(expr.path)}"
    if isinstance(expr, NameRef):
        return f"${expr.name}{_indices(expr.indices)}{_segments(expr.path)}"
    if isinstance(expr, Template):
        return expr.name if expr.args is None else f"{expr.name}({_list(expr.args)})"
    if isinstance(expr, FunctionCall):
        return f"{expr.name}({_list(expr.args)}){_indices(expr.indices)}"
    if isinstance(expr, Paren):
        return f"({_expr(expr.expr)})"
    if isinstance(expr, BinaryOp):
        strength = _strength(expr)
        return f"{_wrapped(expr.left, strength)} {expr.op} {_wrapped(expr.right, strength + 1)}"
    if isinstance(expr, UnaryOp):
        return f"{expr.op}{_wrapped(expr.operand, _UNARY)}"
    if isinstance(expr, Compare):
        return f"{_wrapped(expr.left, _CMP + 1)} {expr.op} {_wrapped(expr.right, _CMP + 1)}"
    if isinstance(expr, BoolOp):
        strength = _strength(expr)
        spelling = expr.spelling or _DEFAULT_SPELLING[expr.op]
        return f"{_wrapped(expr.left, strength)} {spelling} {_wrapped(expr.right, strength + 1)}"
    if isinstance(expr, Not):
        spelling = expr.spelling or "not"
        operand = _wrapped(expr.operand, _NOT)
        return f"!{operand}" if spelling == "!" else f"not {operand}"
    if isinstance(expr, FragInvoke):
        return f"Frag {expr.name}{_indices(expr.args)}"
    if isinstance(expr, ImplicitRange):
        return _list(expr.args)
    if isinstance(expr, ListComprehension):
        var = ("@" if expr.time_var else "") + expr.var
        return f"[{_expr(expr.element)} for {var} in {_expr(expr.iterable)}]"
    raise TypeError(f"not an ACDL expression: {type(expr).__name__}")


# ---------------------------------------------------------------------------
# Elements
# ---------------------------------------------------------------------------


def _with_comment(text: str, comment: str | None) -> str:
    if comment is None:
        return text
    return f"{text} // {comment}" if comment else f"{text} //"


def _comment_text(comment: Comment) -> str:
    return f"// {comment.text}" if comment.text else "//"


class _Printer:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def line(self, level: int, text: str) -> None:
        self.lines.append(INDENT * level + text)

    def items(self, elements: list[Any], level: int, top_level: bool = False) -> None:
        prev: Node | None = None
        for element in elements:
            if isinstance(element, Comment) and element.inline and self.lines:
                self.lines[-1] += " " + _comment_text(element)
                prev = element
                continue
            if prev is not None and self._blank_between(prev, element, top_level):
                self.lines.append("")
            self.element(element, level)
            prev = element

    @staticmethod
    def _blank_between(prev: Node, element: Node, top_level: bool) -> bool:
        if getattr(element, BLANK_LINE_BEFORE, False):
            return True
        return top_level and not isinstance(prev, Comment) and not isinstance(element, Comment)

    def block(self, level: int, header: str, comment: str | None, body: list[Any]) -> None:
        self.line(level, _with_comment(header + " {", comment))
        self.items(body, level + 1)
        self.line(level, "}")

    def element(self, node: Any, level: int) -> None:
        if isinstance(node, Comment):
            self.line(level, _comment_text(node))
        elif isinstance(node, PromptSpec):
            header = node.name + (_indices(node.indices) if node.indices else "") + ":"
            self.block(level, header, node.comment, node.body)
        elif isinstance(node, StrFragDef):
            self.block(level, f"StrFrag {node.name}{_indices(node.params)}:", node.comment, node.body)
        elif isinstance(node, RolesFragDef):
            self.block(level, f"RolesFrag {node.name}{_indices(node.params)}:", node.comment, node.body)
        elif isinstance(node, RoleMessage):
            self.role(node, level)
        elif isinstance(node, ForEach):
            var = ("@" if node.time_var else "") + node.var
            self.block(level, f"ForEach({var}: {_expr(node.iterable)})", node.comment, node.body)
        elif isinstance(node, If):
            for number, branch in enumerate(node.branches):
                keyword = "If" if number == 0 else "ElseIf"
                self.block(level, f"{keyword} {_expr(branch.condition)}", branch.comment, branch.body)
            if node.else_body is not None:
                self.block(level, "Else", node.else_comment, node.else_body)
        elif isinstance(node, Switch):
            self.line(level, _with_comment(f"Switch {_expr(node.expr)} {{", node.comment))
            for case in node.cases:
                self.block(level + 1, f"Case {_expr(case.value)}", case.comment, case.body)
            if node.default is not None:
                self.block(level + 1, "Default", node.default_comment, node.default)
            self.line(level, "}")
        elif isinstance(node, Mark):
            header = "Mark" if node.number is None else f"Mark {node.number}"
            self.block(level, header, node.comment, node.body)
        elif isinstance(node, NameDef):
            self.line(level, _with_comment(f"Name {node.name} := {_expr(node.value)}", node.comment))
        elif isinstance(node, FragInvoke):
            self.line(level, _with_comment(f"Frag {node.name}{_indices(node.args)}", node.comment))
        elif isinstance(node, Break):
            self.line(level, _with_comment("break", node.comment))
        elif isinstance(node, Continue):
            self.line(level, _with_comment("continue", node.comment))
        elif isinstance(node, PromptEndsHere):
            text = "PromptEndsHere" if node.cond is None else f"PromptEndsHere when {_expr(node.cond)}"
            self.line(level, _with_comment(text, node.comment))
        else:
            self.line(level, _with_comment(_expr(node), getattr(node, "comment", None)))

    def role(self, node: RoleMessage, level: int) -> None:
        marker = f"{node.role}:"
        if node.form == "block" or len(node.body) != 1:
            self.block(level, marker, node.comment, node.body)
            return
        start = len(self.lines)
        self.element(node.body[0], level)
        first = self.lines[start]
        self.lines[start] = INDENT * level + marker + " " + first[len(INDENT * level):]
        if node.comment is not None:
            self.lines[start] = _with_comment(self.lines[start], node.comment)
