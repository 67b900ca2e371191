"""The deeper checks of `frontdesk check`: loops between agents and inside flows, and things written but
never used. Every finding is a Diagnostic with a code, the place it is about and, in its notes, the path
that proves it (each step with its file and line).

| code  | finding |
|-------|---------|
| FD040 | ABL: a FLOW step no THEN, GOTO or sequence leads to (ADL's unreachable steps are reported at load) |
| FD041 | agents nest calls in a cycle (call, membership, DELEGATE, HANDOFF with RETURN, a prompt that enters an agent) |
| FD044 | agents hand the conversation to each other in a cycle in which nobody waits for the user |
| FD045 | steps of a flow can repeat without a user step and without a `tries:` bound |
| FD046 | a label no `next:` jumps to (ADL) |
| FD047 | an argument is read but nothing gives it a value |
| FD048 | an argument is given a value but nothing reads it |
| FD049 | a declared tool nothing can call (ABL) |
| FD050 | a prompt tells the model to call a tool the agent is not given |
| FD051 | a GATHER field no step of the agent's FLOW asks for (ABL) |
| FD052 | a value is read that nothing sets: an ensemble's or the entry agent's argument, a tool result's field |
| FD054 | a tool an agent can call has no implementation bound: no `python:`, HTTP or MCP binding (ABL) |
| FD053 | (info) a flow argument only ever filled from what the user says: with no model, words must give it |

ADL reports FD041, FD052 and FD053 as ADL041, ADL048 and ADL049 (see `AnalysisCodes`); the other codes are
shared by every language.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from frontdesk.diagnostics import Diagnostic, DiagnosticBag, Severity, Span
from frontdesk.ir.behaviour import Action
from frontdesk.ir.expr import Arith
from frontdesk.ir.models import (
    AssignNode,
    BranchNode,
    FlowAgent,
    HandoffNode,
    InvokeNode,
    JumpNode,
    ListenNode,
    Program,
    ReasoningAgent,
    RouterAgent,
    StepGraph,
)
from frontdesk.ir.walk import nodes_in, refs_in

from .agentgraph import (
    AgentEdge,
    agent_graph,
    clip,
    file_lines,
    first_line,
    sentences,
    step_text,
    waits_for_user,
)
from .calls import strongly_connected
from .codes import AnalysisCodes, analysis_codes_for
from .reachability import reachable_from, successors

UNREACHABLE_STEP = "FD040"
AGENT_CYCLE = "FD041"
HANDOVER_CYCLE = "FD044"
FLOW_LOOP = "FD045"
UNUSED_LABEL = "FD046"
NEVER_SET = "FD047"
NEVER_READ = "FD048"
UNUSED_TOOL = "FD049"
UNDECLARED_TOOL = "FD050"
UNASKED_FIELD = "FD051"
UNBOUND_TOOL = "FD054"

CODES = (UNREACHABLE_STEP, AGENT_CYCLE, HANDOVER_CYCLE, FLOW_LOOP, UNUSED_LABEL, NEVER_SET, NEVER_READ, UNUSED_TOOL,
         UNDECLARED_TOOL, UNASKED_FIELD, UNBOUND_TOOL)


def lint_program(program: Program, cycle_code: str = AGENT_CYCLE, codes: AnalysisCodes | None = None) -> list[Diagnostic]:
    """Every finding of the deeper checks, as warnings (and infos)."""
    codes = codes or analysis_codes_for(program.language)
    bag = DiagnosticBag()
    edges = agent_graph(program)
    check_agent_cycles(program, edges, bag, cycle_code)
    for name, agent in program.agents.items():
        for graph in (getattr(agent, "graph", None), agent.setup):
            if graph is not None:
                check_flow_loops(program, name, graph, bag)
                if program.language == "adl":
                    check_unused_labels(name, graph, bag)
                else:
                    check_unreached_steps(name, graph, bag, agent.span)
    check_arguments(program, bag)
    check_unset_values(program, bag, codes)
    if program.language == "abl":
        check_session_values(program, bag)
    check_tools(program, bag)
    check_gather_fields(program, bag)
    return bag.sorted()


# ---- cycles between agents ------------------------------------------------------------------------------


def _cycles(program: Program, edges: list[AgentEdge]) -> list[list[AgentEdge]]:
    """One shortest cycle per strongly connected part of the graph made of `edges`, as its edges."""
    by_source: dict[str, list[AgentEdge]] = {name: [] for name in program.agents}
    for edge in edges:
        by_source.setdefault(edge.source, []).append(edge)
    shape = {name: [(e.target, e.span) for e in out] for name, out in by_source.items()}
    order = list(program.agents)
    found = []
    for component in strongly_connected(shape):
        members = set(component)
        start = min(component, key=lambda n: order.index(n) if n in order else len(order))
        if len(component) == 1 and not any(e.target == start for e in by_source.get(start, [])):
            continue
        found.append(_shortest_cycle(start, members, by_source))
    return sorted(found, key=lambda cycle: order.index(cycle[0].source) if cycle[0].source in order else 0)


def _shortest_cycle(start: str, members: set[str], by_source: dict[str, list[AgentEdge]]) -> list[AgentEdge]:
    came: dict[str, AgentEdge] = {}
    queue = deque([start])
    while queue:
        current = queue.popleft()
        for edge in by_source.get(current, []):
            if edge.target not in members:
                continue
            if edge.target == start:
                path = [edge]
                while path[0].source != start:
                    path.insert(0, came[path[0].source])
                return path
            if edge.target not in came:
                came[edge.target] = edge
                queue.append(edge.target)
    return []


def _path_text(cycle: list[AgentEdge]) -> str:
    return " -> ".join([cycle[0].source] + [e.target for e in cycle])


def _hands_back(program: Program, edge: AgentEdge) -> bool:
    """The edge gives control back to a router that contains the agent: the router then waits for the
    user's next message before it picks anyone again."""
    target = program.agents.get(edge.target)
    return (edge.kind in ("mention", "handoff", "exit") and isinstance(target, RouterAgent)
            and edge.source in {m.agent for m in target.members})


