"""IR builders (issue 8): programs written in Python, without a source language, and a behaviour suite
that the same program runs through whichever way it was made."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from frontdesk.lang import build as b
from frontdesk.ir.models import BranchNode, JumpNode, ListenNode
from frontdesk.lang import load_program
from frontdesk.llm import ScriptedProvider
from frontdesk.runtime.engine import Engine
from frontdesk.store.memory import MemorySessionStore

from test_turn_input import RECOMMEND_THEN_CHECKOUT, SHOP


def shop_from_builder(tmp_path: Path):
    return b.program(
        b.flow("main", [b.call("desk")]),
        b.router("desk", ["advisor", "checkout", "faq"], description="The shop's front desk.", args=["item"],
                 setup=[b.say("Hello, how can I help?")],
                 bindings={"advisor": {"picked": "item"}, "checkout": {"items": "item"}}),
        b.knowledge("faq", description="Answers questions about delivery.",
                    faq=[("How long does delivery take?", "Delivery takes two days.")]),
        b.reasoning("advisor", "Recommend a product; when the user agrees, record it in picked and finish.",
                    description="Recommends a product.", args=["picked"]),
        b.flow("checkout", [
            b.label("confirm"),
            b.say("In your basket: ${items}. Anything else?"),
            b.listen(),
            b.branch((b.claims("Yes, I want more"), [b.call("advisor"), b.goto("confirm")]),
                     (b.claims("No, that's all"), [b.say("Order placed for ${items}."), b.ret()]),
                     otherwise=[b.goto("confirm", tries=2)]),
        ], description="Buys the chosen products.", args=["items"]),
        root=str(tmp_path),
    )


def shop_from_adl(tmp_path: Path):
    (tmp_path / "agents.yml").write_text(textwrap.dedent(SHOP), encoding="utf-8")
    program, diagnostics = load_program(tmp_path)
    assert program is not None, diagnostics
    return program


FRONT_ENDS = {"adl": shop_from_adl, "builder": shop_from_builder}


def test_the_builder_makes_graphs_with_labels_jumps_and_branches():
    g = b.graph("checkout", [b.label("top"), b.say("Hi"), b.listen(),
                             b.branch(("x == 1", [b.say("one")]), otherwise=[b.goto("top", tries=2)]),
                             b.say("after")])
    say, listen = g.nodes[g.entry], g.nodes[g.nodes[g.entry].next]
    assert g.labels == {"top": say.id} and isinstance(listen, ListenNode)
    branch = g.nodes[listen.next]
    assert isinstance(branch, BranchNode)
    (case,) = branch.cases
    assert g.nodes[case.target].next == branch.next  # a block goes on after the branch
    jump = g.nodes[branch.otherwise]
    assert isinstance(jump, JumpNode) and jump.target == say.id and jump.tries == 2
    with pytest.raises(ValueError, match="no label or subflow named 'nowhere'"):
        b.graph("x", [b.goto("nowhere")])


@pytest.mark.parametrize("front_end", sorted(FRONT_ENDS))
def test_behaviour_a_question_inside_an_llm_agent_is_answered_and_the_agent_comes_back(front_end, tmp_path):
    llm = ScriptedProvider([
        {"purpose": "route", "call": "route", "with": {"agent": "advisor"}},
        {"purpose": "reason", "reply": "I recommend the Blue Kettle. Would you like it?"},
        {"purpose": "reason", "calls": [{"name": "hand_back", "arguments": {"to": "faq"}}]},
    ])
    engine = Engine(FRONT_ENDS[front_end](tmp_path), llm, MemorySessionStore())
    sid = engine.start().session_id
    assert [m.text for m in engine.send(sid, "Recommend something").messages] == [
        "I recommend the Blue Kettle. Would you like it?"]
    result = engine.send(sid, "How long does delivery take?")
    llm.assert_finished()
    assert [m.text for m in result.messages] == ["Delivery takes two days.",
                                                 "I recommend the Blue Kettle. Would you like it?"]
    assert result.active_agent == "advisor"


@pytest.mark.parametrize("front_end", sorted(FRONT_ENDS))
def test_behaviour_a_finished_choice_reaches_the_flow_through_the_router_binding(front_end, tmp_path):
    llm = ScriptedProvider([*RECOMMEND_THEN_CHECKOUT,
                            {"purpose": "understand", "call": "understand", "with": {"choice": "2"}}])
    engine = Engine(FRONT_ENDS[front_end](tmp_path), llm, MemorySessionStore())
    sid = engine.start().session_id
    engine.send(sid, "Recommend something")
    assert [m.text for m in engine.send(sid, "Yes, I want to buy it").messages] == [
        "In your basket: Blue Kettle. Anything else?"]
    assert [m.text for m in engine.send(sid, "No, that's all").messages] == ["Order placed for Blue Kettle."]
    llm.assert_finished()


def test_a_built_flow_calls_stub_tools_and_reads_their_results():
    from frontdesk.runtime.tools import StubToolRunner

    program = b.program(b.flow("main", [
        b.call("place_order", "tool", item='"kettle"'),
        b.branch(("place_order.success", [b.say("Done: ${place_order.message}")]),
                 otherwise=[b.say("Sorry: ${place_order.message}")]),
        b.call("check_stock", "tool"),
        b.say("Stock: ${check_stock.count}"),
    ]))
    tools = StubToolRunner({
        "place_order": lambda item: [{"status": "success", "msg": f"order 7 for the {item}"}],
        "check_stock": {"count": 3},
    })
    result = Engine(program, None, MemorySessionStore(), tools=tools).start()
    assert [m.text for m in result.messages] == ["Done: order 7 for the kettle", "Stock: 3"]
    assert tools.calls == [("place_order", {"item": "kettle"}), ("check_stock", {})]
    assert StubToolRunner({}).call("missing", {}).status == "error"
