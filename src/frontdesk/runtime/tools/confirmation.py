"""Tool confirmation (ABL §3.5 `confirm:` / `immutable:`): the user approves a call before it runs.

`gate` is called by `TurnContext.call_tool` once the `before_tool` hooks let a call through. For a
tool whose `confirm` is `always` (or `when_side_effects` with `side_effects: true`):

1. with no approval, the question is said ("I'm about to <description> (<args>). Shall I go
   ahead?", or the tool's `confirm_message`), the call is kept in the session as asked and gets an
   `awaiting_confirmation` result: it does not run, and the executor waits at it (a flow stays at its
   CALL step, a reasoning loop keeps the tool call pending);
2. in a later turn the call comes again and the user's message is read as the answer: yes (taken)
   runs the call with exactly the approved arguments; no (taken) gives it a `declined` error result;
   any other message also declines it, and is left for the agent to handle as usual;
3. an approval locks the `immutable` parameters: a later call of the tool by the same agent that
   keeps their approved values runs without asking again, one that changes any of them is asked
   anew. A tool without `immutable` parameters asks before every call.

The calls waiting or approved are kept in the session state (`system._tool_confirmations`, by tool).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from frontdesk.ir.models import ToolDef
from frontdesk.runtime.events import register_event_type

from .result import ToolResult, failed, json_safe, text_of

if TYPE_CHECKING:  # pragma: no cover
    from frontdesk.runtime.context import TurnContext
    from frontdesk.runtime.state import Frame

KEY = "_tool_confirmations"
register_event_type("tool_confirmation_requested", "a tool call waits for the user's approval",
                    ("tool", "args", "question"))
register_event_type("tool_confirmation_answered", "the user's answer to a tool call waiting for approval",
                    ("tool", "answer"))
_HOLE = re.compile(r"\{\{\s*([A-Za-z_]\w*)\s*\}\}")
_ANSWER_WORDS = 6  # a longer message answers only when its first words say yes or no


@dataclass
class Gate:
    """What becomes of a call: run with `args`, or end with `result` (waiting, or declined)."""

    args: dict[str, Any]
    result: ToolResult | None = None

    @property
    def waits(self) -> bool:
        return self.result is not None and self.result.failure is not None and \
            self.result.failure.kind == "awaiting_confirmation"


def needs_confirmation(tool: ToolDef | None) -> bool:
    c = tool.confirmation if tool is not None else None
    if c is None:
        return False
    return c.require == "always" or (c.require == "when_side_effects" and c.side_effects)


def _book(ctx: TurnContext) -> dict[str, dict[str, Any]]:
    return ctx.state.system.setdefault(KEY, {})


def _owner(frame: Frame | None, caller: str | None) -> str:
    return frame.id if frame is not None else (caller or "")


def waiting(ctx: TurnContext, frame: Frame, this_turn: bool = True) -> bool:
    """Whether a call of `frame` waits for the user's approval: asked this turn (`this_turn`), or
    asked in an earlier turn and to be answered by this turn's message."""
    turn = ctx.state.turn
    return any(e.get("status") == "asked" and e.get("owner") == frame.id and
               (e.get("turn") == turn) == this_turn for e in ctx.state.system.get(KEY, {}).values())


def gate(ctx: TurnContext, tool: str, args: dict[str, Any], caller: str | None, frame: Frame | None) -> Gate:
    tdef = ctx.program.tools.get(tool)
    if not needs_confirmation(tdef):
        return Gate(args)
    assert tdef is not None and tdef.confirmation is not None
    book = _book(ctx)
    owner = _owner(frame, caller)
    entry = book.get(tool)
    if entry is not None and entry.get("owner") != owner:
        entry = None  # another agent's approval is not this one's
    immutable = tdef.confirmation.immutable
    why = "the call needs the user's approval"
    if entry is not None and entry["status"] == "asked":
        if entry["turn"] == ctx.state.turn:  # asked this turn already: still waiting
            return Gate(args, _waiting(tool, entry["question"]))
        answer = _answer(ctx, frame)
        ctx.log.emit("tool_confirmation_answered", caller, tool=tool, answer=answer, args=entry["args"])
        if frame is not None:
            frame.waiting = False
        if answer != "yes":
            del book[tool]
            text = f"the user declined: {tool} was not run" if answer == "no" else \
                f"the user did not approve {tool} (they said something else): it was not run"
            return Gate(args, failed("declined", text, message=text))
        entry["status"] = "approved"
    if entry is not None:
        changed = [p for p in immutable if _differs(args.get(p), entry["args"].get(p))]
        if entry["status"] == "approved" and not changed:
            run = dict(entry["args"])  # exactly what the user approved
            if immutable:
                entry["status"] = "used"  # the approved values stay locked for later calls
            else:
                del book[tool]
            return Gate(run)
        if entry["status"] == "used" and not changed:
            return Gate(args)
        if changed:
            why = f"{', '.join(changed)} changed since the user approved"
    question = _question(tdef, args)
    book[tool] = {"status": "asked", "args": json_safe(args), "turn": ctx.state.turn, "owner": owner,
                  "question": question}
    ctx.say(caller, question, frame)
    ctx.log.emit("tool_confirmation_requested", caller, tool=tool, args=args, question=question, why=why)
    return Gate(args, _waiting(tool, question))


def _waiting(tool: str, question: str) -> ToolResult:
    return failed("awaiting_confirmation", f"{tool} waits for the user's approval", message=question)


def _differs(given: Any, approved: Any) -> bool:
    return given != approved and json.dumps(json_safe(given), sort_keys=True) != json.dumps(approved, sort_keys=True)


def _answer(ctx: TurnContext, frame: Frame | None) -> str:
    """"yes" or "no" (the message is taken: it was the answer), or "other" (left for the agent)."""
    from frontdesk.nlu.matcher import polarity  # numpy: only once a confirmation is answered

    inp = ctx.input
    if inp.text is None or not (inp.is_open or (frame is not None and inp.offered_to(frame))):
        return "other"
    words = re.findall(r"[a-z']+", inp.text.lower().replace("\u2019", "'"))
    said = polarity(inp.text) if len(words) <= _ANSWER_WORDS else polarity(" ".join(words[:3]))
    if said == 0:
        return "other"
    if frame is not None:
        inp.take(frame, "confirmation")
    return "yes" if said > 0 else "no"


def _question(tool: ToolDef, args: dict[str, Any]) -> str:
    assert tool.confirmation is not None
    if tool.confirmation.message:
        return _HOLE.sub(lambda m: _shown(args.get(m.group(1))), tool.confirmation.message)
    what = tool.description.strip().rstrip(".") or f"run {tool.name}"
    what = what[0].lower() + what[1:] if what[:2] != what[:2].upper() else what
    given = ", ".join(f"{k}: {_shown(v)}" for k, v in args.items() if v is not None)
    return f"I'm about to {what}" + (f" ({given})" if given else "") + ". Shall I go ahead?"


def _shown(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else text_of(value)
