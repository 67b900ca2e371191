"""Structural diff of two ACDL files: added, removed, moved and changed elements, as text, JSON or side-by-side HTML."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from typing import Any

from frontdesk.acdl.render import (
    CSS,
    _esc,
    _header_runs,
    build_view,
    element_label,
    element_text,
    expr_text,
    render_views_html,
)
from frontdesk.textutil import cut

__all__ = ["Change", "Diff", "diff_acdl", "render_diff_html", "CHANGE_KINDS"]

CHANGE_KINDS = ("removed", "added", "moved", "changed")


@dataclass
class Change:
    """One difference. `path` is where it is in B (in A for removed); `old_path` is where it was in A."""

    kind: str
    path: str
    before: str | None = None
    after: str | None = None
    old_path: str | None = None
    old_node: Any = field(default=None, repr=False, compare=False)
    new_node: Any = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "path": self.path,
            "old_path": self.old_path,
            "before": self.before,
            "after": self.after,
        }


@dataclass
class Diff:
    """The structural differences between file A and file B, in document order."""

    changes: list[Change] = field(default_factory=list)
    a_name: str = "a"
    b_name: str = "b"

    @property
    def is_empty(self) -> bool:
        return not self.changes

    def of_kind(self, kind: str) -> list[Change]:
        return [c for c in self.changes if c.kind == kind]

    def summary(self) -> dict[str, int]:
        return {kind: len(self.of_kind(kind)) for kind in CHANGE_KINDS}

    def to_text(self) -> str:
        """A readable unified-style listing: `-` removed, `+` added, `>` moved, `~` changed."""
        lines = [f"--- {self.a_name}", f"+++ {self.b_name}"]
        if self.is_empty:
            lines.append("  (no structural differences)")
            return "\n".join(lines) + "\n"
        for c in self.changes:
            before, after = _short(c.before), _short(c.after)
            if c.kind == "removed":
                lines.append(f"- removed  {c.path}: {before}")
            elif c.kind == "added":
                lines.append(f"+ added    {c.path}: {after}")
            elif c.kind == "moved":
                lines.append(f"> moved    {c.old_path} -> {c.path}: {after}")
            else:
                where = c.path if c.old_path in (None, c.path) else f"{c.old_path} -> {c.path}"
                lines.append(f"~ changed  {where}: {before}  =>  {after}")
        counts = ", ".join(f"{n} {kind}" for kind, n in self.summary().items() if n)
        lines.append(f"  ({counts})")
        return "\n".join(lines) + "\n"

    def to_json(self) -> dict[str, Any]:
        """`{"a", "b", "equal", "summary": {kind: n}, "changes": [{kind, path, old_path, before, after}]}`."""
        return {
            "a": self.a_name,
            "b": self.b_name,
            "equal": self.is_empty,
            "summary": self.summary(),
            "changes": [c.to_json() for c in self.changes],
        }

    def to_json_text(self) -> str:
        return json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n"


TEXT_WIDTH = 100


def _short(text: str | None) -> str:
    """Long element prints are cut in the text listing (the JSON keeps them whole)."""
    return cut(text or "", TEXT_WIDTH, "...")


# ---------------------------------------------------------------------------
# Sequence alignment
# ---------------------------------------------------------------------------


def _kind(node: Any) -> str:
    return type(node).__name__


CONTAINERS = ("RoleMessage", "ForEach", "If", "Switch", "Mark")


def _head_text(node: Any) -> str:
    """The element without its body: what a container's own change is judged on."""
    kind = _kind(node)
    if kind == "RoleMessage":
        return f"{node.role}:"
    if kind == "ForEach":
        return "".join(r.text for r in _header_runs("ForEach", node))
    if kind == "Mark":
        return f"Mark {'?' if node.number is None else node.number}"
    if kind == "Switch":
        return f"Switch {expr_text(node.expr)}"
    if kind == "If":
        return "If"
    return element_text(node)


def _elements(body: list[Any] | None) -> list[Any]:
    return [e for e in body or [] if _kind(e) != "Comment"]


