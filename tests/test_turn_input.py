"""The user's message belongs to the turn: agents take it or give it back, and what is given back reaches
the next agent in the same turn (issue 7, part 2)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from frontdesk.lang import load_program
from frontdesk.llm import ScriptedProvider
from frontdesk.nlu.base import Decision
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.policies import answers_yes_no
from frontdesk.store.memory import MemorySessionStore
from frontdesk.testing import run_conversation

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

SHOP = """
main:
  type: flow agent
  steps:
    - call: desk

desk:
  type: ensemble agent
  description: The shop's front desk.
  args: [item]
  contains:
    - advisor:
        args:
          picked: ref item
    - checkout:
        args:
          items: ref item
    - faq
  steps:
    - bot: "Hello, how can I help?"

faq:
  type: kb agent
  description: Answers questions about delivery.
  faq:
    - q: How long does delivery take?
      a: Delivery takes two days.

advisor:
  type: llm agent
  description: Recommends a product.
  args: [picked]
  prompt: Recommend a product; when the user agrees, record it in picked and finish.

checkout:
  type: flow agent
  description: Buys the chosen products.
  args: [items]
  steps:
    - label: confirm
    - bot: "In your basket: ${items}. Anything else?"
    - user
    - if: the user claims "Yes, I want more"
      then:
        - call: advisor
        - next: confirm
    - else if: the user claims "No, that's all"
      then:
        - bot: "Order placed for ${items}."
        - return: success
      else:
        - next: confirm
          tries: 2
