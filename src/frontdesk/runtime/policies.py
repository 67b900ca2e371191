"""Frames for newly started agents, and the fallback and exit policies all executors share."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from frontdesk.ir.expr import Ref
from frontdesk.ir.models import Agent, Policy
from frontdesk.runtime.state import FlowData, Frame
from frontdesk.runtime.steps import Outcome

if TYPE_CHECKING:  # pragma: no cover
    from frontdesk.runtime.context import TurnContext

KIND_OF = {"flow": "flow", "reasoning": "reasoning", "knowledge": "knowledge", "router": "router"}
DEFAULT_FALLBACK = "Sorry, I didn't understand that. Could you rephrase it?"


def new_frame(ctx: TurnContext, agent_name: str, offer_input_by: str | None = None) -> Frame:
    """A frame for an agent about to start; with `offer_input_by`, the turn's message is offered to it."""
    agent = ctx.program.agents[agent_name]
    ctx.clear_status(agent_name)
    _initial_values(ctx, agent)
    frame = Frame(id=ctx.new_frame_id(), agent=agent_name, kind=KIND_OF[agent.kind])
    if offer_input_by is not None:
        ctx.input.offer(frame, offer_input_by)
    return frame


def _initial_values(ctx: TurnContext, agent: Agent) -> None:
    """Session variables an agent declares with an INITIAL value: set once per session, or again at
    every activation (RESET: per_activation)."""
    for var in agent.rules.memory.session:
        if var.initial is None:
            continue
        ref = Ref(scope="session", name=var.name)
        if var.reset == "per_activation" or ctx.read(ref, agent.name) is None:
            ctx.assign(ref, var.initial, agent.name, why=f"INITIAL ({var.reset})")


def setup_frame(ctx: TurnContext, agent: Agent) -> Frame:
    return Frame(id=ctx.new_frame_id(), agent=agent.name, kind="flow", graph="setup")


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
    data: FlowData = frame.data  # type: ignore[assignment]
    data.fallbacks += 1
    limit = ctx.program.settings.max_consecutive_fallbacks
    ctx.log.emit("fallback", frame.agent, reason=reason, policy=policy.shown() if policy else None,
                 count=data.fallbacks)
    hands_over = policy is not None and policy.kind == "agent" and policy.value in ctx.program.agents
    if final or data.fallbacks >= limit:
        if not hands_over:
            ctx.say(frame.agent, policy_message(policy))
        return Outcome.done("error", reason if final else f"{data.fallbacks} fallbacks in a row")
    if hands_over:
        data.node = data.last_listen
        return Outcome.call(new_frame(ctx, policy.value, offer_input_by=f"fallback policy of {frame.agent}"))
    ctx.say(frame.agent, policy_message(policy))
    # Back at the `user` step: the next message is the user's answer to the fallback.
    data.node = data.last_listen
    frame.waiting = True
    return Outcome.wait()


# How far the agent the user turns to must lead the active one before it takes over unasked.
SWITCH_LEAD = 0.25
# With no LLM to ask, a switch the embedding model is not sure of is still taken when the other
# agent leads the active one by this much (an explicit request for another agent's task).
OFFLINE_SWITCH_LEAD = 0.15
YES_NO_WORDS = 3  # a yes/no word this early in the message makes it an answer to the agent's question


def answers_yes_no(message: str) -> bool:
    """Whether the message opens with a yes or a no ("yes please, add it too", "sounds great, yes")."""
    from frontdesk.nlu.matcher import polarity

    if polarity(message):
        return True
    words = message.lower().replace(",", " ").split()
    return any(polarity(w) > 0 or w in ("no", "nope", "nah") for w in words[:YES_NO_WORDS])


def few_words(message: str) -> bool:
    """A message with fewer than two words of letters ("12345678", "OK") carries too little for an
    embedding to say it changes the subject: it is an answer to the question asked."""
    return len(re.findall(r"[^\W\d_]{2,}", message)) < 2


def shares_data(router, agent: str, other: str) -> bool:
    """Whether two members of a router are bound to the same router argument: the first hands its
    result to the second (a book chosen for an order), so it must finish before the other starts."""
    bound: dict[str, set[str]] = {}
    for member in router.members:
        bound[member.agent] = {b.router_arg for b in member.bindings}
    return bool(bound.get(agent, set()) & bound.get(other, set()))


# A message that begins by dropping what the agent was doing (English only; deliberately simple).
DROPS_TASK = re.compile(r"^\W*(?:oh,?\s+|ok(?:ay)?,?\s+)?(?:never\s*mind|forget\s+(?:it|that|about)|scratch\s+that|"
                        r"cancel\s+(?:that|it)|not\s+now|no,?\s+thanks?|no\s+thank\s+you)\b", re.IGNORECASE)


def clear_topic_switch(ctx: TurnContext, frame: Frame, message: str) -> str | None:
    """Another member of the router that started this agent, when the embedding model is sure
    the message is for it and not for the active agent; None otherwise (the agent handles it)."""
    if ctx.understanding is None:
        return None
    # The router below: the one that started this agent, or the one that started the flow that called
    # it (then caller and callee step aside together, see Engine._suspend_chain).
    below = ctx.router_below(frame)
    if below is None or not frame.said_since_start:
        return None
    router, callers = below
    chain = set(callers)
    if few_words(message):
        ctx.log.emit("step", frame.agent, action="no topic switch: too few words to change the subject")
        return None
    if ctx.llm_classifies and (frame.last_prompt or "").rstrip().endswith("?") and answers_yes_no(message):
        # The agent's model can take the answer and pass on the rest (with no such model, an
        # explicit request for another agent's task is still switched to, below).
        ctx.log.emit("step", frame.agent, action="no topic switch: the message answers the agent's question")
        return None
    if ctx.llm_classifies and DROPS_TASK.match(message):
        # "Never mind the books. Is the live chat open?": the agent ends its task first (its model
        # finishes and names the agent the rest is for), rather than waiting to come back unasked
        ctx.log.emit("step", frame.agent, action="no topic switch: the message drops the agent's task")
        return None
    names = [m.agent for m in router.members if m.agent in ctx.program.agents]
    decision = ctx.embed_decide(message, ctx.agent_options(names), "route", frame.agent)
    best = decision.best if decision is not None else None
    if decision is None or best is None or best in chain:
        return None  # the message is for this agent, or for the flow that called it
    lead = decision.scores.get(best, 0.0) - decision.scores.get(frame.agent, 0.0)
    if decision.sure and decision.choice == best and lead >= SWITCH_LEAD:
        by = "embedding"
    elif not ctx.llm_classifies and lead >= OFFLINE_SWITCH_LEAD and decision.scores.get(best, 0.0) >= 0.3:
        by = "embedding (no LLM agent can hand the message on)"
    else:
        return None
    if ctx.llm_classifies and shares_data(router, frame.agent, best):
        # The active agent must finish first and hand its result over: let it decide.
        ctx.log.emit("step", frame.agent, action=f"no topic switch: {frame.agent} hands its result to {best}",
                     candidate=best)
        return None
    ctx.log.emit("route_decided", frame.agent, agent=best, by=by,
                 reason="the user changed topic", score=round(decision.scores.get(best, 0.0), 3),
                 active_score=round(decision.scores.get(frame.agent, 0.0), 3))
    return best


def switch_candidates(ctx: TurnContext, frame: Frame):
    """Other members of the router this frame was started by: where a topic switch may go."""
    router = ctx.started_by_router(frame)
    if router is None:
        return []
    return [ctx.program.agents[m.agent] for m in router.members
            if m.agent != frame.agent and m.agent in ctx.program.agents]
