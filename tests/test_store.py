"""Tests for the session stores: shared behaviour over memory and SQLite, SQLite persistence, open_store."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from frontdesk.lang import load_program
from frontdesk.runtime.engine import Engine, SessionNotFound

from frontdesk.store import (
    DEFAULT_STORE_PATH,
    MemorySessionStore,
    SessionStore,
    SqliteSessionStore,
    StoreError,
    open_store,
)

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture(params=["memory", "sqlite"])
def store(request, tmp_path):
    if request.param == "memory":
        opened = MemorySessionStore()
    else:
        opened = SqliteSessionStore(tmp_path / "nested" / "folder" / "sessions.sqlite3")
    yield opened
    opened.close()


def test_stores_follow_the_protocol(store):
    assert isinstance(store, SessionStore)


def test_round_trip(store):
    state = {"program": "acme", "slots": {"name": "Ada", "items": [1, 2.5, None, True]}, "text": "héllo"}
    store.save("s1", state)
    assert store.load("s1") == state


def test_missing_session_loads_none_and_has_no_events(store):
    assert store.load("nope") is None
    assert store.events("nope") == []
    store.delete("nope")  # deleting a missing session is fine


def test_save_replaces_the_whole_state(store):
    store.save("s1", {"program": "acme", "a": 1, "b": 2})
    store.save("s1", {"program": "acme", "c": 3})
    assert store.load("s1") == {"program": "acme", "c": 3}
    assert [info.id for info in store.list_sessions()] == ["s1"]


def test_events_keep_their_order_across_appends(store):
    store.append_events("s1", [{"type": "user", "n": 1}, {"type": "bot", "n": 2}])
    store.append_events("s1", [])
    store.append_events("s1", [{"type": "user", "n": 3}])
    store.append_events("other", [{"type": "user", "n": 99}])
    assert [event["n"] for event in store.events("s1")] == [1, 2, 3]
    assert store.events("other") == [{"type": "user", "n": 99}]


def test_list_sessions_most_recently_updated_first(store):
    store.save("first", {"program": "alpha"})
    store.save("second", {"program": "beta"})
    store.save("third", {})
    listed = store.list_sessions()
    assert [info.id for info in listed] == ["third", "second", "first"]
    assert [info.program for info in listed] == ["", "beta", "alpha"]
    assert all(info.updated_at >= info.created_at for info in listed)

    created_before = listed[-1].created_at
    store.append_events("first", [{"type": "user"}])
    listed = store.list_sessions()
    assert [info.id for info in listed] == ["first", "third", "second"]
    assert listed[0].created_at == created_before


def test_delete_removes_state_and_events(store):
    store.save("s1", {"program": "acme"})
    store.append_events("s1", [{"type": "user"}])
    store.save("s2", {"program": "acme"})
    store.delete("s1")
    assert store.load("s1") is None
    assert store.events("s1") == []
    assert [info.id for info in store.list_sessions()] == ["s2"]
    store.append_events("s1", [{"type": "again"}])
    assert store.events("s1") == [{"type": "again"}]


def test_callers_cannot_mutate_stored_state_or_events(store):
    state = {"slots": {"items": [1]}}
    store.save("s1", state)
    state["slots"]["items"].append(2)
    loaded = store.load("s1")
    assert loaded == {"slots": {"items": [1]}}
    loaded["slots"]["items"].append(3)
    assert store.load("s1") == {"slots": {"items": [1]}}

    event = {"data": {"x": [1]}}
    store.append_events("s1", [event])
    event["data"]["x"].append(2)
    store.events("s1")[0]["data"]["x"].append(3)
    assert store.events("s1") == [{"data": {"x": [1]}}]


def test_unserialisable_state_is_rejected_and_nothing_is_stored(store):
    with pytest.raises(StoreError, match="not JSON-serialisable"):
        store.save("s1", {"when": object()})
    with pytest.raises(StoreError, match="event 2 must be a dict"):
        store.append_events("s1", [{"ok": 1}, "not a dict"])
    assert store.load("s1") is None
    assert store.events("s1") == []


def test_concurrent_appends_from_threads_lose_nothing(store):
    def worker(worker_id: int) -> None:
        for n in range(20):
            store.append_events("shared", [{"worker": worker_id, "n": n}])

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    events = store.events("shared")
    assert len(events) == 80
    for worker_id in range(4):
        assert [e["n"] for e in events if e["worker"] == worker_id] == list(range(20))


def test_sqlite_persists_across_store_instances(tmp_path):
    path = tmp_path / "sessions.sqlite3"
    first = SqliteSessionStore(path)
    first.save("s1", {"program": "acme", "turn": 3})
    first.append_events("s1", [{"n": 1}, {"n": 2}])
    first.close()

    second = SqliteSessionStore(path)
    try:
        assert second.load("s1") == {"program": "acme", "turn": 3}
        assert second.events("s1") == [{"n": 1}, {"n": 2}]
        second.append_events("s1", [{"n": 3}])
        assert [e["n"] for e in second.events("s1")] == [1, 2, 3]
        assert [(info.id, info.program) for info in second.list_sessions()] == [("s1", "acme")]
    finally:
        second.close()


def test_sqlite_store_refuses_calls_after_close(tmp_path):
    store = SqliteSessionStore(tmp_path / "s.db")
    store.close()
    store.close()  # closing twice is harmless
    with pytest.raises(StoreError, match="closed"):
        store.load("s1")


def test_sqlite_uses_wal_mode(tmp_path):
    store = SqliteSessionStore(tmp_path / "s.db")
    try:
        with store._transaction() as db:
            assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        store.close()


@pytest.mark.parametrize("url", ["memory", "memory:", " memory "])
def test_open_store_memory(url):
    assert isinstance(open_store(url), MemorySessionStore)


@pytest.mark.parametrize("name", ["a.db", "b.sqlite", "c.SQLITE3"])
def test_open_store_plain_paths(tmp_path, name):
    store = open_store(str(tmp_path / "sub" / name))
    try:
        assert isinstance(store, SqliteSessionStore)
        assert (tmp_path / "sub" / name).exists()
    finally:
        store.close()


def test_open_store_sqlite_url(tmp_path):
    path = tmp_path / "x" / "store.data"
    store = open_store(f"sqlite:///{path}")  # path is absolute, so this is sqlite:////...
    try:
        assert isinstance(store, SqliteSessionStore)
        store.save("s", {})
        assert path.exists()
    finally:
        store.close()


@pytest.mark.parametrize("url", ["postgres://db/x", "sessions.json", "sqlite:///", "", "redis:"])
def test_open_store_rejects_unknown_forms(url):
    with pytest.raises(ValueError, match="accepted forms: 'memory'"):
        open_store(url)


def test_default_store_path_opens_a_sqlite_store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store = open_store(DEFAULT_STORE_PATH)
    try:
        assert isinstance(store, SqliteSessionStore)
        assert (tmp_path / ".frontdesk" / "sessions.sqlite3").exists()
    finally:
        store.close()


def test_save_turn_writes_state_and_events_together_or_not_at_all(tmp_path):
    from frontdesk.store.base import StoreError
    from frontdesk.store.memory import MemorySessionStore
    from frontdesk.store.sqlite import SqliteSessionStore

    for store in (MemorySessionStore(), SqliteSessionStore(tmp_path / "turns.sqlite3")):
        store.save_turn("s1", {"turn": 1}, [{"type": "a"}, {"type": "b"}])
        assert store.load("s1") == {"turn": 1}
        assert [e["type"] for e in store.events("s1")] == ["a", "b"]
        with pytest.raises(StoreError):
            store.save_turn("s1", {"turn": 2}, [{"type": "c", "bad": float("nan")}])
        assert store.load("s1") == {"turn": 1}  # the failed turn left nothing behind
        assert len(store.events("s1")) == 2


# -- hostile conditions --------------------------------------------------------------------

_WRITER = """
import sys
from frontdesk.store.sqlite import SqliteSessionStore
path, who = sys.argv[1], sys.argv[2]
failures = 0
for i in range(60):
    try:
        store = SqliteSessionStore(path)
        store.save_turn(f"{who}-{i % 3}", {"program": "p", "n": i}, [{"type": "x", "i": i}])
        store.load(f"{who}-{i % 3}")
        store.close()
    except Exception as exc:
        failures += 1
        print(type(exc).__name__, exc)
