"""Orchestration strategies (runtime/orchestration.py): each one's call pattern with a scripted model,
which LLM calls a turn makes, in what order and for which agents; how programs choose a strategy and
name guardrails; and what `frontdesk describe` says of each."""

from __future__ import annotations

from pathlib import Path

import pytest

from frontdesk.app import knowledge_for
from frontdesk.acdl import parse_acdl
from frontdesk.lang.adl import load_adl
from frontdesk.llm.scripted import ScriptedProvider
from frontdesk.runtime.describe import describe_program
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.prompts import NO_ANSWER
from frontdesk.store.memory import MemorySessionStore

SHOP = Path(__file__).parent / "fixtures" / "guarded_shop"
ALLOW = {"call": "guardrail", "with": {"allowed": True}}


@pytest.fixture(scope="module")
def shop():
    program, diagnostics = load_adl(SHOP)
    assert program is not None and not [d for d in diagnostics if d.severity.value == "error"]
    return program


def converse(program, strategy: str, script: list[dict], lines: list[str]):
    llm = ScriptedProvider(script)
    engine = Engine(program, llm, MemorySessionStore(), knowledge=knowledge_for(program, None), orchestration=strategy)
    session = engine.start().session_id
    turns = [engine.send(session, line) for line in lines]
    llm.assert_finished()
    return llm, turns


def plans(llm) -> list[str]:
    return [request.plan for request in llm.calls]


def said(turn) -> list[tuple[str, str]]:
    return [(m.agent, m.text) for m in turn.messages]


def events(turn, kind: str) -> list[dict]:
    return [{"agent": e.agent, **e.data} for e in turn.events if e.type == kind]


def test_proactive_checks_the_guardrail_then_routes_every_message_even_mid_task(shop):
    llm, turns = converse(shop, "proactive", [
        ALLOW, {"call": "route", "with": {"agent": "order"}},
        ALLOW, {"call": "route", "with": {"agent": "policies"}}, {"reply": "Standard shipping takes 3 to 5 days."},
        ALLOW, {"call": "route", "with": {"agent": "order"}},
    ], ["I want to order a book", "How long does shipping take?", "Dune, please"])
    assert plans(llm) == ["Guard_relevance", "Route_desk",
                          "Guard_relevance", "Route_desk", "Answer_policies",
                          "Guard_relevance", "Route_desk"]
    # the routing call took the message from the waiting order flow, which came back afterwards
    assert said(turns[1]) == [("policies", "Standard shipping takes 3 to 5 days."),
                              ("order", "Which book would you like to order?")]
    assert [e["agent"] for e in events(turns[1], "agent_suspended")] == ["order"]
    assert said(turns[2]) == [("order", "Your order is placed.")]


def test_merging_folds_the_guardrail_into_the_routing_call(shop):
    llm, turns = converse(shop, "merging", [
        {"call": "route", "with": {"agent": "blocked", "reply": "I can only help with the shop."}},
        {"call": "route", "with": {"agent": "order"}},
    ], ["What's the weather like?", "I want to order a book"])
    assert plans(llm) == ["RouteGuarded_desk", "RouteGuarded_desk"]
    assert "blocked" in llm.calls[0].tools[0].parameters["properties"]["agent"]["enum"]
    assert said(turns[0]) == [("relevance", "I can only help with the shop.")]
    assert events(turns[0], "guardrail_verdict")[0]["allowed"] is False
    assert not events(turns[0], "agent_started")  # no member saw the blocked message
    assert said(turns[1]) == [("order", "Which book would you like to order?")]


def test_autonomous_lets_the_agent_that_answered_last_name_its_successor(shop):
    llm, turns = converse(shop, "autonomous", [
        ALLOW, {"call": "route", "with": {"agent": "policies"}}, {"reply": "Returns are accepted within 30 days."},
        ALLOW, {"call": "pass_to", "with": {"agent": "recommender"}},
        {"call": "find_books", "with": {"genre": "fantasy"}}, {"reply": "Try The Fantasy Road."},
    ], ["What is your return policy?", "Recommend me a fantasy book"])
    # the first message is routed (no agent answered yet); the second goes to the knowledge agent that
    # answered last, which passes it on: no routing call
    assert plans(llm) == ["Guard_relevance", "Route_desk", "Answer_policies",
                          "Guard_relevance", "Answer_policies", "Reason_recommender", "Reason_recommender"]
    assert [t.name for t in llm.calls[4].tools] == ["pass_to"]
    assert said(turns[1]) == [("recommender", "Try The Fantasy Road.")]
    assert [e["by"] for e in events(turns[1], "route_decided")][:2] == ["autonomous", "autonomous"]


