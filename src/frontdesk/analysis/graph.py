"""`frontdesk graph`: the agents of a program and their call/member/handoff/delegate/mention edges, and
each flow's step graph, drawn as one self-contained SVG (or a PNG through headless Chromium), with the
cycles `frontdesk check` reports (FD041/ADL041, FD044 between agents; FD045 inside a flow) in red.

The layout is a layered (Sugiyama-style) one, top to bottom, written here in plain Python (no Graphviz):
cycles are broken by turning the back edges of a depth-first search around; nodes get ranks (longest
path, two ranks per edge, so every edge has a point in the rank between its ends where its label sits);
an edge longer than one rank gets a dummy point in every rank it crosses, so it is routed between the
boxes, not through them; the order within each rank is improved by barycenter sweeps (the order with the
fewest crossings is kept); x positions are the least-squares fit of "over the middle of the neighbours"
under the constraint that boxes of a rank keep their order and do not overlap (pool-adjacent-violators).
"""

from __future__ import annotations

import itertools
import re
import shutil
import tempfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape as xml_escape

from frontdesk.ir.models import (
    AssignNode,
    BranchNode,
    InvokeNode,
    JumpNode,
    Program,
    ReasoningAgent,
    RouterAgent,
    StepGraph,
)

from .agentgraph import AgentEdge, agent_graph, clip, step_text
from .codes import analysis_codes_for
from .lint import FLOW_LOOP, HANDOVER_CYCLE, agent_cycles, flow_loops
from .reachability import successors

# ---- layout -------------------------------------------------------------------------------------------

Point = tuple[float, float]


@dataclass
class Box:
    key: str
    width: float
    height: float
    dummy: bool = False
    anchor: float = 0.0  # x where an edge goes through a dummy, from the dummy's centre
    label: int | None = None  # the edge whose label this dummy holds
    x: float = 0.0  # centre
    y: float = 0.0  # centre
    rank: int = 0


@dataclass
class Route:
    points: list[Point]  # from the edge's source to its target, as given
    reversed: bool  # drawn against the layout's direction (a back edge)
    label_at: Point | None = None  # left end, vertical middle, of the label's room


@dataclass
class Layout:
    boxes: dict[str, Box]  # the given nodes, placed
    routes: dict[int, Route]  # edge index -> its route (self-loops have none)
    self_loops: list[int] = field(default_factory=list)
    width: float = 0.0
    height: float = 0.0


