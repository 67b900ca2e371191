"""Runtime events: every decision the engine takes, as plain JSON-ready records."""

from __future__ import annotations

import time
from typing import Any, Callable, Protocol

from pydantic import BaseModel, Field

# The event types the runtime emits; traces, tests and benchmarks read these names.
EVENT_TYPES = {
    "session_started",
    "user_message",
    "bot_message",
    "agent_started",
    "agent_finished",
    "agent_suspended",
    "agent_resumed",
    "route_decided",
    "condition_evaluated",
    "args_extracted",
    "arg_set",
    "step",
    "jump",
    "tries_exhausted",
    "fallback",
    "tool_called",
    "tool_result",
    "llm_call",
    "error",
    "warning",
    "session_ended",
    "input_offered",
    "input_taken",
    "input_given_back",
    "agent_dropped",
}


class Event(BaseModel):
    seq: int
    turn: int
    type: str
    agent: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)
    ts: float = 0.0


class Clock(Protocol):
    def __call__(self) -> float: ...


class EventLog:
    """Collects the events of one turn, numbering them after those already stored."""

    def __init__(self, start_seq: int, turn: int, clock: Clock | None = None,
                 listener: Callable[[Event], None] | None = None) -> None:
        self.events: list[Event] = []
        self._seq = start_seq
        self.turn = turn
        self._clock = clock or time.time
        self._listener = listener

    def emit(self, type: str, agent: str | None = None, /, **data: Any) -> Event:
        assert type in EVENT_TYPES, type
        self._seq += 1
        ev = Event(seq=self._seq, turn=self.turn, type=type, agent=agent, data=data, ts=self._clock())
        self.events.append(ev)
        if self._listener:
            self._listener(ev)
        return ev

    @property
    def next_seq(self) -> int:
        return self._seq
