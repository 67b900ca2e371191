"""The ACDL syntax tree: plain dataclasses with a source span on every node and JSON round-tripping.

Consumers (the checker, the printer, renderers, a structural diff, the call verifier) rely on the
class and field names below; keep them stable.

Conventions
- Every node has `span: Span` (keyword-only, excluded from `==`), so `a == b` compares structure.
- Nodes that can stand as an element of a body also have `comment: str | None`: the inline `//`
  comment on the line where the element starts (for a braced construct: after its opening `{`).
  An inline comment after a closing `}` is kept as a `Comment(inline=True)` right after that
  construct in the same body. Standalone comments are `Comment(inline=False)` body elements.
- Comment text is what follows `//`, stripped of surrounding blanks.
- Layout trivia is not part of the tree: the parser sets the plain attribute `blank_line_before`
  (see BLANK_LINE_BEFORE) on body elements preceded by an empty source line, and the printer
  keeps one blank line there. It is not a field: not compared, not in `to_dict()`.
- `to_dict()` gives `{"node": ClassName, <fields>..., "span": {...}}`; `node_from_dict` reverses it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Iterator, Literal as TypingLiteral, Union

from frontdesk.diagnostics import Span

__all__ = [
    "Node",
    "File",
    "PromptSpec",
    "StrFragDef",
    "RolesFragDef",
    "RoleMessage",
    "ContextVar",
    "PathSegment",
    "TimeIndex",
    "TimeName",
    "PlainName",
    "Literal",
    "BinaryOp",
    "UnaryOp",
    "Compare",
    "BoolOp",
    "Not",
    "Paren",
    "ImplicitRange",
    "Template",
    "FunctionCall",
    "NameDef",
    "ListComprehension",
    "NameRef",
    "FragInvoke",
    "ForEach",
    "If",
    "IfBranch",
    "Switch",
    "SwitchCase",
    "Break",
    "Continue",
    "PromptEndsHere",
    "Mark",
    "Comment",
    "Expr",
    "Element",
    "TopLevelItem",
    "ROLES",
    "BLANK_LINE_BEFORE",
    "CHAT_ROLES",
    "NAMESPACES",
    "walk",
    "node_from_dict",
]

BLANK_LINE_BEFORE = "blank_line_before"

ROLES = ("S", "U", "A", "T", "N")
CHAT_ROLES = ("S", "U", "A", "T")
NAMESPACES = ("env", "sys", "resp")


def _no_span() -> Span:
    return Span()


@dataclass
class Node:
    """Base of every syntax node."""

    span: Span = field(default_factory=_no_span, compare=False, kw_only=True, repr=False)

    def to_dict(self, spans: bool = True) -> dict[str, Any]:
        """A JSON-serialisable dict: `node` (the class name), every field, and `span` unless `spans=False`."""
        out: dict[str, Any] = {"node": type(self).__name__}
        for f in dataclasses.fields(self):
            if f.name == "span":
                continue
            out[f.name] = _value_to_json(getattr(self, f.name), spans)
        if spans:
            out["span"] = self.span.model_dump()
        return out

    def children(self) -> Iterator["Node"]:
        """Direct child nodes in field order."""
        for name in _child_fields(type(self)):
            value = getattr(self, name)
            if isinstance(value, Node):
                yield value
            elif isinstance(value, list):
                yield from _nodes_in(value)


# The field names that may hold child nodes, per node class (dataclasses.fields is slow to call per node).
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(cls: type) -> tuple[str, ...]:
    names = _CHILD_FIELDS.get(cls)
    if names is None:
        names = _CHILD_FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls) if f.name != "span")
    return names


def _value_to_json(value: Any, spans: bool) -> Any:
    if isinstance(value, Node):
        return value.to_dict(spans)
    if isinstance(value, list):
        return [_value_to_json(v, spans) for v in value]
    return value


def _nodes_in(value: Any) -> Iterator[Node]:
    if isinstance(value, Node):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _nodes_in(item)


def walk(node: Node) -> Iterator[Node]:
    """`node` and all its descendants, depth first in source order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(list(current.children())))


@dataclass
class Commentable(Node):
    """A node that can be a body element and so may carry an inline comment."""

    comment: str | None = field(default=None, kw_only=True)


# ---------------------------------------------------------------------------
# Expressions (indices, arguments, conditions, Name values)
# ---------------------------------------------------------------------------


@dataclass
class TimeIndex(Node):
    """A time index: `@T` -> ["T"], `@t.i` -> ["t", "i"], `@T.0` -> ["T", 0], `@1` -> [1],
    `@t.substeps` -> ["t", "substeps"], `@T.*` -> ["T", "*"]. Arithmetic wraps it in BinaryOp."""

    parts: list[str | int]

    @property
    def text(self) -> str:
        return "@" + ".".join(str(p) for p in self.parts)


