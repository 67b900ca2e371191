"""The agents of a program as a graph: who can pass control to whom, how, and on what condition.

An edge is one way control can move from an agent to another:

- `call`: a flow step calls the agent (ADL `call:`, ABL `CALL` of an agent); control comes back;
- `member`: a router (ADL ensemble, ABL supervisor) gives a message to one of its members;
- `guardrail`: a router asks a guardrail agent about a message;
- `delegate`: a reasoning agent's model delegates a task (ABL DELEGATE); control comes back;
- `handoff`: a handoff (a flow's HANDOFF step, a reasoning agent's HANDOFF); back only with RETURN;
- `mention`: a reasoning agent's prompt tells its model to enter another agent by name ("enter the
  add_payee agent"), as the ADL paper's banking bot does;
- `exit` / `fallback`: an agent's `exit:` or `fallback:` policy names another agent.

Each edge says whether it *nests* (the caller waits and takes over again when the callee ends, so a cycle
of such edges grows the stack without end), whether it is *automatic* (taken without waiting for the
user's next message), and the condition under which it is taken, as written (None: every time the agent
runs that far). `frontdesk check` reads cycles out of this graph, and `frontdesk graph` draws it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from frontdesk.diagnostics import Span
from frontdesk.ir.models import (
    AssignNode,
    BranchNode,
    EscalateNode,
    FlowAgent,
    HandoffNode,
    InvokeNode,
    JumpNode,
    ListenNode,
    Program,
    ReasoningAgent,
    ReturnNode,
    RouterAgent,
    SayNode,
    StepGraph,
)

from .reachability import reachable_from, successors


@dataclass(frozen=True)
class AgentEdge:
    source: str
    target: str
    kind: str
    nests: bool  # the source takes over again when the target ends
    automatic: bool  # taken without a new message from the user
    condition: str | None  # what must hold for the edge to be taken, as written; None: always
    evidence: str  # the program's words that make the edge
    span: Span | None = None

    def describe(self) -> str:
        verbs = {"call": "calls", "member": "routes messages to", "guardrail": "asks the guardrail",
                 "delegate": "delegates to", "handoff": "hands the conversation to", "mention": "is told to enter",
                 "exit": "ends by passing to", "fallback": "falls back to"}
        text = f"{self.source} {verbs.get(self.kind, self.kind)} {self.target}"
        if self.kind == "handoff" and self.nests:
            text += " and gets it back (RETURN)"
        if self.evidence:
            text += f" ({self.evidence})"
        where = _where(self.span)
        return f"{where}: {text}" if where else text


def _where(span: Span | None) -> str:
    if span is None or not span.file:
        return ""
    return f"{span.file}:{span.line}" if span.line else span.file


# ---- flow graphs ---------------------------------------------------------------------------------------


def ends_of(graph: StepGraph) -> set[str]:
    """Nodes where a run of the graph ends (no successor: a return, a handoff for good, the last step)."""
    return {node_id for node_id in graph.nodes if not successors(graph, node_id)}


def before_user(graph: StepGraph) -> set[str]:
    """Nodes a run can reach from the graph's entry before it first waits for the user."""
    seen: set[str] = set()
    stack = [graph.entry] if graph.entry in graph.nodes else []
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        if isinstance(graph.nodes[current], ListenNode):
            continue
        stack.extend(successors(graph, current))
    return seen


def can_end_before_user(graph: StepGraph | None) -> bool:
    """A run can reach an end of the graph without waiting for the user."""
    if graph is None:
        return True
    early = before_user(graph)
    return any(node_id in early and not isinstance(graph.nodes[node_id], ListenNode) for node_id in ends_of(graph))


def avoidable(graph: StepGraph, node_id: str) -> bool:
    """Some run from the entry ends without passing `node_id`."""
    if graph.entry is None or graph.entry == node_id:
        return False
    seen: set[str] = set()
    stack = [graph.entry]
    ends = ends_of(graph)
    while stack:
        current = stack.pop()
        if current in seen or current == node_id:
            continue
        seen.add(current)
        if current in ends:
            return True
        stack.extend(successors(graph, current))
    return False


def guard_of(graph: StepGraph, node_id: str) -> str | None:
    """The condition (as written) of the nearest branch whose case leads to `node_id` and whose other
    ways do not; None when no single branch decides it."""
    best: tuple[int, str] | None = None
    for branch in graph.nodes.values():
        if not isinstance(branch, BranchNode):
            continue
        others = [branch.otherwise if branch.otherwise is not None else branch.next]
        ways = [(case.condition.source, case.target) for case in branch.cases]
        for index, (source, target) in enumerate(ways):
            reach = reachable_from(graph, [target])
            if node_id not in reach:
                continue
            rest = [t for i, (_, t) in enumerate(ways) if i != index] + others
            if node_id in reachable_from(graph, rest):
                continue
            size = len(reach)
            if best is None or size < best[0]:
                best = (size, f"if {source}")
        if branch.otherwise is not None and node_id in reachable_from(graph, [branch.otherwise]) and \
                node_id not in reachable_from(graph, [t for _, t in ways]):
            size = len(reachable_from(graph, [branch.otherwise]))
            negated = " and ".join(f"not ({source})" for source, _ in ways)
            if best is None or size < best[0]:
                best = (size, f"if {negated}")
    return best[1] if best else None