def _segments(elements: list[Any]) -> list[str]:
    """Path segments of sibling elements: `U[3]` (position among siblings) for messages and content;
    control constructs by their header (`ForEach(@t)`, `Mark(2)`), with a position only when ambiguous."""
    labels = [element_label(e) for e in elements]
    out = []
    for pos, (element, label) in enumerate(zip(elements, labels), start=1):
        if _kind(element) in ("ForEach", "If", "Switch", "Mark", "PromptEndsHere") and labels.count(label) == 1:
            out.append(label)
        else:
            out.append(f"{label}[{pos}]")
    return out


class _Differ:
    def __init__(self) -> None:
        self.changes: list[Change] = []

    def add(self, change: Change) -> None:
        self.changes.append(change)

    # -- bodies ------------------------------------------------------------------------------

    def bodies(self, a_body: list[Any] | None, b_body: list[Any] | None, a_prefix: str, b_prefix: str) -> None:
        a, b = _elements(a_body), _elements(b_body)
        a_seg, b_seg = _segments(a), _segments(b)
        a_keys = [element_text(e) for e in a]
        b_keys = [element_text(e) for e in b]
        # One order-preserving alignment of the two bodies that maximises the total pair weight: an
        # equal element weighs most, the same element changed (same role, same construct, similar
        # content) less. Equal pairs are unchanged, the other pairs are compared in depth.
        aligned = _best_pairs(list(range(len(a))), list(range(len(b))), a, b, a_keys, b_keys)
        anchors = [(i, j) for i, j in aligned if a_keys[i] == b_keys[j]]
        paired = [(i, j) for i, j in aligned if a_keys[i] != b_keys[j]]
        matched_a = {i for i, _ in anchors}
        matched_b = {j for _, j in anchors}
        paired_a = {i for i, _ in paired}
        paired_b = {j for _, j in paired}
        # Left over on both sides and equal: the same element at another position, moved.
        for i in range(len(a)):
            if i in matched_a or i in paired_a:
                continue
            for j in range(len(b)):
                if j not in matched_b and j not in paired_b and a_keys[i] == b_keys[j]:
                    matched_a.add(i)
                    matched_b.add(j)
                    self.add(Change("moved", f"{b_prefix}/{b_seg[j]}", a_keys[i], b_keys[j],
                                    f"{a_prefix}/{a_seg[i]}", a[i], b[j]))
                    break
        # Report in B's order, removals where they were.
        events: list[tuple[float, int, Any]] = []
        for i, j in paired:
            events.append((j, 1, ("pair", i, j)))
        for i in range(len(a)):
            if i not in matched_a and i not in paired_a:
                events.append((_position_in_b(i, anchors, paired) - 0.5, 0, ("removed", i, None)))
        for j in range(len(b)):
            if j not in matched_b and j not in paired_b:
                events.append((j, 2, ("added", None, j)))
        for _, _, (what, i, j) in sorted(events, key=lambda e: (e[0], e[1])):
            if what == "pair":
                self.element(a[i], b[j], f"{a_prefix}/{a_seg[i]}", f"{b_prefix}/{b_seg[j]}")
            elif what == "removed":
                self.add(Change("removed", f"{a_prefix}/{a_seg[i]}", a_keys[i], None, None, a[i], None))
            else:
                self.add(Change("added", f"{b_prefix}/{b_seg[j]}", None, b_keys[j], None, None, b[j]))

    # -- one pair of elements that are "the same element" --------------------------------------

    def element(self, a: Any, b: Any, a_path: str, b_path: str) -> None:
        kind = _kind(a)
        if element_text(a) == element_text(b):
            return
        # A Mark put around, or taken away from, an element: report it, then compare what is inside.
        if kind == "Mark" and _kind(b) != "Mark" and _single(a) is not None:
            inner = _single(a)
            self.add(Change("changed", b_path, _mark_summary(a, inner), element_label(b), a_path, a, None))
            self.element(inner, b, f"{a_path}/{_segments([inner])[0]}", b_path)
            return
        if _kind(b) == "Mark" and kind != "Mark" and _single(b) is not None:
            inner = _single(b)
            self.add(Change("changed", b_path, element_label(a), _mark_summary(b, inner), a_path, None, b))
            self.element(a, inner, a_path, f"{b_path}/{_segments([inner])[0]}")
            return
        if kind not in CONTAINERS or _kind(b) != kind:
            self.add(Change("changed", b_path, element_text(a), element_text(b), a_path, a, b))
            return
        if kind == "RoleMessage" and a.role != b.role:
            self.add(Change("changed", b_path, element_text(a), element_text(b), a_path, a, b))
        elif _head_text(a) != _head_text(b):
            self.add(Change("changed", b_path, _head_text(a), _head_text(b), a_path, a, b))
        if kind == "If":
            self.if_chain(a, b, a_path, b_path)
        elif kind == "Switch":
            self.switch(a, b, a_path, b_path)
        else:
            self.bodies(a.body, b.body, a_path, b_path)

    def if_chain(self, a: Any, b: Any, a_path: str, b_path: str) -> None:
        a_parts = _if_parts(a)
        b_parts = _if_parts(b)
        for k in range(max(len(a_parts), len(b_parts))):
            pa = a_parts[k] if k < len(a_parts) else None
            pb = b_parts[k] if k < len(b_parts) else None
            if pa and pb:
                seg_a, seg_b = f"{a_path}/{pa[0]}", f"{b_path}/{pb[0]}"
                if pa[1] != pb[1]:
                    self.add(Change("changed", seg_b, pa[1], pb[1], seg_a, pa[3], pb[3]))
                self.bodies(pa[2], pb[2], seg_a, seg_b)
            elif pa:
                self.add(Change("removed", f"{a_path}/{pa[0]}", pa[1], None, None, pa[3], None))
            elif pb:
                self.add(Change("added", f"{b_path}/{pb[0]}", None, pb[1], None, None, pb[3]))

    def switch(self, a: Any, b: Any, a_path: str, b_path: str) -> None:
        a_cases = {_case_key(c): c for c in a.cases}
        b_cases = {_case_key(c): c for c in b.cases}
        for key, case in a_cases.items():
            if key not in b_cases:
                self.add(Change("removed", f"{a_path}/Case({key})", f"Case {key}", None, None, case, None))
        for key, case in b_cases.items():
            if key in a_cases:
                self.bodies(a_cases[key].body, case.body, f"{a_path}/Case({key})", f"{b_path}/Case({key})")
            else:
                self.add(Change("added", f"{b_path}/Case({key})", None, f"Case {key}", None, None, case))
        if a.default is not None or b.default is not None:
            if a.default is None:
                self.add(Change("added", f"{b_path}/Default", None, "Default", None, None, b))
            elif b.default is None:
                self.add(Change("removed", f"{a_path}/Default", "Default", None, None, a, None))
            else:
                self.bodies(a.default, b.default, f"{a_path}/Default", f"{b_path}/Default")


