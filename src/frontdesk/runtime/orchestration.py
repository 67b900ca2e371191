"""Orchestration strategies: how a router (an ADL ensemble, an ABL supervisor) gets each user message to
one of its members, and where its input guardrail agents check the message.

The five methods of the ADL paper (section 4) and Frontdesk's own default:

- `proactive`: the router's model picks the member for every message by the members' descriptions
  (one routing call), also while a member is in the middle of its task; each guardrail agent first
  checks the message in a call of its own.
- `merging`: as proactive, with the guardrails folded into the routing call (one call instead of two).
- `autonomous`: no routing call while an agent can decide: the active agent, or the knowledge or LLM
  agent that answered last, reads the message and names its successor (`hand_back` with `to`,
  `pass_to`); a routing call only when no agent can (the first message, after a flow ended).
- `first-success`: members draft a reply in turn (the active one first, then in the order listed),
  each draft judged by the router's model, until one is satisfactory.
- `best-of-n`: every member drafts a reply at the same time; the router's model selects the best.
- `adaptive` (the default): the local understanding model decides when it is sure (routing, topic
  switches, `the user claims`, and the guardrails: a message it is sure a member serves passes without
  a call), the active agent keeps the message it is asked for, guardrails ride in the call that reads
  the message when one is made (routing, or an active flow's understand call), and an LLM call is made
  only when a decision is unsure.

A draft (first-success, best-of-n) runs on its own copy of the session and stops before its first
tool call, so nothing lasting happens while drafting; the chosen member then runs for real on the
session, its drafted model answers replayed (no second call for them), and its tools run then.

The routing call (`llm_route`) is here too: the router executor (runtime/routing.py) makes it for a
message that reaches the router, and `proactive` / `merging` make it before the agents run.
"""

from __future__ import annotations

import dataclasses
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from frontdesk.ir.models import (
    DEFAULT_ORCHESTRATION,
    ORCHESTRATION_STRATEGIES,
    KnowledgeAgent,
    RouterAgent,
)
from frontdesk.llm.base import LLMError, LLMRequest, LLMResponse, ScriptError
from frontdesk.runtime import handoff, prompts
from frontdesk.runtime.context import SpeculationStop, TurnContext, TurnInput
from frontdesk.runtime.events import EventLog, register_event_type
from frontdesk.runtime.fanout import TaskMemory
from frontdesk.runtime.state import Frame
from frontdesk.runtime.shortlist import WIDER, shortlist
from frontdesk.runtime.steps import Outcome

register_event_type("guardrail_verdict", "an input guardrail agent of a router judged the user's message",
                    ("guard", "allowed", "by"))
register_event_type("draft", "a member drafted a reply for a best-of-n or first-success router",
                    ("candidate", "reply", "usable"))

DRAFTING = ("first-success", "best-of-n")
BLOCKED = "\0blocked"  # a guardrail stopped the message and the user was told why
MAX_DRAFTERS = 4  # best-of-n: members drafting at the same time, at most
NOT_HERE = "Sorry, I can't help with that here."
# The routing call's choice for a user who ends the conversation, offered when the router has an exit
# policy (`exit: default` or a text), as MICA's routing prompt offers [Exit].
EXIT_CHOICE = "end_conversation"
EXIT_DESCRIPTION = ("The user is ending the conversation (a goodbye, or nothing more is needed): say goodbye "
                    "and close it")
ROUTE_APOLOGY = "Sorry, I'm having trouble right now. Could you say that again in a moment?"


def strategy_of(router: RouterAgent, ctx: TurnContext) -> str:
    """The strategy a router runs: the engine's override (`--orchestration`), else the router's own,
    else the program's (`orchestration:` in config.yml), else `adaptive`. The paper's strategies decide
    with an LLM: with none that can (offline, or only the small local generator) the router runs
    `adaptive`, which decides with the local understanding model."""
    override = ctx.driver.orchestration if ctx.driver is not None else None
    for choice in (override, router.strategy, ctx.program.settings.orchestration):
        if choice in ORCHESTRATION_STRATEGIES:
            return choice if choice == DEFAULT_ORCHESTRATION or ctx.llm_classifies else DEFAULT_ORCHESTRATION
    return DEFAULT_ORCHESTRATION