def _condition_note(edge: AgentEdge) -> str:
    if edge.condition is None:
        return "every time" if edge.kind != "exit" else "every time it ends"
    if edge.kind == "mention":
        return "when the condition in its prompt holds"
    return edge.condition if edge.condition.startswith("only") else f"only {edge.condition}"


def _agent_cycles_in(program: Program, edges: list[AgentEdge]) -> list[list[AgentEdge]]:
    directed = [e for e in edges if e.kind != "fallback" and not _hands_back(program, e)]
    return [cycle for cycle in _cycles(program, directed) if cycle]


def agent_cycles(program: Program) -> list[list[AgentEdge]]:
    """The cycles between agents that `frontdesk check` reports (FD041/ADL041 and FD044), each as its edges
    in order (the first edge's source is where the cycle is reported)."""
    return _agent_cycles_in(program, agent_graph(program))


def check_agent_cycles(program: Program, edges: list[AgentEdge], bag: DiagnosticBag, code: str) -> None:
    """Agents that pass control to each other in a cycle (the ADL paper's transfer_money -> add_payee ->
    transfer_money). A cycle in which nobody waits for the user is FD044; any other is `code` (FD041)."""
    for cycle in _agent_cycles_in(program, edges):
        path = _path_text(cycle)
        if all(e.automatic for e in cycle):
            finding = HANDOVER_CYCLE
            message = f"agents pass control to each other in a cycle without waiting for the user: {path}"
            hint = ("nothing stops it: let one agent of the cycle wait for the user (a user step, GATHER) or end "
                    "the conversation instead of passing it on")
        else:
            finding = code
            if len(cycle) == 1:
                message = f"agent '{cycle[0].source}' calls itself"
            elif all(e.nests for e in cycle):
                message = f"agents call each other in a cycle: {path}"
            else:
                message = f"agents pass control to each other in a cycle: {path}"
            exits = [e for e in cycle if e.condition is not None]
            if exits:
                message += "; it ends only when one of these steps is not taken"
                hint = ("a user can be sent round this cycle without end: make sure one of these conditions "
                        "becomes false, or let one agent finish (return:/COMPLETE) instead of entering the next")
            else:
                message += "; nothing breaks it: every agent enters the next each time it runs"
                hint = "break the cycle: let one agent finish and return instead of entering the next"
        notes = [f"{e.describe()} — {_condition_note(e)}" for e in cycle]
        bag.add(Diagnostic(finding, message, cycle[0].span, Severity.WARNING, hint, notes))


# ---- loops inside a flow --------------------------------------------------------------------------------


def _describe_node(graph: StepGraph, node_id: str) -> str:
    """`line N` (or the step's id) and the step in words, with its label if it has one."""
    node = graph.nodes[node_id]
    label = next((name for name, target in graph.labels.items() if target == node_id), None)
    what = clip(step_text(graph, node_id), 80)
    if label and not isinstance(node, JumpNode):
        what = f"label {label}: {what}"
    line = f"line {node.span.line}" if node.span and node.span.line else node_id
    return f"{line} {what}"