def _isotonic(values: list[float], weights: list[float]) -> list[float]:
    """The non-decreasing sequence nearest to `values` in weighted least squares."""
    blocks: list[list[float]] = []  # [value, weight, count]
    for value, weight in zip(values, weights):
        blocks.append([value, weight, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            v2, w2, n2 = blocks.pop()
            v1, w1, n1 = blocks.pop()
            blocks.append([(v1 * w1 + v2 * w2) / (w1 + w2), w1 + w2, n1 + n2])
    fitted: list[float] = []
    for value, _, count in blocks:
        fitted.extend([value] * int(count))
    return fitted


def layered_layout(nodes: dict[str, tuple[float, float]], edges: list[tuple[str, str]],
                   labels: dict[int, tuple[float, float]] | None = None, *, gap_x: float = 26.0,
                   gap_y: float = 14.0, self_loop_room: float = 34.0) -> Layout:
    """Place `nodes` (key -> width, height; the first is put on top) and route `edges` (source, target;
    an edge index keys `labels`, the width and height of its label's room)."""
    labels = labels or {}
    order = list(nodes)
    out: dict[str, list[tuple[str, int]]] = {n: [] for n in order}
    has_pred: set[str] = set()
    self_loops = []
    for index, (source, target) in enumerate(edges):
        if source == target:
            self_loops.append(index)
        else:
            out[source].append((target, index))
            has_pred.add(target)

    # 1. break cycles: back edges of a depth-first search (the first node first, then the sources)
    state: dict[str, int] = {}
    turned: set[int] = set()
    discovered: dict[str, int] = {}

    def visit(start: str) -> None:
        stack = [(start, iter(out[start]))]
        state[start] = 1
        discovered[start] = len(discovered)
        while stack:
            node, successors = stack[-1]
            step = next(successors, None)
            if step is None:
                state[node] = 2
                stack.pop()
                continue
            target, index = step
            if state.get(target) == 1:
                turned.add(index)
            elif target not in state:
                state[target] = 1
                discovered[target] = len(discovered)
                stack.append((target, iter(out[target])))

    roots = order[:1] + [n for n in order[1:] if n not in has_pred] + order
    for root in roots:
        if root not in state:
            visit(root)
    dag = [((t, s, i) if i in turned else (s, t, i)) for i, (s, t) in enumerate(edges) if s != t]
    preds: dict[str, list[str]] = {n: [] for n in order}
    succs: dict[str, list[str]] = {n: [] for n in order}
    for a, b, _ in dag:
        succs[a].append(b)
        preds[b].append(a)

    # 2. ranks: longest path, two ranks per edge; sources other than the first move down to their successors
    waiting = {n: len(preds[n]) for n in order}
    ready = sorted((n for n in order if not waiting[n]), key=discovered.__getitem__)
    topo: list[str] = []
    while ready:
        node = ready.pop(0)
        topo.append(node)
        for b in succs[node]:
            waiting[b] -= 1
            if not waiting[b]:
                ready.append(b)
                ready.sort(key=discovered.__getitem__)
    rank: dict[str, int] = {}
    for node in topo:
        rank[node] = max((rank[p] + 2 for p in preds[node]), default=0)
    for node in reversed(topo):
        if node != order[0] and not preds[node] and succs[node]:
            rank[node] = max(min(rank[s] for s in succs[node]) - 2, 0)

    # 3. dummies: a point of each edge in each rank it crosses; the label sits in the one next to its source
    boxes: dict[str, Box] = {}
    for node in order:
        width, height = nodes[node]
        boxes[node] = Box(node, width, height, rank=rank[node])
    for index in self_loops:
        boxes[edges[index][0]].width += 0  # the room is kept by `room` below
    room = {n: 0.0 for n in order}
    for index in self_loops:
        room[edges[index][0]] = self_loop_room
    chains: dict[int, list[str]] = {}
    for a, b, index in dag:
        chain = [a]
        label_rank = rank[b] - 1 if index in turned else rank[a] + 1
        for r in range(rank[a] + 1, rank[b]):
            key = f"\x00{index}:{r}"
            if r == label_rank and index in labels:
                lw, lh = labels[index]
                box = Box(key, lw + 8, lh, dummy=True, anchor=-(lw + 8) / 2, label=index, rank=r)
            else:
                box = Box(key, 0.0, 0.0, dummy=True, rank=r)
            boxes[key] = box
            chain.append(key)
        chain.append(b)
        chains[index] = chain
    down: dict[str, list[str]] = {k: [] for k in boxes}
    up: dict[str, list[str]] = {k: [] for k in boxes}
    for chain in chains.values():
        for p, q in itertools.pairwise(chain):
            down[p].append(q)
            up[q].append(p)

    # 4. order within ranks: barycenter sweeps, keeping the best
    depth = max((b.rank for b in boxes.values()), default=0) + 1
    layers: list[list[str]] = [[] for _ in range(depth)]
    seed: dict[str, float] = {n: float(discovered[n]) for n in order}
    for index, chain in chains.items():
        start = seed[chain[0]]
        for key in chain[1:-1]:
            seed[key] = start + 0.5 + index * 1e-3
    for key in sorted(boxes, key=lambda k: seed[k]):
        layers[boxes[key].rank].append(key)

    def positions() -> dict[str, int]:
        return {k: i for layer in layers for i, k in enumerate(layer)}

    def crossings() -> int:
        pos = positions()
        total = 0
        for layer in layers:
            links = sorted((pos[p], pos[q]) for p in layer for q in down[p])
            for i, (a1, b1) in enumerate(links):
                for a2, b2 in links[i + 1:]:
                    if a2 > a1 and b2 < b1:
                        total += 1
        return total

    best = [list(layer) for layer in layers]
    best_count = crossings()
    for sweep in range(24):
        pos = positions()
        span = range(1, depth) if sweep % 2 == 0 else range(depth - 2, -1, -1)
        for r in span:
            near = up if sweep % 2 == 0 else down

            def weight(key: str, near: dict[str, list[str]] = near, pos: dict[str, int] = pos) -> tuple[float, int]:
                others = near[key]
                return (sum(pos[o] for o in others) / len(others) if others else pos[key], pos[key])

            layers[r].sort(key=weight)
            pos.update({k: i for i, k in enumerate(layers[r])})
        count = crossings()
        if count < best_count:
            best, best_count = [list(layer) for layer in layers], count
        if not best_count:
            break
    layers = best

    # 5. x: each box over the middle of its neighbours, boxes in order and apart
    def half(key: str) -> float:
        box = boxes[key]
        return box.width / 2 + room.get(key, 0.0)

    def gap(left: str, right: str) -> float:
        dummies = boxes[left].dummy + boxes[right].dummy
        return gap_x if dummies == 0 else (gap_x / 2 if dummies == 1 else 16.0)

    offsets: list[list[float]] = []
    for layer in layers:
        acc = [0.0]
        for left, right in itertools.pairwise(layer):
            acc.append(acc[-1] + half(left) + half(right) + gap(left, right))
        offsets.append(acc)
        for key, offset in zip(layer, acc):
            boxes[key].x = offset - acc[-1] / 2

    def edge_x(key: str) -> float:
        return boxes[key].x + boxes[key].anchor

    def settle(r: int, directions: tuple[dict[str, list[str]], ...]) -> None:
        layer = layers[r]
        if not layer:
            return
        wanted, weights = [], []
        for key, offset in zip(layer, offsets[r]):
            others = [o for near in directions for o in near[key]]
            if others:
                wanted.append(sum(edge_x(o) for o in others) / len(others) - boxes[key].anchor - offset)
                weights.append(len(others) * (4.0 if boxes[key].dummy else 1.0))
            else:
                wanted.append(boxes[key].x - offset)
                weights.append(0.05)
        for key, offset, value in zip(layer, offsets[r], _isotonic(wanted, weights)):
            boxes[key].x = value + offset

    for _ in range(12):
        for r in range(1, depth):
            settle(r, (up,))
        for r in range(depth - 2, -1, -1):
            settle(r, (down,))
    for r in range(depth):
        settle(r, (up, down))

    # a long edge is drawn straight where its dummies can all stand at one x without touching their neighbours
    where = {k: (r, i) for r, layer in enumerate(layers) for i, k in enumerate(layer)}

    def fits(key: str, x: float) -> bool:
        r, i = where[key]
        layer = layers[r]
        if i and boxes[layer[i - 1]].x + half(layer[i - 1]) + gap(layer[i - 1], key) > x - half(key) + 0.01:
            return False
        return not (i + 1 < len(layer) and
                    x + half(key) + gap(key, layer[i + 1]) > boxes[layer[i + 1]].x - half(layer[i + 1]) + 0.01)

    for chain in sorted(chains.values(), key=len, reverse=True):
        inner = [k for k in chain[1:-1] if not boxes[k].anchor]
        if len(inner) < 2:
            continue
        xs = sorted(boxes[k].x for k in inner)
        for x in (xs[len(xs) // 2], boxes[chain[0]].x, boxes[chain[-1]].x, xs[0], xs[-1]):
            if all(fits(k, x) for k in inner):
                for k in inner:
                    boxes[k].x = x
                break

    # y: ranks as bands, each as tall as its tallest box; the gap under a band grows with how far its edges go sideways
    tops: list[float] = []
    bottoms: list[float] = []
    y = 0.0
    for r, layer in enumerate(layers):
        height = max((boxes[k].height for k in layer), default=0.0)
        tops.append(y)
        bottoms.append(y + height)
        for key in layer:
            boxes[key].y = y + height / 2
        sideways = max((abs(edge_x(k) - edge_x(o)) for k in layer for o in down[k]), default=0.0)
        y += height + min(max(gap_y, sideways * 0.28), 6 * gap_y)
    left = min((boxes[k].x - half(k) for k in boxes), default=0.0)
    right = max((boxes[k].x + half(k) for k in boxes), default=0.0)
    for box in boxes.values():
        box.x -= left

    # 6. routes: ports spread along a box's bottom (out) and top (in), in the order of where the edges go
    ports: dict[tuple[str, int], float] = {}
    for key in order:
        box = boxes[key]
        for near, sign in ((down, 1), (up, -1)):
            links = sorted((edge_x(o), o) for o in near[key])
            if not links:
                continue
            spread = min(box.width * 0.75, 20.0 * (len(links) - 1))
            for i, (_, other) in enumerate(links):
                shift = -spread / 2 + (spread * i / (len(links) - 1) if len(links) > 1 else spread / 2)
                ports[(key, sign * (1 + _chain_of(chains, key, other)))] = box.x + shift
    routes: dict[int, Route] = {}
    for index, chain in chains.items():
        a, b = chain[0], chain[-1]
        start = ports.get((a, 1 + index), boxes[a].x)
        end = ports.get((b, -(1 + index)), boxes[b].x)
        points: list[Point] = [(start, boxes[a].y + boxes[a].height / 2), (start, bottoms[boxes[a].rank])]
        label_at = None
        for key in chain[1:-1]:
            box = boxes[key]
            points += [(edge_x(key), tops[box.rank]), (edge_x(key), bottoms[box.rank])]
            if box.label is not None:
                label_at = (edge_x(key) + 5, box.y)
        points += [(end, tops[boxes[b].rank]), (end, boxes[b].y - boxes[b].height / 2)]
        turned_here = index in turned
        if turned_here:
            points.reverse()
        routes[index] = Route(_dedupe(points), turned_here, label_at)
    return Layout({k: boxes[k] for k in order}, routes, self_loops, right - left, bottoms[-1] if layers else 0.0)


def _chain_of(chains: dict[int, list[str]], key: str, other: str) -> int:
    """The index of the edge whose chain links `key` and `other` (next to each other)."""
    for index, chain in chains.items():
        for p, q in itertools.pairwise(chain):
            if (p, q) in ((key, other), (other, key)):
                return index
    return -1


def _dedupe(points: list[Point]) -> list[Point]:
    kept: list[Point] = []
    for point in points:
        if not kept or abs(kept[-1][0] - point[0]) > 0.01 or abs(kept[-1][1] - point[1]) > 0.01:
            kept.append(point)
    return kept


def path_data(points: list[Point]) -> str:
    """SVG path data through `points`: straight where x stays, an S-curve with vertical ends where it moves."""
    if not points:
        return ""
    parts = [f"M{points[0][0]:.1f},{points[0][1]:.1f}"]
    for (x1, y1), (x2, y2) in itertools.pairwise(points):
        if abs(x1 - x2) < 0.5:
            parts.append(f"L{x2:.1f},{y2:.1f}")
        else:
            middle = (y1 + y2) / 2
            parts.append(f"C{x1:.1f},{middle:.1f} {x2:.1f},{middle:.1f} {x2:.1f},{y2:.1f}")
    return " ".join(parts)


# ---- drawing ------------------------------------------------------------------------------------------

FONT = "DejaVu Sans, Verdana, Arial, sans-serif"
_NARROW = set("ijlI.,:;'|!()[]{} ")
_SLIM = set("ftr\"-")
_WIDE = set("mwMW@%")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")

RED = "#d62728"
INK = "#333333"
GREY = "#9a9a9a"

# kind -> (stroke width, dash pattern, colour, what the legend says)
EDGE_STYLES: dict[str, tuple[float, str, str, str]] = {
    "call": (1.6, "", INK, "call"),
    "member": (0.9, "", "#555555", "member (router)"),
    "guardrail": (0.9, "1 2", "#2a7f7f", "guardrail"),
    "delegate": (1.4, "2 3", INK, "delegate"),
    "handoff": (1.4, "7 4", INK, "handoff"),
    "mention": (1.4, "8 3 2 3", INK, "prompt mention"),
    "exit": (1.2, "", GREY, "exit"),
    "fallback": (1.2, "4 3", GREY, "fallback"),
}
AGENT_FILL = {"flow": "#e3f0fb", "reasoning": "#fff4d6", "router": "#e4f5e1", "knowledge": "#efe6f7",
              "remote": "#eeeeee"}
STEP_FILL = {"say": "#e3f0fb", "listen": "#fff4d6", "assign": "#f2f2f2", "invoke": "#e4f5e1", "branch": "#fdebd9",
             "jump": "#f2f2f2", "return": "#ececec", "handoff": "#efe6f7", "escalate": "#fbe0e0", "start": INK}


def text_width(text: str, size: float, bold: bool = False) -> float:
    """A generous estimate of the drawn width of `text` in the drawing's font (DejaVu Sans metrics)."""
    units = 0.0
    for char in text:
        if char in _NARROW:
            units += 0.33
        elif char in _SLIM:
            units += 0.43
        elif char in _WIDE:
            units += 0.92
        elif char.isupper() or char.isdigit():
            units += 0.7 if char.isupper() else 0.64
        else:
            units += 0.62
    return units * size * (1.08 if bold else 1.0)


def esc(text: str) -> str:
    """`text` made safe for SVG text and attribute values."""
    return xml_escape(_CONTROL.sub("", text), {'"': "&quot;"})


def wrap(text: str, width: int, lines: int) -> list[str]:
    """`text` in at most `lines` lines of about `width` characters, the last cut with … if it must be."""
    text = " ".join(text.split())
    found = textwrap.wrap(text, width, break_long_words=True, break_on_hyphens=False) or [""]
    if len(found) > lines:
        found = found[:lines]
        found[-1] = clip(found[-1] + " …", width) if len(found[-1]) < width - 1 else found[-1][: width - 1] + "…"
    return found


@dataclass
class Panel:
    title: str
    width: float
    height: float
    body: list[str]  # SVG elements, in the panel's own coordinates (the title included)


@dataclass
class _Shape:
    key: str
    lines: list[tuple[str, float, bool, str]]  # text, size, bold, colour
    fill: str
    shape: str = "rect"  # rect, round, pill, hex, dot
    stroke: str = INK
    stroke_width: float = 1.0
    tooltip: str = ""
    width: float = 0.0
    height: float = 0.0

    def measure(self, padding: float = 10.0) -> tuple[float, float]:
        if self.shape == "dot":
            self.width = self.height = 14.0
        else:
            widest = max((text_width(t, s, b) for t, s, b, _ in self.lines), default=20.0)
            extra = 16.0 if self.shape == "hex" else 0.0
            self.width = max(widest + 2 * padding + extra, 44.0)
            self.height = sum(s * 1.3 for _, s, _, _ in self.lines) + 12.0
        return self.width, self.height


def _draw_shape(shape: _Shape, box: Box) -> list[str]:
    x, y, w, h = box.x - shape.width / 2, box.y - shape.height / 2, shape.width, shape.height
    stroke = f'stroke="{shape.stroke}" stroke-width="{shape.stroke_width:g}"'
    out = [f'<g class="node" data-id="{esc(shape.key)}">']
    if shape.tooltip:
        out.append(f"<title>{esc(shape.tooltip)}</title>")
    if shape.shape == "dot":
        out.append(f'<circle cx="{box.x:.1f}" cy="{box.y:.1f}" r="7" fill="{shape.fill}" {stroke}/>')
    elif shape.shape == "hex":
        d = 9.0
        pts = [(x + d, y), (x + w - d, y), (x + w, y + h / 2), (x + w - d, y + h), (x + d, y + h), (x, y + h / 2)]
        out.append(f'<polygon points="{" ".join(f"{px:.1f},{py:.1f}" for px, py in pts)}" fill="{shape.fill}" {stroke}/>')
    else:
        radius = {"rect": 2.0, "round": 8.0, "pill": h / 2}[shape.shape]
        out.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="{radius:.1f}" '
                   f'fill="{shape.fill}" {stroke}/>')
    line_y = y + 6.0
    for text, size, bold, colour in shape.lines:
        line_y += size * 1.3
        weight = ' font-weight="bold"' if bold else ""
        out.append(f'<text x="{box.x:.1f}" y="{line_y - size * 0.3:.1f}" font-size="{size:g}"{weight} '
                   f'text-anchor="middle" fill="{colour}">{esc(text)}</text>')
    out.append("</g>")
    return out


def _markers() -> str:
    parts = []
    for name, colour in (("ink", INK), ("grey", GREY), ("red", RED), ("teal", "#2a7f7f"), ("mid", "#555555")):
        parts.append(f'<marker id="arrow-{name}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
                     f'markerHeight="7" markerUnits="userSpaceOnUse" orient="auto">'
                     f'<path d="M0,0 L10,5 L0,10 z" fill="{colour}"/></marker>')
    return "<defs>" + "".join(parts) + "</defs>"


_MARKER_OF = {INK: "ink", GREY: "grey", RED: "red", "#2a7f7f": "teal", "#555555": "mid"}


def _edge(points: list[Point], width: float, dash: str, colour: str, css: str, tooltip: str) -> str:
    dashes = f' stroke-dasharray="{dash}"' if dash else ""
    return (f'<path class="edge {css}" d="{path_data(points)}" fill="none" stroke="{colour}" '
            f'stroke-width="{width:g}"{dashes} marker-end="url(#arrow-{_MARKER_OF[colour]})">'
            f"<title>{esc(tooltip)}</title></path>")


def _self_loop(box: Box, shape: _Shape, width: float, dash: str, colour: str, css: str, tooltip: str) -> str:
    right = box.x + shape.width / 2
    top, bottom = box.y - shape.height / 4, box.y + shape.height / 4
    d = f"M{right:.1f},{top:.1f} C{right + 30:.1f},{top - 12:.1f} {right + 30:.1f},{bottom + 12:.1f} {right:.1f},{bottom:.1f}"
    dashes = f' stroke-dasharray="{dash}"' if dash else ""
    return (f'<path class="edge {css}" d="{d}" fill="none" stroke="{colour}" stroke-width="{width:g}"{dashes} '
            f'marker-end="url(#arrow-{_MARKER_OF[colour]})"><title>{esc(tooltip)}</title></path>')


def _text_lines(lines: list[str], x: float, y: float, size: float, colour: str, bold: bool = False) -> tuple[list[str], float]:
    out = []
    weight = ' font-weight="bold"' if bold else ""
    for line in lines:
        y += size * 1.45
        out.append(f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size:g}"{weight} fill="{colour}">{esc(line)}</text>')
    return out, y


def _wrap_to(text: str, width: float, size: float) -> list[str]:
    chars = max(int(width / (size * 0.62)), 30)
    return textwrap.wrap(" ".join(text.split()), chars, break_long_words=True) or [""]


PAD = 16.0
TITLE = 14.0


def _panel(title: str, shapes: dict[str, _Shape], edges: list[tuple[str, str]], labels: dict[int, str],
           edge_style: list[tuple[float, str, str, str, str]], notes: list[tuple[str, str]],
           footer: tuple[str, float] | None = None, min_width: float = 360.0) -> Panel:
    """A titled panel: the shapes laid out, the edges (each with its style: width, dash, colour, css class,
    tooltip) and labels drawn, and notes (text, colour) written under it."""
    sizes = {key: shape.measure() for key, shape in shapes.items()}
    label_sizes = {i: (text_width(text, 10), 12.0) for i, text in labels.items()}
    layout = layered_layout(sizes, edges, label_sizes)
    width = max(layout.width + 2 * PAD, min_width, text_width(title, TITLE, True) + 2 * PAD)
    shift = (width - layout.width) / 2
    top = PAD + TITLE + 14
    body: list[str] = []
    drawn: list[str] = []
    for index, (source, target) in enumerate(edges):
        stroke, dash, colour, css, tip = edge_style[index]
        if index in layout.routes:
            route = layout.routes[index]
            drawn.append(_edge(route.points, stroke, dash, colour, css, tip))
            if index in labels and route.label_at is not None:
                lx, ly = route.label_at
                drawn.append(f'<text class="label" x="{lx:.1f}" y="{ly + 3.5:.1f}" font-size="10" '
                             f'fill="{RED if colour == RED else "#444444"}">{esc(labels[index])}</text>')
        else:
            drawn.append(_self_loop(layout.boxes[source], shapes[source], stroke, dash, colour, css, tip))
            if index in labels:
                box = layout.boxes[source]
                drawn.append(f'<text class="label" x="{box.x + shapes[source].width / 2 + 4:.1f}" '
                             f'y="{box.y - shapes[source].height / 2 - 3:.1f}" font-size="10" fill="#444444">'
                             f"{esc(labels[index])}</text>")
    body.append(f'<g transform="translate({shift:.1f},{top:.1f})">')
    body.extend(drawn)  # edges first: boxes are drawn over their ends
    for key, shape in shapes.items():
        body.extend(_draw_shape(shape, layout.boxes[key]))
    body.append("</g>")
    y = top + layout.height + 10
    for text, colour in notes:
        lines, y = _text_lines(_wrap_to(text, width - 2 * PAD, 11), PAD, y, 11, colour, colour == RED)
        body.extend(lines)
    if footer is not None:
        element, footer_height = footer
        body.append(f'<g transform="translate({PAD:.1f},{y + 8:.1f})">{element}</g>')
        y += 8 + footer_height
    height = y + PAD
    head = [(f'<rect x="0.5" y="0.5" width="{width - 1:.1f}" height="{height - 1:.1f}" rx="6" fill="#ffffff" '
            f'stroke="#c8c8c8"/>'),
            (f'<text x="{PAD:.1f}" y="{PAD + TITLE:.1f}" font-size="{TITLE:g}" font-weight="bold" fill="#222222">'
            f"{esc(title)}</text>")]
    return Panel(title, width, height, head + body)


# ---- the agents ---------------------------------------------------------------------------------------


def _kind_text(agent: Any) -> str:
    kind = agent.kind
    if isinstance(agent, RouterAgent):
        return "router"
    if isinstance(agent, ReasoningAgent):
        return "reasoning (llm)"
    return kind


def _legend(width: float) -> tuple[list[str], float]:
    items = [(k, *EDGE_STYLES[k]) for k in EDGE_STYLES] + [("cycle", 3.0, "", RED, "in a reported cycle")]
    out = []
    x = y = 0.0
    for _, stroke, dash, colour, text in items:
        room = 40 + text_width(text, 10) + 18
        if x and x + room > width:
            x, y = 0.0, y + 18
        dashes = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<line x1="{x:.1f}" y1="{y + 6:.1f}" x2="{x + 34:.1f}" y2="{y + 6:.1f}" stroke="{colour}" '
                   f'stroke-width="{stroke:g}"{dashes} marker-end="url(#arrow-{_MARKER_OF[colour]})"/>')
        out.append(f'<text x="{x + 40:.1f}" y="{y + 10:.1f}" font-size="10" fill="#444444">{esc(text)}</text>')
        x += room
    return out, y + 16


def _edge_key(edge: AgentEdge) -> tuple:
    span = (edge.span.file, edge.span.line, edge.span.column) if edge.span else None
    return edge.source, edge.target, edge.kind, edge.evidence, span


def agent_panel(program: Program, edges: list[AgentEdge], cycles: list[list[AgentEdge]], cycle_code: str) -> Panel:
    shapes: dict[str, _Shape] = {}
    names = list(program.agents)
    if program.entry in names:  # the entry on top
        names.remove(program.entry)
        names.insert(0, program.entry)
    for name in names:
        agent = program.agents[name]
        entry = name == program.entry
        kind = _kind_text(agent) + (" · entry" if entry else "")
        tip = f"{name} ({kind})" + (f": {agent.description}" if agent.description else "")
        shapes[name] = _Shape(name, [(clip(name, 40), 12.5, True, "#111111"), (kind, 10, False, "#555555")],
                              AGENT_FILL.get(agent.kind, "#f2f2f2"), "round",
                              "#1f4e8c" if entry else INK, 2.6 if entry else 1.0, tip)
    in_cycle = {_edge_key(edge) for cycle in cycles for edge in cycle}
    pairs: list[tuple[str, str]] = []
    styles = []
    for edge in edges:
        stroke, dash, colour, _ = EDGE_STYLES.get(edge.kind, EDGE_STYLES["call"])
        css = edge.kind
        if _edge_key(edge) in in_cycle:
            stroke, colour, css = 3.0, RED, f"{edge.kind} cycle"
        pairs.append((edge.source, edge.target))
        tip = edge.describe() + (f" — only {edge.condition}" if edge.condition else "")
        styles.append((stroke, dash, colour, css, tip))
    notes = []
    for cycle in cycles:
        path = " -> ".join([cycle[0].source] + [e.target for e in cycle])
        code = HANDOVER_CYCLE if all(e.automatic for e in cycle) else cycle_code
        notes.append((f"cycle ({code}): {path}  [" + ", ".join(e.kind for e in cycle) + "]", RED))
    if not cycles:
        notes.append(("no cycle between agents", "#2e7d32"))
    title = f"agents of {_program_name(program)} (entry: {program.entry})"
    layout_width = max(360.0, sum(s.measure()[0] for s in shapes.values()) * 0.5)
    legend, legend_height = _legend(max(layout_width, 560.0))
    return _panel(title, shapes, pairs, {}, styles, notes, ("".join(legend), legend_height), min_width=600.0)


def _program_name(program: Program) -> str:
    root = Path(program.root) if program.root else None
    return root.name if root and root.name else (program.sources[0] if program.sources else "program")


# ---- a flow's steps -----------------------------------------------------------------------------------


def _step_edges(graph: StepGraph, node_id: str, shown: dict[str, str]) -> list[tuple[str, str]]:
    """(target, label) of each way on from a step, as `successors` finds them (a step that does nothing
    replaced by the step it goes on to), the same target once."""
    node = graph.nodes[node_id]
    found: dict[str, list[str]] = {}

    def add(target: str | None, label: str) -> None:
        if target is not None and target in graph.nodes:
            names = found.setdefault(shown[target], [])
            if label and label not in names:
                names.append(label)

    if isinstance(node, BranchNode):
        for case in node.cases:
            add(case.target, clip(case.condition.source, 26))
        add(node.otherwise if node.otherwise is not None else node.next, "else")
    elif isinstance(node, JumpNode):
        add(node.target, "")
        if node.tries is not None:
            add(node.next, f"after {node.tries} tries")
    elif isinstance(node, InvokeNode) and node.target_kind == "subflow":
        add(graph.subflows.get(node.target), "call")
        add(node.next, "then")
    else:
        for target in successors(graph, node_id):
            add(target, "")
    wanted = [shown[t] for t in successors(graph, node_id)]
    return [(t, clip(" / ".join(found[t]), 30)) for t in dict.fromkeys(wanted) if t in found]


def _passing(graph: StepGraph, node_id: str) -> bool:
    """A step that does nothing and goes on (the empty `set` a compiler adds where ways join or a step begins)."""
    node = graph.nodes[node_id]
    return isinstance(node, AssignNode) and not node.assignments and node.next in graph.nodes


def _shown_as(graph: StepGraph) -> dict[str, str]:
    """For each step, the step drawn for it: itself, or the first step after a run of steps that do nothing."""
    shown: dict[str, str] = {}
    for node_id in graph.nodes:
        current, seen = node_id, set()
        while _passing(graph, current) and current not in seen:
            seen.add(current)
            current = graph.nodes[current].next  # type: ignore[assignment]
        shown[node_id] = current
    return shown


def _shown_path(path: list[str], shown: dict[str, str]) -> list[str]:
    steps: list[str] = []
    for node_id in path:
        if shown[node_id] == node_id and (not steps or steps[-1] != node_id):
            steps.append(node_id)
    return steps


def flow_panel(program: Program, name: str, graph: StepGraph, title: str) -> Panel:
    shown = _shown_as(graph)
    loops = [_shown_path(path, shown) for path in flow_loops(program, name, graph)]
    loop_links = {(a, b) for path in loops for a, b in itertools.pairwise(path)}
    loop_nodes = {n for path in loops for n in path}
    label_of: dict[str, list[str]] = {}
    for label, target in graph.labels.items():
        label_of.setdefault(shown.get(target, target), []).append(label)
    for sub, target in graph.subflows.items():
        if target is not None:
            label_of.setdefault(shown.get(target, target), []).append(f"subflow {sub}")
    shapes: dict[str, _Shape] = {"\x01start": _Shape("start", [], INK, "dot", INK, 1.0, "start")}
    for node_id, node in graph.nodes.items():
        if shown[node_id] != node_id:
            continue
        text = step_text(graph, node_id)
        lines = [(line, 11.0, False, "#111111") for line in wrap(text, 30, 3 if node.kind == "say" else 2)]
        tags = [t for t in label_of.get(node_id, []) if not (isinstance(node, JumpNode) and t == node.target_name)]
        if tags:
            lines.insert(0, (clip(", ".join(tags), 34), 9.5, True, "#1f4e8c"))
        shape = {"say": "round", "branch": "hex", "return": "pill", "jump": "pill"}.get(node.kind, "rect")
        red = node_id in loop_nodes
        where = f"line {node.span.line}: " if node.span and node.span.line else ""
        shapes[node_id] = _Shape(node_id, lines, STEP_FILL.get(node.kind, "#f2f2f2"), shape,
                                 RED if red else INK, 2.2 if red else 1.0, where + " ".join(text.split()))
    pairs: list[tuple[str, str]] = []
    labels: dict[int, str] = {}
    styles = []
    if graph.entry in graph.nodes:
        pairs.append(("\x01start", shown[graph.entry]))
        styles.append((1.2, "", INK, "step", "start"))
    for node_id in graph.nodes:
        if shown[node_id] != node_id:
            continue
        for target, label in _step_edges(graph, node_id, shown):
            red = (node_id, target) in loop_links
            if label:
                labels[len(pairs)] = label
            pairs.append((node_id, target))
            styles.append((3.0 if red else 1.2, "", RED if red else INK, "step loop" if red else "step",
                           f"{step_text(graph, node_id)[:60]} -> {step_text(graph, target)[:60]}"))
    notes = []
    for path in loops:
        steps = " -> ".join(clip(step_text(graph, n), 28) for n in path)
        notes.append((f"loop ({FLOW_LOOP}), no user step and no tries: bound: {steps}", RED))
    return _panel(title, shapes, pairs, labels, styles, notes, min_width=360.0)


def step_graphs(program: Program, only: str | None = None) -> list[tuple[str, StepGraph, str]]:
    """(agent, graph, panel title) of every step graph to draw: flows' steps, and the setup steps of the others."""
    found = []
    for name, agent in program.agents.items():
        if only is not None and name != only:
            continue
        graph = getattr(agent, "graph", None)
        if graph is not None and graph.nodes:
            found.append((name, graph, f"flow of agent {name}"))
        if agent.setup is not None and agent.setup.nodes:
            found.append((name, agent.setup, f"setup steps of agent {name} ({_kind_text(agent)})"))
    return found


# ---- the whole picture --------------------------------------------------------------------------------


@dataclass
class GraphPicture:
    svg: str
    width: float
    height: float
    cycles: list[list[AgentEdge]]
    loops: int
    panels: int


def draw_program(program: Program, agent: str | None = None, cycle_code: str | None = None) -> GraphPicture:
    """The program drawn as one SVG: the agents panel, then one panel per step graph (only `agent`'s
    when given)."""
    if cycle_code is None:
        cycle_code = analysis_codes_for(program.language).recursion
    edges = agent_graph(program)
    cycles = agent_cycles(program)
    panels = [agent_panel(program, edges, cycles, cycle_code)]
    loops = 0
    for name, graph, title in step_graphs(program, agent):
        panels.append(flow_panel(program, name, graph, title))
        loops += len(flow_loops(program, name, graph))
    if agent is not None and len(panels) == 1:
        panels.append(_panel(f"agent {agent}", {}, [], {}, [], [((f"agent {agent} has no steps to draw "
                                                                  f"({_kind_text(program.agents[agent])})"), INK)]))
    margin = 12.0
    width = max(p.width for p in panels) + 2 * margin
    parts = []
    y = margin
    for panel in panels:
        parts.append(f'<g class="panel" transform="translate({margin:.1f},{y:.1f})">')
        parts.extend(panel.body)
        parts.append("</g>")
        y += panel.height + 16
    height = y - 16 + margin
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="{FONT}">\n'
            f"<title>{esc(_program_name(program))}: agents and steps</title>\n{_markers()}\n"
            f'<rect width="100%" height="100%" fill="#fafafa"/>\n')
    svg = head + "\n".join(parts) + "\n</svg>\n"
    return GraphPicture(svg, width, height, cycles, loops, len(panels))


# ---- PNG ----------------------------------------------------------------------------------------------


def svg_to_png(svg: str, width: float, height: float, path: Path, scale: float = 1.0) -> Path:
    """Render the SVG to a PNG file with headless Chromium (as ACDL's export does), or cairosvg when
    Chromium is missing and cairosvg is installed. Raises ExportError naming what to install."""
    from frontdesk.acdl import render

    path = Path(path)
    binary = render.chromium_path()
    if binary is None:
        cairo = render._cairosvg()
        if cairo is None:
            raise render.ExportError(f"no converter found for PNG export. {render.INSTALL_HINT}")
        path.parent.mkdir(parents=True, exist_ok=True)
        cairo.svg2png(bytestring=svg.encode("utf-8"), write_to=str(path), scale=scale)
        return path
    win_w, win_h = int(width + 0.999), int(height + 0.999)
    page = ("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>html,body{margin:0;padding:0;"
            f"background:#fafafa;overflow:hidden}}svg{{display:block}}</style></head><body>{svg}</body></html>")
    with tempfile.TemporaryDirectory(prefix="frontdesk-graph-", ignore_cleanup_errors=True) as tmp:
        folder = Path(tmp)
        source = folder / "graph.html"
        source.write_text(page, encoding="utf-8")
        out = folder / "graph.png"
        args = render._chromium_args(binary, str(folder / "profile"), scale)
        args += [f"--screenshot={out}", f"--window-size={win_w},{win_h}", source.as_uri()]
        render._run_chromium(args, out)
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out, path)
    return path