"""


def shop(tmp_path: Path):
    (tmp_path / "agents.yml").write_text(textwrap.dedent(SHOP), encoding="utf-8")
    prog, diags = load_program(tmp_path)
    assert prog is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    return prog


def test_the_message_that_finishes_an_agent_reaches_the_next_one_in_the_same_turn(tmp_path):
    llm = ScriptedProvider([
        {"purpose": "route", "call": "route", "with": {"agent": "advisor"}},
        {"purpose": "reason", "reply": "I recommend the Blue Kettle. Would you like it?"},
        # "yes please, I want to buy it": the advisor records the choice and finishes ...
        {"purpose": "reason", "calls": [{"name": "set_args", "arguments": {"picked": ["Blue Kettle"]}},
                                        {"name": "finish", "arguments": {}}]},
        # ... and the same message is routed on: it asks for the checkout.
        {"purpose": "route", "expect": "checkout", "call": "route", "with": {"agent": "checkout"}},
        # The checkout's question comes after the message the advisor finished on: it answers it only if
        # the embedding model is sure, and no call asks the LLM.
    ])
    run = run_conversation(shop(tmp_path), ["Can you recommend something?", "Yes please, I want to buy it"], llm)
    llm.assert_finished()
    last = [m.text for m in run.turns[-1].messages]
    assert last == ["In your basket: Blue Kettle. Anything else?"]
    assert run.turns[-1].active_agent == "checkout"
    given_back = [e for e in run.events_of("input_given_back") if e["agent"] == "advisor"]
    assert given_back and given_back[0]["data"]["why"] == "the agent finished its task"


def test_a_flow_started_by_a_message_takes_it_as_the_answer_when_it_is_one(tmp_path):
    prog = shop(tmp_path)
    engine = Engine(prog, ScriptedProvider([
        {"purpose": "route", "call": "route", "with": {"agent": "checkout"}},
        {"purpose": "understand", "call": "understand", "with": {"choice": "2"}},
    ]), MemorySessionStore())
    sid = engine.start().session_id
    engine.load_state(sid)
    # The basket already holds something (chosen earlier in the conversation).
    state = engine.store.load(sid)
    state["variables"].setdefault("desk", {})["item"] = ["Blue Kettle"]
    engine.store.save_turn(sid, state, [])
    result = engine.send(sid, "No, that's all I want")
    texts = [m.text for m in result.messages]
    assert texts == ["In your basket: Blue Kettle. Anything else?", "Order placed for Blue Kettle."]
    events = engine.store.events(sid)
    assert any(e["type"] == "input_taken" and e["data"]["how"] == "answer given before the question"
               for e in events)


def test_a_flow_started_by_a_message_that_does_not_answer_asks_and_waits(tmp_path):
    llm = ScriptedProvider([
        {"purpose": "route", "call": "route", "with": {"agent": "checkout"}},
        {"purpose": "understand", "call": "understand", "with": {"choice": "none"}},
    ])
    run = run_conversation(shop(tmp_path), ["I want to check out"], llm)
    assert [m.text for m in run.turns[-1].messages] == ["In your basket: (none). Anything else?"] or \
        run.turns[-1].messages[-1].text.endswith("Anything else?")
    assert not run.events_of("fallback")  # not a failed answer: it was never an answer


class SureUnderstanding:
    """An understanding model that is sure of the agent named by a keyword in the message (a seam,
    like the LLM); messages without a keyword go to the advisor."""

    name = "stub"

    def __init__(self, keywords: dict[str, str]) -> None:
        self.keywords = keywords

    def decide(self, message, options, task, thresholds=None):
        choice = next((agent for word, agent in self.keywords.items() if word in message.lower()), "advisor")
        scores = {o.key: (0.9 if o.key == choice else 0.1) for o in options}
        if choice not in scores:
            return Decision(choice=None, score=0.1, margin=0.0, sure=False, scores=scores, best=None)
        return Decision(choice=choice, score=0.9, margin=0.8, sure=True, scores=scores, best=choice)


def test_a_yes_to_an_llm_agents_question_is_not_a_topic_switch(tmp_path):
    prog = shop(tmp_path)
    llm = ScriptedProvider([
        {"purpose": "reason", "reply": "I recommend the Blue Kettle. Would you like it?"},
        {"purpose": "reason", "calls": [{"name": "set_args", "arguments": {"picked": ["Blue Kettle"]}},
                                        {"name": "finish", "arguments": {}}]},
    ])
    llm.can_classify = True
    engine = Engine(prog, llm, MemorySessionStore(), understanding=SureUnderstanding({"basket": "checkout"}))
    sid = engine.start().session_id
    engine.send(sid, "Recommend me something nice")
    # The embedding model is sure "checkout" fits, but the advisor asked a yes/no question.
    result = engine.send(sid, "yes please, add it to my basket")
    state = engine.load_state(sid)
    assert state.variables["desk"]["item"] == ["Blue Kettle"]  # the advisor recorded it before anything else
    assert result.messages[-1].text == "In your basket: Blue Kettle. Anything else?"
    assert not [e for e in engine.store.events(sid) if e["type"] == "agent_suspended"]
    llm.assert_finished()


def test_an_agent_that_hands_its_result_to_the_target_is_not_switched_away_from(tmp_path):
    prog = shop(tmp_path)
    llm = ScriptedProvider([
        {"purpose": "reason", "reply": "I recommend the Blue Kettle."},
        {"purpose": "reason", "calls": [{"name": "set_args", "arguments": {"picked": ["Blue Kettle"]}},
                                        {"name": "finish", "arguments": {}}]},
        # checkout, started by the message, does not ask the LLM whether the message already answers
        # its question: the embedding model is not sure it does
    ])
    llm.can_classify = True
    engine = Engine(prog, llm, MemorySessionStore(), understanding=SureUnderstanding({"buy": "checkout"}))
    sid = engine.start().session_id
    engine.send(sid, "Recommend me something nice")
    engine.send(sid, "Great, I want to buy the kettle")
    assert engine.load_state(sid).variables["desk"]["item"] == ["Blue Kettle"]
    llm.assert_finished()


def test_an_unrelated_question_still_switches_by_embedding(tmp_path):
    prog = shop(tmp_path)
    llm = ScriptedProvider([
        {"purpose": "reason", "reply": "I recommend the Blue Kettle. Would you like it?"},
    ])
    llm.can_classify = True
    engine = Engine(prog, llm, MemorySessionStore(), understanding=SureUnderstanding({"delivery": "faq"}))
    sid = engine.start().session_id
    engine.send(sid, "Recommend me something nice")
    result = engine.send(sid, "How long does delivery take?")
    texts = [m.text for m in result.messages]
    assert texts == ["Delivery takes two days.", "I recommend the Blue Kettle. Would you like it?"]
    llm.assert_finished()  # no LLM call for the switch, the answer or the resume


def test_yes_no_openings():
    assert answers_yes_no("yes please, add it to my order")
    assert answers_yes_no("Sounds great, yes please")
    assert answers_yes_no("No, that's all")
    assert not answers_yes_no("How long does shipping take?")
    assert not answers_yes_no("I want to order it")


def test_a_task_completed_elsewhere_is_not_resumed(tmp_path):
    """The advisor is interrupted; later the checkout runs the advisor itself to the end. When the
    checkout finishes, the old interrupted advisor must not come back asking about the kettle."""
    llm = ScriptedProvider([
        {"purpose": "route", "call": "route", "with": {"agent": "advisor"}},
        {"purpose": "reason", "reply": "How about the Blue Kettle?"},
        {"purpose": "reason", "call": "hand_back", "with": {"reason": "wants to buy"}},
        {"purpose": "route", "call": "route", "with": {"agent": "checkout"}},
        {"purpose": "understand", "call": "understand", "with": {"choice": "1"}},
        {"purpose": "reason", "reply": "What would you like?"},
        {"purpose": "reason", "calls": [{"name": "set_args", "arguments": {"picked": ["Red Mug"]}},
                                        {"name": "finish", "arguments": {}}]},
        {"purpose": "understand", "call": "understand", "with": {"choice": "2"}},
    ])
    run = run_conversation(shop(tmp_path), ["Recommend something", "Let me check out", "the red mug please",
                                            "No, that's all"], llm)
    llm.assert_finished()
    assert run.turns[-1].messages[-1].text == "Order placed for Red Mug."
    assert not any("Blue Kettle" in m.text for m in run.turns[-1].messages)
    assert run.events_of("agent_dropped")


def test_a_long_interrupted_task_is_offered_not_resumed(tmp_path):
    llm = ScriptedProvider([
        {"purpose": "route", "call": "route", "with": {"agent": "checkout"}},
        {"purpose": "understand", "call": "understand", "with": {"choice": "none"}},
        {"purpose": "understand", "call": "understand", "with": {"choice": "switch:advisor"}},
        {"purpose": "reason", "reply": "Which colour do you like?"},
        {"purpose": "reason", "reply": "And which size?"},
        {"purpose": "reason", "reply": "Any budget?"},
        {"purpose": "reason", "reply": "Any material?"},
        {"purpose": "reason", "reply": "Here is the Green Pot.", "calls": [{"name": "finish", "arguments": {}}]},
        {"purpose": "route", "call": "route", "with": {"agent": "none"}},
    ])
    run = run_conversation(shop(tmp_path), ["check out please", "actually, recommend something first", "green",
                                            "small", "ten euros", "clay"], llm)
    llm.assert_finished()
    last = [m.text for m in run.turns[-1].messages]
    assert last[0] == "Here is the Green Pot."
    assert not any(t.startswith("In your basket") for t in last)  # not brought back unasked ...
    assert any("get back to" in t for t in last)  # ... but offered


def test_an_unset_value_in_a_bot_message_is_a_placeholder_and_a_warning(tmp_path):
    (tmp_path / "agents.yml").write_text(textwrap.dedent("""
        main:
          type: flow agent
          args: [phone]
          steps:
            - bot: "We will call you on ${phone}. Shall I place it?"
    """), encoding="utf-8")
    prog, _ = load_program(tmp_path)
    run = run_conversation(prog, [], None)
    assert run.bot_lines == ["We will call you on (none). Shall I place it?"]
    warning = [e for e in run.events_of("warning") if e["data"].get("where") == "bot message"]
    assert warning and "main.phone" in warning[0]["data"]["message"]


PHONE = """
main:
  type: flow agent
  args: [phone]
  steps:
    - label: ask
    - bot: "Your phone number?"
    - user
    - call: check_phone
      args:
        phone: phone
    - if: check_phone.status == "error"
      then:
        - bot: "That is not a phone number."
        - next: ask
          tries: 1
    - bot: "Calling ${phone}."
