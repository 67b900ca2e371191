"""What every ABL section compiler shares: the diagnostics, the names the project declares, and the
readers of values, expressions and templates with their source positions."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from frontdesk.diagnostics import DiagnosticBag, Span
from frontdesk.ir.expr import Condition, Expr, ExprCondition, Lit, Template, TextPart

from . import codes
from .keywords import KEYWORDS
from .lineparts import split_list
from .outline import Node, _unquote

SESSION = "session"  # the namespace of ABL's session variables (GATHER fields, SET values, MEMORY session)
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
TRUE_WORDS = {"true", "yes", "on"}
FALSE_WORDS = {"false", "no", "off"}


@dataclass
class Names:
    """The names a whole project declares, for checking references across documents."""

    agents: set[str] = field(default_factory=set)
    tools: set[str] = field(default_factory=set)
    profiles: set[str] = field(default_factory=set)
    types: set[str] = field(default_factory=set)
    profile_data: dict[str, Any] = field(default_factory=dict)  # behaviour profile documents, as data
    # persistent memory paths some agent of the project declares (user., project., workflow. memory is
    # shared: an agent that does not declare one reads it as memory too, not as a session value)
    memory_paths: set[str] = field(default_factory=set)
    # the tools each agent declares in its TOOLS (an ON_RETURN map reads the results of the agent it
    # names: `track.status` is the result of that agent's `track`)
    agent_tools: dict[str, set[str]] = field(default_factory=dict)


@dataclass
class SectionContext:
    """One document's compilation: where it is, what the project declares, where problems go."""

    bag: DiagnosticBag
    file: str
    agent: str  # the agent or supervisor being compiled ("" for a tool library or a profile)
    fmt: str = "abl"  # "abl" or "yaml": how keywords are cased in the source
    names: Names = field(default_factory=Names)
    tools: set[str] = field(default_factory=set)  # tools this agent declares
    memory_paths: set[str] = field(default_factory=set)  # persistent memory paths it declares
    fields: set[str] = field(default_factory=set)  # session variables something sets (GATHER, SET, AS, ...)
    _dialect_made: tuple | None = field(default=None, repr=False)  # (the sets, their sizes, the options)

    # ---- diagnostics -------------------------------------------------------------------------

    def error(self, code: str, message: str, node: Node | Span | None, hint: str | None = None) -> None:
        self.bag.error(code, message, _span(node), hint)

    def warning(self, code: str, message: str, node: Node | Span | None, hint: str | None = None) -> None:
        self.bag.warning(code, message, _span(node), hint)

    def unknown_key(self, node: Node, allowed: list[str], where: str) -> None:
        from frontdesk.diagnostics import did_you_mean

        guess = did_you_mean(node.key or "", allowed)
        hint = f"did you mean {guess}?" if guess else f"{where} takes: {', '.join(allowed)}"
        self.error(codes.UNKNOWN_KEY, f"{where} has no key '{node.key}'", node, hint)

    # ---- values ------------------------------------------------------------------------------

    def text(self, node: Node | None) -> str:
        return node.text.strip() if node is not None else ""

    def boolean(self, node: Node | None, default: bool = False) -> bool:
        if node is None or node.value is None:
            return default
        word = node.value.strip().lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
        self.error(codes.BAD_VALUE, f"{node.key} must be true or false, not '{node.value}'", node.value_span())
        return default

    def number(self, node: Node | None, default: float | None = None) -> float | None:
        if node is None or node.value is None:
            return default
        try:
            number = float(node.value.strip())
        except ValueError:
            number = math.nan
        if not math.isfinite(number):  # not a number, or inf / nan, which no count or limit can be
            self.error(codes.BAD_VALUE, f"{node.key} must be a number, not '{node.value}'", node.value_span())
            return default
        return int(number) if number.is_integer() else number

    def choice(self, node: Node | None, allowed: tuple[str, ...], default: str | None = None) -> str | None:
        if node is None or node.value is None:
            return default
        word = node.value.strip()
        if word.lower() in allowed:
            return word.lower()
        from frontdesk.diagnostics import did_you_mean

        guess = did_you_mean(word, list(allowed))
        self.error(codes.BAD_VALUE, f"{node.key} must be one of {', '.join(allowed)}, not '{word}'",
                   node.value_span(), f"did you mean {guess}?" if guess else None)
        return default

    def names_list(self, node: Node | None) -> list[str]:
        """A list of names written `[a, b]`, `a, b`, or as `- a` items."""
        if node is None:
            return []
        out: list[str] = []
        if node.value is not None:
            text = node.value.strip()
            if text.startswith("[") and text.endswith("]"):
                text = text[1:-1]
            out += [part.strip().strip("\"'") for part in text.split(",") if part.strip()]
        for item in node.items():
            for child in item.children:
                if child.key is None and child.value:
                    out.append(child.value.strip())
        return out

    def data(self, node: Node | None) -> Any:
        """The value of an entry as plain data: a YAML flow value (`[a, b]`, `{k: v}`, numbers,
        booleans) parsed, a block turned into a mapping or a list, else the text."""
        if node is None:
            return None
        if node.children:
            if all(c.item for c in node.children):
                return [self._item_data(c) for c in node.children]
            if all(c.key is not None for c in node.children):
                return {_data_key(c.key): self.data(c) for c in node.children}
            return [self.data(c) if c.key is None else {_data_key(c.key): self.data(c)} for c in node.children]
        if node.value is None:
            return None
        if node.quoted or node.block:
            return node.value
        try:
            loaded = yaml.safe_load(node.value)
        except yaml.YAMLError:
            return node.value
        except RecursionError:  # the readers bound the nesting (ABL027); this is the last line of defence
            self.error(codes.TOO_DEEP, "the value is nested too deeply to read", node.value_span(),
                       "flatten the value: split it into several entries")
            return None
        return loaded if isinstance(loaded, (list, dict, int, float, bool)) or loaded is None else node.value

    def _item_data(self, item: Node) -> Any:
        if len(item.children) == 1 and item.children[0].key is None:
            return self.data(item.children[0])
        return {_data_key(c.key) if c.key else "value": self.data(c) for c in item.children}

    # ---- expressions and templates ------------------------------------------------------------

    def expression(self, text: str, node: Node | None, offset: int = 0) -> Expr:
        """`text` (part of `node`'s value from character `offset`) as an ABL expression."""
        from frontdesk.expr import ExprSyntaxError, parse_expression

        try:
            return parse_expression(text, self.agent, **self._dialect())
        except ExprSyntaxError as exc:
            self._bad_expression(exc, node, offset)
            return Lit(value=None)

    def value(self, node: Node) -> Expr:
        """An entry's value as an expression: a quoted value is text (with `{{...}}` filled in), an
        unquoted one an expression (`selected_account.id`, `COALESCE(x, "USD")`, `5`)."""
        if node.value is None and node.items():  # a list written as `- a` items (or [a, b] in YAML)
            from frontdesk.ir.expr import ListLit

            return ListLit(items=[self.value(i.children[0]) for i in node.items() if i.children])
        if node.value is None and node.entries():
            from frontdesk.ir.expr import ObjEntry, ObjLit

            return ObjLit(entries=[ObjEntry(key=c.key, value=self.value(c)) for c in node.entries()])
        text = node.text.strip()
        if not node.quoted and text.startswith("[") and text.endswith("]") and "{{" in text:
            # a list of texts that fill in values: each element as a quoted value would be
            from frontdesk.ir.expr import ListLit

            items = []
            for part in split_list(text[1:-1]):
                inner = _unquote(part.strip())
                items.append(self.value(Node(key=None, value=inner if inner is not None else part.strip(),
                                             span=node.span, quoted=inner is not None)))
            return ListLit(items=items)
        if not node.quoted:
            return self.expression(node.text, node)
        if "{{" not in node.text:
            return Lit(value=node.text)
        return template_as_expr(self.template(node.text, node))

    def delegate_inputs(self, node: Node | None) -> dict[str, Expr]:
        """DELEGATE INPUT (or a DELEGATE step's WITH): `{a, b: expr}` or `a: expr` entries, as argument ->
        the caller's value (a bare name passes the caller's value of that name)."""
        from frontdesk.ir.expr import Ref

        from .lineparts import split_list

        given: dict[str, Expr] = {}
        if node is None:
            return given
        if node.value:
            for part in split_list(node.value.strip().removeprefix("{").removesuffix("}")):
                name, colon, expr = part.partition(":")
                name = name.strip()
                if name:
                    given[name] = self.expression(expr.strip(), node) if colon and expr.strip() else \
                        Ref(scope=SESSION, name=name)
        for entry in node.entries():
            given[entry.key] = self.value(entry) if entry.value else Ref(scope=SESSION, name=entry.key)
        for entry in node.items():  # - a
            text = entry.children[0].text if entry.children else ""
            if text:
                given[text] = Ref(scope=SESSION, name=text)
        return given

    def condition(self, text: str, node: Node | None, offset: int = 0) -> Condition:
        from frontdesk.expr import ExprSyntaxError, parse_condition

        try:
            return parse_condition(text, self.agent, **self._dialect())
        except ExprSyntaxError as exc:
            self._bad_expression(exc, node, offset)
            return ExprCondition(source=text, expr=Lit(value=False))

    def template(self, text: str, node: Node | None) -> Template:
        from frontdesk.expr.handlebars import parse_handlebars
        from frontdesk.expr.template import TemplateSyntaxError

        try:
            return parse_handlebars(text, self.agent, **self._template_dialect())
        except (TemplateSyntaxError, ValueError) as exc:
            column = getattr(exc, "column", 0) or 0
            span = _span(node)
            if node is not None and column and not node.block:
                start = (node.value_column or span.column) + (1 if node.quoted else 0)  # after the quote
                span = Span(file=span.file, line=span.line, column=start + column - 1)
            elif node is not None and column and node.block:
                # a `|` block starts on the next line, indented below its key
                before = text[: column - 1]
                line = span.line + 1 + before.count("\n")
                col = len(before) - (before.rfind("\n") + 1) + 1
                span = Span(file=span.file, line=line, column=span.column + 2 + col - 1)
            self.error(codes.BAD_TEMPLATE, f"bad template: {getattr(exc, 'message', str(exc))}", span,
                       "write {{name}}, {{#if x}}...{{/if}} or {{#each list}}...{{/each}}")
            return Template(source=text, parts=[TextPart(text=text)])

    def _template_dialect(self) -> dict[str, Any]:
        """Options of the expression parser and Handlebars for ABL (see frontdesk.expr.parser). Made
        again only when a set changed (they only grow), not for each of thousands of expressions."""
        sources = (self.tools, self.names.tools, self.memory_paths, self.names.memory_paths)
        sizes = tuple(len(s) for s in sources)
        made = self._dialect_made
        if made is None or made[1] != sizes or any(a is not b for a, b in zip(made[0], sources)):
            made = self._dialect_made = (sources, sizes, {
                "dialect": "abl", "tools": frozenset(self.tools | self.names.tools),
                "memory_paths": frozenset(self.memory_paths | self.names.memory_paths)})
        return dict(made[2])

    def _dialect(self) -> dict[str, Any]:
        return {"paths": "flat", **self._template_dialect()}

    def _bad_expression(self, exc, node: Node | None, offset: int) -> None:
        span = _span(node)
        column = getattr(exc, "column", 0) or 0
        if node is not None and column:
            start = node.value_column or span.column
            span = Span(file=span.file, line=span.line, column=start + offset + column - 1)
        self.error(codes.BAD_EXPRESSION, f"bad expression: {getattr(exc, 'message', str(exc))}", span,
                   getattr(exc, "hint", None))


def _data_key(key: str) -> str:
    """A key as kept in data: a keyword in lowercase (the same from either format), a name as written."""
    return key.lower() if key.upper() in KEYWORDS else key


def template_as_expr(template: Template) -> Expr:
    """A template of text and `{{expr}}` parts as one expression joining them (`"a" + x + "b"`);
    each / if blocks are kept as the template's source text."""
    from frontdesk.ir.expr import Arith, Call, ExprPart

    parts: list[Expr] = []
    for part in template.parts:
        if isinstance(part, TextPart):
            parts.append(Lit(value=part.text))
        elif isinstance(part, ExprPart):
            parts.append(Call(fn="str", args=[part.expr]))
        else:
            return Lit(value=template.source)
    if not parts:
        return Lit(value="")
    out = parts[0]
    for part in parts[1:]:
        out = Arith(arith="+", left=out, right=part)
    return out


def _span(node: Node | Span | None) -> Span | None:
    if node is None or isinstance(node, Span):
        return node
    return node.span
