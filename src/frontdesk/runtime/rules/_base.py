"""What every part of the rules runtime shares: the event kinds, the named texts, the state a turn
keeps, and safe reading and writing of the session (a failing expression is an event, never a
traceback)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from frontdesk.expr import EvalError
from frontdesk.ir.behaviour import Action, AgentRules, Guardrail
from frontdesk.ir.expr import ExprCondition, Ref
from frontdesk.runtime.events import register_event_type

if TYPE_CHECKING:  # pragma: no cover
    from frontdesk.runtime.context import TurnContext

register_event_type("constraint_check", "a constraint was evaluated", ("constraint", "passed"))
register_event_type("guardrail_check", "a guardrail was evaluated", ("guardrail", "fired"))
register_event_type("constraint_action", "a failed constraint's ON_FAIL action was carried out",
                    ("constraint", "action"))
register_event_type("guardrail_action", "a fired guardrail's action was carried out", ("guardrail", "action"))
register_event_type("memory_recall", "persistent memory was loaded at a lifecycle event", ("on", "values"))
register_event_type("hook_run", "an agent's lifecycle hook or action handler ran", ("hook",))

REDACTED = "[REDACTED]"
BLOCKED = "Sorry, I can't help with that."
CONSTRAINT_BLOCKED = "Sorry, I can't continue with that request."
ESCALATION_NOTICE = "I'm passing this conversation to a colleague who can help further."
NOT_ALLOWED = "{tool} is not allowed now"
COUNTERS = ("constraint_failures", "tool_failures", "_clarification_count")
MAX_REDRIVES = 3  # rewinds / handoffs ON_FAIL may cause in one turn


@dataclass
class Violation:
    """A failed rule whose action is carried out: who declared it, what it says, and where the turn was."""

    agent: str
    source: str
    action: Action
    text: str = ""
    said_at: int = 0  # how many drafts the turn had when it failed: a rewind drops the later ones


@dataclass
class TurnRules:
    """What the rules keep during one turn (on the TurnContext)."""

    checked: set[tuple[str, str]] = field(default_factory=set)  # rules evaluated at the end of the turn
    failed: set[tuple[str, str]] = field(default_factory=set)  # rules whose ON_FAIL ran this turn
    pending: list[Violation] = field(default_factory=list)  # actions carried out once the agents ran
    redrives: int = 0
    profiles: dict[str, list[str]] = field(default_factory=dict)  # agent -> active profiles reported


def turn_rules(ctx: TurnContext) -> TurnRules:
    found = ctx.__dict__.get("_rules_turn")
    if found is None:
        found = TurnRules()
        ctx.__dict__["_rules_turn"] = found
    return found


def follow_later(ctx: TurnContext, agent: str, source: str, action: Action, with_retry: bool = True) -> None:
    """Queue what an action does to the stack (HANDOFF, DELEGATE, GOTO, COLLECT, and RETRY unless
    `with_retry` is False: ON_ERROR counts its own retries): carried out when the agents have run,
    since it cannot happen in the middle of an agent's run."""
    retry = action.retry and with_retry
    if action.handoff or action.delegate or action.goto or action.collect or retry:
        follow = Action(handoff=action.handoff, delegate=action.delegate, goto=action.goto,
                        collect=action.collect, retry=retry)
        turn_rules(ctx).pending.append(Violation(agent, source, follow, said_at=len(ctx.said)))


def rule_moves(ctx: TurnContext, agent: str) -> bool:
    """Whether a rule of `agent` that failed this turn waits to move it (GOTO, COLLECT, RETRY, HANDOFF)."""
    return any(v.agent == agent for v in turn_rules(ctx).pending)


# ---- system variables (abl-specification 8.8) --------------------------------------------------------


def system_vars(ctx: TurnContext) -> dict[str, Any]:
    """The session's runtime-assigned variables (constraint_failures, _constraint_warnings, _stored_*, ...):
    read by expressions as system values."""
    return ctx.state.system


