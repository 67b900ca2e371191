"""The `frontdesk acdl render` and `frontdesk acdl diff` commands (a typer sub-app the main CLI mounts)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console

from frontdesk.diagnostics import Diagnostic, Severity, Span, format_all

__all__ = ["render_command", "diff_command", "acdl_app", "load_acdl_file"]

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

EXIT_EQUAL = 0
EXIT_DIFFERENT = 1
EXIT_EXPORT_FAILED = 1
EXIT_PARSE_ERROR = 2


def _parse(text: str, filename: str) -> tuple[Any, list[Diagnostic]]:
    """Parse with the front end's fullest entry point available (parse + checks, else syntax only)."""
    from frontdesk import acdl as acdl_pkg
    from frontdesk.acdl import parser

    for owner in (acdl_pkg, parser):
        entry = getattr(owner, "parse_acdl", None)
        if callable(entry):
            return entry(text, filename)
    return parser.parse_syntax(text, filename)


def load_acdl_file(path: Path) -> tuple[Any, list[Diagnostic]]:
    """Read and parse an .acdl file; a missing/unreadable file is a diagnostic, not an exception."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return None, [Diagnostic("ACDL-IO", f"cannot read '{path}': {reason}", Span(file=str(path)), Severity.ERROR)]
    return _parse(text, str(path))


def _load_or_exit(path: Path) -> Any:
    file_ast, diags = load_acdl_file(path)
    shown = [d for d in diags if d.severity is not Severity.INFO]
    if shown:
        err.print(format_all(shown), markup=False)
    if file_ast is None:
        n = len([d for d in diags if d.is_error]) or 1
        err.print(f"{path}: {n} error{'s' if n != 1 else ''}; fix them and run again.", markup=False)
        raise typer.Exit(EXIT_PARSE_ERROR)
    return file_ast


def render_command(
    file: Annotated[Path, typer.Argument(help="The .acdl file to render.")],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Where to write: .svg, .html, .png or .pdf (chosen by suffix).")
    ],
) -> None:
    """Render an ACDL specification as SVG, HTML, PNG or PDF."""
    from frontdesk.acdl.render import ExportError, export

    file_ast = _load_or_exit(file)
    try:
        written = export(file_ast, output)
    except ExportError as exc:
        err.print(f"error: {exc}", markup=False)
        raise typer.Exit(EXIT_EXPORT_FAILED)
    except OSError as exc:
        err.print(f"error: cannot write '{output}': {exc.strerror or exc}", markup=False)
        raise typer.Exit(EXIT_EXPORT_FAILED)
    err.print(f"wrote {written}", markup=False)


def diff_command(
    a: Annotated[Path, typer.Argument(help="The old .acdl file.")],
    b: Annotated[Path, typer.Argument(help="The new .acdl file.")],
    format: Annotated[str, typer.Option("--format", "-f", help="Listing format: text or json.")] = "text",
    output: Annotated[
        Optional[Path],
        typer.Option("--output", "-o", help="Write a side-by-side .html rendering (or the listing, for other suffixes)."),
    ] = None,
) -> None:
    """Structural diff of two ACDL files. Exit status: 0 equal, 1 different, 2 parse error."""
    from frontdesk.acdl.diff import diff_acdl, render_diff_html

    if format not in ("text", "json"):
        err.print(f"error: unknown --format '{format}': use text or json", markup=False)
        raise typer.Exit(EXIT_PARSE_ERROR)
    a_ast = _load_or_exit(a)
    b_ast = _load_or_exit(b)
    diff = diff_acdl(a_ast, b_ast, str(a), str(b))
    listing = diff.to_json_text() if format == "json" else diff.to_text()
    if output is not None and output.suffix.lower() not in (".html", ".htm"):
        _write(output, listing)
    else:
        out.print(listing, end="", markup=False)
        if output is not None:
            _write(output, render_diff_html(a_ast, b_ast, diff))
    raise typer.Exit(EXIT_EQUAL if diff.is_empty else EXIT_DIFFERENT)


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        err.print(f"error: cannot write '{path}': {exc.strerror or exc}", markup=False)
        raise typer.Exit(EXIT_PARSE_ERROR)
    err.print(f"wrote {path}", markup=False)


acdl_app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="ACDL (Agentic Context Description Language): render and diff specifications.",
)
acdl_app.command("render")(render_command)
acdl_app.command("diff")(diff_command)
