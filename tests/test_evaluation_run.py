"""Running evaluation scenarios through the turn engine: the simulated user, fixtures, the end of a run,
broken runs, and the bound on concurrency."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from frontdesk.evaluation.runner import (
    RoleModels,
    Target,
    missing_models,
    run_all,
    run_scenario,
    slot_resolver,
)
from frontdesk.evaluation.scenarios import load_scenarios
from frontdesk.lang import load_program
from frontdesk.llm import LLMRequest, LLMResponse, Usage

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

ECHO = """\
main:
  type: flow agent
  description: Greets, listens once and says thanks.
  args:
    - name
  steps:
    - bot: "Hello! What can I do for you?"
    - user
    - bot: "Thanks ${name}, noted."
"""


@pytest.fixture(autouse=True)
def example_data(tmp_path, monkeypatch):
    monkeypatch.setenv("FRONTDESK_EXAMPLE_DB_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("FRONTDESK_EXAMPLE_TODAY", "2026-11-22")


def target_for(folder: Path, label: str = "program") -> Target:
    program, diags = load_program(folder)
    assert program is not None, [d.format() for d in diags]
    return Target(label, str(folder), program)


@pytest.fixture
def echo(tmp_path) -> Target:
    folder = tmp_path / "echo"
    folder.mkdir()
    (folder / "agents.yml").write_text(ECHO, encoding="utf-8")
    return target_for(folder)


def scenarios_from(tmp_path: Path, text: str):
    path = tmp_path / "scenarios.yml"
    path.write_text(text, encoding="utf-8")
    loaded, diags = load_scenarios(path)
    assert loaded is not None, [d.format() for d in diags]
    return loaded.scenarios


def test_the_bookstore_scenarios_run_offline_and_pass():
    loaded, diags = load_scenarios(EXAMPLES / "bookstore/eval/scenarios.yml",
                                   EXAMPLES / "bookstore/eval/offline.script.yml")
    assert loaded is not None, [d.format() for d in diags]
    target = target_for(EXAMPLES / "bookstore")
    results = run_all(loaded.scenarios, [target], RoleModels(), concurrency=3)
    assert [r.scenario for r in results] == ["recommend_and_buy", "returns_policy", "refuse_late_refund"]
    for result in results:
        assert result.error is None, result.error
        assert result.notes == []  # every scripted answer was used
        failed = [(v.evaluator, v.reason) for v in result.verdicts if v.verdict != "pass"]
        assert not failed, failed
    buy = results[0]
    assert (buy.turns, buy.finished, buy.goals_met) == (4, True, True)
    assert buy.transcript[0]["role"] == "tool" and buy.transcript[0]["tool"] == "get_date"
    assert buy.transcript[1] == {"role": "bot", "turn": 0, "agent": "triage",
                                 "text": "Hi, I'm your bookstore assistant. How can I help you?"}
    assert buy.transcript[2] == {"role": "user", "turn": 1, "text": "Can you recommend a science fiction book?"}
    tools = [(t["tool"], t["status"]) for t in buy.transcript if t["role"] == "tool"]
    assert ("place_order", "success") in tools and ("find_bestsellers", "success") in tools
    assert buy.usage["bot"]["calls"] == 8 and buy.usage["user"]["calls"] == 4 and buy.usage["judge"]["calls"] == 1
    refused = results[2]
    assert (refused.finished, refused.goals_met) == (True, False)


def test_a_conversation_the_program_ends_stops_and_fixtures_are_set_before_the_first_message(tmp_path, echo):
    [scenario] = scenarios_from(tmp_path, """\
scenarios:
  - name: thanks
    persona: A customer called Ada.
    goals: [say hello]
    fixtures: {name: Ada}
    evaluators:
      - ended
      - bot_said: Thanks Ada, noted.
      - value: main.name
        equals: Ada
      - completed: false
    script:
      user: [{expect: "What can I do for you?", reply: "Hi there"}]
      llm: []
""")
    result = run_scenario(scenario, echo, RoleModels())
    assert result.error is None, result.error
    assert (result.turns, result.ended, result.finished) == (1, True, False)
    assert [(v.evaluator, v.verdict) for v in result.verdicts] == [
        ("ended", "pass"), ("bot said 'Thanks Ada, noted.'", "pass"), ("main.name = 'Ada'", "pass"),
        ("not completed", "pass")]
    assert [t["text"] for t in result.transcript] == ["Hello! What can I do for you?", "Hi there",
                                                      "Thanks Ada, noted."]


def test_max_turns_stops_a_simulated_user_that_never_finishes(tmp_path):
    [scenario] = scenarios_from(tmp_path, """\
