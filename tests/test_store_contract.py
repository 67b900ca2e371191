"""The session store contract, one suite run against every store: in memory, SQLite, Redis and PostgreSQL
(the last two against the real servers on 127.0.0.1; skipped, with the reason, when a server is not
reachable). Then the issue's experiment: two processes send to one session at once and lose nothing."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from frontdesk.store import ConflictError, LockTimeout, open_store
from frontdesk.store.memory import MemorySessionStore
from frontdesk.store.sqlite import SqliteSessionStore
from live_stores import postgres_store_url, redis_store_url

@pytest.fixture(scope="module")
def postgres_url():
    """A database of its own for this module, dropped at the end."""
    with postgres_store_url("test") as url:
        yield url


@pytest.fixture
def redis_url():
    with redis_store_url("test") as url:
        yield url


@pytest.fixture(params=["memory", "sqlite", "redis", "postgres"])
def kind(request):
    return request.param


@pytest.fixture
def url(kind, request, tmp_path):
    """The URL of a fresh store of the kind (memory: None, one shared instance)."""
    if kind == "memory":
        return None
    if kind == "sqlite":
        return str(tmp_path / "sessions.sqlite3")
    if kind == "redis":
        return request.getfixturevalue("redis_url")
    base = request.getfixturevalue("postgres_url")
    import psycopg

    with psycopg.connect(base, autocommit=True) as db:  # each test starts from empty tables
        db.execute("DROP TABLE IF EXISTS frontdesk_sessions, frontdesk_events, frontdesk_programs, frontdesk_memory")
    return base


@pytest.fixture
def stores(url):
    """open(): another handle on the same store (another process would hold one like it)."""
    opened = []
    shared = MemorySessionStore() if url is None else None

    def open_one():
        store = shared if shared is not None else open_store(url)
        opened.append(store)
        return store

    yield open_one
    for store in opened:
        store.close()


@pytest.fixture
def store(stores):
    return stores()


def test_load_save_and_versions(store):
    assert store.load("s1") is None and store.load_versioned("s1") == (None, 0)
    assert store.save_turn("s1", {"program": "desk", "n": 1}, []) == 1
    assert store.load_versioned("s1") == ({"program": "desk", "n": 1}, 1)
    assert store.save_turn("s1", {"program": "desk", "n": 2}, [], expected_version=1) == 2
    store.save("s1", {"program": "desk", "n": 3})
    assert store.load_versioned("s1") == ({"program": "desk", "n": 3}, 3)
    loaded = store.load("s1")
    loaded["n"] = 99  # a loaded state is the caller's copy
    assert store.load("s1")["n"] == 3


def test_a_stale_version_is_a_conflict_and_writes_nothing(store):
    store.save_turn("s1", {"n": 1}, [{"seq": 1, "type": "a"}])
    with pytest.raises(ConflictError, match="version 1, not 0"):
        store.save_turn("s1", {"n": 2}, [{"seq": 2, "type": "b"}], expected_version=0)
    assert store.load_versioned("s1") == ({"n": 1}, 1)
    assert [e["type"] for e in store.events("s1")] == ["a"]
    with pytest.raises(ConflictError):  # a session that does not exist yet is at version 0
        store.save_turn("new", {"n": 1}, [], expected_version=4)
    assert store.load("new") is None


def test_the_store_numbers_events_in_the_same_transaction(store):
    # Two writers both numbered their events from 1 (the stale-seq bug): the store renumbers them.
    store.save_turn("s1", {"n": 1}, [{"seq": 1, "type": "a"}, {"seq": 2, "type": "b"}])
    store.save_turn("s1", {"n": 2}, [{"seq": 1, "type": "c"}])
    store.append_events("s1", [{"seq": 7, "type": "d"}])
    store.append_events("s1", [])
    events = store.events("s1")
    assert [(e["seq"], e["type"]) for e in events] == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    store.append_events("other", [{"type": "x"}])  # an event without a seq is stored as it is
    assert store.events("other") == [{"type": "x"}]


def test_events_since_a_seq(store):
    store.save_turn("s1", {"n": 1}, [{"seq": 1, "type": "a"}, {"seq": 2, "type": "b"}])
    store.save_turn("s1", {"n": 2}, [{"seq": 3, "type": "c"}])
    assert [e["type"] for e in store.events_since("s1", 0)] == ["a", "b", "c"]
    assert [e["type"] for e in store.events_since("s1", 2)] == ["c"]
    assert store.events_since("s1", 3) == [] and store.events_since("nobody", 0) == []


def test_list_delete_and_expire_idle(store):
    store.save_turn("old", {"program": "a"}, [{"seq": 1, "type": "x"}])
    store.save_turn("mid", {"program": "b"}, [])
    time.sleep(0.3)
    store.save_turn("new", {"program": "c"}, [])
    listed = store.list_sessions()
    assert [s.id for s in listed] == ["new", "mid", "old"]
    assert listed[0].program == "c" and listed[0].created_at <= listed[0].updated_at
    store.delete("mid")
    assert store.load("mid") is None and [s.id for s in store.list_sessions()] == ["new", "old"]
    assert store.expire_idle(0.2) == 1
    assert store.load("old") is None and store.events("old") == []
    assert [s.id for s in store.list_sessions()] == ["new"]
    assert store.expire_idle(60) == 0 and store.load("new") == {"program": "c"}


def test_the_lock_excludes_other_threads_and_handles(stores):
    """Eight workers on four handles (for SQLite, Redis and PostgreSQL like four processes) each add 1
    ten times under the lock, with the version check: no increment is lost, no conflict is raised."""
    handles = [stores() for _ in range(4)]
    handles[0].save_turn("s1", {"count": 0}, [])
    failures: list[BaseException] = []

    def work(store):
        try:
            for _ in range(10):
                with store.lock("s1", timeout=30):
                    state, version = store.load_versioned("s1")
                    time.sleep(0.001)
                    store.save_turn("s1", {"count": state["count"] + 1}, [{"seq": 1, "type": "inc"}],
                                    expected_version=version)
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(handles[i % 4],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert handles[1].load_versioned("s1") == ({"count": 80}, 81)
    assert [e["seq"] for e in handles[2].events("s1")] == list(range(1, 81))


def test_a_held_lock_times_out_the_next_one_and_is_released_after(stores):
    first, second = stores(), stores()
    with first.lock("s1", timeout=1):
        started = time.monotonic()
        with pytest.raises(LockTimeout, match="busy"):
            with second.lock("s1", timeout=0.2):
                pass
        assert 0.15 <= time.monotonic() - started < 2
        with second.lock("other", timeout=0.2):  # another session's lock is free
            pass
    with second.lock("s1", timeout=0.5):  # released on leaving the block
        pass
    with pytest.raises(RuntimeError):
        with first.lock("s1", timeout=0.5):
            raise RuntimeError("the turn failed")
    with second.lock("s1", timeout=0.5):  # released when the block raised, too
        pass


def test_a_held_lock_is_renewed_while_its_turn_runs(stores, kind):
    if kind in ("memory", "postgres"):
        pytest.skip("an in-process lock and an advisory lock on a live connection have no lease")
    first, second = stores(), stores()
    with first.lock("s1", timeout=1, lease=0.3):
        time.sleep(1.0)  # three leases long: renewed meanwhile
        with pytest.raises(LockTimeout):
            with second.lock("s1", timeout=0.2):
                pass


KILLED_HOLDER = """
import os, signal, sys
from frontdesk.store import open_store