def governing(ctx: TurnContext) -> tuple[Frame, RouterAgent, Frame | None] | None:
    """The innermost router on the stack, its agent, and the member frame it started that is still
    running (the base of the active chain), or None when the router itself is on top."""
    stack = ctx.state.stack
    if not stack:
        return None
    by_id = {f.id: f for f in stack}
    current: Frame | None = stack[-1]
    above: Frame | None = None
    while current is not None and current.kind != "router":
        above = current
        current = by_id.get(current.parent) if current.parent else None
    if current is None or current.graph != "main":
        return None
    router = ctx.program.agents.get(current.agent)
    if not isinstance(router, RouterAgent):
        return None
    return current, router, above


def guard_agents(router: RouterAgent, ctx: TurnContext) -> list:
    return [ctx.program.agents[g] for g in router.guardrails if g in ctx.program.agents]


def refusal(reply: Any = None) -> str:
    """What a blocked message gets: the guardrail's reply, else a plain refusal."""
    return reply.strip() if isinstance(reply, str) and reply.strip() else NOT_HERE


def block(router: RouterAgent, frame: Frame, ctx: TurnContext, guard: str, by: str, reply: Any = None) -> str:
    """The message breaks a guardrail: the user is told, and no member sees it."""
    ctx.log.emit("guardrail_verdict", guard, guard=guard, allowed=False, by=by)
    ctx.say(guard, refusal(reply), frame)
    if ctx.input.text is not None:
        ctx.input.state = "taken"
    frame.waiting = True
    return BLOCKED


# ---- the routing call ----------------------------------------------------------------------------------


def describe_agent(agent) -> str:
    text = (agent.description or "").strip().rstrip(".")
    return text or agent.name.replace("_", " ")


def has_exit(router: RouterAgent) -> bool:
    """Whether the router closes the conversation when the user ends it (`exit: default` or a text)."""
    return router.exit is not None and router.exit.kind in ("default", "text")


def exit_option() -> KnowledgeAgent:
    """The choice to end the conversation, offered to a model beside the agents it may name."""
    return KnowledgeAgent(name=EXIT_CHOICE, description=EXIT_DESCRIPTION)


def with_exit(router: RouterAgent, candidates) -> list:
    """The routing call's candidates, with the choice to end the conversation when the router has an exit policy."""
    candidates = list(candidates)
    if has_exit(router) and EXIT_CHOICE not in {c.name for c in candidates}:
        candidates.append(exit_option())
    return candidates


# RouterData.decisions: "<turn>:<agent>", the agent a routing model named for a second request in the message
ALSO_AFTER = "also_after"
LAST_MEMBER = "last"  # RouterData.decisions: the member the router handed a message to most recently


def llm_route(router: RouterAgent, frame: Frame, ctx: TurnContext, candidates, recheck: str | None = None
              ) -> str | None:
    """One routing call; its guardrails ride along unless they were checked already this turn.
    BLOCKED when a guardrail stops the message (the user was told); EXIT_CHOICE when the model judges
    that the user ends the conversation (a router with an exit policy).

    A router of many members lists a shortlist of them (runtime/shortlist.py); when the model names none
    of those, it is asked once more with the next members by score."""
    candidates = list(candidates)
    listed, rest = shortlist(ctx, candidates, router.name, frame.data.decisions.get(LAST_MEMBER))
    chosen = _route_call(router, frame, ctx, listed, recheck)
    if chosen is None and rest:
        next_best = {a.name for a in rest[:WIDER]}  # ranked already: the same scores, not computed again
        wider = [a for a in candidates if a.name in next_best]
        ctx.log.emit("step", router.name, action="no listed member fits: asking with the next members",
                     listed=len(wider))
        chosen = _route_call(router, frame, ctx, wider, recheck)
    return chosen


