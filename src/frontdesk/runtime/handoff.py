"""Handoffs, threads and driving again: how agents give the conversation to each other and come back.

Every change of who holds the conversation, other than a call and its result, goes through here:

- `start`: put a frame on the stack, called by the frame below it (or resumed with the caller it had);
- `transfer`: a handoff, for good or with RETURN (`resume`: the agent handing over is suspended as a
  thread and comes back, transcript and data intact, when the other agent ends, `resume_handoff`);
- `receiver_context`: what the agent taking over sees (CONTEXT: the values passed, the summary, the
  history strategy), for a flow's handoff step, a reasoning agent's HANDOFF and a supervisor's member;
- `take_chain`, `new_thread`, `suspend_chain`: an agent steps aside with the agents it called since the
  router below, as one thread; `resume_thread` puts one back (a router resuming an interrupted task);
- `result_of`: what the caller of a frame that ended or stepped aside learns of it (`ChildResult`);
- `return_to_parent`: an agent handed the conversation with RETURN: true gives the message back
  (`__return_to_parent__`, ABL 3.10) and waits; `resume_returned` brings it back when its parent hands
  over to it again; `handoff_returned` reads its ON_RETURN map when it ends;
- `drive_again`: a constraint's ON_FAIL changed the stack after the agents ran: they run again.

The engine (runtime/engine.py) calls these from its loop; routing, orchestration, fan_out and the
constraints call them too. What needs the engine itself (an executor's `child_finished`, driving) goes
through `ctx.driver` (runtime/driver.py).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from frontdesk.expr import EvalError
from frontdesk.ir.models import Handoff, Program, RouterAgent
from frontdesk.llm.base import ToolSchema
from frontdesk.nlu.base import Option
from frontdesk.runtime import prompts
from frontdesk.runtime.events import register_event_type
from frontdesk.runtime.state import GATHERED_BEFORE, THREAD_LIMIT, Frame, Thread
from frontdesk.runtime.steps import ChildResult, Done, Escalate, Outcome, Transfer, Yield

if TYPE_CHECKING:  # pragma: no cover
    from frontdesk.runtime.context import TurnContext
    from frontdesk.runtime.driver import Driver

register_event_type("thread_return", "a suspended thread came back to the stack", ("thread",))
register_event_type("handoff_completed", "a member a supervisor handed the conversation to ended (handoff.completed)",
                    ("target", "status", "mapped"))
register_event_type("handoff_context", "what a member taking over from a supervisor is given (CONTEXT)",
                    ("target", "passed", "history", "messages"))
RETURN_TO_PARENT = "__return_to_parent__"


def driver(ctx: TurnContext) -> Driver:
    """The engine driving this turn; an operation that needs it fails plainly without one."""
    if ctx.driver is None:
        raise RuntimeError("no engine drives this turn's context (TurnContext.driver is None)")
    return ctx.driver


# ---- the stack and its threads -------------------------------------------------------------------------


def start(ctx: TurnContext, child: Frame, parent_id: str | None, by: str) -> None:
    """Put `child` on the stack, called by `parent_id`; `by` names who started it in the trace."""
    if child.parent is None:  # a resumed frame keeps the caller it had
        child.parent = parent_id
    ctx.state.stack.append(child)
    if child.graph == "main" and not child.started:
        ctx.log.emit("agent_started", child.agent, by=by)


def take_chain(ctx: TurnContext) -> list[Frame]:
    """Take the top frame off the stack with the callers above the nearest router: they step aside
    (and come back) together."""
    stack = ctx.state.stack
    below = max((i for i, f in enumerate(stack[:-1]) if f.kind == "router"), default=None)
    first = len(stack) - 1 if below is None else below + 1
    chain = stack[first:]
    del stack[first:]
    return chain


def new_thread(ctx: TurnContext, chain: list[Frame], reason: str, owner: str | None = None,
               resume_after: str | None = None) -> Thread:
    """Keep `chain` as a suspended thread (the oldest is dropped beyond THREAD_LIMIT)."""
    state = ctx.state
    tid = f"t{state.next_thread}"
    state.next_thread += 1
    thread = Thread(id=tid, frames=chain, reason=reason, owner=owner, resume_after=resume_after,
                    suspended_at=state.turn)
    state.threads[tid] = thread
    while len(state.threads) > THREAD_LIMIT:
        oldest = next(iter(state.threads.values()))
        del state.threads[oldest.id]
        ctx.log.emit("agent_dropped", oldest.base.agent, by="engine",
                     reason=f"more than {THREAD_LIMIT} interrupted tasks are kept")
    return thread


def resume_thread(ctx: TurnContext, tid: str) -> Frame:
    """Take a suspended thread out of the table and put its frames back on the stack, all but the
    top one: the caller returns `Outcome.call(top)` so the engine starts it running."""
    thread = ctx.state.threads.pop(tid)
    for frame in thread.frames[:-1]:
        ctx.state.stack.append(frame)
    ctx.log.emit("thread_return", thread.top.agent, thread=tid, reason=thread.reason)
    return thread.top


def suspend_chain(ctx: TurnContext, frame: Frame, step: Yield) -> Thread | None:
    """An agent stepped aside (the user turned to another agent, or it gave the message back):
    it and the agents that called it since the router below are suspended together as a thread,
    to come back together. With no router below, the agent just ends (None)."""
    stack = ctx.state.stack
    frame.waiting = True  # it comes back waiting for the user's next message
    chain = take_chain(ctx)
    if not stack or stack[-1].kind != "router":  # no router below: the agent just ends
        return None
    if len(chain) > 1:
        ctx.log.emit("step", chain[0].agent, action="steps aside with the agent it called",
                     called=[f.agent for f in chain[1:]])
    return new_thread(ctx, chain, step.reason or "switch", owner=stack[-1].id)


def result_of(ctx: TurnContext, frame: Frame, step: Outcome, thread: Thread | None = None) -> ChildResult:
    """What the caller learns of a child: an agent that ended returns its value, by default the
    values of its arguments (a call with a result)."""
    status, message, value, reason, target = "success", "", None, "", None
    if isinstance(step, Done):
        status, message, value = step.status, step.message, step.value
        if value is None and frame.graph == "main":
            value = {k: v for k, v in ctx.values(frame.agent).items() if v is not None}
    elif isinstance(step, Yield):
        message, reason, target = step.message, step.reason, step.target
    elif isinstance(step, Escalate):
        message, reason = step.message, step.reason
    elif isinstance(step, Transfer):
        message = step.message
    return ChildResult(agent=frame.agent, frame_id=frame.id, graph=frame.graph, kind=step.kind,
                       status=status, message=message, value=value, reason=reason, target=target,
                       thread=thread.id if thread is not None else None)


# ---- handoffs ------------------------------------------------------------------------------------------


def transfer(ctx: TurnContext, frame: Frame, step: Transfer) -> None:
    """A handoff: the other agent takes the conversation. With `resume`, this agent's thread is
    suspended and comes back, transcript and data intact, when that agent ends. The pipeline's
    `before_handoff` hooks (a handoff guardrail) may stop it: the agent goes on."""
    stack = ctx.state.stack
    pending = ctx.pipeline.before_handoff(ctx, frame, step)
    if not pending.allowed:
        return
    target = resume_returned(ctx, frame, step.frame)  # one that returned to this agent earlier goes on
    if step.resume:
        frame.waiting = True
        chain = take_chain(ctx)
        thread = new_thread(ctx, chain, "handoff", resume_after=target.id)
        parent = stack[-1].id if stack else None
        ctx.log.emit("agent_suspended", frame.agent, by=f"handoff to {target.agent}", reason="handoff",
                     thread=thread.id)
    else:
        stack.pop()
        frame.status = "done"
        parent = frame.parent
        ctx.set_status(frame.agent, "success", pending.message or f"handed off to {target.agent}")
        ctx.log.emit("agent_finished", frame.agent, status="success", handed_off_to=target.agent,
                     message=pending.message)
        for waiting in ctx.state.threads.values():
            if waiting.resume_after == frame.id:  # whoever waited for this agent now waits for the next
                waiting.resume_after = target.id
    start(ctx, target, parent, f"handoff from {frame.agent}")


def resume_handoff(ctx: TurnContext, frame: Frame, result: ChildResult) -> bool:
    """An agent that another handed the conversation to ended: the thread that handed off comes back
    and gets `result`. False when no thread waits for `frame`."""
    thread = next((t for t in ctx.state.threads.values() if t.resume_after == frame.id), None)
    if thread is None:
        return False
    del ctx.state.threads[thread.id]
    for resumed in thread.frames:
        ctx.state.stack.append(resumed)
    top = thread.top
    ctx.log.emit("thread_return", top.agent, thread=thread.id, reason=thread.reason)
    ctx.log.emit("agent_resumed", top.agent, by=f"end of {frame.agent}", thread=thread.id)
    parent = ctx.program.agents.get(top.agent)
    if parent is not None and parent.policy.tracks_completion:  # handoff.completed and the ON_RETURN map
        handoff_returned(ctx, top.agent, next((h for h in getattr(parent, "handoffs", [])
                                              if h.agent == frame.agent), None), result)
    driver(ctx).child_finished(top, result, ctx)
    return True


def handoff_returned(ctx: TurnContext, owner: str, handoff: Handoff | None, child: ChildResult) -> dict[str, Any]:
    """An agent `owner` handed the conversation to ended (a supervisor's member, or the target of a
    reasoning agent's HANDOFF with RETURN: true): `handoff.completed` becomes true and the ON_RETURN
    map reads the child's values (its result first) into the owner's."""
    ctx.state.system["handoff.completed"] = True
    mapped: dict[str, Any] = {}
    for name, expr in (handoff.on_return if handoff is not None else {}).items():
        try:
            value = ctx.eval(expr, child.agent)
        except EvalError as exc:
            ctx.log.emit("warning", owner, where="ON_RETURN", message=f"{name}: {exc}")
            continue
        if value is None and child.value:
            value = child.value.get(name)
        if value is not None:
            # where the owner's expressions read the name: its own field, else a session variable (a
            # supervisor has no fields of its own)
            declared = any(a.name == name for a in getattr(ctx.program.agents.get(owner), "args", []))
            ctx.write(owner if declared else "session", name, value, owner, why=f"ON_RETURN of {child.agent}")
            mapped[name] = value
    ctx.log.emit("handoff_completed", owner, target=child.agent, status=child.status, mapped=mapped)
    return mapped


def keep_passed(ctx: TurnContext, agent: str, names) -> None:
    """Values written for `agent` as it starts (CONTEXT pass, a call's arguments) are this activation's:
    never cleared as left over from an earlier one."""
    store = ctx.state.system.get(GATHERED_BEFORE)
    if store and agent in store:
        ended = {k: v for k, v in store[agent].items() if k not in set(names)}
        ctx.state.system[GATHERED_BEFORE] = {**store, agent: ended}


def receiver_context(ctx: TurnContext, owner: str, handoff: Handoff, child: Frame, passed: list[str]) -> None:
    """What the agent taking over (`child`) sees of the conversation, for every kind of handoff that
    carries an ABL CONTEXT (a flow's handoff step, a reasoning agent's HANDOFF, a supervisor's member):
    the values passed are its own activation's, and a reasoning agent's transcript starts as
    CONTEXT.history says: none (it starts fresh: only the message that brought it, no summary),
    summary_only (the summary and that message), full, or last_n:N (the summary, then the whole or the
    last N messages before it). An entry with a summary and no history written is compiled as
    summary_only."""
    keep_passed(ctx, handoff.agent, passed)  # passed values are the new activation's, never stale
    strategy = handoff.history or "none"
    if child.kind == "remote":  # what the first request to its service carries (runtime/remote.py)
        summary = ctx.render(handoff.summary, owner).strip() if handoff.summary is not None else ""
        earlier = _earlier_messages(ctx, strategy)  # the turn's message goes as the request's message
        child.data.context = {"from": owner, "passed": passed, "summary": summary if strategy != "none" else "",  # type: ignore[union-attr]
                              "history": earlier}
        ctx.log.emit("handoff_context", owner, target=handoff.agent, passed=passed, history=strategy,
                     messages=len(earlier))
        return
    if child.kind != "reasoning":
        ctx.log.emit("handoff_context", owner, target=handoff.agent, passed=passed, history=strategy,
                     messages=0, note="a flow has no transcript: it reads the turn's message")
        return
    messages: list[dict] = []
    if handoff.summary is not None and strategy != "none":
        summary = ctx.render(handoff.summary, owner)
        if summary.strip():
            messages.append({"role": "system", "content": f"Handed over by {owner}: {summary.strip()}"})
    messages += _earlier_messages(ctx, strategy)  # the turn's message is added below, whatever the strategy
    if ctx.input.text is not None:
        messages.append({"role": "user", "content": ctx.input.text})
    child.data.messages = messages  # type: ignore[union-attr]
    ctx.log.emit("handoff_context", owner, target=handoff.agent, passed=passed, history=strategy,
                 messages=len(messages))


def _earlier_messages(ctx: TurnContext, strategy: str) -> list[dict]:
    """The messages before the turn's own that a history strategy hands over: all of them (full), the
    last N (last_n:N; the program's history window when N is not a number), or none (none,
    summary_only)."""
    history = ctx.state.history
    if history and history[-1].role == "user" and ctx.input.text is not None:
        history = history[:-1]  # the turn's message is not an earlier one
    if strategy == "full":
        count = 0  # history_messages: 0 is all of them
    elif strategy.startswith("last_n:"):
        try:
            count = max(0, int(strategy.split(":", 1)[1]))
        except ValueError:
            count = ctx.program.settings.history_window
        if not count:
            return []
    else:
        return []
    return [m.model_dump(exclude_none=True) for m in prompts.history_messages(history, count)]


# ---- handing back to the parent (RETURN: true, ABL 3.10) ------------------------------------------------


def handoff_parent(ctx: TurnContext, frame: Frame) -> Thread | None:
    """The thread of a reasoning agent that handed the conversation to `frame` and waits for it to end
    (a HANDOFF with RETURN: true)."""
    return next((t for t in ctx.state.threads.values() if t.reason == "handoff" and t.resume_after == frame.id
                 and t.top.kind == "reasoning"), None)


def return_to_parent_tools(ctx: TurnContext, frame: Frame) -> list[ToolSchema]:
    """`__return_to_parent__` (ABL 3.10) for an agent handed the conversation with RETURN: true, by a
    supervisor (a member) or by a reasoning agent's HANDOFF: the agent gives the message back and waits,
    its transcript and values kept, until its parent routes or hands over to it again."""
    waiting = handoff_parent(ctx, frame)
    if waiting is not None:
        parent = waiting.top.agent
        handoff = next((h for h in getattr(ctx.program.agents.get(parent), "handoffs", []) if h.agent == frame.agent),
                       None)
        if handoff is None or not handoff.resume or not ctx.program.agents[parent].policy.offers_return:
            return []
    else:
        router = ctx.started_by_router(frame)
        member = router.member(frame.agent) if router is not None else None
        if member is None or not member.resume or not router.policy.offers_return:  # else hand_back is enough
            return []
        parent = router.name
    return [ToolSchema(
        name=RETURN_TO_PARENT,
        description=(f"Give the conversation back to {parent} when the user asks for something outside "
                     "your task (a digression). You wait, with everything gathered so far, and carry on "
                     "when the user comes back to your task."),
        parameters={"type": "object", "properties": {"reason": {"type": "string"}}})]


def return_to_parent(ctx: TurnContext, frame: Frame, step: Yield) -> bool:
    """An agent another handed the conversation to (RETURN: true) gave the message back
    (`__return_to_parent__`): it waits as a thread of its own, owned by its parent, and the parent's
    thread comes back with the message; its handoff call is answered "not finished". False when no
    agent waits for `frame`."""
    waiting = handoff_parent(ctx, frame) if step.reason == "hand_back" else None
    if waiting is None:
        return False
    stack = ctx.state.stack
    frame.waiting = True
    chain = take_chain(ctx)
    parent = waiting.top
    child = new_thread(ctx, chain, "hand_back", owner=parent.id)
    ctx.log.emit("agent_suspended", frame.agent, by=f"return to {parent.agent}", reason="return_to_parent",
                 thread=child.id, message=step.message)
    del ctx.state.threads[waiting.id]
    stack.extend(waiting.frames)
    ctx.log.emit("thread_return", parent.agent, thread=waiting.id, reason="return_to_parent")
    ctx.log.emit("agent_resumed", parent.agent, by=f"{frame.agent} returned", thread=waiting.id)
    result = ChildResult(agent=frame.agent, frame_id=frame.id, graph=frame.graph, kind="yield", status="waiting",
                         message=step.message or "returned to you: the user's message is for you",
                         reason="hand_back", thread=child.id)
    driver(ctx).child_finished(parent, result, ctx)
    return True


def resume_returned(ctx: TurnContext, frame: Frame, target: Frame) -> Frame:
    """`frame` hands the conversation to `target`'s agent again: if that agent returned to `frame` earlier
    (`__return_to_parent__`) and waits, its thread comes back instead of a new run (ABL 3.10), with the
    message `target` was offered. Otherwise `target`."""
    waiting = next((t for t in ctx.state.threads.values() if t.reason == "hand_back" and t.owner == frame.id
                    and t.base.agent == target.agent), None)
    if waiting is None:
        return target
    top = resume_thread(ctx, waiting.id)
    ctx.log.emit("agent_resumed", top.agent, by=f"handoff from {frame.agent}", thread=waiting.id)
    if ctx.input.offered_to(target):
        ctx.input.offer(top, frame.agent)
    else:
        top.reask = True
    return top


# ---- driving again -------------------------------------------------------------------------------------


def drive_again(ctx: TurnContext) -> None:
    """The stack changed after the agents ran (a constraint's ON_FAIL handed over or moved a flow): drive
    them again, as the turn did."""
    driver(ctx).drive_turn(ctx)


# ---- ABL supervisors: the words of HANDOFF WHEN as routing phrases -----------------------------------------

_WHEN_OPENING = re.compile(
    r"^\s*(?:when\s+|if\s+)?(?:the\s+)?(?:user|customer|caller|client|they)\s+(?:is\s+|has\s+)?"
    r"(?:asks?|asking|asked|wants?|wanting|needs?|requests?|requesting|mentions?|mentioning|says?|"
    r"inquires?|enquires?|wishes|would\s+like|tries|trying|has\s+questions?|has\s+a\s+question)"
    r"(?:\s+(?:about|for|to|on|with|a\s+question\s+about|questions\s+about|help\s+with))?\s+", re.IGNORECASE)
_LIST_SPLIT = re.compile(r"\s*[,;]\s*(?:or\s+|and\s+)?|\s+or\s+", re.IGNORECASE)
_EXPRESSION = re.compile(r"==|!=|>=|<=|[<>]|\bAND\b|\bIS\s+SET\b|\b\w+\.\w+\b|\b\w+_\w+\b")
_FIRST_PERSON = ((r"\btheir\b", "my"), (r"\bthey\b", "I"), (r"\bthem\b", "me"), (r"\bthemselves\b", "myself"))


def when_phrases(text: str) -> list[str]:
    """What a user might say, read from a HANDOFF WHEN written in words: "user asks about delivery,
    shipping, or order status" gives "delivery, shipping, or order status", "delivery", "shipping"
    and "order status" (said in the first person: "their balance" becomes "my balance"). A WHEN that
    is an expression (`language == "es"`) gives nothing."""
    text = (text or "").strip().rstrip(".")
    if not text or _EXPRESSION.search(text):
        return []
    body = _WHEN_OPENING.sub("", text)
    for pattern, replacement in _FIRST_PERSON:
        body = re.sub(pattern, replacement, body, flags=re.IGNORECASE)
    phrases = [body]
    parts = [part.strip() for part in _LIST_SPLIT.split(body) if part and part.strip()]
    if len(parts) > 1:
        phrases += [re.sub(r"^(?:or|and)\s+", "", part, flags=re.IGNORECASE) for part in parts]
    return [p for p in phrases if len(p) >= 3]


def with_handoff_phrases(program: Program, options: list[Option]) -> list[Option]:
    """Route options with the phrases of every supervisor's HANDOFF WHEN for that member added (the
    local understanding model reads "Where is my package?" against "shipping", not against "user
    asks about delivery, shipping, or order status"). Programs without such words are unchanged."""
    extra: dict[str, list[str]] = {}
    for agent in program.agents.values():
        if isinstance(agent, RouterAgent):
            for member in agent.members:
                extra.setdefault(member.agent, []).extend(when_phrases(member.description))
    if not any(extra.values()):
        return options
    out = []
    for option in options:
        known = {e.lower() for e in option.examples}
        added = [p for p in dict.fromkeys(extra.get(option.key, [])) if p.lower() not in known]
        if not added:
            out.append(option)
            continue
        weights = option.weight_list() + [1.0] * len(added)
        keywords = (*option.keyword_examples, *added) if option.keyword_examples else ()
        out.append(Option(key=option.key, examples=(*option.examples, *added), weights=tuple(weights),
                          keyword_examples=keywords))
    return out
