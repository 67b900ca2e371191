"""Compiler of the sections ABL parses for compatibility and keeps as data (NLU, INTENTS, MULTI_INTENT, TESTS, ...), with light shape checks."""

from __future__ import annotations

from frontdesk.ir.behaviour import AgentRules

from .. import codes
from ..context import SectionContext
from ..outline import Node

MULTI_INTENT_KEYS = ("strategy", "max_intents", "confidence_threshold", "enabled")


def compile_metadata(name: str, node: Node, ctx: SectionContext, rules: AgentRules) -> None:
    """Keep section `name` as plain data in `rules.metadata[name]`, after checking its shape."""
    section = name.upper()
    if section == "MULTI_INTENT":
        _multi_intent(node, ctx)
    elif section == "TESTS":
        _tests(node, ctx)
    elif section in ("NLU", "INTENTS") and node.value is not None and node.text.strip() and not node.children:
        ctx.error(codes.WRONG_SHAPE, f"{section} holds entries under it, not a value", node.value_span())
    rules.metadata[section] = ctx.data(node)


def _multi_intent(node: Node, ctx: SectionContext) -> None:
    for child in node.children:
        word = (child.key or "").lower()
        if child.key is None or child.item:
            ctx.error(codes.WRONG_SHAPE, f"MULTI_INTENT holds '{child.text}'", child, "write <setting>: <value>")
        elif word == "strategy":
            if not child.text.strip() or child.children:
                ctx.error(codes.WRONG_SHAPE, "strategy is a name, e.g. primary_queue", child)
        elif word == "max_intents":
            value = ctx.number(child)
            if value is not None and (isinstance(value, float) or value < 1):
                ctx.error(codes.BAD_VALUE, "max_intents is a whole number of 1 or more", child.value_span())
        elif word == "confidence_threshold":
            value = ctx.number(child)
            if value is not None and not 0 <= value <= 1:
                ctx.error(codes.BAD_VALUE, "confidence_threshold is between 0 and 1", child.value_span())
        elif word == "enabled":
            ctx.boolean(child)
        else:
            ctx.unknown_key(child, list(MULTI_INTENT_KEYS), "MULTI_INTENT")


def _tests(node: Node, ctx: SectionContext) -> None:
    for child in node.children:
        if not child.item:
            ctx.error(codes.WRONG_SHAPE, "TESTS is a list of - name: ... cases", child)
        elif not any(c.key is not None for c in child.children):
            ctx.error(codes.WRONG_SHAPE, "a test case holds name:, input: and expectations", child)


# ---- BEHAVIOR_PROFILES ------------------------------------------------------------------------------

PROFILE_KEYS = ("name", "priority", "when", "instructions", "voice", "response_rules", "tools_hide", "tools_add",
                "constraints", "gather_overrides", "flow_modifications", "flow_replace")


def compile_behavior_profiles(node: Node, ctx: SectionContext, rules: AgentRules) -> None:
    """BEHAVIOR_PROFILES (a list of `- NAME:` items) into `rules.profiles`."""
    data = ctx.data(node)
    if not isinstance(data, list):
        ctx.error(codes.WRONG_SHAPE, "BEHAVIOR_PROFILES is a list of - NAME: <profile> items", node)
        return
    for item, where in zip(data, node.items() or [node] * len(data), strict=False):
        if not isinstance(item, dict) or not str(item.get("name") or "").strip():
            ctx.error(codes.MISSING_KEY, "a behaviour profile needs NAME", where, "write - NAME: <profile name>")
            continue
        add_profile(str(item["name"]).strip(), item, ctx, rules, where)


