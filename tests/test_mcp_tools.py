"""Tools served by MCP servers (runtime/tools/mcp.py): real servers written with the `mcp` SDK's
MCPServer, one started as a stdio subprocess and one served over streamable HTTP on a free local
port, called through ABL programs compiled from text."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from frontdesk.ir.models import McpBinding, McpServer, Program, ToolDef, ToolParam
from frontdesk.lang.abl.compiler import load_abl
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.tools import ProgramToolRunner
from frontdesk.store.memory import MemorySessionStore

SERVER = textwrap.dedent('''
    import os, sys, time
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    app = MCPServer("payments", log_level="ERROR")
    STARTED = str(os.getpid())

    @app.tool()
    def quote(amount: float, currency: str = "EUR") -> dict:
        """Price a payment"""
        return {"total": round(amount * 1.02, 2), "currency": currency, "pid": STARTED}

    @app.tool()
    def charge(card: str) -> str:
        """Charge a card"""
        if card.startswith("0"):
            raise ToolError("card refused by the bank")
        return "charged " + card

    @app.tool()
    def slow(seconds: float) -> str:
        """Take a while"""
        time.sleep(seconds)
        return "late"

    @app.tool()
    def die() -> str:
        """Stop the server at once"""
        sys.stderr.write("fatal: out of coffee\\n")
        sys.stderr.flush()
        os._exit(1)

    if __name__ == "__main__":
        if len(sys.argv) > 1:
            app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
        else:
            app.run()
''')

LIBRARY = '''MCP_SERVERS:
  payments:
    command: {python}
    args: [server.py]
    timeout: 10
  remote:
    url: "{url}"
    timeout: 10

TOOLS:
  quote(amount: number, currency: string = "EUR") -> {{total: number, currency: string, pid: string}}
    description: "Price a payment"
    mcp: payments

  charge_card(card: string) -> string
    description: "Charge a card"
    mcp: payments
    mcp_tool: charge

  slow(seconds: number) -> string
    mcp: payments

  remote_quote(amount: number) -> {{total: number, currency: string, pid: string}}
    mcp: remote
    mcp_tool: quote

  die() -> string
    mcp: payments
'''

AGENT = '''AGENT: Cashier
GOAL: "Take payments"

TOOLS:
  quote(amount: number, currency: string = "EUR") -> {total: number, currency: string, pid: string}
  charge_card(card: string) -> string
  remote_quote(amount: number) -> {total: number, currency: string, pid: string}

ON_ERROR:
  tool_error:
    RESPOND: "The payment service refused the card."

FLOW:
  price -> pay -> remote

  price:
    CALL: quote(40)
    SET:
      total = quote.total
    RESPOND: "That is {{total}} {{quote.currency}}."
    THEN: pay

  pay:
    CALL: charge_card("0000")
    ON_SUCCESS:
      RESPOND: "Paid."
      THEN: remote
    ON_FAIL:
      RESPOND: "Not paid."
      THEN: remote

  remote:
    CALL: remote_quote(100)
    ON_SUCCESS:
      RESPOND: "Remote says {{remote_quote.total}}."
      THEN: COMPLETE
    ON_FAIL:
      RESPOND: "The remote service is down."
      THEN: COMPLETE
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("mcp_project")
    (root / "server.py").write_text(SERVER, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def http_server(project: Path):
    port = free_port()
    process = subprocess.Popen([sys.executable, str(project / "server.py"), str(port)], cwd=project,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    else:  # pragma: no cover - the machine is too slow to start a server
        process.kill()
        pytest.fail("the streamable HTTP MCP server did not start")
    yield f"http://127.0.0.1:{port}/mcp"
    process.terminate()
    process.wait(10)


def compile_project(project: Path, url: str) -> Program:
    (project / "payments.tools.abl").write_text(LIBRARY.format(python=sys.executable, url=url), encoding="utf-8")
    (project / "cashier.agent.abl").write_text(AGENT, encoding="utf-8")
    program, diags = load_abl(project)
    assert program is not None, [d.format() for d in diags]
    return program


def test_the_tool_library_compiles_servers_and_bindings(project, http_server):
    program = compile_project(project, http_server)
    quote = program.tools["quote"].binding
    assert isinstance(quote, McpBinding) and quote.tool == "quote"
    assert quote.server.command == sys.executable and quote.server.args == ["server.py"]
    assert quote.server.timeout == 10
    assert program.tools["charge_card"].binding.tool == "charge"
    assert program.tools["remote_quote"].binding.server.url == http_server
    # the agent's own signature takes the library's binding
    assert isinstance(program.tools["remote_quote"].binding, McpBinding)


def test_a_flow_calls_stdio_and_http_servers_and_handles_a_tool_error(project, http_server):
    program = compile_project(project, http_server)
    runner = ProgramToolRunner(program)
    try:
        engine = Engine(program, None, MemorySessionStore(), tools=runner)
        result = engine.start()
        texts = [m.text for m in result.messages]
        # the result of a stdio call flows into SET and RESPOND
        assert texts[0] == "That is 40.8 EUR."
        # the tool's error goes to the step's ON_FAIL (the nearer handler: ON_ERROR would only retry), never a
        # traceback
        assert texts[1] == "Not paid." and "The payment service refused the card." not in texts
        assert texts[-1] == "Remote says 102."  # the streamable HTTP server
        charged = next(e for e in result.events if e.type == "tool_result" and e.data["tool"] == "charge_card")
        assert charged.data["status"] == "error" and "refused" in charged.data["error"]
        assert runner.mcp.open_sessions == 2  # one per server, kept for later calls

        # a second session of the same engine reuses the same stdio server process
        pid = engine.load_state(result.session_id).results["quote"].values["pid"]
        again = engine.start()
        assert engine.load_state(again.session_id).results["quote"].values["pid"] == pid
    finally:
        runner.close()
    assert runner.mcp.open_sessions == 0


def test_a_call_that_takes_too_long_is_a_timeout_result_and_the_session_survives(project, http_server):
    program = compile_project(project, http_server)
    slow = program.tools["slow"].model_copy(update={"binding": program.tools["quote"].binding.model_copy(
        update={"tool": "slow", "server": program.tools["quote"].binding.server.model_copy(update={"timeout": 1})})})
    program.tools["slow"] = slow
    runner = ProgramToolRunner(program)
    try:
        runner.call("quote", {"amount": 1})  # the server is up
        started = time.monotonic()
        result = runner.call("slow", {"seconds": 5})
        assert time.monotonic() - started < 4.5
        assert result.status == "error" and result.failure.kind == "timeout"
        assert runner.call("quote", {"amount": 10}).value["total"] == 10.2  # the session goes on
    finally:
        runner.close()


def test_a_server_that_is_not_running_is_a_connection_error_result(tmp_path):
    dead_http = McpServer(name="gone", url=f"http://127.0.0.1:{free_port()}/mcp", timeout=5)
    no_command = McpServer(name="missing", command=str(tmp_path / "no-such-server"), timeout=5)
    exits = McpServer(name="exits", command=sys.executable, args=["-c", "import sys; sys.exit(3)"], timeout=5)
    tools = {name: ToolDef(name=name, params=[ToolParam(name="x")], binding=McpBinding(server=server, tool="t"))
             for name, server in (("a", dead_http), ("b", no_command), ("c", exits))}
    program = Program(language="abl", tools=tools)
    program.root = str(tmp_path)
    runner = ProgramToolRunner(program)
    try:
        for name in tools:
            started = time.monotonic()
            result = runner.call(name, {"x": "1"})
            assert result.status == "error" and result.failure.kind in ("connection", "timeout"), result
            assert time.monotonic() - started < 7
            assert "MCP server" in result.error
    finally:
        runner.close()


def test_a_library_naming_an_undeclared_server_is_a_diagnostic(tmp_path):
    (tmp_path / "lib.tools.abl").write_text('''MCP_SERVERS:
  payments:
    command: python
    url: "http://x/mcp"

TOOLS:
  pay(amount: number) -> string
    mcp: paymnts
''', encoding="utf-8")
    (tmp_path / "a.agent.abl").write_text('AGENT: A\nGOAL: "x"\nTOOLS:\n  pay(amount: number) -> string\n',
                                          encoding="utf-8")
    _, diags = load_abl(tmp_path)
    texts = [d.format() for d in diags]
    assert any("MCP server payments is not valid" in t for t in texts), texts
    assert any("'paymnts'" in t and "did you mean payments" in t for t in texts), texts


def test_a_reasoning_agent_reads_an_mcp_tools_result(project, http_server):
    from frontdesk.llm.scripted import ScriptedProvider

    program = compile_project(project, http_server)
    (project / "advisor.agent.abl").write_text('''AGENT: Advisor
GOAL: "Quote prices"

TOOLS:
  remote_quote(amount: number) -> {total: number, currency: string, pid: string}
''', encoding="utf-8")
    try:
        program, diags = load_abl(project, entry="Advisor")
        assert program is not None, [d.format() for d in diags]
    finally:
        (project / "advisor.agent.abl").unlink()
    llm = ScriptedProvider([
        {"purpose": "reason", "reply": "Hi! What would you like priced?"},
        {"purpose": "reason", "call": "remote_quote", "with": {"amount": 50}},
        {"purpose": "reason", "reply": "That comes to 51 EUR."},
    ])
    runner = ProgramToolRunner(program)
    try:
        engine = Engine(program, llm, MemorySessionStore(), tools=runner)
        sid = engine.start().session_id
        result = engine.send(sid, "how much is 50 with fees?")
        assert [m.text for m in result.messages] == ["That comes to 51 EUR."]
        tool_message = [m for m in llm.calls[-1].messages if m.role == "tool"][-1]
        assert "total=51" in tool_message.content and "EUR" in tool_message.content
    finally:
        runner.close()


def test_headers_and_environment_values_are_read_when_the_server_is_used(tmp_path, http_server):
    server = McpServer(name="remote", url=http_server, headers={"X-Trace": "{env.TRACE_ID}"}, timeout=10)
    tool = ToolDef(name="q", params=[ToolParam(name="amount", type="number")],
                   binding=McpBinding(server=server, tool="quote"))
    program = Program(language="abl", tools={"q": tool})
    with_env = ProgramToolRunner(program, env={"TRACE_ID": "abc-123"})
    without = ProgramToolRunner(program, env={})
    try:
        assert with_env.call("q", {"amount": 1}).value["total"] == 1.02
        missing = without.call("q", {"amount": 1})
        assert missing.failure.kind == "config" and "TRACE_ID" in missing.error
    finally:
        with_env.close()
        without.close()


def test_a_server_that_dies_is_a_connection_error_and_the_next_call_starts_it_again(project, http_server):
    program = compile_project(project, http_server)
    runner = ProgramToolRunner(program)
    try:
        first = runner.call("quote", {"amount": 1}).value["pid"]
        died = runner.call("die", {})
        assert died.status == "error" and died.failure.kind == "connection", died
        assert "out of coffee" in died.error  # the server's last words are in the log text
        assert died.message and "coffee" not in died.message  # the caller gets the plain message
        again = runner.call("quote", {"amount": 1})
        assert again.ok and again.value["pid"] != first
    finally:
        runner.close()