store = open_store(sys.argv[1])
with store.lock("s1", timeout=5):
    print("held", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_the_lock_of_a_killed_process_is_taken_at_once(stores, kind, url, tmp_path):
    """A process SIGKILLed while it holds a session's lock does not block the session for a lease:
    the next process takes the lock (its holder is gone), well before the 15 s lease would lapse."""
    if kind == "memory":
        pytest.skip("an in-process store has no other process")
    script = tmp_path / "holder.py"
    script.write_text(KILLED_HOLDER, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script), url], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "held" and done.returncode == -9, done.stderr
    with stores().lock("s1", timeout=5):  # a LockTimeout here means it waited for the lease
        pass


def test_version_of_reads_the_version_alone(store):
    assert store.version_of("s1") == 0
    store.save_turn("s1", {"n": 1}, [])
    store.save_turn("s1", {"n": 2}, [])
    assert store.version_of("s1") == 2 == store.load_versioned("s1")[1]


def test_program_versions_are_kept_for_every_handle(stores):
    first, second = stores(), stores()
    assert first.load_program("abc123") is None
    first.save_program("abc123", '{"entry": "main"}')
    first.save_program("abc123", '{"entry": "changed"}')  # a digest names one IR: the first stays
    assert second.load_program("abc123") == '{"entry": "main"}'
    assert second.expire_idle(0) == 0 and second.load_program("abc123") == '{"entry": "main"}'


