"""Conversation files: replay a scripted conversation through the whole turn engine and check it.

A conversation file is YAML with `user:` (the user's lines), `llm:` (the scripted model's
answers, see `frontdesk.llm.scripted`) and, for tests, `expect:` (texts the bot must say, in
order, each a substring of one bot message) and `events:` (event types, optionally with data
fields, that must occur). With `embeddings: true` the local embedding model decides routing
and `the user claims` conditions and the script stands in for the local generator, which is
not asked to classify (`llm_classifies: true` makes it stand in for a remote LLM instead, which
is asked when the embedding model is unsure). `today: 2026-11-22` fixes the clock the conversation
runs at, for programs that read dates such as "tomorrow". `frontdesk chat PROGRAM --script FILE` replays
the same file and checks `expect:` and `events:` too.

`user:` lines are kept as written: `- yes` is the text "yes", not a YAML boolean.

The examples' conversations are now conversation tests (`frontdesk.convtest`, docs/testing.md):
`load_conversation` reads such a file as the dict above (its user lines, all its scripted answers, ...),
with the test case itself under "case".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from typing import Any

from frontdesk.app import knowledge_for
from frontdesk.conversation_file import (  # noqa: F401 - the conversation file's reading, part of this module's API
    CONVERSATION_KEYS,
    load_conversation,
    scripted_model,
)
from frontdesk.llm.base import ScriptError
from frontdesk.llm.scripted import ScriptedProvider
from frontdesk.runtime.engine import Engine, TurnResult
from frontdesk.store.memory import MemorySessionStore


@dataclass
class ConversationRun:
    engine: Engine
    session_id: str
    turns: list[TurnResult] = field(default_factory=list)
    llm: ScriptedProvider | None = None

    @property
    def bot_lines(self) -> list[str]:
        return [m.text for t in self.turns for m in t.messages]

    @property
    def events(self) -> list[dict[str, Any]]:
        return self.engine.store.events(self.session_id)

    def events_of(self, type_: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == type_]

    def transcript(self) -> str:
        lines = []
        for t in self.turns:
            for e in t.events:
                if e.type == "user_message":
                    lines.append(f"user> {e.data['text']}")
                elif e.type == "bot_message":
                    lines.append(f"{e.agent}> {e.data['text']}")
        return "\n".join(lines)


def run_conversation(program, user: list[str], llm: ScriptedProvider | None, store=None,
                     fetch_urls: bool = False, understanding=None, embedder=None,
                     today: Any = None) -> ConversationRun:
    """Start a session and send each line; `today` (a conversation file's `today:`) fixes the clock."""
    engine = Engine(program, llm, store or MemorySessionStore(), understanding=understanding,
                    knowledge=knowledge_for(program, embedder, fetch_urls=fetch_urls),
                    clock=clock_for(today))
    first = engine.start(program_label="test")
    run = ConversationRun(engine, first.session_id, [first], llm)
    for line in user:
        run.turns.append(engine.send(run.session_id, line))
    return run





def clock_for(today: Any) -> Callable[[], float] | None:
    """A clock fixed at a conversation's `today:` (a date, at 09:00 UTC, or a date and time), so that
    "tomorrow" and NOW() mean the same on every day the conversation is replayed; None: the real clock."""
    if today is None or today == "":
        return None
    if isinstance(today, datetime):
        moment = today
    elif isinstance(today, date):
        moment = datetime.combine(today, time(9, 0))
    else:
        try:
            moment = datetime.fromisoformat(str(today))
        except ValueError:
            raise ScriptError(f"today: {today!r} is not a date such as 2026-11-22 or 2026-11-22T09:00") from None
        if len(str(today)) <= 10:
            moment = moment.replace(hour=9)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    stamp = moment.timestamp()
    return lambda: stamp


@dataclass
class ExpectationFailure:
    """One way a run differs from its conversation file; `turn` is where it showed, when one can tell."""

    message: str
    turn: int | None = None


def expectation_failures(run: ConversationRun, spec: dict[str, Any]) -> list[ExpectationFailure]:
    """The ways the run differs from the file's `expect:` and `events:` (empty when it conforms), each
    with the turn it belongs to.

    A missing bot text belongs to the turn of the first bot message after the last match; an
    unexpected event to its turn; a missing event to the turn of the nearest event of its type.
    """
    problems = []
    said = [(t.events[0].turn if t.events else index, m.text)
            for index, t in enumerate(run.turns) for m in t.messages]
    lines = [text for _, text in said]
    last_turn = run.turns[-1].events[0].turn if run.turns and run.turns[-1].events else None
    pos, offset = 0, 0  # expectations match in order: later ones after the end of earlier ones
    for want in spec.get("expect") or []:
        want = str(want)
        for i in range(pos, len(lines)):
            at = lines[i].find(want, offset if i == pos else 0)
            if at >= 0:
                pos, offset = i, at + len(want)
                break
        else:
            unmatched = pos if pos < len(lines) and offset < len(lines[pos]) else pos + 1
            turn = said[unmatched][0] if unmatched < len(said) else last_turn
            problems.append(ExpectationFailure(f"the bot never said {want!r} (after message {pos})", turn))
    here = {e.turn for t in run.turns for e in t.events}  # a continued session: only the turns played here
    events = [e for e in run.events if e.get("turn") in here]
    for want in spec.get("events") or []:
        want = dict(want) if isinstance(want, dict) else {"type": str(want)}
        type_ = want.pop("type")
        negate = bool(want.pop("absent", False))
        hits = [e for e in events if e["type"] == type_ and all(
            e.get("agent") == v if k == "agent" else (e.get("data") or {}).get(k) == v for k, v in want.items())]
        if negate and hits:
            problems.append(ExpectationFailure(f"unexpected event {type_} {want}", hits[0].get("turn")))
        if not negate and not hits:
            near = next((e for e in events if e["type"] == type_), None)
            problems.append(ExpectationFailure(f"no event {type_} {want}", near.get("turn") if near else None))
    if run.llm is not None and run.llm.remaining():
        problems.append(ExpectationFailure(f"{run.llm.remaining()} scripted LLM answers were not used"))
    return problems
