"""Explicit state scopes: session variables, results, system variables, frame locals and persistent
memory; and ADL's record conventions lowered on the ADL side, so the runtime knows none of them."""

from __future__ import annotations

import textwrap
from datetime import UTC, datetime
from random import Random

from frontdesk.lang import build as b
from frontdesk.ir.models import (
    AssignNode,
    Assignment,
    Call,
    ExprPart,
    FlowAgent,
    ListenNode,
    Lit,
    Ref,
    SayNode,
    StepGraph,
    Template,
    TextPart,
)
from frontdesk.lang import load_program
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.tools import StubToolRunner
from frontdesk.store.longterm import DictMemoryStore
from frontdesk.store.memory import MemorySessionStore

PROGRAM = """
main:
  type: flow agent
  args: [code]
  steps:
    - call: desk

desk:
  type: ensemble agent
  args: [item]
  contains:
    - picker:
        args:
          choice: ref item
  steps:
    - bot: "Hello"

picker:
  type: flow agent
  args: [choice, total]
  steps:
    - call: lookup
    - call: check
    - call: price
      args:
        item: lookup.found
    - if: price.success and check.success
      then:
        - bot: "ok ${price.total} ${lookup.status}"
    - user
  check:
    - return: success

lookup:
  type: flow agent
  args: [found]
  steps:
    - set:
        found: '"kettle"'
"""


def compiled(tmp_path):
    (tmp_path / "agents.yml").write_text(textwrap.dedent(PROGRAM), encoding="utf-8")
    (tmp_path / "tools.py").write_text(textwrap.dedent('''
        def price(item: str):
            """Price an item."""
            return [{"arg": "total", "value": 12}]
    '''), encoding="utf-8")
    program, diags = load_program(tmp_path)
    assert program is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    return program


def refs_in(node):
    from frontdesk.ir.walk import refs_in

    return list(refs_in(node))


def test_the_adl_front_end_says_which_scope_each_reference_reads(tmp_path):
    program = compiled(tmp_path)
    picker = program.agents["picker"]
    refs = {(r.space, r.scope, r.name) for r in refs_in(picker.graph)}
    assert ("result", "price", "success") in refs  # a tool's status is a result
    assert ("result", "price", "total") in refs  # and so is a value it returned
    assert ("result", "picker/check", "success") in refs  # a subflow's result, kept per agent
    assert ("result", "lookup", "status") in refs  # an agent's status
    assert ("var", "lookup", "found") in refs  # an agent's argument is a session variable
    # `ref` binding: the member's argument is the ensemble's
    choice = next(a for a in picker.args if a.name == "choice")
    assert choice.bound_to == Ref(scope="desk", name="item")
    # a tool that succeeds sets its caller's arguments of the same names
    outputs = picker.tool_outputs["price"]
    assert [(o.field, o.target.scope, o.target.name) for o in outputs] == [
        ("choice", "picker", "choice"), ("total", "picker", "total")]
    subflow_call = next(n for n in picker.graph.nodes.values() if getattr(n, "target", None) == "check")
    assert subflow_call.result == "picker/check"


def test_results_variables_and_bindings_at_run_time(tmp_path):
    program = compiled(tmp_path)
    engine = Engine(program, None, MemorySessionStore())
    result = engine.start()
    # the router has one member, which starts with the turn's message; here: at start nothing routes
    sid = result.session_id
    result = engine.send(sid, "go")
    assert [m.text for m in result.messages][-1] == "ok 12 success"
    state = engine.load_state(sid)
    assert state.results["price"].values == {"total": 12} and state.results["price"].status == "success"
    assert state.variables["picker"]["total"] == 12  # kept by the caller (tool_outputs)
    assert state.results["picker/check"].status == "success"
    assert "__status" not in str(state.model_dump())


