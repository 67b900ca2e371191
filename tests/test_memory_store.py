"""Persistent memory (ABL MEMORY `persistent`): the same behaviour from every MemoryStore (issue 8)."""

from __future__ import annotations

import pytest

from frontdesk.store.longterm import DictMemoryStore, MemoryStore, SqliteMemoryStore


@pytest.fixture(params=["dict", "sqlite"])
def memory(request, tmp_path):
    if request.param == "dict":
        yield DictMemoryStore()
    else:
        store = SqliteMemoryStore(tmp_path / "memory.sqlite3")
        yield store
        store.close()


def test_values_are_kept_per_scope_and_owner(memory):
    assert isinstance(memory, MemoryStore)
    memory.put("user", "u-1", "preferences.hotel_chain", ["Kestrel Inns"])
    memory.put("user", "u-2", "preferences.hotel_chain", "Other")
    memory.put("project", "bookstore", "exchange_rates.usd", 1.08)
    assert memory.get("user", "u-1", "preferences.hotel_chain") == ["Kestrel Inns"]
    assert memory.get("user", "u-2", "preferences.hotel_chain") == "Other"
    assert memory.get("project", "u-1", "preferences.hotel_chain") is None
    memory.put("user", "u-1", "preferences.hotel_chain", {"chains": []})  # replaced, not added
    assert memory.get("user", "u-1", "preferences.hotel_chain") == {"chains": []}


def test_items_under_a_prefix_and_delete(memory):
    memory.put("user", "u-1", "preferences.seat", "aisle")
    memory.put("user", "u-1", "preferences.meal", "vegetarian")
    memory.put("user", "u-1", "preferencesx", "not under the prefix")
    memory.put("execution_tree", "t-9", "current_quote", 120)
    assert memory.items("user", "u-1", "preferences") == {"preferences.meal": "vegetarian", "preferences.seat": "aisle"}
    assert len(memory.items("user", "u-1")) == 3
    memory.delete("user", "u-1", "preferences.seat")
    memory.delete("user", "u-1", "never.stored")
    assert memory.items("user", "u-1", "preferences") == {"preferences.meal": "vegetarian"}
    assert memory.items("execution_tree", "t-9") == {"current_quote": 120}


@pytest.mark.parametrize("scope, owner, path, value, message", [
    ("team", "u-1", "a", 1, "unknown memory scope"),
    ("user", "", "a", 1, "needs an owner"),
    ("user", "u-1", "a..b", 1, "must be dotted names"),
    ("user", "u-1", "a", object(), "only JSON values"),
    ("user", "u-1", "a", float("nan"), "only JSON values"),
    ("user", "u-1", "a", "x" * 70_000, "larger than 64 KB"),
])
def test_bad_keys_and_values_are_refused_with_a_reason(memory, scope, owner, path, value, message):
    with pytest.raises(ValueError, match=message):
        memory.put(scope, owner, path, value)


def test_sqlite_memory_outlives_the_process_that_wrote_it(tmp_path):
    first = SqliteMemoryStore(tmp_path / "m.sqlite3")
    first.put("user", "u-1", "name", "Grace")
    first.close()
    again = SqliteMemoryStore(tmp_path / "m.sqlite3")
    assert again.get("user", "u-1", "name") == "Grace"
    again.close()


def test_the_engine_hands_its_memory_store_to_every_turn(tmp_path):
    from pathlib import Path

    from frontdesk.lang import load_program
    from frontdesk.runtime.engine import Engine
    from frontdesk.store.memory import MemorySessionStore

    program, _ = load_program(Path(__file__).resolve().parents[1] / "examples" / "bookstore")
    memory = SqliteMemoryStore(tmp_path / "m.sqlite3")
    engine = Engine(program, None, MemorySessionStore(), memory=memory)
    assert engine.memory is memory
    ctx = engine.context(engine.load_state(engine.start().session_id))
    assert ctx.memory is memory
    memory.close()
