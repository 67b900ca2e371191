"""Reachability in a step graph: steps nothing can reach, and subflows nothing calls or jumps to."""

from __future__ import annotations

from frontdesk.diagnostics import DiagnosticBag
from frontdesk.ir.models import (
    BranchNode,
    HandoffNode,
    InvokeNode,
    JumpNode,
    ReturnNode,
    StepGraph,
)


def successors(graph: StepGraph, node_id: str) -> list[str]:
    """The nodes control can move to from `node_id` (a called subflow's entry included)."""
    node = graph.nodes[node_id]
    if isinstance(node, ReturnNode) or (isinstance(node, HandoffNode) and not node.resume):
        found = []
    elif isinstance(node, JumpNode):
        found = [node.target] + ([node.next] if node.tries is not None else [])
    elif isinstance(node, BranchNode):
        found = [case.target for case in node.cases] + [node.otherwise if node.otherwise is not None else node.next]
    elif isinstance(node, InvokeNode) and node.target_kind == "subflow":
        found = [graph.subflows.get(node.target), node.next]
    else:
        found = [node.next]
    return [n for n in found if n is not None and n in graph.nodes]


def reachable_from(graph: StepGraph, starts: list[str | None]) -> set[str]:
    seen: set[str] = set()
    stack = [s for s in starts if s is not None and s in graph.nodes]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        stack.extend(successors(graph, current))
    return seen


def check_graph_reachability(graph: StepGraph, bag: DiagnosticBag, unreachable_code: str, unused_subflow_code: str) -> None:
    """Warn once per unused subflow and once per run of steps that nothing reaches."""
    reached = reachable_from(graph, [graph.entry])
    covered = set(reached)
    for name, entry in graph.subflows.items():
        if entry is None or entry in reached:
            continue
        node = graph.nodes.get(entry)
        bag.warning(unused_subflow_code, f"subflow '{name}' is never called or jumped to", node.span if node else None,
                    hint=f"reach it with - call: {name} or - next: {name}, or remove it")
        covered |= reachable_from(graph, [entry])
    for node_id, node in graph.nodes.items():
        if node_id in covered:
            continue
        bag.warning(unreachable_code, "this step is never reached", node.span,
                    hint="it follows a return: or a jump that never comes back (a next: to a label without tries:); "
                         "move or remove it")
        covered |= reachable_from(graph, [node_id])