def test_first_success_drafts_in_order_and_stops_at_the_first_satisfactory_draft(shop):
    llm, turns = converse(shop, "first-success", [
        ALLOW,
        # policies' sources share no word with it: its small FAQ is read whole (no embedding model) and
        # holds no answer, so its draft is a fallback, not judged
        {"reply": NO_ANSWER},
        {"call": "find_books", "with": {"genre": "fantasy"}},  # recommender's draft stops at its tool call
        {"call": "judge", "with": {"satisfactory": False}},
        {"call": "judge", "with": {"satisfactory": True}},  # the order flow's draft
    ], ["Anything good in fantasy?"])
    assert plans(llm) == ["Guard_relevance", "Answer_policies", "Reason_recommender", "Judge_desk", "Judge_desk"]
    assert "recommender" in llm.calls[3].messages[0].content and "order" in llm.calls[4].messages[0].content
    assert said(turns[0]) == [("order", "Which book would you like to order?")]
    assert [(d["candidate"], d["usable"]) for d in events(turns[0], "draft")] == [
        ("policies", False), ("recommender", True), ("order", True)]
    assert [(e["agent"], e["by"]) for e in events(turns[0], "route_decided")] == [("order", "first-success")]
    assert not events(turns[0], "tool_call")  # find_books was only drafted


def test_the_chosen_draft_runs_for_real_with_its_drafted_answers_replayed(shop):
    llm, turns = converse(shop, "first-success", [
        ALLOW,
        {"reply": NO_ANSWER},  # policies' small FAQ, read whole: no answer
        {"call": "find_books", "with": {"genre": "fantasy"}},  # recommender's draft stops at its tool call
        {"call": "judge", "with": {"satisfactory": True}},
        {"reply": "Try The Fantasy Road."},  # the recommender for real: its first answer was replayed
    ], ["Anything good in fantasy?"])
    assert plans(llm) == ["Guard_relevance", "Answer_policies", "Reason_recommender", "Judge_desk", "Reason_recommender"]
    assert said(turns[0]) == [("recommender", "Try The Fantasy Road.")]
    assert [e["tool"] for e in events(turns[0], "tool_call")] == ["find_books"]  # once, for real
    reasoning = [e for e in events(turns[0], "llm_call") if e["purpose"] == "reason"]
    # drafted, replayed (no call), then the reply after the tool's result
    assert [(e.get("draft"), e.get("replayed", False)) for e in reasoning] == [
        ("recommender", False), (None, True), (None, False)]
    assert events(turns[0], "execution.completed")[0]["llm_calls"] == 5  # each call counted once


def test_best_of_n_drafts_every_member_then_selects_one(shop):
    llm, turns = converse(shop, "best-of-n", [
        ALLOW,
        {"reply": "Returns are accepted within 30 days."},  # policies' draft
        {"call": "hand_back", "with": {"reason": "not a recommendation"}},  # recommender's: nothing to say
        {"call": "select", "with": {"agent": "policies"}},  # policies and order drafted a reply
    ], ["What is your return policy?"])
    assert plans(llm) == ["Guard_relevance", "Answer_policies", "Reason_recommender", "Select_desk"]
    assert [a for a in llm.calls[3].tools[0].parameters["properties"]["agent"]["enum"]] == ["policies", "order", "none"]
    assert said(turns[0]) == [("policies", "Returns are accepted within 30 days.")]
    assert [(d["candidate"], d["usable"]) for d in events(turns[0], "draft")] == [
        ("policies", True), ("recommender", False), ("order", True)]
    assert not events(turns[0], "agent_started") or all(e["agent"] == "policies" for e in events(turns[0], "agent_started"))