def _flow_edges(name: str, graph: StepGraph, program: Program) -> list[AgentEdge]:
    edges: list[AgentEdge] = []
    early = before_user(graph)
    for node_id, node in graph.nodes.items():
        if isinstance(node, InvokeNode) and node.target_kind == "agent" and node.target in program.agents:
            kind, nests, evidence = "call", True, f"call: {node.target}"
        elif isinstance(node, HandoffNode) and node.target in program.agents:
            kind, nests = "handoff", node.resume
            evidence = f"HANDOFF TO {node.target}" + (" with RETURN" if node.resume else "")
        else:
            continue
        condition = None
        if avoidable(graph, node_id):
            condition = guard_of(graph, node_id) or "only on some runs of the flow"
        edges.append(AgentEdge(name, node.target, kind, nests, node_id in early, condition, evidence, node.span))
    return edges


# ---- a step, in words -----------------------------------------------------------------------------------


def step_text(graph: StepGraph, node_id: str) -> str:
    """A short text for a step: `bot: "…"`, `user`, `if: …`, `call: x`, `next: label`, `set: x`, `return`."""
    node = graph.nodes[node_id]
    if isinstance(node, SayNode):
        return f'bot: "{" ".join(node.text.source.split())}"'
    if isinstance(node, ListenNode):
        return "user" + (f" ({', '.join(node.extracts)})" if node.extracts else "")
    if isinstance(node, BranchNode):
        return "if: " + " / ".join(c.condition.source for c in node.cases)
    if isinstance(node, InvokeNode):
        return f"call: {node.target}" + (f" ({node.target_kind})" if node.target_kind != "agent" else "")
    if isinstance(node, JumpNode):
        return f"next: {node.target_name}" + (f" (tries: {node.tries})" if node.tries is not None else "")
    if isinstance(node, AssignNode):
        return "set: " + ", ".join(a.target.name for a in node.assignments)
    if isinstance(node, ReturnNode):
        return "return" + (" error" if node.status == "error" else "")
    if isinstance(node, HandoffNode):
        return f"handoff: {node.target}" + (" (return)" if node.resume else "")
    if isinstance(node, EscalateNode):
        return "escalate" + (f": {node.reason}" if node.reason else "")
    return node.kind


# ---- prompts -------------------------------------------------------------------------------------------

_ENTER = r"(?:enter|enters|entering|call|calls|invoke|go to|goes to|switch to|transfer to|transfer the user to|" \
         r"hand (?:over|off|it|the user|the conversation)? ?to|pass (?:it|the user|the conversation)? ?to|" \
         r"route (?:it|the user)? ?to|redirect (?:it|the user)? ?to|start|run|use|launch|trigger|activate)"
