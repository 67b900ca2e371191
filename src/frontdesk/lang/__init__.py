"""Front ends: `load_program` picks the language from the path and returns the IR plus diagnostics."""

from __future__ import annotations

from pathlib import Path

from frontdesk.diagnostics import Diagnostic, Severity, Span
from frontdesk.ir.models import Program

__all__ = ["load_program"]


def load_program(path: str | Path, entry: str | None = None) -> tuple[Program | None, list[Diagnostic]]:
    """Load a program: an ADL .yml/.yaml file or a folder holding one, or an ABL project (a folder of
    .agent.abl / .agent.yaml / .tools.abl files, or one such file); anything else is FD001. What the
    program reaches outside its folder is reported too (FD060-FD063, `frontdesk.access`)."""
    from frontdesk.access import reach_diagnostics

    try:
        program, diags = _load_program(path, entry)
    except OSError:
        raise  # a path the system refuses: the caller says what to do about it
    except Exception as exc:  # noqa: BLE001 - the last line of defence: a front end's bug, never a traceback
        return None, [internal_error(path, exc)]
    if program is not None:
        diags = diags + reach_diagnostics(program)
    return program, diags


def internal_error(path: str | Path, exc: BaseException) -> Diagnostic:
    """FD002: a front end failed on the program at `path` (a bug of Frontdesk, not of the program)."""
    kind = "it nests too deeply to read" if isinstance(exc, RecursionError) else type(exc).__name__
    return Diagnostic("FD002", f"internal error while reading the program ({kind})", Span(file=str(path)),
                      Severity.ERROR, hint="this is a bug in Frontdesk: please report it with the file; "
                      "meanwhile, simplify the part of the program you changed last")


def _load_program(path: str | Path, entry: str | None) -> tuple[Program | None, list[Diagnostic]]:
    from frontdesk.lang.abl.compiler import load_abl
    from frontdesk.lang.abl.documents import is_abl_file
    from frontdesk.lang.adl import load_adl

    given = Path(path)
    if given.is_file() and is_abl_file(given):
        return load_abl(given, entry=entry)
    if given.is_dir() and not any((given / n).is_file() for n in ("agents.yml", "agents.yaml")) and \
            any(is_abl_file(p) for p in given.rglob("*") if p.is_file()):
        return load_abl(given, entry=entry)
    if given.is_dir() or given.suffix.lower() in (".yml", ".yaml"):
        return load_adl(given)
    return None, [
        Diagnostic(
            "FD001",
            f"unsupported program file '{given.name}'",
            Span(file=str(path)),
            Severity.ERROR,
            hint="pass an ADL program (a .yml file or a folder holding agents.yml) or an ABL project "
                 "(.agent.abl / .agent.yaml files, or a folder of them)",
        )
    ]