def test_a_draft_never_runs_a_tool_it_is_not_chosen_for(shop):
    # the order flow waits for the title; the user's answer would place the order in its draft
    llm, turns = converse(shop, "best-of-n", [
        ALLOW, {"reply": NO_ANSWER}, {"call": "hand_back", "with": {"reason": "x"}},  # policies, recommender
        ALLOW, {"reply": "Returns are accepted within 30 days."}, {"call": "hand_back", "with": {"reason": "x"}},
        {"call": "select", "with": {"agent": "policies"}},
    ], ["I want to order a book", "Actually, what is your return policy?"])
    assert said(turns[0]) == [("order", "Which book would you like to order?")]
    assert not events(turns[1], "tool_call")  # place_order was only drafted
    assert said(turns[1])[0] == ("policies", "Returns are accepted within 30 days.")
    assert "[calls place_order" in next(d["reply"] for d in events(turns[1], "draft") if d["candidate"] == "order")


def test_adaptive_without_a_local_model_merges_the_guardrail_into_its_routing_call(shop):
    llm, turns = converse(shop, "adaptive", [
        {"call": "route", "with": {"agent": "order"}},
        # then the order flow asked for a title: the answer is its own, neither routed nor checked
    ], ["I want to order a book", "Dune, please"])
    assert plans(llm) == ["RouteGuarded_desk"]
    assert said(turns[1]) == [("order", "Your order is placed.")]


CONFIRM = (
    '    - bot: "Shall I place it?"\n    - user\n    - if: the user claims "Yes", "Go ahead"\n      then:\n'
    '        - bot: "Placing it now."\n      else:\n        - bot: "No problem, nothing was ordered."\n'
    '        - return: success, nothing ordered\n')


def test_adaptive_folds_the_guardrail_into_an_active_flow_s_understand_call(tmp_path):
    # the order flow asks to confirm (a `the user claims` choice): its understand call carries the guardrail
    text = (SHOP / "agents.yml").read_text().replace("    - call: place_order\n", CONFIRM + "    - call: place_order\n")
    for name in ("policies.md", "tools.py"):
        (tmp_path / name).write_text((SHOP / name).read_text())
    (tmp_path / "agents.yml").write_text(text)
    program, _ = load_adl(tmp_path)
    llm, turns = converse(program, "adaptive", [
        {"call": "route", "with": {"agent": "order"}},
        {"call": "understand", "with": {"choice": "blocked", "reply": "Let's stick to books."}},
        {"call": "understand", "with": {"choice": "1"}},
    ], ["I want to order a book", "Dune", "Will it rain tomorrow?", "Yes, go ahead"])
    assert plans(llm) == ["RouteGuarded_desk", "Understand_order", "Understand_order"]
    assert "blocked" in llm.calls[1].tools[0].parameters["properties"]["choice"]["enum"]
    assert said(turns[2]) == [("relevance", "Let's stick to books.")]
    assert events(turns[2], "guardrail_verdict")[0]["by"] == "merged into the understand call"
    # the flow still waits for its answer, and takes the next message as it
    assert said(turns[3]) == [("order", "Placing it now."), ("order", "Your order is placed.")]
    assert [e["tool"] for e in events(turns[3], "tool_call")] == ["place_order"]


def test_the_program_chooses_the_strategy_and_the_engine_can_override_it(shop, tmp_path):
    text = (SHOP / "agents.yml").read_text().replace("  guardrails:\n    - relevance\n",
                                                      "  guardrails:\n    - relevance\n  strategy: merging\n")
    for name in ("policies.md", "tools.py"):
        (tmp_path / name).write_text((SHOP / name).read_text())
    (tmp_path / "agents.yml").write_text(text)
    program, _ = load_adl(tmp_path)
    assert program.agents["desk"].strategy == "merging"
    llm, _ = converse(program, None, [{"call": "route", "with": {"agent": "order"}}], ["I want to order"])
    assert plans(llm) == ["RouteGuarded_desk"]
    llm, _ = converse(program, "proactive", [ALLOW, {"call": "route", "with": {"agent": "order"}}], ["I want to order"])
    assert plans(llm) == ["Guard_relevance", "Route_desk"]


@pytest.mark.parametrize("snippet, code, message", [
    ("  strategy: best_of_n\n", "ADL046", "unknown orchestration strategy 'best_of_n'"),
    ("  guardrails:\n    - policies\n", "ADL047", "guardrail 'policies' must be an llm agent"),
    ("  guardrails:\n    - relevanse\n", "ADL047", "guardrail 'relevanse' is not an agent"),
])
def test_bad_strategies_and_guardrails_are_diagnosed(tmp_path, snippet, code, message):
    text = (SHOP / "agents.yml").read_text().replace("  guardrails:\n    - relevance\n", snippet)
    for name in ("policies.md", "tools.py"):
        (tmp_path / name).write_text((SHOP / name).read_text())
    (tmp_path / "agents.yml").write_text(text)
    _, diagnostics = load_adl(tmp_path)
    found = [d for d in diagnostics if d.code == code]
    assert found and message in found[0].message and found[0].span.line > 0


