"""The MCP binding: tools served by MCP servers, over stdio (a subprocess) or streamable HTTP.

The engine is synchronous and the `mcp` SDK is asynchronous, so `McpSessions` keeps one private
event loop on a daemon thread, and on it one client session per declared server (`McpServer`),
opened at the first call of one of its tools and reused by every later call of the engine. Each
session is owned by one task on that loop (it enters and leaves the SDK's context managers); calls
are sent to the loop and waited for with the call's time limit.

Errors are results, never exceptions: a server that cannot be started or reached, or that died
(`connection`; the next call starts it again), a call that takes too long (`timeout`), a tool that
answers with an error (`raised`), an answer that cannot be read (`bad_result`), an `mcp` package
that is not installed (the message names the [mcp] extra) or a binding that cannot be used
(`config`: among them an environment variable the operator has not granted, and a folder, command
or path argument outside the program's folder; see `frontdesk.access`).

`close()` ends every session (a stdio server's process is stopped by the SDK) and the loop; the
tool runner calls it, and it also runs when the interpreter exits.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import re
import sys
import tempfile
import threading
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from frontdesk.access import ENV_HOLE, EnvRefused, ProgramEnvironment, mcp_escapes, program_environment
from frontdesk.extras import install_hint
from frontdesk.ir.models import McpBinding, McpServer, ToolDef

from .python import Returned
from .result import TOO_SLOW_MESSAGE, failed, text_of

_GRACE = 2.0  # seconds the caller waits beyond a call's own limit for the loop to answer
_CLOSE_WAIT = 5.0  # seconds close() waits for the sessions to end
_ERROR_TEXT = 300  # characters of a tool's error text shown to the caller
_STDERR_TAIL = 400  # characters of a failed stdio server's stderr quoted in the error
_STDERR_KEEP = 256 * 1024  # a server's stderr file is emptied beyond this size


class McpUnavailable(Exception):
    """The server cannot be used: `kind` is connection, config or timeout."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _fill_env(template: str, env: ProgramEnvironment) -> str:
    def one(match: re.Match) -> str:
        name = match.group(1) or match.group(2)
        try:
            value = env.read(name)
        except EnvRefused as exc:
            raise McpUnavailable("config", str(exc)) from None
        if value is None:
            raise McpUnavailable("config", f"the environment variable {name} is not set")
        return value

    return ENV_HOLE.sub(one, template)


def where(server: McpServer) -> str:
    """The server as the trace names it (never a header or an environment value)."""
    if server.url:
        return f"MCP server {server.name} ({server.url.split('?', 1)[0]})"
    return f"MCP server {server.name} ({' '.join([server.command or '', *server.args]).strip()})"


