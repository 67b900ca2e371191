"""An agent's declared rules at run time: CONSTRAINTS, GUARDRAILS, TEMPLATES, MEMORY recall and remember,
BEHAVIOR_PROFILES, HOOKS, ACTION_HANDLERS and what ON_ERROR does after its retries.

The engine installs `RulesHook` first in the pipeline of every program with ABL agents. It applies the
rules of the agents on the stack (the active one and the routers and callers below it), and of the
agents that spoke this turn:

- `input_received`: ACTION_HANDLERS (a message that is a declared button's id or value runs its
  handler), `before_turn` HOOKS, then input guardrails: a guardrail that fires blocks the message (or
  warns, redacts, escalates) before any agent or tool sees it;
- `before_tool`: `BEFORE calling <tool>` constraints and tool_input guardrails: a failure answers the
  call with an error result instead of running the tool;
- `after_tool`: tool_output guardrails;
- the engine calls `before_done` when an agent is about to finish (it returns its results): its
  `BEFORE returning results` constraints and its every-turn constraints are checked there;
- the engine calls `after_drive` when the agents have run: every-turn constraints of the agents on the
  stack, the ON_FAIL / ON_ERROR actions waiting to be carried out (handoff, goto, ...) and the
  `after_turn` HOOKS;
- `output_ready`: output guardrails on what the bot drafted (block, warn, redact, filter, fix, reask,
  escalate);
- `turn_end`: MEMORY remember triggers.

Lifecycle events (the engine's event log) drive MEMORY recall (`session:start`, `agent:<name>:before`,
`agent:<name>:after`, `tool:<name>:after`, `entity:<field>:extracted`, `step:enter:<step>`,
`step:exit:<step>`, with `*` for any name) and the `before_agent` / `after_agent` HOOKS.

A constraint that fails runs its ON_FAIL action: a message (a text or a TEMPLATE), ESCALATE (the session
is escalated), HANDOFF / DELEGATE (the agent named takes the conversation), BLOCK (the turn's drafts
are dropped), and the structured RESPOND / COLLECT (the fields are cleared and asked again) / RETRY (the
current step runs again) / GOTO (the flow goes to that step). GOTO, RETRY and COLLECT rewind a flow,
so what that agent drafted this turn after the failure is dropped. Each failure adds one to the system
variable `constraint_failures`; a failed WARN rule adds its message to `_constraint_warnings` and the
turn goes on.

A guardrail fires when its CEL `check` (a violation predicate over `content`, `input`, `output`,
`tool_input`, `tool_output`), one of its `patterns` or its `llm_check` says so; `llm_check` asks the
configured model a yes/no question with the guardrail's instruction (with no model the check is
skipped, and the `guardrail_check` event says so). `fix` repairs the text by replacing what the check
looks for (as redact does); `reask` has a model's reply written again once with the guardrail's
feedback, and blocks anything else (or a reply that still fails).

Every evaluation is a `constraint_check` or `guardrail_check` event; a check that cannot be evaluated is
an `error` event and passes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from frontdesk.ir.behaviour import (
    Action,
    AgentRules,
    BehaviorProfile,
    Constraint,
    Guardrail,
    Hook,
    TemplateDef,
)
from frontdesk.ir.expr import ExprCondition, Ref, Template
from frontdesk.runtime.events import Event, register_event_type

if TYPE_CHECKING:  # pragma: no cover
    from frontdesk.runtime.context import Outcome, TurnContext
    from frontdesk.runtime.pipeline import IncomingMessage, Outgoing, PendingToolCall
    from frontdesk.runtime.state import Frame
    from frontdesk.runtime.tools import ToolResult

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
# the named runtime messages an agent's MESSAGES section can override (text or TEMPLATE(name))
MESSAGE_NAMES = ("guardrail_blocked", "constraint_blocked", "escalation_notice")
# the session's channel -> the template variant used on it (abl-specification 3.13.1)
CHANNEL_VARIANTS = {
    "web": ("markdown", "html"), "sdk": ("markdown",), "markdown": ("markdown",), "email": ("html",),
    "html": ("html",), "teams": ("adaptive_card",), "slack": ("slack",), "whatsapp": ("whatsapp",),
    "ag_ui": ("ag_ui",), "agui": ("ag_ui",),
}
_PII = [
    re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}"),  # e-mail addresses
    re.compile(r"\b(?:\d[ -]?){13,19}\b"),  # card numbers
    re.compile(r"\b\d{3}-\d{2}-\d{4}\b"),  # US social security numbers
    re.compile(r"\+?\d[\d ().-]{7,}\d"),  # phone numbers
]
_URL = re.compile(r"\b(?:https?://|www\.)[^\s<>\"']+", re.IGNORECASE)
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}")
_PATTERN_IN_CHECK = re.compile(r"matches_pattern\([^,]+,\s*['\"](.+?)['\"]\s*\)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_TEMPLATE_REF = re.compile(r"^\s*TEMPLATE\(\s*([A-Za-z_]\w*)\s*\)\s*$")
_YES = re.compile(r"^\W*(yes|true|y|violat|fires?)\b", re.IGNORECASE)


@dataclass
class Violation:
    """A failed rule whose action is carried out: who declared it, what it says, and where the turn was."""

    agent: str
    source: str
    action: Action
    text: str = ""
    said_at: int = 0  # how many drafts the turn had when it failed: a rewind drops the later ones


@dataclass
class _Turn:
    """What the rules keep during one turn (on the TurnContext)."""

    checked: set[tuple[str, str]] = field(default_factory=set)
    pending: list[Violation] = field(default_factory=list)
    redrives: int = 0
    engine: Any = None


def _turn(ctx: TurnContext) -> _Turn:
    found = ctx.__dict__.get("_rules_turn")
    if found is None:
        found = _Turn()
        ctx.__dict__["_rules_turn"] = found
    return found


# ---- system variables (abl-specification 8.8) --------------------------------------------------------


def system_vars(ctx: TurnContext) -> dict[str, Any]:
    """The session's runtime-assigned variables (constraint_failures, _constraint_warnings, _stored_*, ...):
    read by expressions as system values."""
    return ctx.state.system


def _set_system(ctx: TurnContext, agent: str | None, name: str, value: Any, why: str) -> None:
    system_vars(ctx)[name] = value
    ctx.log.emit("arg_set", agent, scope="system", name=name, value=value, why=why)


# ---- templates and named messages ---------------------------------------------------------------------


def find_template(ctx: TurnContext, name: str, agent: str | None = None) -> TemplateDef | None:
    """The template `name` of the agent, else of any agent of the program."""
    owners = [ctx.program.agents.get(agent)] if agent else []
    owners += list(ctx.program.agents.values())
    for owner in owners:
        rules = getattr(owner, "rules", None)
        if rules is not None and name in rules.templates:
            return rules.templates[name]
    return None


def template_variant(definition: TemplateDef, channel: str) -> Template:
    """The variant of a template for a channel (slack -> SLACK, web -> MARKDOWN, ...), else DEFAULT."""
    channel = (channel or "").lower()
    if channel in definition.channels:
        return definition.channels[channel]
    for variant in CHANNEL_VARIANTS.get(channel, ()):
        if variant in definition.channels:
            return definition.channels[variant]
    return definition.default


def render_named(ctx: TurnContext, name: str, agent: str) -> str:
    """TEMPLATE(name) rendered (Handlebars) in the variant of the session's channel; "" when none."""
    definition = find_template(ctx, name, agent)
    if definition is None:
        ctx.log.emit("warning", agent, where="template", message=f"no template named {name}")
        return ""
    return ctx.render(template_variant(definition, ctx.state.channel), agent)


