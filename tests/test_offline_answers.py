"""Offline decisions come from what can make them (issue points 2 and 3).

With no model that can reason, an LLM agent's tool is chosen by the local embedding model and its
arguments only from what the message gives (runtime/offline_tools.py); a tool that changes something
never runs. Extractive knowledge answers lead with the sentence that answers the question
(runtime/answering.py)."""

from __future__ import annotations

from pathlib import Path


from frontdesk.lang import load_program
from frontdesk.lang.abl.compiler import load_abl
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.tools import StubToolRunner
from frontdesk.store.memory import MemorySessionStore
from frontdesk.testing import run_conversation

ROOT = Path(__file__).resolve().parents[1]
BOOKSTORE = ROOT / "examples" / "bookstore"
BANKING = ROOT / "examples" / "retail_banking"


def offline(program, lines, local_model):
    understanding, embedder = local_model
    return run_conversation(program, lines, None, understanding=understanding, embedder=embedder)


def calls_of(run, tool=None):
    return [e for e in run.events_of("tool_called") if tool is None or e["data"].get("tool") == tool] or \
        [e for e in run.events if e["type"] == "reasoning_offline" and e["data"].get("action") == "tool"
         and (tool is None or e["data"].get("tool") == tool)]


def offline_actions(run):
    return [e["data"] for e in run.events_of("reasoning_offline")]


# ---- tools chosen offline ---------------------------------------------------------------------------


def test_the_offline_bookstore_recommends_fantasy_books_with_find_bestsellers(local_model, example_db):
    prog, _ = load_program(BOOKSTORE)
    run = offline(prog, ["can you recommend a fantasy book?"], local_model)
    tools = [a for a in offline_actions(run) if a["action"] == "tool"]
    assert [(a["tool"], a["args"]) for a in tools] == [("find_bestsellers", {"genre": "fantasy"})]
    assert tools[0]["score"] >= 0.4
    said = " ".join(m.text for m in run.turns[1].messages)
    assert "Best sellers in fantasy" in said and "Emberwild by Tamsin Reyes" in said
    assert [m.agent for m in run.turns[1].messages] == ["book_recommendation"]


def test_an_argument_the_message_does_not_give_is_asked_for_never_filled(local_model, example_db):
    prog, _ = load_program(BOOKSTORE)
    run = offline(prog, ["recommend me something", "mystery"], local_model)
    actions = offline_actions(run)
    assert actions[0]["action"] == "ask" and actions[0]["tool"] == "find_bestsellers"
    assert actions[0]["field"] == "genre" and actions[0]["args"] == {}
    assert "genre" in run.turns[1].messages[0].text.lower()
    assert not any(a["action"] == "tool" for a in actions[:1])
    # the answer to the question fills it, and the tool runs then
    assert [(a["tool"], a["args"]) for a in actions if a["action"] == "tool"] == [
        ("find_bestsellers", {"genre": "mystery"})]
    assert "Best sellers in mystery" in " ".join(m.text for m in run.turns[2].messages)


def test_an_unclear_message_calls_no_tool_and_says_what_it_cannot_do(local_model, example_db):
    prog, _ = load_program(BOOKSTORE)
    run = offline(prog, ["can you recommend a fantasy book?", "hello there"], local_model)
    last = [a for a in offline_actions(run)][-1]
    assert last["action"] == "no tool" and last["score"] < 0.4
    assert sum(1 for a in offline_actions(run) if a["action"] == "tool") == 1
    said = run.turns[2].messages[0].text
    assert said.startswith("I can't work that out here: no language model is configured for me.")
    assert "find the best-selling books of a genre" in said


SHOP = r'''AGENT: Shop_Helper
GOAL: "Help customers with their orders"

TOOLS:
  cancel_order(order_id: string) -> {cancelled: boolean}
    description: "Cancel a customer's order"
    side_effects: true
    confirm: never
  order_status(order_id: string) -> {status: string}
    description: "Tell where a customer's order is and when it arrives"
  list_colours(product: string) -> {colours: string[]}
    description: "List the colours a product comes in"

INSTRUCTIONS: |
  Help the customer.
'''


def shop(tmp_path: Path, local_model):
    (tmp_path / "shop.agent.abl").write_text(SHOP, encoding="utf-8")
    program, diags = load_abl(tmp_path)
    assert program is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    # the values a parameter lists, as its description gives them (an ADL tool's docstring does so)
    product = program.tools["list_colours"].params[0]
    product.type, product.description = "string", 'The product: "scarf", "hat" or "gloves".'
    stubs = StubToolRunner({"cancel_order": {"cancelled": True}, "order_status": {"status": "on its way"},
                            "list_colours": {"colours": ["red", "blue"]}}, convention="value")
    return Engine(program, None, MemorySessionStore(), understanding=local_model[0], tools=stubs), stubs


