"""CONSTRAINTS at run time (abl-specification 3.8).

Every constraint is checked every turn, in declaration order (an agent's own, then those of its active
behaviour profiles), when the agents have run (`end_of_turn`); `WHEN` gates a rule, and a rule about
values nobody has given yet does not apply yet (except an `IS SET` rule). Besides:

- `BEFORE calling <tool>` rules are checked before that tool runs: a failure answers the call with an
  error result and says the ON_FAIL words;
- `BEFORE returning results` rules (and the every-turn ones) are checked when the agent is about to
  finish (`before_done`);
- rules about the reply (`len(response) < 500`) are checked on each draft (`on_drafts`);
- at each flow step boundary (`step_checkpoint`, called by the flow executor when it leaves one named
  step for another): the rules whose ON_FAIL moves the flow (GOTO, COLLECT, RETRY), so that the next
  step neither runs nor says anything when such a rule fails (abl-core-concepts: "after data
  collection, gathered values are validated against constraint rules"). Found only at the end of the
  turn, the same rewind takes back what the flow said after the failure.

A failing rule runs its ON_FAIL once a turn: a message (a text or a TEMPLATE), LOG / SET / STORE,
ESCALATE (the session is escalated), HANDOFF / DELEGATE (the agent named takes the conversation), BLOCK
(the turn's drafts are dropped) and the structured RESPOND / COLLECT (the fields are cleared and asked
again) / RETRY (the current step runs again) / GOTO (the flow goes to that step). Each such failure adds
one to `constraint_failures` (8.8: the count of violations). A failed WARN rule is a soft failure:
its ON_FAIL text is said (once a turn, before the question the turn ends on) and goes to
`_constraint_warnings` (8.8: "warning messages from soft constraint failures") and a `warning` event;
nothing else happens and `constraint_failures` does not change; its `constraint_check` event has
`passed: false, soft: true`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from frontdesk.ir.behaviour import Action, AgentRules, Constraint
from frontdesk.ir.expr import ExprCondition, IsSet
from frontdesk.ir.models import FlowAgent, ListenNode, SayNode
from frontdesk.ir.walk import nodes_in, refs_in
from frontdesk.runtime import handoff
from frontdesk.runtime.policies import new_frame
from frontdesk.runtime.steps import Transfer
from frontdesk.runtime.tools import ToolResult

from ._base import (
    CONSTRAINT_BLOCKED,
    ESCALATION_NOTICE,
    MAX_REDRIVES,
    NOT_ALLOWED,
    Violation,
    assign,
    condition,
    evaluate,
    follow_later,
    read_name,
    rules_in_play,
    rules_of,
    set_system,
    system_vars,
    turn_rules,
)
from .memory import remember
from .profiles import constraints_of
from .templates import action_text, message

if TYPE_CHECKING:  # pragma: no cover
    from frontdesk.runtime.context import TurnContext
    from frontdesk.runtime.pipeline import Finishing, Outgoing, PendingToolCall
    from frontdesk.runtime.state import Frame


# ---- evaluating -----------------------------------------------------------------------------------------


def check(ctx: TurnContext, agent: str, constraint: Constraint, extras: dict[str, Any] | None = None,
          once: bool = True, at: str = "") -> Violation | None:
    """Evaluate a constraint; the violation when it fails (and its ON_FAIL is to run). A rule whose ON_FAIL
    ran this turn is not checked again; with `once`, nor is one evaluated already at the end of the turn."""
    ident = (agent, f"{constraint.checkpoint}:{constraint.tool}:{constraint.source}")
    turn = turn_rules(ctx)
    repeatable = constraint.checkpoint == "before_tool" or extras is not None
    if not repeatable and (ident in turn.failed or (once and ident in turn.checked)):
        return None
    if extras is None and not_yet(ctx, agent, constraint):
        return None  # the values it reads are not there yet: nothing to check
    if once:
        turn.checked.add(ident)
    where = {"at": at} if at else {}
    if constraint.when is not None and not condition(ctx, agent, constraint.when, "constraint WHEN", extras):
        ctx.log.emit("constraint_check", agent, constraint=constraint.source, passed=True, kind=constraint.kind,
                     checkpoint=constraint.checkpoint, gated=True, **where)
        return None
    passed = condition(ctx, agent, constraint.condition, f"constraint {constraint.source}", extras, None)
    if passed is None:
        return None  # could not be evaluated: an error event, and the rule passes
    soft = constraint.kind == "warn"
    ctx.log.emit("constraint_check", agent, constraint=constraint.source, passed=passed, kind=constraint.kind,
                 checkpoint=constraint.checkpoint, **where, **({"label": constraint.label} if constraint.label else {}),
                 **({"soft": True} if soft and not passed else {}))
    if passed:
        return None
    if not repeatable:
        turn.failed.add(ident)
    system = system_vars(ctx)
    if soft:  # a soft failure: its message is kept, the turn goes on
        text = action_text(ctx, agent, constraint.on_fail) or constraint.source
        warnings = list(system.get("_constraint_warnings") or [])
        if text not in warnings:
            set_system(ctx, agent, "_constraint_warnings", [*warnings, text], why="WARN")
        ctx.log.emit("warning", agent, where="constraint", message=f"WARN {constraint.source}: {text}")
        if constraint.on_fail is not None and (constraint.on_fail.respond is not None or constraint.on_fail.template):
            ctx.note(agent, text)  # its ON_FAIL message is for the user (3.8.3), once a turn
        return None
    set_system(ctx, agent, "constraint_failures", int(system.get("constraint_failures") or 0) + 1,
               why=f"{constraint.source} failed")
    # found after the agents ran: a rewind takes back all the agent drafted this turn
    return Violation(agent, constraint.source, constraint.on_fail, said_at=0)


def reads(constraint: Constraint, name: str) -> bool:
    """Whether the rule's condition reads the variable `name` (`response`)."""
    cond = constraint.condition
    return isinstance(cond, ExprCondition) and any(r.space == "var" and r.name == name for r in refs_in(cond.expr))