def render_text(ctx: TurnContext, template: Template | None, agent: str) -> str:
    """A message template, or a `TEMPLATE(name)` written as its text."""
    if template is None:
        return ""
    ref = _TEMPLATE_REF.match(template.source or "")
    if ref is not None:
        return render_named(ctx, ref.group(1), agent)
    return ctx.render(template, agent)


def message(ctx: TurnContext, agent: str, name: str, default: str) -> str:
    """A named runtime message (MESSAGES: name: "text" or TEMPLATE(x)) of the agent, else `default`."""
    rules = _rules_of(ctx, agent)
    text = rules.messages.get(name) if rules is not None else None
    if not text:
        return default
    ref = _TEMPLATE_REF.match(text)
    if ref is not None:
        return render_named(ctx, ref.group(1), agent) or default
    from frontdesk.expr.handlebars import parse_handlebars

    try:
        return ctx.render(parse_handlebars(text), agent)
    except Exception:  # noqa: BLE001 - checked by the compiler; a bad text is said as written
        return text


def action_text(ctx: TurnContext, agent: str, action: Action) -> str:
    """What an action says: its RESPOND, or its TEMPLATE in the channel's variant."""
    text = render_text(ctx, action.respond, agent) if action.respond is not None else ""
    if not text and action.template:
        text = render_named(ctx, action.template, agent)
    return text


# ---- behaviour profiles ---------------------------------------------------------------------------------


def active_profiles(agent: str, ctx: TurnContext) -> list[BehaviorProfile]:
    """The agent's behaviour profiles whose WHEN holds now, highest PRIORITY first (the reasoning prompt
    builder adds their INSTRUCTIONS; the runtime hides TOOLS_HIDE and checks their CONSTRAINTS)."""
    rules = _rules_of(ctx, agent)
    if rules is None or not rules.profiles:
        return []
    active = []
    for profile in rules.profiles:
        if profile.when is not None and not _condition(ctx, agent, profile.when, f"profile {profile.name}"):
            continue
        active.append(profile)
    active.sort(key=lambda p: -p.priority)
    names = [p.name for p in active]
    seen = ctx.__dict__.setdefault("_rules_profiles", {})
    if seen.get(agent) != names:  # once per turn and agent, when the set changes
        seen[agent] = names
        ctx.log.emit("step", agent, action="behaviour profiles active", profiles=names)
    return active


def profile_instructions(agent: str, ctx: TurnContext) -> str:
    """The INSTRUCTIONS of the active profiles, highest priority first, one paragraph each ("" for none)."""
    return "\n\n".join(p.instructions for p in active_profiles(agent, ctx) if p.instructions)


def effective_profile(agent: str, ctx: TurnContext) -> dict[str, Any]:
    """The active profiles merged: a field set by several takes the highest priority's value; lists of
    tools to hide or add, and constraints, are the union."""
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
        merged["tools_add"] += profile.tools_add
        merged["constraints"] = profile.constraints + merged["constraints"]
        for part in ("voice", "response_rules", "gather_overrides", "flow_modifications"):
            merged[part].update(getattr(profile, part))
        merged["flow_replace"] = profile.flow_replace or merged["flow_replace"]
    return merged


def hidden_tools(agent: str, ctx: TurnContext) -> set[str]:
    """The tools the active profiles hide from the agent (TOOLS_HIDE)."""
    return set(effective_profile(agent, ctx)["tools_hide"])


def memory_context(agent: str, ctx: TurnContext) -> str:
    """What recall rules loaded for the prompt (inject_context / load_memory values, prompt_llm instructions)."""
    stored = system_vars(ctx)
    lines = [f"- {path}: {json.dumps(value, default=str)}" for path, value in (stored.get("_recalled") or {}).items()]
    lines += [f"- {text}" for text in stored.get("_recall_instructions") or []]
    return "What you remember about the user:\n" + "\n".join(lines) if lines else ""


# ---- the hook -------------------------------------------------------------------------------------------