def _mark_summary(mark: Any, inner: Any) -> str:
    number = "?" if mark.number is None else mark.number
    return f"Mark {number} {{ {element_label(inner)} }}"


def _single(mark: Any) -> Any | None:
    """The only element inside a Mark, or None when it holds several (or none)."""
    inner = _elements(getattr(mark, "body", None))
    return inner[0] if len(inner) == 1 else None


def _similarity(a: Any, b: Any) -> float:
    return difflib.SequenceMatcher(None, element_text(a), element_text(b), autojunk=False).ratio()


def _pair_weight(a: Any, b: Any) -> float:
    """How strongly A's element `a` and B's element `b` look like one element changed (0: not at all)."""
    ka, kb = _kind(a), _kind(b)
    if ka == "Mark" and kb != "Mark":
        inner = _single(a)
        return max(0.0, _pair_weight(inner, b) - 0.05) if inner is not None else 0.0
    if kb == "Mark" and ka != "Mark":
        inner = _single(b)
        return max(0.0, _pair_weight(a, inner) - 0.05) if inner is not None else 0.0
    if ka != kb:
        return 0.0
    sim = _similarity(a, b)
    if ka == "RoleMessage":
        if a.role == b.role:
            return 1.0 + sim
        body_sim = difflib.SequenceMatcher(
            None, " ".join(element_text(e) for e in _elements(a.body)),
            " ".join(element_text(e) for e in _elements(b.body)), autojunk=False).ratio()
        return body_sim if body_sim >= 0.8 else 0.0
    if ka in CONTAINERS:
        return 1.0 + sim
    if element_label(a) == element_label(b):
        return 1.0 + sim
    return sim if sim >= 0.34 else 0.0


EQUAL_WEIGHT = 3.0  # an equal pair outweighs one changed pair (at most 2) but not two


