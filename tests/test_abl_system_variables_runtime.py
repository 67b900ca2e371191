"""abl-specification 8.8 variables the runtime sets: `_disambiguation_intents` (the members a supervisor
asks the user to choose between, cleared when one is picked) and `_pending_inferences` (values the model
read for an `infer: true` field, waiting for the user to confirm; gone when the user gives the value)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from frontdesk.lang import load_program
from frontdesk.llm.scripted import ScriptedProvider
from frontdesk.nlu.base import Decision
from frontdesk.runtime.engine import Engine
from frontdesk.store.memory import MemorySessionStore


def project(tmp_path: Path, files: dict[str, str]):
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    program, diags = load_program(tmp_path)
    assert program is not None, [d.format() for d in diags]
    return program


class Unsure:
    """An understanding model that is never sure: Billing 0.40, Shipping 0.35."""

    name = "unsure"

    def decide(self, message, options, task, thresholds=None):
        scores = {o.key: {"Billing": 0.40, "Shipping": 0.35}.get(o.key, 0.05) for o in options}
        return Decision(choice="Billing", score=0.40, margin=0.05, sure=False, best="Billing", scores=scores)


FRONT = """
    SUPERVISOR: Front
    GOAL: "Route customers"
    AGENTS:
      - Billing
      - Shipping
"""
BILLING = """
    AGENT: Billing
    GOAL: "Answer billing questions"
    FLOW:
      hello:
        RESPOND: "Billing here."
        THEN: COMPLETE
"""
SHIPPING = BILLING.replace("Billing", "Shipping").replace("billing", "shipping")


def test_the_intents_a_supervisor_asks_about_are_kept_until_one_is_picked(tmp_path):
    program = project(tmp_path, {"front.agent.abl": FRONT, "billing.agent.abl": BILLING,
                                 "shipping.agent.abl": SHIPPING})
    llm = ScriptedProvider([])
    llm.can_classify = False
    engine = Engine(program, llm, MemorySessionStore(), understanding=Unsure())
    sid = engine.start().session_id
    asked = engine.send(sid, "about my thing")
    assert asked.messages[0].text.startswith("Just to be sure I understand")
    assert engine.load_state(sid).system["_disambiguation_intents"] == ["Billing", "Shipping"]
    picked = engine.send(sid, "the second one")
    assert [m.text for m in picked.messages] == ["Shipping here."]
    assert "_disambiguation_intents" not in engine.load_state(sid).system


ORDER = """
    AGENT: Order_Desk
    GOAL: "Take orders"
    GATHER:
      size:
        prompt: "Which size?"
        type: string
        options: [small, large]
        infer: true
      colour:
        prompt: "Which colour?"
        type: string
    FLOW:
      ask:
        GATHER: [size, colour]
        RESPOND: "A {{size}} {{colour}} one."
        THEN: COMPLETE
"""


def test_a_value_the_model_inferred_for_an_infer_field_is_pending_confirmation(tmp_path):
    program = project(tmp_path, {"order.agent.abl": ORDER})
    llm = ScriptedProvider([
        {"purpose": "understand", "call": "understand", "with": {"args": {"size": "large"}}},
    ])
    engine = Engine(program, llm, MemorySessionStore())
    sid = engine.start().session_id
    engine.send(sid, "something roomy please")
    assert engine.load_state(sid).system["_pending_inferences"] == {"size": "large"}
