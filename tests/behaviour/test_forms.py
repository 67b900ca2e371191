"""The forms of each behaviour's program are the same program: same agents of the same kinds with the
same arguments, members and policies, and the same settings. A form that drifted would make the
behaviour tests compare different things."""

from __future__ import annotations

import pytest

from .programs import BEHAVIOURS, FORMS

REFERENCE = "adl"


def outline(program) -> dict:
    agents = {}
    for name, agent in program.agents.items():
        agents[name] = {
            "kind": agent.kind,
            "args": agent.arg_names(),
            "fallback": agent.fallback.model_dump() if agent.fallback else None,
            "exit": agent.exit.model_dump() if agent.exit else None,
            "members": [m.agent for m in getattr(agent, "members", [])],
            "subflows": sorted(getattr(getattr(agent, "graph", None), "subflows", {}) or {}),
            "setup": agent.setup is not None,
        }
    settings = program.settings
    return {
        "entry": program.entry,
        "agents": agents,
        "max_consecutive_fallbacks": settings.max_consecutive_fallbacks,
        "tool_timeouts": {name: limits.timeout for name, limits in settings.tools.per_tool.items()},
    }


@pytest.mark.parametrize("form", sorted(set(FORMS) - {REFERENCE}))
@pytest.mark.parametrize("behaviour", BEHAVIOURS)
def test_every_form_gives_the_same_program(behaviour, form, tmp_path):
    if behaviour not in FORMS[form] or behaviour not in FORMS[REFERENCE]:
        pytest.skip(f"{behaviour!r} is not given in both {REFERENCE} and {form}")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    reference = FORMS[REFERENCE][behaviour](tmp_path / "a")
    other = FORMS[form][behaviour](tmp_path / "b")
    assert outline(other) == outline(reference)


# Behaviours ADL has no syntax for (handoffs that come back, delegation): the builder gives them,
# and ABL will.
BEYOND_ADL = {"handoff_return", "delegation"}


def test_the_builder_form_gives_every_behaviour():
    assert set(FORMS["builder"]) == set(BEHAVIOURS)
    assert set(FORMS[REFERENCE]) == set(BEHAVIOURS) - BEYOND_ADL
