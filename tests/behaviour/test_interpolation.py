"""Interpolation: bot messages show `${arg}` (the agent's own argument) and `${agent.arg}` (another
agent's), lists as a person writes them, and an unset value as `(none)` with a warning."""

from __future__ import annotations

from .conftest import said


def test_bot_messages_interpolate_own_and_other_agents_arguments(make_program, converse):
    talk = converse(make_program("interpolation"), None)
    first = talk.start()
    assert said(first) == [
        "Profile of Ada in Paris.",
        "Hello Ada, you live in Paris; zip (none).",
        "Your books: Dune, Emma and Ulysses. Again: Dune, Emma and Ulysses.",
        "What next, Ada?",
    ]
    warnings = [e for e in first.events if e.type == "warning" and e.data.get("where") == "bot message"]
    assert len(warnings) == 1 and "profile.zip" in warnings[0].data["message"]
    # the values are kept with the session: a new engine interpolates them on the next turn
    assert said(talk.send("nothing")) == ["Bye Ada."]
    talk.check_stored()
