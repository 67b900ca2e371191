"""A flow agent's arguments come from what the user says (issue 25, section 2): every message a flow
reads may give any argument it declares and has not got, as MICA reads them. With a model, in the one
understand call of the message, its answer checked; with none, by the kind the argument's name says, by
the values listed for it and after its name; never guessed. The trace says what was read, and from
which message (`args_read`)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from frontdesk.expr.template import parse_template
from frontdesk.ir.behaviour import AgentRules
from frontdesk.ir.models import ArgDef, FlowAgent, ListenNode, Program, SayNode, StepGraph
from frontdesk.lang import load_program
from frontdesk.lang.abl.conventions import abl_policy
from frontdesk.lang.adl.conventions import ADL_POLICY
from frontdesk.llm import ScriptedProvider
from frontdesk.runtime.engine import Engine
from frontdesk.store.memory import MemorySessionStore

PHONE = """
main:
  type: flow agent
  steps:
    - call: get_phone

get_phone:
  type: flow agent
  description: Takes the customer's phone number.
  args:
    - phone
  steps:
    - bot: "What is your phone number?"
    - user
    - call: extract_phone
      args:
        text: phone
    - bot: "Thanks, I have ${extract_phone.number}."
"""

PHONE_TOOLS = '''
def extract_phone(text):
    """Keep a phone number."""
    if not text:
        return [{"status": "error", "msg": "no phone number given"}]
    return [{"arg": "number", "value": text}, {"status": "success", "msg": "ok"}]
'''

BIKE = """
main:
  type: flow agent
  steps:
    - call: book

book:
  type: flow agent
  description: Books a bike repair.
  args:
    - bike_type
  steps:
    - label: ask
    - bot: "What kind of bike is it: road, mountain, city or e-bike?"
    - user
    - if: bike_type == None
      then:
        - next: ask
          tries: 3
    - bot: "A ${bike_type} bike, noted."
"""

# the values are listed by a condition only; `drop_off_day` and `genre` are read by kind and by name
REPAIR = """
main:
  type: flow agent
  args: [size, drop_off_day, genre, ticket_id]
  steps:
    - bot: "Tell me about your order."
    - user
    - if: size == "large"
      then:
        - bot: "Large it is."
    - bot: "Size ${size}, day ${drop_off_day}, genre ${genre}, ticket ${ticket_id}."
"""

# the `user` step reads `problem`; `phone` is read only later, by the call
LATER = """
main:
  type: flow agent
  args: [problem, phone]
  steps:
    - bot: "What is the problem?"
    - user
    - bot: "Noted: ${problem}."
    - call: extract_phone
      args:
        text: phone
    - bot: "We will call ${extract_phone.number}."
