"""Mechanisms the held-out intent-shift dialogues (bench/intent_shift_heldout) found missing (issue 28):
a second request in one message, a task the user drops as they turn away, the question a tool asked said
again on resuming, the message that started a flow read by the LLM when the embedding model only leans to
a case, and a question that names a case read by the LLM rather than taken as the answer."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from frontdesk.lang import load_program
from frontdesk.llm.scripted import ScriptedProvider
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.policies import DROPS_TASK
from frontdesk.store.memory import MemorySessionStore

DESK = """
main:
  type: flow agent
  steps:
    - call: triage

triage:
  type: ensemble agent
  description: Pick the agent for the user's message.
  contains:
    - hours
    - block_card
    - shop
  exit: default

hours:
  type: flow agent
  description: Answers questions about opening hours and how long transfers take.
  steps:
    - bot: "We open at 9 and transfers arrive within 2 hours."

shop:
  type: flow agent
  description: Recommends books to buy.
  steps:
    - bot: "Which genre do you like?"
    - user

block_card:
  type: flow agent
  description: Blocks a lost or stolen card.
  args: [card]
  steps:
    - bot: "Okay, we can block a card."
    - call: list_cards
    - user
    - bot: "Blocked the ${card} card."
"""

TOOLS = '''
def list_cards():
    """The user's cards."""
    return [{"status": "success", "msg": "2 cards"}, {"bot": "Select the card: debit ending 4821 or credit ending 7390."}]
