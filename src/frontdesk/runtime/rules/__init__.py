"""An agent's declared rules at run time: CONSTRAINTS, GUARDRAILS, TEMPLATES, MEMORY recall and remember,
BEHAVIOR_PROFILES, HOOKS, ACTION_HANDLERS and what ON_ERROR does after its retries.

The engine installs `RulesHook` first in the pipeline of every program with ABL agents. It applies the
rules of the agents on the stack (the active one and the routers and callers below it), and of the
agents that spoke this turn:

- `input_received`: input guardrails (a guardrail that fires blocks the message, or warns, redacts,
  escalates, before any agent or tool sees it), then ACTION_HANDLERS (a message that is a declared
  button's id or value runs its handler), then `before_turn` HOOKS;
- `before_tool`: a tool the active profiles hide (or that only an inactive profile adds), `BEFORE calling
  <tool>` constraints and tool_input guardrails: a failure answers the call with an error result instead
  of running the tool;
- `after_tool`: tool_output guardrails;
- the flow executor calls `step_checkpoint` when a flow leaves one step for another, the engine calls
  `before_done` when an agent is about to finish and `after_drive` when the agents have run (constraints,
  the ON_FAIL / ON_ERROR actions waiting, `after_turn` HOOKS);
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

from typing import TYPE_CHECKING, Any

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
    rules_in_play,
    rules_of,
    system_vars,
    turn_rules,
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
    from frontdesk.runtime.context import Outcome, TurnContext
    from frontdesk.runtime.pipeline import IncomingMessage, Outgoing, PendingToolCall
    from frontdesk.runtime.state import Frame
    from frontdesk.runtime.tools import ToolResult

__all__ = [
    "BLOCKED", "CHANNEL_VARIANTS", "CONSTRAINT_BLOCKED", "COUNTERS", "ESCALATION_NOTICE", "MAX_REDRIVES",
    "MESSAGE_NAMES", "NOT_ALLOWED", "REDACTED", "RulesHook", "Violation", "action_text", "active_profiles",
    "added_tools", "after_error", "effective_profile", "find_template", "hidden_tools", "memory_context",
    "message", "profile_instructions", "remember", "render_named", "render_text", "step_checkpoint",
    "system_vars", "template_variant",
]


class RulesHook:
    """An agent's declared rules at the pipeline's interception points and the engine's turn points."""

    name = "rules"

    def attach(self, ctx: TurnContext, engine: Any) -> None:
        """Called by the engine for every turn's context: lifecycle events drive recall and agent hooks."""
        turn_rules(ctx).engine = engine
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
        from frontdesk.runtime.tools import ToolResult

        caller = call.caller or ""
        caller_rules = rules_of(ctx, caller)
        if caller_rules is not None and caller_rules.profiles:
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

    # ---- the engine's turn points ---------------------------------------------------------------------

    def before_done(self, frame: Frame, outcome: Outcome, ctx: TurnContext, engine: Any) -> str:
        return constraints.before_done(frame, outcome, ctx, engine)

    def after_drive(self, ctx: TurnContext, engine: Any) -> None:
        constraints.end_of_turn(ctx, engine)
        hooks.hooks_at(ctx, "after_turn")

    def handoff_allowed(self, frame: Frame, outcome: Outcome, ctx: TurnContext) -> bool:
        return guardrails.handoff_allowed(frame, outcome, ctx)

    def run_hook(self, ctx: TurnContext, agent: str, hook) -> None:
        run_hook(ctx, agent, hook)


def _own_tools(ctx: TurnContext, agent: str) -> list[str] | None:
    """The tools a reasoning agent declares; None for other agents."""
    from frontdesk.ir.models import ReasoningAgent

    found = ctx.program.agents.get(agent)
    return list(found.tools) if isinstance(found, ReasoningAgent) else None
