"""The session store protocol: where conversation state and event logs are kept between turns."""

from __future__ import annotations

import json
import os
import socket
import threading
import uuid
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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


class ConflictError(StoreError):
    """`save_turn(..., expected_version=N)`: the session was written by someone else since version N."""


class LockTimeout(StoreError):
    """`lock(session_id, timeout)`: another writer held the session's lock for longer than `timeout`."""


DEFAULT_LOCK_TIMEOUT = 30.0  # seconds a turn waits for another turn of the same session
DEFAULT_LOCK_LEASE = 15.0  # seconds after which a lock whose holder died (crash, SIGKILL) lapses; a live
# holder renews it (LeaseRenewer) for as long as its turn runs


def lock_token() -> str:
    """A lock holder's token: the host and process that hold it, and a random part."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex}"


def holder_is_dead(token: str) -> bool:
    """Whether the lock `token` names a process on this host that no longer runs (a crash or SIGKILL):
    its lock can be taken at once instead of waiting for the lease to lapse."""
    host, _, rest = token.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # it exists but is not ours to signal
        return False
    return False


class LeaseRenewer:
    """Renews the leases of a store's held locks, every third of each lease, from one daemon thread per
    store (started when first needed), so that a turn longer than the lease keeps its lock and a turn
    costs no thread of its own. A renewal that finds the lock no longer ours stops renewing it."""

    def __init__(self) -> None:
        self._held: dict[int, tuple[Callable[[], bool], float, float]] = {}  # id -> (renew, every, next due)
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None
        self._next_id = 0

    @contextmanager
    def hold(self, renew: Callable[[], bool], lease: float) -> Iterator[None]:
        every = max(lease / 3, 0.05)
        with self._lock:
            self._next_id += 1
            key = self._next_id
            self._held[key] = (renew, every, time.monotonic() + every)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="frontdesk-lock-leases", daemon=True)
                self._thread.start()
            self._wake.notify()
        try:
            yield
        finally:
            with self._lock:
                self._held.pop(key, None)

    def _run(self) -> None:
        while True:
            with self._lock:
                now = time.monotonic()
                due = [(key, renew, every) for key, (renew, every, at) in self._held.items() if at <= now]
                for key, renew, every in due:
                    self._held[key] = (renew, every, now + every)
            for key, renew, _ in due:
                try:
                    still_ours = renew()
                except Exception:  # noqa: BLE001 - a store hiccup: the next renewal tries again
                    continue
                if not still_ours:
                    with self._lock:
                        self._held.pop(key, None)
            with self._lock:
                if not self._held:  # no lock held: the thread ends (the next hold starts one)
                    self._thread = None
                    return
                if not due:
                    upcoming = min(at for _, _, at in self._held.values())
                    self._wake.wait(timeout=max(0.01, upcoming - time.monotonic()))


@runtime_checkable
class SessionStore(Protocol):
    """Keeps each session's state (a JSON-serialisable dict, replaced whole) and its ordered event log."""

    def load(self, session_id: str) -> dict | None: ...

    def save(self, session_id: str, state: dict) -> None: ...

    def append_events(self, session_id: str, events: list[dict]) -> None: ...

    def save_turn(self, session_id: str, state: dict, events: list[dict],
                  expected_version: int | None = None) -> int:
        """The state after a turn and that turn's events together, in one transaction. The store numbers
        the events (each event's `seq` becomes its place in the log: unique, contiguous, from 1).
        With `expected_version`, raises ConflictError unless the session is still at that version
        (0: not stored yet). Returns the session's new version."""
        ...

    def load_versioned(self, session_id: str) -> tuple[dict | None, int]:
        """The state (None if absent) and its version (0 if absent): each save adds one."""
        ...

    def lock(self, session_id: str, timeout: float = DEFAULT_LOCK_TIMEOUT):
        """A context manager holding the session's lock (exclusive across threads and, for SQLite, Redis
        and PostgreSQL, across processes); LockTimeout after `timeout` seconds of waiting."""
        ...

    def expire_idle(self, older_than: float) -> int:
        """Delete the sessions not updated for `older_than` seconds; how many were deleted."""
        ...

    def version_of(self, session_id: str) -> int:
        """The session's version (0 if absent), without reading its state."""
        ...

    def save_program(self, digest: str, ir_json: str) -> None:
        """Keep a program version's IR (its digest is what sessions record), so that any process can run a
        session on the version it started with; saving a digest again changes nothing."""
        ...

    def load_program(self, digest: str) -> str | None:
        """The IR (JSON) of a program version saved before, or None."""
        ...

    def memory_store(self):
        """Persistent memory by scope (frontdesk.store.longterm.MemoryStore) kept where the sessions are."""
        ...

    def events(self, session_id: str) -> list[dict]: ...

    def events_since(self, session_id: str, after: int, limit: int | None = None) -> list[dict]:
        """The session's events with a seq above `after`, in order (what a follower has not seen yet);
        with `limit`, at most that many (a page of the trace)."""
        ...

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


def renumber(event_jsons: list[str], last: int) -> list[tuple[int, str]]:
    """The store's numbering of a turn's events after the log's `last` seq: (seq, JSON text), the text
    carrying that seq when the event has a `seq` field (the engine's events do)."""
    numbered = []
    for offset, text in enumerate(event_jsons, start=1):
        if text.startswith(f'{{"seq": {last + offset},'):  # numbered right already (the engine's usual case)
            numbered.append((last + offset, text))
            continue
        event = json.loads(text)
        if "seq" in event and event["seq"] != last + offset:
            event["seq"] = last + offset
            text = _encode("", "event", event)
        numbered.append((last + offset, text))
    return numbered


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


def events_before_turn(store: SessionStore, session_id: str, turn: int) -> int:
    """How many of the session's events come before the first event of `turn` or a later turn: the log's
    turns never go down, so a galloping then binary search finds it in O(log n) one-event reads."""

    def before(index: int) -> bool:  # is the event at this 0-based place of an earlier turn?
        found = store.events_since(session_id, index, 1)
        if not found:
            return False
        at = found[0].get("turn")
        return not isinstance(at, int) or at < turn

    low, high = 0, 1
    while before(high - 1):
        low, high = high, high * 2
    high -= 1  # the event at `high` is of `turn` or later, or past the end; all before `low` are earlier
    while low < high:
        middle = (low + high) // 2
        if before(middle):
            low = middle + 1
        else:
            high = middle
    return low


def trace_page(store: SessionStore, session_id: str, after: int = 0, limit: int = 500,
               first_turn: int | None = None, last_turn: int | None = None) -> tuple[list[dict], int | None]:
    """A page of a session's event log: at most `limit` events after the first `after`, only those of
    turns `first_turn` to `last_turn` when given. Returns the events and the cursor of the next page (the
    `after` to ask with), None when this page is the last."""
    start = max(after, 0)
    if first_turn is not None:
        start = max(start, events_before_turn(store, session_id, first_turn))
    found = store.events_since(session_id, start, limit + 1)
    page = found[:limit]
    if last_turn is not None:
        for index, event in enumerate(page):
            at = event.get("turn")
            if isinstance(at, int) and at > last_turn:
                return page[:index], None
        if len(found) > limit:
            at = found[limit].get("turn")
            if isinstance(at, int) and at > last_turn:
                return page, None
    return page, (start + len(page) if len(found) > limit else None)
