"""The `frontdesk acdl` commands: `check` reports diagnostics, `fmt` prints the canonical text."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from rich.console import Console

from frontdesk.diagnostics import Diagnostic, Severity, format_all

from . import format_acdl, load_acdl

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="ACDL (Agentic Context Description Language): check and format .acdl specifications.",
)
_out = Console(highlight=False, soft_wrap=True)
_err = Console(stderr=True, highlight=False, soft_wrap=True)


def _counts(diags: list[Diagnostic]) -> tuple[int, int]:
    errors = sum(1 for d in diags if d.is_error)
    warnings = sum(1 for d in diags if d.severity is Severity.WARNING)
    return errors, warnings


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


@app.command()
def check(
    file: Path = typer.Argument(..., help="The .acdl file to check."),
    output_format: str = typer.Option("text", "--format", help="text or json"),
) -> None:
    """Report every problem in an ACDL file with file, line, column, code and hint (exit 1 on errors)."""
    if output_format not in ("text", "json"):
        _err.print(f"[red]error:[/red] --format must be text or json, not {output_format!r}")
        raise typer.Exit(2)
    file_ast, diags = load_acdl(file)
    errors, warnings = _counts(diags)
    if output_format == "json":
        _out.print_json(json.dumps([d.to_json() for d in diags]))
    else:
        if diags:
            _err.print(format_all(diags), markup=False)
        specs = len(file_ast.specs) if file_ast else 0
        style = "red" if errors else "green"
        _err.print(
            f"[{style}]{file}: {_plural(errors, 'error')}, {_plural(warnings, 'warning')}, "
            f"{_plural(specs, 'specification')}[/{style}]",
            markup=True,
        )
    raise typer.Exit(1 if errors or file_ast is None else 0)


@app.command()
def fmt(
    file: Path = typer.Argument(..., help="The .acdl file to format."),
    write: bool = typer.Option(False, "--write", "-w", help="Rewrite the file in place instead of printing."),
) -> None:
    """Print the canonical form of an ACDL file (4-space indentation, one element per line, comments kept)."""
    file_ast, diags = load_acdl(file)
    errors, _ = _counts(diags)
    if errors or file_ast is None:
        _err.print(format_all(diags), markup=False)
        _err.print(f"[red]{file}: {_plural(errors, 'error')}; not formatted.[/red]")
        raise typer.Exit(1)
    text = format_acdl(file_ast)
    if not write:
        sys.stdout.write(text)
        return
    original = file.read_bytes().decode("utf-8")
    if "\r\n" in original:
        text = text.replace("\n", "\r\n")
    if text == original:
        _err.print(f"{file}: already formatted")
        return
    file.write_bytes(text.encode("utf-8"))
    _err.print(f"{file}: formatted")