def not_yet(ctx: TurnContext, agent: str, constraint: Constraint) -> bool:
    """A rule about values nobody has given yet (`refund_amount <= 1000` before the amount is known)
    does not apply yet; one that asks whether a value is set (IS SET) always does."""
    cond = constraint.condition
    if not isinstance(cond, ExprCondition) or next(nodes_in(cond.expr, IsSet), None) is not None:
        return False
    return any(ctx.read(ref, agent) is None for ref in refs_in(cond.expr) if ref.space == "var")


def every_turn(ctx: TurnContext, agent: str, rules: AgentRules) -> list[Constraint]:
    """The rules checked every turn (neither BEFORE calling a tool, nor about the reply)."""
    return [c for c in constraints_of(ctx, agent, rules) if c.checkpoint != "before_tool" and not reads(c, "response")]


def moves_flow(action: Action) -> bool:
    return bool(action.goto or action.collect or action.retry)


# ---- what a failure does ----------------------------------------------------------------------------------


def effects(ctx: TurnContext, violation: Violation) -> str:
    """An ON_FAIL action's effects on the session (LOG, SET, STORE, ESCALATE); the text to say."""
    agent, action = violation.agent, violation.action
    if action.log:
        ctx.log.emit("step", agent, action="ON_FAIL log", values={n: read_name(ctx, agent, n) for n in action.log})
    for name, expr in action.set:
        assign(ctx, agent, name, evaluate(ctx, agent, expr), "ON_FAIL")
    for store in action.store:
        remember(ctx, agent, store.target, evaluate(ctx, agent, store.value))
    text = action_text(ctx, agent, action)
    if action.escalate:
        ctx.state.status = "escalated"
        ctx.log.emit("session_escalated", agent, reason=action.escalate_reason or f"{violation.source} failed",
                     priority=action.escalate_priority or "medium")
        text = text or message(ctx, agent, "escalation_notice", ESCALATION_NOTICE)
    if action.block and not text:
        text = message(ctx, agent, "constraint_blocked", CONSTRAINT_BLOCKED)
    violation.text = text
    return text


def carry_out_now(ctx: TurnContext, violation: Violation, checkpoint: str) -> str:
    """At a checkpoint inside an agent's run (BEFORE calling): say the words now; what changes the
    stack (handoff, goto, collect, retry) waits until the agents ran."""
    text = effects(ctx, violation)
    action = violation.action
    ctx.log.emit("constraint_action", violation.agent, constraint=violation.source, action=describe(action),
                 checkpoint=checkpoint)
    if action.block:
        drop_drafts(ctx, violation.agent, 0, everyone=True)
    if text:
        ctx.say(violation.agent, text)
    follow_later(ctx, violation.agent, violation.source, action)
    return text