@dataclass
class TimeName(Node):
    """`@$C`: the value a `Name` definition binds, used as a time index (`sys.summary[@$C]`,
    `range(@$C + 1, @T)`). Arithmetic wraps it in BinaryOp, as it does a TimeIndex."""

    name: str

    @property
    def text(self) -> str:
        return f"@${self.name}"


@dataclass
class PlainName(Node):
    """A bare name in an expression: a loop variable (`i`, `bomb`), `I`, or a symbolic value (`none`)."""

    name: str


@dataclass
class Literal(Commentable):
    """A string or number literal; `kind` is "string" or "number"."""

    value: str | int | float
    kind: TypingLiteral["string", "number"]


@dataclass
class BinaryOp(Node):
    """Arithmetic: op is one of + - * / %."""

    op: str
    left: "Expr"
    right: "Expr"


@dataclass
class UnaryOp(Node):
    """Unary arithmetic sign: op is - or +."""

    op: str
    operand: "Expr"


@dataclass
class Compare(Node):
    """A comparison: op is one of == != < > <= >=."""

    op: str
    left: "Expr"
    right: "Expr"


@dataclass
class BoolOp(Node):
    """A logical connective; op is "and" or "or", spelling is how it was written (&, &&, and, |, ||, or)."""

    op: TypingLiteral["and", "or"]
    left: "Expr"
    right: "Expr"
    spelling: str = ""


@dataclass
class Not(Node):
    """Logical negation; spelling is "not" or "!"."""

    operand: "Expr"
    spelling: str = "not"


@dataclass
class Paren(Node):
    """An expression the author wrapped in parentheses (kept so renderers show it as written)."""

    expr: "Expr"


@dataclass
class ImplicitRange(Node):
    """ForEach bounds written without range(): `ForEach(i: 1, @t.substeps)`."""

    args: list["Expr"]


@dataclass
class PathSegment(Node):
    """One dotted segment of a context variable or name reference, with its index list (maybe empty). A
    segment with no name is a further index list on the one before: `x[@t][m]` is x[@t], then [m]."""

    name: str
    indices: list["Expr"] = field(default_factory=list)


@dataclass
class ContextVar(Commentable):
    """`namespace.seg[idx].seg...`; `namespace_indices` holds `sys[agent]`-style agent indices."""

    namespace: str
    path: list[PathSegment]
    namespace_indices: list["Expr"] = field(default_factory=list)


@dataclass
class Template(Commentable):
    """An ALL_CAPS placeholder; `args` is None without parentheses, a list with them."""

    name: str
    args: list["Expr"] | None = None


@dataclass
class FunctionCall(Commentable):
    """`name(args)[indices]`, e.g. `summarize(sys.history[@t])`, `range(1, @T, 2)`."""

    name: str
    args: list["Expr"] = field(default_factory=list)
    indices: list["Expr"] = field(default_factory=list)


@dataclass
class NameRef(Commentable):
    """`$name[indices].field[indices]...`: a reference to a `Name` definition."""

    name: str
    indices: list["Expr"] = field(default_factory=list)
    path: list[PathSegment] = field(default_factory=list)


@dataclass
class ListComprehension(Node):
    """`[element for var in iterable]` (only as the value of a Name definition)."""

    element: "Expr"
    var: str
    iterable: "Expr"
    time_var: bool = False


Expr = Union[
    TimeIndex,
    TimeName,
    PlainName,
    Literal,
    BinaryOp,
    UnaryOp,
    Compare,
    BoolOp,
    Not,
    Paren,
    ImplicitRange,
    ContextVar,
    Template,
    FunctionCall,
    NameRef,
    "FragInvoke",
]


# ---------------------------------------------------------------------------
# Body elements
# ---------------------------------------------------------------------------


@dataclass
class Comment(Node):
    """A `//` comment: standalone on its own line, or inline after a closing `}` (`inline=True`)."""

    text: str
    inline: bool = False


@dataclass
class RoleMessage(Commentable):
    """`S:`/`U:`/`A:`/`T:`/`N:`; form "single" (`U: env.x`, body has one element) or "block" (`U: {...}`)."""

    role: str
    form: TypingLiteral["single", "block"]
    body: list["Element"] = field(default_factory=list)


@dataclass
class NameDef(Commentable):
    """`Name var := value`."""

    name: str
    value: "Expr | ListComprehension"


@dataclass
class FragInvoke(Commentable):
    """`Frag Name[args]`; kind is "str" or "roles": the definition's kind when the fragment is
    defined in the file, otherwise resolved by context (inside a role message or StrFrag, or as an
    argument in an expression -> "str"; where role messages stand -> "roles")."""

    name: str
    args: list["Expr"] = field(default_factory=list)
    kind: TypingLiteral["str", "roles"] = "roles"


@dataclass
class ForEach(Commentable):
    """`ForEach(var: iterable) {body}`; time_var is True for `@t`-style loop variables (var holds `t`)."""

    var: str
    iterable: "Expr"
    body: list["Element"] = field(default_factory=list)
    time_var: bool = False


