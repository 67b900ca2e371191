"""YAML text to located nodes: every scalar, list and mapping knows its file, line and column."""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field
from typing import Any, Union

import yaml

from frontdesk.diagnostics import DiagnosticBag, Span

from .codes import YamlCodes

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_constructor = yaml.constructor.SafeConstructor()


@dataclass
class YScalar:
    """A scalar: `text` as written (after YAML unescaping), `style` '' for plain, "'"/'"' quoted, '|'/'>' block."""

    text: str
    tag: str
    style: str
    span: Span

    @property
    def quoted(self) -> bool:
        return self.style in ("'", '"')

    @property
    def plain(self) -> bool:
        return not self.style

    @property
    def value(self) -> Any:
        """The YAML-typed value (int, float, bool, None or str); other types become their text."""
        if not self.plain:
            return self.text
        return typed_scalar(self.text, self.tag)


@dataclass
class YSeq:
    items: list["YNode"]
    span: Span


@dataclass
class YMap:
    """A mapping; `pairs` keeps every key in source order (duplicates dropped after reporting)."""

    pairs: list[tuple[YScalar, "YNode"]]
    span: Span
    keys: dict[str, YScalar] = field(default_factory=dict)

    def get(self, key: str) -> "YNode | None":
        for k, v in self.pairs:
            if k.text == key:
                return v
        return None

    def __contains__(self, key: str) -> bool:
        return key in self.keys

    def key_names(self) -> list[str]:
        return [k.text for k, _ in self.pairs]


YNode = Union[YScalar, YSeq, YMap]


def typed_scalar(text: str, tag: str) -> Any:
    """Resolve a plain scalar like YAML does (int/float/bool/null/str); dates and the rest stay text."""
    construct = _constructor.yaml_constructors.get(tag)
    if construct is None:
        return text
    try:
        value = construct(_constructor, yaml.ScalarNode(tag, text))
    except Exception:  # noqa: BLE001 - an odd tag or value simply stays text
        return text
    if isinstance(value, (datetime.date, datetime.datetime, bytes)) or not isinstance(
        value, (int, float, bool, str, type(None))
    ):
        return text
    return value


def to_python(node: YNode) -> Any:
    """Plain Python data for a node (used for literal lists and mappings)."""
    if isinstance(node, YScalar):
        return node.value
    if isinstance(node, YSeq):
        return [to_python(i) for i in node.items]
    return {k.text: to_python(v) for k, v in node.pairs}


def kind_name(node: YNode | None) -> str:
    if node is None:
        return "nothing"
    if isinstance(node, YMap):
        return "a mapping"
    if isinstance(node, YSeq):
        return "a list"
    if node.plain and node.value is None:
        return "nothing (null)"
    value = node.value
    if isinstance(value, bool):
        return f"the value {node.text}"
    if isinstance(value, (int, float)):
        return f"the number {node.text}"
    return "a text value"


class _TooLarge(Exception):
    pass


