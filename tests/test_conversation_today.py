"""A conversation file's `today:` fixes the clock its session runs at, so that "tomorrow" and
"next friday" read the same dates on every day the file is replayed."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from frontdesk.lang import load_program
from frontdesk.llm.base import ScriptError
from frontdesk.testing import clock_for, load_conversation, run_conversation, scripted_model

HOTEL = Path(__file__).resolve().parent.parent / "examples" / "hotel_booking"


def test_clock_for_reads_dates_and_datetimes():
    assert clock_for(None) is None and clock_for("") is None
    assert datetime.fromtimestamp(clock_for("2026-11-22")(), UTC) == datetime(2026, 11, 22, 9, tzinfo=UTC)
    assert datetime.fromtimestamp(clock_for("2026-11-22T18:30")(), UTC) == datetime(2026, 11, 22, 18, 30, tzinfo=UTC)
    with pytest.raises(ScriptError, match="not a date"):
        clock_for("next week")


@pytest.mark.parametrize("today, conforms", [("2026-11-22", True), ("2026-11-26", False)])
def test_the_day_decides_what_next_friday_is(today, conforms, tmp_path, monkeypatch):
    # On Sunday 22 November "tomorrow" is Monday and "next friday" the 27th: a valid stay. On Thursday
    # 26 November both are Friday the 27th and the check-out date is refused.
    monkeypatch.setenv("FRONTDESK_EXAMPLE_DB_DIR", str(tmp_path))
    spec = load_conversation(HOTEL / "conversations" / "happy_path.yml")
    assert spec["today"] is not None
    program, _ = load_program(HOTEL)
    llm = scripted_model(spec)
    try:
        run = run_conversation(program, spec["user"][:4], llm, today=today)
    except ScriptError:  # the refused date sends the flow to a model the script does not have
        assert not conforms
        return
    said = " ".join(m.text for t in run.turns for m in t.messages)
    assert ("How many guests?" in said) is conforms