def carry_out(ctx: TurnContext, violation: Violation, frame: Frame | None,
              finishing: Finishing | None = None) -> str:
    """Carry out a violation's action where the engine drives the agents (runtime/handoff.py): "go",
    "continue" (the stack changed) or "stop" (escalated: the turn ends). A BLOCK makes the result of
    an agent `finishing` an error."""
    action = violation.action
    agent = violation.agent
    if action.escalate and ctx.state.status == "escalated" and not violation.text:
        ctx.log.emit("constraint_action", agent, constraint=violation.source, action="none",
                     why="the session is escalated already")
        return "stop"
    follow_only = only_follow(action)
    text = violation.text if violation.text or follow_only else effects(ctx, violation)
    ctx.log.emit("constraint_action", agent, constraint=violation.source, action=describe(action))
    if action.block:
        drop_drafts(ctx, agent, 0, everyone=True)
    elif moves_flow(action) and frame is not None and frame.kind == "flow":
        drop_drafts(ctx, agent, violation.said_at)
    if text and not follow_only:
        ctx.say(agent, text)
    if finishing is not None and action.block:
        finishing.outcome = replace(finishing.outcome, status="error", message=text)
    if action.escalate:
        if frame is not None and ctx.state.stack and ctx.state.stack[-1] is frame:
            frame.waiting = True
            if ctx.input.available_to(frame) or ctx.input.is_open:
                ctx.input.state = "taken"
        return "stop"
    target = action.handoff or action.delegate
    if target:
        if target not in ctx.program.agents:
            ctx.log.emit("error", agent, where="ON_FAIL", message=f"no agent named {target}")
            return "go"
        top = ctx.state.stack[-1] if ctx.state.stack else None
        child = new_frame(ctx, target)
        ctx.log.emit("step", agent, action="a failed constraint hands the conversation over", agent=target,
                     resume=bool(action.delegate))
        if top is None:
            ctx.state.stack.append(child)
            ctx.log.emit("agent_started", target, by=f"ON_FAIL of {agent}")
        elif top.kind == "router":
            handoff.start(ctx, child, top.id, top.agent)
        else:
            if ctx.input.taken_by(top) or ctx.input.offered_to(top):
                ctx.input.state = "taken"
            handoff.transfer(ctx, top, Transfer(child, resume=bool(action.delegate)))
        return "continue"
    if frame is not None and moves_flow(action) and rewind(ctx, frame, action):
        return "continue"
    return "go"


# ---- the checkpoints --------------------------------------------------------------------------------------


def at_tool_call(ctx: TurnContext, agent: str, rules: AgentRules, call: PendingToolCall) -> bool:
    """`BEFORE calling <tool>` rules of one agent; True when one failed (the call is answered with an error)."""
    for constraint in constraints_of(ctx, agent, rules):
        if constraint.checkpoint != "before_tool" or constraint.tool != call.tool:
            continue
        # the call's arguments are the values it is about to use; a value nobody gave does not let a
        # precondition pass (REQUIRE upgrade_available == true BEFORE calling book_upgrade)
        violation = check(ctx, agent, constraint, extras=dict(call.args))
        if violation is None:
            continue
        text = carry_out_now(ctx, violation, "before_tool")
        call.answer(ToolResult(status="error", message=text or NOT_ALLOWED.format(tool=call.tool)))
        return True
    return False


def on_drafts(ctx: TurnContext, agent: str, rules: AgentRules, out: Outgoing) -> None:
    """Rules about the reply itself (`len(response) < 500`), on each of the agent's drafts."""
    for constraint in constraints_of(ctx, agent, rules):
        if constraint.checkpoint != "turn" or not reads(constraint, "response"):
            continue
        for draft in [m for m in out.messages if m.agent == agent]:
            violation = check(ctx, agent, constraint, {"response": draft.text}, once=False)
            if violation is not None:
                text = effects(ctx, violation) or CONSTRAINT_BLOCKED
                if violation.action.block or violation.action.respond is not None:
                    draft.text = text


def step_checkpoint(frame: Frame, ctx: TurnContext, step: str) -> bool:
    """The flow of `frame` is about to enter the named `step`. At a boundary (a step other than the one it
    is in), the agent's rules whose ON_FAIL moves the flow are checked; when one fails its words are said
    and the flow is moved (GOTO, COLLECT, RETRY the step it leaves) before the step runs. True when the flow
    was moved: the executor goes on from where it is now."""
    rules = rules_of(ctx, frame.agent)
    if frame.graph != "main" or frame.data.step in (None, step):
        return False
    for constraint in every_turn(ctx, frame.agent, rules):
        if constraint.checkpoint != "turn" or not moves_flow(constraint.on_fail):
            continue
        violation = check(ctx, frame.agent, constraint, once=False, at=f"step {step}")
        if violation is None:
            continue
        text = effects(ctx, violation)
        ctx.log.emit("constraint_action", frame.agent, constraint=violation.source,
                     action=describe(violation.action), checkpoint=f"step {step}")
        if text:
            ctx.say(frame.agent, text, frame)
        if rewind(ctx, frame, violation.action):
            return True
    return False


def before_done(ctx: TurnContext, finishing: Finishing) -> None:
    """An agent is about to finish and return its results: its `BEFORE returning results` and every-turn
    constraints. The verdict stays "go" (finish), or becomes "continue" (the stack changed: a rewind, a
    handoff; drive on) or "stop" (the session was escalated)."""
    frame = finishing.frame
    rules = rules_of(ctx, frame.agent)
    if frame.graph != "main" or finishing.outcome.status != "success":
        return
    for constraint in every_turn(ctx, frame.agent, rules):
        violation = check(ctx, frame.agent, constraint)
        if violation is None:
            continue
        verdict = carry_out(ctx, violation, frame, finishing=finishing)
        if verdict == "continue":
            finishing.drive_on()
            return
        if verdict == "stop":
            finishing.stop()
            return


