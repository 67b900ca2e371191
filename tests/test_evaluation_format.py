"""The scenario file of `frontdesk eval`: what it reads, and errors with file, line and column."""

from __future__ import annotations

from pathlib import Path

from frontdesk.evaluation.scenarios import load_scenarios

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "bookstore" / "eval"

VALID = """\
defaults:
  max_turns: 5
  today: 2026-11-22
  fixtures: {triage.date: "2026-01-01"}
scenarios:
  - name: buy
    persona: A reader.
    goals: order a book
    first_message: "yes"
    fixtures: {order.books: [Emberwild]}
    evaluators:
      - tool_called: place_order
        with: {ordered_book: Emberwild}
        status: success
      - tool_called: place_order
      - completed
      - ended: false
      - value: triage.book
        equals: [Emberwild]
      - bot_said: {regex: 'Order \\d+'}
        name: order number
      - bot_never_said: refund
      - turns_at_most: 3
      - agent_not_reached: store_policy_kb
      - judge: the customer was helped
    script:
      user: [{reply: "ok"}, {call: finish, with: {reason: done, goals_met: true}}]
      llm: []
  - name: second
    persona: Someone else.
    goals: [one, two]
    max_turns: 2
    evaluators: [{agent_reached: order}]
"""


def write(tmp_path: Path, text: str, name: str = "scenarios.yml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def errors_of(path: Path, script: Path | None = None) -> list[str]:
    loaded, diags = load_scenarios(path, script)
    assert loaded is None, "the file was expected to be refused"
    return [f"{d.span}: {d.code}: {d.message}" for d in diags if d.is_error]


def test_a_valid_file_is_read_with_defaults_fixtures_and_labels(tmp_path):
    loaded, diags = load_scenarios(write(tmp_path, VALID))
    assert loaded is not None, [d.format() for d in diags]
    buy, second = loaded.scenarios
    assert (buy.name, buy.max_turns, buy.today, buy.first_message) == ("buy", 5, "2026-11-22", "yes")
    assert buy.goals == ["order a book"]
    assert buy.fixtures == {"triage.date": "2026-01-01", "order.books": ["Emberwild"]}
    labels = [e.label for e in buy.evaluators]
    assert labels[:2] == ["called place_order(ordered_book='Emberwild')", "called place_order"]
    assert "order number" in labels and "completed" in labels and "not ended" in labels
    kinds = {e.kind for e in buy.evaluators}
    assert kinds == {"tool_called", "completed", "ended", "value", "bot_said", "bot_never_said", "turns_at_most",
                     "agent_not_reached", "judge"}
    assert buy.evaluators[0].options == {"with": {"ordered_book": "Emberwild"}, "status": "success"}
    assert buy.script.user[1] == {"call": "finish", "with": {"reason": "done", "goals_met": True}}
    assert buy.script.llm == [] and buy.script.judge is None
    assert buy.needs_judge and not second.needs_judge
    assert (second.max_turns, second.goals, second.script) == (2, ["one", "two"], None)


def test_the_bookstore_example_and_its_offline_script_are_valid():
    loaded, diags = load_scenarios(EXAMPLE / "scenarios.yml", EXAMPLE / "offline.script.yml")
    assert loaded is not None, [d.format() for d in diags]
    assert [s.name for s in loaded.scenarios] == ["recommend_and_buy", "returns_policy", "refuse_late_refund"]
    assert all(s.script and s.script.user and s.script.judge and s.script.llm for s in loaded.scenarios)


def test_unknown_keys_are_located_and_a_close_one_is_suggested(tmp_path):
    path = write(tmp_path, "scenarios:\n  - name: a\n    persona: p\n    goals: g\n    max_turn: 3\n"
                           "    evaluators: [completed]\n")
    [error] = errors_of(path)
    assert error.startswith(f"{path}:5:5: EVAL003: unknown key 'max_turn' in a scenario (did you mean 'max_turns'?)")


def test_missing_required_keys_name_the_scenario(tmp_path):
    path = write(tmp_path, "scenarios:\n  - name: lonely\n    goals: g\n    evaluators: [completed]\n")
    [error] = errors_of(path)
    assert ":2:5: EVAL004: scenario 'lonely' has no 'persona'" in error


def test_an_evaluator_without_a_kind_or_with_two_is_refused(tmp_path):
    path = write(tmp_path, "scenarios:\n  - name: a\n    persona: p\n    goals: g\n    evaluators:\n"
                           "      - tool_caled: place_order\n"
                           "      - tool_called: x\n        agent_reached: y\n")
    errors = errors_of(path)
    assert any(":6:9: EVAL007: this evaluator has no kind: 'tool_caled' is not one (did you mean 'tool_called'?)"
               in e for e in errors), errors
    assert any(":7:9: EVAL007: an evaluator has one kind, this one has 2" in e for e in errors), errors


def test_bad_values_are_located(tmp_path):
    path = write(tmp_path, "scenarios:\n  - name: a\n    persona: p\n    goals: g\n    max_turns: 0\n"
                           "    today: someday\n    evaluators:\n"
                           "      - bot_said: {regex: '(unclosed'}\n"
                           "      - turns_at_most: many\n"
                           "      - tool_called: t\n        status: maybe\n"
                           "      - value: a.b\n        equals: 1\n        contains: 2\n")
    errors = errors_of(path)
    assert any(":5:16: EVAL005: max_turns must be between 1 and 200, not 0" in e for e in errors), errors
    assert any(":6:12: EVAL005: today: 'someday' is not a date" in e for e in errors), errors
    assert any(":8:27: EVAL005: regex: not a valid regular expression" in e for e in errors), errors
    assert any(":9:24: EVAL002: turns_at_most must be a whole number" in e for e in errors), errors
    assert any(":11:17: EVAL005: status must be success or error" in e for e in errors), errors
    assert any(":12:9: EVAL007: a 'value' evaluator tests one thing" in e for e in errors), errors


def test_yaml_syntax_errors_and_duplicate_keys_are_eval001(tmp_path):
    broken = write(tmp_path, "scenarios:\n  - name: a\n    persona: [unclosed\n")
    [error] = errors_of(broken)
    assert "EVAL001: YAML syntax error" in error and error.startswith(str(broken) + ":")
    duplicate = write(tmp_path, "scenarios:\n  - name: a\n    name: b\n    persona: p\n    goals: g\n"
                                "    evaluators: [completed]\n", "dup.yml")
    [error] = errors_of(duplicate)
    assert ":3:5: EVAL001: duplicate key 'name'" in error


def test_two_scenarios_may_not_share_a_name(tmp_path):
    one = "  - name: same\n    persona: p\n    goals: g\n    evaluators: [completed]\n"
    path = write(tmp_path, "scenarios:\n" + one + one)
    [error] = errors_of(path)
    assert ":6:5: EVAL006: two scenarios are named 'same' (the first at line 2)" in error


def test_script_answers_are_checked_where_they_are_written(tmp_path):
    path = write(tmp_path, "scenarios:\n  - name: a\n    persona: p\n    goals: g\n    evaluators: [completed]\n"
                           "    script:\n      user:\n        - {reply: 3}\n      bot: []\n")
    errors = errors_of(path)
    assert any(":8:11: EVAL008: script 'user': script entry 1: 'reply' must be text" in e for e in errors), errors
    assert any(":9:7: EVAL003: unknown key 'bot' in a scenario's script" in e for e in errors), errors


def test_a_script_file_naming_an_unknown_scenario_is_located_in_that_file(tmp_path):
    path = write(tmp_path, "scenarios:\n  - name: buy_book\n    persona: p\n    goals: g\n"
                           "    evaluators: [completed]\n")
    script = write(tmp_path, "buy_books:\n  user: [{reply: hi}]\n", "script.yml")
    [error] = errors_of(path, script)
    assert error.startswith(f"{script}:1:1: EVAL003: the script names scenario 'buy_books', which is not in the "
                            "scenario file (did you mean 'buy_book'?)")


def test_a_script_file_fills_in_roles_and_wins_over_the_scenario(tmp_path):
    path = write(tmp_path, "scenarios:\n  - name: a\n    persona: p\n    goals: g\n    evaluators: [completed]\n"
                           "    script: {user: [{reply: own}], llm: [{reply: bot}]}\n")
    script = write(tmp_path, "a:\n  user: [{reply: given}]\n  judge: [{reply: '{}'}]\n", "script.yml")
    loaded, diags = load_scenarios(path, script)
    assert loaded is not None, [d.format() for d in diags]
    s = loaded.scenarios[0].script
    assert (s.user, s.judge, s.llm) == ([{"reply": "given"}], [{"reply": "{}"}], [{"reply": "bot"}])


def test_a_script_named_in_the_file_is_read_beside_it(tmp_path):
    write(tmp_path, "a:\n  user: [{reply: hi}]\n", "offline.yml")
    path = write(tmp_path, "script: offline.yml\nscenarios:\n  - name: a\n    persona: p\n    goals: g\n"
                           "    evaluators: [completed]\n")
    loaded, diags = load_scenarios(path)
    assert loaded is not None, [d.format() for d in diags]
    assert loaded.scenarios[0].script.user == [{"reply": "hi"}]


def test_a_file_that_is_not_a_mapping_or_has_no_scenarios(tmp_path):
    [error] = errors_of(write(tmp_path, "- just\n- a list\n"))
    assert ":1:1: EVAL002: a scenario file must be a mapping, not a list" in error
    [error] = errors_of(write(tmp_path, "defaults: {max_turns: 3}\n", "none.yml"))
    assert ":1:1: EVAL004: a scenario file needs a 'scenarios:' list" in error
    [error] = errors_of(tmp_path / "missing.yml")
    assert "EVAL009: cannot read" in error
