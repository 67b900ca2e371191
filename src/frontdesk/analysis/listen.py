"""What a `user` step asks the model about the answer: the `the user claims` branch it decides and the
flow's own arguments the answer may give, read off the step graph once, when a program is built."""

from __future__ import annotations

from frontdesk.expr import collect_refs, template_refs
from frontdesk.ir.models import (
    AssignNode,
    BranchNode,
    ClaimsCondition,
    ExprCondition,
    InvokeNode,
    JumpNode,
    ListenNode,
    Program,
    SayNode,
    StepGraph,
)


def annotate_listens(program: Program) -> None:
    """Fill `classifies` and `extracts` of every listen node of every flow-like graph of the program."""
    for agent in program.agents.values():
        for graph in (getattr(agent, "graph", None), agent.setup):
            if graph is None:
                continue
            for node in graph.nodes.values():
                if isinstance(node, ListenNode):
                    branch = claims_branch_after(graph, node.next)
                    node.classifies = branch.id if branch is not None else None
                    node.extracts = args_read_after(graph, node.id, agent.name)


def claims_branch_after(graph: StepGraph, node_id: str | None) -> BranchNode | None:
    """The claims branch the flow reaches right after a `user` step, through say/set steps only."""
    seen = set()
    while node_id is not None and node_id not in seen:
        seen.add(node_id)
        node = graph.nodes.get(node_id)  # a broken program may name a step that is not there
        if isinstance(node, BranchNode):
            if any(isinstance(c.condition, ClaimsCondition) for c in node.cases):
                return node
            return None
        if not isinstance(node, (SayNode, AssignNode)):
            return None
        node_id = node.next
    return None


def args_read_after(graph: StepGraph, listen_id: str, agent: str) -> list[str]:
    """Own arguments the flow reads between this `user` step and the next, not set on the way: the
    values the user's answer may give."""
    read: list[str] = []
    assigned: set[str] = set()
    stack = [graph.nodes[listen_id].next]
    seen: set[str] = set()
    while stack:
        nid = stack.pop()
        if nid is None or nid in seen:
            continue
        seen.add(nid)
        node = graph.nodes.get(nid)
        refs = []
        if node is None or isinstance(node, ListenNode):
            continue
        if isinstance(node, SayNode):
            refs = template_refs(node.text)
        elif isinstance(node, AssignNode):
            for a in node.assignments:
                refs += collect_refs(a.value)
                if a.target.scope == agent:
                    assigned.add(a.target.name)
        elif isinstance(node, InvokeNode):
            for a in node.args:
                refs += collect_refs(a.value)
            if node.target_kind == "subflow":
                stack.append(graph.subflows.get(node.target))
        elif isinstance(node, BranchNode):
            for c in node.cases:
                if isinstance(c.condition, ExprCondition):
                    refs += collect_refs(c.condition.expr)
                stack.append(c.target)
            stack.append(node.otherwise)
        elif isinstance(node, JumpNode):
            stack.append(node.target)
        for r in refs:
            if r.space == "var" and r.scope == agent and r.name not in read:
                read.append(r.name)
        stack.append(node.next)
    # An argument set anywhere on the way is the flow's own business, not the user's answer.
    return [name for name in read if name not in assigned]