class _Session:
    """One server's client session, living on the loop: opened by its owner task, used by calls."""

    def __init__(self, spec: McpServer, root: Path, env: ProgramEnvironment) -> None:
        self.spec = spec
        self.root = root
        self.env = env
        self.client: Any = None
        self.ready: asyncio.Future | None = None
        self.stop: asyncio.Event | None = None
        self.task: asyncio.Task | None = None
        self.errlog: Any = None

    def _transport(self) -> Any:
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client
        from mcp.client.streamable_http import streamable_http_client

        spec = self.spec
        if spec.url:
            url = _fill_env(spec.url, self.env)
            if not spec.headers:
                return streamable_http_client(url)
            headers = {k: _fill_env(v, self.env) for k, v in spec.headers.items()}
            try:  # the SDK's client with its MCP timeouts (not exported by name)
                from mcp.shared._httpx_utils import create_mcp_http_client

                http_client = create_mcp_http_client(headers=headers)
            except ImportError:  # pragma: no cover - a later SDK that moved it
                import httpx2

                http_client = httpx2.AsyncClient(headers=headers)
            return streamable_http_client(url, http_client=http_client)
        cwd = (self.root / spec.cwd) if spec.cwd else self.root
        command = _fill_env(spec.command or "", self.env)
        args = [_fill_env(a, self.env) for a in spec.args]
        for problem in mcp_escapes(self.root, command, args, spec.cwd):  # check said so too (FD060)
            raise McpUnavailable("config", f"{where(spec)} is not started: {problem}")
        if command in ("python", "python3"):  # the interpreter Frontdesk runs in, with its packages
            command = sys.executable
        params = StdioServerParameters(command=command,
                                       args=args,
                                       env={k: _fill_env(v, self.env) for k, v in spec.env.items()} or None,
                                       cwd=str(cwd))
        # the server's own log lines would mix with the conversation in a terminal: they go to a
        # temporary file (kept short), whose end is quoted when the server fails
        self.errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        return stdio_client(params, errlog=self.errlog)

    def stderr_tail(self) -> str:
        """The last lines the stdio server wrote to its stderr, for an error text ("" when none)."""
        log = self.errlog
        if log is None or log.closed:
            return ""
        try:
            log.flush()
            size = log.seek(0, os.SEEK_END)
            log.seek(max(size - _STDERR_TAIL, 0))
            tail = log.read()[-_STDERR_TAIL:].strip()
        except (OSError, ValueError):
            return ""
        return f" (its last words: {' / '.join(tail.splitlines()[-3:])})" if tail else ""

    def trim_stderr(self) -> None:
        """Keep the stderr file of a long-lived server short (the server shares its offset)."""
        log = self.errlog
        try:
            if log is not None and not log.closed and log.seek(0, os.SEEK_END) > _STDERR_KEEP:
                log.seek(0)
                log.truncate()
        except (OSError, ValueError):
            pass

    async def _own(self, transport: Any) -> None:
        from mcp import Client

        assert self.ready is not None and self.stop is not None
        try:
            async with Client(transport) as client:
                self.client = client
                if not self.ready.done():
                    self.ready.set_result(client)
                await self.stop.wait()
        except BaseException as exc:
            if not self.ready.done():
                self.ready.set_exception(McpUnavailable("connection", f"{where(self.spec)} could not be "
                                                        f"started or reached: {_describe(exc)}"
                                                        f"{self.stderr_tail()}"))
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self.client = None
            if self.errlog is not None:
                self.errlog.close()
                self.errlog = None

    async def connect(self, timeout: float) -> Any:
        if self.task is None or self.task.done():
            loop = asyncio.get_running_loop()
            self.ready, self.stop = loop.create_future(), asyncio.Event()
            transport = self._transport()  # McpUnavailable("config") when the environment lacks a value
            self.task = loop.create_task(self._own(transport))
        assert self.ready is not None
        try:
            return await asyncio.wait_for(asyncio.shield(self.ready), timeout)
        except TimeoutError:
            await self.end()
            raise McpUnavailable("timeout", f"{where(self.spec)} did not start within {timeout:g} seconds") from None

    async def call(self, name: str, args: dict[str, Any], timeout: float) -> Any:
        from mcp.shared.exceptions import MCPError
        from mcp_types import INVALID_PARAMS, METHOD_NOT_FOUND, REQUEST_TIMEOUT

        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        client = await self.connect(timeout)
        remaining = max(deadline - loop.time(), 0.05)
        self.trim_stderr()
        try:
            return await client.call_tool(name, args, read_timeout_seconds=remaining)
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                raise McpUnavailable("timeout", f"{where(self.spec)}: {name} did not answer within "
                                     f"{timeout:g} seconds") from None
            if exc.code in (INVALID_PARAMS, METHOD_NOT_FOUND):
                raise McpUnavailable("protocol", f"{where(self.spec)} refused the call of {name}: "
                                     f"{exc.message}") from None
            tail = self.stderr_tail()
            await self.end()  # the connection closed, or the server broke: the next call starts it again
            raise McpUnavailable("connection", f"{where(self.spec)} broke off the call of {name}: "
                                 f"{exc.message}{tail}") from None
        except Exception as exc:  # noqa: BLE001 - the connection broke: the next call starts it again
            tail = self.stderr_tail()
            await self.end()
            raise McpUnavailable("connection", f"{where(self.spec)} broke off the call of {name}: "
                                 f"{_describe(exc)}{tail}") from None

    async def end(self) -> None:
        if self.stop is not None:
            self.stop.set()
        task = self.task
        self.task = None
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(task, _CLOSE_WAIT)
            except BaseException:  # noqa: BLE001 - a session that will not end is cancelled
                task.cancel()


