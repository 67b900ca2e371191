"""The program's tool runner: one call goes to its tool's binding, and the value that comes back is
read in the tool's convention, checked against its `returns` and bounded."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import httpx

from frontdesk.ir.models import (
    HttpBinding,
    McpBinding,
    Program,
    PythonBinding,
    StubBinding,
    ToolDef,
)

from .conventions import return_convention
from .http import HttpCalls
from .mcp import McpSessions
from .python import PythonFunctions, Returned, ToolLoadError, describe
from .result import ToolResult, bound_result, cut_marker, failed
from .schema import schema_problem
from .stub import stub_answer


class ToolRunner(Protocol):
    # `timeout` is passed only when the calling agent sets its own (ABL EXECUTION timeouts.tool_timeout_ms)
    def call(self, tool: str, args: dict[str, Any], timeout: float | None = None) -> ToolResult: ...


class ProgramToolRunner:
    """Runs the tools of `program`, each through its binding (Python function, HTTP endpoint, MCP
    server, stub).

    Each call is bounded by the program's `tools:` settings for the tool (`limits_for`): its time
    limit, the printed output kept, the length of each text of the result. `timeout` overrides the
    time limit of every call and of importing tool files (tests use it). `env` is where HTTP and MCP
    bindings read `{env.NAME}` (default: the process's environment, only the variables the operator
    grants; see frontdesk.access); `http_client` the httpx client HTTP bindings use.
    """

    def __init__(self, program: Program, timeout: float | None = None, *, env: Mapping[str, str] | None = None,
                 http_client: httpx.Client | None = None) -> None:
        self.program = program
        self.root = Path(program.root or ".")
        self._timeout_override = timeout
        self.timeout = timeout if timeout is not None else program.settings.tools.timeout  # imports
        self.python = PythonFunctions(self.root, self.timeout)
        self.http = HttpCalls(env=env, client=http_client)
        self.mcp = McpSessions(self.root, env=env)  # one session per MCP server, opened at first use

    def function(self, tool: ToolDef) -> Callable[..., Any]:
        """The Python function of a Python-bound tool (ToolLoadError when it cannot be had)."""
        if not isinstance(tool.binding, PythonBinding):
            raise ToolLoadError(f"tool {tool.name} is not a Python function", "not_found")
        return self.python.function(tool.binding)

    def close(self) -> None:
        self.http.close()
        self.mcp.close()

    def call(self, tool: str, args: dict[str, Any], timeout: float | None = None) -> ToolResult:
        """One call of `tool`. Its time limit: the binding's own (an HTTP tool's, an MCP server's), else
        the tool's under `tools:` in config.yml, else `timeout` (the calling ABL agent's EXECUTION
        timeouts.tool_timeout_ms), else the program's."""
        tdef = self.program.tools.get(tool)
        if tdef is None:
            return failed("not_found", f"no tool named {tool}")
        limits = self.program.settings.tools.limits_for(tool)
        binding = tdef.binding
        if self._timeout_override is not None:
            timeout = self._timeout_override
        elif isinstance(binding, HttpBinding) and binding.timeout is not None:
            timeout = binding.timeout
        elif isinstance(binding, McpBinding) and binding.server.timeout is not None:
            timeout = binding.server.timeout
        elif timeout is None or self._own_timeout(tool) is not None:
            timeout = limits.timeout
        if isinstance(binding, PythonBinding):
            returned = self.python.call(tool, binding, args, timeout, limits.output_chars)
        elif isinstance(binding, HttpBinding):
            returned = self.http.call(tdef, binding, args, timeout)
        elif isinstance(binding, StubBinding):
            returned = stub_answer(tool, binding, args)
        elif isinstance(binding, McpBinding):
            returned = self.mcp.call(tdef, binding, args, timeout)
        else:  # pragma: no cover - the IR admits no other binding
            returned = Returned(failure=failed("not_found", f"tool {tool} has a binding this runtime cannot call"))
        return finish(tdef, returned, limits.result_chars)

    def _own_timeout(self, tool: str) -> float | None:
        own = self.program.settings.tools.per_tool.get(tool)
        return own.timeout if own is not None else None


def read_value(tool: ToolDef, value: Any) -> ToolResult:
    """A returned value read in the tool's convention; a "value" tool's value checked against its
    `returns`. Never raises: a value that cannot be read is a `bad_result` error result."""
    try:
        result = return_convention(tool.convention)(value)
    except Exception as exc:  # noqa: BLE001 - a convention's reader failing on a strange value
        return failed("bad_result", f"{tool.name} returned a value that cannot be read: {describe(exc)}")
    if tool.convention == "value" and tool.returns and result.ok:
        problem = schema_problem(result.value, tool.returns)
        if problem:
            return failed("bad_result", f"{tool.name} returned a value that does not fit its declared "
                          f"type: {problem}")
    return result


def finish(tool: ToolDef, returned: Returned, result_chars: int) -> ToolResult:
    """The result of a call from what its binding gave back: printed output goes before the message."""
    printed = returned.printed
    cut = {"printed output": returned.printed_total} if returned.printed_total else {}
    if cut:
        printed = printed + cut_marker(returned.printed_total)
    if returned.failure is not None:
        result = returned.failure
    else:
        result = read_value(tool, returned.value)
        bound_result(result, result_chars)
    if printed:  # already cut to its own limit
        result.message = "\n".join(m for m in (printed, result.message) if m)
    result.truncated = {**cut, **result.truncated}
    return result


# The name the engine and older code use: it runs every binding, not only Python functions.
PythonToolRunner = ProgramToolRunner
