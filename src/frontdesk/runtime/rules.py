"""An agent's declared rules at run time: CONSTRAINTS and GUARDRAILS at the turn pipeline's points.

The engine installs `RulesHook` first in every pipeline. It applies the rules of the agents on the
stack (the active one and the routers and callers below it):

- input guardrails when the user's message arrives: a guardrail that fires blocks the message (or
  warns, or escalates) before any agent or tool sees it;
- tool_input guardrails and `BEFORE calling <tool>` constraints before a tool runs: a failure
  answers the call with an error result instead of running the tool;
- tool_output guardrails after it runs;
- every-turn constraints and output guardrails on what the bot is about to send: a failed
  constraint's ON_FAIL message is sent (BLOCK replaces the drafts), an output guardrail blocks,
  redacts or filters the drafts.

A guardrail's `check` is a CEL violation predicate (true: it fires) over `content`/`input`, and
`tool_input`/`tool_output` at tool points. Every evaluation is a `constraint_check` or
`guardrail_check` event; a check that cannot be evaluated is an `error` event and passes.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from frontdesk.ir.behaviour import Action, AgentRules, Constraint, Guardrail
from frontdesk.ir.expr import ExprCondition
from frontdesk.runtime.events import register_event_type

if TYPE_CHECKING:  # pragma: no cover
    from frontdesk.runtime.context import TurnContext
    from frontdesk.runtime.pipeline import IncomingMessage, Outgoing, PendingToolCall
    from frontdesk.runtime.tools import ToolResult

register_event_type("constraint_check", "a constraint was evaluated", ("constraint", "passed"))
register_event_type("guardrail_check", "a guardrail was evaluated", ("guardrail", "fired"))

REDACTED = "[REDACTED]"
BLOCKED = "Sorry, I can't help with that."
_PII = [
    re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+"),  # e-mail addresses
    re.compile(r"\b(?:\d[ -]?){13,19}\b"),  # card numbers
    re.compile(r"\b\d{3}-\d{2}-\d{4}\b"),  # US social security numbers
    re.compile(r"\+?\d[\d ().-]{7,}\d"),  # phone numbers
]
_PATTERN_IN_CHECK = re.compile(r"matches_pattern\([^,]+,\s*['\"](.+?)['\"]\s*\)")


class RulesHook:
    """Constraints and guardrails of the agents on the stack, at the pipeline's interception points."""

    name = "rules"

    # ---- which rules apply ------------------------------------------------------------------------

    @staticmethod
    def _rules(ctx: TurnContext) -> list[tuple[str, AgentRules]]:
        """The agents on the stack, and those that spoke this turn (one may have ended since)."""
        out: list[tuple[str, AgentRules]] = []
        seen: set[str] = set()
        names = [f.agent for f in reversed(ctx.state.stack)] + [m.agent for m in ctx.said if m.agent]
        for name in names:
            agent = ctx.program.agents.get(name)
            if agent is None or agent.rules is None or agent.name in seen:
                continue
            seen.add(agent.name)
            out.append((agent.name, agent.rules))
        return out

    # ---- interception points ------------------------------------------------------------------------

    def input_received(self, ctx: TurnContext, message: IncomingMessage) -> None:
        for agent, rules in self._rules(ctx):
            for guard in _of_kind(rules, "input"):
                if self._fires(ctx, agent, guard, {"content": message.text, "input": message.text}):
                    reply = self._apply(ctx, agent, guard)
                    if reply is not None:
                        message.block(reply)
                        return

    def before_tool(self, ctx: TurnContext, call: PendingToolCall) -> None:
        from frontdesk.runtime.tools import ToolResult

        for agent, rules in self._rules(ctx):
            for constraint in rules.constraints:
                if constraint.checkpoint == "before_tool" and constraint.tool == call.tool:
                    if not self._holds(ctx, agent, constraint):
                        text = self._on_fail(ctx, agent, constraint.on_fail)
                        if text:
                            ctx.say(agent, text)  # the user is told why; the caller sees an error result
                        call.answer(ToolResult(status="error", message=text or f"{call.tool} is not allowed now"))
                        return
            for guard in _of_kind(rules, "tool_input"):
                if self._fires(ctx, agent, guard, {"tool_input": call.args, "content": str(call.args),
                                                   "tool": call.tool}):
                    if guard.action in ("block", "escalate"):
                        self._apply(ctx, agent, guard)
                        call.answer(ToolResult(status="error", message=self._message(ctx, agent, guard)))
                        return

    def after_tool(self, ctx: TurnContext, call: PendingToolCall, result: ToolResult) -> ToolResult | None:
        from frontdesk.runtime.tools import ToolResult

        for agent, rules in self._rules(ctx):
            for guard in _of_kind(rules, "tool_output"):
                value = result.value if result.value is not None else result.args
                if self._fires(ctx, agent, guard, {"tool_output": value, "content": result.message or str(value),
                                                   "tool": call.tool}):
                    if guard.action in ("block", "escalate"):
                        self._apply(ctx, agent, guard)
                        return ToolResult(status="error", message=self._message(ctx, agent, guard))
                    if guard.action in ("redact", "filter"):
                        return ToolResult(status=result.status, message=_redact(result.message, guard),
                                          bot=[_redact(b, guard) for b in result.bot], args=result.args)
        return None

    def turn_end(self, ctx: TurnContext) -> None:
        """MEMORY remember triggers: when a rule's condition holds, its value is stored."""
        for agent, rules in self._rules(ctx):
            for rule in rules.memory.remember:
                if not isinstance(rule.when, ExprCondition):
                    continue
                from frontdesk.expr import EvalError, is_true

                try:
                    if not is_true(ctx.eval(rule.when.expr, agent)):
                        continue
                    value = ctx.eval(rule.value, agent)
                except EvalError as exc:
                    ctx.log.emit("error", agent, where=f"remember {rule.target}", message=str(exc))
                    continue
                remember(ctx, agent, rule.target, value)

    def output_ready(self, ctx: TurnContext, out: Outgoing) -> None:
        from frontdesk.runtime.context import BotMessage

        for agent, rules in self._rules(ctx):
            for constraint in rules.constraints:
                if constraint.checkpoint == "before_tool":
                    continue
                if not self._holds(ctx, agent, constraint):
                    text = self._on_fail(ctx, agent, constraint.on_fail)
                    if constraint.on_fail.block:
                        out.messages[:] = []
                    if text:
                        out.messages.append(BotMessage(agent, text))
            for guard in _of_kind(rules, "output"):
                for message in list(out.messages):
                    if not self._fires(ctx, agent, guard, {"content": message.text, "output": message.text}):
                        continue
                    if guard.action in ("redact", "filter"):
                        message.text = _redact(message.text, guard)
                    elif guard.action in ("block", "escalate"):
                        self._apply(ctx, agent, guard)
                        out.messages[:] = [BotMessage(agent, self._message(ctx, agent, guard))]
                        return

    # ---- evaluation ---------------------------------------------------------------------------------

    @staticmethod
    def _holds(ctx: TurnContext, agent: str, constraint: Constraint) -> bool:
        from frontdesk.expr import EvalError, is_true

        def value(condition) -> bool:
            if not isinstance(condition, ExprCondition):
                return True  # a natural-language condition is the model's business, not a checkpoint's
            return is_true(ctx.eval(condition.expr, agent))

        if _not_yet(ctx, agent, constraint):
            return True  # the values it reads are not there yet: nothing to check
        try:
            if constraint.when is not None and not value(constraint.when):
                return True
            passed = value(constraint.condition)
        except EvalError as exc:
            ctx.log.emit("error", agent, where=f"constraint {constraint.source}", message=str(exc))
            return True
        ctx.log.emit("constraint_check", agent, constraint=constraint.source, passed=passed,
                     kind=constraint.kind, checkpoint=constraint.checkpoint)
        if not passed and constraint.kind == "warn":
            ctx.log.emit("warning", agent, where="constraint", message=f"WARN {constraint.source}")
            return True
        return passed

    @staticmethod
    def _fires(ctx: TurnContext, agent: str, guard: Guardrail, variables: dict[str, Any]) -> bool:
        if not guard.check:
            return False  # llm_check needs a model judge: not evaluated here yet
        from frontdesk.expr.cel import CelError, compile_check

        try:
            fired = compile_check(guard.check).fires(variables)
        except CelError as exc:
            ctx.log.emit("error", agent, where=f"guardrail {guard.name}", message=str(exc))
            return False
        ctx.log.emit("guardrail_check", agent, guardrail=guard.name, fired=fired, kind=guard.kind,
                     action=guard.action)
        return fired

    def _apply(self, ctx: TurnContext, agent: str, guard: Guardrail) -> str | None:
        """What a fired guardrail does to a message: the reply that replaces it, or None (warn, log)."""
        if guard.action in ("warn", "log"):
            ctx.log.emit("warning", agent, where=f"guardrail {guard.name}", message=self._message(ctx, agent, guard))
            return None
        if guard.action == "escalate":
            ctx.state.status = "escalated"
            ctx.log.emit("session_escalated", agent, reason=f"guardrail {guard.name}")
        return self._message(ctx, agent, guard)

    @staticmethod
    def _message(ctx: TurnContext, agent: str, guard: Guardrail) -> str:
        return ctx.render(guard.message, agent) if guard.message is not None else BLOCKED

    @staticmethod
    def _on_fail(ctx: TurnContext, agent: str, action: Action) -> str:
        """Carry out an ON_FAIL action's effects on the session; the text to send (may be empty)."""
        if action.escalate:
            ctx.state.status = "escalated"
            ctx.log.emit("session_escalated", agent, reason=action.escalate_reason or "a constraint failed")
        for name, expr in action.set:
            ctx.assign(_session_ref(name), ctx.eval(expr, agent), agent, why="ON_FAIL")
        for name in action.clear:
            ctx.assign(_session_ref(name), None, agent, why="ON_FAIL")
        if action.handoff or action.delegate:
            ctx.log.emit("step", agent, action="a failed constraint asks for another agent",
                         agent=action.handoff or action.delegate)
        text = ctx.render(action.respond, agent) if action.respond is not None else ""
        if not text and action.template:
            template = _find_template(ctx, action.template)
            text = ctx.render(template, agent) if template is not None else ""
        return text


