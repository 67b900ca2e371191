"""Compilers of EXECUTION (model, limits, timeouts, pre-classification pipeline), HOOKS, ON_START and ACTION_HANDLERS / interactive ACTIONS."""

from __future__ import annotations

import re
from typing import Any

from frontdesk.diagnostics import did_you_mean
from frontdesk.ir.behaviour import ActionElement, AgentRules, Hook
from frontdesk.ir.expr import Expr
from frontdesk.ir.models import ORCHESTRATION_STRATEGIES

from .. import codes
from ..context import SectionContext
from ..outline import Node
from ..lineparts import split_top
from ._common import NAME, expression, flatten, key, span_at, value_of
from .rules import apply_directives, parse_action

HOOK_EVENTS = ("before_agent", "after_agent", "before_turn", "after_turn")
# execution.pipeline (abl-specification 3.15): key -> bool, a choice, "text", "ratio", "count", "list" or a block
PIPELINE: dict[str, Any] = {
    "enabled": bool, "mode": ("parallel", "sequential"), "model": "text",
    "shortCircuit": {"enabled": bool, "confidenceThreshold": "ratio"},
    "toolFilter": {"enabled": bool, "maxTools": "count"},
    "keywordVeto": {"enabled": bool, "keywords": "list"},
}
TIMEOUTS = {"tool_timeout_ms": "tool_timeout", "llm_timeout_ms": "llm_timeout", "session_timeout_ms": "session_timeout"}
_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?", re.DOTALL)


# ---- EXECUTION --------------------------------------------------------------------------------------


def compile_execution(node: Node, ctx: SectionContext, rules: AgentRules) -> None:
    """EXECUTION into `rules.execution` (times in seconds); other keys are kept in `extra` as written."""
    settings = rules.execution
    for child in node.children:
        word = (child.key or "").lower()
        if child.key is None or child.item:
            ctx.error(codes.WRONG_SHAPE, f"EXECUTION holds '{child.text}'", child, "write <setting>: <value>")
        elif word == "model":
            settings.model = ctx.text(child)
        elif word == "temperature":
            value = ctx.number(child)
            if value is not None and not 0 <= value <= 2:
                ctx.error(codes.BAD_VALUE, "temperature is between 0 and 2", child.value_span())
            elif value is not None:
                settings.temperature = float(value)
        elif word in ("max_iterations", "max_flow_iterations"):
            count = _count(child, ctx)
            if count is not None:
                setattr(settings, word, count)
        elif word == "timeouts":
            _timeouts(child, ctx, rules)
        elif word == "orchestration":  # a supervisor's strategy (runtime/orchestration.py)
            text = str(ctx.text(child) or "").strip().lower()
            if text in ORCHESTRATION_STRATEGIES:
                settings.extra[word] = text
            else:
                ctx.error(codes.BAD_VALUE, f"unknown orchestration strategy '{text}'", child.value_span(),
                          "one of " + ", ".join(ORCHESTRATION_STRATEGIES))
        elif word == "pipeline":
            _check_block(child, PIPELINE, ctx, "pipeline")
            data = ctx.data(child)
            settings.pipeline = data if isinstance(data, dict) else {}
        else:
            settings.extra[word] = ctx.data(child)  # keys in lowercase, the same from .abl and .agent.yaml


def _count(node: Node, ctx: SectionContext) -> int | None:
    value = ctx.number(node)
    if value is None:
        return None
    if isinstance(value, float) or value < 1:
        ctx.error(codes.BAD_VALUE, f"{node.key} is a whole number of 1 or more", node.value_span())
        return None
    return int(value)


def _timeouts(node: Node, ctx: SectionContext, rules: AgentRules) -> None:
    for child in node.children:
        word = (child.key or "").lower()
        if child.key is None or child.item:
            ctx.error(codes.WRONG_SHAPE, f"timeouts holds '{child.text}'", child)
            continue
        value = ctx.number(child)
        if value is None:
            continue
        if value <= 0:
            ctx.error(codes.BAD_VALUE, f"{child.key} is a number of milliseconds above 0", child.value_span())
        elif word in TIMEOUTS:
            setattr(rules.execution, TIMEOUTS[word], value / 1000)
        elif word == "voice_latency_target_ms":
            rules.execution.extra.setdefault("timeouts", {})[child.key] = value
        else:
            ctx.unknown_key(child, [*TIMEOUTS, "voice_latency_target_ms"], "timeouts")