def _counted(graph: StepGraph, loop: set[str]) -> bool:
    """The loop counts: a variable set from itself by arithmetic in the loop is tested by a branch in it."""
    counters = set()
    for node_id in loop:
        node = graph.nodes[node_id]
        if isinstance(node, AssignNode):
            for assignment in node.assignments:
                target = (assignment.target.scope, assignment.target.name)
                if any(isinstance(a, Arith) for a in nodes_in(assignment.value, Arith)) and \
                        target in {(r.scope, r.name) for r in refs_in(assignment.value)}:
                    counters.add(target)
    if not counters:
        return False
    for node_id in loop:
        node = graph.nodes[node_id]
        if isinstance(node, BranchNode) and any((r.scope, r.name) in counters for r in refs_in(node.cases)):
            return True
    return False


def _flow_loops_in(program: Program, graph: StepGraph) -> Iterator[tuple[set[str], list[str], str, list[str]]]:
    """Each FD045 loop of the graph: its steps, the same in the order written, the step that closes it
    (where it is reported) and a shortest way around it (first step repeated at the end)."""
    shape = {node_id: [(t, None) for t in successors(graph, node_id)] for node_id in graph.nodes}
    for component in strongly_connected(shape):
        loop = set(component)
        if len(loop) == 1 and component[0] not in successors(graph, component[0]):
            continue
        nodes = [graph.nodes[n] for n in loop]
        if any(isinstance(n, ListenNode) for n in nodes):
            continue
        if any(isinstance(n, JumpNode) and n.tries is not None and n.target in loop for n in nodes):
            continue
        if any(isinstance(n, InvokeNode) and n.target_kind == "agent" and waits_for_user(program, n.target)
               for n in nodes):
            continue
        if any(isinstance(n, HandoffNode) for n in nodes) or _counted(graph, loop):
            continue
        ordered = [n for n in graph.nodes if n in loop]
        closing = next((n for n in ordered if isinstance(graph.nodes[n], JumpNode) and graph.nodes[n].target in loop),
                       ordered[0])
        start = graph.nodes[closing].target if isinstance(graph.nodes[closing], JumpNode) else closing
        yield loop, ordered, closing, _loop_path(graph, start, loop)


def flow_loops(program: Program, agent_name: str, graph: StepGraph) -> list[list[str]]:
    """The loops of agent `agent_name`'s step graph `graph` that `frontdesk check` reports (FD045), each
    as the node ids of a shortest way around it, the first repeated at the end."""
    return [path for _, _, _, path in _flow_loops_in(program, graph)]


def check_flow_loops(program: Program, name: str, graph: StepGraph, bag: DiagnosticBag) -> None:
    for loop, ordered, closing, path in _flow_loops_in(program, graph):
        exits = []
        for node_id in ordered:
            node = graph.nodes[node_id]
            if isinstance(node, BranchNode):
                for case in node.cases:
                    if case.target not in loop:
                        exits.append(f"if {case.condition.source}")
                other = node.otherwise if node.otherwise is not None else node.next
                if other is not None and other not in loop:
                    exits.append("if none of: " + " / ".join(c.condition.source for c in node.cases))
        message = f"in agent '{name}', these steps can repeat forever without waiting for the user"
        if exits:
            message += "; the loop ends only " + " or ".join(exits[:3])
        notes = [_describe_node(graph, n) for n in path]
        bag.add(Diagnostic(FLOW_LOOP, message, graph.nodes[closing].span, Severity.WARNING,
                           "add a user step inside the loop, or bound the jump with tries: N", notes))


def _loop_path(graph: StepGraph, start: str, loop: set[str]) -> list[str]:
    """The steps from `start` around the loop back to it (a shortest way)."""
    came: dict[str, str] = {}
    queue = deque([start])
    while queue:
        current = queue.popleft()
        for target in successors(graph, current):
            if target not in loop:
                continue
            if target == start:
                path = [current]
                while path[0] != start:
                    path.insert(0, came[path[0]])
                return path + [start]
            if target not in came:
                came[target] = current
                queue.append(target)
    return [start]


def step_span(agent_span: Span | None, step: str) -> Span | None:
    """Where an ABL FLOW step is written (`  step:` under FLOW: in the agent's file); None if not found."""
    if agent_span is None or not agent_span.file:
        return None
    lines = file_lines(agent_span.file)
    start = next((i for i, line in enumerate(lines) if i >= agent_span.line - 1 and line.startswith("FLOW:")), None)
    if start is None:
        return None
    pattern = re.compile(rf"^(\s+){re.escape(step)}\s*:\s*$")
    for number, line in enumerate(lines[start + 1:], start=start + 2):
        found = pattern.match(line)
        if found:
            return Span(file=agent_span.file, line=number, column=len(found.group(1)) + 1)
        if line and not line[0].isspace() and not line.startswith("#"):
            break  # the next section
    return None


