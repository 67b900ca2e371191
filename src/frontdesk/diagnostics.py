"""Diagnostics: a code, a message, a source span, a hint, their pretty printing, and bounded source reading."""

from __future__ import annotations

import difflib
import errno
import os
import stat
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Iterable

from pydantic import BaseModel


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Span(BaseModel):
    """A place in a source file; line and column are 1-based."""

    file: str = ""
    line: int = 0
    column: int = 0
    end_line: int | None = None
    end_column: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@dataclass
class Diagnostic:
    code: str
    message: str
    span: Span | None = None
    severity: Severity = Severity.ERROR
    hint: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def to_json(self) -> dict:
        return {
            "code": self.code,
            "severity": self.severity.value,
            "message": self.message,
            "file": self.span.file if self.span else None,
            "line": self.span.line if self.span else None,
            "column": self.span.column if self.span else None,
            "hint": self.hint,
            "notes": list(self.notes),
        }

    def format(self, source_text: str | None = None, *, source_lines: list[str] | None = None) -> str:
        """Render as `file:line:col: severity[CODE]: message`, the source line, a caret and the hint.

        `source_lines` (the file already split into lines) spares splitting the whole text again for
        every diagnostic of a file; `format_all` passes it."""
        where = f"{self.span}: " if self.span and self.span.line else (f"{self.span.file}: " if self.span else "")
        out = [f"{where}{self.severity.value}[{self.code}]: {self.message}"]
        if source_lines is None and source_text is not None:
            source_lines = source_text.splitlines()
        if self.span and self.span.line and source_lines is not None:
            lines = source_lines
            if 0 < self.span.line <= len(lines):
                text = lines[self.span.line - 1]
                column = max(0, self.span.column - 1)
                if len(text) <= _EXCERPT_WIDTH:
                    text = _printable(text)
                else:  # a window around the column, not a megabyte of one line (made printable alone)
                    start = max(0, min(column - _EXCERPT_WIDTH // 2, len(text) - _EXCERPT_WIDTH))
                    window = _printable(text[start:start + _EXCERPT_WIDTH])
                    prefix = "…" if start > 0 else ""
                    text = prefix + window + ("…" if start + _EXCERPT_WIDTH < len(text) else "")
                    column = column - start + len(prefix)
                gutter = f"{self.span.line:>4} | "
                out.append(gutter + text)
                width = 1
                if self.span.end_line == self.span.line and self.span.end_column:
                    width = max(1, min(self.span.end_column - self.span.column, len(text) - column))
                out.append(" " * (len(gutter) + column) + "^" * width)
        for note in self.notes:
            out.append(f"  = note: {note}")
        if self.hint:
            out.append(f"  = hint: {self.hint}")
        return "\n".join(out)


_EXCERPT_WIDTH = 160


def _printable(line: str) -> str:
    """A source line safe to print on a terminal: control characters (but tabs) become U+FFFD."""
    return "".join(ch if ch == "\t" or (ch >= " " and not "\x7f" <= ch <= "\x9f") else "\ufffd" for ch in line)


class DiagnosticBag:
    """Collects diagnostics while a front end or checker runs."""

    def __init__(self) -> None:
        self.items: list[Diagnostic] = []

    def add(self, diag: Diagnostic) -> Diagnostic:
        self.items.append(diag)
        return diag

    def error(self, code: str, message: str, span: Span | None = None, hint: str | None = None) -> Diagnostic:
        return self.add(Diagnostic(code, message, span, Severity.ERROR, hint))

    def warning(self, code: str, message: str, span: Span | None = None, hint: str | None = None) -> Diagnostic:
        return self.add(Diagnostic(code, message, span, Severity.WARNING, hint))

    def info(self, code: str, message: str, span: Span | None = None, hint: str | None = None) -> Diagnostic:
        return self.add(Diagnostic(code, message, span, Severity.INFO, hint))

    def extend(self, diags: Iterable[Diagnostic]) -> None:
        self.items.extend(diags)

    @property
    def has_errors(self) -> bool:
        return any(d.is_error for d in self.items)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.items if d.is_error]

    def sorted(self) -> list[Diagnostic]:
        def key(d: Diagnostic):
            s = d.span
            return (s.file if s else "", s.line if s else 0, s.column if s else 0, d.code)

        return sorted(self.items, key=key)


def did_you_mean(word: str, candidates: Iterable[str]) -> str | None:
    """The closest candidate to `word`, if one is close enough to be a likely typo."""
    matches = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return matches[0] if matches else None


def format_all(diags: Iterable[Diagnostic]) -> str:
    """Format diagnostics, reading and splitting each file once for the source excerpts (none for
    unreadable files): the time grows with the file plus the diagnostics, not their product."""
    cache: dict[str, list[str] | None] = {}
    parts = []
    for d in diags:
        lines = None
        if d.span and d.span.file:
            if d.span.file not in cache:
                try:
                    text = read_source_bytes(Path(d.span.file)).decode("utf-8", errors="replace")
                    cache[d.span.file] = text.splitlines()
                except SourceReadError:
                    cache[d.span.file] = None
            lines = cache[d.span.file]
        parts.append(d.format(source_lines=lines))
    return "\n\n".join(parts)


# A source file (program, settings, tool file) larger than this is refused before it is read.
MAX_SOURCE_BYTES = 4 * 1024 * 1024


class SourceReadError(Exception):
    """A source file cannot be read: missing, not a regular file, too large, or an OS error.

    The message is a sentence for a diagnostic; `hint` says what to do about it.
    """

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.hint = hint


def read_source_bytes(path: Path, limit: int = MAX_SOURCE_BYTES) -> bytes:
    """The bytes of a regular file of at most `limit` bytes, checked before reading.

    FIFOs, devices and folders are refused without being opened (reading them can hang or never
    end), and a file that grows past the limit while it is read is refused too.
    """
    try:
        info = os.stat(path)
    except OSError as exc:
        raise SourceReadError(_os_problem(exc), "check the path") from None
    except ValueError:  # a NUL byte in the path
        raise SourceReadError("the path is not a valid file name", "check the path") from None
    if stat.S_ISDIR(info.st_mode):
        raise SourceReadError("it is a folder, not a file", "pass a file, or a folder that holds agents.yml")
    if not stat.S_ISREG(info.st_mode):
        raise SourceReadError("it is not a regular file (a device, pipe or socket)", "pass a text file")
    if info.st_size > limit:
        raise SourceReadError(f"the file is {info.st_size:,} bytes, more than the limit of {limit:,} bytes",
                              f"keep source files under {limit // (1024 * 1024)} MB")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise SourceReadError(_os_problem(exc), "check the path and the file permissions") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped for something else since the check
            raise SourceReadError("it is not a regular file (a device, pipe or socket)", "pass a text file")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise SourceReadError(_os_problem(exc), "check the path and the file permissions") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise SourceReadError(f"the file is more than the limit of {limit:,} bytes",
                              f"keep source files under {limit // (1024 * 1024)} MB")
    return data


def _os_problem(exc: OSError) -> str:
    reason = exc.strerror or type(exc).__name__
    if exc.errno == errno.ENAMETOOLONG:
        return "the file name is too long"
    if isinstance(exc, FileNotFoundError):
        return "file not found"
    return f"cannot read it: {reason}"
