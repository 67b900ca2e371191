"""The outline of an ABL document: `.agent.abl` text (and `.agent.yaml` data) as a tree of lines.

ABL's text format looks like YAML but is not: a key may carry a value *and* an indented block
(`CALL: get_balance` with `WITH:` under it), a block may hold bare lines (`step1 -> step2`,
`REQUIRE amount > 0`, tool signatures, `x = NOW()`), and a signature may run over several lines
inside brackets. The outline reader therefore knows only lines and indentation:

- `KEY: value` is an entry (`key`, `value`), `KEY:` an entry whose value is its indented block;
- `- ...` is a list item; what follows the dash, and the lines at its column, are the item's
  children (`- TO: Billing` / `  WHEN: ...` is one item holding two entries);
- any other line is a bare line (`key` None, the text in `value`);
- `|` and `>` open a block of raw text; open brackets and a trailing `->` or `,` join the next lines.

What each entry and line means is the section compilers' business (compiler.py). Every node
knows where it was written, so they can report a diagnostic at the right line and column.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field

from frontdesk.diagnostics import DiagnosticBag, Span

from . import codes

_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)[ \t]*:(?=[ \t]|$)")
_BLOCK = re.compile(r"[|>][-+]?[0-9]?$")
_CLOSE = {"(": ")", "[": "]", "{": "}"}
MAX_LINES = 200_000  # the 2 MB file limit comes first for lines of 10 characters or more
MAX_DEPTH = 64
# brackets one value may hold open at once: the readers of values, types and expressions recurse on them
MAX_NESTING = 64


@dataclass
class Node:
    """One line of the outline: an entry (`key` set), a bare line (`key` None), or a list item."""

    key: str | None
    value: str | None
    span: Span
    children: list[Node] = field(default_factory=list)
    item: bool = False  # written as `- ...`: its children are what the item holds
    quoted: bool = False  # the value was a quoted string (its quotes removed)
    block: bool = False  # the value came from a `|` / `>` block of lines
    value_column: int = 0  # where the value starts on its line (1-based), for diagnostics

    # -- reading helpers for the section compilers --------------------------------------------

    @property
    def text(self) -> str:
        return self.value or ""

    def entries(self) -> list[Node]:
        return [c for c in self.children if c.key is not None and not c.item]

    def lines(self) -> list[Node]:
        return [c for c in self.children if c.key is None and not c.item]

    def items(self) -> list[Node]:
        return [c for c in self.children if c.item]

    def get(self, key: str) -> Node | None:
        """The first entry under this node whose key is `key` (in any letter case)."""
        wanted = key.upper()
        return next((c for c in self.children if c.key is not None and c.key.upper() == wanted), None)

    def value_span(self) -> Span:
        if self.value_column:
            return Span(file=self.span.file, line=self.span.line, column=self.value_column)
        return self.span

    def to_data(self):
        """The node as plain data (for tests and debugging)."""
        out: dict = {"key": self.key, "value": self.value}
        if self.item:
            out["item"] = True
        if self.children:
            out["children"] = [c.to_data() for c in self.children]
        return out


@dataclass
class _Line:
    indent: int
    text: str  # without indentation and comment
    number: int  # 1-based line number of its first physical line
    block: str | None = None  # the raw text of a `|` / `>` block that this line opens


def read_outline(text: str, file: str, bag: DiagnosticBag) -> Node:
    """The outline of `.abl` text; problems go to `bag` (the reader never raises on bad input)."""
    root = Node(key=None, value=None, span=Span(file=file, line=1, column=1))
    lines = _logical_lines(text, file, bag)
    stack: list[tuple[int, Node]] = [(-1, root)]
    child_indent: dict[int, int] = {}  # id(node) -> the indentation of its first child line
    for line in lines:
        while stack[-1][0] >= line.indent:
            stack.pop()
        holder = stack[-1][1]
        expected = child_indent.setdefault(id(holder), line.indent)
        if line.indent != expected and not holder.item:
            bag.error(codes.SYNTAX, f"this line is indented {line.indent} spaces where the lines beside it have "
                      f"{expected}", Span(file=file, line=line.number, column=line.indent + 1),
                      hint="indent the lines of one block by the same number of spaces")
        if len(stack) > MAX_DEPTH:
            _too_deep(bag, Span(file=file, line=line.number, column=line.indent + 1))
            break
        parent = stack[-1][1]
        deep_at = _place(line.text, line.indent, line.number, parent, stack, file, line.block)
        if deep_at is not None:
            _too_deep(bag, Span(file=file, line=line.number, column=deep_at + 1))
            break
    return root


def _too_deep(bag: DiagnosticBag, span: Span) -> None:
    bag.error(codes.TOO_DEEP, f"the document is nested more than {MAX_DEPTH} levels deep", span,
              hint="flatten it: fewer blocks and list items inside one another")


def _place(text: str, indent: int, number: int, parent: Node, stack: list[tuple[int, Node]], file: str,
           block: str | None) -> int | None:
    """Put the line under `parent` (a `- ` item first holds what follows its dash); when the items of
    one line nest deeper than MAX_DEPTH, the 0-based column of the dash that goes too deep."""
    while text == "-" or text.startswith("- "):
        if len(stack) > MAX_DEPTH:
            return indent
        item = Node(key=None, value=None, span=Span(file=file, line=number, column=indent + 1), item=True)
        parent.children.append(item)
        stack.append((indent, item))
        rest = text[1:]
        inner = len(rest) - len(rest.lstrip(" "))
        text = rest.strip()
        if not text:
            return None
        indent, parent = indent + 1 + inner, item
    span = Span(file=file, line=number, column=indent + 1)
    node = _parse_line(text, span, indent)
    parent.children.append(node)
    stack.append((indent, node))
    if block is not None and node.value is not None and _BLOCK.fullmatch(node.value):
        node.block = True
        node.value = block
    return None


def _parse_line(text: str, span: Span, indent: int) -> Node:
    match = _KEY.match(text)
    if match:
        key = match.group(1)
        raw = text[match.end():]
        value = raw.strip()
        column = indent + 1 + match.end() + (len(raw) - len(raw.lstrip()))
        if not value:
            return Node(key=key, value=None, span=span)
        unquoted = _unquote(value)
        if unquoted is not None:
            return Node(key=key, value=unquoted, span=span, quoted=True, value_column=column)
        return Node(key=key, value=value, span=span, value_column=column)
    unquoted = _unquote(text)
    if unquoted is not None:
        return Node(key=None, value=unquoted, span=span, quoted=True, value_column=indent + 1)
    return Node(key=None, value=text, span=span, value_column=indent + 1)


def _unquote(text: str) -> str | None:
    """The content of a whole quoted string (`"..."` or `'...'`), or None when `text` is not one."""
    if len(text) < 2 or text[0] not in "\"'" or text[-1] != text[0]:
        return None
    quote, body = text[0], text[1:-1]
    out, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and quote == '"' and i + 1 < len(body):
            nxt = body[i + 1]
            out.append({"n": "\n", "t": "\t", '"': '"', "\\": "\\"}.get(nxt, "\\" + nxt))
            i += 2
            continue
        if ch == quote:
            if quote == "'" and i + 1 < len(body) and body[i + 1] == "'":
                out.append("'")
                i += 2
                continue
            return None  # two strings on one line ("a" "b"): not one quoted value
        out.append(ch)
        i += 1
    return "".join(out)


# ---- physical lines to logical lines ---------------------------------------------------------------


def _logical_lines(text: str, file: str, bag: DiagnosticBag) -> list[_Line]:
    physical = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if len(physical) > MAX_LINES:
        bag.error(codes.SYNTAX, f"the document has more than {MAX_LINES} lines", Span(file=file, line=1, column=1))
        physical = physical[:MAX_LINES]
    out: list[_Line] = []
    i = 0
    while i < len(physical):
        raw = physical[i]
        number = i + 1
        i += 1
        lead = raw[: len(raw) - len(raw.lstrip())]
        if "\t" in lead:
            bag.error(codes.SYNTAX, "indentation with a tab", Span(file=file, line=number, column=lead.index("\t") + 1),
                      hint="indent with spaces only")
            raw = raw.replace("\t", "    ")
        content = _strip_comment(raw)
        if not content.strip():
            continue
        indent = len(content) - len(content.lstrip(" "))
        body = content.strip()
        if _BLOCK.search(body) and _opens_block(body):
            # a `|` / `>` block: the following lines indented deeper, raw (a `#` in them is text)
            taken: list[str] = []
            while i < len(physical):
                nxt = physical[i].replace("\t", "    ")
                if nxt.strip() and len(nxt) - len(nxt.lstrip(" ")) <= indent:
                    break
                taken.append(nxt.rstrip())
                i += 1
            while taken and not taken[-1].strip():
                taken.pop()
            base = min((len(t) - len(t.lstrip(" ")) for t in taken if t.strip()), default=0)
            lines = [t[base:] for t in taken]
            marker = body.rsplit(":", 1)[-1].strip()
            block = " ".join(t.strip() for t in lines if t.strip()) if marker.startswith(">") else "\n".join(lines)
            out.append(_Line(indent, body, number, block))
            continue
        # join continuation lines: open brackets, or a line ending in `->` or `,`. The scanner carries
        # the brackets and quotes from line to line, so each character is looked at once.
        scanner = _Scanner()
        scanner.feed(body)
        parts, starts = [body], [(0, number, indent + 1)]  # where each joined line starts: (offset, line, column)
        last = body
        while (scanner.depth > 0 or last.endswith("->") or (last.endswith(",") and scanner.depth >= 0)) \
                and i < len(physical):
            raw_next = _strip_comment(physical[i])
            nxt = raw_next.strip()
            i += 1
            if not nxt:
                continue
            if not last.endswith(("(", "[", "{")):
                parts.append(" ")
                scanner.feed(" ")
            starts.append((scanner.length, i, len(raw_next) - len(raw_next.lstrip()) + 1))
            parts.append(nxt)
            scanner.feed(nxt)
            last = nxt
            if scanner.depth <= 0 and not last.endswith(("->", ",")):
                break
        body = "".join(parts) if len(parts) > 1 else body
        if scanner.too_deep_at is not None:
            bag.error(codes.TOO_DEEP, f"brackets nested more than {MAX_NESTING} deep",
                      _located(starts, scanner.too_deep_at, file),
                      hint="flatten the value: name a type for an inner object, or split it into several entries")
            body = _key_only(body)
            if body is None:
                continue
        elif scanner.depth > 0 or scanner.result()[0]:
            problem, at = scanner.result()
            bag.error(codes.SYNTAX, problem or "a bracket opened here is never closed", _located(starts, at, file),
                      hint="close every quote, (, [ and { on this line or the lines that continue it")
        out.append(_Line(indent, body, number))
    return out


def _located(starts: list[tuple[int, int, int]], at: int, file: str) -> Span:
    """Where character `at` of a logical line is, given where each of its physical lines starts."""
    offset, line, column = starts[bisect_right(starts, (at, float("inf"), 0)) - 1]
    return Span(file=file, line=line, column=column + at - offset)


def _key_only(body: str) -> str | None:
    """The line without its value (`- KEY:` of `- KEY: value`), or None when it is not an entry."""
    rest = body
    while rest == "-" or rest.startswith("- "):
        rest = rest[1:].lstrip(" ")
    match = _KEY.match(rest)
    return body[: len(body) - len(rest) + match.end()] if match else None


def _opens_block(body: str) -> bool:
    """Whether the line is `KEY: |` (or `- KEY: >-`, ...)."""
    text = body[2:].lstrip() if body.startswith("- ") else body
    match = _KEY.match(text)
    return bool(match) and bool(_BLOCK.fullmatch(text[match.end():].strip()))


def _strip_comment(line: str) -> str:
    """The line without a `#` comment (a `#` inside quotes, or glued to a word, is not one)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == "\\" and quote == '"':
                continue
            if ch == quote:
                quote = None
        elif ch in "\"'" and (i == 0 or not line[i - 1].isalnum()):
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i].rstrip()
    return line.rstrip()


