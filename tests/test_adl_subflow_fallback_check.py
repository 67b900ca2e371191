"""Issue 25: `next:` to a subflow that has steps after it comes back (the flow-agent guide's
`next: get_discount` then `if: get_discount.success`); fallback and exit texts are strategies, never said
word for word; and what `frontdesk check` also finds (arguments read but never set, arguments only a
model can fill)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from frontdesk.ir.models import InvokeNode, JumpNode
from frontdesk.lang import load_program
from frontdesk.runtime.engine import Engine
from frontdesk.store.memory import MemorySessionStore


def load(tmp_path: Path, text: str, tools: str | None = None, errors_ok: bool = False):
    (tmp_path / "agents.yml").write_text(textwrap.dedent(text), encoding="utf-8")
    if tools is not None:
        (tmp_path / "tools.py").write_text(tools, encoding="utf-8")
    program, diags = load_program(tmp_path)
    assert program is not None and (errors_ok or not [d for d in diags if d.is_error]), diags
    return program, diags


def chat(program, messages: list[str], llm=None):
    engine = Engine(program, llm, MemorySessionStore())
    sid = engine.start().session_id
    turns = [engine.send(sid, text) for text in messages]
    return engine, sid, turns


def said(turn) -> list[str]:
    return [m.text for m in turn.messages]


def codes_of(diags) -> list[str]:
    return [d.code for d in diags]


# ---- 1. next: to a subflow --------------------------------------------------------------------------------

# The flow-agent guide's own example (shopping_flow), with an expression instead of `the user claims`
# so that it runs with no model.
DISCOUNT = """
main:
  type: flow agent
  args:
    - discount
    - is_new_customer
  steps:
    - begin
    - bot: Hi. I'm your shopping assistant. What can I do for you today?
    - user
    - set:
        is_new_customer: {new}
    - next: get_discount
    - if: get_discount.success
      then:
        - bot: We are glad to tell you that you get ${{discount}} discount.
      else:
        - bot: Sorry. There's no discount for you.
    - end
    - begin: get_discount
    - if: is_new_customer == True
      then:
        - set:
            discount: "10%"
        - return: success, Load discount successful.
      else:
        - return: error, No discount applied.
    - end
"""


def test_next_to_a_subflow_with_steps_after_it_comes_back_with_its_status(tmp_path):
    program, diags = load(tmp_path, DISCOUNT.format(new="True"))
    assert "ADL040" not in codes_of(diags)  # the steps after the next are reached
    _, _, turns = chat(program, ["Is there any discount?"])
    assert said(turns[0]) == ["We are glad to tell you that you get 10% discount."]


def test_next_to_a_subflow_that_returns_an_error_comes_back_too(tmp_path):
    program, _ = load(tmp_path, DISCOUNT.format(new="False"))
    _, _, turns = chat(program, ["Is there any discount?"])
    assert said(turns[0]) == ["Sorry. There's no discount for you."]


JUMPS = """
main:
  type: flow agent
  args: [choice]
  steps:
    - bot: Pick one
    - user
    - if: choice == None
      then:
        - next: other
    - bot: after the if
  other:
    - bot: in other
    - next: other_again
  other_again:
    - bot: again
"""


def test_next_as_the_last_step_of_its_list_still_jumps_and_never_comes_back(tmp_path):
    program, diags = load(tmp_path, JUMPS)
    nodes = program.agents["main"].graph.nodes.values()
    jumps = [n for n in nodes if isinstance(n, JumpNode)]
    assert {n.target_name for n in jumps} == {"other", "other_again"}
    assert not [n for n in nodes if isinstance(n, InvokeNode)]
    _, _, turns = chat(program, ["whatever"])
    assert said(turns[0]) == ["in other", "again"]


def test_next_with_tries_or_to_a_label_keeps_its_meaning(tmp_path):
    program, diags = load(tmp_path, """
    main:
      type: flow agent
      steps:
        - label: start
        - bot: Say yes
        - user
        - next: start
          tries: 1
        - next: helper
          tries: 2
        - bot: done
      helper:
        - bot: helping
    """)
    nodes = list(program.agents["main"].graph.nodes.values())
    assert [n.target_name for n in nodes if isinstance(n, JumpNode)] == ["start", "helper"]


# ---- 2. fallback and exit texts are strategies -------------------------------------------------------------

REPAIRS = """
main:
  type: flow agent
  fallback: {fallback}
  steps:
    - bot: How can I help?
    - user
    - if: the user claims "I want to book a repair"
      then:
        - bot: Booked.
