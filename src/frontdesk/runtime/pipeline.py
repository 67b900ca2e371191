"""The turn pipeline's interception points, where constraints, guardrails and hooks attach.

A turn passes through five points, in this order:

1. `input_received`: the user's message, before any agent sees it. A hook may rewrite the text
   or block it with a reply (an input guardrail); a blocked message reaches no agent.
2. `before_tool`: a tool call about to run. A hook may change its arguments or answer it itself
   with a result (a constraint that refuses the call, a cache, a test double).
3. `after_tool`: a tool's result, before the agent sees it. A hook may replace it.
4. `output_ready`: everything the bot is about to send this turn, buffered. A hook may change,
   drop or add messages (an output guardrail, a redaction); the user sees what is left.
5. `turn_end`: the turn is over and its state is about to be stored.

And four where the engine drives the agents (an agent's declared rules ride these, see
runtime/rules/__init__.py: `RulesHook`):

- `context_opened`: a turn's context (or a fan_out task's own) was made, before anything runs in it.
- `before_done`: an agent is about to finish (`Finishing`): a hook may replace its result, or say the
  stack changed (`drive_on`, the engine drives on) or that the turn ends (`stop`).
- `before_handoff`: an agent is about to hand the conversation over (`PendingHandoff`): a hook may
  change the summary passed along, or `stop` the handoff (the agent goes on).
- `after_drive`: the agents have run (and may run again: a hook may drive them again).

A hook is any object with one or more of these methods; the engine calls the ones it has, in the
order the hooks were given. A hook that raises at one of the first five points is reported as an
`error` event and skipped: it never ends the conversation. The four driving points run agents, so
what a hook raises there goes on as an agent's error would (a newer message superseding the turn,
a draft reaching its first tool call).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from frontdesk.runtime.events import register_event_type
from frontdesk.runtime.state import HistoryItem

if TYPE_CHECKING:  # pragma: no cover
    from frontdesk.runtime.context import TurnContext
    from frontdesk.runtime.state import Frame
    from frontdesk.runtime.steps import Done, Transfer
    from frontdesk.runtime.tools import ToolResult

register_event_type("input_blocked", "a hook stopped the user's message before any agent saw it", ("hook", "reply"))
register_event_type("input_changed", "a hook rewrote the user's message", ("hook", "text"))
register_event_type("tool_intercepted", "a hook answered a tool call instead of the tool", ("hook", "tool"))
register_event_type("tool_result_changed", "a hook replaced a tool's result", ("hook", "tool"))
register_event_type("output_changed", "a hook changed what the bot sends", ("hook", "before", "after"))


@dataclass
class BotMessage:
    agent: str | None  # the speaker the user sees (a FLOW step's reasoning agent: the flow's agent)
    text: str
    # the history item it was recorded as, kept in step when an output hook changes or drops it
    item: HistoryItem | None = field(default=None, repr=False, compare=False)
    by: str | None = field(default=None, compare=False)  # the agent that said it (the name in the trace)
    # buttons, choices and input fields shown with it (ABL RESPOND ... ACTIONS), as plain dicts; what the
    # user picks comes back as a message whose text is the element's value or id (ACTION_HANDLERS)
    actions: list[dict] = field(default_factory=list, compare=False)


@dataclass
class IncomingMessage:
    """The user's message at `input_received`: `text` may be rewritten; `block` with a reply stops it."""

    text: str
    blocked: str | None = None  # the reply sent instead, when a hook blocked the message
    speaker: str | None = None  # the agent the reply is said as (an agent's input guardrail), else the bot

    def block(self, reply: str, speaker: str | None = None) -> None:
        self.blocked = reply
        self.speaker = speaker


@dataclass
class PendingToolCall:
    """A tool call at `before_tool`: `args` may be changed; `answer` makes the result without the tool."""

    tool: str
    args: dict[str, Any]
    caller: str | None
    result: ToolResult | None = None

    def answer(self, result: ToolResult) -> None:
        self.result = result


@dataclass
class Outgoing:
    """What the bot is about to send this turn, at `output_ready`; hooks edit `messages` in place."""

    messages: list[BotMessage] = field(default_factory=list)


@dataclass
class Finishing:
    """An agent about to finish, at `before_done`: `outcome` may be replaced (a rule that blocks makes
    it an error); `drive_on` says the stack changed (a rewind, a handoff), `stop` that the turn ends."""

    frame: Frame
    outcome: Done
    verdict: Literal["go", "continue", "stop"] = "go"

    def drive_on(self) -> None:
        self.verdict = "continue"

    def stop(self) -> None:
        self.verdict = "stop"


@dataclass
class PendingHandoff:
    """A handoff about to happen, at `before_handoff`: `source` hands the conversation to `frame`
    (`resume`: to come back); `message`, the summary passed along, may be changed; `stop` cancels it."""

    source: Frame
    frame: Frame
    resume: bool
    message: str
    allowed: bool = True

    def stop(self) -> None:
        self.allowed = False


