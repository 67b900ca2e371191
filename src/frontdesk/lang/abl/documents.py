"""Reading ABL files into outlines: `.abl` text through the outline reader, `.agent.yaml` through YAML,
both into the same tree, with the keyword-case rule of each format checked."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from frontdesk.diagnostics import DiagnosticBag, Span, did_you_mean
from frontdesk.textutil import cut

from . import codes
from .keywords import KEYWORDS, SECTIONS
from .outline import MAX_NESTING, Node, nesting_too_deep, read_outline

MAX_FILE_BYTES = 2_000_000

HEADERS = ("AGENT", "SUPERVISOR", "BEHAVIOR_PROFILE")


@dataclass
class Document:
    """One ABL file: its outline, its format, and what it declares."""

    path: Path
    shown: str  # the path as diagnostics show it
    fmt: str  # "abl" or "yaml"
    root: Node
    kind: str = ""  # "agent", "supervisor", "tools" (a tool library), "profile"
    name: str = ""
    header: Node | None = None
    text: str = ""  # the source text (for diagnostics that point at a word in it)

    def sections(self) -> list[Node]:
        return [c for c in self.root.children if c.key is not None]


def is_abl_file(path: Path) -> bool:
    name = path.name.lower()
    return name.endswith((".abl", ".agent.yaml", ".agent.yml"))


def read_document(path: Path, shown: str, bag: DiagnosticBag) -> Document | None:
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            bag.error(codes.READ_ERROR, f"{shown} is larger than {MAX_FILE_BYTES // 1_000_000} MB", Span(file=shown))
            return None
        data = path.read_bytes()
    except OSError as exc:
        bag.error(codes.READ_ERROR, f"cannot read {shown}: {exc.strerror or exc}", Span(file=shown))
        return None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line = before.count(b"\n") + 1
        column = exc.start - (before.rfind(b"\n") + 1) + 1
        bag.error(codes.READ_ERROR, f"{shown} is not UTF-8 text (byte {exc.start})",
                  Span(file=shown, line=line, column=column), hint="save the file as UTF-8")
        return None
    fmt = "yaml" if path.name.lower().endswith((".yaml", ".yml")) else "abl"
    root = read_outline(text, shown, bag) if fmt == "abl" else read_yaml_outline(text, shown, bag)
    if root is None:
        return None
    doc = Document(path=path, shown=shown, fmt=fmt, root=root, text=text)
    _identify(doc, bag)
    if doc.kind != "profile":  # a profile's top-level keys are its fields (PRIORITY, WHEN, VOICE, ...)
        _check_sections(doc, bag)
    return doc


def _check_sections(doc: Document, bag: DiagnosticBag) -> None:
    """Top-level keys: known sections, cased as the format wants, each written once."""
    seen: dict[str, Node] = {}
    tool_library = doc.path.name.lower().endswith(".tools.abl")
    for node in doc.root.children:
        if node.key is None:
            if node.value and node.value.upper().startswith("USE BEHAVIOR_PROFILE"):
                continue
            line = cut((node.value or "").strip(), 40, "...")
            bag.error(codes.SYNTAX, f"'{line}' is not a section", node.span,
                      hint="a document is made of sections such as GOAL: or TOOLS:")
            continue
        canonical = node.key.upper()
        if canonical not in SECTIONS:
            if tool_library:
                continue  # a tool library may name tools at the top level
            guess = did_you_mean(canonical, list(SECTIONS))
            bag.error(codes.UNKNOWN_SECTION, f"unknown section '{node.key}'", node.span,
                      hint=f"did you mean {guess if doc.fmt == 'abl' else guess.lower()}?" if guess
                      else "see the ABL specification for the sections a document may hold")
            continue
        if doc.fmt == "abl" and node.key != canonical:
            bag.error(codes.KEYWORD_CASE, f"'{node.key}' must be written in capitals in an .abl file",
                      node.span, hint=f"write {canonical}: (lowercase keywords belong to .agent.yaml files)")
        elif doc.fmt == "yaml" and node.key != canonical.lower():
            bag.error(codes.KEYWORD_CASE, f"'{node.key}' must be lowercase in an .agent.yaml file",
                      node.span, hint=f"write {canonical.lower()}: (capital keywords belong to .abl files)")
        if canonical in seen and canonical not in ("USE",):
            bag.error(codes.DUPLICATE_SECTION, f"section {canonical} is written twice", node.span,
                      hint=f"merge it with the one on line {seen[canonical].span.line}")
            continue
        seen[canonical] = node


def _identify(doc: Document, bag: DiagnosticBag) -> None:
    lowered = doc.path.name.lower()
    for header in HEADERS:
        node = doc.root.get(header)
        if node is not None:
            doc.kind = {"AGENT": "agent", "SUPERVISOR": "supervisor", "BEHAVIOR_PROFILE": "profile"}[header]
            doc.name = (node.value or "").strip()
            doc.header = node
            # `SUPERVISOR: X` with sections indented under it: they belong to the document
            if node.children and all(c.key is not None for c in node.children):
                doc.root.children[doc.root.children.index(node) + 1:1] = node.children
                node.children = []
            if not doc.name:
                bag.error(codes.MISSING_KEY, f"{header}: needs a name", node.span,
                          hint=f"write {header}: Some_Name")
            return
    if lowered.endswith(".tools.abl") or (doc.root.get("TOOLS") is not None and len(doc.sections()) == 1):
        doc.kind = "tools"
        doc.name = doc.path.name.split(".")[0]
        return
    if doc.root.children:
        bag.error(codes.MISSING_HEADER, f"{doc.shown} declares no agent", doc.root.children[0].span,
                  hint="start the document with AGENT: Name or SUPERVISOR: Name")
    else:
        bag.error(codes.MISSING_HEADER, f"{doc.shown} is empty", Span(file=doc.shown, line=1, column=1),
                  hint="start the document with AGENT: Name or SUPERVISOR: Name")


# ---- .agent.yaml ------------------------------------------------------------------------------------


def read_yaml_outline(text: str, shown: str, bag: DiagnosticBag) -> Node | None:
    """An .agent.yaml document as an outline: mappings are entries, sequences are items, and a mapping
    with a `value` key is an entry that has both a value and a block (see docs/abl-yaml.md)."""
    from frontdesk.yamlsource import MAX_YAML_DEPTH, YMap, YScalar, YSeq, compose_yaml, yaml_size_problem

    problem = yaml_size_problem(text)  # before composing: PyYAML recurses on nesting
    if problem is not None:
        message, line, column = problem
        deep = " nested " in message
        bag.error(codes.TOO_DEEP if deep else codes.YAML_SYNTAX, message, Span(file=shown, line=line, column=column),
                  hint=f"flatten it: an agent needs far fewer than {MAX_YAML_DEPTH} levels" if deep
                  else "split the document: an agent needs a few thousand YAML nodes")
        return None
    failed = bag.has_errors
    document = compose_yaml(text, shown, bag, codes.YAML)
    if bag.has_errors and not failed:
        return None
    root = Node(key=None, value=None, span=Span(file=shown, line=1, column=1))
    if document is None:
        return root
    if not isinstance(document, YMap):
        bag.error(codes.YAML_SYNTAX, "an .agent.yaml document must be a mapping of sections",
                  getattr(document, "span", None) or Span(file=shown, line=1, column=1))
        return None

    def scalar(node: YScalar) -> tuple[str | None, bool]:
        if node.plain and node.value is None:
            return None, False
        text = node.text.rstrip("\n") if node.style in ("|", ">") else node.text  # as the .abl block reads
        deep = nesting_too_deep(text)
        if deep is not None:  # as in .abl text: the value is left out
            bag.error(codes.TOO_DEEP, f"brackets nested more than {MAX_NESTING} deep", _scalar_span(node, deep),
                      hint="flatten the value: name a type for an inner object, or split it into several entries")
            return None, False
        return text, node.quoted and node.tag != "!raw"  # !raw: a bare .abl value that YAML must quote

    def fill(out: Node, value) -> None:
        """Put a YAML value under `out`: a scalar is its value; a mapping holds entries and the
        reserved `=value`, `=lines`, `=items`; a sequence holds items."""
        if isinstance(value, YScalar):
            out.value, out.quoted = scalar(value)
            out.block = value.style in ("|", ">")
            out.value_column = value.span.column if value.span else 0
        elif isinstance(value, YMap):
            for k, v in value.pairs:
                name = str(k.text)
                if (name == "=value" or (name == "value" and _takes_value(out.key))) and isinstance(v, YScalar):
                    out.value, out.quoted = scalar(v)
                    out.block = v.style in ("|", ">")
                    out.value_column = v.span.column if v.span else 0
                elif name == "=lines" and isinstance(v, YSeq):
                    out.children += [line(i) for i in v.items]
                elif name == "=items" and isinstance(v, YSeq):
                    out.children += [item(i) for i in v.items]
                else:
                    out.children.append(entry(k, v))
        elif isinstance(value, YSeq):
            out.children = [item(i) for i in value.items]

    def entry(key: YScalar, value) -> Node:
        out = Node(key=str(key.text), value=None, span=key.span)
        fill(out, value)
        return out

    def line(value) -> Node:
        span = value.span if getattr(value, "span", None) else root.span
        out = Node(key=None, value=None, span=span)
        if isinstance(value, YMap):
            rest = []
            for k, v in value.pairs:
                if str(k.text) == "=line" and isinstance(v, YScalar):
                    out.value, out.quoted = scalar(v)
                    out.value_column = v.span.column if v.span else 0
                else:
                    rest.append((k, v))
            holder = YMap(pairs=rest, span=value.span)
            fill(out, holder)
            if out.value is None:
                out.value = ""
        elif isinstance(value, YScalar):
            out.value, out.quoted = scalar(value)
            out.value_column = value.span.column if value.span else 0
        return out

    def item(value) -> Node:
        span = value.span if getattr(value, "span", None) else root.span
        out = Node(key=None, value=None, span=span, item=True)
        if isinstance(value, YMap) and any(str(k.text) == "=line" for k, _ in value.pairs):
            out.children = [line(value)]  # `- {=line: cover_price, initial: 0}`: a line with a block under it
        elif isinstance(value, YMap):
            fill(out, value)
            # `=lines` come first in an item (`- REQUIRE x` then `ON_FAIL:`)
            out.children.sort(key=lambda c: 0 if c.key is None and not c.item else 1)
        elif isinstance(value, YScalar):
            text, quoted = scalar(value)
            out.children = [Node(key=None, value=text, span=span, quoted=quoted,
                                 value_column=span.column if span else 0)]
        elif isinstance(value, YSeq):
            out.children = [item(i) for i in value.items]
        return out

    for key, value in document.pairs:
        if str(key.text) == "=lines" and isinstance(value, YSeq):
            root.children += [line(i) for i in value.items]
            continue
        node = entry(key, value)
        _sugar(node)
        if isinstance(value, YSeq) and node.key.lower() in _LINE_SECTIONS:
            # sections whose .abl form is bare lines (TOOLS signatures, ROUTING rules, SET lines):
            # a list of strings in YAML is the same lines
            node.children = [_item_as_line(c) for c in node.children]
        root.children.append(node)
    return root


def _scalar_span(node, offset: int) -> Span | None:
    """Where character `offset` of a YAML scalar is: exact on one line, else the scalar's start."""
    span = node.span
    if span is None or span.end_line != span.line or node.style in ("|", ">"):
        return span
    return Span(file=span.file, line=span.line, column=span.column + offset + (1 if node.quoted else 0))