@dataclass
class IfBranch(Node):
    """One `If cond {...}` or `ElseIf cond {...}`; comment is the inline comment after its `{`."""

    condition: "Expr"
    body: list["Element"] = field(default_factory=list)
    comment: str | None = field(default=None, kw_only=True)


@dataclass
class If(Node):
    """`If ... ElseIf ... Else ...`: branches[0] is the If, the rest ElseIfs; else_body is None without Else.
    The inline comment after `If cond {` is branches[0].comment (If itself has no comment field);
    standalone comments between `}` and `ElseIf`/`Else` are kept at the start of that branch's body."""

    branches: list[IfBranch]
    else_body: list["Element"] | None = None
    else_comment: str | None = None


@dataclass
class SwitchCase(Node):
    """`Case value {...}`."""

    value: "Expr"
    body: list["Element"] = field(default_factory=list)
    comment: str | None = field(default=None, kw_only=True)


@dataclass
class Switch(Commentable):
    """`Switch expr { Case v {...} ... Default {...} }`; default is None without Default.
    Standalone comments between cases are kept at the start of the following case (or Default) body,
    or at the end of the last one; comment is the inline comment after `Switch expr {`."""

    expr: "Expr"
    cases: list[SwitchCase] = field(default_factory=list)
    default: list["Element"] | None = None
    default_comment: str | None = None


@dataclass
class Break(Commentable):
    """`break`."""


@dataclass
class Continue(Commentable):
    """`continue`."""


@dataclass
class PromptEndsHere(Commentable):
    """`PromptEndsHere when cond`; cond is None when written without `when`."""

    cond: "Expr | None" = None


@dataclass
class Mark(Commentable):
    """`Mark N {...}`: a presentational bracket; number is None when the author left it out (an error)."""

    number: int | None
    body: list["Element"] = field(default_factory=list)


Element = Union[
    RoleMessage,
    ContextVar,
    Template,
    FunctionCall,
    NameRef,
    Literal,
    NameDef,
    FragInvoke,
    ForEach,
    If,
    Switch,
    Break,
    Continue,
    PromptEndsHere,
    Mark,
    Comment,
    "StrFragDef",
    "RolesFragDef",
]


# ---------------------------------------------------------------------------
# Top level
# ---------------------------------------------------------------------------


@dataclass
class PromptSpec(Commentable):
    """`Name[indices]: {body}` — one prompt specification."""

    name: str
    indices: list[Expr] = field(default_factory=list)
    body: list[Element] = field(default_factory=list)


@dataclass
class StrFragDef(Commentable):
    """`StrFrag Name[params]: {body}` — a string fragment (content elements)."""

    name: str
    params: list[Expr] = field(default_factory=list)
    body: list[Element] = field(default_factory=list)


@dataclass
class RolesFragDef(Commentable):
    """`RolesFrag Name[params]: {body}` (also spelled `RoleFrag`) — a roles fragment (role messages)."""

    name: str
    params: list[Expr] = field(default_factory=list)
    body: list[Element] = field(default_factory=list)


TopLevelItem = Union[PromptSpec, StrFragDef, RolesFragDef, Comment]


@dataclass
class File(Node):
    """A whole .acdl file: specifications, fragment definitions and top-level comments, in order."""

    items: list[TopLevelItem] = field(default_factory=list)

    @property
    def specs(self) -> list[PromptSpec]:
        return [i for i in self.items if isinstance(i, PromptSpec)]

    @property
    def fragments(self) -> list[StrFragDef | RolesFragDef]:
        return [i for i in self.items if isinstance(i, (StrFragDef, RolesFragDef))]


# ---------------------------------------------------------------------------
# JSON back to nodes
# ---------------------------------------------------------------------------

_NODE_CLASSES: dict[str, type[Node]] = {
    cls.__name__: cls
    for cls in (
        File, PromptSpec, StrFragDef, RolesFragDef, RoleMessage, ContextVar, PathSegment, TimeIndex, TimeName,
        PlainName, Literal, BinaryOp, UnaryOp, Compare, BoolOp, Not, Paren, ImplicitRange, Template,
        FunctionCall, NameDef, ListComprehension, NameRef, FragInvoke, ForEach, If, IfBranch, Switch,
        SwitchCase, Break, Continue, PromptEndsHere, Mark, Comment,
    )
}


def node_from_dict(data: Any) -> Any:
    """Rebuild nodes from `Node.to_dict()` output (dicts with a "node" key); other values pass through."""
    if isinstance(data, list):
        return [node_from_dict(v) for v in data]
    if not isinstance(data, dict) or "node" not in data:
        return data
    cls = _NODE_CLASSES.get(data["node"])
    if cls is None:
        raise ValueError(f"unknown ACDL node type {data['node']!r}")
    kwargs = {k: node_from_dict(v) for k, v in data.items() if k not in ("node", "span")}
    span = Span(**data["span"]) if isinstance(data.get("span"), dict) else Span()
    return cls(**kwargs, span=span)
