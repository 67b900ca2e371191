"""Tool binding: calling the program's Python functions and reading the ADL return convention."""

from __future__ import annotations

import importlib.util
import inspect
import io
import json
import math
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
    truncated: dict[str, int] = field(default_factory=dict)  # what was cut -> its full length in characters

    def for_model(self, call_args: dict[str, Any] | None = None) -> str:
        """The tool's result as text for an LLM's tool message. A returned value the model already
        has (the argument it passed, or text the message holds word for word) is not repeated: the
        result stays in the agent's transcript and is resent with every later call."""
        parts = [f"status: {self.status}"]
        if self.message:
            parts.append(f"message: {self.message}")
        given = call_args or {}
        new = {k: v for k, v in self.args.items()
               if not (k in given and str(given[k]) == str(v))
               and not (isinstance(v, str) and len(v) > 12 and v in self.message)}
        if new:
            parts.append("values: " + ", ".join(f"{k}={v!r}" for k, v in new.items()))
        if self.bot:
            parts.append("said to the user: " + " / ".join(self.bot))
        return "\n".join(parts)


def normalise_return(value: Any) -> ToolResult:
    """Read a tool's return value: a list of `{status,msg}`, `{bot}`, `{arg,value}` items (or one).

    Whatever the tool returns, the result holds only JSON data (see `json_safe`), so it can be
    stored with the session.
    """
    result = ToolResult()
    if value is None:
        return result
    items = value if isinstance(value, list) else [value]
    free: list[str] = []
    for item in items:
        if not isinstance(item, dict):
            free.append(text_of(item))
            continue
        if "status" in item and "arg" not in item and "slot_name" not in item:
            status = text_of(item.get("status", "success")).lower()
            result.status = "error" if status in ("error", "failed", "failure", "false") else "success"
            if item.get("msg") is not None:
                free.append(text_of(item["msg"]))
        elif "bot" in item:
            result.bot.append(text_of(item["bot"]))
        elif "arg" in item or "slot_name" in item:
            result.args[text_of(item.get("arg", item.get("slot_name")))] = json_safe(item.get("value"))
        elif "error" in item:
            result.status = "error"
            free.append(text_of(item["error"]))
        elif "msg" in item:
            free.append(text_of(item["msg"]))
        else:
            # A plain mapping of values: treat each key as an argument update.
            result.args.update({text_of(k): json_safe(v) for k, v in item.items()})
    result.message = "\n".join(m for m in free if m)
    return result


_MAX_JSON_DEPTH = 32


def json_safe(value: Any, depth: int = 0) -> Any:
    """`value` as JSON data: text is valid UTF-8, bytes are decoded (bad bytes replaced), containers are
    lists and string-keyed dicts, non-finite floats and any other object become their text."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else str(value)
    if isinstance(value, (str, bytes, bytearray)):
        return text_of(value)
    if depth >= _MAX_JSON_DEPTH:
        return text_of(value)
    if isinstance(value, dict):
        return {text_of(k): json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_safe(v, depth + 1) for v in value]
    return text_of(value)


def text_of(value: Any) -> str:
    """Any value as valid UTF-8 text: bytes decoded with replacement, lone surrogates replaced, and an
    object whose `str()` fails named by its type."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, str):
        text = value
    else:
        try:
            text = str(value)
        except Exception:  # noqa: BLE001 - a broken __str__ in tool code
            return f"<{type(value).__name__}>"
        if not isinstance(text, str):
            return f"<{type(value).__name__}>"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", errors="replace").decode("utf-8")
    return text


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


# What the caller (and, through `${tool.message}`, the customer) is told when a tool breaks; the
# details (exception, time limit, import failure) go to the result's `error`, which is logged.
UNAVAILABLE_MESSAGE = "the service is unavailable right now, please try again later"
TOO_SLOW_MESSAGE = "the service did not answer in time, please try again later"


