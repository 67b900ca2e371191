"""Runtime events: every decision the engine takes, as plain JSON-ready records."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, Field


@dataclass(frozen=True)
class EventType:
    """A kind of event: its name, what it records, and the data fields every such event carries."""

    name: str
    about: str
    fields: tuple[str, ...] = ()


# The registry of event kinds. It is open: a new executor, a guardrail or a hook registers its own
# kinds (`register_event_type`) and traces, tests and benchmarks read them like the built-in ones.
EVENT_TYPES: dict[str, EventType] = {}


def register_event_type(name: str, about: str, fields: tuple[str, ...] = ()) -> EventType:
    """Declare a kind of event; declaring the same kind again the same way is harmless."""
    kind = EventType(name, about, tuple(fields))
    known = EVENT_TYPES.get(name)
    if known is not None and known != kind:
        raise ValueError(f"event type {name!r} is already registered differently")
    EVENT_TYPES[name] = kind
    return kind


for _name, _about, _fields in (
    ("session_started", "a session began", ("entry",)),
    ("user_message", "the user's message of a turn", ("text",)),
    ("bot_message", "something the bot said", ("text",)),
    ("agent_started", "an agent started", ("by",)),
    ("agent_finished", "an agent ended, with its status", ("status",)),
    ("agent_suspended", "an agent was set aside, to come back later", ("by",)),
    ("agent_resumed", "a set-aside agent came back", ("by",)),
    ("route_decided", "who handles the message, and what decided it", ("agent", "by")),
    ("condition_evaluated", "a condition and its result", ("result",)),
    ("args_extracted", "values read from the user's message", ("args",)),
    ("arg_set", "a value written", ("scope", "name")),
    ("step", "a step of an executor worth showing in a trace", ()),
    ("jump", "a flow went to a label", ()),
    ("tries_exhausted", "a `next` ran out of tries", ()),
    ("fallback", "the agent could not handle the message", ("reason",)),
    ("tool_call", "a tool call, with its arguments (and `duration_ms` once it returned)", ("tool", "args")),
    ("tool_result", "a tool's result and how long the call took (`duration_ms`)", ("tool", "status")),
    # the name `tool_call` had before (ABL's core concepts name it tool_call): sessions stored then
    # still hold it, and `frontdesk trace` shows it like a tool_call; nothing emits it any more
    ("tool_called", "a tool call, with its arguments (legacy name of tool_call)", ("tool", "args")),
    ("llm_call", "a model call: its purpose, prompt, answer and tokens", ("purpose",)),
    ("error", "something failed; the conversation goes on", ()),
    ("warning", "something a designer should look at", ()),
    ("session_ended", "the session is over", ()),
    ("input_offered", "the user's message was offered to an agent", ()),
    ("input_taken", "an agent took the user's message", ("how",)),
    ("input_given_back", "an agent gave the user's message back", ("why",)),
    ("agent_dropped", "a set-aside agent will not come back", ("reason",)),
):
    register_event_type(_name, _about, _fields)


class Event(BaseModel):
    seq: int
    turn: int
    type: str
    agent: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)
    ts: float = 0.0


class Clock(Protocol):
    def __call__(self) -> float: ...


Subscriber = Callable[[Event], None]


class EventTypeWarning(UserWarning):
    """An event of a kind nobody registered, or without the fields its kind declares."""


class EventLog:
    """Collects the events of one turn, numbering them after those already stored, and hands each to
    every subscriber as it happens (a live trace, a test, later an OpenTelemetry exporter)."""

    def __init__(self, start_seq: int, turn: int, clock: Clock | None = None,
                 subscribers: list[Subscriber] | None = None) -> None:
        self.events: list[Event] = []
        self._seq = start_seq
        self.turn = turn
        self._clock = clock or time.time
        self._subscribers: list[Subscriber] = list(subscribers or [])

    @property
    def clock(self) -> Clock:
        """What the events' times are read from (a log of a fan_out task or a draft uses the turn's)."""
        return self._clock

    def subscribe(self, subscriber: Subscriber) -> None:
        self._subscribers.append(subscriber)

    def truncate(self, keep: int) -> int:
        """Forget the events after the first `keep` (a superseded turn's); how many were dropped."""
        dropped = len(self.events) - keep
        if dropped > 0:
            self._seq -= dropped
            del self.events[keep:]
        return max(dropped, 0)

    def emit(self, type: str, agent: str | None = None, /, **data: Any) -> Event:
        kind = EVENT_TYPES.get(type)
        # A malformed event is a bug in the code that emits it: the tests make this warning an error;
        # a user's conversation goes on and the event is kept as it is.
        if kind is None:
            warnings.warn(f"unknown event type {type!r}: register it with register_event_type",
                          EventTypeWarning, stacklevel=2)
        elif any(f not in data for f in kind.fields):
            missing = ", ".join(f for f in kind.fields if f not in data)
            warnings.warn(f"a {type!r} event lacks {missing}", EventTypeWarning, stacklevel=2)
        self._seq += 1
        ev = Event(seq=self._seq, turn=self.turn, type=type, agent=agent, data=data, ts=self._clock())
        self.events.append(ev)
        for subscriber in list(self._subscribers):
            try:
                subscriber(ev)
            except Exception as exc:  # noqa: BLE001 - a broken subscriber must not break the turn
                warnings.warn(f"an event subscriber failed on a {type!r} event: {exc.__class__.__name__}: {exc}",
                              RuntimeWarning, stacklevel=2)
        return ev

    def adopt(self, events: list[Event], notify: list[Subscriber] | tuple = ()) -> list[Event]:
        """Append events recorded on another log during this turn (a fan_out task's own, see
        runtime/fanout.py), renumbered after this log's; they keep their kind, data and time. Each is
        handed to the subscribers in `notify` only (not to this log's: they saw the task's context)."""
        adopted = []
        for ev in events:
            self._seq += 1
            copy = ev.model_copy(update={"seq": self._seq, "turn": self.turn})
            self.events.append(copy)
            adopted.append(copy)
            for subscriber in list(notify):
                try:
                    subscriber(copy)
                except Exception as exc:  # noqa: BLE001 - a broken subscriber must not break the turn
                    warnings.warn(f"an event subscriber failed on a {copy.type!r} event: "
                                  f"{exc.__class__.__name__}: {exc}", RuntimeWarning, stacklevel=2)
        return adopted

    @property
    def next_seq(self) -> int:
        return self._seq
