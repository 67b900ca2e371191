"""The ACDL rules the paper states (scoping, roles, fragments, names, loops, marks) as diagnostics."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from frontdesk.diagnostics import Diagnostic, DiagnosticBag, did_you_mean

from . import codes
from .ast import (
    CHAT_ROLES,
    NAMESPACES,
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
    ImplicitRange,
    ListComprehension,
    Literal,
    Mark,
    NameDef,
    NameRef,
    Not,
    Paren,
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
    walk,
)
from .parser import is_all_caps

__all__ = ["check_file"]

_CONTENT = (Template, ContextVar, FunctionCall, NameRef, Literal)
_CONTROL = (ForEach, If, Switch)
_FRAGMENT_DEFS = (StrFragDef, RolesFragDef)
# How many candidate names "did you mean" may compare in one file: each comparison costs microseconds,
# and a file with thousands of undefined references and thousands of definitions would otherwise take
# their product. Past the budget the hint says how to define the name instead.
SUGGESTION_BUDGET = 20_000


@dataclass
class _Context:
    """Where the checker is: inside which role, fragment kind, loops and name scopes."""

    role: RoleMessage | None = None  # the enclosing role message, if any
    str_frag: bool = False  # inside a StrFrag body
    loops: int = 0
    top: bool = True  # directly at the top level of a prompt / RolesFrag body (no control flow between)
    names: list[dict[str, NameDef]] = field(default_factory=lambda: [{}])
    variables: frozenset[str] = frozenset()  # loop variables and parameters in scope

    def inner(self, **changes: Any) -> "_Context":
        values = {
            "role": self.role,
            "str_frag": self.str_frag,
            "loops": self.loops,
            "top": self.top,
            "names": self.names + [{}],
            "variables": self.variables,
        }
        values.update(changes)
        return _Context(**values)

    @property
    def in_content(self) -> bool:
        """Inside a role message or a string fragment: content elements belong here."""
        return self.role is not None or self.str_frag

    def lookup(self, name: str) -> NameDef | None:
        for scope in reversed(self.names):
            if name in scope:
                return scope[name]
        return None

    def visible_names(self) -> list[str]:
        return [n for scope in self.names for n in scope]


def check_file(file_ast: File) -> list[Diagnostic]:
    """Every rule violation in a parsed file, sorted by position."""
    checker = _Checker()
    checker.run(file_ast)
    return checker.bag.sorted()


class _Checker:
    def __init__(self) -> None:
        self.bag = DiagnosticBag()
        self.fragments: dict[str, StrFragDef | RolesFragDef] = {}
        self.all_names: set[str] = set()
        self.suggestion_work = 0  # candidate names compared so far, see SUGGESTION_BUDGET

    def _did_you_mean(self, word: str, candidates: Iterable[str]) -> str | None:
        """`did_you_mean` while the file's SUGGESTION_BUDGET lasts, then None."""
        pool = list(candidates)
        if self.suggestion_work + len(pool) > SUGGESTION_BUDGET:
            return None
        self.suggestion_work += len(pool)
        return did_you_mean(word, pool)

    # ---- file level

    def run(self, file_ast: File) -> None:
        self._definitions(file_ast)
        self.all_names = {n.name for n in walk(file_ast) if isinstance(n, NameDef)}
        for item in file_ast.items:
            if isinstance(item, Comment):
                continue
            self.definition(item)

    def _definitions(self, file_ast: File) -> None:
        seen: dict[str, Any] = {}
        for node in walk(file_ast):
            if not isinstance(node, (PromptSpec, StrFragDef, RolesFragDef)):
                continue
            if node.name in seen:
                first = seen[node.name]
                self.bag.error(
                    codes.DUPLICATE_DEFINITION,
                    f"{_kind_name(node)} '{node.name}' is already defined as {_kind_name(first)} at line {first.span.line}",
                    node.span,
                    hint="give each specification and fragment its own name",
                )
                continue
            seen[node.name] = node
            if isinstance(node, _FRAGMENT_DEFS):
                self.fragments[node.name] = node

    def definition(self, node: PromptSpec | StrFragDef | RolesFragDef) -> None:
        params = node.indices if isinstance(node, PromptSpec) else node.params
        variables = frozenset(_plain_names(params))
        for expr in params:
            self.expr(expr, _Context(variables=variables))
        if isinstance(node, StrFragDef):
            ctx = _Context(str_frag=True, top=False, variables=variables)
        else:
            ctx = _Context(variables=variables)
        self.body(node.body, ctx)
        if isinstance(node, PromptSpec):
            self._completion_rules(node)

    # ---- completion format (N:)

    def _completion_rules(self, spec: PromptSpec) -> None:
        roles = [n for n in walk(spec) if isinstance(n, RoleMessage)]
        n_roles = [r for r in roles if r.role == "N"]
        if not n_roles:
            return
        chat = [r for r in roles if r.role in CHAT_ROLES]
        if chat:
            first_chat = chat[0]
            self.bag.error(
                codes.N_WITH_CHAT_ROLES,
                f"'N:' (completion format) cannot be mixed with chat roles ('{first_chat.role}:' at line {first_chat.span.line})",
                n_roles[0].span,
                hint="a completion prompt is a single N: block; use S:/U:/A:/T: messages for chat prompts",
            )
        for extra in n_roles[1:]:
            self.bag.error(
                codes.N_TWICE, "a prompt may have only one 'N:' block", extra.span,
                hint=f"merge it into the N: block at line {n_roles[0].span.line}",
            )
        for element in spec.body:
            if isinstance(element, Comment) or (isinstance(element, RoleMessage) and element.role == "N"):
                continue
            if isinstance(element, RoleMessage):
                continue  # chat roles: reported above
            self.bag.error(
                codes.N_NOT_ALONE,
                f"{_describe(element)} outside the 'N:' block of a completion prompt",
                element.span,
                hint="in a completion prompt everything goes inside the single N: { ... } block",
            )

    # ---- bodies and elements

    def body(self, elements: list[Any], ctx: _Context) -> None:
        prev: Any = None
        for element in elements:
            self.element(element, ctx, prev)
            if not isinstance(element, Comment):
                prev = element

    def element(self, node: Any, ctx: _Context, prev: Any = None) -> None:
        if isinstance(node, Comment):
            return
        if isinstance(node, RoleMessage):
            self.role_message(node, ctx)
        elif isinstance(node, _CONTENT):
            self.content(node, ctx, prev)
        elif isinstance(node, FragInvoke):
            self.frag_invoke(node, ctx)
        elif isinstance(node, NameDef):
            self.name_def(node, ctx)
        elif isinstance(node, ForEach):
            self.for_each(node, ctx)
        elif isinstance(node, If):
            for branch in node.branches:
                self.expr(branch.condition, ctx)
                self.body(branch.body, ctx.inner(top=False))
            if node.else_body is not None:
                self.body(node.else_body, ctx.inner(top=False))
        elif isinstance(node, Switch):
            self.expr(node.expr, ctx)
            for case in node.cases:
                self.expr(case.value, ctx)
                self.body(case.body, ctx.inner(top=False))
            if node.default is not None:
                self.body(node.default, ctx.inner(top=False))
        elif isinstance(node, Mark):
            if node.number is None:
                self.bag.error(
                    codes.MARK_WITHOUT_NUMBER, "Mark needs a number", node.span,
                    hint="write Mark 1 { ... }; the number is shown beside the bracket as ]1",
                )
            # a Mark only draws a bracket: what it defines stays visible after it (no scope of its own)
            self.body(node.body, ctx.inner(names=ctx.names))
        elif isinstance(node, (Break, Continue)):
            if ctx.loops == 0:
                word = "break" if isinstance(node, Break) else "continue"
                self.bag.error(codes.JUMP_OUTSIDE_LOOP, f"'{word}' outside a ForEach loop", node.span, hint=f"use {word} only inside ForEach(...) {{ ... }}")
        elif isinstance(node, PromptEndsHere):
            if ctx.in_content:
                where = "a role message" if ctx.role is not None else "a string fragment"
                self.bag.error(
                    codes.ENDS_HERE_IN_ROLE, f"PromptEndsHere inside {where}", node.span,
                    hint="PromptEndsHere ends the message sequence; put it between role messages",
                )
            if node.cond is not None:
                self.expr(node.cond, ctx)
        elif isinstance(node, _FRAGMENT_DEFS):
            if ctx.in_content or not ctx.top:
                self.bag.error(
                    codes.NESTED_FRAGMENT_DEF, f"fragment definition '{node.name}' must be at the top level", node.span,
                    hint="define fragments at the top level of the file (or of a prompt body)",
                )
            self.definition(node)

    def role_message(self, node: RoleMessage, ctx: _Context) -> None:
        if ctx.role is not None:
            self.bag.error(
                codes.NESTED_ROLE, f"role message '{node.role}:' inside the '{ctx.role.role}:' message at line {ctx.role.span.line}",
                node.span, hint="role messages cannot nest; close the outer message first",
            )
        elif ctx.str_frag:
            self.bag.error(
                codes.ROLE_IN_STR_FRAG, f"role message '{node.role}:' inside a StrFrag", node.span,
                hint="string fragments produce content only; use RolesFrag for role messages",
            )
        if node.form == "single" and node.body:
            only = node.body[0]
            if isinstance(only, _CONTROL):
                self.bag.error(
                    codes.CONTROL_IN_SINGLE_ROLE, f"{_describe(only)} in a single-line role message", only.span,
                    hint=f"use the braced form: {node.role}: {{ ... }}",
                )
            elif not isinstance(only, (RoleMessage, FragInvoke) + _CONTENT):
                self.bag.error(
                    codes.CONTROL_IN_SINGLE_ROLE, f"{_describe(only)} cannot be the content of a single-line role message",
                    only.span, hint=f"a single-line role holds one template, variable or function; use {node.role}: {{ ... }}",
                )
        self.body(node.body, ctx.inner(role=node, top=False))

    def content(self, node: Any, ctx: _Context, prev: Any) -> None:
        if isinstance(node, Template) and node.args is None and node.name in ROLES and not ctx.in_content:
            self.bag.error(
                codes.MISSING_ROLE_COLON, f"missing ':' after role letter '{node.name}'", node.span,
                hint=f"write '{node.name}: ...'",
            )
        elif not ctx.in_content:
            if isinstance(prev, Template) and prev.name in ROLES and prev.args is None and prev.span.line == node.span.line:
                pass  # `U env.x`: already reported as a missing ':' after the role letter
            elif isinstance(prev, RoleMessage) and prev.form == "single" and prev.span.line == node.span.line:
                self.bag.error(
                    codes.SECOND_ELEMENT_ON_ROLE_LINE, f"a second element after the single-line '{prev.role}:' message", node.span,
                    hint=f"a single-line role message holds exactly one element; write {prev.role}: {{ ... }} for several",
                )
            else:
                self.bag.error(
                    codes.CONTENT_OUTSIDE_ROLE, f"{_describe(node)} outside a role message", node.span,
                    hint="content goes inside a role message, e.g. U: { ... }",
                )
        self.expr(node, ctx)

    def frag_invoke(self, node: FragInvoke, ctx: _Context, in_expression: bool = False) -> None:
        definition = self.fragments.get(node.name)
        for arg in node.args:
            self.expr(arg, ctx)
        if definition is None:
            suggestion = self._did_you_mean(node.name, self.fragments)
            hint = f"did you mean '{suggestion}'?" if suggestion else "define it with StrFrag Name[params]: { ... } or RolesFrag Name[params]: { ... }"
            self.bag.error(codes.UNDEFINED_FRAGMENT, f"fragment '{node.name}' is not defined", node.span, hint=hint)
            return
        if in_expression:
            if isinstance(definition, RolesFragDef):
                self.bag.error(
                    codes.ROLES_FRAG_IN_ROLE, f"roles fragment '{node.name}' used as a value", node.span,
                    hint="only string fragments can be arguments; roles fragments expand to role messages",
                )
        elif isinstance(definition, StrFragDef) and not ctx.in_content:
            self.bag.error(
                codes.STR_FRAG_OUTSIDE_ROLE, f"string fragment '{node.name}' invoked outside a role message", node.span,
                hint=f"string fragments expand to content: invoke it inside a role, e.g. U: {{ Frag {node.name}[...] }}",
            )
        elif isinstance(definition, RolesFragDef) and ctx.in_content:
            self.bag.error(
                codes.ROLES_FRAG_IN_ROLE, f"roles fragment '{node.name}' invoked inside a role message", node.span,
                hint="roles fragments expand to role messages: invoke it where a role message could stand",
            )
        if len(node.args) != len(definition.params):
            self.bag.error(
                codes.FRAGMENT_ARITY,
                f"fragment '{node.name}' takes {len(definition.params)} argument{'s' if len(definition.params) != 1 else ''}, "
                f"given {len(node.args)}",
                node.span,
                hint=f"it is defined at line {definition.span.line} with [{', '.join(_short(p) for p in definition.params)}]",
            )

    def name_def(self, node: NameDef, ctx: _Context) -> None:
        if isinstance(node.value, ListComprehension):
            comp = node.value
            self.expr(comp.iterable, ctx)
            inner = ctx.inner(variables=ctx.variables | {comp.var})
            self.expr(comp.element, inner)
        else:
            self.expr(node.value, ctx)
        scope = ctx.names[-1]
        if node.name in scope:
            self.bag.warning(
                codes.NAME_REDEFINED, f"Name '{node.name}' is defined again (first at line {scope[node.name].span.line})", node.span,
                hint="choose a different name, or remove one definition",
            )
        scope[node.name] = node

    def for_each(self, node: ForEach, ctx: _Context) -> None:
        self.expr(node.iterable, ctx)
        inner = ctx.inner(loops=ctx.loops + 1, top=False, variables=ctx.variables | {node.var})
        self.body(node.body, inner)

    # ---- expressions

    def expr(self, node: Any, ctx: _Context) -> None:
        if node is None:
            return
        if isinstance(node, ContextVar):
            self._namespace(node, ctx)
            for index in node.namespace_indices:
                self.expr(index, ctx)
            for segment in node.path:
                for index in segment.indices:
                    self.expr(index, ctx)
        elif isinstance(node, Template):
            if not is_all_caps(node.name) and node.name not in ROLES:
                self.bag.warning(
                    codes.TEMPLATE_NAME, f"template '{node.name}' is not ALL_CAPS", node.span,
                    hint=_template_hint(node.name),
                )
            for arg in node.args or []:
                self.expr(arg, ctx)
        elif isinstance(node, FunctionCall):
            if is_all_caps(node.name) and len(node.name) > 1:
                self.bag.error(
                    codes.CAPS_FUNCTION, f"ALL_CAPS name '{node.name}' used as a function with an index list", node.span,
                    hint="ALL_CAPS names are templates and take no [indices]; name functions in camelCase or lower_snake",
                )
            elif node.name[:1].isupper():
                self.bag.warning(
                    codes.FUNCTION_NAME, f"function '{node.name}' starts with a capital letter", node.span,
                    hint=f"function names are camelCase or lower_snake ('{node.name[0].lower() + node.name[1:]}'); "
                    "templates are ALL_CAPS",
                )
            if node.name == "range" and not 1 <= len(node.args) <= 3:
                self.bag.error(
                    codes.RANGE_ARITY, f"range takes 1 to 3 arguments (start, stop, step), given {len(node.args)}", node.span,
                    hint="write range(1, @T) or range(1, @T, 2)",
                )
            for part in list(node.args) + list(node.indices):
                self.expr(part, ctx)
        elif isinstance(node, (NameRef, TimeName)):
            if ctx.lookup(node.name) is None:
                later = self._defined_later(node.name)
                suggestion = self._did_you_mean(node.name, ctx.visible_names())
                if suggestion:
                    hint = f"did you mean '${suggestion}'?"
                elif later:
                    hint = "a Name is visible after its definition, in the same block and the blocks inside it"
                else:
                    hint = f"define it first: Name {node.name} := ..."
                shown = node.text if isinstance(node, TimeName) else f"${node.name}"
                message = f"'{shown}' is used before its Name definition or outside its block" if later else f"'{shown}' is not defined"
                self.bag.error(codes.UNDEFINED_NAME, message, node.span, hint=hint)
            if isinstance(node, TimeName):
                return
            for index in node.indices:
                self.expr(index, ctx)
            for segment in node.path:
                for index in segment.indices:
                    self.expr(index, ctx)
        elif isinstance(node, (BinaryOp, Compare, BoolOp)):
            self.expr(node.left, ctx)
            self.expr(node.right, ctx)
        elif isinstance(node, (UnaryOp, Not)):
            self.expr(node.operand, ctx)
        elif isinstance(node, Paren):
            self.expr(node.expr, ctx)
        elif isinstance(node, ImplicitRange):
            for arg in node.args:
                self.expr(arg, ctx)
        elif isinstance(node, FragInvoke):
            self.frag_invoke(node, ctx, in_expression=True)
        elif isinstance(node, ListComprehension):
            self.expr(node.iterable, ctx)
            self.expr(node.element, ctx.inner(variables=ctx.variables | {node.var}))
        # TimeIndex, PlainName, Literal: nothing to check

    def _defined_later(self, name: str) -> bool:
        return name in self.all_names

    def _namespace(self, node: ContextVar, ctx: _Context) -> None:
        if node.namespace in NAMESPACES or node.namespace in ctx.variables:
            return
        suggestion = did_you_mean(node.namespace, NAMESPACES)
        hint = f"did you mean '{suggestion}'?" if suggestion else None
        if hint is None:
            hint = "context variables start with env (environment), sys (system state) or resp (earlier LLM responses)"
        self.bag.error(codes.UNKNOWN_NAMESPACE, f"unknown namespace '{node.namespace}'", node.span, hint=hint)


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def _plain_names(exprs: Iterable[Any]) -> list[str]:
    names = []
    for expr in exprs:
        if isinstance(expr, PlainName):
            names.append(expr.name)
        elif isinstance(expr, TimeIndex) and isinstance(expr.parts[0], str):
            names.append(str(expr.parts[0]))
    return names