"""

PHONE_TOOLS = '''
def check_phone(phone: str = ""):
    """Check a phone number."""
    digits = "".join(c for c in str(phone) if c.isdigit())
    if len(digits) < 6:
        return [{"status": "error", "msg": "not a phone number"}, {"arg": "phone", "value": "banana"}]
    return [{"status": "success", "msg": "ok"}]
'''


def test_a_value_the_flow_rejected_is_not_extracted_again_nor_set_by_a_failing_tool(tmp_path):
    (tmp_path / "agents.yml").write_text(textwrap.dedent(PHONE), encoding="utf-8")
    (tmp_path / "tools.py").write_text(PHONE_TOOLS, encoding="utf-8")
    prog, diags = load_program(tmp_path)
    assert prog is not None, [d.format() for d in diags]
    llm = ScriptedProvider([
        {"purpose": "understand", "call": "understand", "with": {"args": {"phone": "banana"}}},
        # asked again: the model reads the old answer out of the conversation once more
        {"purpose": "understand", "call": "understand", "with": {"args": {"phone": "banana"}}},
    ])
    run = run_conversation(prog, ["banana", "I told you"], llm)
    state = run.engine.load_state(run.session_id)
    assert state.variables.get("main", {}).get("phone") in (None, "")  # neither the model nor the tool set "banana"
    assert run.bot_lines[-1] == "Calling (none)."
    # "banana" is refused as soon as the model gives it: an argument named phone takes a phone number (issue 25),
    # and every time it is given again
    refused = [e for e in run.events_of("step") if e["data"].get("action") == "values the model gave refused"]
    assert len(refused) == 2 and all(e["data"]["args"] == {"phone": "banana"} for e in refused)
    assert [e["data"]["args"]["phone"] for e in run.events_of("tool_call")] == [None, None]


def test_an_agent_called_by_a_flow_that_hands_back_is_routed_and_both_come_back(tmp_path):
    """checkout calls advisor; a delivery question inside the advisor goes to the faq in the same
    turn, and checkout with its advisor come back together (issue 7: hand_back inside a called agent)."""
    llm = ScriptedProvider([
        {"purpose": "route", "call": "route", "with": {"agent": "checkout"}},
        {"purpose": "understand", "call": "understand", "with": {"choice": "none"}},
        {"purpose": "understand", "call": "understand", "with": {"choice": "1"}},
        {"purpose": "reason", "reply": "I recommend the Blue Kettle. Would you like it?"},
        {"purpose": "reason", "calls": [{"name": "hand_back", "arguments": {}}]},
        {"purpose": "route", "expect": "faq", "call": "route", "with": {"agent": "faq"}},
        {"purpose": "reason", "calls": [{"name": "set_args", "arguments": {"picked": ["Blue Kettle"]}},
                                        {"name": "finish", "arguments": {"rest": ""}}]},
    ])
    run = run_conversation(shop(tmp_path), ["I want to check out", "Yes, I want more",
                                            "How long does delivery take?", "Yes, I'll take it"], llm)
    llm.assert_finished()
    assert [m.text for m in run.turns[3].messages] == [
        "Delivery takes two days.", "I recommend the Blue Kettle. Would you like it?"]
    assert run.turns[3].active_agent == "advisor"
    # the advisor finished with nothing left over: checkout goes on, no route call, no fallback
    assert [m.text for m in run.turns[4].messages] == ["In your basket: Blue Kettle. Anything else?"]
    assert run.turns[4].active_agent == "checkout"
    assert not run.events_of("fallback")


def test_finish_with_nothing_left_costs_no_route_call_and_finish_with_more_routes(tmp_path):
    def talk(rest, extra, answer="Yes, that one"):
        llm = ScriptedProvider([
            {"purpose": "route", "call": "route", "with": {"agent": "advisor"}},
            {"purpose": "reason", "reply": "I recommend the Blue Kettle. Would you like it?"},
            {"purpose": "reason", "calls": [{"name": "set_args", "arguments": {"picked": ["Blue Kettle"]}},
                                            {"name": "finish", "arguments": {"rest": rest}}]},
            *extra,
        ])
        run = run_conversation(shop(tmp_path), ["Recommend something", answer], llm)
        llm.assert_finished()
        return run

    quiet = talk("", [])
    assert [m.text for m in quiet.turns[-1].messages] == ["Is there anything else I can help you with?"]
    assert not quiet.events_of("fallback")
    more = talk("and how long does delivery take?",
                [{"purpose": "route", "call": "route", "with": {"agent": "faq"}}],
                answer="Yes, that one, and how long does delivery take?")
    assert [m.text for m in more.turns[-1].messages] == ["Delivery takes two days."]


def test_a_flow_answer_that_also_asks_for_another_agent_reaches_it_in_the_same_turn(tmp_path):
    llm = ScriptedProvider([
        {"purpose": "route", "call": "route", "with": {"agent": "checkout"}},
        {"purpose": "understand", "call": "understand", "with": {"choice": "none"}},
        # "No, that's all. How long does delivery take?": the answer is case 2, and faq is also asked for
        {"purpose": "understand", "call": "understand", "with": {"choice": "2", "also": "faq"}},
        {"purpose": "kb_answer", "reply": "Delivery takes two days."},
    ])
    run = run_conversation(shop(tmp_path), ["I want to check out", "No, that's all. How long does delivery take?"],
                           llm)
    llm.assert_finished()  # no route call: the understand call named the agent
    assert [m.text for m in run.turns[-1].messages] == ["Order placed for (none).", "Delivery takes two days."]
    assert not run.events_of("fallback")


class NothingFits:
    """An understanding model sure that no option fits any message (every score low)."""

    name = "stub"

    def decide(self, message, options, task, thresholds=None):
        scores = {o.key: 0.1 for o in options}
        return Decision(choice=None, score=0.1, margin=0.0, sure=True, scores=scores, best=options[0].key)


def test_nothing_fits_from_embeddings_is_checked_with_the_llm_when_there_is_one(tmp_path):
    """"I'll take it" is unlike every example; with an LLM there, the router and the flow ask it
    instead of falling back (hybrid mode, issue 7)."""
    llm = ScriptedProvider([
        {"purpose": "route", "call": "route", "with": {"agent": "checkout"}},
        {"purpose": "understand", "call": "understand", "with": {"args": {}}},  # items: nothing given
        {"purpose": "understand", "call": "understand", "with": {"choice": "2"}},
    ])
    llm.can_classify = True
    engine = Engine(shop(tmp_path), llm, MemorySessionStore(), understanding=NothingFits())
    sid = engine.start().session_id
    engine.send(sid, "I'll take it")
    result = engine.send(sid, "Nah")
    llm.assert_finished()
    assert [m.text for m in result.messages] == ["Order placed for (none)."]
    assert not [e for e in engine.store.events(sid) if e["type"] == "fallback"]


def test_a_bare_number_is_an_answer_not_a_topic_switch(tmp_path):
    llm = ScriptedProvider([
        {"purpose": "reason", "reply": "Which kettle size do you want, in litres?"},
        {"purpose": "reason", "reply": "A 2 litre kettle, noted. Anything else?"},
    ])
    llm.can_classify = True
    engine = Engine(shop(tmp_path), llm, MemorySessionStore(), understanding=SureUnderstanding({"2": "faq"}))
    sid = engine.start().session_id
    engine.send(sid, "Recommend me a kettle")
    result = engine.send(sid, "2")
    llm.assert_finished()
    assert [m.text for m in result.messages] == ["A 2 litre kettle, noted. Anything else?"]
    assert not [e for e in engine.store.events(sid) if e["type"] == "agent_suspended"]


def test_a_tool_call_with_a_required_argument_left_blank_does_not_run(tmp_path):
    """SmolLM2 called action_add_payee with every argument "" on each turn: a tool never runs on
    values nobody gave; a blank one the agent already knows is filled in."""
    (tmp_path / "tools.py").write_text(textwrap.dedent('''
        CALLS = []

        def pay(payee: str, who: str):
            """Pay a payee."""
            CALLS.append((payee, who))
            return {"status": "success", "message": f"paid {payee} for {who}"}
    '''), encoding="utf-8")
    (tmp_path / "agents.yml").write_text(textwrap.dedent("""
        tools:
          - tools.py
        main:
          type: llm agent
          args: [who, payee]
          prompt: Pay the payee the user names.
          uses: [pay]
    """), encoding="utf-8")
    prog, diags = load_program(tmp_path)
    assert prog is not None, [d.format() for d in diags]
    llm = ScriptedProvider([
        {"purpose": "reason", "reply": "Hello, whom shall I pay?"},
        {"purpose": "reason", "calls": [{"name": "pay", "arguments": {"payee": "", "who": ""}}]},
        {"purpose": "reason", "reply": "Who should I pay?"},
    ])
    run = run_conversation(prog, ["Pay someone"], llm)
    llm.assert_finished()
    assert run.events_of("tool_call") == []
    assert any("without payee" in e["data"].get("message", "") for e in run.events_of("error"))


def test_an_llm_agents_route_examples_include_its_prompt_and_tools():
    from frontdesk.runtime.options import route_options

    prog, _ = load_program(EXAMPLES / "retail_banking")
    options = {o.key: o.examples for o in route_options(prog, ["transfer_money", "kb"])}
    assert "Send money to an authorised payee now." in options["transfer_money"]
    assert any(e.startswith("You help the customer send money") for e in options["transfer_money"])


class Likely:
    """Unsure by the calibrated thresholds, but close to the advisor's examples and ahead."""

    name = "stub"

    def __init__(self, score, margin):
        self.score, self.margin = score, margin

    def decide(self, message, options, task, thresholds=None):
        keys = [o.key for o in options]
        scores = {k: self.score - (0 if k == "advisor" else self.margin) for k in keys}
        return Decision(choice="advisor", score=self.score, margin=self.margin, sure=False, scores=scores,
                        best="advisor")