def _route_call(router: RouterAgent, frame: Frame, ctx: TurnContext, candidates, recheck: str | None) -> str | None:
    candidates = with_exit(router, candidates)
    guards = guard_agents(router, ctx)
    merged = bool(guards) and ctx.orchestration.get("guarded") is not True  # True: a model checked it
    request = route_request(router, candidates, ctx, guards if merged else [])
    if recheck is not None:  # the first answer was doubted (routing.py): asked once more
        request = prompts.rechecked(request, recheck)
    try:
        response: LLMResponse | LLMError = ctx.complete(request, router.name)
    except LLMError as exc:
        response = exc
    if merged:
        args = response.tool_calls[0].arguments if isinstance(response, LLMResponse) and response.tool_calls \
            else None
        if merged_verdict(ctx, frame, args, "agent", "merged into the routing call"):
            return BLOCKED
    return routed(router, frame, ctx, response, {c.name for c in candidates})


def route_request(router: RouterAgent, candidates, ctx: TurnContext, guards=()) -> LLMRequest:
    listed = described(router, candidates)
    if guards:
        return prompts.merged_route_request(router, listed, list(guards), ctx.state.history,
                                            ctx.program.settings.history_window)
    return prompts.route_request(router, listed, ctx.state.history, ctx.program.settings.history_window)


def routed(router: RouterAgent, frame: Frame, ctx: TurnContext, response: LLMResponse | LLMError,
           names: set[str]) -> str | None:
    """The member a routing call's answer names (None: none, or the call failed and the user was told)."""
    if isinstance(response, LLMError):
        ctx.log.emit("error", router.name, where="routing", message=str(response))
        ctx.say(router.name, ROUTE_APOLOGY, frame)
        return None
    choice = also = None
    if response.tool_calls:
        choice = response.tool_calls[0].arguments.get("agent")
        also = response.tool_calls[0].arguments.get(prompts.ALSO_FIELD)
    elif response.content:
        choice = next((n for n in names if n in response.content), None)
    if choice not in names:
        choice = None
    if choice is not None and also in names and also != choice:
        # the message makes a second request: its agent gets the message once the first is done with it
        frame.data.decisions[ALSO_AFTER] = f"{ctx.state.turn}:{also}"  # type: ignore[union-attr]
        ctx.log.emit("route_decided", router.name, agent=choice, by="llm", also=also)
    else:
        ctx.log.emit("route_decided", router.name, agent=choice, by="llm")
    return choice


def described(router: RouterAgent, candidates):
    """Candidates as the routing model sees them: a supervisor's HANDOFF WHEN and INTENT words
    join each agent's description."""
    out = []
    for agent in candidates:
        member = router.member(agent.name)
        extra = []  # the HANDOFF WHEN words are on the agent's line already (prompts._agent_line)
        if member is not None and member.examples:
            extra.append("words like " + ", ".join(f'"{w}"' for w in member.examples))
        if extra:
            agent = agent.model_copy(update={"description": f"{describe_agent(agent)} ({'; '.join(extra)})"})
        out.append(agent)
    return out


# ---- the turn's first look at the message -------------------------------------------------------------


def before_turn(ctx: TurnContext) -> bool:
    """Run before the agents see the user's message. True when the strategy dealt with the whole turn
    (a guardrail blocked the message, or a drafted reply was chosen and run); False: drive as usual."""
    if ctx.input.text is None or not ctx.input.is_open or ctx.orchestration.get("speculative"):
        return False
    found = governing(ctx)
    if found is None:
        return False
    frame, router, active = found
    if not frame.started:
        return False
    strategy = strategy_of(router, ctx)
    guards = guard_agents(router, ctx)
    if guards and not _guarded(router, frame, active, strategy, guards, ctx):
        return True
    if strategy in ("proactive", "merging") and active is not None:
        candidates = [ctx.program.agents[m.agent] for m in router.members if m.agent in ctx.program.agents]
        chosen = llm_route(router, frame, ctx, candidates)
        if chosen == BLOCKED:
            return True
        if chosen is not None and chosen != active.agent:
            switch_to(ctx, frame, chosen)
        else:
            ctx.log.emit("step", router.name, action="the active agent keeps the message", agent=active.agent,
                         strategy=strategy)
        return False
    if strategy in DRAFTING:
        return draft_and_choose(ctx, frame, router, active, strategy)
    return False