_LINE_SECTIONS = {"tools", "routing"}
_RULE_KINDS = ("require", "warn", "limit", "restrict")


def _takes_value(key: str | None) -> bool:
    """Whether `value:` under this key is the key's own value (`call: {value: get_balance, with: ...}`)."""
    return key is not None and key.upper() in KEYWORDS


def _sugar(node: Node) -> None:
    """Hand-written YAML may say in keys what .abl says in lines: `- require: "x > 0"` (with
    `before:`), `- intent: [a, b]` + `to: agent`, `- default: agent`, `- from: a` + `to: b`. They
    become the lines the .abl form has; so does `- if: <condition>` with `respond:` beside it under
    on_human_complete."""
    for child in node.children:
        _sugar(child)
    for index, item in enumerate(node.children):
        if not item.item or not item.children:
            continue
        first = item.children[0]
        key = (first.key or "").lower()
        rest = item.children[1:]
        text = None
        if key in _RULE_KINDS and first.value is not None:
            before = next((c for c in rest if (c.key or "").lower() == "before"), None)
            text = f"{key.upper()} {first.value}" + (f" BEFORE {before.value}" if before is not None else "")
            rest = [c for c in rest if c is not before]
        elif key == "intent" and any((c.key or "").lower() == "to" for c in rest):
            to = next(c for c in rest if (c.key or "").lower() == "to")
            words = first.value or ", ".join(c.children[0].text for c in first.items() if c.children)
            text = f"INTENT({words.strip('[]')}) -> {to.text}"
            rest = [c for c in rest if c is not to]
        elif key == "default" and first.value and node.key and node.key.lower() == "routing":
            text = f"DEFAULT -> {first.value}"
        elif key == "if" and first.value is not None and node.key and node.key.lower() == "on_human_complete":
            # `- if: human.resolved == true` with respond: beside it is .abl's `- IF human.resolved == true:`
            text = f"IF {first.value}:"
        elif key == "from" and any((c.key or "").lower() == "to" for c in rest):
            to = next(c for c in rest if (c.key or "").lower() == "to")
            text = f"FROM {first.value} TO {to.text}:"
            rest = [c for c in rest if c is not to]
        if text is not None:
            head = Node(key=None, value=text, span=first.span, value_column=first.value_column)
            if key in ("from", "if"):
                head.children, rest = rest, []
            item.children = [head, *rest]


def _item_as_line(item: Node) -> Node:
    if item.item and len(item.children) >= 1 and item.children[0].key is None:
        head = item.children[0]
        head.children = item.children[1:]
        return head
    if item.item and len(item.children) == 1 and item.children[0].key is not None:
        # `- search(q: string) -> X: {description: ...}` cannot be YAML; `- {signature: ..., ...}` is
        first = item.children[0]
        if first.key.lower() == "signature":
            return Node(key=None, value=first.value, span=first.span, children=item.children[1:],
                        value_column=first.value_column)
    if item.item and item.children and item.children[0].key and item.children[0].key.lower() == "signature":
        first = item.children[0]
        return Node(key=None, value=first.value, span=first.span, children=item.children[1:],
                    value_column=first.value_column)
    return item