class TurnHook(Protocol):
    """The methods a hook may have (each optional)."""

    def input_received(self, ctx: TurnContext, message: IncomingMessage) -> None: ...

    def before_tool(self, ctx: TurnContext, call: PendingToolCall) -> None: ...

    def after_tool(self, ctx: TurnContext, call: PendingToolCall, result: ToolResult) -> ToolResult | None: ...

    def output_ready(self, ctx: TurnContext, out: Outgoing) -> None: ...

    def turn_end(self, ctx: TurnContext) -> None: ...

    def context_opened(self, ctx: TurnContext) -> None: ...

    def before_done(self, ctx: TurnContext, finishing: Finishing) -> None: ...

    def before_handoff(self, ctx: TurnContext, handoff: PendingHandoff) -> None: ...

    def after_drive(self, ctx: TurnContext) -> None: ...


def hook_name(hook: object) -> str:
    return getattr(hook, "name", None) or type(hook).__name__


class Pipeline:
    """Runs the hooks of one engine at each interception point."""

    def __init__(self, hooks: list[object] | None = None) -> None:
        self.hooks: list[object] = list(hooks or [])

    def add(self, hook: object) -> None:
        self.hooks.append(hook)

    def _each(self, point: str):
        for hook in self.hooks:
            method = getattr(hook, point, None)
            if callable(method):
                yield hook, method

    @staticmethod
    def _failed(ctx: TurnContext, hook: object, point: str, exc: Exception) -> None:
        ctx.log.emit("error", None, where=f"hook {hook_name(hook)} at {point}",
                     message=f"{type(exc).__name__}: {exc}")

    def input_received(self, ctx: TurnContext, text: str) -> IncomingMessage:
        message = IncomingMessage(text)
        for hook, method in self._each("input_received"):
            before = message.text
            try:
                method(ctx, message)
            except Exception as exc:  # noqa: BLE001 - a broken hook must not end the conversation
                self._failed(ctx, hook, "input_received", exc)
                continue
            if message.blocked is not None:
                ctx.log.emit("input_blocked", None, hook=hook_name(hook), reply=message.blocked)
                return message
            if message.text != before:
                ctx.log.emit("input_changed", None, hook=hook_name(hook), text=message.text)
        return message

    def before_tool(self, ctx: TurnContext, call: PendingToolCall) -> None:
        for hook, method in self._each("before_tool"):
            try:
                method(ctx, call)
            except Exception as exc:  # noqa: BLE001
                self._failed(ctx, hook, "before_tool", exc)
                continue
            if call.result is not None:
                ctx.log.emit("tool_intercepted", call.caller, hook=hook_name(hook), tool=call.tool)
                return

    def after_tool(self, ctx: TurnContext, call: PendingToolCall, result: ToolResult) -> ToolResult:
        for hook, method in self._each("after_tool"):
            try:
                changed = method(ctx, call, result)
            except Exception as exc:  # noqa: BLE001
                self._failed(ctx, hook, "after_tool", exc)
                continue
            if changed is not None and changed is not result:
                ctx.log.emit("tool_result_changed", call.caller, hook=hook_name(hook), tool=call.tool)
                result = changed
        return result

    def output_ready(self, ctx: TurnContext, messages: list[BotMessage]) -> list[BotMessage]:
        out = Outgoing(list(messages))
        for hook, method in self._each("output_ready"):
            before = [m.text for m in out.messages]
            try:
                method(ctx, out)
            except Exception as exc:  # noqa: BLE001
                self._failed(ctx, hook, "output_ready", exc)
                continue
            after = [m.text for m in out.messages]
            if after != before:
                ctx.log.emit("output_changed", None, hook=hook_name(hook), before=before, after=after)
        return out.messages

    def turn_end(self, ctx: TurnContext) -> None:
        for hook, method in self._each("turn_end"):
            try:
                method(ctx)
            except Exception as exc:  # noqa: BLE001
                self._failed(ctx, hook, "turn_end", exc)

    # ---- where the engine drives the agents (what a hook raises here is not caught) -------------

    def context_opened(self, ctx: TurnContext) -> None:
        for _hook, method in self._each("context_opened"):
            method(ctx)

    def before_done(self, ctx: TurnContext, frame: Frame, outcome: Done) -> Finishing:
        finishing = Finishing(frame, outcome)
        for _hook, method in self._each("before_done"):
            method(ctx, finishing)
            if finishing.verdict != "go":
                break
        return finishing

    def before_handoff(self, ctx: TurnContext, source: Frame, step: Transfer) -> PendingHandoff:
        pending = PendingHandoff(source, step.frame, step.resume, step.message)
        for _hook, method in self._each("before_handoff"):
            method(ctx, pending)
            if not pending.allowed:
                break
        return pending

    def after_drive(self, ctx: TurnContext) -> None:
        for _hook, method in self._each("after_drive"):
            method(ctx)
