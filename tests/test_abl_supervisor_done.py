"""When an ABL supervisor's job is done (docs/abl-semantics.md, "A member that completes under a
supervisor"): with COMPLETE rules, when one holds after a member ended; with none, when the member it
routed the request to ended with success. A supervisor that is done ends, and the entry one ends the
session; one that is not asks for the next request (MESSAGES anything_else) and waits. A member that an
interruption set aside resumes first: the supervisor is not done while one waits. No model anywhere:
routing by the members' INTENT words (and the local embedding model for a change of topic)."""

from __future__ import annotations

import textwrap
from datetime import UTC, datetime
from pathlib import Path

from frontdesk.lang import load_program
from frontdesk.runtime.engine import ENDED_REPLY, Engine
from frontdesk.runtime.routing import ANYTHING_ELSE
from frontdesk.runtime.tools import StubToolRunner
from frontdesk.store.memory import MemorySessionStore

NOW = datetime(2026, 11, 25, 12, tzinfo=UTC)

DESK = """
SUPERVISOR: Desk
GOAL: "Send customers to order tracking or to opening hours"

HANDOFF:
  - TO: Orders
    WHEN: user asks where their order is
    RETURN: true
{on_return}
  - TO: Hours
    WHEN: user asks about opening hours
    RETURN: false

ROUTING:
  - INTENT(where is my order, track my order, my parcel) -> Orders
  - INTENT(opening hours, when are you open) -> Hours
  - DEFAULT -> Orders
{extra}
"""

ORDERS = """
AGENT: Orders
GOAL: "Say where an order is"

TOOLS:
  track(order_id: string) -> {status: string}
    description: "Where an order is"

GATHER:
  order_id:
    prompt: "What is your order number?"
    type: string
    required: true
    validate:
      type: pattern
      rule: "^O-\\\\d+$"
      error: "An order number looks like O-12."

FLOW:
  ask -> look -> done

  ask:
    GATHER:
      - order_id: required
    THEN: look

  look:
    CALL: track(order_id)
    RESPOND: "Order {{order_id}} is {{track.status}}."
    THEN: done

  done:
    THEN: COMPLETE
"""

HOURS = """
AGENT: Hours
GOAL: "Tell the opening hours"

FLOW:
  tell -> done

  tell:
    RESPOND: "We are open from 9 to 17."
    THEN: done

  done:
    THEN: COMPLETE
"""


class Chat:
    """The desk run turn by turn with a stub `track` tool and no model."""

    def __init__(self, tmp_path: Path, status: str = "in transit", on_return: str = "", extra: str = "",
                 understanding=None) -> None:
        files = {"desk.agent.abl": DESK.format(on_return=on_return, extra=extra), "orders.agent.abl": ORDERS,
                 "hours.agent.abl": HOURS}
        for name, text in files.items():
            (tmp_path / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
        program, diags = load_program(tmp_path)
        errors = [d.format() for d in diags if d.is_error]
        assert program is not None and not errors, errors
        tools = StubToolRunner({"track": {"status": status}}, convention="value")
        self.engine = Engine(program, None, MemorySessionStore(), tools=tools, clock=lambda: NOW.timestamp(),
                             understanding=understanding)
        self.sid = self.engine.start().session_id
        self.last = None

    def say(self, text: str) -> list[str]:
        self.last = self.engine.send(self.sid, text)
        return [m.text for m in self.last.messages]

    def steps(self, action: str) -> list[dict]:
        return [e.data for e in self.last.events if e.type == "step" and e.data.get("action") == action]


def test_a_supervisor_without_complete_rules_is_done_when_its_member_succeeds(tmp_path):
    chat = Chat(tmp_path)
    assert chat.say("where is my order?") == ["What is your order number?"]
    assert chat.say("O-12") == ["Order O-12 is in transit."]  # no "anything else?": the desk is done
    assert chat.last.ended
    assert chat.steps("job done") == [{"action": "job done", "reason": "Orders completed the request"}]
    assert chat.engine.load_state(chat.sid).status == "ended"
    assert chat.say("and the opening hours?") == [ENDED_REPLY]


def test_a_supervisor_with_complete_rules_waits_until_one_holds(tmp_path):
    on_return = "    ON_RETURN:\n      map:\n        order_status: track.status"
    extra = textwrap.dedent('''
        COMPLETE:
          - WHEN: handoff.completed == true AND order_status == "delivered"
            RESPOND: "Glad it arrived. Goodbye!"

        MESSAGES:
          anything_else: "Can I help with anything else?"
        ''')
    chat = Chat(tmp_path, status="in transit", on_return=on_return, extra=extra)
    chat.say("where is my order?")
    # the rule does not hold: the desk asks for the next request in its own words, and waits
    assert chat.say("O-12") == ["Order O-12 is in transit.", "Can I help with anything else?"]
    assert not chat.last.ended
    assert chat.say("what are your opening hours?") == ["We are open from 9 to 17.", "Can I help with anything else?"]
    assert not chat.last.ended

    (tmp_path / "again").mkdir()
    done = Chat(tmp_path / "again", status="delivered", on_return=on_return, extra=extra)
    done.say("where is my order?")
    assert done.say("O-7") == ["Order O-7 is delivered.", "Glad it arrived. Goodbye!"]
    assert done.last.ended
    assert done.steps("job done") == [{"action": "job done", "reason": "a COMPLETE condition holds"}]


def test_a_supervisor_is_not_done_while_an_interrupted_member_waits(tmp_path, local_model):
    chat = Chat(tmp_path, understanding=local_model[0])  # the embedding model sees the change of topic
    assert chat.say("where is my order?") == ["What is your order number?"]
    # Hours answers and completes, but Orders waits (RETURN: true): it resumes, the desk goes on
    said = chat.say("what are your opening hours?")
    assert said[0] == "We are open from 9 to 17." and said[-1] == "What is your order number?"
    assert ANYTHING_ELSE not in said and not chat.last.ended
    assert chat.steps("job done") == []
    assert chat.say("O-3") == ["Order O-3 is in transit."]
    assert chat.last.ended
