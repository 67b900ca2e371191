"""ABL's meaning lives in typed IR (issue 24, point 1): each agent's DialoguePolicy says how its dialogue
behaves, ask nodes carry their field, FLOW step agents their owner; the runtime reads these and never
which language a program came from, nor meaning out of an id or a name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from frontdesk.expr.template import parse_template
from frontdesk.ir.behaviour import AgentRules
from frontdesk.ir.expr import Compare, ExprCondition, Lit, Ref
from frontdesk.ir.models import (
    ArgDef,
    BranchCase,
    BranchNode,
    FlowAgent,
    ListenNode,
    Program,
    ReasoningAgent,
    SayNode,
    StepGraph,
)
from frontdesk.lang.abl.compiler import load_abl
from frontdesk.lang.abl.conventions import abl_policy
from frontdesk.lang.adl.conventions import ADL_POLICY
from frontdesk.runtime.engine import Engine
from frontdesk.store.memory import MemorySessionStore

SRC = Path(__file__).resolve().parents[1] / "src" / "frontdesk"
ABL_SPEC = Path(__file__).resolve().parent / "abl" / "spec"

# How code would guess the language or read meaning out of a name: whether an agent has rules at all,
# the ABL front end's node ids (`<step>.ask_<field>_<n>`, `.has_<field>_<n>`, `__complete`), FLOW step
# agents' names (`<Agent>__<step>`), and the program's language label. (The engine's rules hook,
# `engine.rules`, is no agent's rules.)
PROXIES = {
    "rules is not None": re.compile(r"(?<!engine\.)(?<!self\.)\brules\b[^\n]{0,3} is not None"),
    "rules is None": re.compile(r"(?<!engine\.)(?<!self\.)\brules\b[^\n]{0,3} is None"),
    'getattr(..., "rules", None)': re.compile(r"""["']rules["'],\s*None"""),
    "an ask node's id": re.compile(r"""["']\.ask_|\\\.ask_"""),
    "a GATHER check's id": re.compile(r"""["']\.has_|\\\.has_"""),
    "the flow's end node's id": re.compile(r"""["']__complete["']"""),
    "a step agent's name": re.compile(r"""partition\(\s*["']__["']\s*\)|split\(\s*["']__["']|["']__["']\s+in\s"""),
    "a node id's step": re.compile(r"""\.id\.split\(\s*["']\.["']"""),
    "the language label": re.compile(r"""\.language\s*[!=]=|[!=]=\s*["']a[bd]l["']|\babl\s*=\s*[^=\n]*\brules\b"""),
}


def _sources():
    for folder in ("runtime", "server"):
        yield from sorted((SRC / folder).rglob("*.py"))


def test_no_language_proxy_in_the_runtime_or_the_server():
    found = []
    for path in _sources():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            code = line.split("#", 1)[0]
            for what, pattern in PROXIES.items():
                if pattern.search(code):
                    found.append(f"{path.relative_to(SRC)}:{number}: {what}: {line.strip()}")
    assert not found, "the runtime guesses the language or reads meaning out of a name:\n" + "\n".join(found)


@pytest.mark.parametrize("line", [
    "    if agent.rules is not None:",
    "    rules = getattr(agent, \"rules\", None)",
    "    asked = re.search(r\"\\.ask_(\\w+?)_\\d+$\", node.id)",
    "    if \".ask_\" in node.id:",
    "    owner = agent.name.partition(\"__\")[0]",
    "    step = node.id.split(\".\", 1)[0]",
    "    target = \"__complete\" if goto == \"COMPLETE\" else goto",
    "    if program.language == \"abl\":",
])
def test_the_proxy_check_finds_what_it_looks_for(line):
    assert any(p.search(line) for p in PROXIES.values())


# ---- the policy, not the language, drives the dialogue ------------------------------------------------


def _text(text: str):
    return parse_template(text, "booking")


def _guests_flow(policy, language: str = "adl") -> Program:
    """A flow built directly in the IR: it asks for the number of guests (a GATHER-style question that
    carries its field), asks again while there are more than 10, confirms and lets a last message
    correct the number."""
    guests = Ref(scope="booking", name="guests")
    nodes = [
        SayNode(id="ask", text=_text("How many guests?"), asks="guests", next="listen"),
        ListenNode(id="listen", extracts=["guests"], corrects=["guests"], next="check"),
        BranchNode(id="check", cases=[BranchCase(condition=ExprCondition(
            source="guests > 10", expr=Compare(cmp=">", left=guests, right=Lit(value=10))), target="ask")],
            otherwise="confirm"),
        SayNode(id="confirm", text=_text("Booking for ${guests}. Anything else?"), next="last"),
        ListenNode(id="last", corrects=["guests"], next="done"),
        SayNode(id="done", text=_text("Done: ${guests} guests.")),
    ]
    graph = StepGraph(entry="ask", nodes={n.id: n for n in nodes})
    agent = FlowAgent(name="booking", args=[ArgDef(name="guests", type="number")], graph=graph, policy=policy)
    return Program(language=language, entry="booking", agents={"booking": agent})