def test_with_no_llm_a_likely_route_is_taken_and_an_unsure_one_asks(tmp_path):
    prog = shop(tmp_path)
    llm = ScriptedProvider([{"purpose": "reason", "reply": "How about the Blue Kettle?"}])
    llm.can_classify = False  # a small local model: it writes replies but does not decide routes
    engine = Engine(prog, llm, MemorySessionStore(), understanding=Likely(0.8, 0.05))
    sid = engine.start().session_id
    assert [m.text for m in engine.send(sid, "I need a present").messages] == ["How about the Blue Kettle?"]
    engine = Engine(prog, None, MemorySessionStore(), understanding=Likely(0.5, 0.05))
    sid = engine.start().session_id
    assert engine.send(sid, "I need a present").messages[0].text.startswith("Just to be sure I understand")


# The advisor recommends, the user takes it, and the model says the rest of the message is the
# checkout's (no route call follows); checkout's question comes after the message, which does not answer it.
RECOMMEND_THEN_CHECKOUT = [
    {"purpose": "route", "call": "route", "with": {"agent": "advisor"}},
    {"purpose": "reason", "reply": "I recommend the Blue Kettle. Would you like it?"},
    {"purpose": "reason", "calls": [{"name": "set_args", "arguments": {"picked": ["Blue Kettle"]}},
                                    {"name": "finish", "arguments": {"next": "checkout"}}]},
    # (the checkout's question comes after the message the advisor finished on: no call asks whether it
    # answers it)
]


