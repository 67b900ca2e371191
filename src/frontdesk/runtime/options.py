"""The phrased options the runtime decides between: router members and `the user claims` cases.

Example phrases are mined from the program itself: an agent's description, the claims
examples of its flow, its FAQ questions and the titles of its knowledge documents.
"""

from __future__ import annotations

import re
from pathlib import Path

from frontdesk.ir.models import (
    BranchNode,
    ClaimsCondition,
    FlowAgent,
    InvokeNode,
    KnowledgeAgent,
    Program,
    ReasoningAgent,
    RouterAgent,
    SayNode,
)
from frontdesk.nlu.base import Option

MAX_EXAMPLES_PER_AGENT = 40
MAX_ROUTE_EXAMPLES = 60
# Headings and questions of a knowledge agent's documents count for less than its own phrases.
DOCUMENT_PHRASE_WEIGHT = 0.85
# weight of an LLM agent's prompt opening and tool descriptions among its route examples
TASK_PHRASE_WEIGHT = 0.9


def router_phrases(program: Program) -> dict[str, list[str]]:
    """What the program's routers say of when to route to each member (ABL HANDOFF WHEN, INTENT(...)
    words), by member: read once for all members, not once per member."""
    phrases: dict[str, list[str]] = {}
    for router in program.agents.values():
        if isinstance(router, RouterAgent):
            for member in router.members:
                phrases.setdefault(member.agent, []).extend([member.description, *member.examples])
    return phrases


def agent_examples(program: Program, name: str, routed_by: dict[str, list[str]] | None = None) -> tuple[str, ...]:
    agent = program.agents[name]
    examples: list[str] = []
    if agent.description:
        examples.append(agent.description)
    examples.extend(flow_answers(program, name))
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
    # what a router says of when to route here (ABL HANDOFF WHEN, INTENT(...) words)
    examples.extend((routed_by if routed_by is not None else router_phrases(program)).get(name, []))
    seen: set[str] = set()
    unique = [e for e in examples if e and not (e.lower() in seen or seen.add(e.lower()))]
    return tuple(unique[:MAX_EXAMPLES_PER_AGENT])


def _title(path: str) -> str:
    stem = re.split(r"[/\\]", path.rstrip("/\\"))[-1]
    stem = re.sub(r"\.[A-Za-z0-9]+$", "", stem)
    words = re.sub(r"[_\-]+", " ", stem).strip()
    return words if len(words.split()) >= 2 else ""


def route_options(program: Program, names: list[str], root: Path | None = None) -> list[Option]:
    """One option per candidate agent, keyed by the agent's name.

    For routing, bare yes/no answers among an agent's claims examples say nothing about what
    the user wants and are left out; the agent's name is a phrase too ("check balance"); with
    `root`, a knowledge agent also brings its documents' headings and question lines (kept on disk
    beside its index, `cached_knowledge_phrases`).
    """
    from frontdesk.nlu.matcher import polarity

    routed_by = router_phrases(program)
    options = []
    for name in names:
        weighted = {e: 1.0 for e in agent_examples(program, name, routed_by)
                    if not (polarity(e) and len(e.split()) <= 3)}
        answers = set(flow_answers(program, name))
        weighted.setdefault(name.replace("_", " "), 1.0)
        agent = program.agents[name]
        if root is not None and isinstance(agent, KnowledgeAgent):
            for phrase in cached_knowledge_phrases(agent, root):
                weighted.setdefault(phrase, DOCUMENT_PHRASE_WEIGHT)
        if isinstance(agent, ReasoningAgent):
            for phrase in task_phrases(program, agent):
                weighted.setdefault(phrase, TASK_PHRASE_WEIGHT)
        kept = list(weighted.items())[:MAX_ROUTE_EXAMPLES]
        options.append(Option(key=name, examples=tuple(e for e, _ in kept), weights=tuple(w for _, w in kept),
                              keyword_examples=tuple(e for e, _ in kept if e not in answers)))
    return options


def flow_answers(program: Program, name: str) -> list[str]:
    """The claims examples of an agent's flow: answers to its own questions. Their meaning says what the
    task is about, but their words ("the one linked to my current account") do not ask for it."""
    agent = program.agents[name]
    graph = agent.graph if isinstance(agent, FlowAgent) else agent.setup
    if graph is None:
        return []
    return [e for node in graph.nodes.values() if isinstance(node, BranchNode)
            for case in node.cases if isinstance(case.condition, ClaimsCondition)
            and _calls_other_agent(graph, case.target, name) is None for e in case.condition.examples]


def _calls_other_agent(graph, start: str | None, name: str, look: int = 4) -> str | None:
    """The agent a `then` block hands the answer to (`call: book_recommendation` after "Do you have other
    types of books?"), looking past what it says first; None when it stays with this agent. Such a case's
    examples ask for that agent's task, not for this one's."""
    node = graph.nodes.get(start) if start else None
    for _ in range(look):
        if node is None:
            return None
        if isinstance(node, InvokeNode):
            return node.target if node.target_kind == "agent" and node.target != name else None
        if not isinstance(node, SayNode):
            return None
        node = graph.nodes.get(node.next) if node.next else None
    return None


def task_phrases(program: Program, agent: ReasoningAgent) -> list[str]:
    """What an LLM agent does, in its designer's words: the first sentence of its prompt and what its
    tools do ("Send money to an authorised payee now.")."""
    phrases = []
    first = re.split(r"(?<=[.!?])\s|\n", agent.instructions.strip(), maxsplit=1)[0].strip()
    if 4 <= len(first.split()) <= 30:
        phrases.append(first)
    for name in agent.tools:
        tool = program.tools.get(name)
        text = (tool.description or "").strip() if tool is not None else ""
        if text:
            phrases.append(re.split(r"(?<=[.!?])\s|\n", text, maxsplit=1)[0].strip())
    return phrases


def knowledge_phrases(agent: KnowledgeAgent, root: Path) -> list[str]:
    """Headings and questions in a knowledge agent's local documents (web pages are not fetched)."""
    from frontdesk.runtime.retrieval.sources import load_source

    phrases: list[str] = []
    for source in agent.sources:
        if source.kind == "url":
            continue
        documents, _problems = load_source(source, root, fetch_urls=False)
        for doc in documents:
            if len(doc.title) >= 4:
                phrases.append(doc.title)
            for line in doc.text.splitlines():
                text = line.strip().lstrip("#").strip()
                heading = line.lstrip().startswith("#") and len(text) >= 4
                if (heading or text.endswith("?")) and len(text.split()) <= 20:
                    phrases.append(text)
    return phrases


def cached_knowledge_phrases(agent: KnowledgeAgent, root: Path) -> list[str]:
    """knowledge_phrases, kept beside the agent's index while its files stay the same (retrieval/cache.py)."""
    from frontdesk.runtime.retrieval.cache import kept_phrases

    return kept_phrases(agent, root, lambda: knowledge_phrases(agent, root))


def claims_options(branch: BranchNode) -> list[Option]:
    """One option per `the user claims` case, keyed by its 1-based case number."""
    return [
        Option(key=str(i), examples=tuple(case.condition.examples))
        for i, case in enumerate(branch.cases, start=1)
        if isinstance(case.condition, ClaimsCondition)
    ]