def _said(result) -> list[str]:
    return [m.text for m in result.messages]


ABL_STYLE = abl_policy(AgentRules())


def test_the_abl_policy_asks_only_for_what_is_missing_and_counts_the_question_asked_again():
    engine = Engine(_guests_flow(ABL_STYLE), None, MemorySessionStore())
    sid = engine.start().session_id
    assert _said(engine.send(sid, "12")) == ["How many guests?"]
    # the GATHER asks again for what is missing: 12 stays, so the flow asks once more
    assert _said(engine.send(sid, "5")) == ["How many guests?"]
    state = engine.load_state(sid)
    assert state.variables["booking"]["guests"] == 12
    assert state.system["_clarification_count"] == 2


def test_the_adl_policy_refuses_the_earlier_answer_and_takes_the_new_one():
    engine = Engine(_guests_flow(ADL_POLICY.model_copy()), None, MemorySessionStore())
    sid = engine.start().session_id
    assert _said(engine.send(sid, "12")) == ["How many guests?"]
    assert _said(engine.send(sid, "5")) == ["Booking for 5. Anything else?"]
    state = engine.load_state(sid)
    assert "_clarification_count" not in state.system


def test_the_abl_policy_takes_a_correction_of_an_earlier_field():
    engine = Engine(_guests_flow(ABL_STYLE), None, MemorySessionStore())
    sid = engine.start().session_id
    assert _said(engine.send(sid, "3")) == ["Booking for 3. Anything else?"]
    assert _said(engine.send(sid, "actually 4 guests")) == ["Done: 4 guests."]


@pytest.mark.parametrize("language", ["adl", "abl"])
def test_without_the_policy_a_correction_is_just_the_next_answer(language):
    """The language label changes nothing: the default policy (what a program built in the IR gets)
    reads no corrections, whatever the program says it was written in."""
    engine = Engine(_guests_flow(ADL_POLICY.model_copy(), language), None, MemorySessionStore())
    sid = engine.start().session_id
    assert _said(engine.send(sid, "3")) == ["Booking for 3. Anything else?"]
    assert _said(engine.send(sid, "actually 4 guests")) == ["Done: 3 guests."]


def test_a_program_built_in_the_ir_gets_the_plain_policy():
    agent = FlowAgent(name="a", graph=StepGraph(entry=None))
    assert agent.policy == ADL_POLICY
    assert agent.rules == AgentRules()
    assert agent.policy.step_limit is None and agent.policy.unbound_scope is None


# ---- the front ends fill it ----------------------------------------------------------------------------


def test_the_abl_front_end_fills_policies_ask_nodes_and_step_owners():
    program, _ = load_abl(ABL_SPEC / "core_insurance_claim_flow")
    assert program is not None
    flow = next(a for a in program.agents.values() if isinstance(a, FlowAgent))
    assert flow.policy.reask == "missing" and flow.policy.corrections and flow.policy.digressions
    assert flow.policy.unbound_scope == "session" and flow.policy.handoff_context
    assert flow.policy.step_limit == (flow.rules.execution.max_flow_iterations or 100)
    asks = [n for n in flow.graph.nodes.values() if isinstance(n, SayNode) and n.asks]
    assert asks and all(n.asks in {f.name for f in flow.rules.gather} for n in asks)
    listens = [n for n in flow.graph.nodes.values() if isinstance(n, ListenNode) and n.extracts]
    assert listens and all(n.step in flow.graph.labels for n in listens)
    assert flow.graph.complete in flow.graph.nodes
    checks = [n for n in flow.graph.nodes.values() if isinstance(n, BranchNode) and n.settles]
    assert checks and all(n.settles in {f.name for f in flow.rules.gather} for n in checks)
    steps = [a for a in program.agents.values() if isinstance(a, ReasoningAgent) and a.owner]
    for step in steps:
        assert step.owner == step.shown_as and step.owner in program.agents
        assert program.rules_for(step.name) is program.agents[step.owner].rules
        assert step.policy.prompt == "sections" and not step.policy.handoff_context


def test_the_adl_front_end_keeps_the_plain_policy():
    from frontdesk.lang import load_program

    program, _ = load_program(Path(__file__).resolve().parents[1] / "examples" / "bookstore")
    assert program.language == "adl"
    assert all(a.policy == ADL_POLICY for a in program.agents.values())


def test_a_name_no_agent_declares_lives_where_the_entry_agents_policy_keeps_such_names():
    shared = _guests_flow(ABL_STYLE)
    own = _guests_flow(ADL_POLICY.model_copy())
    assert shared.slot_of(None, "coupon") == ("session", "coupon")
    assert own.slot_of(None, "coupon") == ("booking", "coupon")
    assert shared.slot_of("booking", "guests") == own.slot_of("booking", "guests") == ("booking", "guests")
