"""Visual rendering of ACDL syntax trees: a self-contained HTML page, a standalone SVG, and PNG/PDF export."""

from __future__ import annotations

import html
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

__all__ = [
    "render_html",
    "render_svg",
    "export",
    "ExportError",
    "expr_text",
    "element_text",
    "element_label",
    "chromium_path",
    "measure_file",
    "ROLE_NAMES",
]

ROLE_NAMES = {"S": "system", "U": "user", "A": "assistant", "T": "tool", "N": "none"}

# ---------------------------------------------------------------------------
# Inline runs: every expression is printed as a list of (text, style) runs. The same runs feed the
# HTML spans, the SVG tspans and the plain text the structural diff compares.
# ---------------------------------------------------------------------------


@dataclass
class Run:
    """A piece of inline text with a style class ("" plain, "kw", "ix", "ns-env", "fn", "tm", "ref", "lit", "op")."""

    text: str
    cls: str = ""


def _name(node: Any) -> str:
    return type(node).__name__


def _join(parts: Iterable[list[Run]], sep: str = ", ") -> list[Run]:
    out: list[Run] = []
    for i, part in enumerate(parts):
        if i:
            out.append(Run(sep))
        out.extend(part)
    return out


def _indices(indices: list[Any] | None) -> list[Run]:
    if not indices:
        return []
    return [Run("[", "ix"), *_retag(_join(expr_runs(i) for i in indices), "ix"), Run("]", "ix")]


def _retag(runs: list[Run], cls: str) -> list[Run]:
    """Inside an index list plain runs take the index colour; styled runs keep theirs."""
    return [Run(r.text, r.cls or cls) for r in runs]


def _literal_text(value: Any, kind: str) -> str:
    if kind == "string":
        text = str(value)
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
            return text
        return '"' + text.replace('"', '\\"') + '"'
    return str(value)


def _path_runs(path: list[Any]) -> list[Run]:
    out: list[Run] = []
    for seg in path or []:
        name = str(getattr(seg, "name", seg))
        if name:  # a segment with no name is a further index list: x[@t][m]
            out.append(Run("." + name))
        out.extend(_indices(getattr(seg, "indices", None)))
    return out


def _expr_time(node: Any) -> list[Run]:
    parts = getattr(node, "parts", None)
    text = getattr(node, "text", None)
    if not isinstance(text, str):
        text = "@" + ".".join(str(p) for p in (parts or []))
    return [Run(text, "ix")]


def _expr_binary(node: Any) -> list[Run]:
    return [*expr_runs(node.left), Run(str(node.op), "op"), *expr_runs(node.right)]


def _expr_unary(node: Any) -> list[Run]:
    return [Run(str(node.op), "op"), *expr_runs(node.operand)]


def _expr_compare(node: Any) -> list[Run]:
    return [*expr_runs(node.left), Run(f" {node.op} ", "op"), *expr_runs(node.right)]


def _expr_bool(node: Any) -> list[Run]:
    word = getattr(node, "spelling", "") or getattr(node, "op", "and")
    return [*expr_runs(node.left), Run(f" {word} ", "op"), *expr_runs(node.right)]


def _expr_not(node: Any) -> list[Run]:
    spelling = getattr(node, "spelling", "not") or "not"
    return [Run(spelling if spelling == "!" else spelling + " ", "op"), *expr_runs(node.operand)]


def _expr_context_var(node: Any) -> list[Run]:
    ns = str(node.namespace)
    return [
        Run(ns, "ns-" + ns if ns in ("env", "sys", "resp") else "ns-other"),
        *_indices(getattr(node, "namespace_indices", None)),
        *_path_runs(node.path),
    ]


def _expr_template(node: Any) -> list[Run]:
    out = [Run(str(node.name), "tm")]
    if getattr(node, "args", None) is not None:
        out += [Run("("), *_join(expr_runs(a) for a in node.args), Run(")")]
    return out


def _expr_function(node: Any) -> list[Run]:
    return [
        Run(str(node.name), "fn"),
        Run("("),
        *_join(expr_runs(a) for a in (node.args or [])),
        Run(")"),
        *_indices(getattr(node, "indices", None)),
    ]


def _expr_name_ref(node: Any) -> list[Run]:
    name = str(node.name)
    if not name.startswith("$"):
        name = "$" + name
    return [Run(name, "ref"), *_indices(getattr(node, "indices", None)), *_path_runs(getattr(node, "path", None))]


def _expr_list_comp(node: Any) -> list[Run]:
    var = ("@" if getattr(node, "time_var", False) else "") + str(node.var)
    return [
        Run("["),
        *expr_runs(node.element),
        Run(" for ", "kw"),
        Run(var, "ix" if var.startswith("@") else ""),
        Run(" in ", "kw"),
        *expr_runs(node.iterable),
        Run("]"),
    ]


_EXPR_PRINTERS: dict[str, Callable[[Any], list[Run]]] = {
    "TimeIndex": _expr_time,
    "TimeName": _expr_time,
    "PlainName": lambda n: [Run(str(n.name))],
    "Literal": lambda n: [Run(_literal_text(n.value, n.kind), "lit")],
    "BinaryOp": _expr_binary,
    "UnaryOp": _expr_unary,
    "Compare": _expr_compare,
    "BoolOp": _expr_bool,
    "Not": _expr_not,
    "Paren": lambda n: [Run("("), *expr_runs(n.expr), Run(")")],
    "ImplicitRange": lambda n: _join(expr_runs(a) for a in n.args),
    "ContextVar": _expr_context_var,
    "Template": _expr_template,
    "FunctionCall": _expr_function,
    "NameRef": _expr_name_ref,
    "ListComprehension": _expr_list_comp,
    # a string fragment given as an argument: `summarize(Frag Doc[d])`
    "FragInvoke": lambda n: [Run("Frag "), Run(str(n.name)),
                             *([Run("["), *_join(expr_runs(a) for a in n.args), Run("]")] if n.args else [])],
}


def expr_runs(node: Any) -> list[Run]:
    """The styled runs of an expression node (unknown node kinds print their fields generically)."""
    if node is None:
        return []
    if isinstance(node, (str, int, float)):
        return [Run(str(node))]
    printer = _EXPR_PRINTERS.get(_name(node))
    if printer is not None:
        return printer(node)
    text = getattr(node, "name", None) or getattr(node, "text", None) or _name(node)
    return [Run(str(text))]


def expr_text(node: Any) -> str:
    """An expression printed as ACDL source text."""
    return "".join(r.text for r in expr_runs(node))


def _loop_var(node: Any) -> str:
    var = str(node.var)
    if getattr(node, "time_var", False) and not var.startswith("@"):
        var = "@" + var
    return var


def _if_branches(node: Any) -> list[tuple[str, Any, list[Any], str | None, Any]]:
    """(keyword, condition, body, comment, node) for each part of an If chain, Else included."""
    parts = []
    for i, branch in enumerate(getattr(node, "branches", []) or []):
        parts.append(("If" if i == 0 else "ElseIf", branch.condition, branch.body, getattr(branch, "comment", None), branch))
    if getattr(node, "else_body", None) is not None:
        parts.append(("Else", None, node.else_body, getattr(node, "else_comment", None), node))
    return parts


def _switch_parts(node: Any) -> list[tuple[str, Any, list[Any], str | None, Any]]:
    parts = [("Case", c.value, c.body, getattr(c, "comment", None), c) for c in getattr(node, "cases", []) or []]
    if getattr(node, "default", None) is not None:
        parts.append(("Default", None, node.default, getattr(node, "default_comment", None), node))
    return parts


