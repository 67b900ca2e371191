"""Python tool discovery: read tool files with `ast` (never importing them) into ToolDefs."""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from frontdesk.diagnostics import (
    DiagnosticBag,
    SourceReadError,
    Span,
    read_source_bytes,
)
from frontdesk.ir.models import PythonBinding, ToolDef, ToolParam

from . import returns  # noqa: F401 - registers ADL's return convention with the runtime's tools
from .codes import TOOL_CLASH, TOOL_FILE, TOOL_SYNTAX

_ANNOTATION_TYPES = {
    "str": "string",
    "int": "integer",
    "float": "number",
    "bool": "boolean",
    "list": "array",
    "List": "array",
    "tuple": "array",
    "Tuple": "array",
    "set": "array",
    "Sequence": "array",
    "dict": "object",
    "Dict": "object",
    "Mapping": "object",
}


@dataclass
class ToolCatalog:
    """The tools a program can call, plus facts the IR's ToolDef does not hold."""

    tools: dict[str, ToolDef] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)  # tool files, relative to the root
    open_params: set[str] = field(default_factory=set)  # tools that take **kwargs

    @property
    def has_files(self) -> bool:
        return bool(self.files)


def default_tool_files(folder: Path) -> list[Path]:
    """The *.py files beside a program (not recursive), skipping `_*` and `test_*` files."""
    try:
        files = sorted(p for p in folder.glob("*.py") if p.is_file())
    except OSError:
        return []
    return [p for p in files if not p.name.startswith(("_", "test_"))]


def discover_tools(
    files: list[tuple[Path, str, Span | None]], root: Path, bag: DiagnosticBag
) -> ToolCatalog:
    """Read every tool file. `files` holds (absolute path, path as shown in diagnostics, span of the `tools:` entry)."""
    catalog = ToolCatalog()
    for path, shown, entry_span in files:
        relative = _relative(path, root)
        catalog.files.append(relative)
        for tool, takes_kwargs in _read_tool_file(path, shown, relative, entry_span, bag):
            if tool.name in catalog.tools:
                first = catalog.tools[tool.name]
                bag.warning(
                    TOOL_CLASH,
                    f"tool '{tool.name}' is defined twice ({first.module} and {tool.module}); the first is used",
                    tool.span,
                    hint="rename one of the functions or drop one file from tools:",
                )
                continue
            catalog.tools[tool.name] = tool
            if takes_kwargs:
                catalog.open_params.add(tool.name)
    return catalog


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return Path(os.path.relpath(path.resolve(), root.resolve())).as_posix()


def _read_tool_file(path: Path, shown: str, relative: str, entry_span: Span | None, bag: DiagnosticBag):
    try:
        source = read_source_bytes(path).decode("utf-8-sig")
    except SourceReadError as exc:
        bag.error(TOOL_FILE, f"cannot read tool file {shown}: {exc}", entry_span or Span(file=shown), hint=exc.hint)
        return []
    except UnicodeDecodeError as exc:
        bag.error(TOOL_FILE, f"tool file {shown} is not UTF-8 text ({exc.reason} at byte {exc.start})",
                  entry_span or Span(file=shown), hint="save the tool file as UTF-8 text")
        return []
    try:
        tree = ast.parse(source, filename=shown)
    except SyntaxError as exc:
        span = Span(file=shown, line=exc.lineno or 1, column=exc.offset or 1)
        bag.error(TOOL_SYNTAX, f"Python syntax error in tool file: {exc.msg}", span, hint="fix the Python file; it is parsed, not run")
        return []
    except (ValueError, RecursionError) as exc:
        bag.error(TOOL_SYNTAX, f"cannot parse tool file: {exc}", Span(file=shown, line=1, column=1),
                  hint="fix the Python file; it is parsed, not run")
        return []
    found = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and not stmt.name.startswith("_"):
            found.append((tool_from_function(stmt, relative, shown), stmt.args.kwarg is not None))
    return found