def test_persistent_memory_by_scope_is_kept_where_the_sessions_are(stores):
    """ABL MEMORY persistent paths: (scope, owner, path) -> JSON value, seen by every handle on the store
    (another process's), scopes and owners apart, never expired with idle sessions."""
    first, second = stores(), stores()
    memory, other = first.memory_store(), second.memory_store()
    memory.put("user", "u1", "preferences.hotel_chain", "Hilton")
    memory.put("user", "u1", "preferences.room", {"floor": "high", "beds": 2})
    memory.put("user", "u1", "preferencesx", 1)  # not under preferences.
    memory.put("user", "u2", "preferences.hotel_chain", "Ibis")
    memory.put("project", "u1", "preferences.hotel_chain", "shared")
    memory.put("execution_tree", "tree-1", "case.step", 3)
    assert other.get("user", "u1", "preferences.hotel_chain") == "Hilton"
    assert other.items("user", "u1", "preferences") == {"preferences.hotel_chain": "Hilton",
                                                         "preferences.room": {"floor": "high", "beds": 2}}
    assert other.get("user", "u2", "preferences.hotel_chain") == "Ibis"
    assert other.get("project", "u1", "preferences.hotel_chain") == "shared"
    assert other.items("execution_tree", "tree-1") == {"case.step": 3}
    other.put("user", "u1", "preferences.hotel_chain", "Marriott")
    assert memory.get("user", "u1", "preferences.hotel_chain") == "Marriott"
    memory.delete("user", "u1", "preferences.room")
    assert other.get("user", "u1", "preferences.room") is None
    assert first.expire_idle(0) == 0 and other.get("user", "u2", "preferences.hotel_chain") == "Ibis"
    with pytest.raises(ValueError, match="scope"):
        memory.put("galaxy", "u1", "x", 1)
    with pytest.raises(ValueError, match="JSON"):
        memory.put("user", "u1", "x", object())


def test_an_engine_remembers_through_its_store(stores, tmp_path):
    """An engine with no memory given keeps persistent memory in its session store: a second engine on
    another handle (a restarted process) recalls what the first remembered."""
    from frontdesk.runtime.engine import Engine
    from frontdesk.ir.models import Program

    program = Program(language="adl", entry="main", agents={})
    first = Engine(program, None, stores())
    first.memory.put("user", "alice", "preferences.city", "Lisbon")
    again = Engine(program, None, stores())
    assert again.memory.get("user", "alice", "preferences.city") == "Lisbon"


def test_redis_sessions_expire_by_ttl(redis_url):
    store = open_store(redis_url + "&ttl=0.3")
    try:
        store.save_turn("s1", {"n": 1}, [{"seq": 1, "type": "a"}])
        assert store.load("s1") == {"n": 1}
        time.sleep(0.5)
        assert store.load("s1") is None and store.events("s1") == []
        assert store.list_sessions() == []
    finally:
        store.close()


def test_bad_store_urls_are_clear_errors():
    with pytest.raises(ValueError, match="ttl must be a number"):
        open_store("redis://127.0.0.1:6379/0?ttl=soon")
    with pytest.raises(ValueError, match="postgresql://"):
        open_store("mysql://x")