def set_system(ctx: TurnContext, agent: str | None, name: str, value: Any, why: str) -> None:
    system_vars(ctx)[name] = value
    ctx.log.emit("arg_set", agent, scope="system", name=name, value=value, why=why)


# ---- which rules apply ----------------------------------------------------------------------------------


_NO_RULES = AgentRules()  # what a name that is no agent of the program declares (never changed)


def rules_of(ctx: TurnContext, agent: str | None) -> AgentRules:
    """The rules agent `agent` declares (empty when it declares none, or is no agent of the program)."""
    found = ctx.program.agents.get(agent) if agent else None
    return found.rules if found is not None else _NO_RULES


def rules_in_play(ctx: TurnContext, also: list[str] | None = None) -> list[tuple[str, AgentRules]]:
    """The rules of the agents on the stack (top first), and of those that spoke this turn (one may have
    ended since), and of `also`."""
    out: list[tuple[str, AgentRules]] = []
    seen: set[str] = set()
    names = [f.agent for f in reversed(ctx.state.stack)] + [m.agent for m in ctx.said if m.agent] + (also or [])
    for name in names:
        agent = ctx.program.agents.get(name)
        if agent is None or agent.name in seen:
            continue
        seen.add(agent.name)
        out.append((agent.name, agent.rules))
    return out


def guardrails_of(rules: AgentRules, kind: str) -> list[Guardrail]:
    return [g for g in rules.guardrails if g.kind == kind]


def declares(ctx: TurnContext, agent: str, name: str) -> bool:
    """Whether the agent declares `name` as a session variable or a GATHER field."""
    rules = rules_of(ctx, agent)
    return any(v.name == name for v in rules.memory.session) or any(f.name == name for f in rules.gather)


# ---- reading and writing safely -------------------------------------------------------------------------


def condition(ctx: TurnContext, agent: str, cond, where: str, extras: dict[str, Any] | None = None,
              default: bool | None = True) -> bool | None:
    """A condition's truth; a natural-language condition is the model's business (true here); one that
    cannot be evaluated is an error event and `default`."""
    from frontdesk.expr import EvalError, evaluate, is_true

    if not isinstance(cond, ExprCondition):
        return True
    extras = extras or {}

    def read(ref: Ref) -> Any:
        if ref.space == "var" and ref.name in extras:
            return extras[ref.name]
        value = ctx.read(ref, agent)
        if value is None and ref.space == "system" and ref.name in COUNTERS:
            return 0  # a count nothing added to yet
        return value

    try:
        return is_true(evaluate(cond.expr, read, env=ctx.eval_env))
    except EvalError as exc:
        ctx.log.emit("error", agent, where=where, message=str(exc))
        return default
    except Exception as exc:  # noqa: BLE001 - an authored rule must never break the turn
        ctx.log.emit("error", agent, where=where, message=f"{type(exc).__name__}: {exc}")
        return default


def evaluate(ctx: TurnContext, agent: str, expr) -> Any:
    """An expression's value; None (and a warning event) when it cannot be evaluated."""
    try:
        return ctx.eval(expr, agent)
    except EvalError as exc:
        ctx.log.emit("warning", agent, where="rule action", message=str(exc))
    except Exception as exc:  # noqa: BLE001 - an authored value must never break the turn
        ctx.log.emit("error", agent, where="rule action", message=f"{type(exc).__name__}: {exc}")
    return None


def assign(ctx: TurnContext, agent: str, name: str, value: Any, why: str) -> None:
    """SET in a rule's action: a session variable, or (a `_name`) a runtime variable."""
    if name.startswith("_"):
        set_system(ctx, agent, name, value, why)
    else:
        ctx.assign(Ref(scope="session", name=name), value, agent, why=why)


def read_name(ctx: TurnContext, agent: str, name: str) -> Any:
    if name.startswith("_") or name in system_vars(ctx):
        return system_vars(ctx).get(name)
    return ctx.read(Ref(scope="session", name=name), agent)


def as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, default=str, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)
