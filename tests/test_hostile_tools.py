"""Hostile tool code: non-JSON return values, tool files that exit or hang on import, exceptions kept from the customer."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from frontdesk.lang import load_program
from frontdesk.lang.adl.returns import read_adl_return as normalise_return
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.tools import (
    TOO_SLOW_MESSAGE,
    UNAVAILABLE_MESSAGE,
    PythonToolRunner,
    json_safe,
)
from frontdesk.store.memory import MemorySessionStore
from frontdesk.store.sqlite import SqliteSessionStore


def program(folder: Path, agents: str, tools: str):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "agents.yml").write_text(textwrap.dedent(agents), encoding="utf-8")
    (folder / "tools.py").write_text(textwrap.dedent(tools), encoding="utf-8")
    prog, diags = load_program(folder)
    assert prog is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    return prog


ASK_AND_CALL = """
    main:
      type: flow agent
      args:
        - value
      steps:
        - label: again
        - user
        - call: odd
        - bot: "got ${odd.message}"
        - next: again
"""

ODD_TOOLS = """
    class Strange:
        def __str__(self):
            return "a strange object"

    class Broken:
        def __str__(self):
            raise RuntimeError("no text for you")

    def odd():
        \"\"\"Returns values JSON cannot hold.\"\"\"
        return [
            {"arg": "value", "value": {"thing": object(), "raw": b"\\xff\\xfe ok", "nan": float("nan"),
                                       "set": {1}, 2: "int key", "nested": (Strange(), Broken())}},
            {"msg": b"caf\\xe9"},
            {"bot": "lone \\ud800 surrogate"},
        ]
"""


@pytest.mark.parametrize("store_kind", ["memory", "sqlite"])
def test_a_tool_returning_non_json_values_does_not_break_later_turns(tmp_path, store_kind):
    prog = program(tmp_path / "prog", ASK_AND_CALL, ODD_TOOLS)
    store = MemorySessionStore() if store_kind == "memory" else SqliteSessionStore(tmp_path / "s.sqlite3")
    engine = Engine(prog, None, store)
    session = engine.start().session_id
    for turn in range(3):  # before the fix the first turn stored nothing and every later one crashed
        result = engine.send(session, f"turn {turn}")
        assert [m.text for m in result.messages][-1] == "got caf\ufffd"
    state = store.load(session)
    value = state["results"]["odd"]["values"]["value"]
    assert state["variables"]["main"]["value"] == value  # written into the caller's argument too
    assert value["raw"] == "\ufffd\ufffd ok" and value["nan"] == "nan" and value["set"] == [1]
    assert value["2"] == "int key" and value["nested"] == ["a strange object", "<Broken>"]
    assert value["thing"].startswith("<object object")
    json.dumps(state, allow_nan=False).encode("utf-8")  # plain JSON, valid UTF-8


def test_json_safe_keeps_json_and_turns_the_rest_into_text():
    assert json_safe({"a": [1, 2.5, True, None, "x"]}) == {"a": [1, 2.5, True, None, "x"]}
    assert json_safe(math.inf) == "inf" and json_safe(b"\x80") == "\ufffd"
    deep: list = []
    node = deep
    for _ in range(100):
        node.append([])
        node = node[0]
    json.dumps(json_safe(deep))  # depth is bounded
    looped: list = []
    looped.append(looped)
    json.dumps(json_safe(looped))  # so is a list that holds itself
    result = normalise_return({"status": b"error", "msg": object()})
    assert result.status == "error" and result.message.startswith("<object object")


SIMPLE_FLOW = """
    main:
      type: flow agent
      steps:
        - call: place_order
        - if: place_order.status == True
          then:
            - bot: "Done! ${place_order.message}"
          else:
            - bot: "Sorry, I couldn't place the order: ${place_order.message}"
