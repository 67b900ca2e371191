"""Session stores: the protocol, in-memory and SQLite implementations, and `open_store` to pick one by URL."""

from __future__ import annotations

from pathlib import Path

from frontdesk.store.base import ConflictError, LockTimeout, SessionInfo, SessionStore, StoreError
from frontdesk.store.longterm import DictMemoryStore, MemoryStore, SqliteMemoryStore
from frontdesk.store.memory import MemorySessionStore
from frontdesk.store.sqlite import SqliteSessionStore

DEFAULT_STORE_PATH = ".frontdesk/sessions.sqlite3"
SQLITE_URL_PREFIX = "sqlite:///"
SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
ACCEPTED_STORE_FORMS = (
    "'memory' (sessions live only as long as the process), "
    "'sqlite:///path/to/file' (a SQLite file; sqlite:////abs/path for an absolute path), "
    "a plain file path ending in .db, .sqlite or .sqlite3, "
    "'redis://host:port/db' (Redis; ?ttl=SECONDS expires idle sessions, ?prefix=NAME: names its keys), "
    "or 'postgresql://user@host:port/database' (PostgreSQL)"
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
    if text.startswith(("redis://", "rediss://", "unix://")):
        return _open_redis(text)
    if text.startswith("postgresql://"):
        from frontdesk.store.postgres import PostgresSessionStore

        return PostgresSessionStore(text)
    raise ValueError(f"unknown session store {url!r}; accepted forms: {ACCEPTED_STORE_FORMS}")


def _open_redis(url: str) -> SessionStore:
    """A Redis store; the URL's `ttl` and `prefix` query parameters are the store's, the rest redis-py's."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    from frontdesk.store.redis import RedisSessionStore

    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    ttl_text = query.pop("ttl", None)
    prefix = query.pop("prefix", "frontdesk:")
    try:
        ttl = float(ttl_text) if ttl_text else None
    except ValueError:
        raise ValueError(f"store URL: ttl must be a number of seconds, got {ttl_text!r}") from None
    if ttl is not None and ttl <= 0:
        raise ValueError(f"store URL: ttl must be positive, got {ttl_text!r}")
    return RedisSessionStore(urlunsplit(parts._replace(query=urlencode(query))), prefix=prefix, ttl=ttl)


__all__ = [
    "ConflictError",
    "LockTimeout",
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
