"""MEMORY at run time (abl-specification 3.7): remember triggers store to persistent memory at the end
of a turn, recall rules load it at lifecycle events, session variables with `RESET: per_step` get their
INITIAL value again whenever the flow enters a step, and what recall loaded goes into the prompt."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from frontdesk.expr import EvalError, is_true
from frontdesk.ir.expr import ExprCondition, Ref, memory_ref

from ._base import declares, rules_in_play, rules_of, set_system, system_vars

if TYPE_CHECKING:  # pragma: no cover
    from frontdesk.runtime.context import TurnContext


def memory_context(agent: str, ctx: TurnContext) -> str:
    """What recall rules loaded for the prompt (inject_context / load_memory values, prompt_llm instructions)."""
    stored = system_vars(ctx)
    lines = [f"- {path}: {json.dumps(value, default=str)}" for path, value in (stored.get("_recalled") or {}).items()]
    lines += [f"- {text}" for text in stored.get("_recall_instructions") or []]
    return "What you remember about the user:\n" + "\n".join(lines) if lines else ""


def remember(ctx: TurnContext, agent: str, target: str, value: Any) -> None:
    """Store `value` at a persistent path (`user.past_bookings`): a list there gets it appended (once)."""
    ref = memory_ref(target)
    if ref is None:
        ctx.log.emit("warning", agent, where="remember", message=f"{target} is not a persistent memory path")
        return
    current = ctx.read(ref, agent)
    if isinstance(current, list):
        if value in current:
            return
        value = [*current, value]
    elif current == value:
        return
    ctx.assign(ref, value, agent, why="remember")


def remember_triggers(ctx: TurnContext) -> None:
    """MEMORY remember triggers: when a rule's condition holds, its value is stored."""
    for agent, rules in rules_in_play(ctx):
        for rule in rules.memory.remember:
            if not isinstance(rule.when, ExprCondition):
                continue
            try:
                if not is_true(ctx.eval(rule.when.expr, agent)):
                    continue
                value = ctx.eval(rule.value, agent)
            except Exception as exc:  # noqa: BLE001 - EvalError, or anything else: an event, never a traceback
                message = str(exc) if isinstance(exc, EvalError) else f"{type(exc).__name__}: {exc}"
                ctx.log.emit("error", agent, where=f"remember {rule.target}", message=message)
                continue
            remember(ctx, agent, rule.target, value)


def reset_per_step(ctx: TurnContext, agent: str) -> None:
    """The agent's session variables declared `RESET: per_step` are step-scoped: each time its flow enters
    a step they get their INITIAL value again (or none)."""
    for var in rules_of(ctx, agent).memory.session:
        if var.reset != "per_step":
            continue
        ref = Ref(scope="session", name=var.name)
        if ctx.read(ref, agent) != var.initial:
            ctx.assign(ref, var.initial, agent, why="RESET per_step")


def recall_at(ctx: TurnContext, events: list[str], only: str | None = None) -> None:
    """Recall rules listening for these events: stored values are loaded into the session."""
    owners = [(a, r) for a, r in rules_in_play(ctx) if only is None or a == only]
    if not owners and ctx.program.entry in ctx.program.agents:
        entry = ctx.program.agents[ctx.program.entry]
        owners = [(entry.name, entry.rules)]
    for agent, rules in owners:
        for rule in rules.memory.recall:
            if rule.on not in events:
                continue
            loaded: dict[str, Any] = {}
            paths = list(rule.paths)
            if rule.domain:  # load_memory DOMAIN: every declared path under it
                paths += [p.path for p in rules.memory.persistent
                          if rule.domain in p.path.split(".") and p.path not in paths]
            for path in paths:
                declared = next((p for p in rules.memory.persistent if p.path == path), None)
                if declared is not None and declared.access == "write":
                    ctx.log.emit("warning", agent, where="recall",
                                 message=f"{path} is declared write-only (ACCESS: write); it is not read")
                    continue
                ref = memory_ref(path)
                value = ctx.read(ref, agent) if ref is not None else None
                if value is None:
                    continue
                loaded[path] = value
                set_system(ctx, agent, "_stored_" + path.replace(".", "_"), value, why=f"recall {rule.on}")
                name = path.rsplit(".", 1)[-1]
                if declares(ctx, agent, name) and ctx.read(Ref(scope="session", name=name), agent) is None:
                    ctx.write("session", name, value, agent, why=f"recall {rule.on}")
            system = system_vars(ctx)
            if loaded and rule.action in ("inject_context", "load_memory"):
                system["_recalled"] = {**(system.get("_recalled") or {}), **loaded}
            if rule.action == "prompt_llm" and rule.instruction:
                instructions = system.get("_recall_instructions") or []
                if rule.instruction not in instructions:
                    system["_recall_instructions"] = [*instructions, rule.instruction]
            ctx.log.emit("memory_recall", agent, on=rule.on, action=rule.action, values=loaded,
                         **({"instruction": rule.instruction} if rule.instruction else {}))
