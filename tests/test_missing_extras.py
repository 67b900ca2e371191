"""Without an extra, what needs it says which extra to install, never a traceback: `frontdesk serve`
([serve]), the Redis and PostgreSQL session stores ([redis], [postgres]) and a program's MCP tools
([mcp]), whose calls fail like any failing tool and go to the program's error handling. A missing
package is simulated by `sys.modules[name] = None`, which makes its import fail."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from frontdesk.extras import EXTRAS, MissingExtra, install_hint, missing_module, require
from frontdesk.lang.abl.compiler import load_abl
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.tools import ProgramToolRunner
from frontdesk.store import StoreError, open_store
from frontdesk.store.memory import MemorySessionStore

ROOT = Path(__file__).resolve().parents[1]

# Runs the CLI with some packages made unimportable.
WITHOUT = """
import sys
for name in sys.argv[1].split(","):
    sys.modules[name] = None
sys.argv = ["frontdesk", *sys.argv[2:]]
from frontdesk.cli import main
main()
"""


def run_without(modules: str, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", WITHOUT, modules, *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


def test_the_hint_names_the_extra_and_the_command():
    assert install_hint("serve", "frontdesk serve", "fastapi") == \
        "frontdesk serve needs the 'serve' extra (no module 'fastapi'): pip install 'frontdesk[serve]'"


def test_require_and_missing_module_see_a_package_that_cannot_be_imported(monkeypatch):
    monkeypatch.setitem(sys.modules, "redis", None)
    assert missing_module("redis") == "redis"
    with pytest.raises(MissingExtra, match=r"pip install 'frontdesk\[redis\]'"):
        require("redis", "the Redis session store")
    assert set(EXTRAS) >= {"serve", "redis", "postgres", "mcp"}


@pytest.mark.parametrize("module", ["fastapi", "uvicorn", "prometheus_client"])
def test_serve_without_the_serve_extra_says_what_to_install(module):
    result = run_without(module, "serve", "examples/bookstore", "--llm", "none", "--no-embeddings", "--store", "memory")
    assert result.returncode == 2, result.stderr
    assert "pip install 'frontdesk[serve]'" in result.stderr and f"no module '{module}'" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("url, module, extra", [
    ("redis://127.0.0.1:1/0", "redis", "redis"),
    ("postgresql://nobody@127.0.0.1:1/none", "psycopg", "postgres"),
])
def test_a_store_without_its_driver_says_which_extra_to_install(monkeypatch, url, module, extra):
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(StoreError) as caught:
        open_store(url)
    assert f"pip install 'frontdesk[{extra}]'" in str(caught.value)


def test_chat_with_a_redis_store_but_no_driver_exits_with_the_hint():
    result = run_without("redis", "chat", "examples/bookstore", "--llm", "none", "--no-embeddings", "--store", "redis://127.0.0.1:1/0")
    assert result.returncode == 2, result.stderr
    assert "pip install 'frontdesk[redis]'" in result.stderr and "Traceback" not in result.stderr


LIBRARY = textwrap.dedent('''\
    MCP_SERVERS:
      payments:
        command: {python}
        args: [server.py]
        timeout: 5

    TOOLS:
      quote(amount: number) -> {{total: number}}
        description: "Price a payment"
        mcp: payments
    ''')

AGENT = textwrap.dedent('''\
    AGENT: Cashier
    GOAL: "Take payments"

    TOOLS:
      quote(amount: number) -> {total: number}

    ON_ERROR:
      tool_error:
        RESPOND: "The payment service is not available."

    FLOW:
      price:
        CALL: quote(40)
        ON_SUCCESS:
          RESPOND: "That is {{quote.total}}."
          THEN: COMPLETE
        ON_FAIL:
          RESPOND: "No price today."
          THEN: COMPLETE
    ''')


@pytest.fixture()
def mcp_project(tmp_path: Path) -> Path:
    (tmp_path / "server.py").write_text("raise SystemExit('never started')\n", encoding="utf-8")
    (tmp_path / "payments.tools.abl").write_text(LIBRARY.format(python=sys.executable), encoding="utf-8")
    (tmp_path / "cashier.agent.abl").write_text(AGENT, encoding="utf-8")
    return tmp_path


def test_an_mcp_tool_without_the_mcp_extra_fails_into_the_programs_error_handling(monkeypatch, mcp_project):
    program, diags = load_abl(mcp_project)
    assert program is not None, [d.format() for d in diags]
    monkeypatch.setitem(sys.modules, "mcp", None)
    runner = ProgramToolRunner(program)
    try:
        result = Engine(program, None, MemorySessionStore(), tools=runner).start()
    finally:
        runner.close()
    texts = [m.text for m in result.messages]
    assert texts == ["No price today."]  # the step's ON_FAIL answers (ON_ERROR's words are for steps without one)
    failed = next(e for e in result.events if e.type == "tool_result" and e.data["tool"] == "quote")
    assert failed.data["status"] == "error"
    assert "pip install 'frontdesk[mcp]'" in failed.data["error"]
    assert runner.mcp.open_sessions == 0  # no server was started


def test_check_and_chat_note_that_mcp_tools_need_the_extra(mcp_project):
    checked = run_without("mcp", "check", str(mcp_project))
    assert checked.returncode == 0, checked.stderr
    assert "pip install 'frontdesk[mcp]'" in checked.stderr and "quote" in checked.stderr
    chatted = run_without("mcp", "chat", str(mcp_project), "--llm", "none", "--no-embeddings", "--store", "memory")
    assert chatted.returncode == 0, chatted.stderr
    assert "pip install 'frontdesk[mcp]'" in chatted.stderr and "Traceback" not in chatted.stderr
    assert "No price today." in chatted.stdout
