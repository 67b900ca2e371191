"""`frontdesk eval` end to end: scripted simulated users and judges, the table, the exit status, the JSON and
HTML reports, a comparison where one version regresses, and the real OpenAI-compatible client against a
local chat-completions server."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from test_llm_openai import completion, tool_call
from typer.testing import CliRunner

from frontdesk.cli import app

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
BOOKSTORE = EXAMPLES / "bookstore"
SCENARIOS = BOOKSTORE / "eval" / "scenarios.yml"
OFFLINE = BOOKSTORE / "eval" / "offline.script.yml"


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("FRONTDESK_EXAMPLE_DB_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("FRONTDESK_EXAMPLE_TODAY", "2026-11-22")
    for var in ("FRONTDESK_LLM_BASE_URL", "OPENAI_BASE_URL", "FRONTDESK_LLM_API_KEY", "OPENAI_API_KEY",
                "FRONTDESK_LLM_MODEL", "OPENAI_MODEL"):
        monkeypatch.delenv(var, raising=False)


def frontdesk_eval(*args: str):
    return CliRunner().invoke(app, ["eval", *map(str, args)], catch_exceptions=False)


def test_eval_runs_the_bookstore_scenarios_offline_and_writes_the_reports(tmp_path):
    report, page = tmp_path / "report.json", tmp_path / "report.html"
    result = frontdesk_eval(SCENARIOS, "--program", BOOKSTORE, "--script", OFFLINE, "--json", report,
                            "--html", page, "--concurrency", "2")
    assert result.exit_code == 0, result.output
    table = result.stdout
    for text in ("recommend_and_buy", "returns_policy", "refuse_late_refund", "confirmed the order number",
                 "called find_bestsellers(genre='science fiction')", "refund policy followed", "✓ pass",
                 "17 of 17 evaluators passed, 0 failed, 0 could not decide (3 conversations)",
                 "simulated user: 8 LLM calls", "judge: 3 LLM calls"):
        assert text in table, text
    assert "✓ recommend_and_buy (program, run 1): 7 of 7 passed, 4 turns" in result.stderr

    data = json.loads(report.read_text(encoding="utf-8"))
    assert (data["format"], data["exit_status"], data["baseline"]) == ("frontdesk-eval/1", 0, None)
    assert data["program"]["path"] == str(BOOKSTORE) and len(data["program"]["digest"]) == 16
    assert data["summary"]["program"]["passed"] == data["summary"]["program"]["evaluators"] == 17
    assert {row["program"]["status"] for row in data["rows"]} == {"pass"}
    buy = data["scenarios"][0]
    assert buy["name"] == "recommend_and_buy" and buy["stats"]["program"]["turns"] == 4
    [run] = buy["runs"]["program"]
    assert run["finished"] and run["goals_met"] and run["error"] is None
    said = [t["text"] for t in run["transcript"] if t["role"] == "bot"]
    assert "Our best-selling science fiction book is The Glass Orbit by Mara Okonkwo ($16.99). " \
           "Would you like to order it?" in said
    judged = next(v for v in run["verdicts"] if v["kind"] == "judge")
    assert judged["verdict"] == "pass" and "confirmed the order" in judged["reason"]

    html = page.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "<script" not in html and "http" not in html  # self-contained
    assert "The Glass Orbit by Mara Okonkwo ($16.99)" in html
    assert "Hi, I&#x27;m your bookstore assistant. How can I help you?" in html  # escaped, quotes too
    assert "Hi, I'm your bookstore" not in html
    assert "I ordered The Glass Orbit and got an order number." in html  # why the simulated user finished
    assert "place_order" in html and "The program passes (exit status 0)." in html


HOSTILE = """\
scenarios:
  - name: hostile <b>name</b>
    persona: Someone who types HTML & script tags.
    goals: ["break the <report>"]
    fixtures: {name: "<img src=x onerror=alert(1)>"}
    evaluators:
      - bot_said: "Thanks <img"
        name: <i>said</i> & [bold]thanked[/bold]
      - judge: the bot stayed calm
    script:
      user: [{reply: '<script>alert("x")</script> & <b>bold</b>'}]
      judge: [{call: verdict, with: {verdict: fail, reason: 'It echoed <img src=x onerror=alert(1)> back'}}]
      llm: []