def check_unreached_steps(name: str, graph: StepGraph, bag: DiagnosticBag, agent_span: Span | None = None) -> None:
    """ABL: FLOW steps that no THEN, GOTO or sequence leads to (the steps a compiler adds are not told)."""
    reached = reachable_from(graph, [graph.entry, *graph.subflows.values()])
    steps = list(graph.labels.items())
    for index, (step, node_id) in enumerate(steps):
        if node_id in reached or node_id not in graph.nodes:
            continue
        notes = []
        if index:
            before, before_id = steps[index - 1]
            goes = sorted({graph.nodes[t].id for t in _step_exits(graph, before_id, set(graph.labels.values()))})
            names = [s for s, n in steps if n in goes] or ["the end of the flow"]
            notes.append(f"step '{before}', written before it, goes on to {', '.join(names)} (THEN), not to '{step}'")
        span = step_span(agent_span, step) or graph.nodes[node_id].span
        bag.add(Diagnostic(UNREACHABLE_STEP, f"FLOW step '{step}' of agent '{name}' is never reached: no THEN, GOTO "
                           "or FLOW sequence leads to it", span, Severity.WARNING,
                           f"name it in a THEN (THEN: {step}) or in the FLOW sequence, or remove it", notes))


def _step_exits(graph: StepGraph, start: str, step_entries: set[str]) -> set[str]:
    """The step entries a run of the step starting at `start` can move to."""
    found: set[str] = set()
    seen: set[str] = set()
    stack = [start]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        for target in successors(graph, current):
            if target in step_entries and target != start:
                found.add(target)
            elif target not in step_entries:
                stack.append(target)
    return found


def check_unused_labels(name: str, graph: StepGraph, bag: DiagnosticBag) -> None:
    jumped = {n.target_name for n in graph.nodes.values() if isinstance(n, JumpNode)}
    jumped_to = {n.target for n in graph.nodes.values() if isinstance(n, JumpNode)}
    for label, node_id in graph.labels.items():
        if label in jumped or label in graph.subflows:
            continue
        node = graph.nodes.get(node_id)
        bag.add(Diagnostic(UNUSED_LABEL, f"label '{label}' of agent '{name}' is never jumped to",
                           node.span if node else None, Severity.WARNING,
                           f"jump to it with - next: {label}, or remove the label"
                           + (" (another label of the same step is used)" if node_id in jumped_to else "")))


# ---- arguments ------------------------------------------------------------------------------------------


def _reads_and_sets(program: Program) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    reads: set[tuple[str, str]] = set()
    sets: set[tuple[str, str]] = set()

    def read(node) -> None:
        for ref in refs_in(node):
            if ref.space in ("var", "result"):
                reads.add((ref.scope, ref.name))

    for name, agent in program.agents.items():
        for arg in agent.args:
            if arg.bound_to is not None:
                reads.add((arg.bound_to.scope, arg.bound_to.name))
                sets.add((arg.bound_to.scope, arg.bound_to.name))
        for graph in (getattr(agent, "graph", None), agent.setup):
            if graph is None:
                continue
            for node in graph.nodes.values():
                if isinstance(node, AssignNode):
                    for assignment in node.assignments:
                        sets.add((assignment.target.scope, assignment.target.name))
                        read(assignment.value)
                elif isinstance(node, ListenNode):
                    sets.update((name, field) for field in node.extracts)
                    read(node)
                elif isinstance(node, InvokeNode):
                    if node.target_kind == "agent":
                        sets.update((node.target, a.name) for a in node.args)
                    if node.bind is not None:
                        sets.add((node.bind.scope, node.bind.name))
                    for arg in node.args:
                        read(arg.value)
                elif isinstance(node, HandoffNode):
                    sets.update((node.target, a.name) for a in node.args)
                    for arg in node.args:
                        read(arg.value)
                    read(node.summary)
                else:
                    read(node)
        read(agent.rules)
        for action in nodes_in(agent.rules, Action):
            for target, _ in action.set:
                sets.add((name, target))
        sets.update((name, f.name) for f in agent.rules.gather)
        if isinstance(agent, RouterAgent):
            for member in agent.members:
                for binding in member.bindings:
                    sets.add((member.agent, binding.member_arg))
                    reads.add((name, binding.router_arg))
                    if binding.two_way:
                        sets.add((name, binding.router_arg))
                        reads.add((member.agent, binding.member_arg))
                sets.update((member.agent, p) for p in member.passes)
                read(member.condition)
        for delegation in getattr(agent, "delegates", []):
            sets.update((delegation.agent, field) for field in delegation.inputs)
        if isinstance(agent, ReasoningAgent | FlowAgent):
            for handoff in agent.handoffs:
                sets.update((handoff.agent, p) for p in handoff.passes)
                reads.update((name, p) for p in handoff.passes)
                read(handoff.summary)
                read(list(handoff.on_return.values()))
        read(agent.fallback)
        read(agent.exit)
    return reads, sets