def _guarded(router: RouterAgent, frame: Frame, active: Frame | None, strategy: str, guards: list,
             ctx: TurnContext) -> bool:
    """Check the router's input guardrails where the strategy checks them; False when one blocked."""
    if strategy == "merging" or (strategy == "adaptive" and (active is not None or ctx.understanding is None)):
        # folded into the call that reads the message (the routing call; an active member's own: a flow's
        # understand call, or the routing call a topic switch it detects leads to)
        return True
    if strategy == "adaptive":
        names = [m.agent for m in router.members if m.agent in ctx.program.agents]
        decision = ctx.route_decide(ctx.input.text or "", names, router.name)
        # "no member fits" from the local model is not trusted to block: it also says so of short answers
        # ("let's go with that"); the routing call, with the guardrails in it, decides those
        if decision is not None and decision.sure and decision.choice is not None:
            ctx.orchestration["guarded"] = "embedding"
            ctx.log.emit("guardrail_verdict", guards[0].name, guard=", ".join(g.name for g in guards), allowed=True,
                         by=f"embedding: the message is for {decision.choice}")
        return True  # unsure: the routing call (if one is made) carries the guardrails
    for guard in guards:
        request = prompts.guard_request(guard, ctx.state.history)
        args = ctx.call_args(request, guard.name, "guardrail")
        if args is None:  # the check failed: the message goes on, as a person would rather be helped
            continue
        if args.get("allowed") is False or str(args.get("allowed")).lower() == "false":
            block(router, frame, ctx, guard.name, "llm", args.get(prompts.REPLY_FIELD))
            return False
        ctx.log.emit("guardrail_verdict", guard.name, guard=guard.name, allowed=True, by="llm")
    ctx.orchestration["guarded"] = True
    return True


def switch_to(ctx: TurnContext, frame: Frame, chosen: str) -> None:
    """The router gives the message to `chosen` although another member is active: the active chain
    steps aside as a suspended thread (as when the user turns to another agent), and the router starts
    or resumes `chosen` when the engine drives on."""
    top = ctx.state.stack[-1]
    step = Outcome.switch(chosen)
    thread = handoff.suspend_chain(ctx, top, step)
    base = thread.base if thread is not None else top
    # the router records the suspended thread, and `chosen` as the member to route the message to
    handoff.driver(ctx).child_finished(frame, handoff.result_of(ctx, base, step, thread), ctx)


# ---- drafting: first-success and best-of-n ---------------------------------------------------------------


class _StandIn:
    """Takes the model's place for a while, saying what the model says of itself."""

    def __init__(self, llm, answers: list[tuple[str, LLMResponse]]) -> None:
        self.llm = llm
        self.name = llm.name
        self.can_classify = getattr(llm, "can_classify", True)
        self.ordered = getattr(llm, "ordered", False)
        self.answers = list(answers)


class Recorder(_StandIn):
    """Stands in for the model in a draft: passes each call on and keeps the answers, in order."""

    def __init__(self, llm) -> None:
        super().__init__(llm, [])

    def complete(self, request: LLMRequest) -> LLMResponse:
        response = self.llm.complete(request)
        self.answers.append((request.purpose, response))
        return response


class Replayer(_StandIn):
    """Stands in for the model while the chosen draft runs for real: its drafted answers come back in
    order (as long as the requests are of the same purpose), then calls go to the model."""

    def __init__(self, llm, answers: list[tuple[str, LLMResponse]]) -> None:
        super().__init__(llm, answers)
        self.replayed = False  # whether the latest answer was a drafted one

    def complete(self, request: LLMRequest) -> LLMResponse:
        self.replayed = bool(self.answers) and self.answers[0][0] == request.purpose
        if self.replayed:
            return self.answers.pop(0)[1]
        self.answers = []
        return self.llm.complete(request)


@dataclass
class Draft:
    agent: str
    ctx: TurnContext
    said: list[str] = field(default_factory=list)
    pending: SpeculationStop | None = None
    answers: list[tuple[str, LLMResponse]] = field(default_factory=list)
    failed: str = ""

    @property
    def usable(self) -> bool:
        """A draft that answers: it said something or would call a tool, without a fallback or error."""
        fell_back = any(e.type == "fallback" for e in self.ctx.log.events)
        return not self.failed and not fell_back and bool(self.said or self.pending)

    def text(self) -> str:
        words = " ".join(self.said)
        if self.pending is not None:
            words += f" [calls {self.pending.tool}({json.dumps(self.pending.args, ensure_ascii=False, default=str)})]"
        return words.strip()


