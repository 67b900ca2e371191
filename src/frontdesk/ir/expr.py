"""The expression and template nodes of the IR: parsed, name-resolved trees the runtime evaluates without parsing text."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class IRModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ---------------------------------------------------------------------------
# Values and names
# ---------------------------------------------------------------------------


class Lit(IRModel):
    """A fixed value: text, a number, True/False, None, or a list/mapping of such."""

    op: Literal["lit"] = "lit"
    value: Any = None


RefSpace = Literal["var", "result", "system", "memory", "local"]


class Ref(IRModel):
    """A named value of the session state, which the runtime's resolver answers.

    `space` says where the runtime looks it up (the evaluator only hands the Ref over):
    - var: a session variable, namespaced by `scope` (e.g. an ADL agent's argument `name`);
    - result: what the tool, agent or subflow `scope` last returned: `status`, `message`, `success`,
      `error`, or one of its values (the ADL front end lowers `tool.value` and `agent.status` here);
    - system: a system variable such as `turn`, `now`, `session_id`, `user_id`, `channel`;
    - memory: persistent memory, with `scope` "user", "project" or "execution_tree";
    - local: a value only the running agent's frame holds (its thread's locals).
    """

    op: Literal["ref"] = "ref"
    scope: str
    name: str
    space: RefSpace = "var"


# The first word of a persistent memory path and the memory scope it names (`user.preferences`,
# `project.rates`, `workflow.current_quote`).
MEMORY_ROOTS: dict[str, str] = {"user": "user", "project": "project", "workflow": "execution_tree"}


def memory_ref(path: str) -> Ref | None:
    """The memory Ref of a persistent path (`user.past_bookings`), or None when it is not one."""
    root, _, rest = path.partition(".")
    scope = MEMORY_ROOTS.get(root)
    return Ref(space="memory", scope=scope, name=rest) if scope and rest else None


def memory_path(ref: Ref) -> str:
    """The persistent path a memory Ref reads (the inverse of `memory_ref`)."""
    root = next((r for r, scope in MEMORY_ROOTS.items() if scope == ref.scope), ref.scope)
    return f"{root}.{ref.name}"


class Local(IRModel):
    """The value bound to `name` by an enclosing `Each` (or a template's each block)."""

    op: Literal["local"] = "local"
    name: str


class Get(IRModel):
    """Member or index access: `obj.key`, `obj[0]`, `obj["id"]`; a missing key or index gives None."""

    op: Literal["get"] = "get"
    obj: Expr
    key: Expr


# ---------------------------------------------------------------------------
# Operators
# ---------------------------------------------------------------------------


class Compare(IRModel):
    op: Literal["cmp"] = "cmp"
    cmp: Literal["==", "!=", "<", ">", "<=", ">=", "in", "not in"]
    left: Expr
    right: Expr


class BoolOp(IRModel):
    op: Literal["and", "or"]
    items: list[Expr]


class Not(IRModel):
    op: Literal["not"] = "not"
    item: Expr


class Implies(IRModel):
    """`left implies right`: true unless left is true and right is not."""

    op: Literal["implies"] = "implies"
    left: Expr
    right: Expr


class IsSet(IRModel):
    """`item is set`: the value is neither None nor empty text ("" or only spaces).

    0, False, [] and {} are set: they are values someone gave. `is not set` is Not(IsSet).
    """

    op: Literal["is_set"] = "is_set"
    item: Expr


class Arith(IRModel):
    """Arithmetic on numbers; `+` also joins two texts or two lists."""

    op: Literal["arith"] = "arith"
    arith: Literal["+", "-", "*", "/", "%"]
    left: Expr
    right: Expr


class Neg(IRModel):
    """Unary minus."""

    op: Literal["neg"] = "neg"
    item: Expr


class Call(IRModel):
    """A call of a function of the registry (frontdesk.expr.functions), e.g. `re.match`, `len`, `NOW`."""

    op: Literal["call"] = "call"
    fn: str
    args: list[Expr] = Field(default_factory=list)


# ---------------------------------------------------------------------------
# Literals with computed items, and item-wise operations
# ---------------------------------------------------------------------------


class ListLit(IRModel):
    """A list whose items are computed (a list of fixed values is a Lit)."""

    op: Literal["list"] = "list"
    items: list[Expr] = Field(default_factory=list)


class ObjEntry(IRModel):
    key: str
    value: Expr


class ObjLit(IRModel):
    """A mapping whose values are computed: `{"id": order.id, "total": price * qty}`."""

    op: Literal["obj"] = "obj"
    entries: list[ObjEntry] = Field(default_factory=list)


EachKind = Literal["filter", "map", "sort_by", "any", "all", "find", "count"]


class Each(IRModel):
    """An item-wise operation over the list `source`, with each item bound to the local `var` in `body`.

    - filter: the items for which body is true;
    - map: body's value for each item;
    - sort_by: the items ordered by body's value (None last, `descending` reverses the rest);
    - any / all: whether body is true for some / every item;
    - find: the first item for which body is true, or None;
    - count: how many items body is true for.

    A source that is None counts as an empty list; a mapping is walked as its values.
    Nested Each nodes may bind the same name: the inner binding shadows the outer one.
    """

    op: Literal["each"] = "each"
    kind: EachKind
    source: Expr
    var: str
    body: Expr
    descending: bool = False


Expr = Annotated[
    Lit | Ref | Local | Get | Compare | BoolOp | Not | Implies | IsSet | Arith | Neg | Call | ListLit | ObjLit | Each,
    Field(discriminator="op"),
]


# ---------------------------------------------------------------------------
# Templates
# ---------------------------------------------------------------------------


class TextPart(IRModel):
    kind: Literal["text"] = "text"
    text: str


class ExprPart(IRModel):
    """A hole (`${name}`, `{{order.id}}`) shown as its value."""

    kind: Literal["expr"] = "expr"
    expr: Expr


class EachPart(IRModel):
    """`{{#each items}}...{{/each}}`: `body` once per item of `items`, with the item bound to `var`
    and its position (0-based) to the local `@index`."""

    kind: Literal["each"] = "each"
    items: Expr
    var: str = "this"
    body: list[TemplatePart] = Field(default_factory=list)


class IfPart(IRModel):
    """`{{#if c}}...{{else}}...{{/if}}` (and `{{#unless c}}`, lowered with Not)."""

    kind: Literal["if"] = "if"
    condition: Expr
    then: list[TemplatePart] = Field(default_factory=list)
    otherwise: list[TemplatePart] = Field(default_factory=list)


TemplatePart = Annotated[TextPart | ExprPart | EachPart | IfPart, Field(discriminator="kind")]


class Template(IRModel):
    """Message text split into literal text, holes whose values are shown, loops and conditionals."""

    source: str
    parts: list[TemplatePart] = Field(default_factory=list)


for _m in (Get, Compare, BoolOp, Not, Implies, IsSet, Arith, Neg, Call, ListLit, ObjEntry, ObjLit, Each,
           ExprPart, EachPart, IfPart, Template):
    _m.model_rebuild()


# ---------------------------------------------------------------------------
# Conditions: an expression, or natural language the user's message is matched against
# ---------------------------------------------------------------------------


class ExprCondition(IRModel):
    kind: Literal["expr"] = "expr"
    source: str
    expr: Expr


class ClaimsCondition(IRModel):
    """A natural-language condition: the user's last message says one of `examples`."""

    kind: Literal["claims"] = "claims"
    source: str
    examples: list[str]


Condition = Annotated[ExprCondition | ClaimsCondition, Field(discriminator="kind")]