scenarios:
  - name: chatty
    persona: Someone who asks about shipping again and again.
    goals: [never be satisfied]
    max_turns: 2
    first_message: How long does shipping take?
    evaluators: [completed, {turns_at_most: 1}]
    script:
      user: [{reply: "And express shipping?"}]
      llm:
        - {purpose: route, call: route, with: {agent: store_policy_kb}}
        - {purpose: kb_answer, reply: "Standard shipping takes 4 to 7 business days."}
        - {purpose: route, call: route, with: {agent: store_policy_kb}}
        - {purpose: kb_answer, reply: "Express shipping takes 1 to 2 business days."}
""")
    result = run_scenario(scenario, target_for(EXAMPLES / "bookstore"), RoleModels())
    assert result.error is None, result.error
    assert (result.turns, result.max_turns_reached, result.finished) == (2, True, False)
    assert [v.verdict for v in result.verdicts] == ["fail", "fail"]
    assert result.verdicts[0].reason == "the simulated user had not finished after 2 turns"


def test_a_run_whose_script_runs_out_is_an_error_for_every_evaluator_not_a_crash(tmp_path, echo):
    [scenario] = scenarios_from(tmp_path, """\
scenarios:
  - name: broken
    persona: p
    goals: [g]
    max_turns: 3
    evaluators: [ended, {judge: polite}]
    script:
      user: []
      judge: [{reply: "unused"}]
      llm: []
""")
    result = run_scenario(scenario, echo, RoleModels())
    assert result.error.startswith("the simulated user's script: the script has no answer left")
    assert [v.verdict for v in result.verdicts] == ["error", "error"]
    assert result.verdicts[1].reason.startswith("the conversation did not run to its end: the simulated user's")


def test_missing_models_are_named_before_anything_runs(tmp_path, echo):
    scenarios = scenarios_from(tmp_path, """\
scenarios:
  - name: unscripted
    persona: p
    goals: [g]
    evaluators: [{judge: polite}]
""")
    assert missing_models(scenarios, [echo], RoleModels()) == [
        "scenario 'unscripted': the simulated user has no script and no model",
        "scenario 'unscripted': its judge evaluators have no script and no judge model",
        "scenario 'unscripted': the bot (program) has no LLM and no scripted `llm:`",
    ]


def test_slot_names_follow_bindings():
    bookstore = target_for(EXAMPLES / "bookstore").program
    resolve = slot_resolver(bookstore)
    assert resolve("book_recommendation.book_wanted") == ("triage", "book")
    assert resolve("order.books") == ("triage", "book")
    assert resolve("genre") == ("book_recommendation", "genre")
    assert resolve("triage.date") == ("triage", "date")
    refund = target_for(EXAMPLES / "refund_desk").program
    assert slot_resolver(refund)("order_id") == ("session", "order_id")


class SlowUser:
    """A simulated user's model that takes a while and records how many calls were in flight at once."""

    name = "slow"

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.active = 0
        self.most = 0
        self.calls = 0
        self.lock = threading.Lock()

    def complete(self, request: LLMRequest) -> LLMResponse:
        with self.lock:
            self.active += 1
            self.calls += 1
            self.most = max(self.most, self.active)
        time.sleep(self.seconds)
        with self.lock:
            self.active -= 1
        return LLMResponse(content="Hello from a customer", usage=Usage(prompt_tokens=10, completion_tokens=4))


@pytest.mark.parametrize("concurrency", [1, 3])
def test_no_more_conversations_run_at_once_than_the_concurrency(tmp_path, echo, concurrency):
    listed = "".join(f"  - name: s{i}\n    persona: p\n    goals: [g]\n    max_turns: 1\n"
                     f"    fixtures: {{name: Bo}}\n    evaluators: [ended]\n    script: {{llm: []}}\n" for i in range(7))
    scenarios = scenarios_from(tmp_path, "scenarios:\n" + listed)
    user = SlowUser(0.15)
    finished = []
    results = run_all(scenarios, [echo], RoleModels(user=user), concurrency=concurrency, repeat=2,
                      on_result=finished.append)
    assert user.calls == 14 and len(results) == len(finished) == 14
    assert user.most == concurrency  # bounded, and the bound is used
    assert [(r.scenario, r.repeat) for r in results] == [(f"s{i}", k) for i in range(7) for k in (1, 2)]
    assert all(r.verdicts[0].verdict == "pass" and r.usage["user"]["calls"] == 1 for r in results)