def test_finish_naming_the_next_agent_hands_the_rest_on_without_a_route_call(tmp_path):
    llm = ScriptedProvider(RECOMMEND_THEN_CHECKOUT)
    run = run_conversation(shop(tmp_path), ["Can you recommend something?", "Yes please, I want to buy it"], llm)
    llm.assert_finished()
    assert [m.text for m in run.turns[-1].messages] == ["In your basket: Blue Kettle. Anything else?"]
    decided = [e for e in run.events_of("route_decided") if e["data"].get("agent") == "checkout"]
    assert decided and decided[-1]["data"]["by"] == "the agent that read the message"
    # the tool told the model who may be named
    reason = [c for c in llm.calls if c.purpose == "reason"][-1]
    finish = next(t for t in reason.tools if t.name == "finish")
    assert finish.parameters["properties"]["next"]["enum"] == ["checkout", "faq", "none"]


def test_finish_with_next_none_keeps_the_message_and_an_unknown_name_is_routed(tmp_path):
    def talk(named, extra):
        llm = ScriptedProvider([
            {"purpose": "route", "call": "route", "with": {"agent": "advisor"}},
            {"purpose": "reason", "reply": "I recommend the Blue Kettle. Would you like it?"},
            {"purpose": "reason", "calls": [{"name": "set_args", "arguments": {"picked": ["Blue Kettle"]}},
                                            {"name": "finish", "arguments": {"next": named}}]},
            *extra,
        ])
        run = run_conversation(shop(tmp_path), ["Recommend something", "Yes, that one"], llm)
        llm.assert_finished()
        return run

    quiet = talk("none", [])
    assert [m.text for m in quiet.turns[-1].messages] == ["Is there anything else I can help you with?"]
    # a name that is no agent beside it: the router decides, as if the model had named none
    routed = talk("the_moon", [{"purpose": "route", "call": "route", "with": {"agent": "none"}}])
    assert not routed.events_of("fallback")


