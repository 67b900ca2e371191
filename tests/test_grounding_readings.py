"""A category in other words (runtime/grounding.py, `category_reading`): for a tool that changes nothing,
a short free-text argument the model reads out of the user's words ("romance" for "a good love story")
is kept as its reading, with a `value_read` event; names, numbers, identifiers, dates stay the user's
exactly, and a tool that changes something stays strict. With the local embedding model, a reading
unrelated to the user's latest message is vetoed. A refused argument is never replaced by a value the
agent held from before: the tool is not run and the model is told to ask."""

from __future__ import annotations

import textwrap
from datetime import datetime
from pathlib import Path

import pytest

from frontdesk.lang import load_program
from frontdesk.llm.scripted import ScriptedProvider
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.grounding import READING_FLOOR, reading_shape, reading_similarity
from frontdesk.store.memory import MemorySessionStore

SHOP = """
main:
  type: llm agent
  description: Recommends books and orders them.
  args: [genre]
  prompt: |
    Call find_bestsellers with the genre the user wants, look_up_author with an author's name,
    top_books with how many, and place_order with the genre to order a surprise book of it.
  uses:
    - find_bestsellers
    - look_up_author
    - top_books
    - place_order
"""

TOOLS = '''
def find_bestsellers(genre: str):
    """Find the best-selling books of a genre, e.g. "mystery", "fantasy" or "science fiction"."""
    return [{"status": "success", "msg": f"Best sellers in {genre}: Book A, Book B"}, {"arg": "genre", "value": genre}]


def look_up_author(author_name: str):
    """Find the books of an author."""
    return [{"status": "success", "msg": f"Books by {author_name}: Book C"}]


def top_books(count: int = 3):
    """The best-selling books of the shop."""
    return [{"status": "success", "msg": f"The top {count} books"}]


def place_order(genre: str):
    """Order a surprise book of a genre."""
    return [{"status": "success", "msg": f"Ordered a {genre} book"}]
'''


def load(tmp_path: Path):
    (tmp_path / "agents.yml").write_text(textwrap.dedent(SHOP), encoding="utf-8")
    (tmp_path / "tools.py").write_text(TOOLS, encoding="utf-8")
    program, diags = load_program(tmp_path)
    assert program is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    return program


def call(tool: str, **args) -> dict:
    return {"purpose": "reason", "call": tool, "with": args}


def reply(text: str) -> dict:
    return {"purpose": "reason", "reply": text}


def run(tmp_path: Path, script: list[dict], messages: list[str], understanding=None):
    llm = ScriptedProvider([reply("Hi! What are you looking for?"), *script])  # the agent speaks first
    engine = Engine(load(tmp_path), llm, MemorySessionStore(), understanding=understanding)
    sid = engine.start().session_id
    turns = [engine.send(sid, m) for m in messages]
    return llm, turns


def events(turn, kind: str) -> list[dict]:
    return [e.data for e in turn.events if e.type == kind]


def tools_run(turn) -> list[tuple[str, dict]]:
    return [(e["tool"], e["args"]) for e in events(turn, "tool_call")]


def told(llm: ScriptedProvider) -> list[str]:
    """What the tool messages of the last request said to the model."""
    return [m.content for m in llm.calls[-1].messages if m.role == "tool"]


# ---- the shape of a reading ---------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["romance", "mystery", "science fiction", "cooking", "true crime", "self-help"])
def test_a_category_in_common_lower_case_words_is_shaped_as_a_reading(value):
    assert reading_shape(value, datetime(2026, 11, 28)) is None


@pytest.mark.parametrize("value", ["Alex Morgan", "Alex", 4242, "4242", "ZZ-9999", "2031-02-29", "alex@example.com",
                                   "+15551234567", "tomorrow", "next week", "march", "them", "a very long description "
                                   "of it", True, ["romance"]])
def test_a_name_a_number_an_identifier_a_date_or_an_address_is_no_reading(value):
    assert reading_shape(value, datetime(2026, 11, 28)) is not None


# ---- a read-only tool takes the model's reading (no embedding model: the shape decides) ----------------

@pytest.mark.parametrize("message, genre", [
    ("I'm in the mood for a good love story.", "romance"),
    ("Hmm, make it a crime story instead.", "mystery"),
    ("Which cookery books sell best?", "cooking"),
    ("what sci-fi is selling well?", "science fiction"),
])
def test_a_read_only_tool_takes_a_category_read_from_the_users_words(tmp_path, message, genre):
    llm, (turn,) = run(tmp_path, [call("find_bestsellers", genre=genre), reply("Here you are. Anything else?")],
                       [message])
    assert tools_run(turn) == [("find_bestsellers", {"genre": genre})]
    assert not events(turn, "value_refused")
    (read,) = events(turn, "value_read")
    assert read["values"]["genre"]["value"] == genre
    assert read["why"] == "read from the user's words"
    assert read["where"] == "arguments of find_bestsellers"


