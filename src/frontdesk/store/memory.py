"""A session store kept in process memory, for tests and throwaway runs."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from datetime import datetime

from frontdesk.store.base import SessionInfo, encode_events, encode_state, program_of, utc_now


@dataclass
class _StoredSession:
    created_at: datetime
    updated_at: datetime
    touched: int
    state_json: str | None = None
    program: str = ""
    event_jsons: list[str] = field(default_factory=list)


class MemorySessionStore:
    """Holds sessions as JSON text, so stored state is a deep copy that callers cannot mutate."""

    def __init__(self) -> None:
        self._sessions: dict[str, _StoredSession] = {}
        self._touch_counter = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"MemorySessionStore({len(self._sessions)} sessions)"

    def load(self, session_id: str) -> dict | None:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None or session.state_json is None:
                return None
            return json.loads(session.state_json)

    def save(self, session_id: str, state: dict) -> None:
        state_json = encode_state(session_id, state)
        with self._lock:
            session = self._touch(session_id)
            session.state_json = state_json
            session.program = program_of(state)

    def append_events(self, session_id: str, events: list[dict]) -> None:
        event_jsons = encode_events(session_id, events)
        if not event_jsons:
            return
        with self._lock:
            self._touch(session_id).event_jsons.extend(event_jsons)

    def save_turn(self, session_id: str, state: dict, events: list[dict]) -> None:
        state_json = encode_state(session_id, state)  # both encoded first: a bad value changes nothing
        event_jsons = encode_events(session_id, events)
        with self._lock:
            session = self._touch(session_id)
            session.state_json = state_json
            session.program = program_of(state)
            session.event_jsons.extend(event_jsons)

    def events(self, session_id: str) -> list[dict]:
        with self._lock:
            session = self._sessions.get(session_id)
            return [json.loads(text) for text in session.event_jsons] if session else []

    def list_sessions(self) -> list[SessionInfo]:
        with self._lock:
            ordered = sorted(self._sessions.items(), key=lambda item: item[1].touched, reverse=True)
            return [
                SessionInfo(id=session_id, created_at=s.created_at, updated_at=s.updated_at, program=s.program)
                for session_id, s in ordered
            ]

    def delete(self, session_id: str) -> None:
        with self._lock:
            self._sessions.pop(session_id, None)

    def close(self) -> None:
        pass

    def _touch(self, session_id: str) -> _StoredSession:
        """The session, created if new, marked as the most recently updated one (call under the lock)."""
        now = utc_now()
        self._touch_counter += 1
        session = self._sessions.get(session_id)
        if session is None:
            session = _StoredSession(created_at=now, updated_at=now, touched=self._touch_counter)
            self._sessions[session_id] = session
        else:
            session.updated_at = now
            session.touched = self._touch_counter
        return session
