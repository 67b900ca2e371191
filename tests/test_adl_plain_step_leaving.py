"""Issue 25, found by the differential harness: a message at a plain `user` step (one that reads an
argument, no `the user claims` branch) may be another topic or a goodbye, not an answer. MICA reads
`quit` from every message in its argument extraction; before this fix Frontdesk took any such message
as the answer ("Wait, do you give a warranty?" became the bike's problem, "thanks, bye" was asked the
next question). docs/adl-semantics.md, "A flow's arguments from what the user says". Each test failed
before the fix."""

from __future__ import annotations


from frontdesk.llm import ScriptedProvider
from frontdesk.runtime.orchestration import EXIT_CHOICE
from frontdesk.runtime.routing import GOODBYE
from frontdesk.testing import run_conversation

from adl_text import program, said

SHOP = """
    main:
      type: ensemble agent
      description: A bike shop.
      contains:
        - repair
        - opening_hours
      exit: default

    repair:
      type: flow agent
      description: Book a bike repair.
      args:
        - problem
      steps:
        - bot: "What seems to be the problem?"
        - user
        - bot: "Noted: ${problem}."

    opening_hours:
      type: flow agent
      description: Tell the shop's opening hours.
      steps:
        - bot: "We are open 9 to 5."
"""


ROUTED_TO_REPAIR = [  # the routing call, then the read of the starting message for the flow's arguments
    {"purpose": "route", "call": "route", "with": {"agent": "repair"}},
    {"purpose": "understand", "call": "understand", "with": {"args": {}}},
]


def test_another_topic_at_a_plain_user_step_goes_to_that_member(tmp_path):
    llm = ScriptedProvider(ROUTED_TO_REPAIR + [
        {"purpose": "understand", "call": "understand", "with": {"choice": "switch:opening_hours", "args": {}}},
        {"purpose": "understand", "call": "understand", "with": {"choice": "none", "args": {"problem": "a flat tyre"}}},
    ])
    run = run_conversation(program(tmp_path, SHOP), ["fix my bike", "wait, when are you open?", "a flat tyre"], llm)
    assert said(run, 1) == ["What seems to be the problem?"]
    # the question is not answered by the digression: the other member answers, the flow asks again
    assert said(run, 2) == ["We are open 9 to 5.", "What seems to be the problem?"]
    assert said(run, 3) == ["Noted: a flat tyre."]
    # the understand call offered the other member and the way out, beside the argument to read
    prompt = str(run.events_of("llm_call")[2]["data"]["messages"])
    assert "switch:opening_hours" in prompt and f"switch:{EXIT_CHOICE}" in prompt


def test_leaving_at_a_plain_user_step_lets_the_ensemble_say_goodbye(tmp_path):
    llm = ScriptedProvider(ROUTED_TO_REPAIR + [
        {"purpose": "understand", "call": "understand", "with": {"choice": f"switch:{EXIT_CHOICE}", "args": {}}},
        {"purpose": "route", "call": "route", "with": {"agent": EXIT_CHOICE}},
    ])
    run = run_conversation(program(tmp_path, SHOP), ["fix my bike", "actually never mind, I'll come back later"], llm)
    assert said(run, 2) == [GOODBYE] and run.turns[2].ended


def test_a_typed_goodbye_at_a_plain_user_step_ends_the_conversation_with_no_model(tmp_path):
    one_member = SHOP.replace("        - opening_hours\n", "")
    run = run_conversation(program(tmp_path, one_member), ["fix my bike", "thanks, bye"], None)
    assert said(run, 1) == ["What seems to be the problem?"]
    assert said(run, 2) == [GOODBYE] and run.turns[2].ended


def test_an_answer_at_a_plain_user_step_is_still_the_answer(tmp_path):
    llm = ScriptedProvider(ROUTED_TO_REPAIR + [
        {"purpose": "understand", "call": "understand", "with": {"choice": "none", "args": {"problem": "squeaky brakes"}}},
    ])
    run = run_conversation(program(tmp_path, SHOP), ["fix my bike", "squeaky brakes"], llm)
    assert said(run, 2) == ["Noted: squeaky brakes."]


def test_without_an_ensemble_exit_a_goodbye_is_an_answer_as_before(tmp_path):
    no_exit = SHOP.replace("        - opening_hours\n", "").replace("      exit: default\n", "")
    run = run_conversation(program(tmp_path, no_exit), ["fix my bike", "thanks, bye"], None)
    assert not run.turns[2].ended


PIZZERIA = """
    main:
      type: flow agent
      description: A pizzeria.
      exit: default
      steps:
        - bot: "Ciao! Order a pizza or ask about the menu."
        - label: start
        - user
        - if: the user claims "I'd like to order a pizza"
          then:
            - bot: "Which pizza?"
            - next: start
          else:
            - bot: "You can order a pizza."
            - next: start
"""


def test_a_goodbye_at_the_entry_flows_question_ends_the_conversation_with_no_model(tmp_path):
    """Found on the held-out pizza_order bot (main is a flow with an `exit:`): "Thanks, bye" took the
    `else` branch ("You can order a pizza.") and the conversation went on."""
    run = run_conversation(program(tmp_path, PIZZERIA), ["Thanks, bye", "hello?"], None)
    assert said(run, 1) == [GOODBYE] and run.turns[1].ended


def test_the_model_may_say_the_user_leaves_the_entry_flow(tmp_path):
    llm = ScriptedProvider([{"purpose": "understand", "call": "understand",
                             "with": {"choice": f"switch:{EXIT_CHOICE}"}}])
    run = run_conversation(program(tmp_path, PIZZERIA), ["Hmm, forget it, I'll cook tonight."], llm)
    assert said(run, 1) == [GOODBYE] and run.turns[1].ended
    assert f"switch:{EXIT_CHOICE}" in str(run.events_of("llm_call")[0]["data"]["messages"])


def test_an_entry_flow_without_an_exit_policy_takes_a_goodbye_as_an_answer(tmp_path):
    run = run_conversation(program(tmp_path, PIZZERIA.replace("      exit: default\n", "")), ["Thanks, bye"], None)
    assert said(run, 1) == ["You can order a pizza."] and not run.turns[1].ended


def test_a_claims_case_that_is_a_goodbye_is_the_steps_answer(tmp_path):
    text = PIZZERIA.replace('the user claims "I\'d like to order a pizza"', 'the user claims "Thanks, bye"')
    run = run_conversation(program(tmp_path, text), ["Thanks, bye"], None)
    assert not run.turns[1].ended
