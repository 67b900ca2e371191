"""`frontdesk test` (exit codes, summary, JUnit, -k), the pytest plugin, and `--from-rasa`."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import yaml
from typer.testing import CliRunner

from frontdesk.cli import app
from frontdesk.convtest.model import load_test_file
from frontdesk.convtest.rasa import convert_rasa
from frontdesk.convtest.runner import Runner

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
REFUND = EXAMPLES / "refund_desk"

PASSING = f"""\
program: {REFUND}
steps:
  - bot: What is your order number? It starts with A-.
  - user: A-100
    bot_contains: a kettle
"""
FAILING = f"""\
program: {REFUND}
test_cases:
  - name: kettle
    steps:
      - user: A-100
        bot_contains: a kettle
  - name: toaster
    steps:
      - user: A-100
        bot_contains: a toaster
"""


def invoke(*args: str):
    return CliRunner().invoke(app, ["test", *args])


def suite(tmp_path: Path) -> Path:
    (tmp_path / "conversations").mkdir()
    (tmp_path / "conversations" / "ok.yml").write_text(PASSING, encoding="utf-8")
    (tmp_path / "test_shop.yml").write_text(FAILING, encoding="utf-8")
    # not conversation tests: a YAML file of another kind, and one that is not named as a test
    (tmp_path / "conversations" / "notes.yml").write_text("title: not a test\n", encoding="utf-8")
    (tmp_path / "config.yml").write_text(PASSING, encoding="utf-8")
    return tmp_path


def test_a_failing_case_exits_1_with_its_first_failure_transcript_and_summary(tmp_path):
    folder = suite(tmp_path)
    junit = tmp_path / "out" / "junit.xml"
    result = invoke(str(folder), "--junit", str(junit))
    assert result.exit_code == 1, result.output
    out = result.output
    assert "PASS" in out and "ok.yml::ok" in out and "test_shop.yml::kettle" in out
    assert "FAIL  " in out and "test_shop.yml::toaster" in out
    assert f"first failure: {folder / 'test_shop.yml'}:10:23: turn 1: no message contains 'a toaster'" in out
    assert ">> [1] user> A-100" in out and "2 passed, 1 failed in" in out
    assert "config.yml" not in out and "notes.yml" not in out  # other YAML is left alone
    suite_element = ET.parse(junit).getroot().find("testsuite")
    assert suite_element.get("tests") == "3" and suite_element.get("failures") == "1"
    failed = [c for c in suite_element.iter("testcase") if c.find("failure") is not None]
    assert [c.get("name") for c in failed] == ["toaster"]
    assert "transcript:" in failed[0].find("failure").text


def test_k_and_a_selected_case_pass_with_exit_0(tmp_path):
    folder = suite(tmp_path)
    result = invoke(str(folder), "-k", "kettle or ok")
    assert result.exit_code == 0, result.output
    assert "2 passed in" in result.output and "toaster" not in result.output
    result = invoke(str(folder), "-k", "shop and not toaster")
    assert result.exit_code == 0 and "1 passed in" in result.output
    result = invoke(f"{folder / 'test_shop.yml'}::toaster")
    assert result.exit_code == 1 and "0 passed, 1 failed" in result.output
    missing = invoke(f"{folder / 'test_shop.yml'}::mixer")
    assert missing.exit_code == 2 and "has no case named 'mixer'" in missing.output


def test_a_test_file_with_errors_exits_2_and_says_where(tmp_path):
    bad = tmp_path / "test_bad.yml"
    bad.write_text(f"program: {REFUND}\nsteps:\n  - user: hi\n    bot_contans: x\n", encoding="utf-8")
    result = invoke(str(bad))
    assert result.exit_code == 2
    assert f"{bad}:4:5: error[TST002]: unknown key 'bot_contans' in a step (did you mean 'bot_contains'?)" \
        in result.output
    assert "0 passed, 1 unreadable file" in result.output


def test_the_refund_desk_examples_pass_through_frontdesk_test():
    result = invoke(str(REFUND))
    assert result.exit_code == 0, result.output
    cases = len(list((REFUND / "conversations").glob("*.yml"))) + len(load_test_file(
        REFUND / "tests" / "test_refunds.yml").cases)
    assert f"{cases} passed in" in result.output


def pytest_run(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", str(folder)],
                          check=False, cwd=folder, capture_output=True, text=True, timeout=300)


def test_the_pytest_plugin_makes_each_case_an_item(tmp_path):
    folder = suite(tmp_path)
    listed = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q",
                             str(folder)], check=False, cwd=folder, capture_output=True, text=True, timeout=300)
    ids = sorted(line for line in listed.stdout.splitlines() if "::" in line)
    assert ids == ["conversations/ok.yml::ok", "test_shop.yml::kettle", "test_shop.yml::toaster"], listed.stdout
    ran = pytest_run(folder)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "1 failed, 2 passed" in ran.stdout
    assert "conversation 'toaster' failed: 1 check(s)" in ran.stdout
    assert "test_shop.yml:10:23: turn 1: no message contains 'a toaster'" in ran.stdout
    assert "transcript:" in ran.stdout and ">> [1] user> A-100" in ran.stdout


def test_the_pytest_plugin_reports_a_bad_file_as_a_collection_error(tmp_path):
    (tmp_path / "test_bad.yml").write_text("steps:\n  - user: hi\n    agnet: x\n", encoding="utf-8")
    ran = pytest_run(tmp_path)
    assert ran.returncode != 0
    assert "ERROR collecting test_bad.yml" in ran.stdout and "test_bad.yml:3:5: error[TST002]" in ran.stdout


RASA = """\
fixtures:
  - known_order:
      - order_id: A-100
  - fixed_day:
      - mocked_datetime: "2026-11-22T10:00:00+00:00"