def end_of_turn(ctx: TurnContext) -> None:
    """The agents ran: the ON_FAIL / ON_ERROR actions waiting, and the every-turn constraints of the agents
    in play. A rewind or handoff drives the agents again (at most MAX_REDRIVES times a turn)."""
    turn = turn_rules(ctx)
    for _ in range(MAX_REDRIVES + 1):
        violations = list(turn.pending)
        turn.pending.clear()
        for agent, rules in rules_in_play(ctx):
            for constraint in every_turn(ctx, agent, rules):
                if constraint.checkpoint != "turn":
                    continue
                violation = check(ctx, agent, constraint)
                if violation is not None:
                    violations.append(violation)
        redrive = False
        for index, violation in enumerate(violations):
            frame = next((f for f in reversed(ctx.state.stack) if f.agent == violation.agent), None)
            verdict = carry_out(ctx, violation, frame)
            if verdict == "continue":
                redrive = True
                turn.pending[:0] = violations[index + 1:]  # carried out once the agents ran again
                break
            if verdict == "stop":
                break
        if not redrive or turn.redrives >= MAX_REDRIVES:
            break
        turn.redrives += 1
        handoff.drive_again(ctx)


# ---- helpers --------------------------------------------------------------------------------------------


def only_follow(action: Action) -> bool:
    """An action queued to follow a checkpoint's words (they were said already)."""
    return action.respond is None and not action.template and not action.escalate and not action.block \
        and not action.set and not action.log and not action.store


def describe(action: Action) -> str:
    parts = []
    if action.respond is not None or action.template:
        parts.append("message")
    for name, on in (("ESCALATE", action.escalate), ("BLOCK", action.block), ("RETRY", action.retry)):
        if on:
            parts.append(name)
    if action.handoff:
        parts.append(f"HANDOFF {action.handoff}")
    if action.delegate:
        parts.append(f"DELEGATE {action.delegate}")
    if action.collect:
        parts.append("COLLECT " + ", ".join(action.collect))
    if action.goto:
        parts.append(f"GOTO {action.goto}")
    return " + ".join(parts) or "none"


def drop_drafts(ctx: TurnContext, agent: str, start: int, everyone: bool = False) -> None:
    """Take back what `agent` (or `everyone`: BLOCK) drafted this turn from the `start`-th draft on."""
    for draft in list(ctx.said[start:]):
        if draft.agent == agent or everyone:
            ctx.said.remove(draft)
            if draft.item is not None and draft.item in ctx.state.history:
                ctx.state.history.remove(draft.item)


def rewind(ctx: TurnContext, frame: Frame, action: Action) -> bool:
    """GOTO / COLLECT / RETRY on a flow: clear the fields to collect again and move the flow to the step
    (GOTO's, else the one asking for the first field, else the current one); True when it moved."""
    for name in action.collect:
        ctx.write("session", name, None, frame.agent, why="ON_FAIL COLLECT")
    agent = ctx.program.agents.get(frame.agent)
    if not isinstance(agent, FlowAgent) or frame.kind != "flow" or frame.graph != "main":
        return False
    graph = agent.graph
    node_id = None
    if action.goto and action.goto != "COMPLETE":
        node_id = graph.labels.get(action.goto)
        if node_id is None:
            ctx.log.emit("error", frame.agent, where="ON_FAIL", message=f"no step named {action.goto}")
            return False
    elif action.collect:
        listen = next((n for n in graph.nodes.values() if isinstance(n, ListenNode)
                       and any(f in n.extracts for f in action.collect)), None)
        if listen is not None:
            ask = next((n for n in graph.nodes.values() if isinstance(n, SayNode) and n.next == listen.id), None)
            node_id = (ask or listen).id
    if node_id is None and (action.retry or action.collect):
        node_id = frame.data.step
    if node_id is None:
        return False
    for name in action.collect:  # asked again: the earlier answers are not "rejected" for good
        for listen_id, values in list(frame.data.extracted.items()):
            values.pop(name, None)
            if not values:
                frame.data.extracted.pop(listen_id, None)
        frame.data.rejected.pop(name, None)
    asked = ctx.state.system.get("_tool_confirmations") or {}
    for tool, entry in list(asked.items()):  # a question the flow asked before the rewind is void
        if isinstance(entry, dict) and entry.get("status") == "asked" and entry.get("owner") in (frame.id, frame.agent):
            del asked[tool]
    frame.data.node = node_id
    frame.data.step = None
    frame.waiting = False
    ctx.log.emit("step", frame.agent, action="a failed constraint moves the flow", to=node_id)
    return True