def add_profile(name: str, data: dict, ctx: SectionContext, rules: AgentRules, where: Node | None = None) -> None:
    """One profile, from its data (an inline item, or a .behavior_profile.abl document), into `rules.profiles`."""
    from frontdesk.ir.behaviour import BehaviorProfile

    from .rules import profile_constraint

    if any(p.name == name for p in rules.profiles):
        return
    data = {str(k).lower(): v for k, v in data.items()}
    profile = BehaviorProfile(name=name, span=where.span if where is not None else None)
    priority = data.get("priority", 0)
    if isinstance(priority, bool) or not isinstance(priority, (int, float)):
        ctx.error(codes.BAD_VALUE, f"the PRIORITY of profile {name} is a number, not {priority!r}", where)
    else:
        profile.priority = priority
    if data.get("when") not in (None, ""):
        from ._common import condition

        profile.when = condition(ctx, str(data["when"]), where)
    profile.instructions = str(data.get("instructions") or "")
    for field in ("tools_hide",):
        value = data.get(field) or []
        setattr(profile, field, [str(v) for v in (value if isinstance(value, list) else [value])])
    tools_add = data.get("tools_add") or []
    for entry in tools_add if isinstance(tools_add, list) else [tools_add]:
        tool = profile_tool(entry, ctx, where, name)
        if tool is not None:
            profile.tools_add.append(tool.model_dump(mode="json", exclude_none=True))
    if isinstance(data.get("voice"), dict) and data["voice"]:
        ctx.warning(codes.IGNORED, f"the VOICE of profile {name} (text-to-speech settings) has no effect in a text "
                    "runtime", where, "its INSTRUCTIONS, TOOLS_HIDE, TOOLS_ADD and CONSTRAINTS apply")
    for field in ("voice", "response_rules", "gather_overrides", "flow_modifications"):
        value = data.get(field)
        if isinstance(value, dict):
            setattr(profile, field, value)
    profile.flow_replace = str(data.get("flow_replace") or "")
    constraints = data.get("constraints") or []
    for entry in constraints if isinstance(constraints, list) else [constraints]:
        constraint = profile_constraint(entry, ctx, where)
        if constraint is not None:
            profile.constraints.append(constraint)
    profile.extra = {k: v for k, v in data.items() if k not in PROFILE_KEYS}
    rules.profiles.append(profile)


def profile_tool(entry, ctx: SectionContext, where: Node | None, profile: str):
    """A TOOLS_ADD entry (`name(params) -> returns`, with `description:` under it) as a ToolDef with no
    implementation of its own: the program's tool of that name (a .tools.abl library, a Python file) runs it."""
    from frontdesk.ir.models import ToolDef, ToolParam

    from ..signatures import SignatureError, parse_signature

    description = ""
    if isinstance(entry, dict):
        description = str(entry.get("description") or "")
        entry = entry.get("value") or entry.get("signature") or entry.get("name")
    if not isinstance(entry, str) or not entry.strip():
        ctx.error(codes.BAD_SIGNATURE, f"a TOOLS_ADD entry of profile {profile} is a tool signature", where,
                  "write - name(param: type) -> ReturnType")
        return None
    try:
        sig = parse_signature(entry.strip() if "(" in entry else entry.strip() + "()")
    except SignatureError as exc:
        ctx.error(codes.BAD_SIGNATURE, f"TOOLS_ADD of profile {profile}: bad tool signature: "
                  f"{getattr(exc, 'message', str(exc))}", where, "write - name(param: type) -> ReturnType")
        return None
    params = [ToolParam(name=p.name, type=p.schema.get("type", "any") if isinstance(p.schema, dict) and
                        isinstance(p.schema.get("type"), str) else "any", required=p.required, default=p.default)
              for p in sig.params]
    return ToolDef(name=sig.name, description=description, params=params, returns=sig.returns or {})


def profile_tool_defs(rules: AgentRules) -> list:
    """The tools the agent's profiles add (TOOLS_ADD), as ToolDefs for the program's tool table."""
    from frontdesk.ir.models import ToolDef

    return [ToolDef.model_validate(t) for p in rules.profiles for t in p.tools_add if isinstance(t, dict)]