def _check_block(node: Node, schema: dict[str, Any], ctx: SectionContext, where: str) -> None:
    by_lower = {k.lower(): (k, v) for k, v in schema.items()}
    for child in node.children:
        found = by_lower.get((child.key or "").lower())
        if child.key is None or child.item:
            ctx.error(codes.WRONG_SHAPE, f"{where} holds '{child.text}'", child)
            continue
        if found is None:
            ctx.unknown_key(child, list(schema), where)
            continue
        name, kind = found
        if isinstance(kind, dict):
            if child.value is not None and not child.children:
                ctx.error(codes.WRONG_SHAPE, f"{name} holds settings under it", child)
            _check_block(child, kind, ctx, f"{where}.{name}")
        elif kind is bool:
            ctx.boolean(child)
        elif isinstance(kind, tuple):
            ctx.choice(child, kind)
        elif kind == "ratio":
            value = ctx.number(child)
            if value is not None and not 0 <= value <= 1:
                ctx.error(codes.BAD_VALUE, f"{name} is between 0 and 1", child.value_span())
        elif kind == "count":
            _count(child, ctx)
        elif kind == "list" and not isinstance(ctx.data(child), list):
            ctx.error(codes.WRONG_SHAPE, f"{name} is a list: [a, b]", child)


# ---- HOOKS, ON_START, ACTION_HANDLERS -----------------------------------------------------------------


def compile_hooks(node: Node, ctx: SectionContext, rules: AgentRules) -> None:
    """HOOKS (before_agent, after_agent, before_turn, after_turn) into `rules.hooks`."""
    seen: set[str] = set()
    for child in node.children:
        word = (child.key or "").lower()
        if child.key is None or child.item:
            ctx.error(codes.WRONG_SHAPE, "HOOKS holds before_turn:, after_turn:, before_agent: and after_agent:", child)
        elif word not in HOOK_EVENTS:
            ctx.unknown_key(child, list(HOOK_EVENTS), "HOOKS")
        elif word in seen:
            ctx.error(codes.DUPLICATE_NAME, f"HOOKS has {child.key} twice", child)
        else:
            seen.add(word)
            rules.hooks.append(hook(word, child, ctx))


def compile_on_start(node: Node, ctx: SectionContext, rules: AgentRules) -> None:
    """ON_START (RESPOND / SET / CALL ... run when the agent activates) into a hook of event "on_start"."""
    items = node.items()
    if items:
        for item in items:
            rules.hooks.append(_hook_of("on_start", item, item.children, ctx))
        for other in node.children:
            if not other.item:
                ctx.error(codes.WRONG_SHAPE, "ON_START is a block of directives or a list of them, not both", other)
        return
    rules.hooks.append(hook("on_start", node, ctx))


def compile_action_handlers(node: Node, ctx: SectionContext, rules: AgentRules) -> None:
    """ACTION_HANDLERS (`<action id>:` with SET / RESPOND / CALL / THEN) into hooks of event
    "action:<id>"; a list of interactive elements (BUTTON / SELECT / INPUT) into `rules.actions`."""
    if node.items():
        for element in parse_action_elements(node, ctx):
            if any(e.id == element.id for e in rules.actions):
                ctx.error(codes.DUPLICATE_NAME, f"two actions have the ID {element.id}", element.span)
                continue
            rules.actions.append(element)
    seen = {h.event for h in rules.hooks}
    for child in node.children:
        if child.item:
            continue
        if child.key is None:
            ctx.error(codes.WRONG_SHAPE, "ACTION_HANDLERS holds <action id>: with what to do under it", child)
            continue
        event = f"action:{child.key}"
        if event in seen:
            ctx.error(codes.DUPLICATE_NAME, f"two handlers for the action {child.key}", child)
            continue
        seen.add(event)
        rules.hooks.append(hook(event, child, ctx))


def hook(event: str, node: Node, ctx: SectionContext) -> Hook:
    """A hook from a block of directives: CALL (with WITH / AS), RESPOND, SET, CLEAR, THEN, ..."""
    if node.value is not None and node.text.strip() and not node.children:
        return Hook(event=event, action=parse_action(node, ctx), span=node.span)
    if node.value is not None and node.text.strip():
        ctx.error(codes.WRONG_SHAPE, f"{node.key} takes a block of directives under it, not a value", node.value_span())
    return _hook_of(event, node, node.children, ctx)


def _hook_of(event: str, at: Node, nodes: list[Node], ctx: SectionContext) -> Hook:
    result = Hook(event=event, span=at.span)
    directives = []
    for child in nodes:
        if key(child) == "CALL":
            _call(child, result, ctx)
        else:
            directives.append(child)
    apply_directives(directives, result.action, ctx)
    return result


def _call(node: Node, result: Hook, ctx: SectionContext) -> None:
    text = node.text.strip()
    found = _CALL.fullmatch(text)
    if not found:
        ctx.error(codes.WRONG_SHAPE, f"CALL: '{text}' is not <tool> or <tool>(<args>)", node.value_span())
        return
    name = found.group(1)
    known = ctx.tools | ctx.names.tools
    if known and name not in known:
        guess = did_you_mean(name, sorted(known))
        ctx.error(codes.UNKNOWN_TOOL, f"CALL names {name}, which this agent does not declare", node.value_span(),
                  f"did you mean {guess}?" if guess else "declare it under TOOLS:")
    result.call = name
    if found.group(2) is not None:
        result.args.update(_call_args(found.group(2), node, found.start(2), ctx))
    for child in node.children:
        word = key(child)
        if word == "WITH":
            for entry in child.children:
                if entry.key is None or entry.item or not entry.text.strip():
                    ctx.error(codes.WRONG_SHAPE, "WITH holds <parameter>: <expression> entries", entry)
                    continue
                result.args[entry.key] = value_of(ctx, entry)
        elif word == "AS":
            name_as = ctx.text(child)
            if NAME.fullmatch(name_as):
                result.action.extra["result_as"] = name_as
                ctx.fields.add(name_as)
            else:
                ctx.error(codes.BAD_NAME, f"AS needs a variable name, not '{name_as}'", child.value_span())
        else:
            ctx.unknown_key(child, ["WITH", "AS"], "CALL") if child.key else ctx.error(
                codes.WRONG_SHAPE, "CALL holds WITH: and AS:", child)