"""


def test_an_exception_in_a_tool_is_logged_and_the_customer_gets_a_safe_sentence(tmp_path):
    prog = program(tmp_path / "prog", SIMPLE_FLOW, """
        def place_order():
            \"\"\"Places the order.\"\"\"
            raise ConnectionError("order database unreachable at 10.0.0.7:5432")
    """)
    store = MemorySessionStore()
    result = Engine(prog, None, store).start()
    said = [m.text for m in result.messages]
    assert said == [f"Sorry, I couldn't place the order: {UNAVAILABLE_MESSAGE}"]
    events = store.events(result.session_id)
    tool_result = next(e for e in events if e["type"] == "tool_result")
    assert tool_result["data"]["error"] == "place_order failed: ConnectionError: order database unreachable at 10.0.0.7:5432"
    assert "ConnectionError" not in tool_result["data"]["message"]
    assert any(e["type"] == "error" and "order database unreachable" in e["data"]["message"] for e in events)


def test_a_tool_file_that_calls_sys_exit_on_import_is_a_tool_error(tmp_path):
    prog = program(tmp_path / "prog", SIMPLE_FLOW, """
        import sys
        sys.exit(3)

        def place_order():
            \"\"\"Places the order.\"\"\"
            return "ok"
    """)
    runner = PythonToolRunner(prog, timeout=5)
    result = runner.call("place_order", {})
    assert result.status == "error" and result.message == UNAVAILABLE_MESSAGE
    assert "SystemExit" in (result.error or "") and "sys.exit(3)" in (result.error or "")
    assert result.failure is not None and result.failure.kind == "raised"
    said = [m.text for m in Engine(prog, None, MemorySessionStore(), tools=runner).start().messages]
    assert said == [f"Sorry, I couldn't place the order: {UNAVAILABLE_MESSAGE}"]


def test_a_tool_file_that_hangs_on_import_is_a_tool_error_after_the_time_limit(tmp_path):
    prog = program(tmp_path / "prog", SIMPLE_FLOW, """
        import time
        print("importing")
        time.sleep(30)

        def place_order():
            \"\"\"Places the order.\"\"\"
            return "ok"
    """)
    runner = PythonToolRunner(prog, timeout=0.5)
    started = time.monotonic()
    first = runner.call("place_order", {})
    assert time.monotonic() - started < 5
    assert first.status == "error" and first.message == UNAVAILABLE_MESSAGE
    assert "did not finish within 0.5 seconds" in (first.error or "")
    assert first.failure is not None and first.failure.kind == "timeout"
    started = time.monotonic()
    again = runner.call("place_order", {})  # the broken file is not imported again
    assert time.monotonic() - started < 0.3 and again.status == "error"


def test_a_tool_that_hangs_tells_the_customer_to_try_later(tmp_path):
    prog = program(tmp_path / "prog", SIMPLE_FLOW, """
        import time

        def place_order():
            \"\"\"Places the order.\"\"\"
            time.sleep(30)
    """)
    result = PythonToolRunner(prog, timeout=0.3).call("place_order", {})
    assert result.message == TOO_SLOW_MESSAGE and "0.3 seconds" in (result.error or "")
    assert result.failure is not None and result.failure.kind == "timeout"


def test_the_chat_command_survives_a_tool_file_that_exits(tmp_path):
    folder = tmp_path / "prog"
    program(folder, SIMPLE_FLOW, "import sys\nsys.exit(0)\n\ndef place_order():\n    \"\"\"Places.\"\"\"\n")
    result = subprocess.run([sys.executable, "-m", "frontdesk.cli", "chat", str(folder), "--llm", "none", "--no-embeddings",
                             "--store", "memory"], input="", capture_output=True, text=True, timeout=120, check=False,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"main> Sorry, I couldn't place the order: {UNAVAILABLE_MESSAGE}" in result.stdout
    assert "trace: not kept" in result.stderr  # the process went on to the end (a memory store keeps no trace)


def test_a_tool_that_prints_50_mb_leaves_a_small_session_and_a_marked_cut(tmp_path):
    """Issue 8: 50 MB of printed output was captured whole, stored three times and sent to the model."""
    prog = program(tmp_path / "prog", SIMPLE_FLOW, """
        def place_order():
            \"\"\"Places the order.\"\"\"
            print("x" * 50_000_000)
            return [{"status": "success", "msg": "y" * 3_000_000}, {"arg": "receipt", "value": ["z" * 100] * 100_000}]
    """)
    store = MemorySessionStore()
    result = Engine(prog, None, store).start()
    state = json.dumps(store.load(result.session_id))
    events = json.dumps(store.events(result.session_id))
    assert len(state) < 200_000 and len(events) < 200_000
    tool_result = next(e for e in store.events(result.session_id) if e["type"] == "tool_result")
    cut = tool_result["data"]["truncated"]
    assert cut["printed output"] == 50_000_001  # with the newline print adds
    assert cut["message"] > 20_000 and cut["value receipt"] > 10_000_000
    assert "[... cut: 50,000,001 characters in all]" in tool_result["data"]["message"]


def test_tool_limits_come_from_the_programs_config_and_a_tool_may_have_its_own(tmp_path):
    folder = tmp_path / "prog"
    folder.mkdir()
    (folder / "config.yml").write_text("tools:\n  timeout: 0.3\n  output_chars: 200\n"
                                       "  slow_but_allowed:\n    timeout: 5\n", encoding="utf-8")
    prog = program(folder, SIMPLE_FLOW, """
        import time

        def place_order():
            \"\"\"Places the order.\"\"\"
            print("a" * 1000)
            time.sleep(2)

        def slow_but_allowed():
            \"\"\"Takes its time.\"\"\"
            time.sleep(0.6)
            return {"status": "success", "msg": "done"}
    """)
    runner = PythonToolRunner(prog)
    slow = runner.call("place_order", {})
    assert slow.status == "error" and "0.3 seconds" in (slow.error or "")
    assert slow.truncated == {"printed output": 1001} and slow.message.startswith("a" * 200 + " [... cut")
    assert runner.call("slow_but_allowed", {}).message == "done"


@pytest.mark.parametrize("config, message", [
    ("tools:\n  timeout: -1\n", "'timeout' must be a number of seconds"),
    ("tools:\n  output_chars: 12\n", "'output_chars' must be a whole number of characters"),
    ("tools:\n  place_order:\n    timeuot: 3\n", "unknown tool limit 'timeuot'"),
    ("tools:\n  timout: 3\n", "'timout' under tools is neither a limit"),
    ("tools: 3\n", "'tools' must be a mapping"),
])
def test_bad_tool_limits_are_diagnostics(tmp_path, config, message):
    folder = tmp_path / "prog"
    folder.mkdir()
    (folder / "config.yml").write_text(config, encoding="utf-8")
    (folder / "agents.yml").write_text(textwrap.dedent(SIMPLE_FLOW), encoding="utf-8")
    (folder / "tools.py").write_text("def place_order():\n    \"\"\"Places.\"\"\"\n", encoding="utf-8")
    _, diags = load_program(folder)
    assert any(message in d.message and d.span.line >= 1 for d in diags), [d.format() for d in diags]