def _best_pairs(left: list[int], right: list[int], a: list[Any], b: list[Any],
                a_keys: list[str], b_keys: list[str]) -> list[tuple[int, int]]:
    """An order-preserving pairing of A's and B's elements that maximises the total pair weight."""
    if not left or not right:
        return []
    n, m = len(left), len(right)
    weight = [[EQUAL_WEIGHT if a_keys[left[x]] == b_keys[right[y]] else _pair_weight(a[left[x]], b[right[y]])
               for y in range(m)] for x in range(n)]
    best = [[0.0] * (m + 1) for _ in range(n + 1)]
    for x in range(n - 1, -1, -1):
        for y in range(m - 1, -1, -1):
            take = weight[x][y] + best[x + 1][y + 1] if weight[x][y] > 0 else 0.0
            best[x][y] = max(best[x + 1][y], best[x][y + 1], take)
    pairs = []
    x = y = 0
    while x < n and y < m:
        if weight[x][y] > 0 and best[x][y] == weight[x][y] + best[x + 1][y + 1]:
            pairs.append((left[x], right[y]))
            x += 1
            y += 1
        elif best[x][y] == best[x + 1][y]:
            x += 1
        else:
            y += 1
    return pairs


def _position_in_b(i: int, anchors: list[tuple[int, int]], paired: list[tuple[int, int]]) -> float:
    """Where A's element i would sit in B's order: just after the last anchor or pair before it."""
    best = -1.0
    for ai, bj in list(anchors) + list(paired):
        if ai < i:
            best = max(best, float(bj))
    return best + 1


def _if_parts(node: Any) -> list[tuple[str, str, list[Any], Any]]:
    parts = []
    for k, branch in enumerate(node.branches):
        keyword = "If" if k == 0 else "ElseIf"
        cond = expr_text(branch.condition)
        parts.append((f"{keyword}({cond})" if k == 0 else f"ElseIf[{k}]", f"{keyword} {cond}", branch.body, branch))
    if getattr(node, "else_body", None) is not None:
        parts.append(("Else", "Else", node.else_body, node))
    return parts


def _case_key(case: Any) -> str:
    return expr_text(case.value)


def _def_kind(node: Any) -> str:
    return _kind(node)


def _def_head(node: Any) -> str:
    text = element_text(node)
    return text.split(" {", 1)[0]


def diff_acdl(a: Any, b: Any, a_name: str = "a", b_name: str = "b") -> Diff:
    """The structural diff of two parsed files (`File` nodes).

    Specs and fragments are matched by name (a file with one leftover definition of a kind on each side
    pairs them: a rename). Within a body, elements are aligned by a longest common subsequence over
    their canonical text; leftovers equal to one another are moves, leftovers of the same kind between the
    same anchors are changes (role messages and control blocks are compared recursively), the rest are
    additions and removals. An element removed in one place and added, unchanged, elsewhere is a move."""
    differ = _Differ()
    a_defs = [i for i in getattr(a, "items", []) if _kind(i) in ("PromptSpec", "StrFragDef", "RolesFragDef")]
    b_defs = [i for i in getattr(b, "items", []) if _kind(i) in ("PromptSpec", "StrFragDef", "RolesFragDef")]
    a_by_name = {(_def_kind(d), str(d.name)): d for d in a_defs}
    b_by_name = {(_def_kind(d), str(d.name)): d for d in b_defs}
    pairs: dict[int, Any] = {}
    for key, d in b_by_name.items():
        if key in a_by_name:
            pairs[id(d)] = a_by_name[key]
    left_a = [d for d in a_defs if (_def_kind(d), str(d.name)) not in b_by_name]
    left_b = [d for d in b_defs if id(d) not in pairs]
    for kind in ("PromptSpec", "StrFragDef", "RolesFragDef"):
        la = [d for d in left_a if _def_kind(d) == kind]
        lb = [d for d in left_b if _def_kind(d) == kind]
        if len(la) == 1 and len(lb) == 1:
            pairs[id(lb[0])] = la[0]
            left_a.remove(la[0])
            left_b.remove(lb[0])
    for d in left_a:
        differ.add(Change("removed", str(d.name), _def_head(d), None, None, d, None))
    for d in b_defs:
        old = pairs.get(id(d))
        if old is None:
            differ.add(Change("added", str(d.name), None, _def_head(d), None, None, d))
            continue
        if _def_head(old) != _def_head(d):
            differ.add(Change("changed", str(d.name), _def_head(old), _def_head(d), str(old.name), old, d))
        differ.bodies(old.body, d.body, str(old.name), str(d.name))
    changes = _pair_cross_moves(differ.changes)
    return Diff(changes, a_name, b_name)


