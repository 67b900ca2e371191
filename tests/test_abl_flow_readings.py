"""How an ABL flow reads answers where the specification leaves room (issue 26, section 3;
docs/abl-semantics.md): a field with a DEFAULT and no REQUIRED is not asked; a field with no PROMPT is
asked from its description and type; the current step's own ON_INPUT case takes a message before an
earlier step's CORRECTIONS; a correction that changes nothing keeps the value; a start date with a
length of stay gives the end date, and "2 nights" is not 2 guests. No model anywhere."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from frontdesk.convtest.model import load_test_file
from frontdesk.convtest.runner import Runner

ROOT = Path(__file__).resolve().parent.parent
HOTEL = ROOT / "examples" / "hotel_booking"


@pytest.fixture(scope="module")
def runner():
    return Runner()


def passes(runner: Runner, tmp_path: Path, program: Path, body: str) -> None:
    path = tmp_path / "case.yml"
    path.write_text(f"program: {program}\ntoday: 2026-11-22\n" + textwrap.dedent(body), encoding="utf-8")
    result = runner.run(load_test_file(path).cases[0])
    assert [f.message for f in result.failures] == []


def test_a_stay_length_gives_the_check_out_date_and_is_no_guest_count(runner, tmp_path):
    passes(runner, tmp_path, HOTEL, """\
        steps:
          - user: I need a room in Lisbon from tomorrow for 2 nights
            args: {destination: Lisbon, checkin: "2026-11-23", checkout: "2026-11-25"}
            args_not_set: [guests]
            bot: How many guests?
        """)


def test_a_correction_that_changes_nothing_keeps_the_value(runner, tmp_path):
    passes(runner, tmp_path, HOTEL, """\
        steps:
          - user: Paris
          - user: December 10
          - user: December 14
          - user: "2"
            bot_contains: for 2 guests
          - user: actually 2 guests
            bot_contains: for 2 guests, 720 EUR in all. Shall I book it?
            bot_not_contains: Please answer yes or no
            args: {guests: 2, checkin: "2026-12-10"}
        """)


def test_the_current_steps_own_case_takes_the_message_before_an_earlier_correction(runner, tmp_path):
    program = tmp_path / "hotel"
    shutil.copytree(HOTEL, program, ignore=shutil.ignore_patterns("conversations"))
    agent = program / "hotel_booking.agent.abl"
    agent.write_text(agent.read_text().replace("""    ON_INPUT:
      - IF: yes
        THEN: book""", """    ON_INPUT:
      - IF: input matches /(\\d+)\\s*rooms?/
        SET: rooms = match.1
        RESPOND: "{{rooms}} rooms noted."
        THEN: confirm
      - IF: yes
        THEN: book"""))
    passes(runner, tmp_path, program, """\
        steps:
          - user: Paris
          - user: December 10
          - user: December 14
          - user: "2"
          - user: make it 3 rooms
            bot_contains: 3 rooms noted.
            args: {guests: 2}
            events:
              - {type: gather_correction, absent: true}
        """)


DESK = """
AGENT: Meter_Desk
GOAL: "Take a meter reading"
GATHER:
  meter_id:
    description: "The meter number printed on your bill"
    type: string
  read_on:
    type: date
  unit:
    prompt: "Which unit?"
    type: string
    default: "kWh"
  tariff:
    prompt: "Which tariff?"
    type: string
    default: "day"
    required: true
FLOW:
  ask:
    GATHER: [meter_id, read_on, unit, tariff]
    STRATEGY: pattern
    RESPOND: "Meter {{meter_id}} on {{read_on}}: {{unit}}, {{tariff}} tariff."
    THEN: COMPLETE
"""


def test_fields_with_no_prompt_and_with_a_default(runner, tmp_path):
    (tmp_path / "desk").mkdir()
    (tmp_path / "desk" / "meter.agent.abl").write_text(DESK.lstrip(), encoding="utf-8")
    passes(runner, tmp_path, tmp_path / "desk", """\
        steps:
          - bot: Please tell me the meter number printed on your bill.
          - user: M-4471
            bot: Please tell me the read on (a date, e.g. 2026-12-01).
          - user: "2026-11-20"
            bot: Which tariff?
          - user: night
            bot: "Meter M-4471 on 2026-11-20: kWh, night tariff."
        """)
