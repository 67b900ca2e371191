"""Compiler of GUARDRAILS: content checks on input, output, tool input and output, and handoffs, by CEL, LLM judge or patterns."""

from __future__ import annotations

import re

from frontdesk.diagnostics import Span
from frontdesk.ir.behaviour import AgentRules, Guardrail

from .. import codes
from ..context import SectionContext
from ..outline import Node
from ._common import NAME, flatten, key

KINDS = ("input", "output", "tool_input", "tool_output", "handoff", "both")
ACTIONS = ("block", "warn", "redact", "fix", "reask", "filter", "escalate", "log", "rewrite")
KEYS = ("kind", "check", "llm_check", "patterns", "action", "msg", "message")


def compile_guardrails(node: Node, ctx: SectionContext, rules: AgentRules) -> None:
    """GUARDRAILS into `rules.guardrails`; `kind: both` becomes <name>_input and <name>_output."""
    seen = {g.name for g in rules.guardrails}
    for child in node.children:
        if child.item:
            props = [child.children[0], *flatten(child)] if child.children else []
            name_node = next((p for p in props if key(p) == "NAME"), None)
            if name_node is None or not ctx.text(name_node):
                ctx.error(codes.MISSING_KEY, "a guardrail item needs NAME", child, "write - name: <guardrail name>")
                continue
            name, where, props = ctx.text(name_node), name_node, [p for p in props if p is not name_node]
        elif child.key is not None:
            name, where, props = child.key, child, child.children
            if child.value is not None and not child.children:
                ctx.error(codes.WRONG_SHAPE, f"the guardrail {name} needs its properties under it", child,
                          "write kind:, check: or llm_check:, action: and msg: under the name")
                continue
        else:
            ctx.error(codes.WRONG_SHAPE, "GUARDRAILS holds <name>: with the guardrail's properties under it", child)
            continue
        if not NAME.fullmatch(name):
            ctx.error(codes.BAD_NAME, f"'{name}' is not a guardrail name", where)
            continue
        for guardrail in _guardrail(name, where, props, ctx):
            if guardrail.name in seen:
                ctx.error(codes.DUPLICATE_NAME, f"GUARDRAILS declares {guardrail.name} twice", where)
                continue
            seen.add(guardrail.name)
            rules.guardrails.append(guardrail)


def _guardrail(name: str, node: Node, props: list[Node], ctx: SectionContext) -> list[Guardrail]:
    by_key: dict[str, Node] = {}
    extra: dict = {}
    for prop in props:
        word = (prop.key or "").lower()
        if prop.key is None or prop.item:
            ctx.error(codes.WRONG_SHAPE, f"the guardrail {name} holds '{prop.text}'", prop, "write <property>: <value>")
        elif word in KEYS:
            by_key["msg" if word == "message" else word] = prop
        else:
            extra[word] = ctx.data(prop)  # provider-backed settings (provider, threshold, ...), kept as written
    kind_node = by_key.get("kind")
    if kind_node is None:
        ctx.error(codes.MISSING_KEY, f"the guardrail {name} has no kind", node,
                  f"add kind: one of {', '.join(KINDS)}")
        return []
    kind = ctx.choice(kind_node, KINDS)
    action_node = by_key.get("action")
    if action_node is None:
        ctx.error(codes.MISSING_KEY, f"the guardrail {name} has no action", node, f"add action: one of {', '.join(ACTIONS)}")
        action = "block"
    else:
        action = ctx.choice(action_node, ACTIONS, "block") or "block"
    guardrail = Guardrail(name=name, kind="input", action=action, extra=extra, span=node.span)  # type: ignore[arg-type]
    check = by_key.get("check")
    if check is not None:
        guardrail.check = ctx.text(check)
        _validate_cel(guardrail.check, check, ctx)
    llm_check = by_key.get("llm_check")
    if llm_check is not None:
        guardrail.llm_check = ctx.text(llm_check)
    patterns = by_key.get("patterns")
    if patterns is not None:
        guardrail.patterns = _patterns(patterns, ctx)
    if not guardrail.check and not guardrail.llm_check and not guardrail.patterns:
        ctx.error(codes.MISSING_KEY, f"the guardrail {name} checks nothing", node,
                  "add check: <CEL predicate>, llm_check: \"<question>\" or patterns: [...]")
    msg = by_key.get("msg")
    if msg is not None:
        guardrail.message = ctx.template(msg.text, msg)
    if kind is None:
        return []
    if kind == "both":
        # the output copy checks the bot's text under whichever name the check reads (`input` or `output`)
        return [guardrail.model_copy(update={"name": f"{name}_input", "kind": "input"}, deep=True),
                guardrail.model_copy(update={"name": f"{name}_output", "kind": "output",
                                             "extra": {**guardrail.extra, "both": True}}, deep=True)]
    guardrail.kind = kind  # type: ignore[assignment]
    return [guardrail]


def _patterns(node: Node, ctx: SectionContext) -> list[str]:
    data = ctx.data(node)
    items = data if isinstance(data, list) else [data] if isinstance(data, str) and data else None
    if items is None:
        ctx.error(codes.WRONG_SHAPE, "patterns is a list of regular expressions", node)
        return []
    out = []
    for item in items:
        text = str(item)
        try:
            re.compile(text)
        except re.error as exc:
            ctx.error(codes.BAD_VALUE, f"'{text}' is not a valid regular expression: {exc}", node)
            continue
        out.append(text)
    return out


def _validate_cel(text: str, node: Node, ctx: SectionContext) -> None:
    """ABL016 when the check is not usable CEL (at its line and column)."""
    from frontdesk.expr.cel import check_cel

    problem = check_cel(text)
    if problem is None:
        return
    base = node.value_span()
    if node.block:
        where = Span(file=base.file, line=node.span.line + problem.line, column=problem.column)
    else:
        where = Span(file=base.file, line=base.line,
                     column=base.column + (1 if node.quoted else 0) + problem.column - 1)
    ctx.error(codes.BAD_CEL, f"the check is not valid CEL: {problem.message}", where, problem.hint)
