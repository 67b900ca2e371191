"""BEHAVIOR_PROFILES at run time (abl-specification 3.13.2): which profiles are active, and what they
merge into: INSTRUCTIONS (the reasoning prompt), TOOLS_HIDE and TOOLS_ADD (the tools offered),
CONSTRAINTS (checked with the agent's own), and, for the flow executor, GATHER_OVERRIDES,
FLOW_MODIFICATIONS and FLOW_REPLACE (`effective_profile`). VOICE is text-to-speech configuration: it has
no effect in a text runtime (the compiler says so with a warning)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from frontdesk.ir.behaviour import AgentRules, BehaviorProfile, Constraint

from ._base import condition, rules_of, turn_rules

if TYPE_CHECKING:  # pragma: no cover
    from frontdesk.runtime.context import TurnContext


def active_profiles(agent: str, ctx: TurnContext) -> list[BehaviorProfile]:
    """The agent's behaviour profiles whose WHEN holds now, highest PRIORITY first (a WHEN that fails to
    evaluate is an error event and leaves its profile out)."""
    rules = rules_of(ctx, agent)
    if not rules.profiles:
        return []
    active = [p for p in rules.profiles
              if p.when is None or condition(ctx, agent, p.when, f"profile {p.name}", default=False)]
    active.sort(key=lambda p: -p.priority)
    names = [p.name for p in active]
    reported = turn_rules(ctx).profiles
    if reported.get(agent) != names:  # once per turn and agent, when the set changes
        reported[agent] = names
        ctx.log.emit("step", agent, action="behaviour profiles active", profiles=names)
    return active


def profile_instructions(agent: str, ctx: TurnContext) -> str:
    """The INSTRUCTIONS of the active profiles, highest priority first, one paragraph each ("" for none)."""
    return "\n\n".join(p.instructions for p in active_profiles(agent, ctx) if p.instructions)


def effective_profile(agent: str, ctx: TurnContext) -> dict[str, Any]:
    """The active profiles merged on top of each other: a key set by several takes the highest priority's
    value (voice, response_rules, gather_overrides and its field_overrides, flow_modifications, flow_replace);
    the tools to hide or add (by name) and the constraints are the union."""
    merged: dict[str, Any] = {"profiles": [], "instructions": [], "tools_hide": [], "tools_add": [],
                              "constraints": [], "voice": {}, "response_rules": {}, "gather_overrides": {},
                              "flow_modifications": {}, "flow_replace": ""}
    for profile in reversed(active_profiles(agent, ctx)):  # lowest first: the higher overwrite
        merged["profiles"].insert(0, profile.name)
        if profile.instructions:
            merged["instructions"].insert(0, profile.instructions)
        for name in profile.tools_hide:
            if name not in merged["tools_hide"]:
                merged["tools_hide"].append(name)
        for name in _added_names(profile):
            if name not in merged["tools_add"]:
                merged["tools_add"].append(name)
        merged["constraints"] = profile.constraints + merged["constraints"]
        for part in ("voice", "response_rules", "flow_modifications"):
            merged[part].update(getattr(profile, part))
        overrides = dict(profile.gather_overrides)
        fields = {**(merged["gather_overrides"].get("field_overrides") or {}),
                  **(overrides.get("field_overrides") or {})}
        merged["gather_overrides"].update(overrides)
        if fields:
            merged["gather_overrides"]["field_overrides"] = fields
        merged["flow_replace"] = profile.flow_replace or merged["flow_replace"]
    return merged


def hidden_tools(agent: str, ctx: TurnContext) -> set[str]:
    """The tools the active profiles hide from the agent (TOOLS_HIDE)."""
    if not rules_of(ctx, agent).profiles:
        return set()
    return set(effective_profile(agent, ctx)["tools_hide"])


def added_tools(agent: str, ctx: TurnContext) -> list[str]:
    """The tools the active profiles add to the agent (TOOLS_ADD), by name, less those hidden."""
    if not rules_of(ctx, agent).profiles:
        return []
    merged = effective_profile(agent, ctx)
    return [name for name in merged["tools_add"] if name not in merged["tools_hide"]]


def profile_only_tools(rules: AgentRules) -> set[str]:
    """The tools an agent has only through one of its profiles."""
    return {name for p in rules.profiles for name in _added_names(p)}


def constraints_of(ctx: TurnContext, agent: str, rules: AgentRules) -> list[Constraint]:
    """The agent's constraints, then those of its active behaviour profiles."""
    extra = [c for p in active_profiles(agent, ctx) for c in p.constraints] if rules.profiles else []
    return [*rules.constraints, *extra]


def _added_names(profile: BehaviorProfile) -> list[str]:
    return [t["name"] if isinstance(t, dict) else str(t) for t in profile.tools_add
            if (isinstance(t, dict) and t.get("name")) or isinstance(t, str)]