def _header_runs(keyword: str, node: Any, condition: Any = None) -> list[Run]:
    """The header line of a control construct, e.g. `ForEach(@t : range(1, @T))`."""
    if keyword == "ForEach":
        var = _loop_var(node)
        return [Run("ForEach", "kw"), Run("("), Run(var, "ix" if var.startswith("@") else ""), Run(": "),
                *expr_runs(node.iterable), Run(")")]
    if keyword in ("If", "ElseIf", "Case"):
        return [Run(keyword, "kw"), Run(" "), *expr_runs(condition)]
    if keyword == "Switch":
        return [Run("Switch", "kw"), Run(" "), *expr_runs(node.expr)]
    return [Run(keyword, "kw")]


def element_text(node: Any) -> str:
    """A one-line canonical print of a body element and everything inside it (comments left out).

    Used as the structural diff's comparison key: equal text means equal structure."""
    kind = _name(node)
    if kind == "RoleMessage":
        inner = _join_elements(_body_of(node))
        return f"{node.role}: {{ {inner} }}" if getattr(node, "form", "block") == "block" else f"{node.role}: {inner}"
    if kind == "Comment":
        return ""
    if kind in ("ForEach", "Mark", "NameDef", "FragInvoke", "PromptEndsHere", "Break", "Continue"):
        head = "".join(r.text for r in _element_head_runs(node))
        body = _body_of(node)
        if kind in ("ForEach", "Mark"):
            return f"{head} {{ {_join_elements(body)} }}"
        return head
    if kind == "If":
        parts = []
        for keyword, cond, body, _c, _n in _if_branches(node):
            head = keyword + (" " + expr_text(cond) if cond is not None else "")
            parts.append(f"{head} {{ {_join_elements(body)} }}")
        return " ".join(parts)
    if kind == "Switch":
        parts = []
        for keyword, value, body, _c, _n in _switch_parts(node):
            head = keyword + (" " + expr_text(value) if value is not None else "")
            parts.append(f"{head} {{ {_join_elements(body)} }}")
        return f"Switch {expr_text(node.expr)} {{ {' '.join(parts)} }}"
    if kind in ("PromptSpec", "StrFragDef", "RolesFragDef"):
        return f"{_spec_title_text(node)} {{ {_join_elements(_body_of(node))} }}"
    return expr_text(node)


def _body_of(node: Any) -> list[Any]:
    return [e for e in (getattr(node, "body", None) or [])]


def _join_elements(elements: list[Any]) -> str:
    return " ".join(t for t in (element_text(e) for e in elements) if t)


def _element_head_runs(node: Any) -> list[Run]:
    kind = _name(node)
    if kind == "ForEach":
        return _header_runs("ForEach", node)
    if kind == "Mark":
        return [Run("Mark", "kw"), Run(" " + ("?" if node.number is None else str(node.number)))]
    if kind == "NameDef":
        return [Run("Name", "kw"), Run(" "), Run("$" + str(node.name).lstrip("$"), "ref"), Run(" := "),
                *expr_runs(node.value)]
    if kind == "FragInvoke":
        return [Run("Frag", "kw"), Run(" "), Run(str(node.name), "fr"), *_indices(getattr(node, "args", None))]
    if kind == "PromptEndsHere":
        cond = getattr(node, "cond", None)
        return [Run("PromptEndsHere", "kw"), *([Run(" when ", "kw"), *expr_runs(cond)] if cond is not None else [])]
    if kind in ("Break", "Continue"):
        return [Run(kind.lower(), "kw")]
    return expr_runs(node)


def _spec_title_text(node: Any) -> str:
    kind = _name(node)
    label = {"StrFragDef": "StrFrag ", "RolesFragDef": "RolesFrag "}.get(kind, "")
    params = getattr(node, "indices", None) if kind == "PromptSpec" else getattr(node, "params", None)
    return label + str(node.name) + "".join(r.text for r in _indices(params))


def element_label(node: Any) -> str:
    """A short label naming an element in a diff path: `U`, `ForEach(@t)`, `If(x > 1)`, `Mark(2)`, `TASK_DESC`."""
    kind = _name(node)
    if kind == "RoleMessage":
        return str(node.role)
    if kind == "ForEach":
        return f"ForEach({_loop_var(node)})"
    if kind == "If":
        branches = getattr(node, "branches", None) or []
        return f"If({expr_text(branches[0].condition)})" if branches else "If"
    if kind == "Switch":
        return f"Switch({expr_text(node.expr)})"
    if kind == "Mark":
        return f"Mark({'?' if node.number is None else node.number})"
    if kind == "NameDef":
        return f"Name({node.name})"
    if kind == "FragInvoke":
        return f"Frag({node.name})"
    if kind == "PromptEndsHere":
        return "PromptEndsHere"
    if kind in ("Break", "Continue"):
        return kind.lower()
    if kind == "Template":
        return str(node.name)
    if kind == "FunctionCall":
        return f"{node.name}()"
    if kind == "ContextVar":
        return ".".join([str(node.namespace), *(str(getattr(s, "name", s)) for s in node.path)])
    if kind == "NameRef":
        name = str(node.name)
        return name if name.startswith("$") else "$" + name
    if kind == "Literal":
        return _literal_text(node.value, node.kind)
    if kind in ("PromptSpec", "StrFragDef", "RolesFragDef"):
        return str(node.name)
    return expr_text(node) or kind


# ---------------------------------------------------------------------------
# View model: the AST turned into what is drawn. Both back ends (HTML, SVG) read only this.
# ---------------------------------------------------------------------------


@dataclass
class VChip:
    """An inline content element drawn as a chip; kind is tmpl, func, var, ref, frag, lit, kw or expr."""

    kind: str
    runs: list[Run]


@dataclass
class VLine:
    """One line of inline things (chips and bare runs) with an optional comment beside it."""

    parts: list[VChip | Run]
    comment: str | None = None
    hl: str | None = None


@dataclass
class VComment:
    """A standalone comment on its own line."""

    text: str
    hl: str | None = None


@dataclass
class VRole:
    """A role message: coloured rule, role tag and its content lines."""

    role: str
    children: list[Any]
    comment: str | None = None
    hl: str | None = None


@dataclass
class VBlock:
    """A control construct: a header line (ForEach/If/ElseIf/Else/Switch/Case/Default) and an indented body."""

    header: list[Run]
    children: list[Any]
    comment: str | None = None
    hl: str | None = None
    in_role: bool = False
    more: list[list[Run]] = field(default_factory=list)  # the header's wrapped continuation lines


@dataclass
class VMark:
    """A `Mark N` region: a right-hand bracket with the number beside it."""

    number: str
    children: list[Any]
    comment: str | None = None
    hl: str | None = None
    in_role: bool = False


@dataclass
class VEnds:
    """`PromptEndsHere when cond`: a dashed line with its condition."""

    runs: list[Run]
    comment: str | None = None
    hl: str | None = None


@dataclass
class VSpec:
    """A specification or fragment definition: a title and a body."""

    label: str | None
    title: list[Run]
    children: list[Any]
    comment: str | None = None
    hl: str | None = None