def _python_tool_sets(program: Program, tool_name: str) -> set[str] | None:
    """The arguments an ADL Python tool can set (the `"arg": "name"` entries of the dicts it returns), read
    from its source; None when that cannot be told (no source, or a name that is not a literal)."""
    import ast

    function = _tool_function(program, tool_name)
    if function is None:
        return None
    names: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value == "arg":
                    if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
                        return None
                    names.add(value.value)
        elif isinstance(node, ast.Call) and not isinstance(node.func, ast.Name | ast.Attribute):
            return None
    return names


def _tool_function(program: Program, tool_name: str):
    """The definition (an ast node) of a Python tool's function in its source file; None when the tool is not
    bound to Python or its source or function cannot be read."""
    import ast

    tool = program.tools.get(tool_name)
    binding = getattr(tool, "binding", None)
    if tool is None or getattr(binding, "kind", "") != "python":
        return None
    tree = _python_tree(str(Path(program.root or ".") / binding.module))
    if tree is None:
        return None
    return next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and n.name == binding.function), None)


@lru_cache(maxsize=64)
def _python_tree(path: str):
    import ast

    try:
        return ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None


def check_arguments(program: Program, bag: DiagnosticBag) -> None:
    reads, sets = _reads_and_sets(program)
    for agent in program.agents.values():  # a Python tool sets only the arguments its source can return
        for tool_name, outputs in agent.tool_outputs.items():
            can = _python_tool_sets(program, tool_name)
            sets.update((o.target.scope, o.target.name) for o in outputs if can is None or o.field in can)
    dotted = {word for agent in program.agents.values()  # `agent.arg` written in prompts
              for word in re.findall(r"[A-Za-z_][\w]*\.[A-Za-z_][\w]*", getattr(agent, "instructions", None) or "")}
    for name, agent in program.agents.items():
        if not isinstance(agent, FlowAgent):
            continue  # a model fills and reads a reasoning agent's arguments; a router's are its members'
        for arg in agent.args:
            if arg.bound_to is not None:
                continue
            key = (name, arg.name)
            is_read = key in reads or f"{name}.{arg.name}" in dotted
            is_set = key in sets
            if is_read and not is_set and name != program.entry:
                bag.add(Diagnostic(NEVER_SET, f"argument '{arg.name}' of agent '{name}' is read but nothing "
                                   "gives it a value", arg.span or agent.span, Severity.WARNING,
                                   "set it (set:), ask for it (a user step), pass it from the caller, or remove "
                                   "what reads it"))
            elif is_set and not is_read:
                bag.add(Diagnostic(NEVER_READ, f"argument '{arg.name}' of agent '{name}' is given a value but "
                                   "nothing reads it", arg.span or agent.span, Severity.WARNING,
                                   "use it in a condition, a message or a call, or remove it"))


_RESULT_NAMES = ("status", "message", "success", "error", "value")  # every call's result has these


def _explicit_sets(program: Program) -> set[tuple[str, str]]:
    """What sets values other than reading them from the user's messages: `_reads_and_sets` without the
    `user` steps' extraction, and the arguments a tool's result sets on its caller."""
    _, sets = _reads_and_sets(program)
    extracted = {(name, field) for name, agent in program.agents.items()
                 for graph in (getattr(agent, "graph", None), agent.setup) if graph is not None
                 for node in graph.nodes.values() if isinstance(node, ListenNode) for field in node.extracts}
    explicit = sets - extracted
    for name, agent in program.agents.items():
        for graph in (getattr(agent, "graph", None), agent.setup):
            for node in (graph.nodes.values() if graph is not None else []):
                if isinstance(node, AssignNode):
                    explicit.update((a.target.scope, a.target.name) for a in node.assignments)
                elif isinstance(node, InvokeNode) and node.target_kind == "agent":
                    explicit.update((node.target, a.name) for a in node.args)
        for tool_name, outputs in agent.tool_outputs.items():
            can = _python_tool_sets(program, tool_name)
            explicit.update((o.target.scope, o.target.name) for o in outputs if can is None or o.field in can)
    return explicit


def _tool_fields(program: Program, tool_name: str) -> set[str] | None:
    """The fields a Python tool's result can hold: the names its `{"arg": name}` (MICA: `slot_name`) items
    give and the literal keys of the dicts it builds; None when that cannot be told from its source."""
    import ast

    function = _tool_function(program, tool_name)
    if function is None:
        return None
    fields: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if key is None or not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                    return None  # `**other` or a computed key
                fields.add(key.value)
                if key.value in ("arg", "slot_name"):
                    if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
                        return None
                    fields.add(value.value)
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            return None  # result[key] = ...
        elif isinstance(node, ast.Call) and (not isinstance(node.func, ast.Name | ast.Attribute)
                                             or getattr(node.func, "id", "") == "dict"):
            return None
    return fields


