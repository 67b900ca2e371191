"""Values another agent or another session gives are not 'never set' (issue 26, section 1): a DELEGATE's
INPUT fills the delegated agent's fields (no FD047/FD051), its RETURNS are the delegating agent's values
(no ABL023 when a constraint reads one, and at run time the constraint sees them), a plain-language
WHEN with OR is words for the model (no ABL013), a MEMORY session declaration is no 'set but never
read', and a persistent `user.` path declared by one agent is memory for every agent (no FD047 on
`user`), kept across sessions of one user; a session with no user id says why it keeps nothing."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

from frontdesk.lang import load_program
from frontdesk.llm.scripted import ScriptedProvider
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.tools import StubToolRunner
from frontdesk.store.longterm import DictMemoryStore
from frontdesk.store.memory import MemorySessionStore

PROJECT = Path(__file__).resolve().parent / "abl" / "values_passed_in"


def _findings(folder: Path) -> list[str]:
    program, diags = load_program(folder)
    assert program is not None, [d.format() for d in diags]
    return [f"{d.code} {d.message}" for d in diags if d.severity.value != "info"]


def test_delegate_inputs_and_returns_and_memory_declarations_are_not_reported(tmp_path):
    assert _findings(PROJECT) == []


def test_a_constraint_sees_what_a_delegate_returned(tmp_path):
    program, _ = load_program(PROJECT)
    llm = ScriptedProvider([
        {"purpose": "reason", "reply": "Hello, which flight?"},
        {"purpose": "reason", "call": "delegate_to_Cabin_Checker", "with": {"flight_no": "BA123", "cabin": "business"}},
        {"purpose": "reason", "call": "book_upgrade", "with": {"flight_no": "BA123", "cabin": "business"}},
        {"purpose": "reason", "reply": "Your upgrade is booked."},
    ])
    tools = StubToolRunner({"seats": {"free": 2}, "book_upgrade": {"confirmation": "U-1"}}, convention="value")
    engine = Engine(program, llm, MemorySessionStore(), tools=tools)
    sid = engine.start(user_id="ana").session_id
    result = engine.send(sid, "upgrade BA123 to business please")
    assert [c[0] for c in tools.calls] == ["seats", "book_upgrade"]  # the constraint let the booking run
    checked = [e.data for e in result.events if e.type == "constraint_check"]
    assert [(c["constraint"], c["passed"]) for c in checked] == [
        ("REQUIRE upgrade_available == true BEFORE calling book_upgrade", True)]


def test_without_the_returned_value_the_constraint_still_refuses(tmp_path):
    program, _ = load_program(PROJECT)
    llm = ScriptedProvider([
        {"purpose": "reason", "reply": "Hello, which flight?"},
        {"purpose": "reason", "call": "book_upgrade", "with": {"flight_no": "BA123", "cabin": "business"}},
        {"purpose": "reason", "reply": "Sorry."},
    ])
    tools = StubToolRunner({"book_upgrade": {"confirmation": "U-1"}}, convention="value")
    engine = Engine(program, llm, MemorySessionStore(), tools=tools)
    sid = engine.start(user_id="ana").session_id
    engine.send(sid, "upgrade BA123 to business please")
    assert tools.calls == []


def test_the_returns_make_the_value_known_to_check(tmp_path):
    folder = tmp_path / "p"
    shutil.copytree(PROJECT, folder)
    text = (folder / "upgrade.agent.abl").read_text()
    (folder / "upgrade.agent.abl").write_text(text.replace("RETURNS: {upgrade_available: boolean, seats_left: number}",
                                                           "RETURNS: {seats_left: number}"))
    assert any(f.startswith("ABL023 the constraint reads upgrade_available") for f in _findings(folder))


SUPERVISOR = """
SUPERVISOR: Front
GOAL: "Route pharmacy customers"

AGENTS:
  - Refill_Agent
  - Info_Agent

HANDOFF:
  - TO: Refill_Agent
    WHEN: user wants to submit a refill request
  - TO: Info_Agent
    WHEN: user asks about opening hours OR store locations
"""

REFILL = """
AGENT: Refill_Agent
GOAL: "Take refill requests"
GATHER:
  rx_number:
    prompt: "What is the prescription number?"
    type: string
    required: true
