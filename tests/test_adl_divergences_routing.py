"""Issue 25, section 2: where Frontdesk ran ensembles, exits and goodbyes otherwise than MICA or the ADL
paper (docs/adl-semantics.md, "Ensembles, exits and goodbyes"). Each test failed before its fix."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from frontdesk.lang import load_program
from frontdesk.llm import ScriptedProvider
from frontdesk.runtime.engine import ENDED_REPLY, Engine
from frontdesk.runtime.orchestration import EXIT_CHOICE
from frontdesk.runtime.routing import GOODBYE, typed_goodbye
from frontdesk.store.memory import MemorySessionStore
from frontdesk.testing import run_conversation

from adl_text import program
from adl_text import said as turn_said

ROOT = Path(__file__).resolve().parent.parent
BOOKSTORE = ROOT / "examples" / "bookstore"

BIKE_SHOP = """
    main:
      type: ensemble agent
      description: A bike shop.
      contains:
        - repair
        - opening_hours
      steps:
        - bot: "Hi! How can I help?"
      exit: default

    repair:
      type: flow agent
      description: Book a bike repair.
      steps:
        - bot: "What kind of bike is it?"
        - user
        - bot: "Booked."

    opening_hours:
      type: flow agent
      description: Tell the shop's opening hours.
      steps:
        - bot: "We are open 9 to 5."