@dataclass
class _ViewBuilder:
    """Turns AST nodes into view nodes; `highlights` maps id(ast node) to a diff state."""

    highlights: dict[int, str] = field(default_factory=dict)

    def hl(self, node: Any) -> str | None:
        return self.highlights.get(id(node))

    def file(self, file_ast: Any) -> list[Any]:
        out: list[Any] = []
        for item in getattr(file_ast, "items", None) or []:
            kind = _name(item)
            if kind == "Comment":
                out.append(VComment(str(item.text), self.hl(item)))
            elif kind in ("PromptSpec", "StrFragDef", "RolesFragDef"):
                out.append(self.spec(item))
        return out

    def spec(self, node: Any) -> VSpec:
        kind = _name(node)
        label = {"StrFragDef": "StrFrag", "RolesFragDef": "RolesFrag"}.get(kind)
        params = getattr(node, "indices", None) if kind == "PromptSpec" else getattr(node, "params", None)
        title = [Run(str(node.name), "title"), *_indices(params), Run(":")]
        in_role = kind == "StrFragDef"
        return VSpec(label, title, self.body(_body_of(node), in_role), getattr(node, "comment", None), self.hl(node))

    def body(self, elements: list[Any], in_role: bool) -> list[Any]:
        out: list[Any] = []
        for element in elements:
            kind = _name(element)
            if kind == "Comment" and getattr(element, "inline", False) and out and _attach_comment(out[-1], element.text):
                continue
            out.extend(self.element(element, in_role))
        return out

    def element(self, node: Any, in_role: bool) -> list[Any]:
        kind = _name(node)
        comment = getattr(node, "comment", None)
        hl = self.hl(node)
        if kind == "Comment":
            return [VComment(str(node.text), hl)]
        if kind == "RoleMessage":
            return [VRole(str(node.role), self.body(_body_of(node), True), comment, hl)]
        if kind == "ForEach":
            return [VBlock(_header_runs("ForEach", node), self.body(_body_of(node), in_role), comment, hl, in_role)]
        if kind == "If":
            out = []
            for keyword, cond, body, branch_comment, part in _if_branches(node):
                out.append(VBlock(_header_runs(keyword, node, cond), self.body(body, in_role), branch_comment,
                                  self.hl(part) or hl, in_role))
            return out
        if kind == "Switch":
            cases = []
            for keyword, value, body, case_comment, part in _switch_parts(node):
                part_hl = self.hl(part) if part is not node else None
                cases.append(VBlock(_header_runs(keyword, node, value), self.body(body, in_role), case_comment,
                                    part_hl, in_role))
            return [VBlock(_header_runs("Switch", node), cases, comment, hl, in_role)]
        if kind == "Mark":
            number = "?" if node.number is None else str(node.number)
            return [VMark(number, self.body(_body_of(node), in_role), comment, hl, in_role)]
        if kind == "PromptEndsHere":
            cond = getattr(node, "cond", None)
            runs = [Run("PromptEndsHere", "kw")] + ([Run(" when ", "kw"), *expr_runs(cond)] if cond is not None else [])
            return [VEnds(runs, comment, hl)]
        if kind == "NameDef":
            value = node.value
            parts: list[VChip | Run] = [Run("Name", "kw"), Run(" "), VChip("ref", [Run("$" + str(node.name).lstrip("$"), "ref")]),
                                        Run(" := "), _chip(value)]
            return [VLine(parts, comment, hl)]
        return [VLine([_chip(node)], comment, hl)]


_CHIP_KINDS = {
    "Template": "tmpl",
    "FunctionCall": "func",
    "ContextVar": "var",
    "NameRef": "ref",
    "FragInvoke": "frag",
    "Literal": "lit",
    "Break": "kw",
    "Continue": "kw",
}


def _chip(node: Any) -> VChip:
    kind = _name(node)
    return VChip(_CHIP_KINDS.get(kind, "expr"), _element_head_runs(node))


def _attach_comment(view: Any, text: str) -> bool:
    """Put an inline comment written after a closing `}` beside the construct it closes."""
    if isinstance(view, (VLine, VRole, VBlock, VMark, VEnds)) and not view.comment:
        view.comment = str(text)
        return True
    return False


def build_view(file_ast: Any, highlights: dict[int, str] | None = None, wrap: int | None = None) -> list[Any]:
    """The view model of a whole file (specs, fragments and top-level comments, in order), with lines
    longer than `wrap` characters (default WRAP_COLUMNS; 0: never) broken into several."""
    views = _ViewBuilder(highlights or {}).file(file_ast)
    columns = WRAP_COLUMNS if wrap is None else wrap
    return wrap_views(views, columns) if columns > 0 else views


# ---------------------------------------------------------------------------
# Wrapping: a line longer than WRAP_COLUMNS characters is broken, preferably after a comma or an
# opening bracket, into several lines; the continuation lines are indented by CONTINUATION_INDENT
# characters. A chip broken across lines is drawn as one chip per line. A long comment is broken at
# spaces; an inline comment that would run past the limit goes on its own line under the content.
# Both back ends read the wrapped view, so HTML, SVG and PNG break at the same places.
# ---------------------------------------------------------------------------

WRAP_COLUMNS = 88
CONTINUATION_INDENT = 4
_BREAK_AFTER = (",", ", ", "(", "[", " := ", " and ", " or ", " && ", " || ", " & ", " | ")


def _chars(run: Run) -> int:
    return len(run.text) + (1 if run.cls.startswith("ns-") else 0)


def _split_long_run(run: Run, limit: int) -> list[Run]:
    """A run longer than `limit` characters, cut after an underscore, dot or space near the limit."""
    pieces = []
    text = run.text
    while len(text) > limit:
        cut = max(text.rfind(c, 0, limit) for c in "_. ")
        cut = cut + 1 if cut >= limit // 2 else limit
        pieces.append(Run(text[:cut], run.cls))
        text = text[cut:]
    pieces.append(Run(text, run.cls))
    return pieces


def _wrap_tokens(tokens: list[tuple[int | None, Run]], limit: int, first_limit: int) -> list[list[tuple[int | None, Run]]]:
    """Tokens (owner chip index or None, run) cut into lines: the first at most `first_limit` characters
    wide, the others `limit`."""
    flat: list[tuple[int | None, Run]] = []
    for owner, run in tokens:
        if _chars(run) > limit:
            flat.extend((owner, piece) for piece in _split_long_run(run, limit))
        else:
            flat.append((owner, run))
    lines: list[list[tuple[int | None, Run]]] = [[]]
    width = 0
    for owner, run in flat:
        room = first_limit if len(lines) == 1 else limit
        if lines[-1] and width + _chars(run) > room:
            line = lines[-1]
            breaks = [i + 1 for i, (_, r) in enumerate(line) if r.text in _BREAK_AFTER or r.text.endswith((",", "(", "["))]
            cut = breaks[-1] if breaks and breaks[-1] > len(line) // 3 else len(line)
            carried = line[cut:]
            lines[-1] = line[:cut]
            while lines[-1] and not lines[-1][-1][1].text.strip():
                lines[-1].pop()  # no trailing blank run at the end of a line
            while carried and not carried[0][1].text.strip():
                carried.pop(0)
            lines.append(carried)
            width = sum(_chars(r) for _, r in carried)
        if not lines[-1] and not run.text.strip():
            continue
        lines[-1].append((owner, run))
        width += _chars(run)
    return [line for line in lines if line]


def _regroup(line: list[tuple[int | None, Run]], chips: dict[int, VChip]) -> list[VChip | Run]:
    parts: list[VChip | Run] = []
    current: int | None = None
    for owner, run in line:
        if owner is None:
            parts.append(run)
            current = None
        elif owner == current and isinstance(parts[-1], VChip):
            parts[-1].runs.append(run)
        else:
            parts.append(VChip(chips[owner].kind, [run]))
            current = owner
    return parts


def _wrap_comment(text: str, limit: int) -> list[str]:
    words = text.split(" ")
    lines: list[str] = [""]
    for word in words:
        if lines[-1] and len(lines[-1]) + 1 + len(word) > limit:
            lines.append(word)
        else:
            lines[-1] = f"{lines[-1]} {word}" if lines[-1] else word
    return lines


