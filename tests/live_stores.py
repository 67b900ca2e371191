"""The real Redis and PostgreSQL servers of the tests: a key prefix or a database of a test's own,
removed afterwards; the test is skipped, with the reason, when the server is not reachable."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

REDIS_URL = "redis://127.0.0.1:6379/0"
POSTGRES_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
RUN = uuid.uuid4().hex[:8]  # names this test run's keys and databases


def redis_unreachable() -> str | None:
    """Why the tests cannot use Redis, or None."""
    try:
        import redis
    except ImportError:
        return "the 'redis' package is not installed"
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping()
    except redis.RedisError as exc:
        return f"no Redis server at {REDIS_URL}: {exc}"
    return None


@contextmanager
def redis_store_url(tag: str) -> Iterator[str]:
    """A Redis store URL whose keys (under a prefix of their own) are deleted at the end."""
    reason = redis_unreachable()
    if reason:
        pytest.skip(reason)
    import redis

    prefix = f"frontdesk-{tag}-{RUN}-{uuid.uuid4().hex[:6]}:"
    try:
        yield f"{REDIS_URL}?prefix={prefix}"
    finally:
        client = redis.Redis.from_url(REDIS_URL)
        keys = list(client.scan_iter(f"{prefix}*"))
        if keys:
            client.delete(*keys)
        client.close()


@contextmanager
def postgres_store_url(tag: str) -> Iterator[str]:
    """The URL of a PostgreSQL database of its own, dropped at the end."""
    try:
        import psycopg
    except ImportError:
        pytest.skip("psycopg 3 is not installed")
    try:
        admin = psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True, connect_timeout=2)
    except psycopg.Error as exc:
        pytest.skip(f"no PostgreSQL server at {POSTGRES_ADMIN_URL}: {exc}")
    name = f"frontdesk_{tag}_{RUN}_{uuid.uuid4().hex[:6]}"
    admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgresql://postgres@127.0.0.1:5432/{name}"
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


STORE_KINDS = ("memory", "sqlite", "redis", "postgres")


@contextmanager
def fresh_store(kind: str, folder, tag: str):
    """An empty session store of the kind (one of STORE_KINDS), closed at the end: SQLite in `folder`,
    Redis under a prefix and PostgreSQL in a database of the test's own."""
    from frontdesk.store import open_store
    from frontdesk.store.memory import MemorySessionStore
    from frontdesk.store.sqlite import SqliteSessionStore

    if kind == "memory":
        yield MemorySessionStore()
        return
    if kind == "sqlite":
        opened = SqliteSessionStore(str(folder / "sessions.sqlite3"))
    else:
        urls = redis_store_url if kind == "redis" else postgres_store_url
        with urls(tag) as url:
            opened = open_store(url)
            try:
                yield opened
            finally:
                opened.close()
        return
    try:
        yield opened
    finally:
        opened.close()
