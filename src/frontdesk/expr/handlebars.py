"""Lowering of Handlebars-style templates (ABL RESPOND and TEMPLATES text) to IR templates.

Supported: `{{expr}}` and `{{{expr}}}` (the same: bot messages are not HTML-escaped), where expr is
any expression (`{{name}}`, `{{order.items[0].sku}}`, `{{FORMAT_CURRENCY(total, "USD")}}`);
`{{#each list}}...{{else}}...{{/each}}` with `{{this}}`, `{{this.field}}`, `{{@index}}`, `{{@first}}`,
`{{@last}}` inside (or `{{#each list as |item|}}` to name the item); `{{#if c}}...{{else if d}}...
{{else}}...{{/if}}`; `{{#unless c}}...{{/unless}}`; comments `{{! ... }}` and `{{!-- ... --}}`;
`~` whitespace control; `../name` (the variable, as every bare name is). A block tag alone on its
line takes the line with it, as in Handlebars.

Unlike Handlebars, a bare name inside `{{#each}}` is never a field of the item: it is the variable
of that name (`{{currency}}` beside `{{this.price}}`); fields of the item are read through `this`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from frontdesk.expr.parser import Dialect, ExprSyntaxError, PathMode, parse_expression
from frontdesk.expr.template import TemplateSyntaxError
from frontdesk.ir.expr import (
    EachPart,
    Expr,
    ExprPart,
    IfPart,
    Not,
    Template,
    TemplatePart,
    TextPart,
)

_EACH_LOCALS = ("@index", "@first", "@last")
_AS_BLOCK_PARAM = re.compile(r"^(?P<items>.*?)\s+as\s+\|\s*(?P<var>[^\W\d]\w*)\s*\|\s*$", re.DOTALL)
_PARENT = re.compile(r"(?<![\w.])\.\./")
_BLOCKS = ("each", "if", "unless")
# Blocks ({{#if}}, {{#each}}, {{#unless}}) open at once: the template becomes nested IR parts that
# walking, checking, rendering and JSON all follow recursively, so deeper nesting is refused here.
MAX_BLOCK_DEPTH = 64


@dataclass
class _Tag:
    start: int  # offset of the opening braces
    end: int  # offset just after the closing braces
    inner: str  # the text between the braces, without ~ markers
    inner_at: int  # offset of `inner` in the template text
    strip_before: bool = False
    strip_after: bool = False

    @property
    def column(self) -> int:
        return self.start + 1

    @property
    def word(self) -> str:
        return self.inner.strip()

    @property
    def is_block(self) -> bool:
        word = self.word
        return word[:1] in "#/!^" or word == "else" or word.startswith("else ")


@dataclass
class _Frame:
    kind: str  # "root", "each", "if", "unless"
    tag: _Tag | None
    parts: list[TemplatePart] = field(default_factory=list)
    # if / unless / each-with-else
    condition: Expr | None = None
    items: Expr | None = None
    var: str = "this"
    then: list[TemplatePart] | None = None
    chained: int = 0  # `else if` blocks opened by this frame, closed by its {{/if}}
    locals: frozenset[str] = frozenset()


def parse_handlebars(text: str, agent: str = "", *, paths: PathMode = "flat",
                     locals: Iterable[str] = (), dialect: Dialect = "adl",
                     memory_paths: Mapping[str, str] | Iterable[str] | None = None,
                     tools: Iterable[str] = ()) -> Template:
    """Lower a Handlebars-style template to an IR Template; names are read with `paths` for `agent`.

    With `dialect="abl"` the holes are ABL expressions, names read as parse_expression reads them
    (`memory_paths`, `tools`: see AblNames); `paths` does not apply.

    Raises TemplateSyntaxError with a 1-based column (an offset within `text`) for a malformed tag,
    a block that is not closed or closed by the wrong tag, or a bad expression inside a tag.
    """
    items: list[str | _Tag] = _split(text)
    _strip_standalone(items)
    options: dict[str, Any] = {"paths": paths}
    if dialect == "abl":
        options = {"dialect": "abl", "memory_paths": memory_paths,
                   "tools": tools if isinstance(tools, frozenset) else frozenset(tools)}
    return Template(source=text, parts=_Builder(agent, options, frozenset(locals)).build(items))


def _split(text: str) -> list[str | _Tag]:
    items: list[str | _Tag] = []
    pos = 0
    while True:
        start = text.find("{{", pos)
        if start < 0:
            items.append(text[pos:])
            return items
        items.append(text[pos:start])
        if text.startswith("{{!--", start) or text.startswith("{{~!--", start):
            close, closer = text.find("--}}", start), "--}}"
            if close < 0:
                close, closer = text.find("--~}}", start), "--~}}"
        elif text.startswith("{{{", start) or text.startswith("{{~{", start):
            close, closer = text.find("}}}", start), "}}}"
        else:
            close, closer = text.find("}}", start), "}}"
        if close < 0:
            raise TemplateSyntaxError("unclosed '{{'", start + 1, hint="close it with '}}'")
        end = close + len(closer)
        raw_at = start + 2
        raw = text[raw_at:close]
        strip_before = raw.startswith("~")
        if strip_before:
            raw, raw_at = raw[1:], raw_at + 1
        strip_after = raw.endswith("~")
        if strip_after:
            raw = raw[:-1]
        if raw.startswith("{") and closer == "}}}":
            raw, raw_at = raw[1:], raw_at + 1
            if raw.endswith("~"):
                raw, strip_after = raw[:-1], True
        if "{{" in raw and not raw.startswith("!"):
            raise TemplateSyntaxError("unclosed '{{'", start + 1, hint="close it with '}}'")
        items.append(_Tag(start, end, raw, raw_at, strip_before, strip_after))
        pos = end


def _strip_standalone(items: list[str | _Tag]) -> None:
    """Apply `~` markers, and drop the line of a block tag that stands alone on it."""
    for i, item in enumerate(items):
        if not isinstance(item, _Tag):
            continue
        before, after = items[i - 1], items[i + 1] if i + 1 < len(items) else ""
        assert isinstance(before, str) and isinstance(after, str)
        if item.strip_before:
            items[i - 1] = before = before.rstrip()
        if item.strip_after and i + 1 < len(items):
            items[i + 1] = after = after.lstrip()
        if not item.is_block:
            continue
        line_start = before.rfind("\n")
        head = before[line_start + 1 :]
        at_line_start = line_start >= 0 or i == 1
        newline = after.find("\n")
        tail = after if newline < 0 else after[:newline]
        at_line_end = newline >= 0 or i + 2 == len(items)
        if at_line_start and at_line_end and not head.strip() and not tail.strip():
            items[i - 1] = before[: line_start + 1]
            if i + 1 < len(items):
                items[i + 1] = after[newline + 1 :] if newline >= 0 else ""


class _Builder:
    def __init__(self, agent: str, options: dict[str, Any], locals: frozenset[str]) -> None:
        self.agent = agent
        self.options = options  # how parse_expression reads names: paths, or the ABL dialect
        self.stack = [_Frame("root", None, locals=locals)]

    @property
    def frame(self) -> _Frame:
        return self.stack[-1]

    def build(self, items: list[str | _Tag]) -> list[TemplatePart]:
        for item in items:
            if isinstance(item, str):
                if item:
                    self._add(TextPart(text=item))
            else:
                self._tag(item)
        if len(self.stack) > 1:
            # an `else if` frame has no tag of its own: report the {{#if}} it belongs to
            frame = next(f for f in reversed(self.stack) if f.tag is not None)
            assert frame.tag is not None
            raise TemplateSyntaxError(f"{{{{#{frame.kind}}}}} is not closed", frame.tag.column,
                                      hint=f"add {{{{/{frame.kind}}}}} where the block ends")
        return self.stack[0].parts

    def _add(self, part: TemplatePart) -> None:
        self.frame.parts.append(part)

    def _expr(self, text: str, at: int, tag: _Tag, what: str) -> Expr:
        stripped = text.strip()
        if not stripped:
            raise TemplateSyntaxError(f"{what} needs an expression", tag.column)
        lead = len(text) - len(text.lstrip())
        locals_ = self.frame.locals
        if re.match(r"this\b", stripped) and "this" not in locals_:
            raise TemplateSyntaxError("'this' can only be used inside {{#each}}", at + lead + 1,
                                      hint="write the variable's name")
        source = _PARENT.sub(lambda m: "   ", text)  # ../name is the variable name (same columns)
        try:
            return parse_expression(source, self.agent, locals=locals_, **self.options)
        except ExprSyntaxError as exc:
            raise TemplateSyntaxError(exc.message, at + exc.column, exc.hint) from None

    def _tag(self, tag: _Tag) -> None:
        word = tag.word
        if word.startswith("!"):
            return
        if word.startswith("#"):
            self._open(tag)
        elif word.startswith("/"):
            self._close(tag)
        elif word == "else" or word == "^" or word.startswith("else "):
            self._else(tag)
        elif word.startswith(">"):
            raise TemplateSyntaxError("partials ({{> name}}) are not supported", tag.column,
                                      hint="use TEMPLATE(name) in the step instead")
        elif word.startswith("^"):
            raise TemplateSyntaxError("inverse blocks ({{^x}}) are not supported", tag.column,
                                      hint="write {{#unless x}}...{{/unless}}")
        else:
            self._add(ExprPart(expr=self._expr(tag.inner, tag.inner_at, tag, "'{{}}'")))

    def _open(self, tag: _Tag) -> None:
        word = tag.word
        found = re.match(r"#\s*(\w+)", word)
        name = found.group(1) if found else ""
        if name not in _BLOCKS:
            shown = "#" + name if name else word
            raise TemplateSyntaxError(f"unsupported block '{shown}'", tag.column,
                                      hint="use {{#each list}}, {{#if condition}} or {{#unless condition}}")
        assert found is not None
        if len(self.stack) > MAX_BLOCK_DEPTH:
            raise TemplateSyntaxError(f"blocks are nested more than {MAX_BLOCK_DEPTH} deep", tag.column,
                                      hint="flatten the template: combine conditions with && or split it")
        offset = tag.inner.index(word) + found.end()
        rest = tag.inner[offset:]
        at = tag.inner_at + offset
        locals_ = self.frame.locals
        if name == "each":
            var = "this"
            named = _AS_BLOCK_PARAM.match(rest)
            if named:
                rest, var = named.group("items"), named.group("var")
            items = self._expr(rest, at, tag, "{{#each}}")
            self.stack.append(_Frame("each", tag, items=items, var=var,
                                     locals=locals_ | {var, *_EACH_LOCALS}))
            return
        condition = self._expr(rest, at, tag, f"{{{{#{name}}}}}")
        if name == "unless":
            condition = Not(item=condition)
        self.stack.append(_Frame(name, tag, condition=condition, locals=locals_))

    def _else(self, tag: _Tag) -> None:
        frame = self.frame
        if frame.kind not in ("if", "unless", "each") or frame.then is not None:
            problem = "a second {{else}}" if frame.then is not None else "{{else}} outside {{#if}}, {{#unless}} or {{#each}}"
            raise TemplateSyntaxError(f"unexpected {problem}", tag.column)
        frame.then, frame.parts = frame.parts, []
        if frame.kind == "each":
            frame.locals = self.stack[-2].locals  # the else of an each runs when there are no items
        word = tag.word
        if word.startswith("else "):
            rest = word[5:].strip()
            found = re.match(r"(if|unless)\b", rest)
            if not found or frame.kind == "each":
                raise TemplateSyntaxError("write {{else}} or {{else if condition}}", tag.column)
            offset = tag.inner.index(rest) + found.end()
            condition = self._expr(tag.inner[offset:], tag.inner_at + offset, tag, "{{else if}}")
            if found.group(1) == "unless":
                condition = Not(item=condition)
            frame.chained += 1
            self.stack.append(_Frame("if", None, condition=condition, locals=frame.locals))

    def _close(self, tag: _Tag) -> None:
        name = tag.word[1:].strip()
        frame = self.frame
        if frame.kind == "root":
            raise TemplateSyntaxError(f"unexpected {{{{/{name}}}}}: no block is open", tag.column)
        # close the `else if` frames first: they end with the {{/if}} of the block that opened them
        while frame.tag is None:
            self.stack.pop()
            self._add(self._finish(frame))
            frame = self.frame
        if name != frame.kind:
            assert frame.tag is not None
            raise TemplateSyntaxError(
                f"{{{{/{name}}}}} does not close {{{{#{frame.kind}}}}} (opened at column {frame.tag.column})",
                tag.column, hint=f"close it with {{{{/{frame.kind}}}}}",
            )
        self.stack.pop()
        self._add(self._finish(frame))

    def _finish(self, frame: _Frame) -> TemplatePart:
        if frame.kind == "each":
            assert frame.items is not None
            body = frame.then if frame.then is not None else frame.parts
            each = EachPart(items=frame.items, var=frame.var, body=body)
            if frame.then is None:
                return each
            return IfPart(condition=frame.items, then=[each], otherwise=frame.parts)
        assert frame.condition is not None
        if frame.then is None:
            return IfPart(condition=frame.condition, then=frame.parts)
        return IfPart(condition=frame.condition, then=frame.then, otherwise=frame.parts)