def _wrap_line(view: VLine, columns: int) -> list[Any]:
    chips: dict[int, VChip] = {}
    tokens: list[tuple[int | None, Run]] = []
    for part in view.parts:
        if isinstance(part, VChip):
            chips[len(chips)] = part
            tokens.extend((len(chips) - 1, r) for r in part.runs)
        else:
            tokens.append((None, part))
    width = sum(_chars(r) for _, r in tokens)
    comment = view.comment
    out: list[Any] = []
    if width > columns:
        lines = _wrap_tokens(tokens, columns - CONTINUATION_INDENT, columns)
        for i, line in enumerate(lines):
            parts = _regroup(line, chips)
            if i:
                parts = [Run(" " * CONTINUATION_INDENT), *parts]
            out.append(VLine(parts, None, view.hl))
        width = sum(_chars(r) for _, r in lines[-1]) + CONTINUATION_INDENT
    else:
        out.append(VLine(list(view.parts), None, view.hl))
    if comment:
        if width + len(comment) + 4 <= columns + 24:
            out[-1].comment = comment
        else:
            out.extend(VComment(c, view.hl) for c in _wrap_comment(comment, columns - 3))
    return out


def wrap_views(views: list[Any], columns: int = WRAP_COLUMNS) -> list[Any]:
    """The views with every line longer than `columns` characters broken (see above)."""
    out: list[Any] = []
    for view in views:
        out.extend(_wrap_view(view, columns))
    return out


def _wrap_view(view: Any, columns: int) -> list[Any]:
    if isinstance(view, VLine):
        return _wrap_line(view, columns)
    if isinstance(view, VComment):
        if len(view.text) + 3 <= columns:
            return [view]
        return [VComment(c, view.hl) for c in _wrap_comment(view.text, columns - 3)]
    if isinstance(view, VRole):
        return [VRole(view.role, wrap_views(view.children, columns), view.comment, view.hl)]
    if isinstance(view, VBlock):
        header, more = view.header, list(view.more)
        if sum(_chars(r) for r in header) > columns:
            lines = _wrap_tokens([(None, r) for r in header], columns - CONTINUATION_INDENT, columns)
            header = [r for _, r in lines[0]]
            more = [[Run(" " * CONTINUATION_INDENT), *(r for _, r in line)] for line in lines[1:]]
        return [VBlock(header, wrap_views(view.children, columns), view.comment, view.hl, view.in_role, more)]
    if isinstance(view, VMark):
        return [VMark(view.number, wrap_views(view.children, columns), view.comment, view.hl, view.in_role)]
    if isinstance(view, VSpec):
        return [VSpec(view.label, view.title, wrap_views(view.children, columns), view.comment, view.hl)]
    return [view]


# ---------------------------------------------------------------------------
# Shared geometry (px). The CSS below uses the same numbers, so the HTML and the SVG agree and the
# SVG layout gives the page size for the headless-browser export.
# ---------------------------------------------------------------------------

FONT_SIZE = 13
TITLE_SIZE = 15
ADVANCE = 0.6021 * FONT_SIZE  # DejaVu Sans Mono / Menlo advance width
TITLE_ADVANCE = 0.6021 * TITLE_SIZE
SMALL_SIZE = 10
SMALL_ADVANCE = 0.6021 * SMALL_SIZE
LINE_H = 20  # a content line, a header line, a chip
CHIP_PAD = 6  # horizontal padding inside a chip (plus 1px border)
NS_PAD = 3  # horizontal padding of a namespace pill, plus 1px gap after it
GAP_TOP = 6  # vertical gap between top-level items
GAP_ROLE = 3  # vertical gap between lines inside a role message
RULE_W = 4  # coloured left rule
TAG_W = 22  # role tag column
ROLE_PAD_Y = 4
ROLE_PAD_X = 8
ROLE_MIN_W = 380
INDENT = 22  # body indent under a header; the guide line sits at 9px
GUIDE_X = 9
BLOCK_PAD_Y = 2
MARK_GAP = 6
MARK_W = 9
MARK_NUM_GAP = 4
COMMENT_GAP = 12
TITLE_H = 24
TITLE_GAP = 6
SPEC_GAP = 26
MARGIN = 18
LABEL_GAP = 8

ROLE_COLOURS = {
    "S": ("#7c3aed", "#f4efff"),
    "U": ("#2563eb", "#edf3ff"),
    "A": ("#059669", "#eafaf3"),
    "T": ("#d97706", "#fff6e6"),
    "N": ("#64748b", "#f3f4f6"),
}
NS_COLOURS = {
    "env": ("#065f46", "#cdf5e3"),
    "sys": ("#1e40af", "#d8e6fd"),
    "resp": ("#9d174d", "#fbe1ee"),
    "other": ("#374151", "#e5e7eb"),
}
RUN_COLOURS = {
    "ix": "#b45309",
    "kw": "#1d4ed8",
    "fn": "#0f766e",
    "ref": "#6d28d9",
    "lit": "#15803d",
    "op": "#475569",
    "fr": "#78350f",
    "tm": None,
}
TEXT = "#1f2937"
MUTED = "#6b7280"
MARK_COLOUR = "#dc2626"
GUIDE_COLOUR = "#94a3b8"

