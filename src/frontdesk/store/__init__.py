"""Session stores: the protocol, in-memory and SQLite implementations, and `open_store` to pick one by URL."""

from __future__ import annotations

from pathlib import Path

from frontdesk.store.base import SessionInfo, SessionStore, StoreError
from frontdesk.store.longterm import DictMemoryStore, MemoryStore, SqliteMemoryStore
from frontdesk.store.memory import MemorySessionStore
from frontdesk.store.sqlite import SqliteSessionStore

DEFAULT_STORE_PATH = ".frontdesk/sessions.sqlite3"
SQLITE_URL_PREFIX = "sqlite:///"
SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
ACCEPTED_STORE_FORMS = (
    "'memory' (sessions live only as long as the process), "
    "'sqlite:///path/to/file' (a SQLite file; sqlite:////abs/path for an absolute path), "
    "or a plain file path ending in .db, .sqlite or .sqlite3"
)


def open_store(url: str) -> SessionStore:
    """The session store a URL names: 'memory', 'sqlite:///path', or a path ending in .db/.sqlite/.sqlite3."""
    text = str(url).strip()
    if text in ("memory", "memory:"):
        return MemorySessionStore()
    if text.startswith(SQLITE_URL_PREFIX):
        path = text[len(SQLITE_URL_PREFIX):]
        if not path:
            raise ValueError(f"store URL {url!r} names no file; accepted forms: {ACCEPTED_STORE_FORMS}")
        return SqliteSessionStore(path)
    if Path(text).suffix.lower() in SQLITE_SUFFIXES:
        return SqliteSessionStore(text)
    raise ValueError(f"unknown session store {url!r}; accepted forms: {ACCEPTED_STORE_FORMS}")


__all__ = [
    "DEFAULT_STORE_PATH",
    "DictMemoryStore",
    "MemoryStore",
    "SqliteMemoryStore",
    "MemorySessionStore",
    "SessionInfo",
    "SessionStore",
    "SqliteSessionStore",
    "StoreError",
    "open_store",
]