def _not_yet(ctx: TurnContext, agent: str, constraint: Constraint) -> bool:
    """A rule about values nobody has given yet (`refund_amount <= 1000` before the amount is known)
    does not apply yet; one that asks whether a value is set (IS SET) always does."""
    from frontdesk.ir.expr import IsSet
    from frontdesk.ir.walk import nodes_in, refs_in

    condition = constraint.condition
    if not isinstance(condition, ExprCondition) or next(nodes_in(condition.expr, IsSet), None) is not None:
        return False
    return any(ctx.read(ref, agent) is None for ref in refs_in(condition.expr) if ref.space == "var")


def remember(ctx: TurnContext, agent: str, target: str, value: Any) -> None:
    """Store `value` at a persistent path (`user.past_bookings`): a list there gets it appended (once)."""
    from frontdesk.ir.expr import memory_ref

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


def _session_ref(name: str):
    from frontdesk.ir.expr import Ref

    return Ref(scope="session", name=name)


def _find_template(ctx: TurnContext, name: str):
    for agent in ctx.program.agents.values():
        if agent.rules is not None and name in agent.rules.templates:
            return agent.rules.templates[name].default
    return None


def _of_kind(rules: AgentRules, kind: str) -> list[Guardrail]:
    return [g for g in rules.guardrails if g.kind == kind]


def _redact(text: str, guard: Guardrail) -> str:
    """`text` with what the guardrail looks for replaced: personal data, and any pattern its check names."""
    patterns = list(_PII)
    for found in _PATTERN_IN_CHECK.findall(guard.check or ""):
        try:
            patterns.append(re.compile(found))
        except re.error:
            continue
    for pattern in patterns:
        text = pattern.sub(REDACTED, text)
    return text