CSS = f"""
:root {{ color-scheme: light; }}
* {{ box-sizing: border-box; }}
body {{ margin: 0; background: #fff; color: {TEXT}; print-color-adjust: exact; -webkit-print-color-adjust: exact;
  font-family: "DejaVu Sans Mono", Menlo, Consolas, "Liberation Mono", monospace; font-size: {FONT_SIZE}px; }}
.acdl {{ display: inline-block; padding: {MARGIN}px; min-width: 100%; }}
.page-title {{ font-size: {TITLE_SIZE}px; color: {MUTED}; margin: 0 0 14px 0; font-weight: normal; }}
.spec {{ display: table; }}
.acdl > .spec + *, .acdl > * + .spec {{ margin-top: {SPEC_GAP}px; }}
.title {{ height: {TITLE_H}px; line-height: {TITLE_H}px; margin-bottom: {TITLE_GAP}px; font-size: {TITLE_SIZE}px;
  white-space: pre; font-weight: bold; }}
.title .ix {{ font-weight: bold; }}
.fraglabel {{ display: inline-block; font-size: {SMALL_SIZE}px; line-height: 16px; height: 18px; vertical-align: 2px;
  padding: 1px 5px; margin-right: {LABEL_GAP}px; border-radius: 3px; color: #fff; background: #475569;
  font-weight: bold; letter-spacing: 0; }}
.body, .inner, .marked {{ display: flex; flex-direction: column; gap: {GAP_TOP}px; }}
.in-role, .in-role .inner, .in-role .marked, .content {{ gap: {GAP_ROLE}px; align-items: flex-start; }}
.role {{ display: flex; align-items: stretch; min-width: {ROLE_MIN_W}px; border-left: {RULE_W}px solid;
  border-radius: 2px; }}
.role > .tag {{ flex: 0 0 {TAG_W}px; text-align: center; font-weight: bold; line-height: {LINE_H}px;
  padding-top: {ROLE_PAD_Y}px; }}
.role > .tag > span {{ display: inline-block; width: 18px; height: 18px; line-height: 18px; border-radius: 3px;
  color: #fff; font-size: 12px; }}
.role > .content {{ display: flex; flex-direction: column; flex: 1; padding: {ROLE_PAD_Y}px {ROLE_PAD_X}px
  {ROLE_PAD_Y}px 2px; }}
{"".join(f".role-{r} {{ border-color: {c}; background: {bg}; }} .role-{r} > .tag > span {{ background: {c}; }} " for r, (c, bg) in ROLE_COLOURS.items())}
.line {{ display: block; height: {LINE_H}px; line-height: {LINE_H}px; white-space: pre; }}
.chip {{ display: inline-block; vertical-align: top; height: {LINE_H}px; line-height: {LINE_H - 2}px; padding: 0 {CHIP_PAD - 1}px;
  border: 1px solid; border-radius: 4px; white-space: pre; }}
.chip.tmpl {{ background: #334155; border-color: #334155; color: #fff; font-weight: bold; }}
.chip.tmpl .tm {{ color: #fff; }}
.chip.tmpl .ix, .chip.tmpl .op, .chip.tmpl .fn, .chip.tmpl .lit, .chip.tmpl .ref {{ color: #e2e8f0; }}
.chip.tmpl .plain {{ color: #cbd5e1; font-weight: normal; }}
.chip.func {{ background: #f0fdfa; border-color: #0f766e; }}
.chip.func > .fn:first-child {{ font-weight: bold; font-style: italic; }}
.chip.var {{ background: #fff; border-color: #cbd5e1; }}
.chip.ref {{ background: #faf5ff; border-color: #7c3aed; border-style: dashed; }}
.chip.frag {{ background: #fef3c7; border-color: #b45309; }}
.chip.frag > .kw:first-child {{ color: #b45309; }}
.chip.lit, .chip.expr, .chip.kw {{ background: #fff; border-color: #e5e7eb; }}
.ns {{ display: inline-block; vertical-align: baseline; padding: 0 {NS_PAD}px; margin-right: 1px; border-radius: 3px; font-weight: bold;
  line-height: 15px; }}
{"".join(f".ns-{n} {{ color: {c}; background: {bg}; }} " for n, (c, bg) in NS_COLOURS.items())}
{"".join(f".{k} {{ color: {v}; }} " for k, v in RUN_COLOURS.items() if v)}
.kw {{ font-weight: bold; }}
.fn {{ font-style: italic; }}
.comment {{ color: {MUTED}; font-style: italic; white-space: pre; margin-left: {COMMENT_GAP}px; }}
.cline + .cline {{ margin-top: -{GAP_TOP}px; }}
.in-role > .cline + .cline {{ margin-top: -{GAP_ROLE}px; }}
.acdl > .cline + .cline {{ margin-top: 0; }}
.cline {{ height: {LINE_H}px; line-height: {LINE_H}px; color: {MUTED}; font-style: italic; white-space: pre; }}
.head {{ height: {LINE_H}px; line-height: {LINE_H}px; white-space: pre; }}
.block > .inner {{ margin-left: {GUIDE_X}px; padding: {BLOCK_PAD_Y}px 0 {BLOCK_PAD_Y}px {INDENT - GUIDE_X}px;
  border-left: 1.5px solid {GUIDE_COLOUR}; }}
.block {{ display: flex; flex-direction: column; }}
.in-role > .block, .in-role .block {{ align-self: stretch; }}
.mark {{ display: flex; align-items: stretch; }}
.mark > .marked {{ flex: 1; }}
.mark > .bracket {{ flex: 0 0 {MARK_W}px; margin-left: {MARK_GAP}px; border: 2px solid {MARK_COLOUR};
  border-left: none; }}
.mark > .num {{ align-self: center; margin-left: {MARK_NUM_GAP}px; color: {MARK_COLOUR}; font-weight: bold; }}
.ends {{ display: flex; align-items: center; height: {LINE_H}px; white-space: pre; color: {MARK_COLOUR}; }}
.ends .kw, .ends .op {{ color: {MARK_COLOUR}; }}
.ends::before {{ content: ""; flex: 0 0 16px; border-top: 2px dashed {MARK_COLOUR}; margin-right: 8px; }}
.ends::after {{ content: ""; flex: 1 1 16px; min-width: 16px; border-top: 2px dashed {MARK_COLOUR}; margin-left: 8px; }}
.hl-added {{ outline: 2px solid #16a34a; outline-offset: 1px; background-color: #dcfce7 !important; }}
.hl-removed {{ outline: 2px solid #dc2626; outline-offset: 1px; background-color: #fee2e2 !important; }}
.hl-moved {{ outline: 2px solid #2563eb; outline-offset: 1px; background-color: #dbeafe !important; }}
.hl-changed {{ outline: 2px solid #d97706; outline-offset: 1px; background-color: #fef3c7 !important; }}
.bracket.hl-changed {{ outline: none; background-color: transparent !important; border-color: #d97706; }}
.num.hl-changed {{ outline: none; background-color: transparent !important; color: #d97706; }}
"""

# ---------------------------------------------------------------------------
# HTML back end
# ---------------------------------------------------------------------------


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def _runs_html(runs: list[Run]) -> str:
    out = []
    for r in runs:
        if r.cls.startswith("ns-"):
            out.append(f'<span class="ns {r.cls}">{_esc(r.text)}</span>')
        elif r.cls:
            out.append(f'<span class="{r.cls}">{_esc(r.text)}</span>')
        else:
            out.append(f'<span class="plain">{_esc(r.text)}</span>' if r.text.strip() else _esc(r.text))
    return "".join(out)


def _hl_cls(hl: str | None) -> str:
    return f" hl-{hl}" if hl else ""


def _split_hl(hl: str | None) -> tuple[str, str]:
    """(class for the whole construct, class for its header): "changed" marks only the header."""
    if hl == "changed":
        return "", _hl_cls(hl)
    return _hl_cls(hl), ""


def _comment_html(text: str | None) -> str:
    return f'<span class="comment">// {_esc(text)}</span>' if text else ""


def _part_html(part: VChip | Run) -> str:
    if isinstance(part, VChip):
        return f'<span class="chip {part.kind}">{_runs_html(part.runs)}</span>'
    return _runs_html([part])


def _view_html(view: Any) -> str:
    if isinstance(view, VLine):
        parts = "".join(_part_html(p) for p in view.parts)
        return f'<div class="line{_hl_cls(view.hl)}">{parts}{_comment_html(view.comment)}</div>'
    if isinstance(view, VComment):
        return f'<div class="cline{_hl_cls(view.hl)}">// {_esc(view.text)}</div>'
    if isinstance(view, VRole):
        children = list(view.children)
        if view.comment:
            if len(children) == 1 and isinstance(children[0], VLine) and not children[0].comment:
                children = [VLine(children[0].parts, view.comment, children[0].hl)]
            else:
                children.insert(0, VComment(view.comment))
        inner = "".join(_view_html(c) for c in children)
        title = ROLE_NAMES.get(view.role, view.role)
        return (f'<div class="role role-{_esc(view.role)}{_hl_cls(view.hl)}" title="{title}">'
                f'<div class="tag"><span>{_esc(view.role)}</span></div><div class="content in-role">{inner}</div></div>')
    if isinstance(view, VBlock):
        # A changed construct highlights its header only; an added/removed/moved one, all of it.
        whole, head = _split_hl(view.hl)
        inner = "".join(_view_html(c) for c in view.children)
        role_cls = " in-role" if view.in_role else ""
        more = "".join(f'<div class="head"><span class="headtext{head}">{_runs_html(line)}</span></div>'
                       for line in view.more)
        return (f'<div class="block{whole}"><div class="head"><span class="headtext{head}">{_runs_html(view.header)}'
                f'</span>{_comment_html(view.comment)}</div>{more}<div class="inner{role_cls}">{inner}</div></div>')
    if isinstance(view, VMark):
        whole, head = _split_hl(view.hl)
        inner = "".join(_view_html(c) for c in view.children)
        role_cls = " in-role" if view.in_role else ""
        comment = f'<div class="cline">// {_esc(view.comment)}</div>' if view.comment else ""
        return (f'<div class="mark{whole}" title="Mark {_esc(view.number)}"><div class="marked{role_cls}">'
                f'{comment}{inner}</div><div class="bracket{head}"></div><div class="num{head}">{_esc(view.number)}</div></div>')
    if isinstance(view, VEnds):
        return (f'<div class="ends{_hl_cls(view.hl)}"><span class="endtext">{_runs_html(view.runs)}'
                f'{_comment_html(view.comment)}</span></div>')
    if isinstance(view, VSpec):
        label = f'<span class="fraglabel">{view.label}</span>' if view.label else ""
        comment = _comment_html(view.comment)
        body_cls = " in-role" if view.label == "StrFrag" else ""
        inner = "".join(_view_html(c) for c in view.children)
        whole, head = _split_hl(view.hl)
        return (f'<section class="spec{whole}"><div class="title"><span class="titletext{head}">{label}'
                f'{_runs_html(view.title)}</span>'
                f'<span style="font-weight:normal;font-size:{FONT_SIZE}px">{comment}</span></div>'
                f'<div class="body{body_cls}">{inner}</div></section>')
    return ""


