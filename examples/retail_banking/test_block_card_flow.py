"""The block_card flow end to end (scripted model, real tools and SQLite): it tells the truth when the tool fails."""

import pathlib
import sqlite3

import pytest

from frontdesk.lang import load_program
from frontdesk.llm.scripted import ScriptedProvider
from frontdesk.runtime.engine import Engine
from frontdesk.store.memory import MemorySessionStore
from frontdesk.testing import load_conversation

HERE = pathlib.Path(__file__).resolve().parent
# The happy path (debit card, lost, a new card, to the address on file) with its scripted model answers.
HAPPY_PATH = load_conversation(HERE / "conversations" / "happy_path.yml")


@pytest.fixture
def database(tmp_path, monkeypatch):
    monkeypatch.setenv("FRONTDESK_EXAMPLE_DB_DIR", str(tmp_path))
    monkeypatch.setenv("FRONTDESK_EXAMPLE_TODAY", "2026-11-22")
    return tmp_path / "retail_banking.db"


def _chat(after_card_chosen=None):
    program, diagnostics = load_program(HERE)
    assert program is not None and not [d for d in diagnostics if d.is_error]
    engine = Engine(program, ScriptedProvider(HAPPY_PATH["llm"]), MemorySessionStore())
    first = engine.start(program_label="test")  # meta's setup creates and seeds the database
    turns = [first]
    for number, line in enumerate(HAPPY_PATH["user"]):
        turns.append(engine.send(first.session_id, line))
        if number == 1 and after_card_chosen is not None:  # after "My debit card"
            after_card_chosen()
    said = [m.text for t in turns for m in t.messages]
    finished = [e for e in engine.store.events(first.session_id)
                if e["type"] == "agent_finished" and e.get("agent") == "block_card"]
    return said, finished


def _card_status(database, last4):
    with sqlite3.connect(database) as connection:
        return connection.execute("SELECT status FROM cards WHERE last_four = ?", (last4,)).fetchone()[0]


def test_blocking_works_and_promises_the_new_card(database):
    said, finished = _chat()
    assert any("Your new card will be delivered to 14 Elmwood Road" in line for line in said)
    assert finished[-1]["data"]["status"] == "success"
    assert _card_status(database, "4821") == "blocked"


def test_when_the_tool_fails_the_customer_is_told_and_no_card_is_promised(database):
    def blocked_meanwhile_in_the_app():
        with sqlite3.connect(database) as connection:
            connection.execute("UPDATE cards SET status = 'blocked' WHERE last_four = '4821'")

    said, finished = _chat(blocked_meanwhile_in_the_app)
    text = "\n".join(said)
    assert "is already blocked" in text
    assert "I'm sorry, I couldn't update your debit card, so no new card has been ordered." in text
    assert "Your new card will be delivered" not in text
    assert finished[-1]["data"]["status"] == "error"