@pytest.mark.parametrize("strategy, expected", [
    ("proactive", ["Guard_relevance", "Route_desk"]),
    ("merging", ["RouteGuarded_desk"]),
    ("autonomous", ["Guard_relevance", "Route_desk", "AnswerOrPass_policies"]),
    ("first-success", ["Guard_relevance", "Judge_desk"]),
    ("best-of-n", ["Guard_relevance", "Select_desk"]),
    ("adaptive", ["Guard_relevance", "RouteGuarded_desk", "Route_desk"]),
])
def test_describe_writes_each_strategy_s_calls_in_acdl(shop, strategy, expected):
    text = describe_program(shop, "desk", orchestration=strategy)
    parsed, diagnostics = parse_acdl(text)
    assert parsed is not None and not [d for d in diagnostics if d.severity.value == "error"]
    assert [line.split("[")[0] for line in text.splitlines() if line.endswith("[@T]: {")] == expected
    assert f"orchestration: {strategy}" in text


def test_the_program_can_give_kinds_of_calls_and_agents_their_own_model(shop):
    # `llm: models:` in config.yml: a cheaper model for knowledge answers, another for one agent
    program = shop.model_copy(update={"settings": shop.settings.model_copy(update={"llm": {
        "models": {"kb_answer": "small-model", "relevance": "tiny-model"}}})})
    llm, _ = converse(program, "proactive", [
        ALLOW, {"call": "route", "with": {"agent": "policies"}}, {"reply": "Returns within 30 days."},
    ], ["What is your return policy?"])
    assert [(r.plan, r.model) for r in llm.calls] == [
        ("Guard_relevance", "tiny-model"), ("Route_desk", None), ("Answer_policies", "small-model")]


@pytest.mark.parametrize("value, strategy, error", [("best-of-n", "best-of-n", None),
                                                    ("best_of_n", None, "unknown orchestration strategy")])
def test_an_abl_supervisor_names_its_strategy_under_execution(tmp_path, value, strategy, error):
    from frontdesk.lang import load_program

    hub = Path(__file__).parents[1] / "examples" / "support_hub"
    for source in hub.iterdir():
        if source.is_file():
            (tmp_path / source.name).write_text(source.read_text())
    path = tmp_path / "support_hub.agent.abl"
    path.write_text(path.read_text().replace('GOAL: "Route bank customers to card services or account information"\n',
                                             'GOAL: "Route bank customers to card services or account information"\n'
                                             f"EXECUTION:\n  orchestration: {value}\n", 1))
    program, diagnostics = load_program(tmp_path)
    errors = [d for d in diagnostics if d.severity.value == "error"]
    if error is None:
        assert not errors and program.agents["Support_Hub"].strategy == strategy
    else:
        assert any(error in d.message and d.span.line == 4 for d in errors), errors


def test_failing_guardrail_judge_and_select_calls_never_reach_the_user_as_errors(shop):
    # the guardrail's call fails: the message goes on (an error event says so)
    llm, turns = converse(shop, "proactive", [
        {"error": "upstream 500"}, {"call": "route", "with": {"agent": "policies"}}, {"reply": "Within 30 days."},
    ], ["What is your return policy?"])
    assert said(turns[0]) == [("policies", "Within 30 days.")]
    assert [e["where"] for e in events(turns[0], "error")] == ["guardrail"]
    # best-of-n's selection fails: the first usable draft in the router's order answers
    llm, turns = converse(shop, "best-of-n", [
        ALLOW, {"reply": "Within 30 days."}, {"call": "hand_back", "with": {"reason": "x"}}, {"error": "timeout"},
    ], ["What is your return policy?"])
    assert said(turns[0]) == [("policies", "Within 30 days.")]
    # first-success's judge fails on every draft: nothing is judged satisfactory, the router's fallback answers
    llm, turns = converse(shop, "first-success", [
        ALLOW, {"reply": "Within 30 days."}, {"error": "timeout"}, {"call": "hand_back", "with": {"reason": "x"}},
        {"error": "timeout"},
    ], ["What is your return policy?"])
    assert events(turns[0], "fallback") and all(m.text for m in turns[0].messages)