def test_hand_back_naming_the_agent_costs_no_route_call(tmp_path):
    llm = ScriptedProvider([
        {"purpose": "route", "call": "route", "with": {"agent": "advisor"}},
        {"purpose": "reason", "reply": "I recommend the Blue Kettle. Would you like it?"},
        {"purpose": "reason", "calls": [{"name": "hand_back", "arguments": {"to": "faq"}}]},
    ])
    run = run_conversation(shop(tmp_path), ["Recommend something", "How long does delivery take?"], llm)
    llm.assert_finished()  # the faq answered without a route call
    assert [m.text for m in run.turns[-1].messages][0] == "Delivery takes two days."
    hand_back = next(t for t in [c for c in llm.calls if c.purpose == "reason"][-1].tools
                     if t.name == "hand_back")
    assert hand_back.parameters["properties"]["to"] == {"type": "string"}


class SureOfCase:
    """An understanding model sure of one `the user claims` case for messages holding a keyword,
    and unsure of everything else."""

    name = "stub"

    def __init__(self, keyword: str, case: str) -> None:
        self.keyword, self.case = keyword, case

    def decide(self, message, options, task, thresholds=None):
        scores = {o.key: 0.3 for o in options}
        if task == "claims" and self.keyword in message.lower() and self.case in scores:
            scores[self.case] = 0.9
            return Decision(choice=self.case, score=0.9, margin=0.6, sure=True, scores=scores, best=self.case)
        return Decision(choice=None, score=0.3, margin=0.0, sure=False, scores=scores, best=options[0].key)


