"""Inactivity policies: ADL exit policy text read into timed rules, and `Engine.idle` running the rule
that is due (a reminder, then good-bye and the end of the session), counted from the user's last message."""

from __future__ import annotations

import textwrap

import pytest

from frontdesk.lang import load_program
from frontdesk.lang.adl.policy_text import read_policy
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.inactivity import DEFAULT_GOODBYE, DEFAULT_REMINDER
from frontdesk.store.memory import MemorySessionStore

PAPER = ("If there is no input from the user for 30 seconds, please remind the user for an input. "
         "If there is no input for 3 minutes, please say good-bye to the user.")


def test_the_papers_exit_policy_is_two_rules():
    rules = read_policy(PAPER)
    assert [(r.after, r.action, r.text) for r in rules] == [(30, "remind", ""), (180, "end", "")]


@pytest.mark.parametrize("text, expected", [
    ('When there is no reply within two minutes, say "Still with me?"', [(120, "remind", "Still with me?")]),
    ("After no activity for 1 hour, close the conversation.", [(3600, "end", "")]),
    ("Hand over to the billing agent.", []),
    ("If the user gives no answer for 45 sec remind them; with no answer for 10 min end the chat.",
     [(45, "remind", ""), (600, "end", "")]),
])
def test_other_wordings(text, expected):
    assert [(r.after, r.action, r.text) for r in read_policy(text)] == expected


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def engine(tmp_path):
    (tmp_path / "agents.yml").write_text(textwrap.dedent(f"""
        main:
          type: flow agent
          exit: "{PAPER}"
          steps:
            - label: top
            - bot: "What can I do for you?"
            - user
            - bot: "Noted."
            - next: top
        """), encoding="utf-8")
    program, diags = load_program(tmp_path)
    assert program is not None, [d.format() for d in diags]
    assert [r.after for r in program.agents["main"].exit.inactivity] == [30, 180]
    return Engine(program, None, MemorySessionStore(), clock=Clock())


def test_a_reminder_then_good_bye_counted_from_the_last_message(engine):
    clock = engine.clock
    session = engine.start().session_id
    clock.now += 10
    assert engine.idle(session) is None  # not yet
    clock.now += 25
    reminded = engine.idle(session)
    assert [m.text for m in reminded.messages] == [DEFAULT_REMINDER] and not reminded.ended
    assert [e.data["action"] for e in reminded.events if e.type == "inactivity"] == ["remind"]
    assert engine.idle(session) is None  # a rule runs once
    clock.now += 60
    engine.send(session, "sorry, I'm back")  # the count starts again
    clock.now += 100
    assert [m.text for m in engine.idle(session).messages] == [DEFAULT_REMINDER]
    clock.now += 100
    ended = engine.idle(session)
    assert [m.text for m in ended.messages] == [DEFAULT_GOODBYE] and ended.ended
    assert engine.store.load(session)["status"] == "ended"
    clock.now += 1000
    assert engine.idle(session) is None  # an ended session has no rules


def test_a_user_gone_long_is_told_good_bye_without_a_reminder_first(engine):
    session = engine.start().session_id
    engine.clock.now += 500
    result = engine.idle(session)
    assert [m.text for m in result.messages] == [DEFAULT_GOODBYE] and result.ended


def test_a_program_without_inactivity_rules_never_idles(tmp_path):
    (tmp_path / "agents.yml").write_text("main:\n  type: flow agent\n  steps:\n    - user\n", encoding="utf-8")
    program, _ = load_program(tmp_path)
    engine = Engine(program, None, MemorySessionStore(), clock=Clock())
    session = engine.start().session_id
    engine.clock.now += 10_000
    assert engine.idle(session) is None
