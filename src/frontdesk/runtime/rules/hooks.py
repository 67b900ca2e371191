"""HOOKS (before/after turn and agent), ACTION_HANDLERS (a button's payload runs its handler), the
lifecycle events that drive MEMORY recall, and what an ON_ERROR handler does after its retries."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from frontdesk.ir.behaviour import AgentRules, Hook

from ._base import (
    Violation,
    assign,
    evaluate,
    follow_later,
    read_name,
    rules_in_play,
    rules_of,
)
from .constraints import effects
from .memory import recall_at, reset_per_step

if TYPE_CHECKING:  # pragma: no cover
    from frontdesk.runtime.context import TurnContext
    from frontdesk.runtime.events import Event
    from frontdesk.runtime.pipeline import IncomingMessage


def run_hook(ctx: TurnContext, agent: str, hook: Hook) -> None:
    """A lifecycle hook or action handler: CALL its tool, then SET, STORE, RESPOND, and what follows
    (THEN <step>, HANDOFF, ESCALATE) once the agents ran."""
    ctx.log.emit("hook_run", agent, hook=hook.event, **({"call": hook.call} if hook.call else {}))
    frame = next((f for f in reversed(ctx.state.stack) if f.agent == agent), None)
    if hook.call:
        args = {name: evaluate(ctx, agent, expr) for name, expr in hook.args.items()}
        result = ctx.call_tool(hook.call, args, agent, frame)
        bound = hook.action.extra.get("result_as")
        if bound:
            assign(ctx, agent, bound, result.value if result.value is not None else dict(result.args),
                   f"result of {hook.call}")
    text = effects(ctx, Violation(agent, f"hook {hook.event}", hook.action, said_at=len(ctx.said)))
    if text:
        ctx.say(agent, text)
    follow_later(ctx, agent, f"hook {hook.event}", hook.action, with_retry=False)


def hooks_at(ctx: TurnContext, event: str) -> None:
    """The `event` hooks (before_turn, after_turn) of the agents in play."""
    for agent, rules in rules_in_play(ctx):
        for hook in rules.hooks:
            if hook.event == event:
                run_hook(ctx, agent, hook)


def action_handler(ctx: TurnContext, message: IncomingMessage) -> bool:
    """A message that is a declared action's payload (its ID, or a button's VALUE) runs its handler
    (ACTION_HANDLERS); no agent reads it as an answer."""
    text = message.text.strip()
    if not text:
        return False
    for agent, rules in rules_in_play(ctx):
        handlers = {h.event[len("action:"):]: h for h in rules.hooks if h.event.startswith("action:")}
        if not handlers:
            continue
        chosen = None
        for element in declared_actions(ctx, agent, rules):
            payloads = {element.id} | ({str(element.value)} if element.value is not None else set())
            payloads |= {o["id"] for o in element.options}
            if text in payloads and element.id in handlers:
                chosen = element.id
                break
        if chosen is None and text in handlers:
            chosen = text
        if chosen is None:
            continue
        ctx.log.emit("step", agent, action="a button's payload runs its handler", payload=text, handler=chosen)
        run_hook(ctx, agent, handlers[chosen])
        message.block("")  # handled: no agent reads it; what the handler said is the reply
        return True
    return False


def on_event(ctx: TurnContext, event: Event) -> None:
    """A lifecycle event of the turn: recall rules, agent hooks, per-step resets."""
    try:
        _lifecycle(ctx, event)
    except Exception as exc:  # noqa: BLE001 - a broken recall or hook must not break the turn
        ctx.log.emit("error", event.agent, where=f"rules at {event.type}", message=f"{type(exc).__name__}: {exc}")


def _lifecycle(ctx: TurnContext, event: Event) -> None:
    kind, agent, data = event.type, event.agent, event.data
    if kind == "session_started":
        recall_at(ctx, ["session:start"])
    elif kind == "session_ended":
        recall_at(ctx, ["session:end"])
    elif kind == "agent_started" and agent:
        recall_at(ctx, [f"agent:{agent}:before", "agent:*:before"])
        _agent_hooks(ctx, agent, "before_agent")
    elif kind == "agent_finished" and agent:
        recall_at(ctx, [f"agent:{agent}:after", "agent:*:after"])
        _agent_hooks(ctx, agent, "after_agent")
    elif kind == "tool_result" and data.get("tool"):
        recall_at(ctx, [f"tool:{data['tool']}:after", "tool:*:after"])
    elif kind == "args_extracted" and isinstance(data.get("args"), dict):
        recall_at(ctx, [f"entity:{name}:extracted" for name in data["args"]] + ["entity:*:extracted"])
    elif kind == "flow_transition":
        if agent and data.get("step") != data.get("previous"):
            reset_per_step(ctx, agent)
        events = [f"step:enter:{data.get('step')}", "step:enter:*"]
        if data.get("previous"):
            events = [f"step:exit:{data['previous']}", "step:exit:*", *events]
        recall_at(ctx, events, agent)


def _agent_hooks(ctx: TurnContext, agent: str, event: str) -> None:
    for hook in rules_of(ctx, agent).hooks:
        if hook.event == event:
            run_hook(ctx, agent, hook)


def declared_actions(ctx: TurnContext, agent: str, rules: AgentRules) -> list:
    """The interactive elements the agent declares: its own ACTIONS and those of its flow's messages."""
    elements = list(rules.actions)
    graph = getattr(ctx.program.agents.get(agent), "graph", None)
    for node in graph.nodes.values() if graph is not None else []:
        elements += getattr(node, "actions", None) or []
    return elements


def after_error(ctx: TurnContext, agent: str | None, handler: Any, tool: str) -> None:
    """What an ON_ERROR handler does once its retries are spent, besides its words and ESCALATE (which
    the tool call carries out): LOG, SET, and THEN DELEGATE / HANDOFF / GOTO, carried out once the agents
    ran; THEN ASK_USER offers the choices."""
    if not agent:
        return
    action = handler.action
    if action.log:
        ctx.log.emit("step", agent, action="ON_ERROR log", handler=handler.on, tool=tool,
                     values={n: read_name(ctx, agent, n) for n in action.log})
    for name, expr in action.set:
        assign(ctx, agent, name, evaluate(ctx, agent, expr), "ON_ERROR")
    if action.ask_user:
        ctx.say(agent, "Would you like me to " + " or ".join(c.replace("_", " ") for c in action.ask_user) + "?")
    follow_later(ctx, agent, f"ON_ERROR {handler.on}", action, with_retry=False)