def check_unset_values(program: Program, bag: DiagnosticBag, codes: AnalysisCodes) -> None:
    """Values read that nothing sets, beyond FD047's (the arguments of a flow other agents call): an
    ensemble's arguments, the entry agent's, the fields of a tool's result the tool never returns."""
    reads, sets = _reads_and_sets(program)
    explicit = _explicit_sets(program)
    sets |= explicit
    dotted = {word for agent in program.agents.values()
              for word in re.findall(r"[A-Za-z_][\w]*\.[A-Za-z_][\w]*", getattr(agent, "instructions", None) or "")}
    for name, agent in program.agents.items():
        checked = isinstance(agent, RouterAgent) or (isinstance(agent, FlowAgent) and name == program.entry)
        for arg in agent.args:
            key = (name, arg.name)
            if arg.bound_to is not None or not checked or key not in reads or key in sets \
                    or f"{name}.{arg.name}" in dotted:
                continue
            what = "ensemble" if isinstance(agent, RouterAgent) else "entry agent"
            bag.add(Diagnostic(codes.never_set, f"argument '{arg.name}' of {what} '{name}' is read but nothing "
                               "gives it a value", arg.span or agent.span, Severity.WARNING,
                               "set it (set:), let a member set it (ref:, or set: "
                               f"{name}.{arg.name}), ask for it (a user step), or remove what reads it"))
    called = {n.target for agent in program.agents.values() for graph in (getattr(agent, "graph", None), agent.setup)
              if graph is not None for n in graph.nodes.values() if isinstance(n, InvokeNode)}
    called |= {t for agent in program.agents.values() if isinstance(agent, ReasoningAgent) for t in agent.tools}
    for scope, field in sorted(reads):
        if scope not in program.tools or scope in program.agents or field in _RESULT_NAMES:
            continue
        fields = _tool_fields(program, scope) if scope in called else set()
        if fields is None or field in fields:
            continue
        span = _reader_span(program, scope, field)
        why = (f"tool '{scope}' is never called" if scope not in called
               else f"tool '{scope}' never returns '{field}'")
        bag.add(Diagnostic(codes.never_set, f"'{scope}.{field}' is read but nothing sets it: {why}", span,
                           Severity.WARNING, f"return {{\"arg\": \"{field}\", \"value\": ...}} from {scope}, "
                           "or read a field it returns"))


def check_extraction_only(program: Program, bag: DiagnosticBag, codes: AnalysisCodes) -> None:
    """(An info, for a program that configures no model) flow arguments read that only the user's words
    can fill: nothing sets them but a `user` step reading them from the message."""
    if program.settings.llm:
        return
    reads, _ = _reads_and_sets(program)
    explicit = _explicit_sets(program)
    dotted = {word for agent in program.agents.values()
              for word in re.findall(r"[A-Za-z_][\w]*\.[A-Za-z_][\w]*", getattr(agent, "instructions", None) or "")}
    for name, agent in program.agents.items():
        if not isinstance(agent, FlowAgent):
            continue
        only = [arg.name for arg in agent.args if arg.bound_to is None and (name, arg.name) in reads
                and (name, arg.name) not in explicit and f"{name}.{arg.name}" not in dotted
                and any(isinstance(n, ListenNode) and arg.name in n.extracts for n in agent.graph.nodes.values())]
        if not only:
            continue
        names = ", ".join(f"'{n}'" for n in only)
        bag.add(Diagnostic(codes.extraction_only, f"{'argument' if len(only) == 1 else 'arguments'} {names} of "
                           f"agent '{name}' {'is' if len(only) == 1 else 'are'} only ever filled from what the user "
                           "says, and this program configures no model (config.yml llm:): with none, only a "
                           "message that gives one by its kind (a phone number, a date), names a value the flow "
                           "lists for it, or gives it after its name fills it", agent.span, Severity.INFO,
                           "to run without a model, compare the argument to the values it may take in a "
                           "condition, or set it from the user's choice (if: the user claims ... then: set:)"))


def _reader_span(program: Program, scope: str, field: str) -> Span | None:
    """The place of the first step that reads `scope.field`."""
    for agent in program.agents.values():
        for graph in (getattr(agent, "graph", None), agent.setup):
            for node in (graph.nodes.values() if graph is not None else []):
                if any(r.scope == scope and r.name == field for r in refs_in(node)):
                    return node.span
    return None