def _call_args(text: str, node: Node, offset: int, ctx: SectionContext) -> dict[str, Expr]:
    """`tool(a, b)` (each a variable passed under its own name) or `tool(p: <expr>, q = <expr>)`."""
    out: dict[str, Expr] = {}
    for part, at in split_top(text):
        named = re.match(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?::|=(?!=))\s*", part)
        if named:
            out[named.group(1)] = expression(ctx, part[named.end():], node, offset + at + named.end())
        elif NAME.fullmatch(part):
            out[part] = expression(ctx, part, node, offset + at)
        else:
            ctx.error(codes.WRONG_SHAPE, f"'{part}' needs a parameter name", span_at(node, offset + at),
                      "write <parameter>: <expression>, or use WITH:")
    return out


# ---- interactive elements ---------------------------------------------------------------------------

ELEMENT_KINDS = ("BUTTON", "SELECT", "INPUT")
ELEMENT_KEYS = ("ID", "VALUE", "OPTIONS", "TYPE", "PLACEHOLDER", "REQUIRED", "LABEL")
INPUT_TYPES = ("text", "number", "date", "time", "email")


def parse_action_elements(node: Node, ctx: SectionContext) -> list[ActionElement]:
    """The interactive elements of an ACTIONS list (`- BUTTON: "label"` with ID / VALUE, `- SELECT:`
    with OPTIONS, `- INPUT:` with TYPE / PLACEHOLDER / REQUIRED)."""
    out: list[ActionElement] = []
    ids: set[str] = set()
    for item in node.items():
        if not item.children:
            continue
        first = item.children[0]
        kind = key(first)
        if kind not in ELEMENT_KINDS:
            ctx.error(codes.WRONG_SHAPE, "an action is - BUTTON:, - SELECT: or - INPUT:", first)
            continue
        props = {key(p): p for p in flatten(item) if p.key is not None and not p.item}
        for prop in flatten(item):
            if prop.key is None or prop.item:
                ctx.error(codes.WRONG_SHAPE, f"an action holds '{prop.text}'", prop)
            elif key(prop) not in ELEMENT_KEYS:
                ctx.unknown_key(prop, list(ELEMENT_KEYS), f"a {kind}")
        id_node = props.get("ID")
        if id_node is None or not NAME.fullmatch(ctx.text(id_node)):
            ctx.error(codes.MISSING_KEY if id_node is None else codes.BAD_NAME,
                      f"a {kind} needs an ID that is a name", id_node or first, "add ID: <name>")
            continue
        element = ActionElement(kind=kind.lower(), id=ctx.text(id_node), label=ctx.text(first),  # type: ignore[arg-type]
                                span=first.span)
        if element.id in ids:
            ctx.error(codes.DUPLICATE_NAME, f"two actions have the ID {element.id}", id_node)
            continue
        ids.add(element.id)
        if "LABEL" in props:
            element.label = ctx.text(props["LABEL"])
        if "VALUE" in props:
            element.value = ctx.data(props["VALUE"])
        if kind == "SELECT":
            element.options = _options(props.get("OPTIONS"), first, ctx)
        if kind == "INPUT":
            element.input_type = ctx.choice(props.get("TYPE"), INPUT_TYPES, "text")  # type: ignore[assignment]
            element.placeholder = ctx.text(props.get("PLACEHOLDER"))
            element.required = ctx.boolean(props.get("REQUIRED"))
        out.append(element)
    return out


def _options(node: Node | None, at: Node, ctx: SectionContext) -> list[dict[str, Any]]:
    if node is None:
        ctx.error(codes.MISSING_KEY, "a SELECT needs OPTIONS", at, "add OPTIONS: with - { id: ..., label: ... } items")
        return []
    data = ctx.data(node)
    if not isinstance(data, list):
        ctx.error(codes.WRONG_SHAPE, "OPTIONS is a list of { id, label } choices", node)
        return []
    out = []
    for option in data:
        if isinstance(option, dict) and "id" in option:
            out.append({"id": str(option["id"]), "label": str(option.get("label", option["id"]))})
        elif isinstance(option, (str, int, float)):
            out.append({"id": str(option), "label": str(option)})
        else:
            ctx.error(codes.WRONG_SHAPE, f"an option is {{ id: ..., label: ... }}, not {option!r}", node)
    return out