class RulesHook:
    """An agent's declared rules at the pipeline's interception points and the engine's turn points."""

    name = "rules"

    # ---- which rules apply ------------------------------------------------------------------------

    @staticmethod
    def _rules(ctx: TurnContext, also: list[str] | None = None) -> list[tuple[str, AgentRules]]:
        """The agents on the stack, and those that spoke this turn (one may have ended since)."""
        out: list[tuple[str, AgentRules]] = []
        seen: set[str] = set()
        names = [f.agent for f in reversed(ctx.state.stack)] + [m.agent for m in ctx.said if m.agent] + (also or [])
        for name in names:
            agent = ctx.program.agents.get(name)
            if agent is None or agent.rules is None or agent.name in seen:
                continue
            seen.add(agent.name)
            out.append((agent.name, agent.rules))
        return out

    @staticmethod
    def _constraints(ctx: TurnContext, agent: str, rules: AgentRules) -> list[Constraint]:
        """The agent's constraints and those of its active behaviour profiles."""
        extra = [c for p in active_profiles(agent, ctx) for c in p.constraints] if rules.profiles else []
        return [*rules.constraints, *extra]

    # ---- engine wiring ------------------------------------------------------------------------------

    def attach(self, ctx: TurnContext, engine: Any) -> None:
        """Called by the engine for every turn's context: lifecycle events drive recall and agent hooks."""
        _turn(ctx).engine = engine
        ctx.log.subscribe(lambda event: self._on_event(ctx, event))

    # ---- interception points ------------------------------------------------------------------------

    def input_received(self, ctx: TurnContext, message: IncomingMessage) -> None:
        """Input guardrails first (nothing runs for a message they block), then a button's handler, then
        the before_turn hooks."""
        self._input_guardrails(ctx, message)
        if message.blocked is not None or self._action_handler(ctx, message):
            return
        for agent, rules in self._rules(ctx):
            for hook in rules.hooks:
                if hook.event == "before_turn":
                    self.run_hook(ctx, agent, hook)

    def _input_guardrails(self, ctx: TurnContext, message: IncomingMessage) -> None:
        for agent, rules in self._rules(ctx):
            for guard in _of_kind(rules, "input"):
                if not self._fires(ctx, agent, guard, {"content": message.text, "input": message.text}):
                    continue
                action = guard.action
                if action in ("redact", "filter", "fix"):
                    message.text = self._repair(ctx, agent, guard, message.text, {"input": message.text})
                    self._acted(ctx, agent, guard, action)
                    continue
                reply = self._apply(ctx, agent, guard)
                if reply is not None:
                    message.block(reply)
                    return

    def before_tool(self, ctx: TurnContext, call: PendingToolCall) -> None:
        from frontdesk.runtime.tools import ToolResult

        caller_rules = _rules_of(ctx, call.caller)
        if caller_rules is not None and caller_rules.profiles and call.tool in hidden_tools(call.caller or "", ctx):
            ctx.log.emit("step", call.caller, action="a behaviour profile hides this tool", tool=call.tool)
            call.answer(ToolResult(status="error", message=f"{call.tool} is not available here"))
            return
        for agent, rules in self._rules(ctx):
            for constraint in self._constraints(ctx, agent, rules):
                if constraint.checkpoint != "before_tool" or constraint.tool != call.tool:
                    continue
                violation = self._check(ctx, agent, constraint)
                if violation is None:
                    continue
                text = self._carry_out_now(ctx, violation)
                call.answer(ToolResult(status="error", message=text or NOT_ALLOWED.format(tool=call.tool)))
                return
            for guard in _of_kind(rules, "tool_input"):
                variables = {"tool_input": call.args, "content": _as_text(call.args), "tool": call.tool}
                if not self._fires(ctx, agent, guard, variables):
                    continue
                if guard.action in ("redact", "filter", "fix"):
                    call.args = {k: self._repair(ctx, agent, guard, v, variables) if isinstance(v, str) else v
                                 for k, v in call.args.items()}
                    self._acted(ctx, agent, guard, guard.action)
                elif guard.action in ("warn", "log"):
                    self._apply(ctx, agent, guard)
                else:  # block, escalate, reask: the tool does not run
                    self._apply(ctx, agent, guard)
                    call.answer(ToolResult(status="error", message=self._message(ctx, agent, guard)))
                    return

    def after_tool(self, ctx: TurnContext, call: PendingToolCall, result: ToolResult) -> ToolResult | None:
        from frontdesk.runtime.tools import ToolResult

        for agent, rules in self._rules(ctx):
            for guard in _of_kind(rules, "tool_output"):
                value = result.value if result.value is not None else result.args
                variables = {"tool_output": value, "content": result.message or _as_text(value), "tool": call.tool}
                if not self._fires(ctx, agent, guard, variables):
                    continue
                if guard.action in ("warn", "log"):
                    self._apply(ctx, agent, guard)
                elif guard.action in ("redact", "filter", "fix"):
                    self._acted(ctx, agent, guard, guard.action)
                    fixed = self._repair_value(ctx, agent, guard, {"message": result.message, "bot": result.bot,
                                                                    "args": result.args}, variables)
                    return ToolResult(status=result.status, message=fixed["message"], bot=fixed["bot"],
                                      args=fixed["args"])
                else:
                    self._apply(ctx, agent, guard)
                    return ToolResult(status="error", message=self._message(ctx, agent, guard))
        return None

    def output_ready(self, ctx: TurnContext, out: Outgoing) -> None:
        from frontdesk.runtime.context import BotMessage

        for agent, rules in self._rules(ctx, [m.agent for m in out.messages if m.agent]):
            extras_constraints = [c for c in self._constraints(ctx, agent, rules)
                                  if c.checkpoint == "turn" and _reads(c, "response")]
            for constraint in extras_constraints:  # rules about the reply itself (`len(response) < 500`)
                for message in [m for m in out.messages if m.agent == agent]:
                    violation = self._check(ctx, agent, constraint, {"response": message.text}, once=False)
                    if violation is not None:
                        text = self._effects(ctx, violation) or CONSTRAINT_BLOCKED
                        if violation.action.block or violation.action.respond is not None:
                            message.text = text
            for guard in _of_kind(rules, "output"):
                for message in list(out.messages):
                    if message not in out.messages:
                        continue
                    variables = {"content": message.text, "output": message.text}
                    if not self._fires(ctx, agent, guard, variables):
                        continue
                    action = guard.action
                    if action in ("redact", "filter", "fix"):
                        message.text = self._repair(ctx, agent, guard, message.text, variables)
                        self._acted(ctx, agent, guard, action)
                        if not message.text.strip():
                            out.messages.remove(message)
                    elif action in ("warn", "log"):
                        self._apply(ctx, agent, guard)
                    elif action == "reask" and self._reask(ctx, agent, guard, message):
                        continue
                    else:
                        self._apply(ctx, agent, guard)
                        out.messages[:] = [BotMessage(agent, self._message(ctx, agent, guard))]
                        return

    def turn_end(self, ctx: TurnContext) -> None:
        """MEMORY remember triggers: when a rule's condition holds, its value is stored."""
        from frontdesk.expr import EvalError, is_true

        for agent, rules in self._rules(ctx):
            for rule in rules.memory.remember:
                if not isinstance(rule.when, ExprCondition):
                    continue
                try:
                    if not is_true(ctx.eval(rule.when.expr, agent)):
                        continue
                    value = ctx.eval(rule.value, agent)
                except EvalError as exc:
                    ctx.log.emit("error", agent, where=f"remember {rule.target}", message=str(exc))
                    continue
                remember(ctx, agent, rule.target, value)

    # ---- the engine's turn points ---------------------------------------------------------------------

    def before_done(self, frame: Frame, outcome: Outcome, ctx: TurnContext, engine: Any) -> str:
        """An agent is about to finish and return its results: its `BEFORE returning results` and
        every-turn constraints. "go": finish; "continue": the stack changed (a rewind, a handoff), drive
        on; "stop": the session was escalated."""
        agent = ctx.program.agents.get(frame.agent)
        rules = getattr(agent, "rules", None)
        if rules is None or frame.graph != "main" or outcome.status != "success":
            return "go"
        for constraint in self._constraints(ctx, frame.agent, rules):
            if constraint.checkpoint == "before_tool" or _reads(constraint, "response"):
                continue
            violation = self._check(ctx, frame.agent, constraint)
            if violation is None:
                continue
            verdict = self._carry_out(ctx, violation, engine, frame, finishing=outcome)
            if verdict != "go":
                return verdict
        return "go"

    def after_drive(self, ctx: TurnContext, engine: Any) -> None:
        """The agents ran: ON_FAIL / ON_ERROR actions waiting, every-turn constraints, after_turn hooks."""
        turn = _turn(ctx)
        for _ in range(MAX_REDRIVES + 1):
            violations = list(turn.pending)
            turn.pending.clear()
            for agent, rules in self._rules(ctx):
                for constraint in self._constraints(ctx, agent, rules):
                    if constraint.checkpoint != "turn" or _reads(constraint, "response"):
                        continue
                    violation = self._check(ctx, agent, constraint)
                    if violation is not None:
                        violations.append(violation)
            redrive = False
            for index, violation in enumerate(violations):
                frame = next((f for f in reversed(ctx.state.stack) if f.agent == violation.agent), None)
                verdict = self._carry_out(ctx, violation, engine, frame)
                if verdict == "continue":
                    redrive = True
                    turn.pending[:0] = violations[index + 1:]  # carried out once the agents ran again
                    break
                if verdict == "stop":
                    break
            if not redrive or turn.redrives >= MAX_REDRIVES:
                break
            turn.redrives += 1
            engine._drive(ctx)
        for agent, rules in self._rules(ctx):
            for hook in rules.hooks:
                if hook.event == "after_turn":
                    self.run_hook(ctx, agent, hook)

    # ---- constraints ------------------------------------------------------------------------------

    def _check(self, ctx: TurnContext, agent: str, constraint: Constraint, extras: dict[str, Any] | None = None,
               once: bool = True) -> Violation | None:
        """Evaluate a constraint (once a turn unless `once` is False); the violation when it fails."""
        ident = (agent, f"{constraint.checkpoint}:{constraint.tool}:{constraint.source}")
        turn = _turn(ctx)
        if once and constraint.checkpoint != "before_tool":
            if ident in turn.checked:
                return None
            turn.checked.add(ident)
        if extras is None and _not_yet(ctx, agent, constraint):
            return None  # the values it reads are not there yet: nothing to check
        if constraint.when is not None and not _condition(ctx, agent, constraint.when, "constraint WHEN", extras):
            ctx.log.emit("constraint_check", agent, constraint=constraint.source, passed=True, kind=constraint.kind,
                         checkpoint=constraint.checkpoint, gated=True)
            return None
        passed = _condition(ctx, agent, constraint.condition, f"constraint {constraint.source}", extras, None)
        if passed is None:
            return None
        ctx.log.emit("constraint_check", agent, constraint=constraint.source, passed=passed, kind=constraint.kind,
                     checkpoint=constraint.checkpoint, **({"label": constraint.label} if constraint.label else {}))
        if passed:
            return None
        system = system_vars(ctx)
        if constraint.kind == "warn":  # a soft failure: its message is kept, the turn goes on
            text = action_text(ctx, agent, constraint.on_fail) or constraint.source
            warnings = list(system.get("_constraint_warnings") or [])
            if text not in warnings:
                _set_system(ctx, agent, "_constraint_warnings", [*warnings, text], why="WARN")
            ctx.log.emit("warning", agent, where="constraint", message=f"WARN {constraint.source}: {text}")
            return None
        _set_system(ctx, agent, "constraint_failures", int(system.get("constraint_failures") or 0) + 1,
                    why=f"{constraint.source} failed")
        # found after the agents ran: a rewind takes back all the agent drafted this turn
        return Violation(agent, constraint.source, constraint.on_fail, said_at=0)

    def _effects(self, ctx: TurnContext, violation: Violation) -> str:
        """An ON_FAIL action's effects on the session (LOG, SET, STORE, ESCALATE); the text to say."""
        agent, action = violation.agent, violation.action
        if action.log:
            ctx.log.emit("step", agent, action="ON_FAIL log", values={n: _read_name(ctx, agent, n) for n in action.log})
        for name, expr in action.set:
            _assign(ctx, agent, name, _eval(ctx, agent, expr), "ON_FAIL")
        for store in action.store:
            remember(ctx, agent, store.target, _eval(ctx, agent, store.value))
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

    def _carry_out_now(self, ctx: TurnContext, violation: Violation) -> str:
        """At a checkpoint inside an agent's run (BEFORE calling): say the words now; what changes the
        stack (handoff, goto, collect, retry) waits until the agents ran."""
        text = self._effects(ctx, violation)
        action = violation.action
        ctx.log.emit("constraint_action", violation.agent, constraint=violation.source, action=_describe(action),
                     checkpoint="before_tool")
        if action.block:
            _drop_drafts(ctx, violation.agent, 0, everyone=True)
        if text:
            ctx.say(violation.agent, text)
        if action.handoff or action.delegate or action.goto or action.collect or action.retry:
            follow = Action(handoff=action.handoff, delegate=action.delegate, goto=action.goto,
                            collect=action.collect, retry=action.retry)
            _turn(ctx).pending.append(Violation(violation.agent, violation.source, follow, said_at=len(ctx.said)))
        return text

    def _carry_out(self, ctx: TurnContext, violation: Violation, engine: Any, frame: Frame | None,
                   finishing: Outcome | None = None) -> str:
        """Carry out a violation's action at the engine's level: "go", "continue" (the stack changed) or
        "stop" (escalated: the turn ends)."""
        from frontdesk.runtime.context import Outcome
        from frontdesk.runtime.policies import new_frame

        action = violation.action
        agent = violation.agent
        if action.escalate and ctx.state.status == "escalated" and not violation.text:
            ctx.log.emit("constraint_action", agent, constraint=violation.source, action="none",
                         why="the session is escalated already")
            return "stop"
        text = violation.text if violation.text or _only_follow(action) else self._effects(ctx, violation)
        ctx.log.emit("constraint_action", agent, constraint=violation.source, action=_describe(action))
        rewinds = bool(action.goto or action.collect or action.retry)
        if action.block:
            _drop_drafts(ctx, agent, 0, everyone=True)
        elif rewinds and frame is not None and frame.kind == "flow":
            _drop_drafts(ctx, agent, violation.said_at)
        if text and not _only_follow(action):
            ctx.say(agent, text)
        if finishing is not None and action.block:
            finishing.status, finishing.message = "error", text
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
                engine._start(child, top.id, top.agent, ctx)
            else:
                if ctx.input.taken_by(top) or ctx.input.offered_to(top):
                    ctx.input.state = "taken"
                engine._transfer(top, Outcome.transfer(child, resume=bool(action.delegate)), ctx)
            return "continue"
        if frame is not None and (action.collect or action.goto or action.retry) and _rewind(ctx, frame, action):
            return "continue"
        return "go"

    # ---- guardrails -------------------------------------------------------------------------------

    def handoff_allowed(self, frame: Frame, outcome: Outcome, ctx: TurnContext) -> bool:
        """handoff guardrails of the agent handing over, on what it passes (summary and values)."""
        agent = ctx.program.agents.get(frame.agent)
        rules = getattr(agent, "rules", None)
        if rules is None or outcome.frame is None:
            return True
        target = outcome.frame.agent
        passed = _handoff_context(ctx, frame.agent, target)
        content = " ".join(x for x in [outcome.message, _as_text(passed) if passed else ""] if x)
        for guard in _of_kind(rules, "handoff"):
            variables = {"content": content, "handoff": {"to": target, "summary": outcome.message, "context": passed},
                         "target": target}
            if not self._fires(ctx, frame.agent, guard, variables):
                continue
            if guard.action in ("warn", "log"):
                self._apply(ctx, frame.agent, guard)
                continue
            if guard.action in ("redact", "filter", "fix"):
                outcome.message = self._repair(ctx, frame.agent, guard, outcome.message, variables)
                self._acted(ctx, frame.agent, guard, guard.action)
                continue
            reply = self._apply(ctx, frame.agent, guard)
            if reply:
                ctx.say(frame.agent, reply)
            ctx.log.emit("step", frame.agent, action="the handoff was stopped by a guardrail", agent=target)
            frame.waiting = True
            return False
        return True

    def _fires(self, ctx: TurnContext, agent: str, guard: Guardrail, variables: dict[str, Any]) -> bool:
        """Whether the guardrail fires: its local check or patterns first, then its llm_check."""
        content = _as_text(variables.get("content"))
        fired = False
        by = ""
        if guard.check:
            from frontdesk.expr.cel import CelError, compile_check

            try:
                fired = compile_check(guard.check).fires(variables)
                by = "check"
            except CelError as exc:
                ctx.log.emit("error", agent, where=f"guardrail {guard.name}", message=str(exc))
        if not fired and guard.patterns:
            fired = any(re.search(p, content) for p in guard.patterns)
            by = by or "patterns"
        skipped = ""
        if not fired and guard.llm_check:
            judged = self._judge(ctx, agent, guard, content)
            if judged is None:
                skipped = "no LLM is configured" if ctx.llm is None else "the LLM check failed"
            else:
                fired, by = judged, "llm_check"
        ctx.log.emit("guardrail_check", agent, guardrail=guard.name, fired=fired, kind=guard.kind,
                     action=guard.action, by=by or ("llm_check" if guard.llm_check else "check"),
                     **({"skipped": skipped} if skipped else {}))
        return fired

    @staticmethod
    def _judge(ctx: TurnContext, agent: str, guard: Guardrail, content: str) -> bool | None:
        """Ask the model the guardrail's yes/no question about the content; None when it cannot."""
        if ctx.llm is None:
            return None
        from frontdesk.llm.base import ChatMessage, LLMError, LLMRequest

        request = LLMRequest(purpose="other", plan="guardrail_judge", messages=[
            ChatMessage(role="system", content=(
                f"You are a content safety judge for a customer-service assistant. Read the {guard.kind} "
                f"below and answer the question about it with one word, yes or no.\nQuestion: {guard.llm_check}")),
            ChatMessage(role="user", content=content),
        ], max_tokens=5)
        try:
            response = ctx.complete(request, agent)
        except LLMError as exc:
            ctx.log.emit("error", agent, where=f"guardrail {guard.name}", message=str(exc))
            return None
        return bool(_YES.match(response.content or ""))

    def _reask(self, ctx: TurnContext, agent: str, guard: Guardrail, draft) -> bool:
        """A model's reply that fired the guardrail is written again once, with the guardrail's feedback;
        True when the new reply passes (it replaces the draft)."""
        from frontdesk.ir.models import ReasoningAgent
        from frontdesk.llm.base import ChatMessage, LLMError, LLMRequest

        by_model = isinstance(ctx.program.agents.get(draft.agent or ""), ReasoningAgent)
        if not by_model or ctx.llm is None:
            return False
        feedback = self._message(ctx, agent, guard) if guard.message is not None else (guard.llm_check or guard.check)
        request = LLMRequest(purpose="other", plan="guardrail_reask", messages=[
            ChatMessage(role="system", content=(
                "Rewrite the assistant's reply to the customer so that it no longer has this problem: "
                f"{feedback}\nKeep what it says otherwise. Answer with the new reply only.")),
            ChatMessage(role="user", content=f"Customer: {ctx.last_user_message()}\nReply: {draft.text}"),
        ])
        try:
            text = (ctx.complete(request, agent).content or "").strip()
        except LLMError as exc:
            ctx.log.emit("error", agent, where=f"guardrail {guard.name}", message=str(exc))
            return False
        if not text or self._fires(ctx, agent, guard, {"content": text, "output": text}):
            return False
        self._acted(ctx, agent, guard, "reask", before=draft.text, after=text)
        draft.text = text
        return True

    def _apply(self, ctx: TurnContext, agent: str, guard: Guardrail) -> str | None:
        """What a fired guardrail does to a message: the reply that replaces it, or None (warn, log)."""
        if guard.action in ("warn", "log"):
            ctx.log.emit("warning", agent, where=f"guardrail {guard.name}", message=self._message(ctx, agent, guard))
            self._acted(ctx, agent, guard, guard.action)
            return None
        if guard.action == "escalate":
            ctx.state.status = "escalated"
            ctx.log.emit("session_escalated", agent, reason=f"guardrail {guard.name}")
        self._acted(ctx, agent, guard, guard.action if guard.action != "reask" else "block")
        return self._message(ctx, agent, guard)

    @staticmethod
    def _acted(ctx: TurnContext, agent: str, guard: Guardrail, action: str, **data: Any) -> None:
        ctx.log.emit("guardrail_action", agent, guardrail=guard.name, action=action, kind=guard.kind, **data)

    @staticmethod
    def _message(ctx: TurnContext, agent: str, guard: Guardrail) -> str:
        if guard.message is not None:
            text = render_text(ctx, guard.message, agent)
            if text:
                return text
        return message(ctx, agent, "guardrail_blocked", BLOCKED)

    def _repair_value(self, ctx: TurnContext, agent: str, guard: Guardrail, value: Any,
                      variables: dict[str, Any]) -> Any:
        """`_repair` of every text inside a value (a tool's result)."""
        if isinstance(value, str):
            return self._repair(ctx, agent, guard, value, variables)
        if isinstance(value, dict):
            return {k: self._repair_value(ctx, agent, guard, v, variables) for k, v in value.items()}
        if isinstance(value, list):
            return [self._repair_value(ctx, agent, guard, v, variables) for v in value]
        return value

    def _repair(self, ctx: TurnContext, agent: str, guard: Guardrail, text: str, variables: dict[str, Any]) -> str:
        """redact / fix: what the check looks for replaced by [REDACTED]; filter: the violating parts removed
        (matches, or the sentences the check fires on)."""
        if not text:
            return text
        patterns = _patterns_of(guard)
        if guard.action != "filter":
            for pattern in patterns:
                text = pattern.sub(REDACTED, text)
            return text
        kept = []
        for sentence in [p for p in _SENTENCE_END.split(text) if p.strip()]:
            found = any(p.search(sentence) for p in patterns)
            if not found and guard.check:
                from frontdesk.expr.cel import CelError, compile_check

                try:
                    found = compile_check(guard.check).fires({**variables, "content": sentence, "input": sentence,
                                                              "output": sentence})
                except CelError:
                    found = False
            if not found:
                kept.append(sentence)
        return " ".join(k.strip() for k in kept).strip()

    # ---- hooks, action handlers, recall -----------------------------------------------------------

    def run_hook(self, ctx: TurnContext, agent: str, hook: Hook) -> None:
        """A lifecycle hook or action handler: CALL its tool, then SET, STORE, RESPOND, and what follows
        (THEN <step>, HANDOFF, ESCALATE) once the agents ran."""
        ctx.log.emit("hook_run", agent, hook=hook.event, **({"call": hook.call} if hook.call else {}))
        frame = next((f for f in reversed(ctx.state.stack) if f.agent == agent), None)
        if hook.call:
            args = {name: _eval(ctx, agent, expr) for name, expr in hook.args.items()}
            result = ctx.call_tool(hook.call, args, agent, frame)
            bound = hook.action.extra.get("result_as")
            if bound:
                _assign(ctx, agent, bound, result.value if result.value is not None else dict(result.args),
                        f"result of {hook.call}")
        violation = Violation(agent, f"hook {hook.event}", hook.action, said_at=len(ctx.said))
        text = self._effects(ctx, violation)
        if text:
            ctx.say(agent, text)
        action = hook.action
        if action.handoff or action.delegate or action.goto or action.collect:
            follow = Action(handoff=action.handoff, delegate=action.delegate, goto=action.goto, collect=action.collect)
            _turn(ctx).pending.append(Violation(agent, f"hook {hook.event}", follow, said_at=len(ctx.said)))

    def _action_handler(self, ctx: TurnContext, message: IncomingMessage) -> bool:
        """A message that is a declared action's payload (its ID, or a button's VALUE) runs its handler
        (ACTION_HANDLERS); no agent reads it as an answer."""
        text = message.text.strip()
        if not text:
            return False
        for agent, rules in self._rules(ctx):
            handlers = {h.event[len("action:"):]: h for h in rules.hooks if h.event.startswith("action:")}
            if not handlers:
                continue
            chosen = None
            for element in _declared_actions(ctx, agent, rules):
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
            self.run_hook(ctx, agent, handlers[chosen])
            message.block("")  # handled: no agent reads it; what the handler said is the reply
            return True
        return False

    def _on_event(self, ctx: TurnContext, event: Event) -> None:
        try:
            self._lifecycle(ctx, event)
        except Exception as exc:  # noqa: BLE001 - a broken recall or hook must not break the turn
            ctx.log.emit("error", event.agent, where=f"rules at {event.type}", message=f"{type(exc).__name__}: {exc}")

    def _lifecycle(self, ctx: TurnContext, event: Event) -> None:
        kind, agent, data = event.type, event.agent, event.data
        if kind == "session_started":
            self._recall_at(ctx, ["session:start"])
        elif kind == "session_ended":
            self._recall_at(ctx, ["session:end"])
        elif kind == "agent_started" and agent:
            self._recall_at(ctx, [f"agent:{agent}:before", "agent:*:before"])
            self._agent_hooks(ctx, agent, "before_agent")
        elif kind == "agent_finished" and agent:
            self._recall_at(ctx, [f"agent:{agent}:after", "agent:*:after"])
            self._agent_hooks(ctx, agent, "after_agent")
        elif kind == "tool_result" and data.get("tool"):
            self._recall_at(ctx, [f"tool:{data['tool']}:after", "tool:*:after"])
        elif kind == "args_extracted" and isinstance(data.get("args"), dict):
            self._recall_at(ctx, [f"entity:{name}:extracted" for name in data["args"]] + ["entity:*:extracted"])
        elif kind == "flow_transition":
            events = [f"step:enter:{data.get('step')}", "step:enter:*"]
            if data.get("previous"):
                events = [f"step:exit:{data['previous']}", "step:exit:*", *events]
            self._recall_at(ctx, events, agent)

    def _agent_hooks(self, ctx: TurnContext, agent: str, event: str) -> None:
        rules = _rules_of(ctx, agent)
        for hook in rules.hooks if rules is not None else []:
            if hook.event == event:
                self.run_hook(ctx, agent, hook)

    def _recall_at(self, ctx: TurnContext, events: list[str], only: str | None = None) -> None:
        """Recall rules listening for these events: stored values are loaded into the session."""
        from frontdesk.ir.expr import memory_ref

        owners = [(a, r) for a, r in self._rules(ctx) if only is None or a == only]
        if not owners and ctx.program.entry in ctx.program.agents:
            entry = ctx.program.agents[ctx.program.entry]
            if entry.rules is not None:
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
                    _set_system(ctx, agent, "_stored_" + path.replace(".", "_"), value, why=f"recall {rule.on}")
                    name = path.rsplit(".", 1)[-1]
                    if _declares(ctx, agent, name) and ctx.read(Ref(scope="session", name=name), agent) is None:
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


