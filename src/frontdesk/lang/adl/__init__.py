"""The ADL front end: `load_adl` turns an agents.yml program into the IR plus diagnostics."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from frontdesk.analysis import analyze_program
from frontdesk.analysis.codes import ADL_ANALYSIS_CODES
from frontdesk.analysis.listen import annotate_listens
from frontdesk.lang.adl.conventions import apply_adl_conventions
from frontdesk.diagnostics import Diagnostic, DiagnosticBag, Span
from frontdesk.ir.models import Program
from frontdesk.yamlsource import CONFIG_NAMES, YMap, YScalar, YSeq, compose_yaml, find_config, kind_name, load_settings
from frontdesk.yamlsource import read_yaml_text

from . import codes
from .frontend import AdlLowering
from .tools import ToolCatalog, default_tool_files, discover_tools

__all__ = ["load_adl", "ADL_ANALYSIS_CODES"]

ADL_SUFFIXES = (".yml", ".yaml")


def load_adl(path: str | Path) -> tuple[Program | None, list[Diagnostic]]:
    """Load an ADL program from a .yml/.yaml file or a folder holding agents.yml.

    Never raises for bad input: problems come back as diagnostics (sorted by position). The
    Program is None only when the file cannot be read or is not a YAML mapping.
    """
    bag = DiagnosticBag()
    located = locate_program(Path(path), bag)
    if located is None:
        return None, bag.sorted()
    file_path, shown = located
    program = _load_file(file_path, shown, bag)
    return program, bag.sorted()


def locate_program(path: Path, bag: DiagnosticBag) -> tuple[Path, str] | None:
    """The program file and the name diagnostics show for it (the path as the user gave it)."""
    mode = _file_mode(path)
    if mode is not None and stat.S_ISDIR(mode):
        for name in ("agents.yml", "agents.yaml"):
            candidate = path / name
            if _file_mode(candidate) is not None:  # read (or refused with a reason) even if not a regular file
                return candidate, str(candidate)
        try:
            candidates = sorted(p for p in path.iterdir() if p.suffix in ADL_SUFFIXES and p.name not in CONFIG_NAMES)
        except OSError:
            candidates = []
        if len(candidates) == 1:
            return candidates[0], str(candidates[0])
        found = ", ".join(p.name for p in candidates) or "no .yml file"
        bag.error(codes.READ_ERROR, f"cannot tell which file in this folder is the program ({found})", Span(file=str(path)),
                  hint="name the program agents.yml or pass the .yml file itself")
        return None
    return path, str(path)  # reading it reports a missing file, a device, a name too long...


def _file_mode(path: Path) -> int | None:
    """The file's stat mode, or None when it cannot be stat'ed (missing, name too long, no permission)."""
    try:
        return os.stat(path).st_mode
    except (OSError, ValueError):
        return None


def _load_file(file_path: Path, shown: str, bag: DiagnosticBag) -> Program | None:
    text = read_yaml_text(file_path, shown, bag, codes.YAML)
    if text is None:
        return None
    document = compose_yaml(text, shown, bag, codes.YAML)
    if document is None and bag.has_errors:
        return None
    if not isinstance(document, YMap):
        what = "empty" if document is None else f"{kind_name(document)}, not a mapping of agents"
        bag.error(codes.NOT_A_MAPPING, f"the program is {what}", Span(file=shown, line=1, column=1),
                  hint="an ADL program maps agent names to agents, starting with main:")
        return None
    root = file_path.resolve().parent
    catalog = _tool_catalog(document, root, shown, bag)
    program = AdlLowering(document, root, shown, catalog, bag).lower()
    program.root = str(root)
    program.sources = [file_path.resolve().relative_to(root).as_posix()]
    _apply_config(program, root, shown, bag)
    program.sources.extend(f for f in catalog.files if f not in program.sources)
    apply_adl_conventions(program)
    annotate_listens(program)
    analyze_program(program, bag, ADL_ANALYSIS_CODES)
    return program


def _apply_config(program: Program, root: Path, shown: str, bag: DiagnosticBag) -> None:
    """Read config.yml (or config.yaml) beside the program into program.settings."""
    config = find_config(root)
    if config is not None:
        program.settings = load_settings(config, str(Path(shown).parent / config.name), bag, codes.YAML)
        program.sources.append(config.name)


def _tool_catalog(document: YMap, root: Path, shown: str, bag: DiagnosticBag) -> ToolCatalog:
    """Tool files: the `tools:` list, or every .py file beside the program when there is none."""
    shown_folder = Path(shown).parent
    tools_node = document.get("tools")
    if tools_node is None:
        files = [(p, str(shown_folder / p.name), None) for p in default_tool_files(root)]
        return discover_tools(files, root, bag)
    if not isinstance(tools_node, YSeq):
        if not (isinstance(tools_node, YScalar) and tools_node.plain and tools_node.value is None):
            bag.error(codes.WRONG_TYPE, f"'tools' must be a list of Python files, found {kind_name(tools_node)}",
                      tools_node.span, hint="write each file on its own line: - tools.py")
        return ToolCatalog()
    files = []
    for item in tools_node.items:
        entry = _tool_entry(item, root, shown_folder, bag)
        if entry is not None:
            files.append(entry)
    return discover_tools(files, root, bag)


def _tool_entry(item, root: Path, shown_folder: Path, bag: DiagnosticBag):
    if not isinstance(item, YScalar) or not item.text.strip():
        bag.error(codes.WRONG_TYPE, f"a tools entry must be a Python file name, found {kind_name(item)}", item.span,
                  hint="write each file on its own line: - tools.py")
        return None
    written = item.text.strip()
    if not written.endswith(".py"):
        bag.error(codes.TOOL_FILE, f"tool file '{written}' is not a .py file", item.span, hint="list Python files, e.g. - tools.py")
        return None
    path = root / written
    mode = _file_mode(path)
    if mode is None or stat.S_ISDIR(mode):
        bag.error(codes.TOOL_FILE, f"tool file '{written}' was not found", item.span,
                  hint=f"paths are relative to the program folder {root}")
        return None
    return path, str(shown_folder / written), item.span
