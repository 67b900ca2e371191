"""The session store protocol: where conversation state and event logs are kept between turns."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class SessionInfo:
    """A stored session as listed by `SessionStore.list_sessions`."""

    id: str
    created_at: datetime
    updated_at: datetime
    program: str = ""


class StoreError(Exception):
    """A session store could not read or write (bad state, closed store, database failure)."""


@runtime_checkable
class SessionStore(Protocol):
    """Keeps each session's state (a JSON-serialisable dict, replaced whole) and its ordered event log."""

    def load(self, session_id: str) -> dict | None: ...

    def save(self, session_id: str, state: dict) -> None: ...

    def append_events(self, session_id: str, events: list[dict]) -> None: ...

    def save_turn(self, session_id: str, state: dict, events: list[dict]) -> None:
        """The state after a turn and that turn's events together (atomically where the store can)."""
        ...

    def events(self, session_id: str) -> list[dict]: ...

    def list_sessions(self) -> list[SessionInfo]:
        """Every session, most recently updated first."""
        ...

    def delete(self, session_id: str) -> None: ...

    def close(self) -> None: ...


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def encode_state(session_id: str, state: Any) -> str:
    """The JSON text of a session state; StoreError when it is not a JSON-serialisable dict."""
    if not isinstance(state, dict):
        raise StoreError(f"session {session_id!r}: state must be a dict, got {type(state).__name__}")
    return _encode(session_id, "state", state)


def encode_events(session_id: str, events: Any) -> list[str]:
    """The JSON text of each event; StoreError when one is not a JSON-serialisable dict."""
    if not isinstance(events, list):
        raise StoreError(f"session {session_id!r}: events must be a list of dicts, got {type(events).__name__}")
    encoded = []
    for index, event in enumerate(events, start=1):
        if not isinstance(event, dict):
            raise StoreError(f"session {session_id!r}: event {index} must be a dict, got {type(event).__name__}")
        encoded.append(_encode(session_id, f"event {index}", event))
    return encoded


def program_of(state: dict | None) -> str:
    return str((state or {}).get("program") or "")


def _encode(session_id: str, what: str, value: dict) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise StoreError(f"session {session_id!r}: {what} is not JSON-serialisable: {exc}") from exc
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: keep them as \u escapes, which any store can hold
        text = json.dumps(value, ensure_ascii=True, allow_nan=False)
    return text