_CONDITIONAL = re.compile(r"\b(if|when|whenever|unless|whether|in case|should|only after|otherwise)\b", re.IGNORECASE)
_ENDS = re.compile(r"\b(?:exit|end|finish|complete|leave|quit)\s+(?:this|the current)\s+agent\b|"
                   r"\band\s+(?:then\s+)?(?:exit|end|finish|complete)\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


@lru_cache(maxsize=4096)
def _mention_pattern(target: str) -> re.Pattern[str]:
    name = re.escape(target).replace("_", "[ _-]")  # "add_payee", "add payee", "add-payee"
    quoted = rf"[\"'`“‘]?{name}[\"'`”’]?"
    return re.compile(
        rf"\b{_ENTER}\s+(?:the\s+)?(?:agent\s+)?{quoted}(?:\s+agent)?(?![\w])",
        re.IGNORECASE,
    )


@lru_cache(maxsize=64)
def file_lines(path: str) -> tuple[str, ...]:
    """The lines of a source file, read once (empty when it cannot be read)."""
    try:
        with open(path, encoding="utf-8") as handle:
            return tuple(handle.read().splitlines())
    except (OSError, UnicodeDecodeError):
        return ()


def first_line(span: Span | None, column_of: Callable[[str], int | None]) -> Span | None:
    """The span of the first line of `span`'s file, from `span`'s line on, where `column_of(line)` finds a
    (1-based) column; `span` itself when no line does."""
    if span is None or not span.file:
        return span
    start = max(span.line, 1)
    for number, line in enumerate(file_lines(span.file)[start - 1:], start=start):
        column = column_of(line)
        if column is not None:
            return Span(file=span.file, line=number, column=column)
    return span


def line_span(span: Span | None, snippet: str) -> Span | None:
    """Where a prompt's sentence `snippet` starts: its line at or after `span` (`span` if not found)."""
    head = " ".join(snippet.split())[:40]

    def column_of(line: str) -> int | None:
        flat = " ".join(line.split())
        return line.find(line.strip()) + 1 + flat.find(head) if head and head in flat else None

    return first_line(span, column_of)


def _plain(text: str) -> str:
    """Lower case, with `_` and `-` read as spaces: how a name may be written in prose."""
    return text.lower().replace("_", " ").replace("-", " ")


def sentences(text: str) -> list[str]:
    """The prompt cut into sentences and lines (numbered steps stay whole)."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def _mention_edges(name: str, agent: ReasoningAgent, program: Program, parents: dict[str, set[str]]) -> list[AgentEdge]:
    edges: list[AgentEdge] = []
    text = agent.instructions or ""
    if not text:
        return edges
    parts = sentences(text)
    whole = " ".join(_plain(sentence) for sentence in parts)
    for target in program.agents:
        # a member told to go back to its router is no edge: the router waits for the next message
        if target == name or target in parents.get(name, set()) or len(target) < 3:
            continue
        if _plain(target) not in whole:
            continue  # cheap test first: the name is not written anywhere in the prompt
        pattern = _mention_pattern(target)
        for index, sentence in enumerate(parts):
            if not pattern.search(sentence):
                continue
            # a condition may sit in the sentence itself or open the one before ("Ask whether ...; if so, ...")
            context = sentence if _CONDITIONAL.search(sentence) else None
            if context is None and index and re.match(r"^(?:→\s*)?(?:if so|then|in that case)\b", sentence, re.IGNORECASE):
                context = parts[index - 1] + " " + sentence
            ends = bool(_ENDS.search(sentence))  # "... and exit this agent": a hand-over, not a nested call
            edges.append(AgentEdge(name, target, "mention", not ends, False, clip(context) if context else None,
                                   f"prompt: \"{clip(sentence)}\"", line_span(agent.span, sentence)))
            break
    return edges


def clip(text: str, limit: int = 110) -> str:
    """`text` on one line, cut with … to at most `limit` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# ---- the whole program ---------------------------------------------------------------------------------


def routers_of(program: Program) -> dict[str, set[str]]:
    """For each agent, the routers that contain it."""
    parents: dict[str, set[str]] = {}
    for name, agent in program.agents.items():
        if isinstance(agent, RouterAgent):
            for member in agent.members:
                parents.setdefault(member.agent, set()).add(name)
    return parents


def agent_graph(program: Program) -> list[AgentEdge]:
    """Every edge between the program's agents, in the order the agents are written."""
    parents = routers_of(program)
    edges: list[AgentEdge] = []
    for name, agent in program.agents.items():
        for graph in (getattr(agent, "graph", None), agent.setup):
            if graph is not None:
                edges.extend(_flow_edges(name, graph, program))
        if isinstance(agent, RouterAgent):
            for member in agent.members:
                if member.agent in program.agents:
                    condition = member.condition.source if member.condition is not None else "when the router picks it"
                    edges.append(AgentEdge(name, member.agent, "member", True, False, condition,
                                           f"member {member.agent}", member.span or agent.span))
            for guard in agent.guardrails:
                if guard in program.agents:
                    edges.append(AgentEdge(name, guard, "guardrail", True, False, None, f"guardrails: {guard}", agent.span))
        if isinstance(agent, ReasoningAgent):
            for delegation in agent.delegates:
                if delegation.agent in program.agents:
                    edges.append(AgentEdge(name, delegation.agent, "delegate", True, False,
                                           "when the model delegates" + (f" ({clip(delegation.purpose, 60)})"
                                                                         if delegation.purpose else ""),
                                           f"DELEGATE {delegation.agent}", delegation.span or agent.span))
            for handoff in agent.handoffs:
                if handoff.agent in program.agents:
                    when = handoff.when or "when the model hands off"
                    edges.append(AgentEdge(name, handoff.agent, "handoff", handoff.resume, False, clip(when),
                                           f"HANDOFF TO {handoff.agent}" + (" with RETURN" if handoff.resume else ""),
                                           handoff.span or agent.span))
            edges.extend(_mention_edges(name, agent, program, parents))
        for kind, policy in (("exit", agent.exit), ("fallback", agent.fallback)):
            if policy is not None and policy.kind == "agent" and policy.value in program.agents:
                automatic = kind == "exit" and (isinstance(agent, FlowAgent) and can_end_before_user(agent.graph))
                edges.append(AgentEdge(name, policy.value, kind, False, automatic,
                                       None if kind == "exit" else "when the agent cannot understand a message",
                                       f"{kind}: {policy.value}", agent.span))
    return edges


def waits_for_user(program: Program, name: str) -> bool:
    """Running the agent may wait for the user's next message."""
    agent = program.agents.get(name)
    if agent is None:
        return False
    if isinstance(agent, FlowAgent):
        return any(isinstance(n, ListenNode) for n in agent.graph.nodes.values())
    return isinstance(agent, (ReasoningAgent, RouterAgent))
