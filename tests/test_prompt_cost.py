"""What each LLM call carries: no repeated parameter descriptions, decision calls see the recent
messages only (issue 7, part 3: cheaper per turn without being wrong)."""

from __future__ import annotations

import json
from pathlib import Path

from frontdesk.lang import load_program
from frontdesk.runtime import prompts
from frontdesk.runtime.state import HistoryItem

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def banking():
    program, diagnostics = load_program(EXAMPLES / "retail_banking")
    assert program is not None, diagnostics
    return program


def test_a_parameter_described_by_an_earlier_tool_is_not_described_again():
    program = banking()
    agent = program.agents["transfer_money"]
    schemas = prompts.reasoning_tools(agent, program.tools)
    described = [name for s in schemas for name, p in (s.parameters.get("properties") or {}).items()
                 if isinstance(p, dict) and "description" in p]
    assert described.count("username") == 1
    # every parameter still is in its tool, with its type
    first = {s.name: s for s in schemas}["action_schedule_payment"].parameters
    assert first["properties"]["username"] == {"type": "string"}
    assert set(first["required"]) >= {"username", "payment_date"}


def test_finish_tells_what_is_left_and_hand_back_takes_no_arguments():
    program = banking()
    schemas = {s.name: s for s in prompts.reasoning_tools(program.agents["transfer_money"], program.tools)}
    assert "rest" in schemas[prompts.FINISH_TOOL].parameters["properties"]
    assert schemas[prompts.HAND_BACK_TOOL].parameters["properties"] == {}


def test_route_and_understand_calls_show_only_the_recent_messages():
    program = banking()
    history = [HistoryItem(role="user" if i % 2 == 0 else "bot", text=f"message number {i}", turn=i // 2)
               for i in range(30)]
    router = program.agents["meta"]
    candidates = [program.agents[m.agent] for m in router.members]
    route = prompts.route_request(router, candidates, history, program.settings.history_window)
    shown = json.dumps([m.content for m in route.messages])
    assert "message number 29" in shown and "message number 24" in shown
    assert "message number 23" not in shown
    flow = program.agents["block_card"]
    understand = prompts.understand_request(flow, [("1", ["yes"])], [], [], history, 2)
    shown = json.dumps([m.content for m in understand.messages])
    assert "message number 28" in shown and "message number 27" not in shown  # a smaller program window wins