def _session_use(program: Program) -> tuple[dict[str, str], dict[str, str]]:
    """ABL: the shared session values each agent reads and sets (first agent seen for each)."""
    reads: dict[str, str] = {}
    sets: dict[str, str] = {}

    def read(name: str, node) -> None:
        for ref in refs_in(node):
            # `Agent.field` (an ON_RETURN map reading what the agent handed back) is that agent's value
            if ref.space == "var" and ref.scope == "session" and ref.name not in program.agents:
                reads.setdefault(ref.name, name)

    for name, agent in program.agents.items():
        for arg in agent.args:
            if arg.bound_to is not None and arg.bound_to.scope == "session":
                sets.setdefault(arg.bound_to.name, name)
                reads.setdefault(arg.bound_to.name, name)
        for graph in (getattr(agent, "graph", None), agent.setup):
            for node in (graph.nodes.values() if graph is not None else ()):
                if isinstance(node, AssignNode):
                    for assignment in node.assignments:
                        if assignment.target.scope == "session":
                            sets.setdefault(assignment.target.name, name)
                        read(name, assignment.value)
                    continue
                if isinstance(node, InvokeNode) and node.bind is not None and node.bind.scope == "session":
                    sets.setdefault(node.bind.name, name)
                if isinstance(node, HandoffNode):  # CONTEXT pass: values the agent taking over gets
                    for arg in node.args:
                        sets.setdefault(arg.name, node.target)
                read(name, node)
        read(name, agent.rules)
        for variable in agent.rules.memory.session:  # declared: projected into what the agent sees (3.7.1)
            sets.setdefault(variable.name, name)
            reads.setdefault(variable.name, name)
        for delegation in getattr(agent, "delegates", []):
            for field in delegation.inputs:  # INPUT: the caller's values (read) the delegated agent is given
                sets.setdefault(field, delegation.agent)
                reads.setdefault(field, name)
            for field in delegation.returns:  # RETURNS: the result, which the agent continues with (3.10)
                sets.setdefault(field, name)
                reads.setdefault(field, name)
        for action in nodes_in(agent.rules, Action):
            for target, _ in action.set:
                sets.setdefault(target, name)
        for handoff in getattr(agent, "handoffs", []):
            read(name, handoff)
            for passed in handoff.passes:
                sets.setdefault(passed.rsplit(".", 1)[-1], handoff.agent)
            sets.update({key: name for key in handoff.on_return if key not in sets})
        if isinstance(agent, ReasoningAgent):
            if agent.instructions:  # a model may fill any value its prompt names; count them as set and read
                for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", agent.instructions):
                    sets.setdefault(word, name)
                    reads.setdefault(word, name)
        if isinstance(agent, RouterAgent):
            for member in agent.members:
                for passed in member.passes:
                    sets.setdefault(passed.rsplit(".", 1)[-1], member.agent)
        read(name, agent.fallback)
        read(name, agent.exit)
    return reads, sets


PLATFORM_VALUES = frozenset({"user", "human"})


def check_session_values(program: Program, bag: DiagnosticBag) -> None:
    """ABL: a shared value a step reads that nothing sets, or sets that nothing reads."""
    reads, sets = _session_use(program)
    # `user.wants_human_agent`, `user.intent`, `user.sentiment` (3.11.1, 8.8): facts about the user the
    # platform and its model fill; `human.resolved`: what the person an escalation went to hands back
    for value in sorted(set(reads) - set(sets) - PLATFORM_VALUES):
        agent = program.agents[reads[value]]
        bag.add(Diagnostic(NEVER_SET, f"'{value}' is read by agent '{reads[value]}' but nothing gives it a value "
                           "(no GATHER field, SET, tool result or value passed in)",
                           _word_span(agent.span, value), Severity.WARNING,
                           f"gather or SET {value} before it is read, or fix the name"))
    for value in sorted(set(sets) - set(reads)):
        agent = program.agents[sets[value]]
        bag.add(Diagnostic(NEVER_READ, f"'{value}' is set by agent '{sets[value]}' but nothing reads it",
                           _word_span(agent.span, value), Severity.WARNING,
                           "use it in a condition, a message or a call, or remove the SET"))


def _word_span(agent_span: Span | None, word: str) -> Span | None:
    """The first line of the agent's file, from its header on, where `word` is written (outside a comment)."""
    pattern = re.compile(rf"(?<![\w.]){re.escape(word)}(?![\w])")

    def column_of(line: str) -> int | None:
        found = pattern.search(line.split("#", 1)[0])
        return found.start() + 1 if found else None

    return first_line(agent_span, column_of)


# ---- tools ----------------------------------------------------------------------------------------------

_TOOL_VERBS = r"(?:call|calls|calling|invoke|use|run|execute|trigger)"


