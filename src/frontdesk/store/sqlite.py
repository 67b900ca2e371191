"""A session store in a SQLite file, shared safely by the threads of one process (and by several processes)."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from frontdesk.store.base import SessionInfo, StoreError, encode_events, encode_state, program_of, utc_now

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    state TEXT,
    program TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    touched INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_by_touched ON sessions (touched);
CREATE TABLE IF NOT EXISTS events (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    event TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
"""
_BUSY_TIMEOUT_SECONDS = 5.0
_OPEN_ATTEMPTS = 6  # opening a store another process is setting up: tries, 50 ms apart and doubling


class SqliteSessionStore:
    """Keeps sessions and events as JSON text in SQLite; every call is one transaction."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path) if str(path) == ":memory:" else str(Path(path).expanduser())
        if self.path != ":memory:":
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the folder for session store {self.path}: {exc.strerror or exc}") from exc
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        try:
            self._connection = sqlite3.connect(
                self.path, check_same_thread=False, isolation_level=None, timeout=_BUSY_TIMEOUT_SECONDS
            )
            for attempt in range(_OPEN_ATTEMPTS):
                try:
                    self._prepare()
                    break
                except sqlite3.OperationalError as exc:
                    # Switching to WAL while other processes open the same new file can be refused at
                    # once ("database is locked") without waiting for the busy timeout: try again.
                    if "locked" not in str(exc) and "busy" not in str(exc) or attempt == _OPEN_ATTEMPTS - 1:
                        raise
                    time.sleep(0.05 * 2 ** attempt)
        except sqlite3.Error as exc:
            self.close()
            raise StoreError(f"cannot open session store {self.path}: {exc}") from exc
        except StoreError:
            self.close()
            raise

    def _prepare(self) -> None:
        assert self._connection is not None
        self._connection.execute("PRAGMA journal_mode=WAL")
        self._connection.execute("PRAGMA synchronous=NORMAL")
        # A write transaction from the start: upgrading a read transaction to a write one fails at
        # once ("database is locked") when another process writes, instead of waiting its turn.
        with self._transaction(write=True) as db:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"session store {self.path} was written by a newer Frontdesk (schema {version}, "
                    f"this one knows {SCHEMA_VERSION})"
                )
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def __repr__(self) -> str:
        return f"SqliteSessionStore({self.path!r})"

    def load(self, session_id: str) -> dict | None:
        with self._transaction() as db:
            row = db.execute("SELECT state FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if row is None or row[0] is None:
            return None
        return json.loads(row[0])

    def save(self, session_id: str, state: dict) -> None:
        state_json = encode_state(session_id, state)
        with self._transaction(write=True) as db:
            self._write_state(db, session_id, state, state_json)

    def append_events(self, session_id: str, events: list[dict]) -> None:
        event_jsons = encode_events(session_id, events)
        if not event_jsons:
            return
        with self._transaction(write=True) as db:
            self._write_events(db, session_id, event_jsons)

    def save_turn(self, session_id: str, state: dict, events: list[dict]) -> None:
        """The state after a turn and the turn's events, in one transaction: both or neither."""
        state_json = encode_state(session_id, state)
        event_jsons = encode_events(session_id, events)
        with self._transaction(write=True) as db:
            self._write_state(db, session_id, state, state_json)
            if event_jsons:
                self._write_events(db, session_id, event_jsons)

    def _write_state(self, db, session_id: str, state: dict, state_json: str) -> None:
        self._touch(db, session_id)
        db.execute("UPDATE sessions SET state = ?, program = ? WHERE id = ?",
                   (state_json, program_of(state), session_id))

    def _write_events(self, db, session_id: str, event_jsons: list[str]) -> None:
        self._touch(db, session_id)
        last = db.execute("SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id = ?", (session_id,)).fetchone()[0]
        db.executemany(
            "INSERT INTO events (session_id, seq, event) VALUES (?, ?, ?)",
            [(session_id, last + offset, text) for offset, text in enumerate(event_jsons, start=1)],
        )

    def events(self, session_id: str) -> list[dict]:
        with self._transaction() as db:
            rows = db.execute("SELECT event FROM events WHERE session_id = ? ORDER BY seq", (session_id,)).fetchall()
        return [json.loads(row[0]) for row in rows]

    def list_sessions(self) -> list[SessionInfo]:
        with self._transaction() as db:
            rows = db.execute(
                "SELECT id, created_at, updated_at, program FROM sessions ORDER BY touched DESC"
            ).fetchall()
        return [
            SessionInfo(
                id=row[0],
                created_at=datetime.fromisoformat(row[1]),
                updated_at=datetime.fromisoformat(row[2]),
                program=row[3],
            )
            for row in rows
        ]

    def delete(self, session_id: str) -> None:
        with self._transaction(write=True) as db:
            db.execute("DELETE FROM events WHERE session_id = ?", (session_id,))
            db.execute("DELETE FROM sessions WHERE id = ?", (session_id,))

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    @contextmanager
    def _transaction(self, write: bool = False) -> Iterator[sqlite3.Connection]:
        """One transaction under the store's lock; sqlite failures become StoreError."""
        with self._lock:
            db = self._connection
            if db is None:
                raise StoreError(f"session store {self.path} is closed")
            try:
                db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                try:
                    yield db
                except BaseException:
                    if db.in_transaction:
                        db.execute("ROLLBACK")
                    raise
                db.execute("COMMIT")
            except sqlite3.Error as exc:
                raise StoreError(f"session store {self.path} failed: {exc}") from exc

    @staticmethod
    def _touch(db: sqlite3.Connection, session_id: str) -> None:
        """Create the session row if new and mark it the most recently updated (inside a write transaction)."""
        now = utc_now().isoformat()
        touched = db.execute("SELECT COALESCE(MAX(touched), 0) + 1 FROM sessions").fetchone()[0]
        db.execute(
            "INSERT INTO sessions (id, state, program, created_at, updated_at, touched) VALUES (?, NULL, '', ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET updated_at = excluded.updated_at, touched = excluded.touched",
            (session_id, now, now, touched),
        )