"""


def test_the_html_report_escapes_every_text(tmp_path):
    program = tmp_path / "echo"
    program.mkdir()
    (program / "agents.yml").write_text(
        'main:\n  type: flow agent\n  description: Echo.\n  args: [name]\n  steps:\n'
        '    - bot: "Hello! What can I do for you?"\n    - user\n    - bot: "Thanks ${name}, noted."\n',
        encoding="utf-8")
    scenarios = tmp_path / "hostile.yml"
    scenarios.write_text(HOSTILE, encoding="utf-8")
    page = tmp_path / "report.html"
    result = frontdesk_eval(scenarios, "--program", program, "--html", page)
    assert result.exit_code == 1, result.output  # the judge failed it
    html = page.read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in html
    assert "Thanks &lt;img src=x onerror=alert(1)&gt;, noted." in html
    assert "It echoed &lt;img src=x onerror=alert(1)&gt; back" in html
    assert "&lt;i&gt;said&lt;/i&gt; &amp; [bold]thanked[/bold]" in html and "hostile &lt;b&gt;name&lt;/b&gt;" in html
    assert "<script" not in html and "<img" not in html and "<b>bold" not in html and "<i>said" not in html
    assert "<i>said</i> & [bold]thanked[/bold]" in result.stdout  # data is never read as Rich markup


def broken_copy(tmp_path: Path) -> Path:
    """The bookstore with one change: the order confirmation no longer says the order number."""
    copy = tmp_path / "bookstore_v2"
    shutil.copytree(BOOKSTORE, copy, ignore=shutil.ignore_patterns(".data", ".frontdesk", "__pycache__", "eval"))
    agents = copy / "agents.yml"
    text = agents.read_text(encoding="utf-8")
    assert 'bot: "Done! ${place_order.message}"' in text
    agents.write_text(text.replace('bot: "Done! ${place_order.message}"', 'bot: "Done! Your books are on their way."'),
                      encoding="utf-8")
    return copy


def test_a_version_that_regresses_against_the_baseline_fails_and_the_report_shows_both(tmp_path):
    v2 = broken_copy(tmp_path)
    report, page = tmp_path / "compare.json", tmp_path / "compare.html"
    result = frontdesk_eval(SCENARIOS, "--program", v2, "--baseline", BOOKSTORE, "--script", OFFLINE,
                            "--json", report, "--html", page)
    assert result.exit_code == 1, result.output
    out = result.stdout
    assert "newly failing: 1 (recommend_and_buy: confirmed the order number) · newly passing: 0" in out
    assert "baseline (" in out and "17 of 17 evaluators passed" in out and "16 of 17 evaluators passed, 1 failed" in out
    line = next(x for x in out.splitlines() if "confirmed the order number" in x)
    assert "✓ pass" in line and "✗ fail" in line and "newly failing" in line
    assert "no bot message matches /Order \\d+ placed/" in line

    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["exit_status"] == 1 and data["baseline"]["path"] == str(BOOKSTORE)
    assert data["program"]["digest"] != data["baseline"]["digest"]
    assert data["newly_failing"] == [{"scenario": "recommend_and_buy", "evaluator": "confirmed the order number"}]
    assert data["newly_passing"] == []
    changed = [r for r in data["rows"] if r["change"]]
    assert [(r["baseline"]["status"], r["program"]["status"]) for r in changed] == [("pass", "fail")]
    html = page.read_text(encoding="utf-8")
    assert "The program regresses (exit status 1)." in html
    assert "Done! Your books are on their way." in html  # both transcripts
    assert re.search(r"Done! Order \d+ placed on 2026-11-22: The Glass Orbit", html)

    # the other way round, the same change is an improvement: nothing regresses
    back = frontdesk_eval(SCENARIOS, "--program", BOOKSTORE, "--baseline", v2, "--script", OFFLINE,
                          "--scenario", "recommend_and_buy", "--repeat", "2")
    assert back.exit_code == 0, back.output
    assert "newly failing: 0 · newly passing: 1 (recommend_and_buy: confirmed the order number)" in back.stdout
    assert "✓ 2/2" in back.stdout and "✗ 0/2" in back.stdout


def test_without_a_baseline_any_failing_evaluator_is_exit_status_1(tmp_path):
    result = frontdesk_eval(SCENARIOS, "--program", broken_copy(tmp_path), "--script", OFFLINE)
    assert result.exit_code == 1
    assert "16 of 17 evaluators passed, 1 failed" in result.stdout


def test_format_errors_are_reported_with_their_place_and_exit_status_2(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("scenarios:\n  - name: a\n    persona: p\n    goals: g\n    evaluators:\n      - tool_caled: x\n",
                   encoding="utf-8")
    result = frontdesk_eval(bad, "--program", BOOKSTORE)
    assert result.exit_code == 2
    assert f"{bad}:6:9: error[EVAL007]: this evaluator has no kind" in result.stderr
    assert "1 error in the scenarios" in result.stderr


def test_usage_errors_are_exit_status_2(tmp_path):
    assert frontdesk_eval(SCENARIOS, "--program", BOOKSTORE, "--concurrency", "0").exit_code == 2
    unknown = frontdesk_eval(SCENARIOS, "--program", BOOKSTORE, "--script", OFFLINE, "--scenario", "nope")
    assert unknown.exit_code == 2 and "no scenario named 'nope'" in unknown.stderr
    missing = frontdesk_eval(SCENARIOS, "--program", tmp_path / "nothing-here", "--script", OFFLINE)
    assert missing.exit_code == 2 and "program" in missing.stderr
    unscripted = frontdesk_eval(SCENARIOS, "--program", BOOKSTORE, "--llm", "none")
    assert unscripted.exit_code == 2
    assert "scenario 'returns_policy': the simulated user has no script and no model" in unscripted.stderr
    assert "configure an OpenAI-compatible endpoint" in unscripted.stderr
    no_endpoint = frontdesk_eval(SCENARIOS, "--program", BOOKSTORE, "--script", OFFLINE, "--user-model", "m")
    assert no_endpoint.exit_code == 2 and "none is configured" in no_endpoint.stderr


ENDPOINT_SCENARIO = """\
scenarios:
  - name: returns
    persona: Sam, who wants to return a novel bought two weeks ago.
    goals: [find out whether the book can be returned]
    max_turns: 3
    evaluators:
      - bot_said: 30 days
      - judge: the bot was polite
      - judge: the bot followed the returns policy
    script:
      llm:
        - {purpose: route, call: route, with: {agent: store_policy_kb}}
        - {purpose: kb_answer, reply: "You can return any book within 30 days of delivery."}
