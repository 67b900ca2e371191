"""Tool binding: calling the program's Python functions and reading the ADL return convention."""

from __future__ import annotations

import importlib.util
import inspect
import io
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from frontdesk.ir.models import Program, ToolDef


@dataclass
class ToolResult:
    """What a tool call produced, in the ADL convention's terms."""

    status: str = "success"  # success | error
    message: str = ""  # for the caller agent: the status msg plus printed output
    bot: list[str] = field(default_factory=list)  # lines said to the user
    args: dict[str, Any] = field(default_factory=dict)  # argument updates
    error: str | None = None  # set when the tool raised or could not be called

    def for_model(self) -> str:
        """The tool's result as text for an LLM's tool message."""
        parts = [f"status: {self.status}"]
        if self.message:
            parts.append(f"message: {self.message}")
        if self.args:
            parts.append("values: " + ", ".join(f"{k}={v!r}" for k, v in self.args.items()))
        if self.bot:
            parts.append("said to the user: " + " / ".join(self.bot))
        return "\n".join(parts)


def normalise_return(value: Any) -> ToolResult:
    """Read a tool's return value: a list of `{status,msg}`, `{bot}`, `{arg,value}` items (or one)."""
    result = ToolResult()
    if value is None:
        return result
    items = value if isinstance(value, list) else [value]
    free: list[str] = []
    for item in items:
        if not isinstance(item, dict):
            free.append(str(item))
            continue
        if "status" in item and "arg" not in item and "slot_name" not in item:
            status = str(item.get("status", "success")).lower()
            result.status = "error" if status in ("error", "failed", "failure", "false") else "success"
            if item.get("msg") is not None:
                free.append(str(item["msg"]))
        elif "bot" in item:
            result.bot.append(str(item["bot"]))
        elif "arg" in item or "slot_name" in item:
            result.args[str(item.get("arg", item.get("slot_name")))] = item.get("value")
        elif "error" in item:
            result.status = "error"
            free.append(str(item["error"]))
        elif "msg" in item:
            free.append(str(item["msg"]))
        else:
            # A plain mapping of values: treat each key as an argument update.
            result.args.update({str(k): v for k, v in item.items()})
    result.message = "\n".join(m for m in free if m)
    return result


class ToolRunner(Protocol):
    def call(self, tool: str, args: dict[str, Any]) -> ToolResult: ...


class _PerThreadStdout(io.TextIOBase):
    """sys.stdout that sends a thread's writes to that thread's buffer while a tool runs in it."""

    def __init__(self, fallback) -> None:
        self.fallback = fallback
        self.local = threading.local()

    def write(self, text: str) -> int:
        buffer = getattr(self.local, "buffer", None)
        return (buffer if buffer is not None else self.fallback).write(text)

    def flush(self) -> None:
        buffer = getattr(self.local, "buffer", None)
        (buffer if buffer is not None else self.fallback).flush()

    def writable(self) -> bool:
        return True


_install_lock = threading.Lock()


def _capturing_stdout() -> _PerThreadStdout:
    with _install_lock:
        if not isinstance(sys.stdout, _PerThreadStdout):
            sys.stdout = _PerThreadStdout(sys.stdout)
        return sys.stdout


DEFAULT_TOOL_TIMEOUT = 30.0


class PythonToolRunner:
    """Imports the program's tool files and calls their functions, capturing printed output.

    Each call runs in its own thread with a time limit: a tool that hangs becomes an error
    result after `timeout` seconds (its thread is left to finish on its own; Python cannot stop it).
    """

    def __init__(self, program: Program, timeout: float = DEFAULT_TOOL_TIMEOUT) -> None:
        self.program = program
        self.root = Path(program.root or ".")
        self.timeout = timeout
        self._modules: dict[str, Any] = {}
        self._import_lock = threading.Lock()

    def _module(self, rel: str):
        with self._import_lock:
            return self._import(rel)

    def _import(self, rel: str):
        if rel not in self._modules:
            path = (self.root / rel).resolve()
            name = f"frontdesk_tools_{abs(hash(str(path)))}"
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot load tool file {rel}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
            self._modules[rel] = module
        return self._modules[rel]

    def function(self, tool: ToolDef) -> Callable[..., Any]:
        return getattr(self._module(tool.module), tool.name)

    def call(self, tool: str, args: dict[str, Any]) -> ToolResult:
        tdef = self.program.tools.get(tool)
        if tdef is None:
            return ToolResult(status="error", message=f"no tool named {tool}", error="unknown tool")
        try:
            fn = self.function(tdef)
        except Exception as exc:  # the tool file failed to import
            return ToolResult(status="error", message=f"tool {tool} could not be loaded: {exc}",
                              error=f"{type(exc).__name__}: {exc}")
        try:
            kwargs = _fit_arguments(fn, args)
        except TypeError as exc:
            return ToolResult(status="error", message=str(exc), error=str(exc))
        stdout = _capturing_stdout()
        out = io.StringIO()
        outcome: dict[str, Any] = {}

        def run() -> None:
            stdout.local.buffer = out
            try:
                outcome["value"] = fn(**kwargs)
            except BaseException as exc:  # noqa: BLE001 - reported as the tool's error, whatever it is
                outcome["error"] = exc
            finally:
                stdout.local.buffer = None

        worker = threading.Thread(target=run, name=f"tool {tool}", daemon=True)
        worker.start()
        worker.join(self.timeout)
        printed = out.getvalue().strip()
        if worker.is_alive():
            msg = f"{tool} did not finish within {self.timeout:g} seconds"
            return ToolResult(status="error", message="\n".join(x for x in (printed, msg) if x), error=msg)
        if "error" in outcome:
            exc = outcome["error"]
            msg = f"{tool} failed: {type(exc).__name__}: {exc}"
            return ToolResult(status="error", message="\n".join(x for x in (printed, msg) if x),
                              error=f"{type(exc).__name__}: {exc}")
        result = normalise_return(outcome.get("value"))
        if printed:
            result.message = "\n".join(x for x in (printed, result.message) if x)
        return result


def _fit_arguments(fn: Callable[..., Any], args: dict[str, Any]) -> dict[str, Any]:
    """Keep the arguments the function accepts; report missing required ones clearly."""
    sig = inspect.signature(fn)
    accepts_kwargs = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    kwargs = {k: v for k, v in args.items() if accepts_kwargs or k in sig.parameters}
    missing = [
        name for name, p in sig.parameters.items()
        if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and name not in kwargs
    ]
    if missing:
        raise TypeError(f"{fn.__name__} needs {', '.join(missing)} but got no value for it")
    return kwargs
