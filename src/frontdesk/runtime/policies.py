"""Frames for newly started agents, and the fallback and exit policies all executors share."""

from __future__ import annotations

import re

from frontdesk.ir.models import Agent, Policy
from frontdesk.runtime.context import Outcome, TurnContext
from frontdesk.runtime.state import Frame

KIND_OF = {"flow": "flow", "reasoning": "reasoning", "knowledge": "knowledge", "router": "router"}
DEFAULT_FALLBACK = "Sorry, I didn't understand that. Could you rephrase it?"


def new_frame(ctx: TurnContext, agent_name: str, pending_input: str | None = None) -> Frame:
    agent = ctx.program.agents[agent_name]
    ctx.clear_status(agent_name)
    return Frame(agent=agent_name, kind=KIND_OF[agent.kind], pending_input=pending_input)


def setup_frame(agent: Agent) -> Frame:
    return Frame(agent=agent.name, kind="flow", graph="setup")


def policy_message(policy: Policy | None) -> str:
    """The words a text policy says: its quoted sentence when it has one, else the text itself."""
    if policy is None or policy.kind == "default":
        return DEFAULT_FALLBACK
    quoted = re.search(r'"([^"]+)"|“([^”]+)”', policy.value)
    if quoted:
        return quoted.group(1) or quoted.group(2)
    return policy.value


def apply_fallback(ctx: TurnContext, frame: Frame, reason: str, final: bool = False) -> Outcome:
    """The agent could not handle the user's message: follow its fallback policy.

    A text policy is said and the agent asks again; an agent policy hands the message to that
    agent. After too many consecutive fallbacks, or when `final`, the agent ends with an error.
    """
    agent = ctx.program.agents[frame.agent]
    policy = agent.fallback
    frame.fallbacks += 1
    limit = ctx.program.settings.max_consecutive_fallbacks
    ctx.log.emit("fallback", frame.agent, reason=reason, policy=policy.model_dump() if policy else None,
                 count=frame.fallbacks)
    if policy is not None and policy.kind == "agent" and policy.value in ctx.program.agents and not final:
        frame.node = frame.last_listen
        return Outcome.push(new_frame(ctx, policy.value, pending_input=ctx.last_user_message()))
    ctx.say(frame.agent, policy_message(policy))
    if final or frame.fallbacks >= limit:
        return Outcome.done("error", reason if final else f"{frame.fallbacks} fallbacks in a row")
    # Back at the `user` step: the next message is the user's answer to the fallback.
    frame.node = frame.last_listen
    frame.waiting = True
    return Outcome.wait()


# How far the agent the user turns to must lead the active one before it takes over unasked.
SWITCH_LEAD = 0.25


def clear_topic_switch(ctx: TurnContext, frame: Frame, message: str) -> str | None:
    """Another member of the router that started this agent, when the embedding model is sure
    the message is for it and not for the active agent; None otherwise (the agent handles it)."""
    from frontdesk.ir.models import RouterAgent

    stack = ctx.state.stack
    if ctx.understanding is None or len(stack) < 2 or stack[-1] is not frame or stack[-2].kind != "router":
        return None
    router = ctx.program.agents.get(stack[-2].agent)
    if not isinstance(router, RouterAgent) or not frame.said_since_start:
        return None
    names = [m.agent for m in router.members if m.agent in ctx.program.agents]
    decision = ctx.embed_decide(message, ctx.agent_options(names), "route", frame.agent)
    if decision is None or not decision.sure or decision.choice in (None, frame.agent):
        return None
    if decision.scores.get(frame.agent, 0.0) > decision.score - SWITCH_LEAD:
        return None
    ctx.log.emit("route_decided", frame.agent, agent=decision.choice, by="embedding",
                 reason="the user changed topic", score=round(decision.score, 3),
                 active_score=round(decision.scores.get(frame.agent, 0.0), 3))
    return decision.choice