def scoped_program():
    """A flow written as IR by hand: memory, frame-local, system and function references."""
    nodes = {
        "n1": AssignNode(id="n1", next="n2", assignments=[
            Assignment(target=Ref(space="memory", scope="user", name="favourite"), value=Lit(value="tea")),
            Assignment(target=Ref(space="local", scope="main", name="draft"), value=Lit(value="D-1")),
        ]),
        "n2": SayNode(id="n2", next="n3", text=Template(source="", parts=[
            TextPart(text="turn "), ExprPart(expr=Ref(space="system", scope="system", name="turn")),
            TextPart(text=" user "), ExprPart(expr=Ref(space="system", scope="system", name="user_id")),
            TextPart(text=" likes "), ExprPart(expr=Ref(space="memory", scope="user", name="favourite")),
            TextPart(text=" draft "), ExprPart(expr=Ref(space="local", scope="main", name="draft")),
        ])),
        "n3": SayNode(id="n3", next="n4", text=Template(source="", parts=[
            ExprPart(expr=Call(fn="NOW", args=[])), TextPart(text=" "),
            ExprPart(expr=Call(fn="UNIQUE_ID", args=[])),
        ])),
        "n4": ListenNode(id="n4", next=None),
    }
    return b.program(FlowAgent(name="main", graph=StepGraph(entry="n1", nodes=nodes)))


def test_system_variables_frame_locals_and_persistent_memory(tmp_path):
    memory = DictMemoryStore()
    program = scoped_program()

    def engine():
        return Engine(program, None, MemorySessionStore(), memory=memory, clock=lambda: 1_700_000_000.0,
                      random=Random(7))

    first = engine().start(user_id="ada", channel="test")
    said = [m.text for m in first.messages]
    assert said[0] == "turn 0 user ada likes tea draft D-1"
    now, unique = said[1].split()
    assert now == datetime.fromtimestamp(1_700_000_000, UTC).isoformat()
    # the same seeded random source gives the same id: UNIQUE_ID() is testable
    assert [m.text for m in engine().start(user_id="bob").messages][1].split()[1] == unique
    assert memory.get("user", "ada", "favourite") == "tea"
    # a session with no user keeps nothing per user
    anonymous = engine().start()
    assert [m.text for m in anonymous.messages][0] == "turn 0 user (none) likes (none) draft D-1"


def test_a_tool_that_fails_sets_nothing_for_its_caller():
    program = b.program(b.flow("main", [b.call("check", "tool"), b.say("code: ${code}"), b.listen()], args=["code"]))
    tools = StubToolRunner({"check": [{"status": "error", "msg": "no"}, {"arg": "code", "value": "X"}]})
    result = Engine(program, None, MemorySessionStore(), tools=tools).start()
    assert [m.text for m in result.messages] == ["code: (none)"]


def test_a_return_message_is_a_template():
    program = b.program(
        b.flow("main", [b.call("check", code='"A-9"'), b.say("Check said: ${check.message}"), b.listen()]),
        b.flow("check", [b.ret("error", "bad code ${code}")], args=["code"]),
    )
    result = Engine(program, None, MemorySessionStore()).start()
    assert [m.text for m in result.messages] == ["Check said: bad code A-9"]


def test_execution_tree_memory_belongs_to_the_session_even_when_the_program_is_named():
    from frontdesk.ir.models import Assignment, AssignNode, FlowAgent, ListenNode, Lit, StepGraph

    nodes = {"n1": AssignNode(id="n1", next="n2", assignments=[
        Assignment(target=Ref(space="memory", scope="execution_tree", name="quote"), value=Lit(value=42))]),
        "n2": ListenNode(id="n2")}
    program = b.program(FlowAgent(name="main", graph=StepGraph(entry="n1", nodes=nodes)))
    memory = DictMemoryStore()
    sid = Engine(program, None, MemorySessionStore(), memory=memory).start(program_label="shop.yml").session_id
    assert memory.get("execution_tree", sid, "quote") == 42
    assert memory.get("execution_tree", "shop.yml", "quote") is None