def test_hybrid_a_message_that_started_a_flow_answers_its_question_when_the_embedding_is_sure_or_the_llm_says(tmp_path):
    def start_checkout(message, *answers):
        llm = ScriptedProvider([{"purpose": "route", "call": "route", "with": {"agent": "checkout"}}, *answers])
        llm.can_classify = True
        engine = Engine(shop(tmp_path), llm, MemorySessionStore(), understanding=SureOfCase("that's all", "2"))
        sid = engine.start().session_id
        state = engine.store.load(sid)
        state["variables"].setdefault("desk", {})["item"] = ["Blue Kettle"]  # nothing left to extract
        engine.store.save_turn(sid, state, [])
        result = engine.send(sid, message)
        llm.assert_finished()  # the route call, and the answers given
        return [m.text for m in result.messages]

    # unsure: whether the starting message also answers the question is the LLM's to say (as with no
    # embedding model): here it does not ("I want to check out" is a request), so the question waits
    assert start_checkout("I want to check out", {"purpose": "understand", "call": "understand",
                                                  "with": {"choice": "none"}}) == [
        "In your basket: Blue Kettle. Anything else?"]
    # sure: "No, that's all I want" starting checkout is its answer
    assert start_checkout("No, that's all I want") == ["In your basket: Blue Kettle. Anything else?",
                                                       "Order placed for Blue Kettle."]


