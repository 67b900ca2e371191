"""What each LLM call carries: no repeated parameter descriptions, decision calls see the recent
messages only (issue 7, part 3: cheaper per turn without being wrong)."""

from __future__ import annotations

import json
from pathlib import Path

from frontdesk.lang import load_program
from frontdesk.runtime import prompts
from frontdesk.runtime.state import HistoryItem

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def banking():
    program, diagnostics = load_program(EXAMPLES / "retail_banking")
    assert program is not None, diagnostics
    return program


def test_a_parameter_described_by_an_earlier_tool_is_not_described_again():
    program = banking()
    agent = program.agents["transfer_money"]
    schemas = prompts.reasoning_tools(agent, program.tools)
    described = [name for s in schemas for name, p in (s.parameters.get("properties") or {}).items()
                 if isinstance(p, dict) and "description" in p]
    assert described.count("username") == 1
    # every parameter still is in its tool, with its type
    first = {s.name: s for s in schemas}["action_schedule_payment"].parameters
    assert first["properties"]["username"] == {"type": "string"}
    assert set(first["required"]) >= {"username", "payment_date"}


def test_finish_tells_what_is_left_and_hand_back_takes_no_arguments():
    program = banking()
    schemas = {s.name: s for s in prompts.reasoning_tools(program.agents["transfer_money"], program.tools)}
    assert "rest" in schemas[prompts.FINISH_TOOL].parameters["properties"]
    assert schemas[prompts.HAND_BACK_TOOL].parameters["properties"] == {}