def _describe(exc: BaseException) -> str:
    """An exception's text, looking inside exception groups for the first real cause."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = text_of(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class McpSessions:
    """The MCP sessions of one tool runner: a private event loop thread, one session per server."""

    def __init__(self, root: Path, env: Mapping[str, str] | ProgramEnvironment | None = None) -> None:
        self.root = root
        self.env = program_environment(env)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._sessions: dict[str, _Session] = {}
        self._lock = threading.Lock()
        self._finalizer: weakref.finalize | None = None

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="frontdesk-mcp", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
                # runs at close(), when the runner is collected, or at exit (weakref.finalize's atexit)
                self._finalizer = weakref.finalize(self, _shutdown, loop, thread, self._sessions)
            return self._loop

    def _session(self, spec: McpServer) -> _Session:
        key = spec.model_dump_json()
        with self._lock:
            session = self._sessions.get(key)
            if session is None:
                session = self._sessions[key] = _Session(spec, self.root, self.env)
            return session

    @property
    def open_sessions(self) -> int:
        """How many servers have a live session (tests check that sessions are reused)."""
        return sum(1 for s in self._sessions.values() if s.client is not None)

    def call(self, tool: ToolDef, binding: McpBinding, args: dict[str, Any], timeout: float) -> Returned:
        try:
            import mcp  # noqa: F401
        except ImportError:  # the [mcp] extra is not installed: a failing tool like any other
            return Returned(failure=failed("config", install_hint(
                "mcp", f"{tool.name}, a tool served by an MCP server,", "mcp")))
        spec = binding.server
        missing = [p.name for p in tool.params if p.required and args.get(p.name) is None]
        if missing:
            text = f"{tool.name} needs {', '.join(missing)} but got no value for it"
            return Returned(failure=failed("bad_arguments", text, message=text))
        declared = {p.name for p in tool.params}
        sent = {k: v for k, v in args.items() if v is not None and (not declared or k in declared)}
        session = self._session(spec)
        future = asyncio.run_coroutine_threadsafe(session.call(binding.tool, sent, timeout), self._running_loop())
        try:
            result = future.result(timeout + _GRACE)
        except concurrent.futures.TimeoutError:
            future.cancel()
            return Returned(failure=failed("timeout", f"{tool.name}: {where(spec)} did not answer within "
                                           f"{timeout:g} seconds", TOO_SLOW_MESSAGE))
        except McpUnavailable as exc:
            if exc.kind == "timeout":
                return Returned(failure=failed("timeout", f"{tool.name}: {exc}", TOO_SLOW_MESSAGE))
            kind = "config" if exc.kind == "config" else ("bad_arguments" if exc.kind == "protocol" else "connection")
            return Returned(failure=failed(kind, f"{tool.name}: {exc}"))
        except Exception as exc:  # noqa: BLE001 - anything else the SDK raises is a failing tool
            return Returned(failure=failed("raised", f"{tool.name}: {where(spec)} failed: {_describe(exc)}"))
        return read_call_result(tool.name, binding, result)

    def close(self) -> None:
        if self._finalizer is not None:
            self._finalizer()  # runs _shutdown once
        with self._lock:
            self._loop, self._thread, self._finalizer = None, None, None
            self._sessions = {}


def _shutdown(loop: asyncio.AbstractEventLoop, thread: threading.Thread, sessions: dict[str, _Session]) -> None:
    """End every session (stopping stdio servers), then the loop and its thread."""
    if loop.is_closed():
        return

    async def end_all() -> None:
        await asyncio.gather(*(s.end() for s in list(sessions.values())), return_exceptions=True)

    if thread.is_alive():
        try:
            asyncio.run_coroutine_threadsafe(end_all(), loop).result(_CLOSE_WAIT + 1)
        except Exception:  # noqa: BLE001, S110 - a server that will not stop is left to the OS
            pass
        loop.call_soon_threadsafe(loop.stop)
        thread.join(_CLOSE_WAIT)
    if not thread.is_alive():
        loop.close()


def read_call_result(tool: str, binding: McpBinding, result: Any) -> Returned:
    """A `CallToolResult` as the tool's value: its structured content (a server that wraps a plain
    value as `{"result": value}` gives the value), else its text, read as JSON when it is JSON."""
    texts = [c.text for c in (getattr(result, "content", None) or []) if getattr(c, "type", "") == "text"]
    text = "\n".join(t for t in texts if t)
    if getattr(result, "is_error", False):
        detail = text.strip() or "no details"
        shown = detail if len(detail) <= _ERROR_TEXT else detail[:_ERROR_TEXT] + " ..."
        return Returned(failure=failed("raised", f"{tool}: the MCP tool {binding.tool} on {binding.server.name} "
                                       f"answered with an error: {detail}", message=shown))
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        if isinstance(structured, dict) and list(structured) == ["result"]:
            return Returned(value=structured["result"])
        return Returned(value=structured)
    if not text.strip():
        return Returned(value=None)
    try:
        return Returned(value=json.loads(text))
    except ValueError:
        return Returned(value=text)