def test_a_version_1_sqlite_file_is_upgraded(tmp_path):
    import sqlite3

    path = tmp_path / "old.sqlite3"
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE sessions (id TEXT PRIMARY KEY, state TEXT, program TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL, updated_at TEXT NOT NULL, touched INTEGER NOT NULL);
        CREATE TABLE events (session_id TEXT NOT NULL, seq INTEGER NOT NULL, event TEXT NOT NULL,
            PRIMARY KEY (session_id, seq));
        INSERT INTO sessions VALUES ('s1', '{"n": 1}', '', '2026-01-01T00:00:00+00:00',
            '2026-01-01T00:00:00+00:00', 1);
        PRAGMA user_version = 1;
    """)
    db.close()
    store = SqliteSessionStore(path)
    try:
        assert store.load_versioned("s1") == ({"n": 1}, 0)
        assert store.save_turn("s1", {"n": 2}, [], expected_version=0) == 1
    finally:
        store.close()


# ---- the experiment: two processes, one session ---------------------------------------------

AGENTS = """
main:
  type: flow agent
  steps:
    - label: top
    - user
    - call: pause
    - bot: "noted"
    - next: top
"""
TOOLS = '''
import time


def pause():
    """Takes a while, like a real back end."""
    time.sleep(0.05)
    return {"paused": True}
'''
WORKER = '''
import sys, time
from frontdesk.lang import load_program
from frontdesk.runtime.engine import Engine
from frontdesk.store import open_store

folder, url, session, tag, count, start_at = sys.argv[1:7]
program, _ = load_program(folder)
engine = Engine(program, None, open_store(url))
while time.time() < float(start_at):
    time.sleep(0.005)
for n in range(int(count)):
    engine.send(session, f"{tag}-{n}")
engine.store.close()
'''


def two_processes_send(tmp_path: Path, url: str, count: int = 30) -> tuple[dict, list[dict]]:
    """Start a session, then two processes each send `count` messages to it at the same time."""
    from frontdesk.lang import load_program
    from frontdesk.runtime.engine import Engine

    folder = tmp_path / "program"
    folder.mkdir()
    (folder / "agents.yml").write_text(textwrap.dedent(AGENTS), encoding="utf-8")
    (folder / "tools.py").write_text(TOOLS, encoding="utf-8")
    (tmp_path / "worker.py").write_text(WORKER, encoding="utf-8")
    program, diagnostics = load_program(folder)
    assert program is not None, [d.format() for d in diagnostics]
    store = open_store(url)
    try:
        session = Engine(program, None, store).start(program_label="pauser").session_id
        start_at = str(time.time() + 1.5)  # both are loaded and running by then
        workers = [subprocess.Popen([sys.executable, str(tmp_path / "worker.py"), str(folder), url, session, tag,
                                     str(count), start_at], stderr=subprocess.PIPE, text=True)
                   for tag in ("A", "B")]
        for worker in workers:
            _, err = worker.communicate(timeout=120)
            assert worker.returncode == 0, err
        return store.load(session), store.events(session)
    finally:
        store.close()


def assert_nothing_lost(state: dict, events: list[dict], count: int = 30) -> None:
    said = [h["text"] for h in state["history"] if h["role"] == "user"]
    assert len(said) == 2 * count
    for tag in ("A", "B"):  # every message, each process's in the order it sent them
        assert [t for t in said if t.startswith(tag)] == [f"{tag}-{n}" for n in range(count)]
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(1, len(events) + 1))
    assert sum(e["type"] == "user_message" for e in events) == 2 * count
    assert state["event_seq"] == len(events)


@pytest.mark.parametrize("backend", ["sqlite", "redis", "postgres"])
def test_two_processes_sending_to_one_session_lose_no_turn(backend, tmp_path, request):
    if backend == "sqlite":
        url = str(tmp_path / "sessions.sqlite3")
    elif backend == "redis":
        url = request.getfixturevalue("redis_url")
    else:
        url = request.getfixturevalue("postgres_url")
    state, events = two_processes_send(tmp_path, url)
    assert_nothing_lost(state, events)