metadata:
  - web:
      channel: web
stub_custom_actions:
  process_refund:
    events:
      - event: slot
        name: refund_id
        value: R-9
      - event: slot
        name: amount
        value: 59
    responses:
      - text: The refund is on its way.
test_cases:
  - test_case: refund_happy_path
    fixtures:
      - fixed_day
    metadata: web
    steps:
      - user: my order is A-100
        assertions:
          - slot_was_set:
              - name: order_id
                value: A-100
          - action_executed: lookup_order
          - action_executed: action_listen
          - bot_uttered:
              utter_name: utter_confirm
              text_matches: "Shall I go ahead\\\\?"
      - user: "yes"
      - bot: "Done: refund R-9 of 59 EUR is on its way."
      - utter: utter_goodbye
      - slot_was_not_set:
          - order_id: A-999
  - test_case: everything_else
    fixtures: [known_order]
    steps:
      - user: hello
        metadata: web
        assertions:
          - flow_started:
              flow_ids: [Refund_Desk, Other]
              operator: any
          - flow_completed:
              flow_id: Refund_Desk
              flow_step_id: done
          - flow_cancelled:
              flow_id: Refund_Desk
          - pattern_clarification_contains: [a, b]
          - slot_was_not_set:
              - name: refund_id
          - bot_did_not_utter:
              text_matches: "error"
          - generative_response_is_relevant:
              threshold: 0.8
          - generative_response_is_grounded:
              threshold: 0.9
              ground_truth: Refunds take five days.
      - slot_was_set:
          - order_id
"""


def test_rasa_conversion_maps_what_it_can_and_reports_the_rest_with_lines(tmp_path):
    source = tmp_path / "e2e_test_cases.yml"
    source.write_text(RASA, encoding="utf-8")
    target = tmp_path / "tests" / "test_converted.yml"
    result = CliRunner().invoke(app, ["test", "--from-rasa", str(source), "-o", str(target), "--program",
                                      str(REFUND)])
    assert result.exit_code == 0, result.output
    out = result.output
    for line, words in [(6, "not converted: metadata:"), (10, "approximated: responses of stub process_refund"),
                        (24, "not converted: metadata:"), (32, "not converted: action_executed: action_listen"),
                        (33, "not converted: bot_uttered utter_name"), (38, "not converted: utter: utter_goodbye"),
                        (45, "not converted: metadata:"), (47, "approximated: flow_started with operator any"),
                        (50, "approximated: flow_completed flow_step_id"), (53, "not converted: flow_cancelled"),
                        (55, "approximated: pattern_clarification_contains"),
                        (60, "not converted: generative_response_is_relevant"),
                        (62, "approximated: generative_response_is_grounded")]:
        assert f"{source}:{line}: {words}" in out, (line, words, out)
    assert "2 test case(s) converted; 8 item(s) not converted, 5 approximated" in out
    converted = yaml.safe_load(target.read_text(encoding="utf-8"))
    assert Path(target.parent, converted["program"]).resolve() == REFUND.resolve()
    assert converted["fixtures"] == {"known_order": {"order_id": "A-100"}}
    assert converted["stub_tools"] == {"process_refund": {"result": {"refund_id": "R-9", "amount": 59}}}
    first, second = converted["test_cases"]
    assert first["today"] == "2026-11-22T10:00:00+00:00" and "fixtures" not in first
    assert first["steps"] == [
        {"user": "my order is A-100", "args": {"order_id": "A-100"}, "tool_called": ["lookup_order"],
         "bot_matches": ["Shall I go ahead\\?"]},
        {"user": "yes", "bot": ["Done: refund R-9 of 59 EUR is on its way."], "args_not_set": {"order_id": "A-999"}},
    ]
    assert second["fixtures"] == ["known_order"]
    assert second["steps"] == [
        {"user": "hello",
         "events": [{"type": "agent_started", "agent": "Refund_Desk"}, {"type": "agent_finished", "agent": "Refund_Desk"},
                    {"type": "step", "action": "clarifying question"}],
         "args_not_set": ["refund_id"], "bot_not_matches": ["error"],
         "bot_like": [{"text": "Refunds take five days.", "threshold": 0.9}], "args_set": ["order_id"]},
    ]
    # the converted file is a valid test file, and its first case passes against the refund desk
    test_file = load_test_file(target)
    assert [c.name for c in test_file.cases] == ["refund_happy_path", "everything_else"]
    result = Runner().run(test_file.cases[0])
    assert result.status == "passed", [f.format() for f in result.failures]
    assert "# Rasa items without an exact Frontdesk equivalent:" in target.read_text(encoding="utf-8")


def test_rasa_conversion_without_a_program_writes_adl_results_and_rejects_other_files(tmp_path):
    conversion = convert_rasa(textwrap.dedent("""\
        stub_custom_actions:
          case_a::action_check:
            events: [{event: slot, name: ok, value: true}]
            responses: [{text: fine}]
        test_cases:
          - test_case: case_a
            steps:
              - user: hi
              - bot: hello
              - bot: again
        """), "rasa.yml")
    (case,) = conversion.document["test_cases"]
    assert case["stub_tools"] == {"action_check": {"result": [{"status": "success", "msg": "fine"},
                                                                {"arg": "ok", "value": True}]}}
    assert case["steps"] == [{"user": "hi", "bot": ["hello", "again"]}]
    try:
        convert_rasa("stories: []\n", "stories.yml")
    except ValueError as exc:
        assert "test_cases" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("a file without test_cases was converted")