print("failures", failures)
"""


def test_several_processes_open_and_write_one_sqlite_store(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "shared.sqlite3"
    workers = [subprocess.Popen([sys.executable, "-c", _WRITER, str(path), who], stdout=subprocess.PIPE, text=True)
               for who in "abcd"]
    outputs = [w.communicate(timeout=120)[0] for w in workers]
    assert all(o.strip().endswith("failures 0") for o in outputs), outputs  # none saw "database is locked"
    store = SqliteSessionStore(path)
    assert len(store.list_sessions()) == 12
    assert sum(len(store.events(s.id)) for s in store.list_sessions()) == 240


def test_a_file_that_is_not_a_database_is_a_store_error(tmp_path):
    path = tmp_path / "notes.sqlite3"
    path.write_text("not a database\n" * 200, encoding="utf-8")
    with pytest.raises(StoreError, match="file is not a database"):
        open_store(str(path))


def test_state_with_lone_surrogates_is_stored(store):
    store.save_turn("s", {"program": "p", "text": "half \ud83d emoji"}, [{"type": "x", "text": "\udcff"}])
    assert store.load("s")["text"] == "half \ud83d emoji"
    assert store.events("s")[0]["text"] == "\udcff"


def test_a_session_stored_by_the_previous_version_loads_and_goes_on():
    """State version 1 had an `ended` flag and no user, channel or status (issue 8)."""
    from frontdesk.runtime.state import STATE_VERSION, load_state

    program, _ = load_program(EXAMPLES / "bookstore")
    store = MemorySessionStore()
    engine = Engine(program, None, store)
    sid = engine.start(user_id="u-17", channel="test").session_id
    state = store.load(sid)
    assert (state["version"], state["status"], state["user_id"], state["channel"]) == (STATE_VERSION, "waiting",
                                                                                       "u-17", "test")
    old = {k: v for k, v in state.items() if k not in ("status", "user_id", "channel")}
    old.update(version=1, ended=False)
    store.save_turn(sid, old, [])
    result = engine.send(sid, "Which books do you have?")  # (a goodbye would end it: issue 25)
    assert result.messages and not result.ended
    assert store.load(sid)["version"] == STATE_VERSION and store.load(sid)["status"] == "waiting"
    assert load_state({**old, "ended": True}).status == "ended"
    future = {**old, "version": STATE_VERSION + 1}
    store.save_turn(sid, future, [])
    with pytest.raises(SessionNotFound, match="newer Frontdesk"):
        engine.send(sid, "hello")
