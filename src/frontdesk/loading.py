"""Reading a program for a command: the program with its diagnostics, or its errors printed and exit
status 1. Shared by the `frontdesk` commands (cli.py) and those kept in their own modules (e.g.
analysis/graph_cli.py); it imports no command module."""

from __future__ import annotations

import errno

import typer
from rich.console import Console
from rich.text import Text

from frontdesk.diagnostics import Diagnostic, Severity, Span, format_all

# Diagnostics and paths are printed as Text, never read as Rich markup.
err = Console(stderr=True, highlight=False, soft_wrap=True)


def print_diagnostics(diags: list[Diagnostic], show_info: bool = False) -> None:
    """The diagnostics on stderr, informational notes only when asked for."""
    shown = [d for d in diags if show_info or d.severity is not Severity.INFO]
    if shown:
        err.print(Text(format_all(shown)))


def read_program(program_path: str, entry: str | None = None):
    """`load_program`, with a path the OS refuses outright (e.g. a name over 255 bytes) as a diagnostic."""
    from frontdesk.lang import load_program

    try:
        return load_program(program_path, entry=entry)
    except (OSError, ValueError) as exc:
        reason = "the file name is too long" if getattr(exc, "errno", None) == errno.ENAMETOOLONG \
            else (getattr(exc, "strerror", None) or str(exc))
        return None, [Diagnostic("FD001", f"cannot read the program: {reason}", Span(file=program_path),
                                 Severity.ERROR, hint="check the path")]


def load_or_exit(program_path: str, quiet_warnings: bool = False, entry: str | None = None):
    """The program and its diagnostics; on an error, every diagnostic is printed and the command exits 1."""
    program, diags = read_program(program_path, entry)
    errors = [d for d in diags if d.is_error]
    if errors or program is None:
        print_diagnostics(diags)
        n = len(errors)
        err.print(Text(f"{program_path}: {n} error{'s' if n != 1 else ''}; fix them and run again.", style="red"))
        raise typer.Exit(1)
    if not quiet_warnings:
        print_diagnostics(diags)
    return program, diags