MEMORY:
  persistent:
    - PATH: user.last_rx
      SCOPE: user
      ACCESS: readwrite
FLOW:
  ask:
    GATHER: [rx_number]
    SET: user.last_rx = rx_number
    RESPOND: "Refill for {{rx_number}} requested."
    THEN: COMPLETE
"""

INFO = """
AGENT: Info_Agent
GOAL: "Answer questions about the pharmacy"
FLOW:
  say:
    RESPOND: "We are open 9 to 5. Your last refill: {{user.last_rx}}"
    THEN: COMPLETE
"""


def _pharmacy(tmp_path: Path) -> Path:
    for name, text in (("front", SUPERVISOR), ("refill", REFILL), ("info", INFO)):
        (tmp_path / f"{name}.agent.abl").write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return tmp_path


def test_plain_words_with_or_and_shared_user_memory_check_clean(tmp_path):
    folder = _pharmacy(tmp_path)
    assert _findings(folder) == []  # no ABL013 on "hours OR store", no FD047 on `user`
    program, _ = load_program(folder)
    member = program.agents["Front"].member("Info_Agent")
    assert member.condition is None and "opening hours" in member.description


def test_a_wrong_expression_in_a_when_is_still_an_error(tmp_path):
    folder = _pharmacy(tmp_path)
    text = (folder / "front.agent.abl").read_text()
    (folder / "front.agent.abl").write_text(text.replace("user asks about opening hours OR store locations",
                                                         'channel == "voice" OR'))
    program, diags = load_program(folder)
    assert [d.code for d in diags if d.is_error] == ["ABL013"]


def test_user_memory_written_by_one_agent_is_read_by_another_in_a_later_session(tmp_path):
    folder = _pharmacy(tmp_path)
    memory = DictMemoryStore()  # what the session store keeps across sessions

    def session(entry: str, user: str, *lines: str) -> list[str]:
        program, _ = load_program(folder, entry=entry)
        engine = Engine(program, None, MemorySessionStore(), memory=memory)
        started = engine.start(user_id=user)
        return [m.text for m in started.messages] + \
            [m.text for line in lines for m in engine.send(started.session_id, line).messages]

    assert session("Refill_Agent", "ana", "RX-555") == ["What is the prescription number?",
                                                        "Refill for RX-555 requested."]
    assert session("Info_Agent", "ana") == ["We are open 9 to 5. Your last refill: RX-555"]
    assert session("Info_Agent", "bo") == ["We are open 9 to 5. Your last refill: (none)"]


def test_a_session_with_no_user_says_why_user_memory_is_not_kept(tmp_path):
    program, _ = load_program(_pharmacy(tmp_path), entry="Refill_Agent")
    engine = Engine(program, None, MemorySessionStore())
    sid = engine.start().session_id
    result = engine.send(sid, "RX-555")
    warnings = [e.data["message"] for e in result.events if e.type == "warning"]
    assert any("the session has no user id" in w and "--user" in w for w in warnings), warnings


def test_an_agent_reached_only_by_a_constraints_on_fail_handoff_is_used(tmp_path):
    (tmp_path / "desk.agent.abl").write_text(textwrap.dedent("""
        AGENT: Table_Desk
        GOAL: "Book tables"
        GATHER:
          party_size:
            prompt: "How many people?"
            type: number
        TOOLS:
          book(party_size: number) -> {ok: boolean}
            python: tools.py
        CONSTRAINTS:
          - REQUIRE party_size <= 8 BEFORE calling book
            ON_FAIL: HANDOFF Events_Desk
        FLOW:
          ask:
            GATHER: [party_size]
            CALL: book(party_size)
            THEN: COMPLETE
        """).lstrip(), encoding="utf-8")
    (tmp_path / "events.agent.abl").write_text(textwrap.dedent("""
        AGENT: Events_Desk
        GOAL: "Look after large parties"
        FLOW:
          hello:
            RESPOND: "Our events team will call you."
            THEN: COMPLETE
        """).lstrip(), encoding="utf-8")
    (tmp_path / "tools.py").write_text("def book(party_size):\n    return {'ok': True}\n", encoding="utf-8")
    from frontdesk.analysis import with_analysis

    program, diags = load_program(tmp_path, entry="Table_Desk")
    assert not [d for d in with_analysis(program, list(diags)) if d.code == "FD043"]