"""


def load(tmp_path: Path, text: str, tools: str | None = None):
    (tmp_path / "agents.yml").write_text(textwrap.dedent(text), encoding="utf-8")
    if tools is not None:
        (tmp_path / "tools.py").write_text(tools, encoding="utf-8")
    program, diags = load_program(tmp_path)
    assert program is not None and not [d for d in diags if d.is_error]
    return program


def chat(program, messages: list[str], llm=None):
    engine = Engine(program, llm, MemorySessionStore())
    sid = engine.start().session_id
    turns = [engine.send(sid, text) for text in messages]
    return engine, sid, turns


def said(turn) -> list[str]:
    return [m.text for m in turn.messages]


def events(turns, kind: str) -> list[dict]:
    return [e.data for t in turns for e in t.events if e.type == kind]


def tool_args(turns, tool: str) -> list[dict]:
    return [e.data["args"] for t in turns for e in t.events if e.type == "tool_call" and e.data["tool"] == tool]


# ---- with no model --------------------------------------------------------------------------------------


def test_a_phone_number_is_read_from_the_answer_with_no_model(tmp_path):
    _, _, turns = chat(load(tmp_path, PHONE, PHONE_TOOLS), ["my number is 555 123 4567"])
    assert tool_args(turns, "extract_phone") == [{"text": "555 123 4567"}]
    assert said(turns[0]) == ["Thanks, I have 555 123 4567."]
    (read,) = events(turns, "args_read")
    assert read["args"] == {"phone": "555 123 4567"} and read["by"] == {"phone": "phone"}
    assert read["message"] == "my number is 555 123 4567" and read["turn"] == 1 and read["unread"] == []


def test_a_value_the_question_lists_is_read_and_the_bot_stops_asking(tmp_path):
    engine, sid, turns = chat(load(tmp_path, BIKE), ["it is a mountain bike"])
    assert said(turns[0]) == ["A mountain bike, noted."]
    assert engine.load_state(sid).variables["book"]["bike_type"] == "mountain"
    assert events(turns, "args_read")[0]["by"] == {"bike_type": "listed value"}


def test_an_answer_that_gives_nothing_leaves_the_argument_unset_and_says_so(tmp_path):
    engine, sid, turns = chat(load(tmp_path, BIKE), ["I am not sure", "a mountain or a road one"])
    assert said(turns[0]) == ["What kind of bike is it: road, mountain, city or e-bike?"]
    assert said(turns[1]) == ["What kind of bike is it: road, mountain, city or e-bike?"]  # two named: no guess
    assert engine.load_state(sid).variables.get("book", {}).get("bike_type") is None
    reads = events(turns, "args_read")
    assert [r["unread"] for r in reads] == [["bike_type"], ["bike_type"]]
    assert reads[0]["message"] == "I am not sure" and reads[1]["turn"] == 2


def test_values_listed_in_a_condition_days_and_named_values_are_read(tmp_path):
    engine, sid, turns = chat(load(tmp_path, REPAIR),
                              ["A large one on Thursday please, genre=mystery, ticket SC-THU-170"])
    assert said(turns[0]) == ["Large it is.", "Size large, day Thursday, genre mystery, ticket SC-THU-170."]
    (read,) = events(turns, "args_read")
    assert read["by"] == {"size": "listed value", "drop_off_day": "date", "genre": "named",
                          "ticket_id": "identifier"}


def test_a_text_with_no_kind_is_not_taken_whole(tmp_path):
    """"mystery" could be anything: with no model, a free text is read only after its name."""
    engine, sid, turns = chat(load(tmp_path, REPAIR), ["mystery"])
    values = engine.load_state(sid).variables.get("main", {})
    assert all(values.get(n) is None for n in ("size", "drop_off_day", "genre", "ticket_id"))
    assert said(turns[0]) == ["Size (none), day (none), genre (none), ticket (none)."]


def test_an_argument_read_only_later_is_read_from_the_message_too(tmp_path):
    """MICA reads every declared argument from every message, not only those the next steps read."""
    _, _, turns = chat(load(tmp_path, LATER, PHONE_TOOLS), ["my brakes squeak, call me on 555 123 4567"])
    assert tool_args(turns, "extract_phone") == [{"text": "555 123 4567"}]


def test_the_message_that_started_the_agent_is_read_and_the_question_still_waits(tmp_path):
    """An ensemble hands its member the message: MICA reads it for the member's arguments, and the member's
    question, said after it, waits for its own answer."""
    text = """
        main:
          type: ensemble agent
          description: Front desk.
          contains:
            - book
          steps:
            - bot: "Hello"

        book:
          type: flow agent
          description: Books a bike repair.
          args: [bike_type, problem]
          steps:
            - bot: "What kind of bike is it: road, mountain, city or e-bike?"
            - user
            - bot: "What seems to be the problem with your ${bike_type} bike?"
            - user
            - bot: "Noted: ${problem}."
    """
    engine, sid, turns = chat(load(tmp_path, text), ["Can I bring my city bike in for a service?", "yes"])
    assert said(turns[0]) == ["What kind of bike is it: road, mountain, city or e-bike?"]
    assert events(turns, "args_read")[0]["args"] == {"bike_type": "city"}
    assert said(turns[1]) == ["What seems to be the problem with your city bike?"]


# ---- with a model ------------------------------------------------------------------------------------------


def test_the_model_reads_every_argument_the_flow_has_not_got_in_one_call(tmp_path):
    llm = ScriptedProvider([{"purpose": "understand", "call": "understand",
                             "with": {"args": {"problem": "squeaky brakes", "phone": "555 123 4567"}}}])
    _, _, turns = chat(load(tmp_path, LATER, PHONE_TOOLS), ["my brakes squeak, call me on 555 123 4567"], llm)
    llm.assert_finished()
    assert set(llm.calls[0].tools[0].parameters["properties"]["args"]["properties"]) == {"problem", "phone"}
    assert tool_args(turns, "extract_phone") == [{"text": "555 123 4567"}]
    (read,) = events(turns, "args_read")
    assert read["args"] == {"problem": "squeaky brakes", "phone": "555 123 4567"}
    assert read["by"] == {"problem": "model", "phone": "model"}


def test_a_value_the_model_gives_is_checked(tmp_path):
    llm = ScriptedProvider([{"purpose": "understand", "call": "understand",
                             "with": {"args": {"problem": "squeaky brakes", "phone": "the usual one"}}}])
    engine, sid, turns = chat(load(tmp_path, LATER, PHONE_TOOLS), ["my brakes squeak, call me on the usual"], llm)
    assert engine.load_state(sid).variables["main"].get("phone") is None  # not a phone number: refused
    assert events(turns, "args_read")[0]["unread"] == ["phone"]
    assert tool_args(turns, "extract_phone") == [{"text": None}]


def test_a_step_that_reads_nothing_still_reads_the_flows_arguments_with_a_model(tmp_path):
    text = """
        main:
          type: flow agent
          args: [phone]
          steps:
            - bot: "How can I help?"
            - user
            - bot: "Anything else?"
            - user
            - bot: "We will call ${phone}."
    """
    phone = {"args": {"phone": "555 123 4567"}}
    llm = ScriptedProvider([{"purpose": "understand", "call": "understand", "with": {"args": {}}},
                            {"purpose": "understand", "call": "understand", "with": phone}])
    _, _, turns = chat(load(tmp_path, text), ["my bike is broken", "call me on 555 123 4567"], llm)
    llm.assert_finished()
    assert said(turns[1]) == ["We will call 555 123 4567."]


# ---- the policy, not the language ------------------------------------------------------------------------


def _flow(policy) -> Program:
    nodes = [SayNode(id="ask", text=parse_template("Your order?", "shop"), next="listen"),
             ListenNode(id="listen", next="done"),
             SayNode(id="done", text=parse_template("We will call ${phone}.", "shop"))]
    agent = FlowAgent(name="shop", args=[ArgDef(name="phone")], policy=policy,
                      graph=StepGraph(entry="ask", nodes={n.id: n for n in nodes}))
    return Program(language="adl", entry="shop", agents={"shop": agent})


def test_the_policy_decides_whether_every_message_gives_the_arguments():
    """The same program (its label says ADL) reads its arguments from every message, or not, as its
    agent's policy says: ADL's (the plain one) does, ABL's reads only what a question asks for."""
    _, _, turns = chat(_flow(ADL_POLICY.model_copy()), ["call me on 555 123 4567"])
    assert said(turns[0]) == ["We will call 555 123 4567."]
    plain = abl_policy(AgentRules())
    assert plain.args_from_messages is False
    _, _, turns = chat(_flow(plain), ["call me on 555 123 4567"])
    assert said(turns[0]) == ["We will call (none)."]
    assert not events(turns, "args_read")