def test_route_and_understand_calls_show_only_the_recent_messages():
    program = banking()
    history = [HistoryItem(role="user" if i % 2 == 0 else "bot", text=f"message number {i}", turn=i // 2)
               for i in range(30)]
    router = program.agents["meta"]
    candidates = [program.agents[m.agent] for m in router.members]
    route = prompts.route_request(router, candidates, history, program.settings.history_window)
    shown = json.dumps([m.content for m in route.messages])
    assert "message number 29" in shown and "message number 24" in shown
    assert "message number 23" not in shown
    flow = program.agents["block_card"]
    understand = prompts.understand_request(flow, [("1", ["yes"])], [], [], history, 2)
    shown = json.dumps([m.content for m in understand.messages])
    assert "message number 28" in shown and "message number 27" not in shown  # a smaller program window wins


def test_finish_names_the_agent_beside_it_and_hand_back_may_too():
    program = banking()
    agent = program.agents["transfer_money"]
    alone = {s.name: s for s in prompts.reasoning_tools(agent, program.tools)}
    assert "next" not in alone[prompts.FINISH_TOOL].parameters["properties"]
    beside = {s.name: s for s in prompts.reasoning_tools(agent, program.tools, ["kb", "check_balance"])}
    finish = beside[prompts.FINISH_TOOL].parameters["properties"]
    assert finish["next"] == {"enum": ["kb", "check_balance", "none"]} and "rest" not in finish
    # the names are listed once per request: hand_back's `to` refers to finish's list
    assert beside[prompts.HAND_BACK_TOOL].parameters["properties"]["to"] == {"type": "string"}


def test_a_tool_result_does_not_repeat_what_the_model_already_has():
    from frontdesk.runtime.tools import ToolResult

    listing = "Crown of Ash and Ivy by Selene Marsh ($19.99); Emberwild by Tamsin Reyes ($14.99)"
    result = ToolResult(message=f"Best sellers in fantasy: {listing}",
                        args={"genre": "fantasy", "book_info": listing, "count": 2})
    text = result.for_model({"genre": "fantasy"})
    assert text.count(listing) == 1  # the message holds it; values do not repeat it
    assert "genre=" not in text  # the argument the model passed itself
    assert "count=2" in text  # a value it did not have yet
    # a value the tool changed is shown
    assert "genre='Fantasy'" in ToolResult(args={"genre": "Fantasy"}).for_model({"genre": "fantasy"})


def test_a_knowledge_answer_is_written_from_the_few_passages_near_the_best():
    from frontdesk.llm import ScriptedProvider
    from frontdesk.runtime.answering import ANSWER_PASSAGES, PASSAGE_FLOOR
    from frontdesk.testing import run_conversation

    program, _ = load_program(EXAMPLES / "bookstore")
    llm = ScriptedProvider([
        {"purpose": "route", "call": "route", "with": {"agent": "store_policy_kb"}},
        {"purpose": "kb_answer", "reply": "Standard shipping takes 4 to 7 business days."},
    ])
    run = run_conversation(program, ["How long does shipping usually take?"], llm)
    llm.assert_finished()
    retrieved = [e for e in run.events_of("step") if e["data"].get("action") == "retrieve"][0]["data"]["passages"]
    assert 1 <= len(retrieved) <= ANSWER_PASSAGES
    assert all(p["score"] >= PASSAGE_FLOOR for p in retrieved)
    sent = [e for e in run.events_of("llm_call") if e["data"].get("purpose") == "kb_answer"][0]
    assert "[4]" not in json.dumps(sent["data"])


def test_a_tool_result_does_not_list_again_what_its_message_says_word_for_word():
    from frontdesk.runtime.tools.result import ToolResult

    accounts = [{"name": "Everyday Current", "account_number": "40021873"},
                {"name": "Rainy Day Savings", "account_number": "40021881"}]
    said = ToolResult(status="success", message="Accounts: Everyday Current (account_number 40021873); "
                                                "Rainy Day Savings (account_number 40021881)",
                      args={"accounts": accounts, "payee_exists": True})
    text = said.for_model()
    assert "accounts=" not in text and "payee_exists=True" in text  # a yes/no the message does not say stays
    partly = ToolResult(status="success", message="Accounts: Everyday Current (account_number 40021873)",
                        args={"accounts": accounts})
    assert "accounts=" in partly.for_model()  # the second account is not in the message


def test_a_new_llm_agent_starts_with_the_recent_messages_only(tmp_path):
    import yaml

    from frontdesk.llm.scripted import ScriptedProvider
    from frontdesk.runtime.engine import Engine
    from frontdesk.store.memory import MemorySessionStore

    steps = []
    for i in range(6):
        steps += [{"bot": f"Question number {i}?"}, "user"]
    (tmp_path / "agents.yml").write_text(yaml.safe_dump({
        "main": {"type": "flow agent", "steps": [*steps, {"call": "helper"}]},
        "helper": {"type": "llm agent", "description": "Helps.", "prompt": "Help the user."},
    }, sort_keys=False), encoding="utf-8")
    program, diagnostics = load_program(tmp_path)
    assert program is not None, diagnostics
    llm = ScriptedProvider([{"purpose": "reason", "reply": "How can I help?"}])
    engine = Engine(program, llm, MemorySessionStore())
    session = engine.start().session_id
    for i in range(6):
        engine.send(session, f"answer number {i}")
    shown = [m.content for m in llm.calls[0].messages if m.role != "system"]
    assert len(shown) == prompts.DECISION_WINDOW
    assert shown[-1] == "answer number 5" and not any("number 2" in str(m) for m in shown)


def test_a_plain_no_takes_the_case_that_says_no_without_a_call_when_the_embedding_is_unsure(tmp_path, local_model):
    import yaml

    from frontdesk.llm.scripted import ScriptedProvider
    from frontdesk.runtime.engine import Engine
    from frontdesk.store.memory import MemorySessionStore

    (tmp_path / "agents.yml").write_text(yaml.safe_dump({"main": {"type": "flow agent", "steps": [
        {"label": "ask"}, {"bot": "Would you like to add anything else to your order?"}, "user",
        {"if": 'the user claims "Yeah", "Do you have other types of books?"', "then": [{"bot": "More books!"}]},
        {"else if": 'the user claims "No", "I don\'t have anything else I want to buy."',
         "then": [{"bot": "Order placed."}]},
        {"else": [{"bot": "Sorry?"}, {"next": "ask"}]}]}}, sort_keys=False), encoding="utf-8")
    program, diagnostics = load_program(tmp_path)
    assert program is not None, diagnostics
    understanding, _ = local_model
    for reply in ("No thanks, that's all.", "No, that's it.", "Nope", "No, only that book.",
                  "OK, no thanks, that's the lot.", "No, just the one book."):
        llm = ScriptedProvider([{"purpose": "understand", "call": "understand", "with": {"choice": "1"}}])
        engine = Engine(program, llm, MemorySessionStore(), understanding=understanding)
        session = engine.start().session_id
        said = [e.data.get("text") for e in engine.send(session, reply).events if e.type == "bot_message"]
        assert said == ["Order placed."] and llm.calls == [], reply
    # a reply that says more than no is read by the LLM
    llm = ScriptedProvider([{"purpose": "understand", "call": "understand", "with": {"choice": "1"}}])
    engine = Engine(program, llm, MemorySessionStore(), understanding=understanding)
    session = engine.start().session_id
    engine.send(session, "No, but do you have other types of books?")
    assert len(llm.calls) == 1


def test_a_no_to_a_step_whose_cases_all_say_yes_takes_its_else_without_a_call(tmp_path, local_model):
    import yaml

    from frontdesk.llm.scripted import ScriptedProvider
    from frontdesk.runtime.engine import Engine
    from frontdesk.store.memory import MemorySessionStore

    (tmp_path / "agents.yml").write_text(yaml.safe_dump({"main": {"type": "flow agent", "steps": [
        {"bot": "Would you like to be issued a new card?"}, "user",
        {"if": 'the user claims "Yes, send me a new card", "Yes please", "I need a replacement"',
         "then": [{"bot": "A new card is on its way."}]},
        {"else": [{"bot": "No new card then."}]}]}}, sort_keys=False), encoding="utf-8")
    program, diagnostics = load_program(tmp_path)
    assert program is not None, diagnostics
    understanding, _ = local_model
    for reply, calls in (("No thanks.", 0), ("No, I don't need a new card.", 0),
                         ("No thanks. What's my balance?", 1)):
        llm = ScriptedProvider([{"purpose": "understand", "call": "understand", "with": {"choice": "none"}}])
        engine = Engine(program, llm, MemorySessionStore(), understanding=understanding)
        session = engine.start().session_id
        said = [e.data.get("text") for e in engine.send(session, reply).events if e.type == "bot_message"]
        assert said == ["No new card then."] and len(llm.calls) == calls, reply


def test_a_message_that_started_the_agent_and_names_no_case_is_not_asked_which_case_it_is():
    from frontdesk.nlu.base import Option
    from frontdesk.runtime.flow import _names_no_case

    cards = [Option("1", ["My debit card", "The debit one"]), Option("2", ["My credit card", "The credit one"])]
    assert _names_no_case("I need to block a card.", cards)
    assert _names_no_case("Please block my card.", cards)
    assert not _names_no_case("Block my debit card, please.", cards)  # it names one
    assert not _names_no_case("Renew everything I've got out.", [Option("1", ["All of them"]),
                                                                  Option("2", ["Only the ones due soon"])])
    assert not _names_no_case("I need to block a card.", cards[:1])  # one case: nothing to tell apart


def test_a_start_message_that_names_no_card_costs_no_choice_in_a_call(local_model, example_db):
    from frontdesk.llm.scripted import ScriptedProvider
    from frontdesk.runtime.engine import Engine
    from frontdesk.store.memory import MemorySessionStore

    program = banking()
    understanding, _ = local_model
    # (a request to act is routed without a call: the script has none)
    llm = ScriptedProvider([{"purpose": "understand", "call": "understand", "with": {"args": {}}}])
    engine = Engine(program, llm, MemorySessionStore(), understanding=understanding)
    session = engine.start().session_id
    said = [e.data.get("text") for e in engine.send(session, "I need to block a card.").events
            if e.type == "bot_message"]
    assert any("Select the card" in s for s in said)
    for call in llm.calls:
        for tool in call.tools:
            assert "choice" not in tool.parameters.get("properties", {}), tool.parameters


def test_a_case_decided_without_a_model_reads_volunteered_values_without_a_call_of_their_own(local_model,
                                                                                             example_db):
    from frontdesk.llm.scripted import ScriptedProvider
    from frontdesk.runtime.engine import Engine
    from frontdesk.store.memory import MemorySessionStore

    program = banking()
    understanding, _ = local_model
    llm = ScriptedProvider([{"purpose": "understand", "call": "understand", "with": {"args": {}}}])
    engine = Engine(program, llm, MemorySessionStore(), understanding=understanding)
    session = engine.start().session_id
    engine.send(session, "I need to block a card.")
    before = len(llm.calls)
    result = engine.send(session, "My debit card.")  # the embedding model is sure of the case
    said = [e.data.get("text") for e in result.events if e.type == "bot_message"]
    assert any("reason for blocking your debit card" in s for s in said)
    assert len(llm.calls) == before  # before issue 29 a call read the other arguments from "My debit card."


def test_a_request_to_act_between_a_knowledge_agent_and_one_that_acts_is_routed_without_a_call(local_model,
                                                                                              example_db):
    from frontdesk.llm.scripted import ScriptedProvider
    from frontdesk.runtime.engine import Engine
    from frontdesk.store.memory import MemorySessionStore

    program = banking()
    understanding, _ = local_model
    # (the script has no routing call: one made fails the test)
    for text, agent, script in (
            ("I want to make a transfer.", "transfer_money", [{"purpose": "reason", "reply": "To whom?"}]),
            ("Please block my card.", "block_card", [{"purpose": "understand", "call": "understand",
                                                       "with": {"args": {}}}])):
        llm = ScriptedProvider(script)
        engine = Engine(program, llm, MemorySessionStore(), understanding=understanding)
        session = engine.start().session_id
        events = engine.send(session, text).events
        assert not [c for c in llm.calls if any(t.name == "route" for t in c.tools)], text
        assert any(e.type == "route_decided" and e.data.get("agent") == agent for e in events), text


def test_a_value_recorded_in_an_earlier_turn_is_shown_once_not_also_as_its_set_args_call():
    from frontdesk.runtime.reasoning import settled

    messages = [
        {"role": "user", "content": "Send money to Olivia Grant."},
        {"role": "assistant", "tool_calls": [{"id": "c1", "name": "set_args", "arguments": {"payee_name": "Olivia"}},
                                             {"id": "c2", "name": "action_ask_account_from", "arguments": {}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "recorded payee_name"},
        {"role": "tool", "tool_call_id": "c2", "content": "status: success\nmessage: Accounts: A; B"},
        {"role": "assistant", "content": "Which account?"},
        {"role": "user", "content": "The first one, 5000 pounds."},
        {"role": "assistant", "tool_calls": [{"id": "c3", "name": "set_args", "arguments": {"amount": 5000}}]},
        {"role": "tool", "tool_call_id": "c3", "content": "recorded nothing; not recorded, the user did not say it "
                                                         "(ask them): account_from"},
        {"role": "assistant", "content": "Which account was it?"},
        {"role": "user", "content": "Current."},
        {"role": "assistant", "tool_calls": [{"id": "c4", "name": "set_args", "arguments": {"account_from": "1"}}]},
        {"role": "tool", "tool_call_id": "c4", "content": "recorded account_from"},
    ]
    kept = settled(messages)
    ids = [c["id"] for m in kept for c in m.get("tool_calls") or []]
    # the plain record of an earlier turn goes (the system lines list the value); a refusal stays, and so
    # does what the model did in this turn
    assert ids == ["c2", "c3", "c4"]
    assert [m.get("tool_call_id") for m in kept if m["role"] == "tool"] == ["c2", "c3", "c4"]
    assert settled(messages[:1]) == messages[:1]


def test_a_long_value_a_tool_result_holds_word_for_word_is_not_listed_again():
    from frontdesk.llm.base import ChatMessage, ToolCall

    program, _ = load_program(EXAMPLES / "bookstore")
    agent = program.agents["book_recommendation"]
    listing = "Crown of Ash and Ivy by Selene Marsh ($19.99); Emberwild by Tamsin Reyes ($14.99)"
    messages = [ChatMessage(role="user", content="Any fantasy?"),
                ChatMessage(role="assistant", tool_calls=[ToolCall(id="c1", name="find_bestsellers",
                                                                   arguments={"genre": "fantasy"})]),
                ChatMessage(role="tool", tool_call_id="c1", content=f"status: success\nmessage: {listing}")]
    values = {"genre": "fantasy", "book_name": None, "book_info": listing, "book_wanted": None}
    request = prompts.reasoning_request(agent, values, messages, program.tools)
    system = request.messages[0].content
    assert listing not in system and "book_info: (as in the find_bestsellers result above)" in system
    assert 'genre: "fantasy"' in system  # a short value is shown as it is
    assert "- not known yet: book_name, book_wanted" in system  # the unset ones, on one line
    # without the result in the transcript (compacted away), the value is shown
    alone = prompts.reasoning_request(agent, values, messages[:1], program.tools).messages[0].content
    assert listing in alone


def test_a_knowledge_question_is_read_with_the_earlier_messages_only_when_it_points_back_at_them():
    from frontdesk.runtime.answering import points_back

    for standalone in ("Do you deliver to Alaska?", "Is there a discount for teachers?",
                       "How quickly do refunds reach my card after a return?"):
        assert not points_back(standalone), standalone
    for follow_up in ("And on Sundays?", "Could I still return it after 45 days?", "Can I park there?",
                      "What about the Riverside shop?", "How much?"):
        assert points_back(follow_up), follow_up


def test_a_standalone_knowledge_question_is_sent_without_the_conversation_before_it():
    from frontdesk.llm import ScriptedProvider
    from frontdesk.testing import run_conversation

    program, _ = load_program(EXAMPLES / "bookstore")
    llm = ScriptedProvider([
        {"purpose": "route", "call": "route", "with": {"agent": "store_policy_kb"}},
        {"purpose": "kb_answer", "reply": "Standard shipping takes 4 to 7 business days."},
        {"purpose": "route", "call": "route", "with": {"agent": "store_policy_kb"}},
        {"purpose": "kb_answer", "reply": "Yes, expedited shipping is available too."},
    ])
    run_conversation(program, ["How long does standard shipping take?", "Is it faster with expedited?"], llm)
    llm.assert_finished()
    answers = [c for c in llm.calls if c.purpose == "kb_answer"]
    first = [m.content for m in answers[0].messages if m.role != "system"]
    second = [m.content for m in answers[1].messages if m.role != "system"]
    assert first == ["How long does standard shipping take?"]  # the greeting before it is not sent
    assert "Standard shipping takes 4 to 7 business days." in second  # "it" is read with what came before


def test_an_agent_that_acted_on_the_message_is_not_offered_to_give_it_back():
    from frontdesk.llm.base import ChatMessage, ToolCall

    program, _ = load_program(EXAMPLES / "bookstore")
    agent = program.agents["book_recommendation"]
    values = {"genre": None, "book_name": None, "book_info": None, "book_wanted": None}
    asked = [ChatMessage(role="assistant", content="Hi!"), ChatMessage(role="user", content="Any fantasy?")]
    first = prompts.reasoning_request(agent, values, asked, program.tools, others=["order"])
    assert prompts.HAND_BACK_TOOL in [t.name for t in first.tools]
    assert "call hand_back" in first.messages[0].content
    acted = [*asked, ChatMessage(role="assistant", tool_calls=[ToolCall(id="c1", name="find_bestsellers",
                                                                         arguments={"genre": "fantasy"})]),
             ChatMessage(role="tool", tool_call_id="c1", content="Best sellers in fantasy: Emberwild")]
    later = prompts.reasoning_request(agent, values, acted, program.tools, others=["order"])
    names = [t.name for t in later.tools]
    assert prompts.HAND_BACK_TOOL not in names and prompts.FINISH_TOOL in names
    assert "hand_back" not in later.messages[0].content
    # recording a value is not acting on the message: it may still be given back
    recorded = [*asked, ChatMessage(role="assistant", tool_calls=[ToolCall(id="c1", name="set_args",
                                                                           arguments={"genre": "fantasy"})]),
                ChatMessage(role="tool", tool_call_id="c1", content="recorded genre")]
    again = prompts.reasoning_request(agent, values, recorded, program.tools, others=["order"])
    assert prompts.HAND_BACK_TOOL in [t.name for t in again.tools]
    # a new user message is a new message to take or give back
    next_turn = [*acted, ChatMessage(role="assistant", content="Emberwild is great."),
                 ChatMessage(role="user", content="What are your opening hours?")]
    assert prompts.HAND_BACK_TOOL in [t.name for t in prompts.reasoning_request(
        agent, values, next_turn, program.tools, others=["order"]).tools]


def test_a_tool_result_that_succeeded_is_its_message_and_a_failure_says_so():
    from frontdesk.runtime.tools.result import ToolResult

    assert ToolResult(status="success", message="Found 3 books.").for_model() == "Found 3 books."
    assert ToolResult(status="error", message="No such genre.").for_model() == "status: error\nmessage: No such genre."
    assert ToolResult(status="success", args={"ok": True}).for_model() == "status: success\nvalues: ok=True"


def test_a_guardrail_s_block_merged_into_a_call_is_not_doubted_by_the_embedding_model():
    # the embedding model scores the step's cases and the other agents, never "blocked": its preference for
    # a case says nothing against a block, so the block is not asked for a second time
    from types import SimpleNamespace

    from frontdesk.nlu.base import Decision
    from frontdesk.runtime.context import TurnContext
    from frontdesk.runtime.events import EventLog

    decision = Decision(choice=None, score=0.38, margin=0.16, sure=False,
                        scores={"switch:policies": 0.38, "1": 0.01}, best="switch:policies")
    ctx = SimpleNamespace(embedded={("claims", "order"): decision}, log=EventLog(0, 1))
    assert TurnContext.embedding_doubts(ctx, "claims", "order", "blocked") is None
    assert TurnContext.embedding_doubts(ctx, "claims", "order", "none") is None
    assert TurnContext.embedding_doubts(ctx, "claims", "order", "1") == "switch:policies"  # a case is doubted