@pytest.mark.parametrize("genre", ["Alex Morgan", "ZZ-9999", "2031-02-29", "tomorrow"])
def test_an_invented_name_identifier_or_date_is_still_refused_for_a_read_only_tool(tmp_path, genre):
    llm, (turn,) = run(tmp_path, [call("find_bestsellers", genre=genre), reply("Which genre would you like?")],
                       ["I'm in the mood for a good love story."])
    assert tools_run(turn) == []
    assert set(events(turn, "value_refused")[0]["values"]) == {"genre"}
    assert not events(turn, "value_read")


def test_an_invented_number_and_a_name_parameter_stay_strict(tmp_path):
    llm, (first, second) = run(tmp_path, [
        call("top_books", count=4242), reply("How many?"),
        call("look_up_author", author_name="romance"), reply("Which author?"),
    ], ["what are your top books?", "I'm in the mood for a good love story."])
    assert tools_run(first) == [] and tools_run(second) == []
    assert set(events(first, "value_refused")[0]["values"]) == {"count"}
    assert set(events(second, "value_refused")[0]["values"]) == {"author_name"}  # a name is the user's exactly


def test_a_value_the_user_ruled_out_is_no_reading(tmp_path):
    llm, (turn,) = run(tmp_path, [call("find_bestsellers", genre="romance"), reply("Which genre then?")],
                       ["Anything but romance, please."])
    assert tools_run(turn) == []
    assert set(events(turn, "value_refused")[0]["values"]) == {"genre"}


def test_a_tool_that_changes_something_takes_no_reading(tmp_path):
    llm, (turn,) = run(tmp_path, [call("place_order", genre="romance"), reply("Which genre should I order?")],
                       ["Order me a good love story."])
    assert tools_run(turn) == []
    assert set(events(turn, "value_refused")[0]["values"]) == {"genre"}
    assert not events(turn, "value_read")


# ---- a refused value is never replaced by a stale one -------------------------------------------------

def test_a_refused_argument_is_not_filled_with_the_value_held_from_before(tmp_path):
    llm, (first, second) = run(tmp_path, [
        call("find_bestsellers", genre="fantasy"), reply("Here are our fantasy best sellers. Shall I order one?"),
        call("find_bestsellers", genre="ZZ-9999"), reply("Which genre would you like?"),
    ], ["Any good fantasy books?", "And what else sells well?"])
    assert tools_run(first) == [("find_bestsellers", {"genre": "fantasy"})]
    # the agent holds genre "fantasy" now; the refused "ZZ-9999" is not replaced by it: the tool does not run
    assert tools_run(second) == []
    assert set(events(second, "value_refused")[0]["values"]) == {"genre"}
    (answer,) = [t for t in told(llm) if "was not run" in t]
    assert "genre" in answer and "ask the user" in answer
    assert "ZZ-9999" not in answer  # what a tool message says is evidence: the refused value is not repeated


def test_a_left_out_argument_is_still_filled_with_the_value_held(tmp_path):
    llm, (first, second) = run(tmp_path, [
        call("find_bestsellers", genre="fantasy"), reply("Here are our fantasy best sellers. Shall I order one?"),
        call("find_bestsellers"), reply("Here they are again. Shall I order one?"),
    ], ["Any good fantasy books?", "Show me those again"])
    assert tools_run(second) == [("find_bestsellers", {"genre": "fantasy"})]


# ---- with the local embedding model: a reading unrelated to the message is vetoed ---------------------

@pytest.mark.parametrize("message, genre", [
    ("I'm in the mood for a good love story.", "romance"),
    ("Recommend me a gripping thriller, please.", "mystery"),
    ("My brother is obsessed with making dinner from scratch. Got anything he'd like?", "cooking"),
    ("something with dragons and wizards please", "fantasy"),
])
def test_the_embedding_model_finds_a_reading_related_to_the_message(local_model, message, genre):
    score, _ = reading_similarity(local_model[1], genre, message)
    assert score >= READING_FLOOR


@pytest.mark.parametrize("message, genre", [
    ("I'm in the mood for a good love story.", "cooking"),
    ("hello", "fantasy"),
    ("what are your bestsellers?", "romance"),
    ("I'm in the mood for a good love story.", "alex morgan"),
])
def test_the_embedding_model_finds_an_unrelated_reading_unrelated(local_model, message, genre):
    score, _ = reading_similarity(local_model[1], genre, message)
    assert score < READING_FLOOR


def test_with_the_embedding_model_a_related_reading_is_kept_and_an_unrelated_one_vetoed(tmp_path, local_model):
    llm, (first, second) = run(tmp_path, [
        call("find_bestsellers", genre="romance"), reply("Here are our romance best sellers. Shall I order one?"),
        call("find_bestsellers", genre="cooking"), reply("Which genre would you like?"),
    ], ["I'm in the mood for a good love story.", "what are your bestsellers?"], understanding=local_model[0])
    assert tools_run(first) == [("find_bestsellers", {"genre": "romance"})]
    assert "similarity" in events(first, "value_read")[0]["values"]["genre"]["why"]
    # "cooking" reads nothing in "what are your bestsellers?", and the "romance" held is not used instead
    assert tools_run(second) == []
    (refused,) = events(second, "value_refused")
    assert "unrelated" in refused["values"]["genre"]
