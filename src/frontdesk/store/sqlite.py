"""A session store in a SQLite file, shared safely by the threads of one process (and by several processes)."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path

from frontdesk.store.base import (
    DEFAULT_LOCK_LEASE,
    DEFAULT_LOCK_TIMEOUT,
    ConflictError,
    LeaseRenewer,
    LockTimeout,
    SessionInfo,
    StoreError,
    encode_events,
    encode_state,
    holder_is_dead,
    lock_token,
    program_of,
    renumber,
    utc_now,
)

SCHEMA_VERSION = 2  # 2: sessions.version and the session_locks table
_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    state TEXT,
    program TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    touched INTEGER NOT NULL,
    version INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS sessions_by_touched ON sessions (touched);
CREATE TABLE IF NOT EXISTS events (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    event TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE IF NOT EXISTS programs (
    digest TEXT PRIMARY KEY,
    ir TEXT NOT NULL,
    stored_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS session_locks (
    session_id TEXT PRIMARY KEY,
    token TEXT NOT NULL,
    expires REAL NOT NULL
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
        self._leases = LeaseRenewer()
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
            if version == 1:  # a store written before sessions had versions
                db.execute("ALTER TABLE sessions ADD COLUMN version INTEGER NOT NULL DEFAULT 0")
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

    def load_versioned(self, session_id: str) -> tuple[dict | None, int]:
        with self._transaction() as db:
            row = db.execute("SELECT state, version FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if row is None:
            return None, 0
        return (json.loads(row[0]) if row[0] is not None else None), row[1]

    def version_of(self, session_id: str) -> int:
        with self._transaction() as db:
            row = db.execute("SELECT version FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return int(row[0]) if row else 0

    def save(self, session_id: str, state: dict) -> None:
        self.save_turn(session_id, state, [])

    def append_events(self, session_id: str, events: list[dict]) -> None:
        event_jsons = encode_events(session_id, events)
        if not event_jsons:
            return
        with self._transaction(write=True) as db:
            self._write_events(db, session_id, event_jsons)

    def save_turn(self, session_id: str, state: dict, events: list[dict],
                  expected_version: int | None = None) -> int:
        """The state after a turn and the turn's events, in one transaction: both or neither.
        ConflictError (nothing written) when `expected_version` is given and the session moved on."""
        state_json = encode_state(session_id, state)
        event_jsons = encode_events(session_id, events)
        with self._transaction(write=True) as db:
            row = db.execute("SELECT version FROM sessions WHERE id = ?", (session_id,)).fetchone()
            version = row[0] if row is not None else 0
            if expected_version is not None and expected_version != version:
                raise ConflictError(f"session {session_id!r} is at version {version}, not {expected_version}: "
                                    "someone else saved it since it was loaded")
            self._touch(db, session_id)
            db.execute("UPDATE sessions SET state = ?, program = ?, version = ? WHERE id = ?",
                       (state_json, program_of(state), version + 1, session_id))
            if event_jsons:
                self._write_events(db, session_id, event_jsons)
        return version + 1

    def _write_events(self, db, session_id: str, event_jsons: list[str]) -> None:
        self._touch(db, session_id)
        last = db.execute("SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id = ?", (session_id,)).fetchone()[0]
        db.executemany(
            "INSERT INTO events (session_id, seq, event) VALUES (?, ?, ?)",
            [(session_id, seq, text) for seq, text in renumber(event_jsons, last)],
        )

    @contextmanager
    def lock(self, session_id: str, timeout: float = DEFAULT_LOCK_TIMEOUT,
             lease: float = DEFAULT_LOCK_LEASE) -> Iterator[None]:
        """The session's lock, a row in session_locks: exclusive across threads and processes. Its holder
        renews the lease while it holds it; a row whose lease ran out, or whose holder process on this
        machine is gone (a crash, SIGKILL), is taken over."""
        token = lock_token()
        deadline = time.monotonic() + timeout
        pause = 0.002
        while True:
            with self._transaction(write=True) as db:
                now = time.time()
                db.execute("DELETE FROM session_locks WHERE session_id = ? AND expires < ?", (session_id, now))
                db.execute("INSERT OR IGNORE INTO session_locks (session_id, token, expires) VALUES (?, ?, ?)",
                           (session_id, token, now + lease))
                held = db.execute("SELECT token FROM session_locks WHERE session_id = ?", (session_id,)).fetchone()
                if held is not None and held[0] != token and holder_is_dead(held[0]):
                    db.execute("UPDATE session_locks SET token = ?, expires = ? WHERE session_id = ? AND token = ?",
                               (token, now + lease, session_id, held[0]))
                    held = (token,)
            if held is not None and held[0] == token:
                break
            if time.monotonic() >= deadline:
                raise LockTimeout(f"session {session_id!r} is busy: its lock was not free within {timeout} s")
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

        def renew() -> bool:
            with self._transaction(write=True) as db:
                return db.execute("UPDATE session_locks SET expires = ? WHERE session_id = ? AND token = ?",
                                  (time.time() + lease, session_id, token)).rowcount == 1

        try:
            with self._leases.hold(renew, lease):
                yield
        finally:
            try:
                with self._transaction(write=True) as db:
                    db.execute("DELETE FROM session_locks WHERE session_id = ? AND token = ?", (session_id, token))
            except StoreError:
                pass  # closed store: the lease lapses by itself

    def expire_idle(self, older_than: float) -> int:
        cutoff = (utc_now() - timedelta(seconds=older_than)).isoformat()
        with self._transaction(write=True) as db:
            idle = [row[0] for row in db.execute("SELECT id FROM sessions WHERE updated_at < ?", (cutoff,))]
            for session_id in idle:
                db.execute("DELETE FROM events WHERE session_id = ?", (session_id,))
                db.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
        return len(idle)

    def events_since(self, session_id: str, after: int, limit: int | None = None) -> list[dict]:
        with self._transaction() as db:
            rows = db.execute("SELECT event FROM events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                              (session_id, after, -1 if limit is None else max(limit, 0))).fetchall()
        return [json.loads(row[0]) for row in rows]

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

    def save_program(self, digest: str, ir_json: str) -> None:
        with self._transaction(write=True) as db:
            db.execute("INSERT OR IGNORE INTO programs (digest, ir, stored_at) VALUES (?, ?, ?)",
                       (digest, ir_json, utc_now().isoformat()))

    def load_program(self, digest: str) -> str | None:
        with self._transaction() as db:
            row = db.execute("SELECT ir FROM programs WHERE digest = ?", (digest,)).fetchone()
        return row[0] if row else None

    def memory_store(self):
        """Persistent memory in the same SQLite file (its own table), so it outlives the process."""
        from frontdesk.store.longterm import SqliteMemoryStore

        return SqliteMemoryStore(self.path)

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