def tool_from_function(func: ast.FunctionDef | ast.AsyncFunctionDef, module: str, shown: str) -> ToolDef:
    """A ToolDef from a function's signature and docstring: a Python binding read in ADL's return convention."""
    docstring = ast.get_docstring(func) or ""
    arg_docs = docstring_arg_descriptions(docstring)
    params = [
        ToolParam(
            name=arg.arg,
            type=annotation_type(arg.annotation),
            required=default is None,
            default=literal_default(default),
            description=arg_docs.get(arg.arg, ""),
        )
        for arg, default in _args_with_defaults(func.args)
    ]
    return ToolDef(
        name=func.name,
        description=docstring_summary(docstring),
        params=params,
        binding=PythonBinding(module=module, function=func.name),
        convention="adl",
        span=Span(file=shown, line=func.lineno, column=func.col_offset + 1),
    )


def _args_with_defaults(args: ast.arguments) -> list[tuple[ast.arg, ast.expr | None]]:
    positional = list(args.posonlyargs) + list(args.args)
    padding: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    pairs = list(zip(positional, padding + list(args.defaults)))
    pairs += list(zip(args.kwonlyargs, args.kw_defaults))
    return pairs


def annotation_type(annotation: ast.expr | None) -> str:
    """The JSON-schema type for a Python annotation; unknown annotations are "string"."""
    if annotation is None:
        return "string"
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            return annotation_type(ast.parse(annotation.value, mode="eval").body)
        except SyntaxError:
            return "string"
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):  # `int | None`
        for side in (annotation.left, annotation.right):
            if not (isinstance(side, ast.Constant) and side.value is None):
                return annotation_type(side)
        return "string"
    if isinstance(annotation, ast.Subscript):
        base = _dotted_tail(annotation.value)
        if base == "Optional":
            return annotation_type(annotation.slice)
        if base == "Union":
            options = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
            real = [o for o in options if not (isinstance(o, ast.Constant) and o.value is None)]
            return annotation_type(real[0]) if real else "string"
        return _ANNOTATION_TYPES.get(base or "", "string")
    return _ANNOTATION_TYPES.get(_dotted_tail(annotation) or "", "string")


def _dotted_tail(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def literal_default(default: ast.expr | None):
    """The default value when it is a literal; None otherwise."""
    if default is None:
        return None
    try:
        value = ast.literal_eval(default)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if isinstance(value, (tuple, set, frozenset)):
        value = list(value)
    if isinstance(value, (bytes, complex)):
        return None
    return value


_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Params|Returns?|Raises|Yields|Examples?|Notes?)\s*:\s*$")
_SPHINX_PARAM = re.compile(r"^\s*:param\s+(?:[\w\[\], .|]+\s+)?(\w+)\s*:\s*(.*)$")
_GOOGLE_ARG = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def docstring_summary(docstring: str) -> str:
    """The first paragraph of a docstring, joined into one line (stops at an Args:/:param section)."""
    lines = []
    for line in docstring.strip().splitlines():
        if not line.strip() or _SECTION.match(line) or line.strip().startswith(":"):
            break
        lines.append(line.strip())
    return " ".join(lines)


def docstring_arg_descriptions(docstring: str) -> dict[str, str]:
    """Parameter descriptions from a Google-style `Args:` section or Sphinx `:param x:` lines."""
    found: dict[str, str] = {}
    for line in docstring.splitlines():
        match = _SPHINX_PARAM.match(line)
        if match:
            found[match.group(1)] = match.group(2).strip()
    found.update(_google_args(docstring.splitlines()))
    return found


def _google_args(lines: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    in_args = False
    item_indent: int | None = None
    current: str | None = None
    for line in lines:
        section = _SECTION.match(line)
        if section:
            in_args = section.group(1) in ("Args", "Arguments", "Parameters", "Params")
            item_indent, current = None, None
            continue
        if not in_args or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if item_indent is None:
            item_indent = indent
        match = _GOOGLE_ARG.match(line.strip())
        if indent == item_indent and match:
            current = match.group(1).lstrip("*")
            found[current] = match.group(2).strip()
        elif indent > item_indent and current:
            found[current] = (found[current] + " " + line.strip()).strip()
        elif indent < item_indent:
            in_args = False
    return found