"""
GIVE = ("Give a fallback message: I'm sorry, I can only book repairs. If fallback three times consecutively, "
        "then terminate the conversation.")
SAY_THAT = "Say that you can answer questions about the shop or book a repair."


def test_a_say_that_instruction_is_said_as_the_bot_saying_it_with_no_model(tmp_path):
    program, _ = load(tmp_path, REPAIRS.format(fallback=SAY_THAT))
    _, _, turns = chat(program, ["qwerty zxcv"])
    assert said(turns[0]) == ["I can answer questions about the shop or book a repair."]


def test_the_message_an_instruction_gives_is_said_and_three_fallbacks_end_the_conversation(tmp_path):
    program, _ = load(tmp_path, REPAIRS.format(fallback=json.dumps(GIVE)))
    engine, sid, turns = chat(program, ["qwerty", "asdf", "zxcv"])
    assert said(turns[0]) == said(turns[1]) == ["I'm sorry, I can only book repairs."]
    assert not turns[1].ended
    (last,) = said(turns[2])
    assert "terminate" not in last and "Goodbye" in last
    assert turns[2].ended and engine.load_state(sid).ended
    assert any(e.type == "session_ended" for e in turns[2].events)


def test_a_quoted_message_and_plain_words_are_said_as_written(tmp_path):
    program, _ = load(tmp_path, REPAIRS.format(fallback='"Sorry, I did not get that."'))
    _, _, turns = chat(program, ["qwerty"])
    assert said(turns[0]) == ["Sorry, I did not get that."]


def test_an_instruction_with_nothing_to_say_gives_the_standard_sentence(tmp_path):
    program, _ = load(tmp_path, REPAIRS.format(fallback="Apologize politely and offer help with repairs."))
    _, _, turns = chat(program, ["qwerty"])
    (text,) = said(turns[0])
    assert "Apologize" not in text and text.startswith("Sorry")


def test_with_a_model_the_message_is_written_from_the_instruction(tmp_path):
    from frontdesk.llm import ScriptedProvider

    program, _ = load(tmp_path, REPAIRS.format(fallback=SAY_THAT))
    llm = ScriptedProvider([
        {"purpose": "understand", "call": "understand", "with": {"choice": "none"}},
        {"purpose": "fallback", "call": "policy_message",
         "with": {"policy": "fallback", "message": "Sorry, I can answer shop questions or book a repair."}},
    ])
    _, _, turns = chat(program, ["qwerty zxcv"], llm)
    assert said(turns[0]) == ["Sorry, I can answer shop questions or book a repair."]
    request = llm.calls[-1]
    assert request.tools[0].name == "policy_message"
    assert SAY_THAT in "\n".join(m.content or "" for m in request.messages)


def test_with_a_model_plain_words_are_said_without_a_call(tmp_path):
    from frontdesk.llm import ScriptedProvider

    program, _ = load(tmp_path, REPAIRS.format(fallback='Sorry, I only book repairs.'))
    llm = ScriptedProvider([{"purpose": "understand", "call": "understand", "with": {"choice": "none"}}])
    _, _, turns = chat(program, ["qwerty zxcv"], llm)
    assert said(turns[0]) == ["Sorry, I only book repairs."]
    assert all(c.purpose != "fallback" for c in llm.calls)


def test_the_policy_message_rules():
    from frontdesk.ir.models import Policy
    from frontdesk.runtime.policies import ends_after, policy_message

    def text(value, kind="fallback"):
        return policy_message(Policy(kind="text", value=value), kind)

    paper = ('Provide a fallback message: "Sorry, I didn\'t understand that. Could you rephrase it?" If the '
             'fallback occurs three times consecutively, terminate the conversation.')
    assert text(paper) == "Sorry, I didn't understand that. Could you rephrase it?"
    assert ends_after(Policy(kind="text", value=paper)) == 3
    assert ends_after(Policy(kind="text", value="After 2 times in a row, end the chat.")) == 2
    assert ends_after(Policy(kind="text", value=SAY_THAT)) is None
    assert text("Tell the user that your opening hours are 9 to 5.") == "My opening hours are 9 to 5."
    assert text("Apologize and ask the user to rephrase their question.") == "Sorry. Could you rephrase your question?"
    assert text("Say that we hope to see you again soon.", "exit") == "We hope to see you again soon."
    assert text("If there is no input for 3 minutes, say good-bye to the user.", "exit") == "Goodbye!"


SHOP = """
main:
  type: ensemble agent
  description: The shop's assistant.
  contains:
    - book
  exit: Say that we hope to see you again soon.
  fallback: Say that you can book a repair.
  steps:
    - bot: Hello!