"""


def test_the_simulated_user_and_judge_work_through_an_openai_compatible_endpoint(tmp_path, monkeypatch, chat_server):
    def behaviour(body, attempt):
        tools = [t["function"]["name"] for t in body.get("tools") or []]
        if "finish" in tools:  # the simulated user
            if not any(m["role"] == "assistant" for m in body["messages"]):
                return 200, completion(content="Can I return a book I bought two weeks ago?",
                                       usage={"prompt_tokens": 50, "completion_tokens": 10}), {}
            return 200, completion(tool_calls=[tool_call("c1", "finish", json.dumps(
                {"reason": "I can return it within 30 days.", "goals_met": True}))]), {}
        if "polite" in body["messages"][0]["content"]:  # the judge, answering as asked
            return 200, completion(tool_calls=[tool_call("c2", "verdict", json.dumps(
                {"verdict": "pass", "reason": "The bot answered courteously."}))]), {}
        return 200, completion(content="Looks fine to me."), {}  # a judge that ignores the format

    server = chat_server
    server.behaviour = behaviour
    monkeypatch.setenv("FRONTDESK_LLM_BASE_URL", server.base_url)
    monkeypatch.setenv("FRONTDESK_LLM_API_KEY", "test-key")
    scenarios = tmp_path / "scenarios.yml"
    scenarios.write_text(ENDPOINT_SCENARIO, encoding="utf-8")
    report = tmp_path / "report.json"
    result = frontdesk_eval(scenarios, "--program", BOOKSTORE, "--user-model", "sim-user",
                            "--judge-model", "judge-1", "--json", report)
    assert result.exit_code == 1, result.output  # the judge that could not be read is not a pass
    [run] = json.loads(report.read_text(encoding="utf-8"))["scenarios"][0]["runs"]["program"]
    assert run["error"] is None and run["finished"] and run["turns"] == 1
    assert [(v["verdict"], v["reason"]) for v in run["verdicts"]] == [
        ("pass", "turn 1: You can return any book within 30 days of delivery."),
        ("pass", "The bot answered courteously."),
        ("error", "the judge's answer has no verdict: Looks fine to me."),
    ]
    assert run["usage"]["user"] == {"calls": 2, "prompt_tokens": 50, "completion_tokens": 10}
    assert run["usage"]["judge"]["calls"] == 2

    bodies = [r["body"] for r in server.requests]
    assert all(r["path"] == "/v1/chat/completions" and r["headers"]["authorization"] == "Bearer test-key"
               for r in server.requests)
    user_calls = [b for b in bodies if b["model"] == "sim-user"]
    judge_calls = [b for b in bodies if b["model"] == "judge-1"]
    assert len(user_calls) == 2 and len(judge_calls) == 2 and len(bodies) == 4
    first, second = user_calls
    assert first["tool_choice"] == "auto" and first["temperature"] == 0.7
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert "Sam, who wants to return a novel" in first["messages"][0]["content"]
    assert first["messages"][1]["content"] == "Hi, I'm your bookstore assistant. How can I help you?"
    assert [(m["role"], m["content"]) for m in second["messages"][2:]] == [
        ("assistant", "Can I return a book I bought two weeks ago?"),
        ("user", "You can return any book within 30 days of delivery.")]
    for body in judge_calls:
        assert body["tool_choice"] == {"type": "function", "function": {"name": "verdict"}}
        assert body["temperature"] == 0.0
        assert "Customer: Can I return a book I bought two weeks ago?" in body["messages"][1]["content"]
        assert "[the bot called tool get_date({}) -> success" in body["messages"][1]["content"]
