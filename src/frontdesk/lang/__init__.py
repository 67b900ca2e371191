"""Front ends: `load_program` picks the language from the path and returns the IR plus diagnostics."""

from __future__ import annotations

from pathlib import Path

from frontdesk.diagnostics import Diagnostic, Severity, Span
from frontdesk.ir.models import Program

__all__ = ["load_program"]


def load_program(path: str | Path) -> tuple[Program | None, list[Diagnostic]]:
    """Load a program: an ADL .yml/.yaml file or a folder holding one; anything else is FD001."""
    from frontdesk.lang.adl import load_adl

    given = Path(path)
    if given.is_dir() or given.suffix.lower() in (".yml", ".yaml"):
        return load_adl(given)
    return None, [
        Diagnostic(
            "FD001",
            f"unsupported program file '{given.name}'",
            Span(file=str(path)),
            Severity.ERROR,
            hint="pass an ADL program: a .yml/.yaml file or a folder holding agents.yml",
        )
    ]