book:
  type: flow agent
  description: Books a bike repair.
  steps:
    - bot: Booked.
"""


def test_an_exit_text_is_followed_not_said_when_the_user_leaves(tmp_path):
    program, _ = load(tmp_path, SHOP)
    _, _, turns = chat(program, ["thanks, bye"])
    assert said(turns[0]) == ["We hope to see you again soon."]
    assert turns[0].ended


# ---- 3. what check also finds -------------------------------------------------------------------------------


def checked(tmp_path: Path, text: str, tools: str | None = None, config: str | None = None) -> list:
    from frontdesk.analysis import with_analysis

    if config is not None:
        (tmp_path / "config.yml").write_text(config, encoding="utf-8")
    program, diags = load(tmp_path, text, tools)
    return with_analysis(program, diags)


def test_an_ensemble_argument_read_but_never_set_is_found(tmp_path):
    found = checked(tmp_path, """
    main:
      type: ensemble agent
      description: Shop.
      args: [tier]
      contains: [book]
      steps:
        - if: tier == "gold"
          then:
            - bot: "Welcome back."
    book:
      type: flow agent
      description: Books.
      steps:
        - bot: Booked.
    """)
    assert [(d.code, d.severity.value) for d in found if d.code == "ADL048"] == [("ADL048", "warning")]
    assert "'tier'" in next(d.message for d in found if d.code == "ADL048")


def test_an_entry_argument_and_a_field_the_tool_never_returns_are_found(tmp_path):
    found = checked(tmp_path, """
    main:
      type: flow agent
      args: [code]
      steps:
        - if: code == "A"
          then:
            - call: price_of
            - bot: "It costs ${price_of.cost}, or ${price_of.price}."
    """, tools='''
def price_of():
    """Price."""
    return [{"arg": "price", "value": 10}]
''')
    messages = sorted(d.message for d in found if d.code == "ADL048")
    assert len(messages) == 2
    assert "'price_of.cost'" in messages[0] and "never returns 'cost'" in messages[0]
    assert "'code'" in messages[1]


def test_values_set_by_set_a_member_a_ref_or_a_tool_are_not_reported(tmp_path):
    found = checked(tmp_path, """
    main:
      type: ensemble agent
      description: Shop.
      args: [tier, who]
      contains:
        - member:
            args:
              tier: ref tier
      steps:
        - set:
            who: "guest"
        - bot: "Hi ${who} ${tier}"
    member:
      type: flow agent
      description: Sets the tier.
      args: [tier, price]
      steps:
        - call: price_of
        - set:
            tier: "gold"
        - bot: "${price} ${price_of.value}"
    """, tools='''
def price_of():
    """Price."""
    return {"price": 3}
''')
    assert [d for d in found if d.code in ("ADL048", "ADL049")] == []


BIKE = """
main:
  type: flow agent
  steps:
    - call: book
book:
  type: flow agent
  description: Books a bike repair.
  args: [bike_type]
  steps:
    - bot: "Which bike is it?"
    - user
    - bot: "A ${bike_type}, noted."
"""


def test_an_argument_only_the_users_words_fill_is_noted_when_no_model_is_configured(tmp_path):
    found = [d for d in checked(tmp_path, BIKE) if d.code == "ADL049"]
    assert len(found) == 1 and found[0].severity.value == "info"
    assert "'bike_type'" in found[0].message and "no model" in found[0].message


def test_with_a_model_configured_there_is_no_such_note(tmp_path):
    found = checked(tmp_path, BIKE, config="llm:\n  provider: openai\n  model: gpt-4o-mini\n")
    assert [d for d in found if d.code == "ADL049"] == []


def test_describe_shows_the_call_a_fallback_strategy_makes(tmp_path):
    from frontdesk.runtime.describe import plans

    program, _ = load(tmp_path, REPAIRS.format(fallback=SAY_THAT))
    assert "Policy_main" in [p.name for p in plans(program)]
    (tmp_path / "plain").mkdir()
    plain, _ = load(tmp_path / "plain", REPAIRS.format(fallback='"Sorry, I did not get that."'))
    assert "Policy_main" not in [p.name for p in plans(plain)]
