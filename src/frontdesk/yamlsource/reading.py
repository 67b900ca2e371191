"""Reading YAML source files safely: file type, size, encoding and YAML size are checked before parsing."""

from __future__ import annotations

from pathlib import Path

import yaml

from frontdesk.diagnostics import DiagnosticBag, SourceReadError, Span, read_source_bytes

from .codes import YamlCodes

# A program needs a few thousand YAML nodes; these bounds refuse absurd documents before they are composed.
MAX_YAML_NODES = 200_000
MAX_YAML_DEPTH = 100

_EventLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_NODE_EVENTS = (yaml.ScalarEvent, yaml.AliasEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent)
_OPEN_EVENTS = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_CLOSE_EVENTS = (yaml.SequenceEndEvent, yaml.MappingEndEvent)


def read_yaml_text(path: Path, shown: str, bag: DiagnosticBag, codes: YamlCodes,
                   what: str = "the program") -> str | None:
    """The text of a YAML source file, or None after reporting why it cannot be used."""
    try:
        data = read_source_bytes(path)
    except SourceReadError as exc:
        bag.error(codes.read_error, f"cannot read {what}: {exc}", Span(file=shown), hint=exc.hint)
        return None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line, column = _position_of_byte(data, exc.start)
        bag.error(codes.read_error, f"{what} is not UTF-8 text (byte 0x{data[exc.start]:02x} at line {line}, column {column})",
                  Span(file=shown, line=line, column=column), hint="save the file as UTF-8 text")
        return None
    if "\x00" in text:
        line, column = _position_of_byte(data, data.index(b"\x00"))
        bag.error(codes.read_error, f"{what} is binary, not text (a NUL byte at line {line}, column {column})",
                  Span(file=shown, line=line, column=column), hint="pass the YAML text file")
        return None
    problem = yaml_size_problem(text)
    if problem is not None:
        message, line, column = problem
        bag.error(codes.syntax, message, Span(file=shown, line=line, column=column),
                  hint=f"a program needs far fewer than {MAX_YAML_NODES:,} YAML nodes and "
                       f"{MAX_YAML_DEPTH} levels of nesting")
        return None
    return text


def yaml_size_problem(text: str) -> tuple[str, int, int] | None:
    """(message, line, column) when the YAML has too many nodes or is nested too deeply; None otherwise.

    Streams parser events (libyaml when available), so it stops at the first node over a bound
    without building anything; a syntax error is left for the real parse to report.
    """
    nodes = depth = 0
    try:
        for event in yaml.parse(text, Loader=_EventLoader):
            if isinstance(event, _NODE_EVENTS):
                nodes += 1
                if nodes > MAX_YAML_NODES:
                    return (f"the YAML document has more than {MAX_YAML_NODES:,} nodes",
                            *_mark_position(event))
            if isinstance(event, _OPEN_EVENTS):
                depth += 1
                if depth > MAX_YAML_DEPTH:
                    return (f"the YAML document is nested more than {MAX_YAML_DEPTH} levels deep",
                            *_mark_position(event))
            elif isinstance(event, _CLOSE_EVENTS):
                depth -= 1
    except yaml.YAMLError as exc:
        # libyaml (PyYAML >= 6.0.3) stops at its own nesting limit while scanning ahead
        if "nesting depth" in str(exc):
            mark = getattr(exc, "problem_mark", None)
            line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
            return (f"the YAML document is nested more than {MAX_YAML_DEPTH} levels deep", line, column)
        return None
    except UnicodeEncodeError:  # a lone surrogate in text given as a string: compose_yaml reports it
        return None
    return None


def _mark_position(event: yaml.Event) -> tuple[int, int]:
    mark = event.start_mark
    return (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)


def _position_of_byte(data: bytes, index: int) -> tuple[int, int]:
    """1-based line and column (in characters, as far as they decode) of byte `index`."""
    line_start = data.rfind(b"\n", 0, index) + 1
    line = data.count(b"\n", 0, index) + 1
    column = len(data[line_start:index].decode("utf-8", errors="replace")) + 1
    return line, column