def _pair_cross_moves(changes: list[Change]) -> list[Change]:
    """A removal and an addition of the same element in different bodies become one move."""
    out = list(changes)
    for r in [c for c in out if c.kind == "removed" and c.before and c.old_node is not None]:
        for k, c in enumerate(out):
            if c.kind == "added" and c.after == r.before and c.new_node is not None and _kind(c.new_node) == _kind(r.old_node):
                out[k] = Change("moved", c.path, r.before, c.after, r.path, r.old_node, c.new_node)
                out.remove(r)
                break
    return out


# ---------------------------------------------------------------------------
# Side-by-side HTML
# ---------------------------------------------------------------------------

DIFF_CSS = """
.diffpage { padding: 18px; }
.diffpage h1 { font-size: 15px; margin: 0 0 8px 0; }
.legend { margin: 0 0 14px 0; display: flex; gap: 14px; font-size: 12px; }
.legend span { padding: 1px 8px; border-radius: 3px; }
.sides { display: flex; gap: 28px; align-items: flex-start; }
.side { flex: 0 0 auto; }
.side > h2 { font-size: 13px; font-weight: bold; color: #374151; margin: 0 0 10px 0; padding-bottom: 4px;
  border-bottom: 1px solid #d1d5db; }
.listing { margin-top: 22px; white-space: pre; font-size: 12px; background: #f9fafb; border: 1px solid #e5e7eb;
  padding: 10px; border-radius: 4px; }
.listing .removed { color: #b91c1c; } .listing .added { color: #15803d; }
.listing .moved { color: #1d4ed8; } .listing .changed { color: #b45309; }
"""


def _highlights(diff: Diff) -> tuple[dict[int, str], dict[int, str]]:
    left: dict[int, str] = {}
    right: dict[int, str] = {}
    for c in diff.changes:
        if c.old_node is not None and c.kind in ("removed", "moved", "changed"):
            left.setdefault(id(c.old_node), c.kind)
        if c.new_node is not None and c.kind in ("added", "moved", "changed"):
            right.setdefault(id(c.new_node), c.kind)
    return left, right


def _listing_html(diff: Diff) -> str:
    lines = []
    for line in diff.to_text().splitlines():
        cls = {"-": "removed", "+": "added", ">": "moved", "~": "changed"}.get(line[:1], "")
        if line.startswith(("---", "+++")):
            cls = ""
        lines.append(f'<span class="{cls}">{_esc(line)}</span>' if cls else _esc(line))
    return "\n".join(lines)


def render_diff_html(a: Any, b: Any, diff: Diff) -> str:
    """Both files side by side, changed elements highlighted (added green, removed red, moved blue,
    changed amber), with the text listing underneath. A self-contained HTML page."""
    left, right = _highlights(diff)
    a_html = render_views_html(build_view(a, left))
    b_html = render_views_html(build_view(b, right))
    legend = (
        '<div class="legend"><span class="hl-added">added</span><span class="hl-removed">removed</span>'
        '<span class="hl-moved">moved</span><span class="hl-changed">changed</span></div>'
    )
    status = "no structural differences" if diff.is_empty else ", ".join(
        f"{n} {k}" for k, n in diff.summary().items() if n
    )
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>ACDL diff: {_esc(diff.a_name)} vs {_esc(diff.b_name)}</title><style>{CSS}{DIFF_CSS}</style></head>\n"
        f'<body><div class="diffpage"><h1>{_esc(diff.a_name)} &rarr; {_esc(diff.b_name)}: {_esc(status)}</h1>{legend}'
        f'<div class="sides"><div class="side"><h2>A: {_esc(diff.a_name)}</h2>{a_html}</div>'
        f'<div class="side"><h2>B: {_esc(diff.b_name)}</h2>{b_html}</div></div>'
        f'<div class="listing">{_listing_html(diff)}</div></div></body></html>\n'
    )