def _draft_context(ctx: TurnContext, base) -> TurnContext:
    state = base.model_copy(deep=True)
    log = EventLog(0, ctx.log.turn, clock=ctx.log.clock)
    draft_input = TurnInput(ctx.input.text, log)
    memory = TaskMemory(ctx.memory) if ctx.memory is not None else None
    llm = Recorder(ctx.llm) if ctx.llm is not None else None
    return dataclasses.replace(ctx, state=state, log=log, said=[], sent=[], input=draft_input, memory=memory,
                               llm=llm, orchestration={"speculative": True, "guarded": True, "decided": True}, preempt=None,
                               tool_ran=False)


def _draft(ctx: TurnContext, base, frame_id: str, member: str, active: Frame | None) -> Draft:
    """`member`'s reply to the message, run on a copy of the session up to its first tool call."""
    dctx = _draft_context(ctx, base)
    dctx.orchestration["draft"] = member
    draft = Draft(member, dctx)
    frame = next(f for f in dctx.state.stack if f.id == frame_id)
    try:
        if active is not None and member != active.agent:
            switch_to(dctx, frame, member)
        elif active is None:
            frame.data.decisions["route"] = member  # type: ignore[union-attr]
        handoff.driver(dctx).drive_turn(dctx)
    except SpeculationStop as stop:
        draft.pending = stop
    except ScriptError:
        raise  # a test's script that went off its script: the test's bug, shown as such
    except Exception as exc:  # noqa: BLE001 - a draft that fails is not chosen; the turn goes on
        draft.failed = f"{type(exc).__name__}: {exc}"
    draft.said = [m.text for m in dctx.said if m.agent != frame.agent]  # the router's own words are not a draft
    draft.answers = list(dctx.llm.answers) if isinstance(dctx.llm, Recorder) else []
    return draft


def draft_and_choose(ctx: TurnContext, frame: Frame, router: RouterAgent, active: Frame | None,
                     strategy: str) -> bool:
    """first-success / best-of-n: draft, choose, then run the chosen member for real (False: the engine
    drives it). With no usable draft the router's fallback answers."""
    members = [m.agent for m in router.members if m.agent in ctx.program.agents]
    first = active.agent if active is not None and active.agent in members else None
    order = ([first] if first else []) + [m for m in members if m != first]
    base = ctx.state.model_copy(deep=True)
    drafts: list[Draft] = []
    chosen: Draft | None = None

    def record(draft: Draft) -> None:
        """A draft's model calls join the turn's trace and cost when it is made (the chosen one's answers
        are replayed later without a second call or a second count)."""
        ctx.log.adopt([e for e in draft.ctx.log.events if e.type == "llm_call"],
                      notify=list(handoff.driver(ctx).subscribers))
        for key in ("prompt", "completion", "calls"):
            ctx.state.tokens[key] = ctx.state.tokens.get(key, 0) + draft.ctx.state.tokens.get(key, 0) \
                - base.tokens.get(key, 0)
        ctx.log.emit("draft", draft.agent, candidate=draft.agent, reply=draft.text()[:300], usable=draft.usable,
                     strategy=strategy, **({"error": draft.failed} if draft.failed else {}))

    if strategy == "first-success":
        for member in order:
            draft = _draft(ctx, base, frame.id, member, active)
            drafts.append(draft)
            record(draft)
            if draft.usable and _judged_satisfactory(router, draft, ctx):
                chosen = draft
                break
    else:
        ordered = getattr(ctx.llm, "ordered", False) or len(order) < 2
        if ordered:
            drafts = [_draft(ctx, base, frame.id, m, active) for m in order]
        else:
            with ThreadPoolExecutor(max_workers=min(len(order), MAX_DRAFTERS),
                                    thread_name_prefix="frontdesk-draft") as pool:
                drafts = list(pool.map(lambda m: _draft(ctx, base, frame.id, m, active), order))
        for draft in drafts:
            record(draft)
        usable = [d for d in drafts if d.usable]
        if len(usable) == 1:
            chosen = usable[0]
        elif usable:
            chosen = _selected(router, usable, ctx)
    ctx.orchestration["decided"] = True  # the drafts decided: nobody else is asked in this turn
    if chosen is None:
        return False
    ctx.log.emit("route_decided", router.name, agent=chosen.agent, by=strategy, reason="its draft was chosen")
    if ctx.llm is not None:
        ctx.orchestration["model"] = ctx.llm
        ctx.llm = Replayer(ctx.llm, chosen.answers)
    if active is not None and chosen.agent != active.agent:
        switch_to(ctx, frame, chosen.agent)
    elif active is None:
        frame.data.decisions["route"] = chosen.agent  # type: ignore[union-attr]
    return False


