"""The orchestration benchmark (bench/orchestration.py): its latency model, its routing check, the ideal
model's answers to the strategies' own requests, and one strategy run end to end on a dialogue."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import importlib.util  # noqa: E402

import ideal_model  # noqa: E402

from frontdesk.lang.adl import load_adl  # noqa: E402
from frontdesk.llm.base import ChatMessage, LLMRequest, ToolSchema  # noqa: E402
from frontdesk.llm.openai_compat import OpenAICompatibleProvider  # noqa: E402

_spec = importlib.util.spec_from_file_location("orchestration_bench", ROOT / "bench" / "orchestration.py")
bench = importlib.util.module_from_spec(_spec)
sys.modules["orchestration_bench"] = bench
_spec.loader.exec_module(bench)


def test_best_of_n_drafts_are_modelled_as_concurrent_and_everything_else_in_sequence():
    model = bench.LatencyModel(per_call=1.0, per_prompt_token=0.01, per_completion_token=0.1)
    calls = [{"prompt_tokens": 100, "completion_tokens": 10},  # 1 + 1 + 1 = 3 s
             {"prompt_tokens": 100, "completion_tokens": 0, "draft": "a"},  # 2 s
             {"prompt_tokens": 200, "completion_tokens": 0, "draft": "b"},  # 3 s
             {"prompt_tokens": 0, "completion_tokens": 0, "draft": "b"}]  # 1 s: draft b takes 4 s
    assert bench.modelled_seconds(calls, model, concurrent_drafts=True) == pytest.approx(3 + 4)
    assert bench.modelled_seconds(calls, model, concurrent_drafts=False) == pytest.approx(3 + 2 + 3 + 1)


def test_replayed_answers_are_not_calls():
    events = [{"type": "llm_call", "data": {"provider": "x", "prompt_tokens": 5}},
              {"type": "llm_call", "data": {"provider": "x", "prompt_tokens": 5, "replayed": True}},
              {"type": "llm_call", "data": {"error": "no model"}}]
    assert len(bench.model_calls(events)) == 1


def _turn(agents, blocked=False, then=()):
    oracle = ideal_model.TurnOracle(user="…", agents=list(agents), then=list(then), blocked=blocked)
    return type("Turn", (), {"oracle": oracle, "expected_agents": list(agents) + list(then)})()


def test_routing_is_right_when_the_acting_members_and_the_guardrail_verdict_are_the_oracle_s():
    members = {"kb", "recommender", "order"}
    kb_passes_on = [{"type": "agent_started", "agent": "kb", "data": {}},
                    {"type": "agent_finished", "agent": "kb", "data": {"message": "passed the message to recommender"}},
                    {"type": "bot_message", "agent": "recommender", "data": {"text": "Try this one."}}]
    assert bench.routed_right(_turn(["recommender"]), kb_passes_on, members) == (True, "")
    blocked = [{"type": "guardrail_verdict", "agent": "guard", "data": {"allowed": False}},
               {"type": "bot_message", "agent": "guard", "data": {"text": "Books only."}}]
    assert bench.routed_right(_turn([], blocked=True), blocked, members) == (True, "")
    assert bench.routed_right(_turn(["kb"]), blocked, members)[1] == "blocked by a guardrail"
    assert bench.routed_right(_turn([], blocked=True), kb_passes_on, members)[0] is False


@pytest.fixture()
def provider():
    program, _ = load_adl(ROOT / "examples" / "bookstore")
    model = ideal_model.IdealModel(program)
    with ideal_model.IdealModelServer(model) as server:
        yield model, OpenAICompatibleProvider(server.base_url, None, "ideal", max_retries=0)


def _ask(provider, tool: str, properties: dict, system: str = "…"):
    request = LLMRequest(purpose="route", tool_choice=tool, messages=[
        ChatMessage(role="system", content=system), ChatMessage(role="user", content="Conversation: …")],
        tools=[ToolSchema(name=tool, parameters={"type": "object", "properties": properties})])
    return provider.complete(request).tool_calls[0].arguments


def test_the_ideal_model_answers_guardrail_judge_and_select_requests_from_the_oracle(provider):
    model, llm = provider
    model.begin_turn(ideal_model.TurnOracle(user="What's the weather?", blocked=True))
    assert _ask(llm, ideal_model.GUARD_TOOL, {"allowed": {"type": "boolean"}})["allowed"] is False
    merged = _ask(llm, ideal_model.ROUTE_TOOL, {"agent": {"enum": ["order", "none", "blocked"]}})
    assert merged["agent"] == "blocked" and merged["reply"]
    model.begin_turn(ideal_model.TurnOracle(user="Return policy?", agents=["store_policy_kb"]))
    assert _ask(llm, ideal_model.GUARD_TOOL, {"allowed": {"type": "boolean"}})["allowed"] is True
    judged = _ask(llm, ideal_model.JUDGE_TOOL, {"satisfactory": {"type": "boolean"}},
                  'You review a draft reply of the agent "order".')
    assert judged["satisfactory"] is False
    judged = _ask(llm, ideal_model.JUDGE_TOOL, {"satisfactory": {"type": "boolean"}},
                  'You review a draft reply of the agent "store_policy_kb".')
    assert judged["satisfactory"] is True
    picked = _ask(llm, ideal_model.SELECT_TOOL, {"agent": {"enum": ["order", "store_policy_kb", "none"]}})
    assert picked["agent"] == "store_policy_kb"


def test_one_strategy_runs_end_to_end_and_writes_its_table(tmp_path):
    table = tmp_path / "table.json"
    rows = bench.main(["--strategy", "merging", "--dialogue", "orch_pizza_confuser", "--json", str(table),
                       "--chart", str(tmp_path / "chart.png")])
    written = json.loads(table.read_text())
    assert written == rows and [r["strategy"] for r in written] == ["merging"]
    assert set(written[0]) >= {"strategy", "llm_calls_per_turn", "prompt_tokens_per_turn", "latency_per_turn_s",
                               "routing_accuracy"}
    assert written[0]["routing_accuracy"] == 1.0 and written[0]["llm_calls_per_turn"] >= 1
    assert (tmp_path / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
