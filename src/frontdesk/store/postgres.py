"""A session store in PostgreSQL (psycopg 3): shared by several processes and machines.

The session lock is a session-level advisory lock (`pg_try_advisory_lock`) on a 64-bit hash of the
session id, held on a connection of its own for as long as the lock is held: if the holder dies,
PostgreSQL drops its connection and with it the lock.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from frontdesk.store.base import (
    DEFAULT_LOCK_TIMEOUT,
    ConflictError,
    LockTimeout,
    SessionInfo,
    StoreError,
    encode_events,
    encode_state,
    program_of,
    renumber,
    utc_now,
)
from frontdesk.extras import install_hint
from frontdesk.store.longterm import MemoryScope, encode_value, under

_SCHEMA = """
CREATE TABLE IF NOT EXISTS frontdesk_sessions (
    id TEXT PRIMARY KEY,
    state TEXT,
    program TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    touched BIGINT NOT NULL,
    version INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS frontdesk_sessions_by_touched ON frontdesk_sessions (touched);
CREATE SEQUENCE IF NOT EXISTS frontdesk_touch;
CREATE TABLE IF NOT EXISTS frontdesk_events (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    event TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE IF NOT EXISTS frontdesk_programs (
    digest TEXT PRIMARY KEY,
    ir TEXT NOT NULL,
    stored_at TIMESTAMPTZ NOT NULL
);
CREATE TABLE IF NOT EXISTS frontdesk_memory (
    scope TEXT NOT NULL,
    owner TEXT NOT NULL,
    path TEXT NOT NULL,
    value TEXT NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (scope, owner, path)
)
"""
_IDLE_LOCK_CONNECTIONS = 4  # connections kept open for later locks


def lock_key(session_id: str) -> int:
    """The advisory-lock key of a session: a signed 64-bit hash of its id."""
    return int.from_bytes(hashlib.blake2b(session_id.encode(), digest_size=8).digest(), "big", signed=True)


class PostgresSessionStore:
    """Sessions and events in two tables; every call is one transaction on the store's connection."""

    def __init__(self, url: str) -> None:
        try:
            import psycopg
        except ImportError as exc:  # the [postgres] extra is not installed
            raise StoreError(install_hint("postgres", "the PostgreSQL session store", "psycopg")) from exc
        self._psycopg = psycopg
        self.url = url
        self._lock = threading.Lock()
        self._idle: list = []  # connections for advisory locks
        try:
            self._connection = psycopg.connect(url, autocommit=True, connect_timeout=10)
            with self._connection.transaction():
                # one process creates the schema at a time
                self._connection.execute("SELECT pg_advisory_xact_lock(7266584701)")
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        self._connection.execute(statement)
        except psycopg.Error as exc:
            raise StoreError(f"cannot open session store {_safe(url)}: {exc}") from exc

    def __repr__(self) -> str:
        return f"PostgresSessionStore({_safe(self.url)!r})"

    @contextmanager
    def _transaction(self) -> Iterator:
        with self._lock:
            db = self._connection
            if db is None:
                raise StoreError(f"session store {_safe(self.url)} is closed")
            if db.closed or db.broken:  # the server restarted or the network failed: connect again
                try:
                    db = self._connection = self._psycopg.connect(self.url, autocommit=True, connect_timeout=5)
                except self._psycopg.Error as exc:
                    raise StoreError(f"session store {_safe(self.url)} is unreachable: {exc}") from exc
            try:
                with db.transaction():
                    yield db
            except self._psycopg.Error as exc:
                raise StoreError(f"session store {_safe(self.url)} failed: {exc}") from exc

    def load(self, session_id: str) -> dict | None:
        return self.load_versioned(session_id)[0]

    def load_versioned(self, session_id: str) -> tuple[dict | None, int]:
        with self._transaction() as db:
            row = db.execute("SELECT state, version FROM frontdesk_sessions WHERE id = %s", (session_id,)).fetchone()
        if row is None:
            return None, 0
        return (json.loads(row[0]) if row[0] is not None else None), row[1]

    def version_of(self, session_id: str) -> int:
        with self._transaction() as db:
            row = db.execute("SELECT version FROM frontdesk_sessions WHERE id = %s", (session_id,)).fetchone()
        return int(row[0]) if row else 0

    def save(self, session_id: str, state: dict) -> None:
        self.save_turn(session_id, state, [])

    def append_events(self, session_id: str, events: list[dict]) -> None:
        event_jsons = encode_events(session_id, events)
        if not event_jsons:
            return
        with self._transaction() as db:
            self._touch(db, session_id)
            self._write_events(db, session_id, event_jsons)

    def save_turn(self, session_id: str, state: dict, events: list[dict],
                  expected_version: int | None = None) -> int:
        state_json = encode_state(session_id, state)
        event_jsons = encode_events(session_id, events)
        with self._transaction() as db:
            version = self._touch(db, session_id)  # the row, locked for this transaction
            if expected_version is not None and expected_version != version:
                raise ConflictError(f"session {session_id!r} is at version {version}, not {expected_version}: "
                                    "someone else saved it since it was loaded")
            db.execute("UPDATE frontdesk_sessions SET state = %s, program = %s, version = %s WHERE id = %s",
                       (state_json, program_of(state), version + 1, session_id))
            if event_jsons:
                self._write_events(db, session_id, event_jsons)
        return version + 1

    @staticmethod
    def _touch(db, session_id: str) -> int:
        """Create the session row if new, mark it updated, and lock it; its version before this write."""
        now = utc_now()
        db.execute(
            "INSERT INTO frontdesk_sessions (id, state, program, created_at, updated_at, touched) "
            "VALUES (%s, NULL, '', %s, %s, nextval('frontdesk_touch')) ON CONFLICT (id) DO UPDATE "
            "SET updated_at = excluded.updated_at, touched = excluded.touched",
            (session_id, now, now),
        )
        return db.execute("SELECT version FROM frontdesk_sessions WHERE id = %s FOR UPDATE",
                          (session_id,)).fetchone()[0]

    @staticmethod
    def _write_events(db, session_id: str, event_jsons: list[str]) -> None:
        last = db.execute("SELECT COALESCE(MAX(seq), 0) FROM frontdesk_events WHERE session_id = %s",
                          (session_id,)).fetchone()[0]
        with db.cursor() as cursor:
            cursor.executemany("INSERT INTO frontdesk_events (session_id, seq, event) VALUES (%s, %s, %s)",
                               [(session_id, seq, text) for seq, text in renumber(event_jsons, last)])

    def events_since(self, session_id: str, after: int, limit: int | None = None) -> list[dict]:
        with self._transaction() as db:
            rows = db.execute("SELECT event FROM frontdesk_events WHERE session_id = %s AND seq > %s "
                              "ORDER BY seq LIMIT %s",
                              (session_id, after, None if limit is None else max(limit, 0))).fetchall()
        return [json.loads(row[0]) for row in rows]

    def events(self, session_id: str) -> list[dict]:
        with self._transaction() as db:
            rows = db.execute("SELECT event FROM frontdesk_events WHERE session_id = %s ORDER BY seq",
                              (session_id,)).fetchall()
        return [json.loads(row[0]) for row in rows]

    def list_sessions(self) -> list[SessionInfo]:
        with self._transaction() as db:
            rows = db.execute("SELECT id, created_at, updated_at, program FROM frontdesk_sessions "
                              "ORDER BY touched DESC").fetchall()
        return [SessionInfo(id=r[0], created_at=r[1], updated_at=r[2], program=r[3]) for r in rows]

    def delete(self, session_id: str) -> None:
        with self._transaction() as db:
            db.execute("DELETE FROM frontdesk_events WHERE session_id = %s", (session_id,))
            db.execute("DELETE FROM frontdesk_sessions WHERE id = %s", (session_id,))

    def expire_idle(self, older_than: float) -> int:
        cutoff = utc_now() - timedelta(seconds=older_than)
        with self._transaction() as db:
            idle = [r[0] for r in db.execute("DELETE FROM frontdesk_sessions WHERE updated_at < %s RETURNING id",
                                             (cutoff,)).fetchall()]
            if idle:
                db.execute("DELETE FROM frontdesk_events WHERE session_id = ANY(%s)", (idle,))
        return len(idle)

    @contextmanager
    def lock(self, session_id: str, timeout: float = DEFAULT_LOCK_TIMEOUT) -> Iterator[None]:
        key = lock_key(session_id)
        connection = self._lock_connection()
        deadline = time.monotonic() + timeout
        pause = 0.002
        try:
            while not connection.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
                if time.monotonic() >= deadline:
                    raise LockTimeout(f"session {session_id!r} is busy: its lock was not free within {timeout} s")
                time.sleep(pause)
                pause = min(pause * 2, 0.05)
        except self._psycopg.Error as exc:
            connection.close()
            raise StoreError(f"session store {_safe(self.url)} failed: {exc}") from exc
        except BaseException:
            self._put_back(connection)
            raise
        try:
            yield
        finally:
            try:
                connection.execute("SELECT pg_advisory_unlock(%s)", (key,))
                self._put_back(connection)
            except self._psycopg.Error:
                connection.close()  # closing the connection drops its locks

    def _lock_connection(self):
        with self._lock:
            if self._idle:
                return self._idle.pop()
        try:
            return self._psycopg.connect(self.url, autocommit=True, connect_timeout=10)
        except self._psycopg.Error as exc:
            raise StoreError(f"session store {_safe(self.url)} failed: {exc}") from exc

    def _put_back(self, connection) -> None:
        with self._lock:
            if self._connection is not None and len(self._idle) < _IDLE_LOCK_CONNECTIONS:
                self._idle.append(connection)
                return
        connection.close()

    def save_program(self, digest: str, ir_json: str) -> None:
        with self._transaction() as db:
            db.execute("INSERT INTO frontdesk_programs (digest, ir, stored_at) VALUES (%s, %s, %s) "
                       "ON CONFLICT (digest) DO NOTHING", (digest, ir_json, utc_now()))

    def load_program(self, digest: str) -> str | None:
        with self._transaction() as db:
            row = db.execute("SELECT ir FROM frontdesk_programs WHERE digest = %s", (digest,)).fetchone()
        return row[0] if row else None

    def memory_store(self) -> "PostgresMemoryStore":
        """Persistent memory (ABL MEMORY persistent paths) in the same database, table frontdesk_memory."""
        return PostgresMemoryStore(self)

    def close(self) -> None:
        with self._lock:
            for connection in [self._connection, *self._idle]:
                if connection is not None:
                    connection.close()
            self._connection = None
            self._idle = []


class PostgresMemoryStore:
    """Remembered values by (scope, owner, path) in the session store's database and connection."""

    def __init__(self, sessions: PostgresSessionStore) -> None:
        self._sessions = sessions

    def get(self, scope: MemoryScope, owner: str, path: str) -> Any | None:
        with self._sessions._transaction() as db:
            row = db.execute("SELECT value FROM frontdesk_memory WHERE scope = %s AND owner = %s AND path = %s",
                             (scope, owner, path)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, scope: MemoryScope, owner: str, path: str, value: Any) -> None:
        text = encode_value(scope, owner, path, value)
        with self._sessions._transaction() as db:
            db.execute("INSERT INTO frontdesk_memory (scope, owner, path, value, updated_at) VALUES (%s, %s, %s, %s, %s) "
                       "ON CONFLICT (scope, owner, path) DO UPDATE SET value = excluded.value, "
                       "updated_at = excluded.updated_at", (scope, owner, path, text, utc_now()))

    def delete(self, scope: MemoryScope, owner: str, path: str) -> None:
        with self._sessions._transaction() as db:
            db.execute("DELETE FROM frontdesk_memory WHERE scope = %s AND owner = %s AND path = %s",
                       (scope, owner, path))

    def items(self, scope: MemoryScope, owner: str, prefix: str = "") -> dict[str, Any]:
        with self._sessions._transaction() as db:
            rows = db.execute("SELECT path, value FROM frontdesk_memory WHERE scope = %s AND owner = %s ORDER BY path",
                              (scope, owner)).fetchall()
        return {path: json.loads(text) for path, text in rows if under(path, prefix)}


def _safe(url: str) -> str:
    """The URL without a password, for messages and logs."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.rsplit('@', 1)[1]}"
    return url
