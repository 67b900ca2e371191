"""The conversation test format: what a file may say, and the errors (at file:line:column) when it is wrong."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from frontdesk.convtest.model import (
    TestFormatError,
    legacy_view,
    load_test_file,
    parse_test_file,
)
from frontdesk.llm.base import ScriptError
from frontdesk.testing import load_conversation


def parse(text: str, name: str = "test_x.yml"):
    return parse_test_file(textwrap.dedent(text), Path(name))


def errors(text: str) -> list[tuple[str, int, int, str]]:
    with pytest.raises(TestFormatError) as caught:
        parse(text)
    return [(d.code, d.span.line, d.span.column, d.message) for d in caught.value.diagnostics]


def test_one_conversation_turns_and_checks():
    (case,) = parse("""\
        today: 2026-11-22
        llm: [{reply: hi}]
        steps:
          - bot: Hello
          - user: yes
            llm: [{call: route, with: {agent: order}}]
            agent: order
            bot_contains: [a, b]
            args: {order_id: A-1, answer: no}
          - bot_matches: "c+"
          - user: "2"
            ended: true
        """).cases
    assert case.name == "test_x" and case.today == "2026-11-22" and case.per_turn_llm
    assert [t.user for t in case.turns] == [None, "yes", "2"]  # `yes` stays the text "yes"
    assert case.turns[0].llm == [{"reply": "hi"}]  # with per-turn answers, the top-level llm: is the opening's
    assert [c.kind for c in case.turns[1].checks] == ["agent", "bot_contains", "bot_contains", "args", "args",
                                                       "bot_matches"]
    assert case.turns[1].checks[4].value["value"] == "no"  # only true / false are booleans
    assert case.turns[2].checks[0].value is True


def test_test_cases_with_defaults_named_fixtures_and_stubs():
    file = parse("""\
        program: ../shop
        embeddings: true
        stub_tools:
          lookup: {result: {found: true}}
        fixtures:
          - known_user:
              - user_name: Ada
              - tier: gold
        test_cases:
          - test_case: first
            fixtures: [known_user]
            steps:
              - user: hi
          - name: second
            embeddings: false
            stub_tools:
              lookup:
                - {when: {id: 1}, result: [1]}
                - {error: down}
            fixtures: {tier: silver}
            steps:
              - user: hi
        """)
    first, second = file.cases
    assert first.name == "first" and first.embeddings and first.fixtures == {"user_name": "Ada", "tier": "gold"}
    assert first.program == Path("../shop") and first.stubs["lookup"][0].result == {"found": True}
    assert not second.embeddings and second.fixtures == {"tier": "silver"}
    assert [(a.when, a.result, a.error) for a in second.stubs["lookup"]] == [({"id": 1}, [1], None),
                                                                              ({}, None, "down")]


@pytest.mark.parametrize("text, code, line, column, words", [
    ("steps:\n  - user: hi\n    bot_contain: x\n", "TST002", 3, 5, "did you mean 'bot_contains'"),
    ("user: [hi]\nexpect: [x]\n", "TST004", 1, 1, "needs `steps:`"),
    ("steps:\n  - user: {a: b}\n", "TST003", 2, 11, "must be text"),
    ("steps:\n  - hello\n", "TST003", 2, 5, "a step is a mapping"),
    ("steps:\n  - user: hi\n    bot_matches: '(unclosed'\n", "TST005", 3, 18, "does not compile"),
    ("today: next week\nsteps:\n  - user: hi\n", "TST005", 1, 8, "not a date"),
    ("steps:\n  - user: hi\n    llm: [{purpose: rout, reply: x}]\n", "TST005", 3, 11, "did you mean 'route'"),
    ("steps:\n  - user: hi\n    bot_like: {text: x, threshold: 3}\n", "TST005", 3, 36, "threshold"),
    ("steps:\n  - user: hi\n    ended: maybe\n", "TST003", 3, 12, "true or false"),
    ("stub_tools:\n  t: {when: {a: 1}}\nsteps:\n  - user: hi\n", "TST004", 2, 6, "`result:`"),
    ("test_cases:\n  - steps:\n      - user: hi\n", "TST004", 2, 5, "needs a `name:`"),
    ("test_cases:\n  - name: a\n    fixtures: [nobody]\n    steps:\n      - user: hi\n", "TST005", 3, 16,
     "no fixture named 'nobody'"),
    ("test_cases:\n  - name: a\n    steps: [{user: x}]\n  - name: a\n    steps: [{user: y}]\n", "TST005", 4, 11,
     "two test cases are named 'a'"),
    ("steps:\n  - user: hi\n  - user: : bad\n", "TST001", 3, 11, "YAML syntax error"),
    ("steps:\n  - user: hi\n    user: again\n", "TST001", 3, 5, "duplicate key 'user'"),
])
def test_format_errors_say_where(text, code, line, column, words):
    found = errors(text)
    assert any(c == code and (ln, col) == (line, column) and words in message for c, ln, col, message in found), found


def test_every_problem_of_a_file_is_reported_at_once(tmp_path):
    path = tmp_path / "test_bad.yml"
    path.write_text("steps:\n  - user: hi\n    agnet: x\n  - user: yo\n    tool_caled: t\n", encoding="utf-8")
    with pytest.raises(TestFormatError) as caught:
        load_test_file(path)
    text = caught.value.format()
    assert f"{path}:3:5: error[TST002]" in text and f"{path}:5:5: error[TST002]" in text
    assert "    agnet: x" in text and "did you mean 'agent'" in text and "did you mean 'tool_called'" in text


def test_the_older_view_reads_a_case_and_names_a_case(tmp_path):
    path = tmp_path / "test_two.yml"
    path.write_text(textwrap.dedent("""\
        today: 2026-11-22
        test_cases:
          - name: one
            steps:
              - user: a
                bot: A
          - name: two
            llm: [{reply: x}]
            steps:
              - user: b
                bot_contains: B
                events: [agent_started]
        """), encoding="utf-8")
    view = load_conversation(f"{path}::two")
    assert view["user"] == ["b"] and view["llm"] == [{"reply": "x"}] and view["expect"] == ["B"]
    assert view["events"] == [{"type": "agent_started"}] and view["today"] == "2026-11-22"
    assert load_conversation(path)["case"].name == "one"
    with pytest.raises(ScriptError, match="no test case named 'three'"):
        load_conversation(f"{path}::three")
    bad = tmp_path / "test_bad.yml"
    bad.write_text("steps:\n  - usr: a\n", encoding="utf-8")
    with pytest.raises(ScriptError, match="TST002"):
        load_conversation(bad)
    assert legacy_view(load_test_file(path).cases[0])["expect"] == ["A"]
