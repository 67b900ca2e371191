"""Offline intent shifts (issue 27): with only the local models (the embedding model; the small generator never
chooses a tool or fills a value), an LLM agent's tool choice, what it hands back, a flow's yes/no question and a
dropped task are worked out from what the user said and what the tools listed (runtime/offline_tools.py,
runtime/flow.py `_answers_by_polarity`, runtime/policies.py, runtime/reasoning.py)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace


from frontdesk.lang import load_program
from frontdesk.runtime import offline_tools
from frontdesk.runtime.flow import _answers_by_polarity
from frontdesk.nlu.base import Option
from frontdesk.testing import run_conversation

ROOT = Path(__file__).resolve().parents[1]
BOOKSTORE = ROOT / "examples" / "bookstore"
BANKING = ROOT / "examples" / "retail_banking"


def offline(path, lines, local_model):
    program, _ = load_program(path)
    understanding, embedder = local_model
    return run_conversation(program, lines, None, understanding=understanding, embedder=embedder)


def turn_events(run, index, type_=None):
    return [e.model_dump(mode="json") for e in run.turns[index].events
            if type_ is None or e.type == type_]


def tool_calls(run, index):
    return [(e["data"]["tool"], e["data"].get("args") or {}) for e in turn_events(run, index, "tool_call")]


def agents_of(run, index, types=("bot_message", "agent_started", "agent_resumed", "tool_call", "arg_set",
                                  "agent_finished")):
    out = []
    for e in turn_events(run, index):
        if e["type"] in types and e.get("agent") not in (None, "main", "triage", "meta") and e["agent"] not in out:
            out.append(e["agent"])
    return out


# ---- the genre a message names in its own words ------------------------------------------------------


def test_a_kind_named_before_the_tools_noun_fills_an_open_parameter(local_model, example_db):
    # "romance" is not among the description's examples ("mystery", "fantasy", "science fiction"): it is read
    # as the kind of "novel", a word the embedding model finds close to the tool's "books"
    run = offline(BOOKSTORE, ["Recommend a romance novel please."], local_model)
    assert tool_calls(run, 1) == [("find_bestsellers", {"genre": "romance"})]


def test_a_word_that_only_says_which_is_no_kind(local_model, example_db):
    run = offline(BOOKSTORE, ["Do you have any good books?"], local_model)
    assert ("find_bestsellers", {"genre": "good"}) not in tool_calls(run, 1)
    assert all(args.get("genre") not in ("good", "any") for _, args in tool_calls(run, 1))


def test_a_listed_value_chooses_the_tool_below_the_floor(local_model, example_db):
    # "Mystery, please." scores under TOOL_FLOOR by meaning, but names a value find_bestsellers lists
    run = offline(BOOKSTORE, ["I'd like to order a book.", "Mystery, please."], local_model)
    assert tool_calls(run, 2) == [("find_bestsellers", {"genre": "mystery"})]


# ---- the item the user takes, handed back and on -------------------------------------------------------


def test_naming_a_listed_book_hands_it_to_the_order_and_no_ends_it(local_model, example_db):
    run = offline(BOOKSTORE, ["Can you recommend a fantasy book?", "Emberwild sounds good, please order it.",
                              "No, nothing else."], local_model)
    assert agents_of(run, 2) == ["book_recommendation", "order"]
    said = " ".join(m.text for m in run.turns[2].messages)
    assert "You have selected these books so far: Emberwild" in said
    # the flow's own call of place_order runs, with the book the user named
    assert [c for c in tool_calls(run, 3) if c[0] == "place_order"] == [
        ("place_order", {"ordered_book": ["Emberwild"], "date": "2026-11-22"})]


def test_a_question_about_a_listed_book_takes_nothing(local_model, example_db):
    run = offline(BOOKSTORE, ["Can you recommend a fantasy book?", "Is Emberwild long?"], local_model)
    assert not [e for e in turn_events(run, 2, "arg_set")]


def test_the_flow_calls_the_agent_that_takes_the_book_from_the_same_message(local_model, example_db):
    run = offline(BOOKSTORE, ["Recommend me a science fiction book.", "Salt Between Stars, please. Put it in my order.",
                              "Yeah, also add The Glass Orbit.", "That's everything, thanks."], local_model)
    assert agents_of(run, 3) == ["book_recommendation", "order"]
    assert "Salt Between Stars, The Glass Orbit" in " ".join(m.text for m in run.turns[3].messages) or \
        "Salt Between Stars" in " ".join(m.text for m in run.turns[3].messages)
    placed = [c for c in tool_calls(run, 4) if c[0] == "place_order"]
    assert placed and sorted(placed[0][1]["ordered_book"]) == ["Salt Between Stars", "The Glass Orbit"]


def test_taken_item_needs_a_listed_name_and_no_no():
    agent = SimpleNamespace(name="rec", tools=[], arg_names=lambda: ["book_wanted"],
                            instructions='4. If the user agrees, append the title to the argument "book_wanted", '
                                         'which is a list, and then complete this agent.')
    frame = SimpleNamespace(locals={offline_tools.LISTED: ["The Glass Orbit", "Quiet Machines"]})
    ctx = SimpleNamespace(state=SimpleNamespace(results={}), values=lambda name: {})
    assert offline_tools.taken_item(ctx, agent, frame, "I'll take The Glass Orbit.") == \
        ("book_wanted", ["The Glass Orbit"])
    assert offline_tools.taken_item(ctx, agent, frame, "Not The Glass Orbit.") is None
    assert offline_tools.taken_item(ctx, agent, frame, "Is Quiet Machines good?") is None
    assert offline_tools.taken_item(ctx, agent, frame, "Yes, order it.") is None


# ---- a flow's yes/no question answered with no LLM ------------------------------------------------------


def test_a_plain_no_or_a_closing_takes_the_case_that_says_no():
    options = [Option("1", ("Yeah", "Do you have other types of books?")),
               Option("2", ("No", "I don't have anything else I want to buy."))]
    assert _answers_by_polarity("No, that's all I want.", options) == "2"
    assert _answers_by_polarity("That's everything, thanks.", options) == "2"
    assert _answers_by_polarity("Yeah, also add The Glass Orbit.", options) == "1"
    assert _answers_by_polarity("No. Do you ship to Canada?", options) is None
    assert _answers_by_polarity("Tell me about your shipping options for large parcels please", options) is None


# ---- a task the user drops ------------------------------------------------------------------------------


def test_never_mind_ends_the_offline_agent_and_it_does_not_come_back(local_model, example_db):
    run = offline(BOOKSTORE, ["Recommend me a cooking book.", "Never mind that. Where is your Riverside shop?",
                              "And what time do you open on Saturday?"], local_model)
    assert agents_of(run, 2) == ["book_recommendation", "store_policy_kb"]
    assert any(e["agent"] == "book_recommendation" for e in turn_events(run, 2, "agent_finished"))
    assert agents_of(run, 3) == ["store_policy_kb"]


# ---- tools that change something, arguments the session holds ------------------------------------------


def test_a_change_named_after_a_prefix_changes_something():
    def tool(name):
        return SimpleNamespace(name=name, confirmation=None)
    assert offline_tools.changes_something(tool("action_remove_payee"))
    assert offline_tools.changes_something(tool("action_process_immediate_payment"))
    assert not offline_tools.changes_something(tool("action_list_payees"))
    assert not offline_tools.changes_something(tool("action_check_balance"))


def test_a_read_only_tool_runs_with_the_username_the_session_holds(local_model, example_db):
    run = offline(BANKING, ["Who are my payees?"], local_model)
    assert ("action_list_payees", {"username": "Mary Brown"}) in tool_calls(run, 1)


def test_the_prompts_first_tool_runs_when_the_agent_starts_on_an_unclear_message(local_model, example_db):
    program, _ = load_program(BANKING)
    agent = program.agents["transfer_money"]
    tools = offline_tools.usable_tools(SimpleNamespace(program=program), agent)
    ctx = SimpleNamespace(program=program, values=lambda name: {"username": "Mary Brown"})
    assert offline_tools.first_step_tool(ctx, agent, tools) == "action_ask_account_from"
    ctx = SimpleNamespace(program=program, values=lambda name: {})
    assert offline_tools.first_step_tool(ctx, agent, tools) is None


def test_a_removal_runs_offline_only_after_a_yes_to_its_summary(local_model, example_db):
    # the request alone changes nothing: the agent says what it will do and asks (runtime/offline_form.py)
    run = offline(BANKING, ["Please remove Samuel Okafor.", "Yes, remove him."], local_model)
    assert not [c for c in tool_calls(run, 1) if c[0] == "action_remove_payee"]
    summary = " ".join(m.text for m in run.turns[1].messages)
    assert "Samuel Okafor" in summary and summary.endswith("Shall I go ahead?")
    assert [c for c in tool_calls(run, 2) if c[0] == "action_remove_payee"] == [
        ("action_remove_payee", {"username": "Mary Brown", "payee_name": "Samuel Okafor"})]


def test_a_prefix_that_names_no_action_is_skipped_but_a_noun_is_no_verb():
    def tool(name):
        return SimpleNamespace(name=name, confirmation=None)
    assert not offline_tools.changes_something(tool("query_book_genre"))  # "book" here is no verb
    assert offline_tools.changes_something(tool("book_flight"))


# ---- a name the message gives, and the prompt's next step ---------------------------------------------


def test_a_favourite_book_is_looked_up_and_its_genre_recommended(local_model, example_db):
    run = offline(BOOKSTORE, ["I loved Dune. Can you suggest something similar?"], local_model)
    assert tool_calls(run, 1) == [("query_book_genre", {"book_name": "Dune"}),
                                  ("find_bestsellers", {"genre": "science fiction"})]


def test_proper_name_skips_sentence_starts_and_needs_one_name():
    assert offline_tools.proper_name("I loved Dune. Can you suggest something similar?") == "Dune"
    assert offline_tools.proper_name("I want to send money to Olivia Grant.") == "Olivia Grant"
    assert offline_tools.proper_name("Recommend a romance novel please.") is None
    assert offline_tools.proper_name("Send it to Olivia Grant or Samuel Okafor.") is None


def test_a_number_parameter_is_never_read_as_a_kind(local_model, example_db):
    # amount's examples are numbers ("250", "49.99"): "send money" gives no amount "send"
    run = offline(BANKING, ["I want to send money to Olivia Grant."], local_model)
    for e in turn_events(run, 1, "reasoning_offline"):
        assert (e["data"].get("args") or {}).get("amount") in (None,)
    assert ("action_ask_account_from", {"username": "Mary Brown"}) in tool_calls(run, 1)


def test_a_single_example_of_a_kind_is_read(local_model, example_db):
    # account: "The account number, or the account's name or type (e.g. "savings")"
    run = offline(BANKING, ["What's the balance of my savings account?"], local_model)
    assert ("action_check_balance", {"username": "Mary Brown", "account": "savings"}) in tool_calls(run, 1)


# ---- routing with no LLM: a request to act, a general question ------------------------------------------


def test_a_request_to_act_goes_to_the_agent_that_acts_not_the_knowledge_agent(local_model, example_db):
    run = offline(BANKING, ["I want to send some money."], local_model)
    assert "transfer_money" in agents_of(run, 1)
    assert not [e for e in turn_events(run, 1, "step") if e["data"].get("action") == "clarifying question"]


def test_a_request_to_act_beats_a_likely_knowledge_answer(local_model, example_db):
    # the knowledge agent is likeliest (its card passages), by a small margin: the request is the flow's
    run = offline(BANKING, ["I need to block a card."], local_model)
    routed = [e["data"] for e in turn_events(run, 1, "route_decided")]
    assert routed and routed[0]["agent"] == "block_card", routed
    assert agents_of(run, 1)[0] == "block_card"


def test_a_general_question_goes_to_the_knowledge_agent(local_model, example_db):
    run = offline(BANKING, ["I want to send some money.", "Forget it. What is an authorised payee?"], local_model)
    assert agents_of(run, 2) == ["transfer_money", "kb"]


def test_an_unsure_message_near_only_a_knowledge_agent_is_answered_from_its_sources(local_model, example_db):
    # "Do you deliver to Alaska?" is near the policies (0.28) and far from every other member: no choice of two
    # to ask about, and "nobody can help" would be wrong; the knowledge agent answers from its sources
    run = offline(BOOKSTORE, ["Do you deliver to Alaska?"], local_model)
    routed = [e["data"] for e in turn_events(run, 1, "route_decided")]
    assert routed and routed[0]["agent"] == "store_policy_kb", routed
    assert not turn_events(run, 1, "fallback")
    assert "Alaska" in " ".join(m.text for m in run.turns[1].messages)
    # a message near nobody still gets the fallback
    run = offline(BOOKSTORE, ["Can you tell me tonight's football scores?"], local_model)
    assert [e["data"]["agent"] for e in turn_events(run, 1, "route_decided")] in ([None], [])


def test_a_book_bought_by_name_is_looked_up_and_taken_for_the_order(local_model, example_db):
    run = offline(BOOKSTORE, ["I want to buy The Lantern Room Murders.", "No, that's all."], local_model)
    assert ("query_book_genre", {"book_name": "The Lantern Room Murders"}) in tool_calls(run, 1)
    assert "You have selected these books so far: The Lantern Room Murders" in \
        " ".join(m.text for m in run.turns[1].messages)
    assert [c for c in tool_calls(run, 2) if c[0] == "place_order"] == [
        ("place_order", {"ordered_book": ["The Lantern Room Murders"], "date": "2026-11-22"})]


def test_a_book_named_as_a_likeness_is_not_taken():
    agent = SimpleNamespace(name="rec", tools=[], arg_names=lambda: ["book_wanted"],
                            instructions='Append the title to the argument "book_wanted", a list, then complete.')
    frame = SimpleNamespace(locals={offline_tools.LISTED: ["Emberwild"]})
    ctx = SimpleNamespace(state=SimpleNamespace(results={}), values=lambda name: {})
    assert offline_tools.taken_item(ctx, agent, frame, "Something like Emberwild, please.") is None
    assert offline_tools.taken_item(ctx, agent, frame, "Yes, I'd like to order Emberwild.") == \
        ("book_wanted", ["Emberwild"])


def test_a_question_at_a_claims_step_goes_to_the_agent_it_is_for_never_the_else(local_model, example_db):
    # the reason step's `else` blocks the card for "other": a question about a balance must not reach it
    run = offline(BANKING, ["Please block my card.", "The credit one.",
                            "Actually, what's the balance of my savings account first?"], local_model)
    assert not [c for c in tool_calls(run, 3) if c[0] == "action_update_card_status"]
    assert "check_balance" in agents_of(run, 3)
