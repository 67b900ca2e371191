"""Conversation tests played through the engine: each check passing and failing, stubs, fixtures, the
scripted model's answers per turn, and `frontdesk chat --script` on the new files."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from frontdesk.convtest import runner as runner_module
from frontdesk.convtest.model import load_test_file
from frontdesk.convtest.runner import Runner

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
REFUND = EXAMPLES / "refund_desk"
NOT_ABUSIVE = '{purpose: other, reply: "no"}'  # the refund desk's civil guardrail judge


@pytest.fixture(scope="module")
def runner():
    return Runner()


def write(tmp_path: Path, body: str, program: Path = REFUND, name: str = "test_case.yml") -> Path:
    path = tmp_path / name
    path.write_text(f"program: {program}\n" + textwrap.dedent(body), encoding="utf-8")
    return path


def run(runner: Runner, path: Path, index: int = 0):
    return runner.run(load_test_file(path).cases[index])


def refund_case(checks_turn_1: str = "", checks_turn_2: str = "", stubs: str = "", fixtures: str = "") -> str:
    def indent(text: str) -> str:
        return textwrap.indent(textwrap.dedent(text).strip("\n"), "    ") + "\n" if text.strip() else ""

    return stubs + fixtures + "steps:\n  - user: my order is A-100\n" + f"    llm: [{NOT_ABUSIVE}]\n" + \
        indent(checks_turn_1) + "  - user: yes\n" + f"    llm: [{NOT_ABUSIVE}]\n" + indent(checks_turn_2)


PASSING = {
    "bot": ("bot: \"Order A-100: a kettle, 59 EUR, delivered.\"", ""),
    "bot_contains": ("bot_contains: [a kettle, Shall I go ahead]", ""),
    "bot_matches": ("bot_matches: 'refund .* in full \\(order_id: A-\\d+\\)'", ""),
    "bot_not": ("bot_not_contains: R-100\nbot_not_matches: 'refund R-\\d+'", ""),
    "agent": ("agent: Refund_Desk", "agent: null\nended: true"),
    "args": ("args: {order_id: A-100, Refund_Desk.order_id: A-100}\nargs_set: [order_id]", ""),
    "args_not_set": ("args_not_set: [nothing_here]", "args_not_set: {order_id: A-999}"),
    "tool_called": ("tool_called: {name: lookup_order, args: {order_id: A-100}}\ntool_not_called: process_refund",
                    "tool_called: process_refund"),
    "events": (("events:\n  - {type: tool_result, tool: lookup_order, status: success}\n"
                "  - {type: error, absent: true}"), ""),
}

FAILING = {
    "bot": ("bot: Order A-100", "no message is 'Order A-100'"),
    "bot_contains": ("bot_contains: [Shall I go ahead, a kettle]", "no message contains 'a kettle' after the previous"),
    "bot_matches": ("bot_matches: 'refund R-\\d+'", "no message matches"),
    "bot_not_contains": ("bot_not_contains: kettle", "a message contains 'kettle'"),
    "agent": ("agent: Someone_Else", "the active agent is 'Refund_Desk', not 'Someone_Else'"),
    "ended": ("ended: true", "the conversation has not ended"),
    "args": ("args: {order_id: A-200}", "order_id is session.order_id = \"A-100\", not \"A-200\""),
    "args_set": ("args_set: [refund_id]", "refund_id was not set in this turn"),
    "args_not_set": ("args_not_set: [order_id]", "order_id is set"),
    "tool_called": ("tool_called: {name: lookup_order, args: {order_id: A-200}}",
                    "lookup_order was called, but with {\"order_id\": \"A-100\"}"),
    "tool_called_missing": ("tool_called: process_refund",
                            "process_refund was not called in this turn; calls made: lookup_order"),
    "tool_not_called": ("tool_not_called: lookup_order", "lookup_order was called"),
    "events": ("events: [{type: tool_result, tool: lookup_order, status: error}]",
               "no event tool_result with {\"tool\": \"lookup_order\", \"status\": \"error\"}"),
    "event_absent": ("events: [{type: tool_call, absent: true}]", "unexpected event tool_call"),
}


@pytest.mark.parametrize("kind", PASSING)
def test_each_check_passes(kind, runner, tmp_path):
    first, second = PASSING[kind]
    result = run(runner, write(tmp_path, refund_case(first, second)))
    assert result.status == "passed", [f.format() for f in result.failures]


@pytest.mark.parametrize("kind", FAILING)
def test_each_check_fails_with_its_place_and_reason(kind, runner, tmp_path):
    check, words = FAILING[kind]
    path = write(tmp_path, refund_case(check))
    result = run(runner, path)
    assert result.status == "failed"
    (failure,) = result.failures
    assert words in failure.message, failure.message
    assert failure.turn == 1 and failure.span.file == str(path) and failure.span.line >= 5
    assert ">> [1] user> my order is A-100" in result.transcript(failure.turn)


def test_a_step_without_user_checks_the_latest_turn_and_the_opening_turn(runner, tmp_path):
    result = run(runner, write(tmp_path, """\
        steps:
          - bot: What is your order number? It starts with A-.
          - user: A-100
            llm: [{purpose: other, reply: "no"}]
          - bot_contains: a kettle
          - bot_contains: Shall I go ahead
        """))
    assert result.status == "passed", [f.format() for f in result.failures]


def test_scripted_answers_belong_to_their_turn(runner, tmp_path):
    # two answers written under the first turn: it uses one, and the second turn takes the other
    result = run(runner, write(tmp_path, """\
        steps:
          - user: my order is A-100
            llm: [{purpose: other, reply: "no"}, {purpose: other, reply: "no"}]
          - user: yes
        """))
    messages = [f.message for f in result.failures]
    assert result.status == "failed"
    # (the second turn then takes the answer left over: by then the count is right again)
    assert messages == ["the turn used 1 of the 2 scripted model answers written for it"]
    # without per-turn answers, the top-level list is one pool, and what is left over fails the case
    pooled = run(runner, write(tmp_path, f"""\
        llm: [{NOT_ABUSIVE}, {NOT_ABUSIVE}, {NOT_ABUSIVE}]
        steps:
          - user: my order is A-100
          - user: yes
        """, name="test_pool.yml"))
    assert [f.message for f in pooled.failures] == ["1 scripted model answer(s) were not used"]


CHATTER = """\
main:
  type: flow agent
  steps:
    - bot: Hello!
    - user
    - call: chatter

