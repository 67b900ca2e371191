"""A session store kept in process memory, for tests and throwaway runs."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from frontdesk.store.base import (
    DEFAULT_LOCK_TIMEOUT,
    ConflictError,
    LockTimeout,
    SessionInfo,
    encode_events,
    encode_state,
    program_of,
    renumber,
    utc_now,
)
from frontdesk.store.longterm import DictMemoryStore


@dataclass
class _StoredSession:
    created_at: datetime
    updated_at: datetime
    touched: int
    state_json: str | None = None
    program: str = ""
    event_jsons: list[str] = field(default_factory=list)
    version: int = 0


class MemorySessionStore:
    """Holds sessions as JSON text, so stored state is a deep copy that callers cannot mutate."""

    def __init__(self) -> None:
        self._sessions: dict[str, _StoredSession] = {}
        self._touch_counter = 0
        self._lock = threading.Lock()
        self._session_locks: dict[str, threading.Lock] = {}
        self._programs: dict[str, str] = {}  # program versions: digest -> IR (JSON)
        self._memory = DictMemoryStore()  # persistent memory, as long as this store

    def __repr__(self) -> str:
        return f"MemorySessionStore({len(self._sessions)} sessions)"

    def load(self, session_id: str) -> dict | None:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None or session.state_json is None:
                return None
            return json.loads(session.state_json)

    def load_versioned(self, session_id: str) -> tuple[dict | None, int]:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return None, 0
            return (json.loads(session.state_json) if session.state_json is not None else None), session.version

    def version_of(self, session_id: str) -> int:
        with self._lock:
            session = self._sessions.get(session_id)
            return session.version if session is not None else 0

    def save(self, session_id: str, state: dict) -> None:
        self.save_turn(session_id, state, [])

    def append_events(self, session_id: str, events: list[dict]) -> None:
        event_jsons = encode_events(session_id, events)
        if not event_jsons:
            return
        with self._lock:
            session = self._touch(session_id)
            session.event_jsons.extend(text for _, text in renumber(event_jsons, len(session.event_jsons)))

    def save_turn(self, session_id: str, state: dict, events: list[dict],
                  expected_version: int | None = None) -> int:
        state_json = encode_state(session_id, state)  # both encoded first: a bad value changes nothing
        event_jsons = encode_events(session_id, events)
        with self._lock:
            current = self._sessions.get(session_id)
            version = current.version if current is not None else 0
            if expected_version is not None and expected_version != version:
                raise ConflictError(f"session {session_id!r} is at version {version}, not {expected_version}: "
                                    "someone else saved it since it was loaded")
            session = self._touch(session_id)
            session.state_json = state_json
            session.program = program_of(state)
            session.event_jsons.extend(text for _, text in renumber(event_jsons, len(session.event_jsons)))
            session.version = version + 1
            return session.version

    @contextmanager
    def lock(self, session_id: str, timeout: float = DEFAULT_LOCK_TIMEOUT) -> Iterator[None]:
        """The session's lock: a threading lock, so exclusive among the threads of this process."""
        with self._lock:
            session_lock = self._session_locks.setdefault(session_id, threading.Lock())
        if not session_lock.acquire(timeout=max(timeout, 0)):
            raise LockTimeout(f"session {session_id!r} is busy: its lock was not free within {timeout} s")
        try:
            yield
        finally:
            session_lock.release()

    def expire_idle(self, older_than: float) -> int:
        cutoff = utc_now() - timedelta(seconds=older_than)
        with self._lock:
            idle = [sid for sid, s in self._sessions.items() if s.updated_at < cutoff]
            for sid in idle:
                del self._sessions[sid]
            return len(idle)

    def events_since(self, session_id: str, after: int, limit: int | None = None) -> list[dict]:
        start = max(after, 0)
        stop = None if limit is None else start + max(limit, 0)
        with self._lock:
            session = self._sessions.get(session_id)
            return [json.loads(text) for text in session.event_jsons[start:stop]] if session else []

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

    def save_program(self, digest: str, ir_json: str) -> None:
        with self._lock:
            self._programs.setdefault(digest, ir_json)

    def load_program(self, digest: str) -> str | None:
        with self._lock:
            return self._programs.get(digest)

    def memory_store(self) -> DictMemoryStore:
        """Persistent memory kept as long as this store (one for every caller of this store)."""
        return self._memory

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
