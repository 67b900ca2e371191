"""Persistent memory: facts an agent keeps beyond one session (ABL's MEMORY `persistent` paths), by scope
and owner: a user's facts across their sessions, a project's facts for everyone, and an execution tree's
facts across one handoff tree."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any, Literal, Protocol, get_args, runtime_checkable

from frontdesk.store.base import StoreError, utc_now

MemoryScope = Literal["user", "project", "execution_tree"]
SCOPES: tuple[str, ...] = get_args(MemoryScope)
MAX_VALUE_BYTES = 64 * 1024  # one remembered value, as JSON


@runtime_checkable
class MemoryStore(Protocol):
    """Remembered values, each under (scope, owner, path): owner is the user id, the project name or the
    execution tree's id; path is a dotted name such as `preferences.hotel_chain`."""

    def get(self, scope: MemoryScope, owner: str, path: str) -> Any | None: ...

    def put(self, scope: MemoryScope, owner: str, path: str, value: Any) -> None: ...

    def delete(self, scope: MemoryScope, owner: str, path: str) -> None: ...

    def items(self, scope: MemoryScope, owner: str, prefix: str = "") -> dict[str, Any]:
        """Every remembered path of an owner under `prefix` (all of them for ""), with its value."""
        ...


def encode_value(scope: str, owner: str, path: str, value: Any) -> str:
    """Check a key and encode a value as JSON; ValueError says what is wrong."""
    if scope not in SCOPES:
        raise ValueError(f"unknown memory scope {scope!r}; use one of {', '.join(SCOPES)}")
    if not owner:
        raise ValueError(f"a {scope} memory needs an owner (a user id, a project name or an execution id)")
    if not path or any(not part for part in path.split(".")):
        raise ValueError(f"memory path {path!r} must be dotted names, e.g. preferences.hotel_chain")
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"only JSON values can be remembered ({path}: {exc})") from exc
    if len(text.encode("utf-8")) > MAX_VALUE_BYTES:
        raise ValueError(f"the value for {path} is larger than {MAX_VALUE_BYTES // 1024} KB")
    return text


def under(path: str, prefix: str) -> bool:
    """Whether dotted `path` is `prefix` or lies below it (every path is under \"\")."""
    return not prefix or path == prefix or path.startswith(prefix.rstrip(".") + ".")


class DictMemoryStore:
    """Persistent memory that lasts as long as the process (tests, a single chat)."""

    def __init__(self) -> None:
        self._values: dict[tuple[str, str, str], str] = {}
        self._lock = threading.Lock()

    def get(self, scope: MemoryScope, owner: str, path: str) -> Any | None:
        with self._lock:
            text = self._values.get((scope, owner, path))
        return json.loads(text) if text is not None else None

    def put(self, scope: MemoryScope, owner: str, path: str, value: Any) -> None:
        text = encode_value(scope, owner, path, value)
        with self._lock:
            self._values[(scope, owner, path)] = text

    def delete(self, scope: MemoryScope, owner: str, path: str) -> None:
        with self._lock:
            self._values.pop((scope, owner, path), None)

    def items(self, scope: MemoryScope, owner: str, prefix: str = "") -> dict[str, Any]:
        with self._lock:
            found = {p: t for (s, o, p), t in self._values.items() if s == scope and o == owner and under(p, prefix)}
        return {path: json.loads(text) for path, text in sorted(found.items())}


_SCHEMA = """
CREATE TABLE IF NOT EXISTS memory (
    scope TEXT NOT NULL,
    owner TEXT NOT NULL,
    path TEXT NOT NULL,
    value TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (scope, owner, path)
);
"""


class SqliteMemoryStore:
    """Persistent memory in a SQLite file (it may be the session store's file: the table is its own)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path) if str(path) == ":memory:" else str(Path(path).expanduser())
        self._lock = threading.Lock()
        try:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=5.0)
            self._db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the memory store {self.path}: {exc}") from exc

    def _run(self, sql: str, params: tuple = ()) -> list[tuple]:
        with self._lock:
            try:
                return self._db.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"memory store {self.path}: {exc}") from exc

    def get(self, scope: MemoryScope, owner: str, path: str) -> Any | None:
        rows = self._run("SELECT value FROM memory WHERE scope = ? AND owner = ? AND path = ?", (scope, owner, path))
        return json.loads(rows[0][0]) if rows else None

    def put(self, scope: MemoryScope, owner: str, path: str, value: Any) -> None:
        text = encode_value(scope, owner, path, value)
        self._run("INSERT INTO memory (scope, owner, path, value, updated_at) VALUES (?, ?, ?, ?, ?) "
                  "ON CONFLICT (scope, owner, path) DO UPDATE SET value = excluded.value, "
                  "updated_at = excluded.updated_at", (scope, owner, path, text, utc_now().isoformat()))

    def delete(self, scope: MemoryScope, owner: str, path: str) -> None:
        self._run("DELETE FROM memory WHERE scope = ? AND owner = ? AND path = ?", (scope, owner, path))

    def items(self, scope: MemoryScope, owner: str, prefix: str = "") -> dict[str, Any]:
        rows = self._run("SELECT path, value FROM memory WHERE scope = ? AND owner = ? ORDER BY path", (scope, owner))
        return {path: json.loads(text) for path, text in rows if under(path, prefix)}

    def close(self) -> None:
        with self._lock:
            self._db.close()