"""


# ---- 1. an ensemble whose steps are just `- user` ------------------------------------------------------


def test_an_ensemble_whose_steps_are_just_user_hands_the_first_message_to_its_member(tmp_path):
    prog = program(tmp_path, """
        main:
          type: ensemble agent
          description: A bike shop.
          contains:
            - repair
          steps:
            - user

        repair:
          type: flow agent
          description: Book a bike repair.
          steps:
            - bot: "What kind of bike is it?"
            - user
            - bot: "Booked."
    """)
    run = run_conversation(prog, ["I need my bike fixed", "a mountain bike"], None)
    # the steps read the first message and the member handles it in the same turn (not "anything else?")
    assert turn_said(run, 1) == ["What kind of bike is it?"]
    assert turn_said(run, 2) == ["Booked."]
    assert [e["agent"] for e in run.events_of("agent_started")] == ["main", "repair"]


def test_start_steps_that_answer_the_message_they_read_keep_it(tmp_path):
    prog = program(tmp_path, """
        main:
          type: ensemble agent
          description: A bike shop.
          contains:
            - repair
          steps:
            - user
            - bot: "Welcome to the shop."

        repair:
          type: flow agent
          description: Book a bike repair.
          steps:
            - bot: "What kind of bike is it?"
            - user
            - bot: "Booked."
    """)
    run = run_conversation(prog, ["hello"], None)
    assert turn_said(run, 1) == ["Welcome to the shop."]  # the steps answered it: no member starts on it
    assert [e["agent"] for e in run.events_of("agent_started")] == ["main"]


# ---- 2. exit: default ----------------------------------------------------------------------------------


def test_exit_default_says_goodbye_and_ends_the_session_with_no_model(tmp_path):
    run = run_conversation(program(tmp_path, BIKE_SHOP), ["That's all, goodbye", "hello?"], None)
    assert turn_said(run, 1) == [GOODBYE]
    assert run.turns[1].ended
    assert [e["data"]["reason"] for e in run.events_of("session_ended")] == ["the user ended the conversation"]
    assert turn_said(run, 2) == [ENDED_REPLY]
    assert run.events_of("llm_call") == []


def test_exit_default_ends_the_session_when_the_model_judges_the_message_a_goodbye(tmp_path):
    llm = ScriptedProvider([{"purpose": "route", "call": "route", "with": {"agent": EXIT_CHOICE}}])
    run = run_conversation(program(tmp_path, BIKE_SHOP), ["Cheers, I'm off now"], llm)
    assert turn_said(run, 1) == [GOODBYE]
    assert run.turns[1].ended
    # the routing call offered the model the choice to end the conversation
    prompt = str(run.events_of("llm_call")[0]["data"]["messages"])
    assert f"- {EXIT_CHOICE}: The user is ending the conversation" in prompt


def test_a_goodbye_the_model_reads_while_a_member_is_active_drops_its_task(tmp_path):
    llm = ScriptedProvider([{"purpose": "route", "call": "route", "with": {"agent": "repair"}},
                            {"purpose": "route", "call": "route", "with": {"agent": EXIT_CHOICE}}])
    engine = Engine(program(tmp_path, BIKE_SHOP), llm, MemorySessionStore(), orchestration="proactive")
    session = engine.start().session_id
    assert [m.text for m in engine.send(session, "fix my bike").messages] == ["What kind of bike is it?"]
    last = engine.send(session, "actually never mind, bye")
    assert [m.text for m in last.messages] == [GOODBYE] and last.ended
    assert [e.agent for e in last.events if e.type == "agent_dropped"] == ["repair"]


def test_a_router_without_an_exit_policy_offers_no_way_out(tmp_path):
    prog = program(tmp_path, BIKE_SHOP.replace("      exit: default\n", ""))
    llm = ScriptedProvider([{"purpose": "route", "call": "route", "with": {"agent": "none"}}])
    run = run_conversation(prog, ["That's all, goodbye"], llm)
    assert not run.turns[1].ended
    assert EXIT_CHOICE not in str(run.events_of("llm_call")[0]["data"]["messages"])


def test_a_question_with_a_model_is_routed_as_before(tmp_path):
    llm = ScriptedProvider([{"purpose": "route", "call": "route", "with": {"agent": "opening_hours"}}])
    run = run_conversation(program(tmp_path, BIKE_SHOP), ["When are you open?"], llm)
    assert turn_said(run, 1) == ["We are open 9 to 5."]
    assert not run.turns[1].ended


@pytest.mark.parametrize(("text", "goodbye"), [
    ("That's all, goodbye", True), ("thanks, bye", True), ("No, that's all for today, thank you.", True),
    ("Bye!", True), ("No thanks.", False), ("thanks", False), ("thanks, what are your opening hours?", False),
    ("That's all I need: a new tyre", False), ("I'm done with the book, can I return it?", False),
])
def test_the_closing_words_read_without_a_model(text, goodbye):
    assert typed_goodbye(text) is goodbye


# ---- 3. a goodbye ends the topic stack (the offline bookstore) ------------------------------------------


def test_the_offline_bookstore_says_goodbye_once_and_nothing_suspended_comes_back(local_model, tmp_path,
                                                                                  monkeypatch):
    monkeypatch.setenv("FRONTDESK_EXAMPLE_DB_DIR", str(tmp_path))
    monkeypatch.setenv("FRONTDESK_EXAMPLE_TODAY", "2026-11-22")
    prog, _ = load_program(BOOKSTORE)
    understanding, embedder = local_model
    run = run_conversation(prog, ["Can you recommend a science fiction book?", "thanks, bye"], None,
                           understanding=understanding, embedder=embedder)
    # with no model the recommender could not answer; it waits, interrupted, when the user leaves
    assert [m.agent for m in run.turns[1].messages] == ["book_recommendation"]
    last = run.turns[2]
    assert [(m.agent, m.text) for m in last.messages] == [
        ("store_policy_kb", "Looking forward to serving you next time.")]
    assert last.ended
    dropped = [e for e in run.events_of("agent_dropped") if e["turn"] == 2]
    assert [e["agent"] for e in dropped] == ["book_recommendation"]


# ---- 4. frontdesk chat --script --session ---------------------------------------------------------------


def frontdesk(*args: str, cwd: Path, stdin: str = "") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FRONTDESK_LLM", "OPENAI_"))}
    return subprocess.run([sys.executable, "-m", "frontdesk.cli", *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True, env=env, timeout=120)


def test_a_script_on_a_continued_session_is_checked_from_where_the_session_is(tmp_path):
    (tmp_path / "agents.yml").write_text(textwrap.dedent("""
        main:
          type: flow agent
          steps:
            - label: loop
            - bot: "Say something."
            - user
            - bot: "Got it."
            - next: loop
    """), encoding="utf-8")
    (tmp_path / "more.yml").write_text(textwrap.dedent("""
        steps:
          - user: second
            bot_contains: Got it.
          - user: third
            bot_contains: Got it.
            events:
              - {type: input_taken, agent: main}
    """), encoding="utf-8")
    first = frontdesk("chat", "agents.yml", "--store", "s.sqlite3", "--llm", "none", "--no-embeddings", stdin="first\n", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    session = next(line.split()[-1] for line in first.stderr.splitlines() if "frontdesk trace" in line)
    again = frontdesk("chat", "agents.yml", "--store", "s.sqlite3", "--llm", "none", "--no-embeddings", "--session", session,
                      "--script", "more.yml", cwd=tmp_path)
    assert "script checks passed (3 expectations)" in again.stderr, again.stderr
    assert again.returncode == 0
    (tmp_path / "wrong.yml").write_text("steps:\n  - user: fourth\n    bot_contains: Nope.\n", encoding="utf-8")
    wrong = frontdesk("chat", "agents.yml", "--store", "s.sqlite3", "--llm", "none", "--no-embeddings", "--session", session,
                      "--script", "wrong.yml", cwd=tmp_path)
    assert wrong.returncode == 1
    # the failure is the script's first step, shown with the session's own turn (the fourth message)
    assert "turn 1: no message contains 'Nope.'" in wrong.stderr
    assert "events of turn 4:" in wrong.stderr and '"text": "fourth"' in wrong.stderr
