"""The Python binding: importing the program's tool files and calling their functions, each under a
time limit with its printed output captured and bounded."""

from __future__ import annotations

import functools
import importlib.util
import inspect
import io
import queue
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from frontdesk.access import escape
from frontdesk.ir.models import PythonBinding

from .result import TOO_SLOW_MESSAGE, ErrorKind, ToolResult, failed, text_of


@dataclass
class Returned:
    """A binding's raw answer: the value the tool gave, or the error result it came to; plus what it
    printed (cut to its limit) and, when that was cut, the length of all of it."""

    value: Any = None
    failure: ToolResult | None = None
    printed: str = ""
    printed_total: int = 0


class ToolLoadError(Exception):
    """A tool file could not be imported (it raised, exited or hung) or lacks the function."""

    def __init__(self, message: str, kind: ErrorKind = "raised") -> None:
        super().__init__(message)
        self.kind = kind


class PythonFunctions:
    """Imports tool files (each once, under the time limit `import_timeout`) and calls their
    functions. A tool that hangs becomes an error result after its time limit (its thread is left to
    finish on its own; Python cannot stop it); one that raises anything, `SystemExit` included, an
    error result too."""

    def __init__(self, root: Path, import_timeout: float) -> None:
        self.root = root
        self.import_timeout = import_timeout
        self._modules: dict[str, Any] = {}
        self._broken: dict[str, ToolLoadError] = {}  # tool file -> why it could not be imported
        self._import_lock = threading.Lock()

    def module(self, rel: str):
        with self._import_lock:
            if rel in self._broken:
                raise self._broken[rel]
            if rel not in self._modules:
                try:
                    self._modules[rel] = self._import(rel)
                except ToolLoadError as exc:
                    self._broken[rel] = exc
                    raise
            return self._modules[rel]

    def _import(self, rel: str):
        """Run the tool file under the time limit; ToolLoadError when it raises, exits or hangs, or when
        it lies outside the program's folder and every folder the operator grants (`check` says so too)."""
        problem = escape(self.root, rel)
        if problem:
            raise ToolLoadError(f"the tool file {problem}", "config")
        path = (self.root / rel).resolve()
        name = f"frontdesk_tools_{abs(hash(str(path)))}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ToolLoadError(f"cannot load tool file {rel}", "not_found")
        module = importlib.util.module_from_spec(spec)
        loader = spec.loader
        timeout = self.import_timeout
        done, value = run_limited(lambda: _exec_module(name, module, loader), f"import {rel}", timeout)
        if not done:
            raise ToolLoadError(f"importing tool file {rel} did not finish within {timeout:g} seconds", "timeout")
        if isinstance(value, Raised):
            sys.modules.pop(name, None)
            raise ToolLoadError(f"importing tool file {rel} failed: {describe(value.exc)}")
        return module

    def function(self, binding: PythonBinding) -> Callable[..., Any]:
        fn = getattr(self.module(binding.module), binding.function, None)
        if not callable(fn):
            raise ToolLoadError(f"tool file {binding.module} has no function {binding.function}", "not_found")
        return fn

    def call(self, tool: str, binding: PythonBinding, args: dict[str, Any], timeout: float,
             output_limit: int) -> Returned:
        try:
            fn = self.function(binding)
        except ToolLoadError as exc:
            return Returned(failure=failed(exc.kind, f"tool {tool} could not be loaded: {exc}"))
        try:
            kwargs = fit_arguments(fn, args)
        except TypeError as exc:
            return Returned(failure=failed("bad_arguments", str(exc), message=str(exc)))
        done, value, printed, printed_total = call_capturing(fn, kwargs, f"tool {tool}", timeout,
                                                             output_limit=output_limit)
        if not done:
            outcome = failed("timeout", f"{tool} did not finish within {timeout:g} seconds", TOO_SLOW_MESSAGE)
        elif isinstance(value, Raised):
            outcome = failed("raised", f"{tool} failed: {describe(value.exc)}")
        else:
            return Returned(value=value, printed=printed, printed_total=printed_total)
        return Returned(failure=outcome, printed=printed, printed_total=printed_total)


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


@dataclass
class Raised:
    exc: BaseException


def _exec_module(name: str, module: Any, loader: Any) -> None:
    sys.modules[name] = module
    loader.exec_module(module)


def run_limited(work: Callable[[], Any], label: str, timeout: float) -> tuple[bool, Any]:
    """(finished, value or Raised) of `work` run in a daemon thread for at most `timeout` seconds."""
    done, value, _, _ = call_capturing(work, {}, label, timeout, output_limit=0)
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


def call_capturing(fn: Callable[..., Any], kwargs: dict[str, Any], label: str, timeout: float,
                   output_limit: int = 0) -> tuple[bool, Any, str, int]:
    """Call `fn(**kwargs)` in a daemon thread with its printed output captured, at most
    `output_limit` characters of it kept (0: none).

    Returns (finished, return value or Raised, printed text, the length of all it printed when
    that was more than was kept, else 0). Anything the function raises is caught, SystemExit too;
    KeyboardInterrupt only ever reaches the main thread.
    """
    stdout = _capturing_stdout()
    out = _BoundedText(output_limit)
    outcome: list[Any] = []

    def run() -> None:
        stdout.local.buffer = out
        try:
            outcome.append(fn(**kwargs))
        except BaseException as exc:  # noqa: BLE001 - reported as the tool's error, whatever it is
            outcome.append(Raised(exc))
        finally:
            stdout.local.buffer = None

    done = threading.Event()

    def job() -> None:
        try:
            run()
        finally:
            done.set()

    WORKERS.submit(job)
    finished = done.wait(timeout)
    printed = text_of(out.getvalue()).strip()
    total = out.total if out.total > out.kept else 0
    if not finished or not outcome:
        return False, None, printed, total
    return True, outcome[0], printed, total


class _Workers:
    """Threads that run tool calls, kept for the next call (starting a thread per call cost a tenth of
    a millisecond each time). A call that outlives its time limit keeps its thread busy, so a new one is
    started for the next call whenever none is free."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            if self._idle:
                self._idle -= 1  # a free worker takes it
            else:
                threading.Thread(target=self._work, name="frontdesk-tool", daemon=True).start()
        self._jobs.put(job)

    def _work(self) -> None:
        while True:
            self._jobs.get()()
            with self._lock:
                self._idle += 1


WORKERS = _Workers()


def describe(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"SystemExit (it called sys.exit({exc.code!r}))"
    return f"{type(exc).__name__}: {text_of(exc)}"


@functools.lru_cache(maxsize=512)
def _signature(fn: Callable[..., Any]) -> inspect.Signature | None:
    """A tool function's signature, read once (inspect.signature costs a tenth of a millisecond a call)."""
    try:
        return inspect.signature(fn)
    except ValueError:  # a builtin without a readable signature
        return None


def fit_arguments(fn: Callable[..., Any], args: dict[str, Any]) -> dict[str, Any]:
    """Keep the arguments the function accepts; report missing required ones clearly."""
    try:
        sig = _signature(fn)
    except TypeError:  # not hashable: read it now
        sig = inspect.signature(fn)
    if sig is None:  # pass everything
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