chatter:
  type: llm agent
  description: Chats about books.
  prompt: Talk with the customer about the books they like.
"""


def test_a_missing_answer_stops_the_case_at_its_turn(runner, tmp_path):
    program = tmp_path / "chatter"
    program.mkdir()
    (program / "agents.yml").write_text(CHATTER, encoding="utf-8")
    result = run(runner, write(tmp_path, """\
        steps:
          - user: tell me about a book you like
            bot_contains: never checked
          - user: yes
            bot: never checked either
        """, program=program))
    (failure,) = result.failures
    assert failure.turn == 1 and failure.span.line == 3
    # no answer scripted at all: the case runs as with no model deciding, and the LLM agent's call (it
    # has no tool that could answer offline) is the one that finds nothing to answer it
    assert "the scripted model: the script has no answer left for a 'reason' call" in failure.message
    assert [t.index for t in result.turns] == [0]


def test_stubbed_tools_answer_instead_of_the_code(runner, tmp_path):
    path = write(tmp_path, f"""\
        stub_tools:
          lookup_order:
            - when: {{order_id: A-555}}
              result: {{found: true, status: delivered, total: 12, item: a spoon}}
            - error: the order system is down
          process_refund: {{result: {{refund_id: R-555, amount: 12}}}}
        test_cases:
          - name: stubbed
            steps:
              - user: A-555
                llm: [{NOT_ABUSIVE}]
                bot_contains: a spoon, 12 EUR
              - user: yes
                llm: [{NOT_ABUSIVE}]
                bot: "Done: refund R-555 of 12 EUR is on its way."
          - name: failing_stub
            steps:
              - user: A-666
                llm: [{NOT_ABUSIVE}]
                events: [{{type: tool_result, tool: lookup_order, status: error}}]
          - name: unknown_tool
            stub_tools:
              lookup_ordr: {{result: 1}}
            steps:
              - user: A-555
        """)
    stubbed, failing, unknown = (run(runner, path, i) for i in range(3))
    assert stubbed.status == "passed", [f.format() for f in stubbed.failures]
    assert failing.status == "passed", [f.format() for f in failing.failures]
    (problem,) = unknown.failures
    assert "no tool 'lookup_ordr' (did you mean 'lookup_order'?)" in problem.message and problem.span.line == 24


def test_fixtures_set_arguments_before_the_first_turn(runner, tmp_path):
    path = write(tmp_path, f"""\
        fixtures:
          known_order: {{order_id: A-100}}
        test_cases:
          - name: with_fixture
            fixtures: [known_order]
            steps:
              - bot_contains: "Order A-100: a kettle"
                args: {{order_id: A-100}}
                events: [{{type: arg_set, name: order_id, why: fixture}}]
              - user: "no"
                llm: [{NOT_ABUSIVE}]
                bot: No refund was made.
          - name: inline_and_unknown
            fixtures: {{no_such_argument_anywhere: 1}}
            steps:
              - user: hi
        """)
    assert run(runner, path, 0).status == "passed", [f.format() for f in run(runner, path, 0).failures]
    # an ABL program keeps undeclared names in its session scope, so any name can be set there
    assert run(runner, path, 1).status in ("passed", "failed")


def test_fixtures_of_an_adl_program_must_name_an_argument(runner, tmp_path):
    path = write(tmp_path, """\
        fixtures: {nobody_has_this: 1}
        steps:
          - user: hi
        """, program=EXAMPLES / "bookstore")
    (failure,) = run(runner, path).failures
    assert "no agent of the program has an argument 'nobody_has_this'" in failure.message


def test_env_sets_variables_for_the_case_only(runner, tmp_path, monkeypatch):
    monkeypatch.delenv("FRONTDESK_EXAMPLE_DB_DIR", raising=False)
    seen = {}
    path = write(tmp_path, """\
        env: {FRONTDESK_EXAMPLE_DB_DIR: "{tmp}/db", SOMETHING: "{here}"}
        steps:
          - bot: What is your order number? It starts with A-.
        """)
    case = load_test_file(path).cases[0]
    with runner_module.case_environment(case):
        import os

        seen.update(db=os.environ["FRONTDESK_EXAMPLE_DB_DIR"], here=os.environ["SOMETHING"])
    assert seen["db"].endswith("/db") and "frontdesk-test-" in seen["db"] and seen["here"] == str(tmp_path)
    assert "FRONTDESK_EXAMPLE_DB_DIR" not in __import__("os").environ
    assert runner.run(case).status == "passed"


def test_a_program_that_does_not_load_is_an_error(runner, tmp_path):
    deep = tmp_path / "a" / "b" / "c" / "d" / "e"  # the search upward stays in tmp_path, whatever /tmp holds
    deep.mkdir(parents=True)
    path = deep / "test_nothing.yml"
    path.write_text("steps:\n  - user: hi\n", encoding="utf-8")
    result = runner.run(load_test_file(path).cases[0])
    assert result.status == "error" and "no program found" in result.reason


def test_skip_and_bot_like_without_the_model(runner, tmp_path, monkeypatch):
    path = write(tmp_path, """\
        test_cases:
          - name: skipped
            skip: not ready
            steps: [{user: hi}]
          - name: like
            steps:
              - bot_like: tell me your order number
        """)
    assert run(runner, path, 0).status == "skipped" and run(runner, path, 0).reason == "not ready"
    monkeypatch.setattr(runner_module, "embeddings_missing", lambda: "not installed here")
    like = run(runner, path, 1)
    assert like.status == "skipped" and "bot_like needs the local embedding model: not installed here" in like.reason


@pytest.mark.local
def test_bot_like_compares_meaning_with_the_local_model(runner, tmp_path):
    pytest.importorskip("sentence_transformers")
    path = write(tmp_path, """\
        test_cases:
          - name: close
            steps:
              - bot_like: {text: "Please tell me your order number; it begins with A-.", threshold: 0.7}
          - name: far
            steps:
              - bot_like: The weather in Lisbon is sunny today.
        """)
    assert run(runner, path, 0).status == "passed", [f.format() for f in run(runner, path, 0).failures]
    (failure,) = run(runner, path, 1).failures
    assert "no message is like" in failure.message and "scores" in failure.message


def test_chat_replays_a_conversation_test_and_runs_its_checks(tmp_path):
    from typer.testing import CliRunner

    from frontdesk.cli import app

    path = write(tmp_path, f"""\
        stub_tools:
          process_refund: {{result: {{refund_id: R-42, amount: 59}}}}
        steps:
          - user: A-100
            llm: [{NOT_ABUSIVE}]
          - user: yes
            llm: [{NOT_ABUSIVE}]
            bot: "Done: refund R-42 of 59 EUR is on its way."
            tool_called: process_refund
        """)
    ok = CliRunner().invoke(app, ["chat", str(REFUND), "--script", str(path), "--store", "memory"])
    assert ok.exit_code == 0, ok.output
    assert "Done: refund R-42 of 59 EUR" in ok.output and "script checks passed (2 expectations)" in ok.output
    broken = path.read_text().replace("R-42 of 59", "R-43 of 59", 1).replace("refund_id: R-42", "refund_id: R-42")
    path.write_text(broken.replace('bot: "Done: refund R-42', 'bot: "Done: refund R-43'), encoding="utf-8")
    bad = CliRunner().invoke(app, ["chat", str(REFUND), "--script", str(path), "--store", "memory"])
    assert bad.exit_code == 1
    assert "check failed:" in bad.output and "turn 2: no message is 'Done: refund R-43" in bad.output