def render_views_html(views: list[Any]) -> str:
    """The HTML fragment (no page around it) for a list of view nodes."""
    return "".join(_view_html(v) for v in views)


def render_html(file_ast: Any, title: str | None = None, *, highlights: dict[int, str] | None = None) -> str:
    """A self-contained HTML page (inline CSS, no external resources) showing every spec of the file."""
    views = build_view(file_ast, highlights)
    heading = f'<h1 class="page-title">{_esc(title)}</h1>' if title else ""
    page_title = _esc(title or _default_title(file_ast))
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{page_title}</title><style>{CSS}</style></head>\n"
        f'<body><div class="acdl">{heading}{render_views_html(views)}</div></body></html>\n'
    )


def _default_title(file_ast: Any) -> str:
    names = [str(i.name) for i in getattr(file_ast, "items", None) or [] if hasattr(i, "name")]
    return ", ".join(names) or "ACDL"


# ---------------------------------------------------------------------------
# SVG back end: a measured box model. Monospace text, so a run's width is chars x advance.
# ---------------------------------------------------------------------------


def _run_width(run: Run, advance: float = ADVANCE) -> float:
    w = len(run.text) * advance
    if run.cls.startswith("ns-"):
        w += 2 * NS_PAD + 1
    return w


def _runs_width(runs: list[Run], advance: float = ADVANCE) -> float:
    return sum(_run_width(r, advance) for r in runs)


def _part_width(part: VChip | Run) -> float:
    if isinstance(part, VChip):
        return _runs_width(part.runs) + 2 * CHIP_PAD
    return _run_width(part)


def _comment_width(text: str | None) -> float:
    return COMMENT_GAP + (len(text) + 3) * ADVANCE if text else 0.0


def _role_children(view: VRole) -> list[Any]:
    children = list(view.children)
    if view.comment:
        if len(children) == 1 and isinstance(children[0], VLine) and not children[0].comment:
            children = [VLine(children[0].parts, view.comment, children[0].hl)]
        else:
            children.insert(0, VComment(view.comment))
    return children


def _mark_children(view: VMark) -> list[Any]:
    return ([VComment(view.comment)] if view.comment else []) + list(view.children)


def _mark_extra(view: VMark) -> float:
    return MARK_GAP + MARK_W + MARK_NUM_GAP + len(view.number) * ADVANCE + 2


def _gap_before(children: list[Any], index: int, gap: float) -> float:
    """Stacked items are `gap` apart, but consecutive standalone comments read as one block."""
    if index == 0:
        return 0.0
    if isinstance(children[index], VComment) and isinstance(children[index - 1], VComment):
        return 0.0
    return gap


def _stack_size(children: list[Any], gap: float) -> tuple[float, float]:
    if not children:
        return 0.0, 0.0
    sizes = [measure(c) for c in children]
    height = sum(h for _, h in sizes) + sum(_gap_before(children, i, gap) for i in range(len(children)))
    return max(w for w, _ in sizes), height


def measure(view: Any) -> tuple[float, float]:
    """The natural (minimum) width and the height of a view node."""
    if isinstance(view, VLine):
        return sum(_part_width(p) for p in view.parts) + _comment_width(view.comment), LINE_H
    if isinstance(view, VComment):
        return (len(view.text) + 3) * ADVANCE, LINE_H
    if isinstance(view, VRole):
        w, h = _stack_size(_role_children(view), GAP_ROLE)
        return max(ROLE_MIN_W, RULE_W + TAG_W + 2 + w + ROLE_PAD_X), max(h, LINE_H) + 2 * ROLE_PAD_Y
    if isinstance(view, VBlock):
        w, h = _stack_size(view.children, GAP_ROLE if view.in_role else GAP_TOP)
        head_w = max([_runs_width(view.header) + _comment_width(view.comment)]
                     + [_runs_width(line) for line in view.more])
        return max(head_w, INDENT + w), LINE_H * (1 + len(view.more)) + h + 2 * BLOCK_PAD_Y
    if isinstance(view, VMark):
        w, h = _stack_size(_mark_children(view), GAP_ROLE if view.in_role else GAP_TOP)
        return w + _mark_extra(view), h
    if isinstance(view, VEnds):
        return 16 + 8 + _runs_width(view.runs) + _comment_width(view.comment) + 8 + 16, LINE_H
    if isinstance(view, VSpec):
        w, h = _stack_size(view.children, GAP_ROLE if view.label == "StrFrag" else GAP_TOP)
        title_w = _title_width(view)
        return max(w, title_w), TITLE_H + TITLE_GAP + h
    return 0.0, 0.0


def _title_width(view: VSpec) -> float:
    label_w = (len(view.label) * SMALL_ADVANCE + 10 + LABEL_GAP) if view.label else 0.0
    return label_w + _runs_width(view.title, TITLE_ADVANCE) + _comment_width(view.comment)


class _Svg:
    """Collects SVG elements while the layout is drawn."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def rect(self, x: float, y: float, w: float, h: float, fill: str, stroke: str | None = None, rx: float = 0,
             dash: str | None = None, stroke_w: float = 1) -> None:
        attrs = f'x="{_n(x)}" y="{_n(y)}" width="{_n(w)}" height="{_n(h)}" fill="{fill}"'
        if rx:
            attrs += f' rx="{_n(rx)}"'
        if stroke:
            attrs += f' stroke="{stroke}" stroke-width="{_n(stroke_w)}"'
        if dash:
            attrs += f' stroke-dasharray="{dash}"'
        self.items.append(f"<rect {attrs}/>")

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str, width: float = 1, dash: str | None = None) -> None:
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        self.items.append(f'<line x1="{_n(x1)}" y1="{_n(y1)}" x2="{_n(x2)}" y2="{_n(y2)}" stroke="{stroke}" '
                          f'stroke-width="{_n(width)}"{extra}/>')

    def path(self, d: str, stroke: str, width: float = 2) -> None:
        self.items.append(f'<path d="{d}" fill="none" stroke="{stroke}" stroke-width="{_n(width)}"/>')

    def text(self, x: float, baseline: float, runs: list[Run], cls: str = "", default_fill: str = TEXT,
             advance: float = ADVANCE, css_class: str | None = None) -> float:
        """Draw runs as one <text> with a tspan per run; namespace runs get a pill behind them. Returns the width."""
        spans = []
        cx = x
        for r in runs:
            if not r.text:
                continue
            if r.cls.startswith("ns-"):
                fg, bg = NS_COLOURS.get(r.cls[3:], NS_COLOURS["other"])
                self.rect(cx, baseline - 12, len(r.text) * advance + 2 * NS_PAD, 16, bg, rx=3)
                spans.append(f'<tspan x="{_n(cx + NS_PAD)}" fill="{fg}" font-weight="bold">{_esc(r.text)}</tspan>')
                cx += _run_width(r, advance)
                continue
            style = _tspan_style(r.cls, default_fill, cls)
            spans.append(f'<tspan x="{_n(cx)}"{style}>{_esc(r.text)}</tspan>')
            cx += len(r.text) * advance
        klass = f' class="{css_class}"' if css_class else ""
        self.items.append(f'<text y="{_n(baseline)}"{klass} xml:space="preserve">{"".join(spans)}</text>')
        return cx - x

    def raw(self, text: str) -> None:
        self.items.append(text)


def _tspan_style(run_cls: str, default_fill: str, context: str) -> str:
    if context == "tmpl":
        fill = "#ffffff" if run_cls in ("tm",) else "#e2e8f0"
        weight = ' font-weight="bold"' if run_cls == "tm" else ""
        return f' fill="{fill}"{weight}'
    if context == "ends":
        return f' fill="{MARK_COLOUR}"' + (' font-weight="bold"' if run_cls == "kw" else "")
    colour = RUN_COLOURS.get(run_cls) or default_fill
    attrs = f' fill="{colour}"' if colour != TEXT else ""
    if run_cls == "kw":
        attrs += ' font-weight="bold"'
    if run_cls == "fn":
        attrs += ' font-style="italic"'
    if run_cls == "title":
        attrs += ' font-weight="bold"'
    return attrs


def _n(value: float) -> str:
    """Compact, stable number formatting for SVG attributes."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return text if text not in ("-0", "") else "0"