'''


def load(tmp_path: Path, text: str = DESK, tools: str | None = TOOLS):
    (tmp_path / "agents.yml").write_text(textwrap.dedent(text), encoding="utf-8")
    if tools is not None:
        (tmp_path / "tools.py").write_text(tools, encoding="utf-8")
    program, diags = load_program(tmp_path)
    assert program is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    return program


def said(turn) -> list[str]:
    return [m.text for m in turn.messages]


def kinds(turn, kind: str) -> list[dict]:
    return [e.data | {"agent": e.agent} for e in turn.events if e.type == kind]


def route(agent: str, also: str | None = None) -> dict:
    return {"purpose": "route", "call": "route", "with": {"agent": agent, **({"also": also} if also else {})}}


READ_NOTHING = {"purpose": "understand", "call": "understand", "with": {"args": {}}}


def switch(to: str) -> dict:
    return {"purpose": "understand", "call": "understand", "with": {"choice": f"switch:{to}"}}


def test_a_second_request_the_routing_model_names_is_handled_in_the_same_turn(tmp_path):
    llm = ScriptedProvider([route("hours", also="shop")])
    engine = Engine(load(tmp_path), llm, MemorySessionStore())
    sid = engine.start().session_id
    turn = engine.send(sid, "When do you open, and could you suggest a good mystery?")
    assert said(turn) == ["We open at 9 and transfers arrive within 2 hours.", "Which genre do you like?"]
    assert engine.load_state(sid).stack[-1].agent == "shop"


def test_without_also_only_the_first_request_is_handled(tmp_path):
    llm = ScriptedProvider([route("hours")])
    engine = Engine(load(tmp_path), llm, MemorySessionStore())
    sid = engine.start().session_id
    turn = engine.send(sid, "When do you open?")
    assert said(turn) == ["We open at 9 and transfers arrive within 2 hours."]


def test_the_route_request_offers_also_only_with_two_agents_or_more(tmp_path):
    from frontdesk.runtime import prompts

    program = load(tmp_path)
    agents = [program.agents["hours"], program.agents["shop"]]
    request = prompts.route_request(program.agents["triage"], agents, [], 6)
    assert request.tools[0].parameters["properties"]["also"]["enum"] == ["hours", "shop", "none"]
    alone = prompts.route_request(program.agents["triage"], agents[:1], [], 6)
    assert "also" not in alone.tools[0].parameters["properties"]


@pytest.mark.parametrize("message", [
    "Never mind the card, it was in my pocket. How fast do transfers arrive?",
    "Actually, forget about the card. How fast do transfers arrive?",
])
def test_a_task_the_user_drops_as_they_turn_away_does_not_come_back(tmp_path, message):
    llm = ScriptedProvider([route("block_card"), READ_NOTHING, switch("hours")])
    engine = Engine(load(tmp_path), llm, MemorySessionStore())
    sid = engine.start().session_id
    engine.send(sid, "I need to block a card")
    turn = engine.send(sid, message)
    assert said(turn) == ["We open at 9 and transfers arrive within 2 hours."]
    assert [d["agent"] for d in kinds(turn, "agent_dropped")] == ["block_card"]
    assert not engine.load_state(sid).threads


def test_a_task_the_user_only_steps_away_from_comes_back_with_the_question_the_tool_asked(tmp_path):
    llm = ScriptedProvider([route("block_card"), READ_NOTHING, switch("hours")])
    engine = Engine(load(tmp_path), llm, MemorySessionStore())
    sid = engine.start().session_id
    first = engine.send(sid, "I need to block a card")
    assert said(first)[-1] == "Select the card: debit ending 4821 or credit ending 7390."
    turn = engine.send(sid, "Before that, how fast do transfers arrive?")
    # the flow's question is the tool's words, not the step said before the call ("Okay, we can block a card.")
    assert said(turn) == ["We open at 9 and transfers arrive within 2 hours.",
                          "Select the card: debit ending 4821 or credit ending 7390."]
    assert not kinds(turn, "agent_dropped")


@pytest.mark.parametrize("message, drops", [
    ("Actually, forget about buying anything today.", True),
    ("Hmm, never mind.", True),
    ("Okay, no thanks.", True),
    ("Actually I'd like the debit card.", False),
    ("Forgetful me, it's the debit card.", False),
])
def test_drops_task_allows_a_word_before_it(message, drops):
    assert bool(DROPS_TASK.match(message)) is drops


def test_an_unusable_answer_is_checked_against_what_the_request_allows():
    from frontdesk.llm.base import LLMRequest, LLMResponse, ToolCall, ToolSchema
    from frontdesk.runtime.context import _unusable

    tool = ToolSchema(name="find", parameters={"type": "object", "properties": {
        "genre": {"type": "string"}, "kind": {"type": "string", "enum": ["a", "b"]}}, "required": ["genre"]})
    # (a missing argument, or a value the tool does not list, the reasoning loop tells the model of itself)
    request = LLMRequest(purpose="reason", messages=[], tools=[tool])

    def answer(content="", calls=()):
        return LLMResponse(content=content, tool_calls=[ToolCall(id=f"c{i}", name=n, arguments=a)
                                                        for i, (n, a) in enumerate(calls)])

    assert _unusable(request, answer(calls=[("find", {"genre": "mystery", "kind": "a"})])) is None
    assert _unusable(request, answer(calls=[("lookup_everything", {})])) is None  # the loop tells the model
    assert "not a list" in _unusable(request, answer(calls=[("find", {"genre": ["x", {"note": 1}]})]))
    assert _unusable(request.model_copy(update={"purpose": "route"}), answer(calls=[("route", {})])) is None
    assert "called no tool" in _unusable(request, answer("Let me look into that for you."))
    assert _unusable(request, answer("Which genre would you like?")) is None
    assert _unusable(request, answer("Our top mystery is The Lantern Room Murders.")) is None
    assert _unusable(request.model_copy(update={"tools": []}), answer("Let me check.")) is None


def test_a_reply_that_only_announces_an_action_is_asked_for_again_with_what_was_wrong(tmp_path):
    program = """
    main:
      type: llm agent
      description: recommends books
      args: [genre]
      uses: [find_books]
      prompt: Recommend books of the user's genre with find_books.
    """
    tools = '''
def find_books(genre: str):
    """Books of a genre."""
    return [{"status": "success", "msg": f"Top {genre}: The Lantern Room Murders"}]
