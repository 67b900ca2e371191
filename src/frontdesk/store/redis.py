"""A session store in Redis (redis-py): shared by several processes and machines, with idle TTL.

Keys, under a prefix (default `frontdesk:`):
  {p}s:{id}     hash: state (JSON), version, program, created_at, updated_at
  {p}e:{id}     list: the session's events as JSON, in order (an event's seq is its place, from 1)
  {p}lock:{id}  the session's lock: a random token, set with NX and a lease (PX)
  {p}index      sorted set of session ids, scored by a counter bumped on every write (most recent last)
  {p}program:{digest}  a program version's IR (JSON), kept for the sessions that started on it
  {p}m:{scope}:{owner}  hash: persistent memory of one owner, path -> JSON value (never expires)
With a TTL, a session's keys expire after that many seconds without a write.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

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
from frontdesk.extras import install_hint
from frontdesk.store.longterm import MemoryScope, encode_value, under

# Deletes the lock only if it still holds our token: a lock that lapsed and was taken by another
# holder is never released by us.
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
# Extends the lease only while the lock still holds our token.
_RENEW = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end"
_WRITE_ATTEMPTS = 50


class RedisSessionStore:
    """Sessions and events in Redis; every write is one MULTI/EXEC transaction guarded by WATCH."""

    def __init__(self, url: str = "redis://127.0.0.1:6379/0", prefix: str = "frontdesk:",
                 ttl: float | None = None) -> None:
        try:
            import redis
        except ImportError as exc:  # the [redis] extra is not installed
            raise StoreError(install_hint("redis", "the Redis session store", "redis")) from exc
        self._redis_errors = (redis.RedisError,)
        self._watch_error = redis.WatchError
        self.url = url
        self.prefix = prefix
        self.ttl = ttl
        self._leases = LeaseRenewer()
        try:
            self._db = redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=5)
            self._db.ping()
        except redis.RedisError as exc:
            raise StoreError(f"cannot open session store {_safe(url)}: {exc}") from exc
        self._release = self._db.register_script(_RELEASE)
        self._renew = self._db.register_script(_RENEW)

    def __repr__(self) -> str:
        return f"RedisSessionStore({_safe(self.url)!r}, prefix={self.prefix!r})"

    def _s(self, session_id: str) -> str:
        return f"{self.prefix}s:{session_id}"

    def _e(self, session_id: str) -> str:
        return f"{self.prefix}e:{session_id}"

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except self._redis_errors as exc:
            raise StoreError(f"session store {_safe(self.url)} failed: {exc}") from exc

    def load(self, session_id: str) -> dict | None:
        return self.load_versioned(session_id)[0]

    def load_versioned(self, session_id: str) -> tuple[dict | None, int]:
        with self._errors():
            state, version = self._db.hmget(self._s(session_id), "state", "version")
        return (json.loads(state) if state else None), int(version or 0)

    def version_of(self, session_id: str) -> int:
        with self._errors():
            return int(self._db.hget(self._s(session_id), "version") or 0)

    def save(self, session_id: str, state: dict) -> None:
        self.save_turn(session_id, state, [])

    def append_events(self, session_id: str, events: list[dict]) -> None:
        event_jsons = encode_events(session_id, events)
        if event_jsons:
            self._write(session_id, None, None, event_jsons, None)

    def save_turn(self, session_id: str, state: dict, events: list[dict],
                  expected_version: int | None = None) -> int:
        state_json = encode_state(session_id, state)
        event_jsons = encode_events(session_id, events)
        return self._write(session_id, state_json, program_of(state), event_jsons, expected_version)

    def _write(self, session_id: str, state_json: str | None, program: str | None, event_jsons: list[str],
               expected_version: int | None) -> int:
        skey, ekey = self._s(session_id), self._e(session_id)
        with self._errors():
            for _ in range(_WRITE_ATTEMPTS):
                with self._db.pipeline() as pipe:
                    try:
                        pipe.watch(skey, ekey)
                        version = int(pipe.hget(skey, "version") or 0)
                        if expected_version is not None and expected_version != version:
                            raise ConflictError(f"session {session_id!r} is at version {version}, not "
                                                f"{expected_version}: someone else saved it since it was loaded")
                        last = pipe.llen(ekey)
                        created = pipe.hexists(skey, "created_at")
                        now = utc_now().isoformat()
                        pipe.multi()
                        fields = {"updated_at": now}
                        if not created:
                            fields["created_at"] = now
                        if state_json is not None:
                            fields.update(state=state_json, program=program or "", version=version + 1)
                        pipe.hset(skey, mapping=fields)
                        if event_jsons:
                            pipe.rpush(ekey, *(text for _, text in renumber(event_jsons, last)))
                        pipe.zadd(f"{self.prefix}index", {session_id: time.time()})
                        if self.ttl:
                            pipe.pexpire(skey, int(self.ttl * 1000))
                            if event_jsons or last:
                                pipe.pexpire(ekey, int(self.ttl * 1000))
                        pipe.execute()
                        return version + 1 if state_json is not None else version
                    except self._watch_error:
                        continue  # someone wrote the session meanwhile: read again
            raise StoreError(f"session {session_id!r}: too many concurrent writers")

    def events_since(self, session_id: str, after: int, limit: int | None = None) -> list[dict]:
        start = max(after, 0)
        stop = -1 if limit is None else start + max(limit, 0) - 1
        if stop < start and limit is not None:
            return []
        with self._errors():  # an event's seq is its place in the list, from 1
            return [json.loads(text) for text in self._db.lrange(self._e(session_id), start, stop)]

    def events(self, session_id: str) -> list[dict]:
        with self._errors():
            return [json.loads(text) for text in self._db.lrange(self._e(session_id), 0, -1)]

    def list_sessions(self) -> list[SessionInfo]:
        index = f"{self.prefix}index"
        with self._errors():
            ids = [i.decode() for i in self._db.zrevrange(index, 0, -1)]
            sessions = []
            for session_id in ids:
                created, updated, program = self._db.hmget(self._s(session_id), "created_at", "updated_at", "program")
                if created is None:  # expired by its TTL: forget it
                    self._db.zrem(index, session_id)
                    continue
                sessions.append(SessionInfo(id=session_id, created_at=datetime.fromisoformat(created.decode()),
                                            updated_at=datetime.fromisoformat(updated.decode()),
                                            program=(program or b"").decode()))
        return sessions

    def delete(self, session_id: str) -> None:
        with self._errors():
            self._db.delete(self._s(session_id), self._e(session_id))
            self._db.zrem(f"{self.prefix}index", session_id)

    def expire_idle(self, older_than: float) -> int:
        cutoff = utc_now() - timedelta(seconds=older_than)
        count = 0
        for info in self.list_sessions():
            if info.updated_at < cutoff:
                self.delete(info.id)
                count += 1
        return count

    @contextmanager
    def lock(self, session_id: str, timeout: float = DEFAULT_LOCK_TIMEOUT,
             lease: float = DEFAULT_LOCK_LEASE) -> Iterator[None]:
        """SET NX PX with a random token; released only by its holder. A holder that died releases
        by its lease running out."""
        key = f"{self.prefix}lock:{session_id}"
        token = lock_token()
        deadline = time.monotonic() + timeout
        pause = 0.002
        with self._errors():
            while not self._db.set(key, token, nx=True, px=int(lease * 1000)):
                holder = self._db.get(key)
                if holder is not None and holder_is_dead(holder.decode()):
                    # its holder on this machine is gone: take the lock over if it is still the dead one's
                    if self._db.set(key, token, xx=True, px=int(lease * 1000), get=True) == holder:
                        break
                if time.monotonic() >= deadline:
                    raise LockTimeout(f"session {session_id!r} is busy: its lock was not free within {timeout} s")
                time.sleep(pause)
                pause = min(pause * 2, 0.05)

        def renew() -> bool:
            return bool(self._renew(keys=[key], args=[token, int(lease * 1000)]))

        try:
            with self._leases.hold(renew, lease):
                yield
        finally:
            try:
                self._release(keys=[key], args=[token])
            except self._redis_errors:
                pass  # the lease lapses by itself

    def save_program(self, digest: str, ir_json: str) -> None:
        with self._errors():
            self._db.set(f"{self.prefix}program:{digest}", ir_json, nx=True)

    def load_program(self, digest: str) -> str | None:
        with self._errors():
            found = self._db.get(f"{self.prefix}program:{digest}")
        return found.decode() if found is not None else None

    def memory_store(self) -> "RedisMemoryStore":
        """Persistent memory (ABL MEMORY persistent paths) in the same Redis, under the same prefix."""
        return RedisMemoryStore(self)

    def close(self) -> None:
        try:
            self._db.close()
        except self._redis_errors:
            pass


class RedisMemoryStore:
    """Remembered values by (scope, owner, path): one hash per owner, in the session store's Redis."""

    def __init__(self, sessions: RedisSessionStore) -> None:
        self._sessions = sessions

    def _key(self, scope: str, owner: str) -> str:
        return f"{self._sessions.prefix}m:{scope}:{owner}"

    def get(self, scope: MemoryScope, owner: str, path: str) -> Any | None:
        with self._sessions._errors():
            text = self._sessions._db.hget(self._key(scope, owner), path)
        return json.loads(text) if text is not None else None

    def put(self, scope: MemoryScope, owner: str, path: str, value: Any) -> None:
        text = encode_value(scope, owner, path, value)
        with self._sessions._errors():
            self._sessions._db.hset(self._key(scope, owner), path, text)

    def delete(self, scope: MemoryScope, owner: str, path: str) -> None:
        with self._sessions._errors():
            self._sessions._db.hdel(self._key(scope, owner), path)

    def items(self, scope: MemoryScope, owner: str, prefix: str = "") -> dict[str, Any]:
        with self._sessions._errors():
            found = self._sessions._db.hgetall(self._key(scope, owner))
        values = {path.decode(): json.loads(text) for path, text in found.items()}
        return {path: values[path] for path in sorted(values) if under(path, prefix)}


def _safe(url: str) -> str:
    """The URL without a password, for messages and logs."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.rsplit('@', 1)[1]}"
    return url