CHIP_STYLES = {
    "tmpl": ("#334155", "#334155", None),
    "func": ("#f0fdfa", "#0f766e", None),
    "var": ("#ffffff", "#cbd5e1", None),
    "ref": ("#faf5ff", "#7c3aed", "3 2"),
    "frag": ("#fef3c7", "#b45309", None),
    "lit": ("#ffffff", "#e5e7eb", None),
    "expr": ("#ffffff", "#e5e7eb", None),
    "kw": ("#ffffff", "#e5e7eb", None),
}


def _draw_comment_inline(svg: _Svg, x: float, y: float, text: str | None) -> None:
    if text:
        svg.raw(f'<text x="{_n(x + COMMENT_GAP)}" y="{_n(y + 14)}" fill="{MUTED}" font-style="italic" '
                f'xml:space="preserve">// {_esc(text)}</text>')


def _draw_line(svg: _Svg, view: VLine, x: float, y: float) -> None:
    cx = x
    for part in view.parts:
        if isinstance(part, VChip):
            w = _part_width(part)
            fill, stroke, dash = CHIP_STYLES.get(part.kind, CHIP_STYLES["expr"])
            svg.rect(cx + 0.5, y + 0.5, w - 1, LINE_H - 1, fill, stroke, rx=4, dash=dash)
            svg.text(cx + CHIP_PAD, y + 14, part.runs, cls=part.kind, css_class=part.kind,
                     default_fill="#ffffff" if part.kind == "tmpl" else TEXT)
            cx += w
        else:
            cx += svg.text(cx, y + 14, [part])
    _draw_comment_inline(svg, cx, y, view.comment)


def _draw_stack(svg: _Svg, children: list[Any], x: float, y: float, width: float, gap: float) -> float:
    for i, child in enumerate(children):
        y += _gap_before(children, i, gap)
        _, h = measure(child)
        draw(svg, child, x, y, width)
        y += h
    return y


def draw(svg: _Svg, view: Any, x: float, y: float, width: float) -> None:
    """Draw a view node with its top-left corner at (x, y) in a column `width` wide."""
    if isinstance(view, VLine):
        _draw_line(svg, view, x, y)
    elif isinstance(view, VComment):
        svg.raw(f'<text x="{_n(x)}" y="{_n(y + 14)}" fill="{MUTED}" font-style="italic" xml:space="preserve">'
                f"// {_esc(view.text)}</text>")
    elif isinstance(view, VRole):
        _, h = measure(view)
        colour, bg = ROLE_COLOURS.get(view.role, ROLE_COLOURS["N"])
        svg.raw(f'<g class="role role-{_esc(view.role)}"><title>{ROLE_NAMES.get(view.role, view.role)}</title>')
        svg.rect(x, y, width, h, bg, rx=2)
        svg.rect(x, y, RULE_W, h, colour)
        tag_x = x + RULE_W + (TAG_W - 18) / 2
        svg.rect(tag_x, y + ROLE_PAD_Y + 1, 18, 18, colour, rx=3)
        svg.raw(f'<text x="{_n(tag_x + 9)}" y="{_n(y + ROLE_PAD_Y + 14)}" fill="#ffffff" font-weight="bold" '
                f'font-size="12" text-anchor="middle">{_esc(view.role)}</text>')
        inner_x = x + RULE_W + TAG_W + 2
        _draw_stack(svg, _role_children(view), inner_x, y + ROLE_PAD_Y, x + width - ROLE_PAD_X - inner_x, GAP_ROLE)
        svg.raw("</g>")
    elif isinstance(view, VBlock):
        _, h = measure(view)
        svg.raw('<g class="block">')
        w = svg.text(x, y + 14, view.header)
        _draw_comment_inline(svg, x + w, y, view.comment)
        for i, line in enumerate(view.more, start=1):
            svg.text(x, y + i * LINE_H + 14, line)
        head_h = LINE_H * (1 + len(view.more))
        svg.line(x + GUIDE_X, y + head_h, x + GUIDE_X, y + h, GUIDE_COLOUR, 1.5)
        _draw_stack(svg, view.children, x + INDENT, y + head_h + BLOCK_PAD_Y, width - INDENT,
                    GAP_ROLE if view.in_role else GAP_TOP)
        svg.raw("</g>")
    elif isinstance(view, VMark):
        _, h = measure(view)
        extra = _mark_extra(view)
        inner_w = width - extra
        svg.raw(f'<g class="mark"><title>Mark {_esc(view.number)}</title>')
        _draw_stack(svg, _mark_children(view), x, y, inner_w, GAP_ROLE if view.in_role else GAP_TOP)
        bx = x + inner_w + MARK_GAP
        svg.path(f"M{_n(bx)} {_n(y + 1)} H{_n(bx + MARK_W - 1)} V{_n(y + h - 1)} H{_n(bx)}", MARK_COLOUR, 2)
        svg.raw(f'<text x="{_n(bx + MARK_W + MARK_NUM_GAP)}" y="{_n(y + h / 2 + 5)}" fill="{MARK_COLOUR}" '
                f'font-weight="bold">{_esc(view.number)}</text>')
        svg.raw("</g>")
    elif isinstance(view, VEnds):
        mid = y + LINE_H / 2
        svg.line(x, mid, x + 16, mid, MARK_COLOUR, 2, dash="5 3")
        tx = x + 16 + 8
        w = svg.text(tx, y + 14, view.runs, cls="ends")
        end_text = tx + w
        if view.comment:
            _draw_comment_inline(svg, end_text, y, view.comment)
            end_text += _comment_width(view.comment)
        svg.line(end_text + 8, mid, max(x + width, end_text + 24), mid, MARK_COLOUR, 2, dash="5 3")
    elif isinstance(view, VSpec):
        tx = x
        if view.label:
            lw = len(view.label) * SMALL_ADVANCE + 10
            svg.rect(tx, y + 3, lw, 18, "#475569", rx=3)
            svg.raw(f'<text x="{_n(tx + 5)}" y="{_n(y + 16)}" fill="#ffffff" font-size="{SMALL_SIZE}" '
                    f'font-weight="bold">{_esc(view.label)}</text>')
            tx += lw + LABEL_GAP
        svg.raw(f'<g font-size="{TITLE_SIZE}" font-weight="bold">')
        w = svg.text(tx, y + 17, view.title, advance=TITLE_ADVANCE, css_class="title")
        svg.raw("</g>")
        if view.comment:
            _draw_comment_inline(svg, tx + w, y + 3, view.comment)
        _draw_stack(svg, view.children, x, y + TITLE_H + TITLE_GAP, width,
                    GAP_ROLE if view.label == "StrFrag" else GAP_TOP)