class _Converter:
    """Turns PyYAML's composed nodes into Y* nodes and reports duplicate keys."""

    max_nodes = 200_000  # guards against alias bombs (`&a [*a, *a, ...]` nested)

    def __init__(self, file: str, bag: DiagnosticBag, codes: YamlCodes) -> None:
        self.file = file
        self.bag = bag
        self.codes = codes
        self.depth = 0
        self.count = 0

    def span(self, node: yaml.Node) -> Span:
        start, end = node.start_mark, node.end_mark
        return Span(
            file=self.file,
            line=start.line + 1,
            column=start.column + 1,
            end_line=end.line + 1,
            end_column=end.column + 1,
        )

    def convert(self, node: yaml.Node) -> YNode:
        self.count += 1
        if self.count > self.max_nodes:
            raise _TooLarge()
        if isinstance(node, yaml.ScalarNode):
            return YScalar(str(node.value), node.tag, node.style or "", self.span(node))
        if self.depth > 200:
            return YScalar("", "tag:yaml.org,2002:null", "", self.span(node))
        self.depth += 1
        try:
            if isinstance(node, yaml.SequenceNode):
                return YSeq([self.convert(i) for i in node.value], self.span(node))
            return self.convert_map(node)
        finally:
            self.depth -= 1

    def convert_map(self, node: yaml.MappingNode) -> YMap:
        result = YMap([], self.span(node))
        for key_node, value_node in node.value:
            key = self.convert(key_node)
            if not isinstance(key, YScalar):
                key = YScalar("<complex key>", "tag:yaml.org,2002:str", "", key.span)
            if key.text in result.keys:
                first = result.keys[key.text]
                self.bag.error(
                    self.codes.duplicate_key,
                    f"duplicate key '{key.text}' (first written at line {first.span.line})",
                    key.span,
                    hint="YAML keeps only one value per key; merge the two entries or rename one",
                )
                continue
            result.keys[key.text] = key
            result.pairs.append((key, self.convert(value_node)))
        return result


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate_span(text: str, file: str) -> tuple[str, Span] | None:
    """Where `text` holds a lone surrogate (no Unicode character: YAML and UTF-8 cannot carry it), with
    the code point; None for proper text. Only text handed over as a string can hold one."""
    found = _LONE_SURROGATE.search(text)
    if found is None:
        return None
    start = found.start()
    line = text.count("\n", 0, start) + 1
    column = start - (text.rfind("\n", 0, start) + 1) + 1
    return f"U+{ord(found.group()):04X}", Span(file=file, line=line, column=column)


def compose_yaml(text: str, file: str, bag: DiagnosticBag, codes: YamlCodes) -> YNode | None:
    """Parse YAML text into located nodes; a syntax error becomes one diagnostic (under `codes.syntax`)
    and None; a duplicate key is reported under `codes.duplicate_key` and the first value kept."""
    surrogate = lone_surrogate_span(text, file)
    if surrogate is not None:
        bag.error(codes.syntax, f"the text holds a lone surrogate ({surrogate[0]}), which is not a character",
                  surrogate[1], hint="save the file as UTF-8 text")
        return None
    try:
        root = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        span = Span(file=file, line=mark.line + 1, column=mark.column + 1) if mark else Span(file=file)
        problem = exc.problem or "invalid YAML"
        context = f" ({exc.context})" if exc.context else ""
        bag.error(codes.syntax, f"YAML syntax error: {problem}{context}", span, hint=_yaml_hint(problem, codes.document))
        return None
    except yaml.YAMLError as exc:
        bag.error(codes.syntax, f"YAML syntax error: {exc}", Span(file=file, line=1, column=1),
                  hint="check the file is one YAML document")
        return None
    except RecursionError:
        bag.error(codes.syntax, "YAML nesting is too deep", Span(file=file, line=1, column=1),
                  hint="flatten the structure")
        return None
    if root is None:
        return None
    try:
        if _expanded_size(root, _Converter.max_nodes) > _Converter.max_nodes:
            raise _TooLarge()  # refused before building anything: aliases repeat what they name
        return _Converter(file, bag, codes).convert(root)
    except (_TooLarge, RecursionError):
        bag.error(codes.syntax, "YAML document is too large (too many nodes or aliases)",
                  Span(file=file, line=1, column=1), hint="avoid deeply repeated YAML aliases")
        return None


def _expanded_size(root: yaml.Node, limit: int) -> int:
    """How many nodes `root` has once every alias is expanded (counted up to just past `limit`): each
    composed node is visited once, so an alias bomb costs its text's size, not its expansion's."""
    sizes: dict[int, int] = {}

    def size(node: yaml.Node) -> int:
        known = sizes.get(id(node))
        if known is not None:
            return known
        total = 1
        if isinstance(node, yaml.SequenceNode):
            for item in node.value:
                total += size(item)
        elif isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                total += size(key) + size(value)
        sizes[id(node)] = total = min(total, limit + 1)
        return total

    return size(root)


def _yaml_hint(problem: str, document: str) -> str:
    if "tab" in problem:
        return "indent with spaces, not tabs"
    if "mapping values are not allowed" in problem:
        return "quote text that contains ': ' (for example bot: \"Note: ...\")"
    if "expected a single document" in problem:
        return f"{document} is one YAML document; remove the extra '---'"
    return "check the indentation and quoting around this position"
