"""The phrased options the runtime decides between: router members and `the user claims` cases.

Example phrases are mined from the program itself: an agent's description, the claims
examples of its flow, its FAQ questions and the titles of its knowledge documents.
"""

from __future__ import annotations

import re
from frontdesk.ir.models import (
    BranchNode,
    ClaimsCondition,
    FlowAgent,
    KnowledgeAgent,
    Program,
    RouterAgent,
)
from frontdesk.nlu.base import Option

MAX_EXAMPLES_PER_AGENT = 40


def agent_examples(program: Program, name: str) -> tuple[str, ...]:
    agent = program.agents[name]
    examples: list[str] = []
    if agent.description:
        examples.append(agent.description)
    if isinstance(agent, FlowAgent):
        graphs = [agent.graph]
    else:
        graphs = [agent.setup] if agent.setup else []
    for graph in graphs:
        for node in graph.nodes.values():
            if isinstance(node, BranchNode):
                for case in node.cases:
                    if isinstance(case.condition, ClaimsCondition):
                        examples.extend(case.condition.examples)
    if isinstance(agent, KnowledgeAgent):
        examples.extend(entry.q for entry in agent.faq)
        for source in agent.sources:
            title = _title(source.path or source.location)
            if title:
                examples.append(title)
    if isinstance(agent, RouterAgent):
        for member in agent.members:
            if member.agent in program.agents and program.agents[member.agent].description:
                examples.append(program.agents[member.agent].description)
    seen: set[str] = set()
    unique = [e for e in examples if e and not (e.lower() in seen or seen.add(e.lower()))]
    return tuple(unique[:MAX_EXAMPLES_PER_AGENT])


def _title(path: str) -> str:
    stem = re.split(r"[/\\]", path.rstrip("/\\"))[-1]
    stem = re.sub(r"\.[A-Za-z0-9]+$", "", stem)
    words = re.sub(r"[_\-]+", " ", stem).strip()
    return words if len(words.split()) >= 2 else ""


def route_options(program: Program, names: list[str]) -> list[Option]:
    """One option per candidate agent, keyed by the agent's name."""
    return [Option(key=name, examples=agent_examples(program, name) or (name.replace("_", " "),))
            for name in names]


def claims_options(branch: BranchNode) -> list[Option]:
    """One option per `the user claims` case, keyed by its 1-based case number."""
    return [
        Option(key=str(i), examples=tuple(case.condition.examples))
        for i, case in enumerate(branch.cases, start=1)
        if isinstance(case.condition, ClaimsCondition)
    ]