def _layout_size(views: list[Any]) -> tuple[float, float, list[tuple[Any, float, float]]]:
    """Width and height of the whole drawing, and the (view, width, height) of each top-level view."""
    placed = []
    width = 0.0
    height = 0.0
    for i, v in enumerate(views):
        w, h = measure(v)
        placed.append((v, w, h))
        width = max(width, w)
        if i and (isinstance(v, VSpec) or isinstance(placed[-2][0], VSpec)):
            height += SPEC_GAP
        height += h
    return width, height, placed


def measure_file(file_ast: Any) -> tuple[int, int]:
    """The pixel size (width, height) of the rendered file, margins included."""
    width, height, _ = _layout_size(build_view(file_ast))
    return int(width + 2 * MARGIN + 0.999), int(height + 2 * MARGIN + 0.999)


def render_svg(file_ast: Any) -> str:
    """A standalone SVG of every spec of the file, with its text as real (selectable) <text> elements."""
    views = build_view(file_ast)
    width, height, placed = _layout_size(views)
    svg = _Svg()
    y = float(MARGIN)
    for i, (view, w, h) in enumerate(placed):
        if i and (isinstance(view, VSpec) or isinstance(placed[i - 1][0], VSpec)):
            y += SPEC_GAP
        draw(svg, view, float(MARGIN), y, w)
        y += h
    total_w = width + 2 * MARGIN
    total_h = height + 2 * MARGIN
    title = _esc(_default_title(file_ast))
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_n(total_w)}" height="{_n(total_h)}" '
        f'viewBox="0 0 {_n(total_w)} {_n(total_h)}" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" '
        f'font-size="{FONT_SIZE}" fill="{TEXT}">\n<title>{title}</title>\n'
        f'<rect width="100%" height="100%" fill="#ffffff"/>\n'
    )
    body = "\n".join(item for item in svg.items if item)
    return head + body + "\n</svg>\n"


# ---------------------------------------------------------------------------
# Export: .html / .svg written directly; .png / .pdf through headless Chromium (or cairosvg).
# ---------------------------------------------------------------------------


class ExportError(Exception):
    """An export could not be made (unknown suffix, converter missing, converter failed)."""


CHROMIUM_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_ENV = "FRONTDESK_CHROMIUM"
INSTALL_HINT = (
    "PNG and PDF export need a headless Chromium: install it with `apt-get install -y chromium` "
    f"(Debian/Ubuntu), or point {CHROMIUM_ENV} at a Chromium/Chrome binary; "
    "alternatively `pip install cairosvg` (needs the system cairo library) is used when present. "
    "HTML and SVG export need nothing."
)


def chromium_path() -> str | None:
    """The headless-capable Chromium binary to use, or None when there is none."""
    configured = os.environ.get(CHROMIUM_ENV)
    if configured:
        return configured if Path(configured).exists() or shutil.which(configured) else None
    for name in CHROMIUM_CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


def _chromium_args(binary: str, profile: str, scale: float = 1.0) -> list[str]:
    return [
        binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-extensions", "--hide-scrollbars", f"--force-device-scale-factor={_n(scale)}",
        f"--user-data-dir={profile}",
    ]


def _run_chromium(args: list[str], output: Path) -> None:
    try:
        proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    except subprocess.TimeoutExpired as exc:
        raise ExportError(f"Chromium did not finish within {exc.timeout:.0f}s while writing {output}") from None
    except OSError as exc:
        raise ExportError(f"could not start Chromium ({exc}). {INSTALL_HINT}") from None
    if not output.exists() or output.stat().st_size == 0:
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        raise ExportError(f"Chromium failed to write {output} (exit {proc.returncode}): " + " | ".join(tail))


def _export_with_chromium(file_ast: Any, path: Path, kind: str, binary: str, scale: float = 1.0) -> None:
    width, height = measure_file(file_ast)
    # The page is laid out by the browser; the box model above predicts its size. A little slack
    # absorbs font rounding; the PDF page is sized by @page so it never splits.
    win_w, win_h = width + 24, height + 24
    page = render_html(file_ast)
    page = page.replace(
        "</style>",
        f"@page {{ size: {win_w}px {win_h}px; margin: 0; }} html, body {{ width: {win_w}px; }}</style>",
        1,
    )
    with tempfile.TemporaryDirectory(prefix="acdl-render-", ignore_cleanup_errors=True) as tmp:
        tmp_path = Path(tmp)
        src = tmp_path / "spec.html"
        src.write_text(page, encoding="utf-8")
        out = tmp_path / ("out." + kind)
        args = _chromium_args(binary, str(tmp_path / "profile"), scale if kind == "png" else 1.0)
        if kind == "png":
            args += [f"--screenshot={out}", f"--window-size={win_w},{win_h}"]
        else:
            args += [f"--print-to-pdf={out}", "--no-pdf-header-footer", "--print-to-pdf-no-header",
                     f"--window-size={win_w},{win_h}"]
        args.append(src.as_uri())
        _run_chromium(args, out)
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out, path)


def _cairosvg() -> Any | None:
    try:
        import cairosvg  # type: ignore[import-not-found]
    except Exception:  # ImportError, or OSError when the cairo system library is missing
        return None
    return cairosvg


def _export_with_cairosvg(file_ast: Any, path: Path, kind: str, cairosvg: Any, scale: float = 1.0) -> None:
    svg = render_svg(file_ast).encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        if kind == "png":
            cairosvg.svg2png(bytestring=svg, write_to=str(path), scale=scale)
        else:
            cairosvg.svg2pdf(bytestring=svg, write_to=str(path))
    except Exception as exc:  # cairosvg raises many kinds; the user gets one typed error
        raise ExportError(f"cairosvg failed to write {path}: {exc}") from None


def export(file_ast: Any, path: Path, *, converter: str | None = None, scale: float = 1.0) -> Path:
    """Write the rendering to `path`, choosing the format by suffix: .html, .svg, .png or .pdf.

    PNG/PDF use headless Chromium (the HTML page, the reference look); `converter="cairosvg"` or
    a missing Chromium falls back to cairosvg on the SVG. `scale` multiplies PNG pixels (2 for
    high-DPI pictures). Raises ExportError naming what to install."""
    if not 0.25 <= scale <= 8:
        raise ExportError(f"scale {scale} is out of range: use a value from 0.25 to 8")
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".html", ".htm"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render_html(file_ast), encoding="utf-8")
        return path
    if suffix == ".svg":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render_svg(file_ast), encoding="utf-8")
        return path
    if suffix not in (".png", ".pdf"):
        raise ExportError(f"cannot export to '{path.name}': use a .html, .svg, .png or .pdf file name")
    kind = suffix[1:]
    if converter not in (None, "chromium", "cairosvg"):
        raise ExportError(f"unknown converter {converter!r}: use 'chromium' or 'cairosvg'")
    if converter in (None, "chromium"):
        binary = chromium_path()
        if binary:
            _export_with_chromium(file_ast, path, kind, binary, scale)
            return path
        if converter == "chromium":
            raise ExportError(f"no Chromium found for {kind.upper()} export. {INSTALL_HINT}")
    cairo = _cairosvg()
    if cairo is not None:
        _export_with_cairosvg(file_ast, path, kind, cairo, scale)
        return path
    raise ExportError(f"no converter found for {kind.upper()} export. {INSTALL_HINT}")
