"""What a `user` step reads its answer for lives in the IR (issue 8): the front end fills it once, the
runtime and `describe` read it, and no graph is re-serialised at run time."""

from __future__ import annotations

import textwrap
from pathlib import Path

from frontdesk.ir.models import BranchNode, ListenNode
from frontdesk.lang import load_program
from frontdesk.llm import ScriptedProvider
from frontdesk.runtime.engine import Engine
from frontdesk.store.memory import MemorySessionStore

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

PHONE = """
main:
  type: flow agent
  args: [phone, size]
  steps:
    - bot: "Which size, and your phone number?"
    - user
    - if: the user claims "Large", "A big one"
      then:
        - set:
            size: large
      else:
        - set:
            size: small
    - bot: "A ${size} one; we will call ${phone}."
"""


def listens(program, agent):
    return [n for n in program.agents[agent].graph.nodes.values() if isinstance(n, ListenNode)]


def test_the_front_end_says_what_each_user_step_classifies_and_extracts(tmp_path):
    (tmp_path / "agents.yml").write_text(textwrap.dedent(PHONE), encoding="utf-8")
    program, _ = load_program(tmp_path)
    (listen,) = listens(program, "main")
    assert isinstance(program.agents["main"].graph.nodes[listen.classifies], BranchNode)
    assert listen.extracts == ["phone"]  # size is set by the flow itself on the way
    bookstore, _ = load_program(EXAMPLES / "bookstore")
    (order_listen,) = listens(bookstore, "order")
    assert order_listen.classifies is not None and order_listen.extracts == ["books"]  # read by place_order


def test_the_runtime_asks_what_the_ir_says_and_nothing_else(tmp_path):
    (tmp_path / "agents.yml").write_text(textwrap.dedent(PHONE), encoding="utf-8")
    program, _ = load_program(tmp_path)
    (listen,) = listens(program, "main")
    listen.extracts = []  # another front end could say the answer gives no values
    llm = ScriptedProvider([{"purpose": "understand", "call": "understand", "with": {"choice": "1"}}])
    engine = Engine(program, llm, MemorySessionStore())
    sid = engine.start().session_id
    result = engine.send(sid, "A big one please, 0123 456")
    llm.assert_finished()
    assert "args" not in llm.calls[0].tools[0].parameters["properties"]
    assert result.messages[-1].text == "A large one; we will call (none)."