class PythonToolRunner:
    """Imports the program's tool files and calls their functions, capturing printed output.

    Importing a tool file and each call run in their own thread with a time limit: a tool that
    hangs becomes an error result after `timeout` seconds (its thread is left to finish on its
    own; Python cannot stop it), and one that raises anything, `SystemExit` included, becomes an
    error result too.
    """

    def __init__(self, program: Program, timeout: float | None = None) -> None:
        self.program = program
        self.root = Path(program.root or ".")
        # `timeout` overrides the program's `tools:` settings for every call (tests use it)
        self._timeout_override = timeout
        self.timeout = timeout if timeout is not None else program.settings.tools.timeout  # imports
        self._modules: dict[str, Any] = {}
        self._broken: dict[str, str] = {}  # tool file -> why it could not be imported
        self._import_lock = threading.Lock()

    def _module(self, rel: str):
        with self._import_lock:
            if rel in self._broken:
                raise ToolLoadError(self._broken[rel])
            if rel not in self._modules:
                try:
                    self._modules[rel] = self._import(rel)
                except ToolLoadError as exc:
                    self._broken[rel] = str(exc)
                    raise
            return self._modules[rel]

    def _import(self, rel: str):
        """Run the tool file under the time limit; ToolLoadError when it raises, exits or hangs."""
        path = (self.root / rel).resolve()
        name = f"frontdesk_tools_{abs(hash(str(path)))}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ToolLoadError(f"cannot load tool file {rel}")
        module = importlib.util.module_from_spec(spec)
        loader = spec.loader
        done, value = _run_limited(lambda: _exec_module(name, module, loader), f"import {rel}", self.timeout)
        if not done:
            raise ToolLoadError(f"importing tool file {rel} did not finish within {self.timeout:g} seconds")
        if isinstance(value, _Raised):
            sys.modules.pop(name, None)
            raise ToolLoadError(f"importing tool file {rel} failed: {_describe(value.exc)}")
        return module

    def function(self, tool: ToolDef) -> Callable[..., Any]:
        module = self._module(tool.module)
        fn = getattr(module, tool.name, None)
        if not callable(fn):
            raise ToolLoadError(f"tool file {tool.module} has no function {tool.name}")
        return fn

    def call(self, tool: str, args: dict[str, Any]) -> ToolResult:
        tdef = self.program.tools.get(tool)
        if tdef is None:
            return ToolResult(status="error", message=UNAVAILABLE_MESSAGE, error=f"no tool named {tool}")
        try:
            fn = self.function(tdef)
        except ToolLoadError as exc:
            return ToolResult(status="error", message=UNAVAILABLE_MESSAGE, error=f"tool {tool} could not be loaded: {exc}")
        try:
            kwargs = _fit_arguments(fn, args)
        except TypeError as exc:
            return ToolResult(status="error", message=str(exc), error=str(exc))
        limits = self.program.settings.tools.limits_for(tool)
        timeout = self._timeout_override if self._timeout_override is not None else limits.timeout
        done, value, printed, printed_total = _call_capturing(fn, kwargs, f"tool {tool}", timeout,
                                                              output_limit=limits.output_chars)
        cut = {"printed output": printed_total} if printed_total else {}
        if cut:
            printed = printed + cut_marker(printed_total)
        if not done:
            result = ToolResult(status="error", message=_joined(printed, TOO_SLOW_MESSAGE),
                                error=f"{tool} did not finish within {timeout:g} seconds")
        elif isinstance(value, _Raised):
            result = ToolResult(status="error", message=_joined(printed, UNAVAILABLE_MESSAGE),
                                error=f"{tool} failed: {_describe(value.exc)}")
        else:
            result = normalise_return(value)
            bound_result(result, limits.result_chars)
            if printed:  # already cut to its own limit
                result.message = _joined(printed, result.message)
        result.truncated = {**cut, **result.truncated}
        return result


class StubToolRunner:
    """Tool calls answered from a table, for tests and for trying a program before its tools exist.

    `answers` maps a tool's name to a ToolResult, to a return value in the ADL convention, or to a
    function of the call's arguments giving either; a tool not in the table is an error result.
    Every call is kept in `calls`.
    """

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = dict(answers)
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def call(self, tool: str, args: dict[str, Any]) -> ToolResult:
        self.calls.append((tool, dict(args)))
        if tool not in self.answers:
            return ToolResult(status="error", message=UNAVAILABLE_MESSAGE, error=f"no stub answer for {tool}")
        answer = self.answers[tool]
        if callable(answer):
            try:
                answer = answer(**args)
            except Exception as exc:  # noqa: BLE001 - a stub that fails is a failing tool
                return ToolResult(status="error", message=UNAVAILABLE_MESSAGE, error=f"{tool} failed: {_describe(exc)}")
        return answer if isinstance(answer, ToolResult) else normalise_return(answer)