def _kind_name(node: Any) -> str:
    if isinstance(node, StrFragDef):
        return "string fragment"
    if isinstance(node, RolesFragDef):
        return "roles fragment"
    return "specification"


def _describe(node: Any) -> str:
    names = {
        ForEach: "ForEach", If: "If", Switch: "Switch", Mark: "Mark", NameDef: "a Name definition",
        Break: "break", Continue: "continue", PromptEndsHere: "PromptEndsHere", FragInvoke: "a fragment invocation",
        RoleMessage: "a role message", StrFragDef: "a StrFrag definition", RolesFragDef: "a RolesFrag definition",
    }
    if isinstance(node, Template):
        return f"template '{node.name}'"
    if isinstance(node, ContextVar):
        return f"context variable '{node.namespace}{'.' + node.path[0].name if node.path else ''}'"
    if isinstance(node, FunctionCall):
        return f"function '{node.name}(...)'"
    if isinstance(node, NameRef):
        return f"'${node.name}'"
    if isinstance(node, Literal):
        return "a literal"
    return names.get(type(node), type(node).__name__)


def _short(expr: Any) -> str:
    from .printer import format_expr

    try:
        return format_expr(expr)
    except TypeError:
        return "?"


def _template_hint(name: str) -> str:
    import re

    caps = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()
    return f"templates are ALL_CAPS with underscores ('{caps}'); a context variable needs its namespace (env., sys., resp.)"