# ---- ON_ERROR after its retries ------------------------------------------------------------------------


def after_error(ctx: TurnContext, agent: str | None, handler: Any, tool: str) -> None:
    """What an ON_ERROR handler does once its retries are spent, besides its words and ESCALATE (which
    the tool call carries out): LOG, SET, and THEN DELEGATE / HANDOFF / GOTO, carried out once the agents
    ran; THEN ASK_USER offers the choices."""
    if not agent:
        return
    action = handler.action
    if action.log:
        ctx.log.emit("step", agent, action="ON_ERROR log", handler=handler.on, tool=tool,
                     values={n: _read_name(ctx, agent, n) for n in action.log})
    for name, expr in action.set:
        _assign(ctx, agent, name, _eval(ctx, agent, expr), "ON_ERROR")
    if action.ask_user:
        ctx.say(agent, "Would you like me to " + " or ".join(c.replace("_", " ") for c in action.ask_user) + "?")
    if action.handoff or action.delegate or action.goto or action.collect:
        follow = Action(handoff=action.handoff, delegate=action.delegate, goto=action.goto, collect=action.collect)
        _turn(ctx).pending.append(Violation(agent, f"ON_ERROR {handler.on}", follow, said_at=len(ctx.said)))


# ---- helpers -------------------------------------------------------------------------------------------


