"""An agent's declared rules at run time: CONSTRAINTS, GUARDRAILS, TEMPLATES, MEMORY recall and remember,
BEHAVIOR_PROFILES, HOOKS, ACTION_HANDLERS and what ON_ERROR does after its retries.

The engine installs `RulesHook` first in the pipeline of every program whose agents declare rules
(`declares_rules`); it is one hook among others, at the pipeline's points (runtime/pipeline.py). It applies
the rules of the agents on the stack (the active one and the routers and callers below it), and of the
agents that spoke this turn:

- `input_received`: input guardrails (a guardrail that fires blocks the message, or warns, redacts,
  escalates, before any agent or tool sees it), then ACTION_HANDLERS (a message that is a declared
  button's id or value runs its handler), then `before_turn` HOOKS;
- `before_tool`: a tool the active profiles hide (or that only an inactive profile adds), `BEFORE calling
  <tool>` constraints and tool_input guardrails: a failure answers the call with an error result instead
  of running the tool;
- `after_tool`: tool_output guardrails;
- `context_opened`: lifecycle events of the turn (or of a fan_out task) drive recall and agent hooks;
- `before_done` (an agent is about to finish: its constraints), `before_handoff` (handoff guardrails) and
  `after_drive` (the agents have run: constraints, the ON_FAIL / ON_ERROR actions waiting, which may
  hand over and drive the agents again, and the `after_turn` HOOKS); the flow executor calls
  `step_checkpoint` when a flow leaves one step for another;
- `output_ready`: constraints about the reply, then output guardrails on what the bot drafted;
- `turn_end`: MEMORY remember triggers.

Lifecycle events (the engine's event log) drive MEMORY recall (`session:start`, `agent:<name>:before`,
`agent:<name>:after`, `tool:<name>:after`, `entity:<field>:extracted`, `step:enter:<step>`,
`step:exit:<step>`, with `*` for any name), `RESET: per_step` session variables and the `before_agent` /
`after_agent` HOOKS.

The parts: `constraints.py`, `guardrails.py`, `memory.py`, `hooks.py` (hooks, action handlers, ON_ERROR),
`profiles.py`, `templates.py`, and `_base.py` (events, texts, the turn's state, safe evaluation). No
authored text is run as code: conditions are the expression language's, checks are CEL, patterns run under
a time limit. Every evaluation is a `constraint_check` or `guardrail_check` event; a check that cannot be
evaluated is an `error` event and passes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from frontdesk.ir.models import Program, ReasoningAgent
from frontdesk.runtime.tools import ToolResult

from . import constraints, guardrails, hooks
from ._base import (
    BLOCKED,
    CONSTRAINT_BLOCKED,
    COUNTERS,
    ESCALATION_NOTICE,
    MAX_REDRIVES,
    NOT_ALLOWED,
    REDACTED,
    Violation,
    rule_moves,
    rules_in_play,
    rules_of,
    system_vars,
)
from .constraints import step_checkpoint
from .hooks import after_error, run_hook
from .memory import memory_context, remember, remember_triggers
from .profiles import (
    active_profiles,
    added_tools,
    effective_profile,
    hidden_tools,
    profile_instructions,
    profile_only_tools,
)
from .templates import (
    CHANNEL_VARIANTS,
    MESSAGE_NAMES,
    action_text,
    find_template,
    message,
    render_named,
    render_text,
    template_variant,
)

if TYPE_CHECKING:  # pragma: no cover
    from frontdesk.runtime.context import TurnContext
    from frontdesk.runtime.pipeline import Finishing, IncomingMessage, Outgoing, PendingHandoff, PendingToolCall

__all__ = [
    "BLOCKED", "CHANNEL_VARIANTS", "CONSTRAINT_BLOCKED", "COUNTERS", "ESCALATION_NOTICE", "MAX_REDRIVES",
    "MESSAGE_NAMES", "NOT_ALLOWED", "REDACTED", "RulesHook", "Violation", "action_text", "active_profiles",
    "added_tools", "after_error", "declares_rules", "effective_profile", "find_template", "hidden_tools",
    "memory_context", "message", "profile_instructions", "remember", "render_named", "render_text", "rule_moves",
    "step_checkpoint", "system_vars", "template_variant",
]


def declares_rules(program: Program) -> bool:
    """Whether the rules of any agent ride the turn pipeline (its policy's `rules_hook`, ABL's)."""
    return any(agent.policy.rules_hook for agent in program.agents.values())


class RulesHook:
    """An agent's declared rules at the pipeline's points, where the engine drives the agents included."""

    name = "rules"

    def context_opened(self, ctx: TurnContext) -> None:
        """Every turn's context, and each fan_out task's: lifecycle events drive recall and agent hooks."""
        ctx.log.subscribe(lambda event: hooks.on_event(ctx, event))

    # ---- the pipeline's interception points ---------------------------------------------------------

    def input_received(self, ctx: TurnContext, message_in: IncomingMessage) -> None:
        """Input guardrails first (nothing runs for a message they block), then a button's handler, then
        the before_turn hooks."""
        guardrails.at_input(ctx, message_in)
        if message_in.blocked is not None or hooks.action_handler(ctx, message_in):
            return
        hooks.hooks_at(ctx, "before_turn")

    def before_tool(self, ctx: TurnContext, call: PendingToolCall) -> None:
        caller = call.caller or ""
        caller_rules = rules_of(ctx, caller)
        if caller_rules.profiles:
            own = _own_tools(ctx, caller)  # a flow's CALL is the author's own: only TOOLS_HIDE applies to it
            unavailable = call.tool in hidden_tools(caller, ctx) or (
                own is not None and call.tool in profile_only_tools(caller_rules) and call.tool not in own
                and call.tool not in added_tools(caller, ctx))
            if unavailable:
                ctx.log.emit("step", call.caller, action="a behaviour profile makes this tool unavailable",
                             tool=call.tool)
                call.answer(ToolResult(status="error", message=f"{call.tool} is not available here"))
                return
        for agent, rules in rules_in_play(ctx):
            if constraints.at_tool_call(ctx, agent, rules, call) or guardrails.at_tool_input(ctx, agent, rules, call):
                return

    def after_tool(self, ctx: TurnContext, call: PendingToolCall, result: ToolResult) -> ToolResult | None:
        return guardrails.at_tool_output(ctx, call, result)

    def output_ready(self, ctx: TurnContext, out: Outgoing) -> None:
        for agent, rules in rules_in_play(ctx, [m.agent for m in out.messages if m.agent]):
            constraints.on_drafts(ctx, agent, rules, out)
            if guardrails.at_output(ctx, agent, rules, out):
                return

    def turn_end(self, ctx: TurnContext) -> None:
        remember_triggers(ctx)

    # ---- where the engine drives the agents ----------------------------------------------------------

    def before_done(self, ctx: TurnContext, finishing: Finishing) -> None:
        constraints.before_done(ctx, finishing)

    def after_drive(self, ctx: TurnContext) -> None:
        constraints.end_of_turn(ctx)
        hooks.hooks_at(ctx, "after_turn")

    def before_handoff(self, ctx: TurnContext, handoff: PendingHandoff) -> None:
        # the guardrails read the target (`frame`) and may repair the summary passed (`message`)
        if not guardrails.handoff_allowed(handoff, ctx):
            handoff.stop()

    def run_hook(self, ctx: TurnContext, agent: str, hook) -> None:
        run_hook(ctx, agent, hook)


def _own_tools(ctx: TurnContext, agent: str) -> list[str] | None:
    """The tools a reasoning agent declares; None for other agents."""
    found = ctx.program.agents.get(agent)
    return list(found.tools) if isinstance(found, ReasoningAgent) else None