_SPECIAL = re.compile(r"[\"'()\[\]{}]")


class _Scanner:
    """The brackets and quotes of a logical line, read one piece at a time: what is open carries over
    to the next piece, so joining n lines reads each character once. `depth` is -1 after a bracket
    that closes nothing (nothing after it is read)."""

    def __init__(self) -> None:
        self.stack: list[tuple[str, int]] = []  # open brackets and where they are
        self.quote: str | None = None
        self.quote_at = 0
        self.prev = ""  # the character before the next piece
        self.length = 0  # characters fed so far (tests add them up: joining reads each character once)
        self.problem: str | None = None
        self.problem_at = 0
        self.too_deep_at: int | None = None  # where a bracket opened more than MAX_NESTING levels deep

    @property
    def depth(self) -> int:
        return -1 if self.problem is not None else len(self.stack)

    def feed(self, text: str) -> None:
        base = self.length
        self.length += len(text)
        if self.problem is not None or not text:
            return
        stack = self.stack
        for match in _SPECIAL.finditer(text):
            i = match.start()
            ch = text[i]
            prev = text[i - 1] if i else self.prev
            if self.quote:
                if ch == self.quote and prev != "\\":
                    self.quote = None
            elif ch == '"' or (ch == "'" and not prev.isalnum()):
                self.quote, self.quote_at = ch, base + i
            elif ch in _CLOSE:
                stack.append((ch, base + i))
                if len(stack) > MAX_NESTING and self.too_deep_at is None:
                    self.too_deep_at = base + i
            elif ch in ")]}":
                if not stack or _CLOSE[stack[-1][0]] != ch:
                    self.problem, self.problem_at = f"'{ch}' closes nothing here", base + i
                    return
                stack.pop()
        self.prev = text[-1]

    def result(self) -> tuple[str | None, int]:
        """A problem (a bracket that closes nothing, an unclosed quote) and the 0-based position it is
        at; without one, the position of the first bracket left open (0 when none is)."""
        if self.problem is not None:
            return self.problem, self.problem_at
        if self.quote == '"':
            return "a quote opened here is never closed", self.quote_at
        return None, self.stack[0][1] if self.stack else 0


def nesting_too_deep(text: str) -> int | None:
    """The 0-based position in `text` of a bracket opened more than MAX_NESTING levels deep, or None."""
    scanner = _Scanner()
    scanner.feed(text)
    return scanner.too_deep_at