class ToolLoadError(Exception):
    """A tool file could not be imported (it raised, exited or hung) or lacks the function."""


@dataclass
class _Raised:
    exc: BaseException


def _exec_module(name: str, module: Any, loader: Any) -> None:
    sys.modules[name] = module
    loader.exec_module(module)


def _run_limited(work: Callable[[], Any], label: str, timeout: float) -> tuple[bool, Any]:
    """(finished, value or _Raised) of `work` run in a daemon thread for at most `timeout` seconds."""
    done, value, _, _ = _call_capturing(work, {}, label, timeout, output_limit=0)
    return done, value


class _BoundedText(io.TextIOBase):
    """A write buffer that keeps the first `limit` characters and counts the rest."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[str] = []
        self.kept = 0
        self.total = 0

    def write(self, text: str) -> int:
        text = text if isinstance(text, str) else text_of(text)
        self.total += len(text)
        room = self.limit - self.kept
        if room > 0:
            self.parts.append(text[:room])
            self.kept += min(room, len(text))
        return len(text)

    def getvalue(self) -> str:
        return "".join(self.parts)

    def writable(self) -> bool:
        return True


def cut_marker(total: int) -> str:
    return f" [... cut: {total:,} characters in all]"


def _bounded_text(text: str, limit: int) -> tuple[str, int]:
    """(the text cut to `limit` characters with a marker, its full length) or (text, 0) when it fits."""
    if len(text) <= limit:
        return text, 0
    return text[:limit] + cut_marker(len(text)), len(text)


def bound_result(result: ToolResult, limit: int) -> None:
    """Cut each text of a tool's result (its message, a line it says, a value it returns) to `limit`
    characters, noting in `result.truncated` what was cut and how long it was."""
    result.message, total = _bounded_text(result.message, limit)
    if total:
        result.truncated["message"] = total
    for i, line in enumerate(result.bot):
        result.bot[i], total = _bounded_text(line, limit)
        if total:
            result.truncated[f"said line {i + 1}"] = total
    for name, value in list(result.args.items()):
        shown, total = _bounded_text(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False), limit)
        if total:
            result.args[name] = shown
            result.truncated[f"value {name}"] = total


def _call_capturing(fn: Callable[..., Any], kwargs: dict[str, Any], label: str, timeout: float,
                    output_limit: int = 0) -> tuple[bool, Any, str, int]:
    """Call `fn(**kwargs)` in a daemon thread with its printed output captured, at most
    `output_limit` characters of it kept (0: none).

    Returns (finished, return value or _Raised, printed text, the length of all it printed when
    that was more than was kept, else 0). Anything
    the function raises is caught, SystemExit too; KeyboardInterrupt only ever reaches the main
    thread.
    """
    stdout = _capturing_stdout()
    out = _BoundedText(output_limit)
    outcome: list[Any] = []

    def run() -> None:
        stdout.local.buffer = out
        try:
            outcome.append(fn(**kwargs))
        except BaseException as exc:  # noqa: BLE001 - reported as the tool's error, whatever it is
            outcome.append(_Raised(exc))
        finally:
            stdout.local.buffer = None

    worker = threading.Thread(target=run, name=label, daemon=True)
    worker.start()
    worker.join(timeout)
    printed = text_of(out.getvalue()).strip()
    total = out.total if out.total > out.kept else 0
    if worker.is_alive() or not outcome:
        return False, None, printed, total
    return True, outcome[0], printed, total


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"SystemExit (it called sys.exit({exc.code!r}))"
    return f"{type(exc).__name__}: {text_of(exc)}"


def _joined(*parts: str) -> str:
    return "\n".join(p for p in parts if p)


def _fit_arguments(fn: Callable[..., Any], args: dict[str, Any]) -> dict[str, Any]:
    """Keep the arguments the function accepts; report missing required ones clearly."""
    try:
        sig = inspect.signature(fn)
    except ValueError:  # a builtin without a readable signature: pass everything
        return dict(args)
    accepts_kwargs = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    kwargs = {k: v for k, v in args.items() if accepts_kwargs or k in sig.parameters}
    missing = [
        name for name, p in sig.parameters.items()
        if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and name not in kwargs
    ]
    if missing:
        raise TypeError(f"{fn.__name__} needs {', '.join(missing)} but got no value for it")
    return kwargs