def test_a_finish_before_the_agent_did_anything_is_refused_once(tmp_path):
    """A small model's reflex (SmolLM2 finished add_payee on "I'd like to add a new payee"): the task
    cannot be complete before the agent has said or done anything."""
    llm = ScriptedProvider([
        {"purpose": "route", "call": "route", "with": {"agent": "advisor"}},
        {"purpose": "reason", "calls": [{"name": "finish", "arguments": {"status": "success"}}]},
        {"purpose": "reason", "reply": "Sure! What kind of product are you looking for?"},
    ])
    run = run_conversation(shop(tmp_path), ["Can you recommend something?"], llm)
    llm.assert_finished()
    assert [m.text for m in run.turns[-1].messages] == ["Sure! What kind of product are you looking for?"]
    assert run.turns[-1].active_agent == "advisor"
    refused = llm.calls[-1].messages[-1]
    assert refused.role == "tool" and "cannot be finished" in refused.content
    # once it has spoken, finishing is its own call
    llm = ScriptedProvider([
        {"purpose": "route", "call": "route", "with": {"agent": "advisor"}},
        {"purpose": "reason", "reply": "I recommend the Blue Kettle. Would you like it?"},
        {"purpose": "reason", "calls": [{"name": "finish", "arguments": {"next": "none"}}]},
    ])
    run = run_conversation(shop(tmp_path), ["Recommend something", "No thanks, never mind"], llm)
    llm.assert_finished()
    assert run.turns[-1].active_agent != "advisor"


def test_an_agent_called_by_a_flow_is_switched_away_from_by_embedding_and_both_come_back(tmp_path):
    """checkout calls advisor; a delivery question inside it goes to the faq by embedding alone (no
    LLM to hand it back), and checkout and advisor come back together."""
    class Keywords(SureUnderstanding):
        def decide(self, message, options, task, thresholds=None):
            if task == "claims" and "more" in message:
                return Decision(choice="1", score=0.9, margin=0.8, sure=True, scores={"1": 0.9}, best="1")
            return super().decide(message, options, task, thresholds)

    llm = ScriptedProvider([
        {"purpose": "understand", "call": "understand", "with": {"args": {}}},  # items: not given
        {"purpose": "understand", "call": "understand", "with": {"args": {}}},
        {"purpose": "reason", "reply": "I recommend the Blue Kettle. Would you like it?"},
    ])
    llm.can_classify = False  # a small local model: it cannot be trusted to hand the message back
    engine = Engine(shop(tmp_path), llm, MemorySessionStore(),
                    understanding=Keywords({"check out": "checkout", "delivery": "faq"}))
    sid = engine.start().session_id
    engine.send(sid, "I want to check out")
    engine.send(sid, "Yes, I want more")  # checkout calls the advisor
    assert [f.agent for f in engine.load_state(sid).stack][-2:] == ["checkout", "advisor"]
    result = engine.send(sid, "How long does delivery take?")
    llm.assert_finished()  # the advisor's model was not asked
    assert [m.text for m in result.messages] == ["Delivery takes two days.",
                                                 "I recommend the Blue Kettle. Would you like it?"]
    assert [f.agent for f in engine.load_state(sid).stack][-2:] == ["checkout", "advisor"]


def test_a_value_the_flow_rejected_is_not_extracted_again_when_its_kind_says_nothing(tmp_path):
    # the same flow with an argument whose name says no kind: the model's "banana" is taken, the tool
    # refuses it, and when the model gives it again it is refused as a value the flow rejected before
    (tmp_path / "agents.yml").write_text(textwrap.dedent(PHONE).replace("phone", "contact")
                                         .replace("check_contact", "check_phone"), encoding="utf-8")
    (tmp_path / "tools.py").write_text(PHONE_TOOLS.replace('"arg": "phone"', '"arg": "contact"')
                                       .replace("phone: str", "contact: str").replace("str(phone)", "str(contact)"),
                                       encoding="utf-8")
    prog, diags = load_program(tmp_path)
    assert prog is not None, [d.format() for d in diags]
    llm = ScriptedProvider([
        {"purpose": "understand", "call": "understand", "with": {"args": {"contact": "banana"}}},
        {"purpose": "understand", "call": "understand", "with": {"args": {"contact": "banana"}}},
    ])
    run = run_conversation(prog, ["banana", "I told you"], llm)
    assert run.bot_lines[-1] == "Calling (none)."
    refused = [e for e in run.events_of("args_extracted") if e["data"].get("refused")]
    assert refused and refused[0]["data"]["refused"] == {"contact": "banana"}
