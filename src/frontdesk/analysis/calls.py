"""Agent-level checks: agents that call each other in a cycle, and agents the entry never reaches."""

from __future__ import annotations

from collections import deque

from frontdesk.diagnostics import DiagnosticBag, Span
from frontdesk.ir.models import (
    HandoffNode,
    InvokeNode,
    Program,
    ReasoningAgent,
    RouterAgent,
)


def agent_edges(program: Program) -> dict[str, list[tuple[str, Span | None]]]:
    """For each agent, the agents it calls or routes to, with the span of the call or member."""
    edges: dict[str, list[tuple[str, Span | None]]] = {name: [] for name in program.agents}
    for name, agent in program.agents.items():
        for graph in (getattr(agent, "graph", None), agent.setup):
            if graph is None:
                continue
            for node in graph.nodes.values():
                if isinstance(node, InvokeNode) and node.target_kind == "agent" and node.target in program.agents or isinstance(node, HandoffNode) and node.target in program.agents:
                    edges[name].append((node.target, node.span))
        if isinstance(agent, RouterAgent):
            edges[name].extend((m.agent, m.span) for m in agent.members if m.agent in program.agents)
            edges[name].extend((g, agent.span) for g in agent.guardrails if g in program.agents)
        if isinstance(agent, ReasoningAgent):
            edges[name].extend((d.agent, d.span or agent.span) for d in agent.delegates if d.agent in program.agents)
            edges[name].extend((h.agent, h.span or agent.span) for h in agent.handoffs if h.agent in program.agents)
    return edges


def strongly_connected(edges: dict[str, list[tuple[str, Span | None]]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; components come out in no particular order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for start in edges:
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            targets = edges[node]
            if child < len(targets):
                work.append((node, child + 1))
                target = targets[child][0]
                if target not in index:
                    work.append((target, 0))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return components


def _cycle_path(start: str, members: set[str], edges) -> list[str]:
    """A shortest path start -> ... -> start inside one component."""
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:
        current = queue.popleft()
        for target, _ in edges[current]:
            if target == start:
                path = [current]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return list(reversed(path)) + [start]
            if target in members and target not in previous:
                previous[target] = current
                queue.append(target)
    return [start, start]


def check_call_cycles(program: Program, bag: DiagnosticBag, code: str) -> None:
    edges = agent_edges(program)
    order = list(program.agents)
    for component in strongly_connected(edges):
        members = set(component)
        start = min(component, key=order.index)
        self_loop = any(t == start for t, _ in edges[start])
        if len(component) == 1 and not self_loop:
            continue
        span = next((s for t, s in edges[start] if t in members), None)
        if len(component) == 1:
            message = f"agent '{start}' calls itself"
        else:
            message = "agents call each other in a cycle: " + " -> ".join(_cycle_path(start, members, edges))
        bag.warning(code, message, span, hint="each call nests a new conversation; make sure the cycle ends, or use next:/return: instead")


def check_unused_agents(program: Program, bag: DiagnosticBag, code: str) -> None:
    if program.entry not in program.agents:
        return
    edges = agent_edges(program)
    for name, agent in program.agents.items():
        for policy in (agent.fallback, agent.exit):
            if policy is not None and policy.kind == "agent" and policy.value in program.agents:
                edges[name].append((policy.value, None))
        # a rule's action (a constraint's ON_FAIL: HANDOFF x, an ON_ERROR's THEN: DELEGATE x) and a flow's
        # declared HANDOFF (its WHEN hands over) also reach an agent
        for action in agent.rules.rule_actions():
            edges[name].extend((t, None) for t in (action.handoff, action.delegate) if t in program.agents)
        edges[name].extend((h.agent, None) for h in getattr(agent, "handoffs", []) if h.agent in program.agents)
    seen = {program.entry}
    queue = deque([program.entry])
    while queue:
        for target, _ in edges[queue.popleft()]:
            if target not in seen:
                seen.add(target)
                queue.append(target)
    for name, agent in program.agents.items():
        if name not in seen:
            bag.warning(code, f"agent '{name}' is never used: '{program.entry}' does not call or contain it",
                        agent.span, hint="call it from a flow, add it to an ensemble's contains:, or remove it")