'''
    llm = ScriptedProvider([
        {"purpose": "reason", "reply": "Hi! Which genre do you like?"},  # the greeting at the start
        {"purpose": "reason", "reply": "Let me look into that for you."},
        {"purpose": "reason", "call": "find_books", "with": {"genre": "mystery"}},
        {"purpose": "reason", "reply": "Would you like The Lantern Room Murders?"},
    ])
    engine = Engine(load(tmp_path, program, tools), llm, MemorySessionStore())
    sid = engine.start().session_id
    turn = engine.send(sid, "A mystery, please.")
    assert said(turn) == ["Would you like The Lantern Room Murders?"]
    assert [d["tool"] for d in kinds(turn, "tool_call")] == ["find_books"]
    asked = [d for d in kinds(turn, "step") if d.get("action") == "the model's answer could not be used: asked again"]
    assert asked and "called no tool" in asked[0]["why"]
    assert "Let me look into that" not in " ".join(said(turn))


REASON = """
main:
  type: flow agent
  args: [reason]
  steps:
    - bot: "Please tell us the reason for blocking your card."
    - user
    - if: the user claims "My card was stolen", "I lost it"
      then:
        - set:
            reason: lost
      else:
        - set:
            reason: other
    - bot: "Blocked for ${reason}."
"""


@pytest.mark.parametrize("message, blocked", [
    ("No, I don't need a new card.", False),  # a bare no to a question that asks for no yes or no
    ("I just don't want it any more.", True),  # an answer outside the cases: the `else`
])
def test_a_bare_yes_or_no_to_a_question_that_asks_for_none_is_asked_again_not_taken_as_else(tmp_path, message,
                                                                                               blocked):
    llm = ScriptedProvider([{"purpose": "understand", "call": "understand", "with": {"choice": "none"}}])
    engine = Engine(load(tmp_path, REASON, None), llm, MemorySessionStore())
    sid = engine.start().session_id
    turn = engine.send(sid, message)
    assert ("Blocked for other." in said(turn)) is blocked
    if not blocked:
        assert [d["action"] for d in kinds(turn, "step")].count("a yes or no is no answer to this question: asked again") == 1



def test_a_finish_in_the_same_answer_as_a_call_of_no_tool_is_refused(tmp_path):
    program = """
    main:
      type: llm agent
      description: takes the user's book
      args: [book]
      prompt: Record the book the user wants with set_args, then finish.
    """
    llm = ScriptedProvider([
        {"purpose": "reason", "reply": "Which book?"},
        {"purpose": "reason", "calls": [{"name": "lookup_everything", "arguments": {"book": "Emberwild"}},
                                        {"name": "finish", "arguments": {}}]},
        {"purpose": "reason", "calls": [{"name": "set_args", "arguments": {"book": "Emberwild"}},
                                        {"name": "finish", "arguments": {}}]},
    ])
    engine = Engine(load(tmp_path, program, None), llm, MemorySessionStore())
    sid = engine.start().session_id
    turn = engine.send(sid, "Emberwild, please.")
    llm.assert_finished()
    assert [d for d in kinds(turn, "step") if d.get("action") == "finish refused: a call before it named no tool"]
    assert engine.load_state(sid).variables["main"]["book"] == "Emberwild"


KB_DESK = DESK.replace('''hours:
  type: flow agent
  description: Answers questions about opening hours and how long transfers take.
  steps:
    - bot: "We open at 9 and transfers arrive within 2 hours."''', '''hours:
  type: kb agent
  description: Answers questions about opening hours and how long transfers take.
  faq:
    - q: When do you open?
      a: We open at 9.''')


def test_after_a_fallback_the_interrupted_task_asks_its_question_again(tmp_path):
    from frontdesk.runtime.prompts import NO_ANSWER

    no_answer = {"purpose": "kb_answer", "reply": NO_ANSWER}
    llm = ScriptedProvider([route("block_card"), READ_NOTHING, switch("hours"), no_answer, route("none")])
    engine = Engine(load(tmp_path, KB_DESK), llm, MemorySessionStore())
    sid = engine.start().session_id
    engine.send(sid, "I need to block a card")
    turn = engine.send(sid, "Can you send a van to collect my dog?")
    texts = said(turn)
    assert texts[0].startswith("Sorry, I can't help with that. I can help with: ")
    # every member's task is listed, also those that had the message and gave it back
    assert "Blocks a lost or stolen card" in texts[0] and "opening hours" in texts[0]
    assert texts[1:] == ["Select the card: debit ending 4821 or credit ending 7390."]
    assert engine.load_state(sid).stack[-1].agent == "block_card"


@pytest.mark.parametrize("value, grounded", [("01/12/2026", True), ("2026-12-01", True), ("05/12/2026", False)])
def test_a_day_in_digits_the_parameter_asks_for_is_grounded_in_the_day_the_user_named(value, grounded):
    from datetime import datetime

    from frontdesk.runtime.grounding import Evidence, why_not

    evidence = Evidence(said=["Make it go out on the 1st of December."], now=datetime(2026, 11, 22))
    assert (why_not(value, evidence, "date", name="payment_date") is None) is grounded


class ByKeyword:
    """An understanding model that is sure of the route whose agent a keyword of the message names, and
    leans (unsure) to the one a weaker keyword names; nothing else."""

    name = "stub"

    def __init__(self, sure: dict[str, str], leaning: dict[str, str]) -> None:
        self.sure, self.leaning = sure, leaning

    def decide(self, message, options, task, thresholds=None):
        from frontdesk.nlu.base import Decision

        keys = [o.key for o in options]
        scores = {k: 0.1 for k in keys}
        for word, agent in self.sure.items():
            if word in message.lower() and agent in scores:
                scores[agent] = 0.8
                return Decision(choice=agent, score=0.8, margin=0.6, sure=True, scores=scores, best=agent)
        for word, agent in self.leaning.items():
            if word in message.lower() and agent in scores:
                scores[agent] = 0.25
                return Decision(choice=None, score=0.25, margin=0.1, sure=False, scores=scores, best=agent)
        return Decision(choice=None, score=0.1, margin=0.0, sure=False, scores=scores, best=keys[0])


@pytest.mark.parametrize("message, asks_llm", [
    ("When do you open, and could you suggest a good mystery?", True),  # a clause of its own reads as shop's
    ("When do you open on a Sunday?", False),  # one request: the sure embedding routes it, no call
])
def test_hybrid_a_message_with_a_part_for_another_agent_is_routed_by_the_llm(tmp_path, message, asks_llm):
    answers = [route("hours", also="shop")] if asks_llm else []
    llm = ScriptedProvider(answers)
    llm.can_classify = True
    understanding = ByKeyword(sure={"open": "hours"}, leaning={"mystery": "shop"})
    engine = Engine(load(tmp_path), llm, MemorySessionStore(), understanding=understanding)
    sid = engine.start().session_id
    turn = engine.send(sid, message)
    llm.assert_finished()
    expected = ["We open at 9 and transfers arrive within 2 hours."] + (["Which genre do you like?"] if asks_llm else [])
    assert said(turn) == expected


def kb_program(tmp_path: Path, documents: dict[str, str]):
    (tmp_path / "docs").mkdir()
    for name, text in documents.items():
        (tmp_path / "docs" / name).write_text(text, encoding="utf-8")
    return load(tmp_path, """
main:
  type: kb agent
  description: Answers questions about the clinic.
  sources:
    - docs/
""", None)


def test_a_small_knowledge_base_is_read_whole_when_an_llm_answers(tmp_path):
    program = kb_program(tmp_path, {
        "vaccines.md": "# Vaccinations\n\nDogs need a booster every year.",
        "emergencies.md": "# Emergencies\n\nIf your pet has eaten something poisonous, call 01632 960415 at once.",
    })
    llm = ScriptedProvider([{"purpose": "kb_answer", "expect": "poisonous", "reply": "Call 01632 960415 at once."}])
    llm.can_classify = True
    engine = Engine(program, llm, MemorySessionStore())
    sid = engine.start().session_id
    turn = engine.send(sid, "My dog wolfed down a bar of dark chocolate, what now?")
    llm.assert_finished()
    assert said(turn) == ["Call 01632 960415 at once."]


def test_a_miss_gets_one_more_look_at_the_passages_the_model_did_not_see(tmp_path):
    from frontdesk.runtime.prompts import NO_ANSWER

    filler = " ".join(["The shop keeps its shelves tidy and its staff friendly."] * 10)
    documents = {f"note{i}.md": f"# Note {i}\n\n{filler}" for i in range(8)}  # over WHOLE_KB_CHARS
    documents["shipping.md"] = "# Shipping\n\nStandard shipping takes 4 to 7 days. Shipping is tracked."
    documents["pickup.md"] = "# Collecting in person\n\nIn-store pickup is free; your order is ready within 2 hours."
    program = kb_program(tmp_path, documents)
    llm = ScriptedProvider([
        {"purpose": "kb_answer", "expect": "shelves tidy", "reply": NO_ANSWER},
        {"purpose": "kb_answer", "expect": "ready within 2 hours", "reply": "Yes: pickup is free, ready in 2 hours."},
    ])
    llm.can_classify = True
    engine = Engine(program, llm, MemorySessionStore())
    sid = engine.start().session_id
    turn = engine.send(sid, "Can I fetch it myself from the shop?")  # no word of the pickup passage
    llm.assert_finished()
    assert said(turn) == ["Yes: pickup is free, ready in 2 hours."]
    looked = [d for d in kinds(turn, "step") if d.get("action") == "retrieve more: the first passages did not answer"]
    assert looked and len(llm.calls) == 2