def _rules_of(ctx: TurnContext, agent: str | None) -> AgentRules | None:
    found = ctx.program.agents.get(agent) if agent else None
    return getattr(found, "rules", None)


def _condition(ctx: TurnContext, agent: str, condition, where: str, extras: dict[str, Any] | None = None,
               default: bool | None = True) -> bool | None:
    """A condition's truth; a natural-language condition is the model's business (true here); one that
    cannot be evaluated is an error event and `default`."""
    from frontdesk.expr import EvalError, evaluate, is_true

    if not isinstance(condition, ExprCondition):
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
        return is_true(evaluate(condition.expr, read, env=ctx.eval_env))
    except EvalError as exc:
        ctx.log.emit("error", agent, where=where, message=str(exc))
        return default


def _reads(constraint: Constraint, name: str) -> bool:
    from frontdesk.ir.walk import refs_in

    condition = constraint.condition
    return isinstance(condition, ExprCondition) and any(
        r.space == "var" and r.name == name for r in refs_in(condition.expr))


def _not_yet(ctx: TurnContext, agent: str, constraint: Constraint) -> bool:
    """A rule about values nobody has given yet (`refund_amount <= 1000` before the amount is known)
    does not apply yet; one that asks whether a value is set (IS SET) always does."""
    from frontdesk.ir.expr import IsSet
    from frontdesk.ir.walk import nodes_in, refs_in

    condition = constraint.condition
    if not isinstance(condition, ExprCondition) or next(nodes_in(condition.expr, IsSet), None) is not None:
        return False
    return any(ctx.read(ref, agent) is None for ref in refs_in(condition.expr) if ref.space == "var")


