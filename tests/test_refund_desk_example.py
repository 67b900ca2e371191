"""examples/refund_desk end to end: an unknown order is an answer (ON_RESULT), not a tool error (ON_ERROR and
ON_FAIL); a lower-case order number is accepted; a session escalated by `LIMIT constraint_failures < 3`
can leave escalation once the person hands it back; an input guardrail's reply is said by the agent; and
the CLI records the project folder as the session's program."""

from __future__ import annotations

import shutil
from pathlib import Path

from frontdesk.lang import load_program
from frontdesk.runtime.engine import Engine
from frontdesk.store.memory import MemorySessionStore

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "refund_desk"


def _engine(folder: Path = EXAMPLE) -> Engine:
    program, diags = load_program(folder)
    assert program is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    return Engine(program, None, MemorySessionStore())


def _chat(engine: Engine, lines: list[str], sid: str | None = None) -> tuple[str, list[str], list]:
    if sid is None:
        first = engine.start(program_label="test")
        sid, said, events = first.session_id, [m.text for m in first.messages], list(first.events)
    else:
        said, events = [], []
    for line in lines:
        result = engine.send(sid, line)
        said += [m.text for m in result.messages]
        events += result.events
    return sid, said, events


def test_an_unknown_order_is_no_such_order_and_the_question_is_asked_again():
    engine = _engine()
    sid, said, events = _chat(engine, ["refund A-999"])
    assert said[-2:] == ["I can't find an order A-999. Please check the number.",
                         "What is your order number? It starts with A-."]
    assert not any("not answering" in s or "Shall I go ahead" in s or "Order A-999:" in s for s in said)
    result = next(e for e in events if e.type == "tool_result" and e.data["tool"] == "lookup_order")
    assert result.data["status"] == "success" and result.data["args"] == {"found": False}
    state = engine.load_state(sid)
    assert not state.system.get("tool_failures")  # not a failure
    assert state.variables["session"].get("order_id") is None  # cleared: asked again
    _, said, _ = _chat(engine, ["a-100"], sid)  # lower case: accepted, and written in capitals
    assert said[0] == "Order A-100: a kettle, 59 EUR, delivered."


def test_a_broken_order_system_is_an_error_and_the_flow_does_not_go_on(tmp_path):
    """The same example with a lookup that raises: ON_ERROR says the system is not answering (after its
    retry), ON_FAIL ends the flow: no order line with empty values, no refund offered."""
    folder = tmp_path / "refund_desk"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("conversations", "__pycache__"))
    source = (folder / "orders.py").read_text(encoding="utf-8")
    (folder / "orders.py").write_text(source.replace(
        '    order = ORDERS.get(order_id.strip().upper())\n    if order is None:\n        return {"found": False}',
        '    raise ConnectionError("the order database is down")', 1), encoding="utf-8")
    assert "database is down" in (folder / "orders.py").read_text(encoding="utf-8")
    engine = _engine(folder)
    sid, said, events = _chat(engine, ["refund A-100"])
    assert said[-1] == "Our order system is not answering. Please try again in a few minutes."
    assert not any(s.startswith("Order A-100") or "Shall I go ahead" in s or "can't find" in s for s in said)
    results = [e for e in events if e.type == "tool_result" and e.data["tool"] == "lookup_order"]
    assert [r.data["status"] for r in results] == ["error", "error"]  # the call and ON_ERROR's RETRY: 1
    assert engine.load_state(sid).system["tool_failures"] == 2


def test_after_the_person_hands_back_the_session_leaves_escalation():
    engine = _engine()
    sid, said, _ = _chat(engine, ["refund A-200", "A-200", "A-200 please"])
    assert said[-1] == "I'm passing you to a colleague, who can see this conversation."
    state = engine.load_state(sid)
    assert state.status == "escalated" and state.system["constraint_failures"] >= 3
    back = engine.human_completed(sid, {"resolved": True, "resolution_summary": "refunded it"})
    assert not any("colleague" in m.text for m in back.messages)
    state = engine.load_state(sid)
    assert state.status != "escalated"
    assert state.system["constraint_failures"] == 0
    # the package for the person keeps what the count was
    assert state.system["escalation"]["context_for_human"]["failure_reasons"]["constraint_failures"] >= 3
    _, said, events = _chat(engine, ["A-100"], sid)
    assert said[0] == "Order A-100: a kettle, 59 EUR, delivered."
    assert "I'm about to refund an order in full (order_id: A-100). Shall I go ahead?" in said
    assert not any("colleague" in s or "A member of our team" in s for s in said)
    assert not [e for e in events if e.type in ("escalated", "session_escalated", "escalation_holding")]
    assert engine.load_state(sid).status != "escalated"


def test_an_input_guardrail_block_is_said_by_the_agent():
    engine = _engine()
    first = engine.start(program_label="test")
    result = engine.send(first.session_id, "my card is 4111 1111 1111 1111")
    assert [(m.agent, m.text) for m in result.messages] == [
        ("Refund_Desk", "Please don't share card or contact details here; I only need the order number.")]


def test_the_session_records_the_project_folder_it_was_started_with(monkeypatch):
    from frontdesk.cli import _program_label

    program, _ = load_program(EXAMPLE)
    monkeypatch.chdir(EXAMPLE.parent)
    assert _program_label(program, "refund_desk") == str(EXAMPLE)
    file = EXAMPLE / "refund.agent.abl"
    assert _program_label(load_program(file)[0], str(file)) == str(file)