def after_turn(ctx: TurnContext) -> None:
    """Put the model back after a replayed draft."""
    model = ctx.orchestration.pop("model", None)
    if model is not None:
        ctx.llm = model


def _judged_satisfactory(router: RouterAgent, draft: Draft, ctx: TurnContext) -> bool:
    request = prompts.judge_request(router, draft.agent, draft.text(), ctx.state.history)
    args = ctx.call_args(request, router.name, "first-success judge")
    verdict = bool(args) and (args.get("satisfactory") is True or str(args.get("satisfactory")).lower() == "true")
    ctx.log.emit("condition_evaluated", router.name, condition=f"the draft of {draft.agent} is satisfactory",
                 result=verdict, by="llm")
    return verdict


def _selected(router: RouterAgent, drafts: list[Draft], ctx: TurnContext) -> Draft | None:
    request = prompts.select_request(router, [(d.agent, d.text()) for d in drafts], ctx.state.history)
    args = ctx.call_args(request, router.name, "best-of-n selection")
    if args is None:
        return drafts[0]  # the call failed: the first draft in the router's order
    return next((d for d in drafts if d.agent == args.get("agent")), None)


def unchecked_guards(ctx: TurnContext) -> list:
    """The governing router's guardrail agents when nothing has checked this message yet (an active
    member's own model call then carries them: a flow's understand call)."""
    if ctx.orchestration.get("guarded") is True or ctx.input.text is None:
        return []
    found = governing(ctx)
    return guard_agents(found[1], ctx) if found is not None else []


def merged_verdict(ctx: TurnContext, frame: Frame, args: dict[str, Any] | None, key: str, by: str) -> bool:
    """The verdict of a call the router's guardrails were folded into (a routing call, whose `agent`, or
    a flow's understand call, whose `choice`, may be BLOCKED_CHOICE; `args` None when the call failed):
    the message counts as checked either way; True when it was blocked (the user was told, by the
    guardrail, and `frame` waits)."""
    found = governing(ctx)
    if found is None:
        return False
    router = found[1]
    guards = guard_agents(router, ctx)
    ctx.orchestration["guarded"] = True
    name = guards[0].name if guards else router.name
    if (args or {}).get(key) == prompts.BLOCKED_CHOICE:
        block(router, frame, ctx, name, by, (args or {}).get(prompts.REPLY_FIELD))
        return True
    ctx.log.emit("guardrail_verdict", name, guard=", ".join(g.name for g in guards), allowed=True, by=by)
    return False


def unanswered_goes_back(ctx: TurnContext, frame: Frame) -> bool:
    """A knowledge agent the router started found no answer to a message no model has read yet (the local
    model routed it there, sure, and can be wrong: "My kids adore The Hobbit. What should they read
    next?"), or to one it read only to name its successor (`autonomous`): it gives the message back, and
    the router's model (with the guardrails) decides who else takes it, or that nobody does. True when
    it gave the message back."""
    if not ctx.input.taken_by(frame) or ctx.started_by_router(frame) is None:
        return False
    picked = ctx.orchestration.get("autonomous") == frame.agent  # it read the message to name its successor
    found = governing(ctx)
    if not picked and (ctx.orchestration.get("guarded") is True or ctx.orchestration.get("speculative")
                       or not ctx.llm_classifies or found is None or strategy_of(found[1], ctx) != "adaptive"):
        return False
    ctx.input.give_back(frame, "the sources do not answer it")
    ctx.log.emit("step", frame.agent, action="no answer in the sources: the message goes back to the router",
                 router=found[1].name if found is not None else None)
    return True
