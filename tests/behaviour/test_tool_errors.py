"""Tool errors: a tool that raises, one that runs past its time limit and one that returns an error
status each become an error result. The flow's `tool.error` / `tool.status` branch runs, the events say
why, no exception reaches the caller, and the conversation goes on."""

from __future__ import annotations

import time

from frontdesk.runtime.tools import StubToolRunner, ToolResult

from .conftest import said
from .programs import SLOW_TIMEOUT

UNAVAILABLE = "the service is unavailable right now, please try again later"
TOO_SLOW = "the service did not answer in time, please try again later"


def tool_results(result) -> dict[str, dict]:
    return {e.data["tool"]: e.data for e in result.events if e.type == "tool_result"}


def errors_by_place(result) -> dict[str, str]:
    return {e.data["where"]: e.data["message"] for e in result.events if e.type == "error"}


def test_failing_python_tools_take_the_flows_error_branches(make_program, converse):
    talk = converse(make_program("tool_errors"), None)
    began = time.monotonic()
    first = talk.start()
    elapsed = time.monotonic() - began
    assert said(first) == [
        f"explode failed: {UNAVAILABLE}",
        f"slow failed: {TOO_SLOW}",
        "refuse failed: card declined",
        "fine: reserved a kettle, ref R-7",
        "Still here. Anything else?",
    ]
    # the slow tool's own limit (from the program's tool settings) applied, not the 30 s default
    assert elapsed < 3, elapsed
    results = tool_results(first)
    assert {name: r["status"] for name, r in results.items()} == {
        "explode": "error", "slow": "error", "refuse": "error", "fine": "success"}
    assert "ValueError: database down" in results["explode"]["error"]
    assert f"within {SLOW_TIMEOUT:g} seconds" in results["slow"]["error"]
    assert results["refuse"]["error"] is None and results["refuse"]["message"] == "card declined"
    errors = errors_by_place(first)
    assert set(errors) == {"tool explode", "tool slow"}  # an error status is the tool's answer, not a failure
    assert "ValueError: database down" in errors["tool explode"]
    assert "did not finish" in errors["tool slow"]
    assert all("Traceback" not in line and "ValueError" not in line for line in said(first))
    assert first.active_agent == "main" and not first.ended

    # the conversation goes on, on a new engine
    last = talk.send("no thanks")
    assert said(last) == ["Bye."]
    assert last.ended
    talk.check_stored()


def test_stub_tools_that_fail_take_the_same_branches(make_program, converse):
    def explode():
        raise RuntimeError("stub broke")

    stub = StubToolRunner({
        "explode": explode,
        # "slow" has no answer: a tool the runner does not know is an error result too
        "refuse": ToolResult(status="error", message="card declined", error=None),
        "fine": lambda item: [{"status": "success", "msg": f"reserved {item}"}, {"arg": "ref", "value": "S-1"}],
    })
    talk = converse(make_program("stub_tools"), None, tools=stub)
    first = talk.start()
    assert said(first) == [
        f"explode failed: {UNAVAILABLE}",
        f"slow failed: {UNAVAILABLE}",
        "refuse failed: card declined",
        "fine: reserved a kettle, ref S-1",
        "Still here. Anything else?",
    ]
    assert stub.calls == [("explode", {}), ("slow", {}), ("refuse", {}), ("fine", {"item": "a kettle"})]
    errors = errors_by_place(first)
    assert "RuntimeError: stub broke" in errors["tool explode"]
    assert "no stub answer for slow" in errors["tool slow"]
    assert said(talk.send("no")) == ["Bye."]
    talk.check_stored()