def _eval(ctx: TurnContext, agent: str, expr) -> Any:
    from frontdesk.expr import EvalError

    try:
        return ctx.eval(expr, agent)
    except EvalError as exc:
        ctx.log.emit("warning", agent, where="rule action", message=str(exc))
        return None


def _assign(ctx: TurnContext, agent: str, name: str, value: Any, why: str) -> None:
    """SET in a rule's action: a session variable, or (a `_name`) a runtime variable."""
    if name.startswith("_"):
        _set_system(ctx, agent, name, value, why)
    else:
        ctx.assign(Ref(scope="session", name=name), value, agent, why=why)


def _read_name(ctx: TurnContext, agent: str, name: str) -> Any:
    if name.startswith("_") or name in system_vars(ctx):
        return system_vars(ctx).get(name)
    return ctx.read(Ref(scope="session", name=name), agent)


def _declares(ctx: TurnContext, agent: str, name: str) -> bool:
    rules = _rules_of(ctx, agent)
    return rules is not None and (any(v.name == name for v in rules.memory.session)
                                  or any(f.name == name for f in rules.gather))


def _declared_actions(ctx: TurnContext, agent: str, rules: AgentRules) -> list:
    """The interactive elements the agent declares: its own ACTIONS and those of its flow's messages."""
    elements = list(rules.actions)
    graph = getattr(ctx.program.agents.get(agent), "graph", None)
    for node in graph.nodes.values() if graph is not None else []:
        elements += getattr(node, "actions", None) or []
    return elements


