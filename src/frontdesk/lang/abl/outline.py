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
from dataclasses import dataclass, field

from frontdesk.diagnostics import DiagnosticBag, Span

from . import codes

_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)[ \t]*:(?=[ \t]|$)")
_BLOCK = re.compile(r"[|>][-+]?[0-9]?$")
_CLOSE = {"(": ")", "[": "]", "{": "}"}
MAX_LINES = 20_000
MAX_DEPTH = 64


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
            bag.error(codes.SYNTAX, "the document is nested too deeply", Span(file=file, line=line.number, column=1))
            break
        parent = stack[-1][1]
        _place(line.text, line.indent, line.number, parent, stack, file, line.block)
    return root


def _place(text: str, indent: int, number: int, parent: Node, stack: list[tuple[int, Node]], file: str,
           block: str | None) -> None:
    span = Span(file=file, line=number, column=indent + 1)
    if text == "-" or text.startswith("- "):
        item = Node(key=None, value=None, span=span, item=True)
        parent.children.append(item)
        stack.append((indent, item))
        rest = text[1:]
        inner = len(rest) - len(rest.lstrip(" "))
        rest = rest.strip()
        if rest:
            column = indent + 1 + inner
            _place(rest, column, number, item, stack, file, block)
        return
    node = _parse_line(text, span, indent)
    parent.children.append(node)
    stack.append((indent, node))
    if block is not None and node.value is not None and _BLOCK.fullmatch(node.value):
        node.block = True
        node.value = block


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
        # join continuation lines: open brackets, or a line ending in `->` or `,`
        depth, problem = _bracket_depth(body)
        while (depth > 0 or body.endswith("->") or (body.endswith(",") and depth >= 0)) and i < len(physical):
            nxt = _strip_comment(physical[i]).strip()
            i += 1
            if not nxt:
                continue
            body = body + nxt if body.endswith(("(", "[", "{")) else f"{body} {nxt}"
            depth, problem = _bracket_depth(body)
            if depth <= 0 and not body.endswith(("->", ",")):
                break
        if depth > 0 or problem:
            _, problem, at = _scan(body)
            first = body.split(" ", 1)[0]
            bag.error(codes.SYNTAX, problem or "a bracket opened here is never closed",
                      Span(file=file, line=number, column=indent + 1 + at if at < len(first) + 200 else indent + 1),
                      hint="close every quote, (, [ and { on this line or the lines that continue it")
        out.append(_Line(indent, body, number))
    return out


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


def _bracket_depth(text: str) -> tuple[int, str | None]:
    """How many brackets are open at the end of `text` (outside quotes), and a problem."""
    depth, problem, _ = _scan(text)
    return depth, problem


def _scan(text: str) -> tuple[int, str | None, int]:
    """Open brackets at the end of `text`, a problem, and the 0-based position the problem is at
    (an unclosed quote, a bracket that closes nothing, the first bracket left open)."""
    stack: list[tuple[str, int]] = []
    quote, quote_at = None, 0
    prev = ""
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and prev != "\\":
                quote = None
        elif ch == '"' or (ch == "'" and not prev.isalnum()):
            quote, quote_at = ch, i
        elif ch in _CLOSE:
            stack.append((ch, i))
        elif ch in ")]}":
            if not stack or _CLOSE[stack[-1][0]] != ch:
                return -1, f"'{ch}' closes nothing here", i
            stack.pop()
        prev = ch
    if quote == '"':
        return len(stack), "a quote opened here is never closed", quote_at
    return len(stack), None, stack[0][1] if stack else 0