def test_a_tool_with_side_effects_is_never_called_offline(tmp_path, local_model):
    engine, stubs = shop(tmp_path, local_model)
    sid = engine.start().session_id
    turn = engine.send(sid, "Please cancel my order O-123, I don't want it anymore")
    assert all(c[0] != "cancel_order" for c in stubs.calls)
    events = [e for e in engine.store.events(sid) if e["type"] == "reasoning_offline"]
    assert not any(e["data"]["action"] == "tool" for e in events)
    assert stubs.calls == []  # nor another tool in its place
    assert [e["data"]["action"] for e in events] == ["not run"]
    assert turn.messages[0].text.startswith("I can't cancel a customer's order here")
    engine.send(sid, "Where is order O-123 now, when does it arrive?")  # the read-only tool does run
    assert [(c[0], c[1]) for c in stubs.calls] == [("order_status", {"order_id": "O-123"})]


def test_listed_values_are_read_from_the_message_and_a_missing_one_is_asked_for(tmp_path, local_model):
    engine, stubs = shop(tmp_path, local_model)
    sid = engine.start().session_id
    engine.send(sid, "What colours do your scarves come in?")
    assert ("list_colours", {"product": "scarf"}) in [(c[0], c[1]) for c in stubs.calls]
    engine2, stubs2 = shop(tmp_path, local_model)
    sid2 = engine2.start().session_id
    turn = engine2.send(sid2, "Where is my order and when does it arrive?")
    assert stubs2.calls == []  # no order id in the message: nothing is invented
    events = [e["data"] for e in engine2.store.events(sid2) if e["type"] == "reasoning_offline"]
    assert events[-1]["action"] == "ask" and events[-1]["field"] == "order_id", events
    assert "order id" in turn.messages[-1].text.lower()
    engine2.send(sid2, "It's O-42")
    assert [(c[0], c[1]) for c in stubs2.calls] == [("order_status", {"order_id": "O-42"})]


# ---- extractive answers lead with the answer ----------------------------------------------------------


def test_the_bookstore_return_policy_leads_with_the_30_day_rule(local_model, example_db):
    prog, _ = load_program(BOOKSTORE)
    run = offline(prog, ["what is your return policy?"], local_model)
    answer = run.turns[1].messages[0].text
    assert answer.startswith("You can return any book within 30 days of delivery"), answer
    assert run.turns[1].messages[0].agent == "store_policy_kb"


def test_the_bank_answers_a_recalled_transfer_question_first(local_model):
    prog, _ = load_program(BANKING)
    run = offline(prog, ["Can I cancel a transfer I already sent?"], local_model)
    kb = [m for t in run.turns[1:] for m in t.messages if m.agent == "kb"]
    assert kb and kb[0].text.startswith("Immediate transfers cannot be recalled."), kb


def test_a_resumed_agent_asks_its_question_again_but_never_repeats_an_answer(local_model, example_db):
    prog, _ = load_program(BOOKSTORE)
    run = offline(prog, ["can you recommend a fantasy book?", "what is your return policy?"], local_model)
    said = [m.text for m in run.turns[2].messages]
    assert said and said[0].startswith("You can return any book within 30 days")
    assert not any("Best sellers in fantasy" in text for text in said)  # the list was said once, before


# ---- an item offered offline, taken by "yes" ------------------------------------------------------------


def test_the_offline_recommender_offers_its_top_book_and_yes_takes_it_for_the_order(local_model, example_db):
    prog, _ = load_program(BOOKSTORE)
    run = offline(prog, ["Recommend a romance novel please.", "Yes, order it.", "No, that's everything."],
                  local_model)
    offered = run.turns[1].messages[-1].text
    assert offered.splitlines()[-1] == "Would you like Letters to Larkspur?"  # the tool's first, its top seller
    said = " ".join(m.text for m in run.turns[2].messages)
    assert "You have selected these books so far: Letters to Larkspur" in said
    placed = [e["data"] for e in run.events_of("tool_call") if e["data"].get("tool") == "place_order"]
    assert placed and placed[0]["args"]["ordered_book"] == ["Letters to Larkspur"]


def test_no_to_the_offered_book_takes_nothing(local_model, example_db):
    prog, _ = load_program(BOOKSTORE)
    run = offline(prog, ["Recommend a romance novel please.", "No, not that one."], local_model)
    assert not [e for e in run.events_of("reasoning_offline") if e["data"].get("action") == "take"]
    assert "You have selected these books" not in " ".join(m.text for m in run.turns[2].messages)


def test_a_resumed_agent_repeats_only_the_question_of_its_offer(local_model, example_db):
    prog, _ = load_program(BOOKSTORE)
    run = offline(prog, ["can you recommend a fantasy book?", "what is your return policy?"], local_model)
    said = [m.text for m in run.turns[2].messages]
    assert said[-1] == "Would you like Crown of Ash and Ivy?"