def used_tools(program: Program) -> set[str]:
    """The tools some agent can call: a flow's call step, a reasoning agent's tools, a hook, a
    constraint, a profile's added tools, a remote agent's endpoint."""
    used: set[str] = set()
    for agent in program.agents.values():
        for graph in (getattr(agent, "graph", None), agent.setup):
            if graph is not None:
                used.update(n.target for n in graph.nodes.values() if isinstance(n, InvokeNode) and n.target_kind == "tool")
        if isinstance(agent, ReasoningAgent):
            used.update(agent.tools)
        if agent.kind == "remote":  # its turns are calls of its endpoint
            used.add(agent.endpoint)
        used.update(h.call for h in agent.rules.hooks if h.call)
        used.update(c.tool for c in agent.rules.constraints if c.tool)
        for profile in agent.rules.profiles:
            used.update(str(t.get("name", "")) if isinstance(t, dict) else str(t) for t in profile.tools_add)
    return used


def check_tools(program: Program, bag: DiagnosticBag) -> None:
    used = used_tools(program)
    if program.language == "abl":
        for tool_name, tool in program.tools.items():
            if tool_name in used and tool.binding.kind == "stub" and not tool.binding.answers:
                bag.add(Diagnostic(UNBOUND_TOOL, f"tool '{tool_name}' has no implementation: every call of it "
                                   "fails", tool.span, Severity.WARNING,
                                   "bind it under its signature: `python: file.py` (the function named like the "
                                   "tool), an HTTP `url:`, or `mcp: <server>` (README, \"Tools\")"))
        for tool_name, tool in program.tools.items():
            if tool_name not in used:
                bag.add(Diagnostic(UNUSED_TOOL, f"tool '{tool_name}' is declared but no agent can call it",
                                   tool.span, Severity.WARNING,
                                   "call it from a FLOW step (CALL), give it to a reasoning agent, or remove it"))
    for name, agent in program.agents.items():
        if not isinstance(agent, ReasoningAgent) or not agent.instructions:
            continue
        given = set(agent.tools)
        for tool_name in program.tools:
            if tool_name in given:
                continue
            quoted = rf"[\"'`“]?{re.escape(tool_name)}[\"'`”]?"
            pattern = re.compile(rf"\b{_TOOL_VERBS}\s+(?:the\s+)?(?:function\s+|tool\s+|action\s+)?{quoted}(?![\w])"
                                 rf"|(?<![\w.]){re.escape(tool_name)}\(", re.IGNORECASE)
            said = next((s for s in sentences(agent.instructions) if pattern.search(s)), None)
            if said is None:
                continue
            bag.add(Diagnostic(UNDECLARED_TOOL, f"agent '{name}' is told to call tool '{tool_name}', which it is "
                               "not given", agent.span, Severity.WARNING,
                               f"add {tool_name} to the agent's tools (ADL uses:, ABL TOOLS), or change the prompt",
                               [f"prompt: \"{' '.join(said.split())[:120]}\""]))


# ---- GATHER fields --------------------------------------------------------------------------------------


def _given_by_others(program: Program) -> set[tuple[str, str]]:
    """(agent, field) pairs other agents give a value: a DELEGATE's INPUT, a HANDOFF's or a supervisor
    member's CONTEXT pass, a flow's handoff step."""
    given: set[tuple[str, str]] = set()
    for agent in program.agents.values():
        for delegation in getattr(agent, "delegates", []):
            given.update((delegation.agent, f) for f in delegation.inputs)
        for handoff in getattr(agent, "handoffs", []):
            given.update((handoff.agent, p.rsplit(".", 1)[-1]) for p in handoff.passes)
        for member in getattr(agent, "members", []):
            given.update((member.agent, p.rsplit(".", 1)[-1]) for p in member.passes)
        for graph in (getattr(agent, "graph", None), agent.setup):
            for node in graph.nodes.values() if graph is not None else []:
                if isinstance(node, HandoffNode | InvokeNode):
                    given.update((node.target, a.name) for a in node.args)
    return given


def check_gather_fields(program: Program, bag: DiagnosticBag) -> None:
    given = _given_by_others(program)
    for name, agent in program.agents.items():
        if not isinstance(agent, FlowAgent) or not agent.rules.gather:
            continue
        asked: set[str] = set()
        if any(isinstance(n, InvokeNode) and isinstance(program.agents.get(n.target), ReasoningAgent)
               for n in agent.graph.nodes.values()):
            continue  # a REASONING step's model may fill any field
        for graph in (agent.graph, agent.setup):
            if graph is None:
                continue
            for node in graph.nodes.values():
                if isinstance(node, ListenNode):
                    asked.update(node.extracts)
                    asked.update(node.corrects)
        for field in agent.rules.gather:
            if field.name not in asked and (name, field.name) not in given:
                bag.add(Diagnostic(UNASKED_FIELD, f"GATHER field '{field.name}' of agent '{name}' is never asked "
                                   "for: no FLOW step gathers it", field.span or agent.span, Severity.WARNING,
                                   "add it to a step's GATHER list, or remove the field"))


__all__ = ["CODES", "agent_cycles", "flow_loops", "lint_program"]
