"""The ACDL front end: parse, check and pretty-print Agentic Context Description Language files."""

from __future__ import annotations

import gc
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from frontdesk.diagnostics import Diagnostic, Span

from . import ast, codes
from .ast import File
from .checker import check_file
from .parser import parse_syntax
from .printer import format_acdl, format_expr

__all__ = ["parse_acdl", "check_acdl", "format_acdl", "format_expr", "load_acdl", "ast", "codes", "File"]


def parse_acdl(text: str, filename: str = "<acdl>") -> tuple[File | None, list[Diagnostic]]:
    """Parse and check ACDL text: the File (None on a syntax error) and every diagnostic, sorted.

    Never raises on bad input; problems are diagnostics with file, line, column and a hint.
    """
    try:
        with _no_cycle_collection():
            file_ast, diagnostics = parse_syntax(text, filename)
            if file_ast is None:
                return None, diagnostics
            found = diagnostics + check_file(file_ast)
    except RecursionError:
        return None, [
            Diagnostic(
                codes.SYNTAX, "the specification nests too deeply to read", Span(file=filename),
                hint="split long expressions with Name definitions and deep blocks into fragments",
            )
        ]
    return file_ast, _sorted(found)


def check_acdl(source: File | str, filename: str = "<acdl>") -> list[Diagnostic]:
    """Diagnostics for ACDL text (syntax and rules) or for an already parsed File (rules only)."""
    if isinstance(source, File):
        return check_file(source)
    return parse_acdl(source, filename)[1]


def load_acdl(path: str | Path) -> tuple[File | None, list[Diagnostic]]:
    """Read and parse an .acdl file; an unreadable file is one ACDL015 diagnostic."""
    given = Path(path)
    try:
        text = given.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return None, [
            Diagnostic(codes.READ_ERROR, f"cannot read '{given}': {reason}", Span(file=str(path)), hint="check the path and that the file is UTF-8 text")
        ]
    return parse_acdl(text, str(path))


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Pause Python's cycle collector while a file is read: the parse builds hundreds of thousands of
    small objects and no reference cycles, and the collector's passes over them cost about a quarter
    of the time of a large file. Reference counting still frees everything as usual."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _sorted(diags: list[Diagnostic]) -> list[Diagnostic]:
    return sorted(diags, key=lambda d: (d.span.line if d.span else 0, d.span.column if d.span else 0, d.code))
