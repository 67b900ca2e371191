"""ADL's data conventions, made explicit in the IR so the runtime needs none of them.

ADL (as MICA runs it) keeps one record per agent, tool and subflow and reads them all the same way
(`agent.arg`, `tool.value`, `agent.status`, `subflow.success`). The runtime has explicit scopes
instead, and this pass says which one each reference means:

- `tool.value`, and `x.status` / `x.message` / `x.success` / `x.error` of an agent (unless it
  declares such an argument) or a subflow, read *results* (Ref space "result"); a subflow's
  result is kept per agent, as `agent/subflow`, so two agents' subflows of the same name differ;
- a member argument bound with `ref` to its ensemble's argument is another name for it
  (`ArgDef.bound_to`, followed through nested ensembles);
- a tool that succeeds sets its caller's arguments of the same names as the values it returns
  (`AgentBase.tool_outputs`);
- its dialogue is the runtime's plain one (`AgentBase.policy`, the `DialoguePolicy` defaults): a flow
  back at a question it asked refuses the values read from the earlier answer, arguments live in the
  agent's own variables and are kept across activations, a handoff shows the conversation as it is,
  an ensemble's member hands back through its own policy, a reasoning agent's model sees its own text.
"""

from __future__ import annotations

from frontdesk.ir.models import (
    DialoguePolicy,
    FlowAgent,
    InvokeNode,
    Program,
    ReasoningAgent,
    Ref,
    RouterAgent,
    StepGraph,
    ToolOutput,
)
from frontdesk.ir.walk import refs_in

RESULT_NAMES = ("status", "message", "success", "error")
ADL_POLICY = DialoguePolicy()  # ADL adds no dialogue conventions of its own: the runtime's plain behaviour


def apply_adl_conventions(program: Program) -> Program:
    """Rewrite `program` (in place) so its references and agents say what ADL leaves implicit."""
    _bind_ref_arguments(program)
    # tools: those the program declares, and any a step calls (a test may answer it with a stub)
    tools = set(program.tools) | {n.target for a in program.agents.values() for g in _graphs(a)
                                  for n in g.nodes.values() if isinstance(n, InvokeNode) and n.target_kind == "tool"}
    for agent in program.agents.values():
        subflows = set(agent.graph.subflows) if isinstance(agent, FlowAgent) else set()
        for graph in _graphs(agent):
            for node in graph.nodes.values():
                if isinstance(node, InvokeNode) and node.target_kind == "subflow" and node.result is None:
                    node.result = f"{agent.name}/{node.target}"
            for ref in refs_in(graph):
                _place(ref, agent.name, subflows, tools, program)
        _tool_outputs(agent, program)
        agent.policy = ADL_POLICY.model_copy()
    return program


def _graphs(agent) -> list[StepGraph]:
    graphs = [agent.setup] if agent.setup is not None else []
    if isinstance(agent, FlowAgent):
        graphs.append(agent.graph)
    return graphs


def _place(ref: Ref, agent: str, subflows: set[str], tools: set[str], program: Program) -> None:
    if ref.space != "var":
        return
    if ref.scope in subflows and ref.scope not in program.agents:
        ref.scope, ref.space = f"{agent}/{ref.scope}", "result"
    elif ref.scope in program.agents:
        if ref.name in RESULT_NAMES and ref.name not in program.agents[ref.scope].arg_names():
            ref.space = "result"
    elif ref.scope in tools:
        ref.space = "result"


def _bind_ref_arguments(program: Program) -> None:
    """Two-way (`ref`) bindings: the member's argument is the ensemble's, which may itself be bound."""
    links: dict[tuple[str, str], tuple[str, str]] = {}
    for router in program.agents.values():
        if isinstance(router, RouterAgent):
            for member in router.members:
                for binding in member.bindings:
                    if binding.two_way:
                        links.setdefault((member.agent, binding.member_arg), (router.name, binding.router_arg))
    for agent in program.agents.values():
        for arg in agent.args:
            key = (agent.name, arg.name)
            seen = {key}
            while key in links and links[key] not in seen:
                key = links[key]
                seen.add(key)
            if key != (agent.name, arg.name):
                arg.bound_to = Ref(scope=key[0], name=key[1])


def _tool_outputs(agent, program: Program) -> None:
    """The tools an agent calls set its arguments of the same names (when the call succeeds)."""
    called: list[str] = list(agent.tools) if isinstance(agent, ReasoningAgent) else []
    for graph in _graphs(agent):
        called += [n.target for n in graph.nodes.values() if isinstance(n, InvokeNode) and n.target_kind == "tool"]
    names = agent.arg_names()
    for tool in dict.fromkeys(called):
        if tool not in agent.tool_outputs and names:
            agent.tool_outputs[tool] = [ToolOutput(field=n, target=Ref(scope=agent.name, name=n)) for n in names]