def _handoff_context(ctx: TurnContext, agent: str, target: str) -> dict[str, Any]:
    """The values an agent passes with a handoff to `target` (CONTEXT.pass of its flow's handoff steps,
    or of its HANDOFF declarations), as they are now."""
    from frontdesk.ir.models import HandoffNode

    declaring = ctx.program.agents.get(agent)
    names: list[str] = []
    values: dict[str, Any] = {}
    graph = getattr(declaring, "graph", None)
    for node in graph.nodes.values() if graph is not None else []:
        if isinstance(node, HandoffNode) and node.target == target:
            for arg in node.args:
                values[arg.name] = _eval(ctx, agent, arg.value)
    for handoff in getattr(declaring, "handoffs", None) or []:
        if handoff.agent == target:
            names += handoff.passes
    for name in names:
        values.setdefault(name, ctx.read(Ref(scope=agent, name=name), agent))
    values.update(ctx.state.variables.get(target, {}))
    if not values:  # nothing passed by name: the target sees the session's shared variables
        values = dict(ctx.state.variables.get("session", {}))
    return {k: v for k, v in values.items() if v is not None}


def _only_follow(action: Action) -> bool:
    """An action queued to follow a checkpoint's words (they were said already)."""
    return action.respond is None and not action.template and not action.escalate and not action.block \
        and not action.set and not action.log and not action.store


def _describe(action: Action) -> str:
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


def _drop_drafts(ctx: TurnContext, agent: str, start: int, everyone: bool = False) -> None:
    """Take back what `agent` (or `everyone`: BLOCK) drafted this turn from the `start`-th draft on."""
    for draft in list(ctx.said[start:]):
        if draft.agent == agent or everyone:
            ctx.said.remove(draft)
            if draft.item is not None and draft.item in ctx.state.history:
                ctx.state.history.remove(draft.item)


def _rewind(ctx: TurnContext, frame: Frame, action: Action) -> bool:
    """GOTO / COLLECT / RETRY on a flow: clear the fields to collect again and move the flow to the step
    (GOTO's, else the one asking for the first field, else the current one); True when it moved."""
    from frontdesk.ir.models import FlowAgent, ListenNode, SayNode

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


def _of_kind(rules: AgentRules, kind: str) -> list[Guardrail]:
    return [g for g in rules.guardrails if g.kind == kind]


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, default=str, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def _patterns_of(guard: Guardrail) -> list[re.Pattern]:
    """What a guardrail looks for, as regular expressions: personal data, URLs, e-mails, and the patterns
    its check and `patterns` name."""
    check = guard.check or ""
    patterns: list[re.Pattern] = []
    if "contains_pii" in check or not check:
        patterns += _PII
    if "contains_email" in check:
        patterns.append(_EMAIL)
    if "contains_url" in check:
        patterns.append(_URL)
    for found in [*_PATTERN_IN_CHECK.findall(check), *guard.patterns]:
        try:
            patterns.append(re.compile(found))
        except re.error:
            continue
    return patterns
