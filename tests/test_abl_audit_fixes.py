"""Fixes from the acceptance audit of the ABL runtime (issue 10): GATHER answers belong to one activation,
a starting message that gives the field is read before the question, the RETURN: true topic check at
ON_INPUT (yes/no) steps, options fields answered with none of the options; and flow behaviour that had
no test: a step-level CLEAR, the ELSE of ON_RESULT, pattern booleans in a GATHER run."""

from __future__ import annotations

import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest

from frontdesk.lang import load_program
from frontdesk.llm.scripted import ScriptedProvider
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.extract import extract_values
from frontdesk.runtime.routing import ANYTHING_ELSE
from frontdesk.runtime.state import SessionState
from frontdesk.runtime.tools import StubToolRunner
from frontdesk.store.memory import MemorySessionStore
from frontdesk.testing import run_conversation

NOW = datetime(2026, 11, 25, 12, tzinfo=UTC)
SUPPORT_HUB = Path(__file__).resolve().parent.parent / "examples" / "support_hub"


def _load(tmp_path: Path, files: dict[str, str]):
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    program, diags = load_program(tmp_path)
    errors = [d.format() for d in diags if d.is_error]
    assert program is not None and not errors, errors
    return program


class Chat:
    """A program run turn by turn with stub tools and no model."""

    def __init__(self, program, answers: dict | None = None) -> None:
        self.tools = StubToolRunner(answers or {}, convention="value")
        self.engine = Engine(program, None, MemorySessionStore(), tools=self.tools, clock=lambda: NOW.timestamp())
        started = self.engine.start()
        self.sid = started.session_id
        self.opening = [m.text for m in started.messages]
        self.last = started

    def say(self, text: str) -> list[str]:
        self.last = self.engine.send(self.sid, text)
        return [m.text for m in self.last.messages]

    def kinds(self, kind: str) -> list[dict]:
        return [e.data for e in self.last.events if e.type == kind]

    def value(self, name: str):
        return SessionState.model_validate(self.engine.store.load(self.sid)).variables.get("session", {}).get(name)


@pytest.fixture(autouse=True)
def example_data(tmp_path, monkeypatch):
    monkeypatch.setenv("FRONTDESK_EXAMPLE_DB_DIR", str(tmp_path / "data"))


def _offline(program, lines, local_model):
    understanding, embedder = local_model
    llm = ScriptedProvider([])
    llm.can_classify = False
    return run_conversation(program, lines, llm, understanding=understanding, embedder=embedder)


def _turns(run) -> list[list[str]]:
    return [[m.text for m in turn.messages] for turn in run.turns[1:]]  # after the session start


# ---- bug 1: a member started again gathers afresh ---------------------------------------------

PAY = {
    "hub.agent.abl": """
        SUPERVISOR: Hub
        GOAL: "Route bank customers"

        HANDOFF:
          - TO: Payer
            WHEN: user wants to pay their credit card bill
            RETURN: true
          - TO: Balance
            WHEN: user asks about their account balance
            RETURN: true

        ROUTING:
          - INTENT(pay my card, credit card payment, card bill) -> Payer
          - INTENT(what's my balance, account balance) -> Balance

        COMPLETE:
          # a hub that takes several requests: done only when the user has no more
          - WHEN: user.has_no_more_requests == true
        """,
    "payer.agent.abl": """
        AGENT: Payer
        GOAL: "Pay the card"

        GATHER:
          account:
            prompt: "Which account should I pay from?"
            type: string
            required: true
            options: [checking, savings]
          amount:
            prompt: "How much?"
            type: number
            required: true

        MEMORY:
          session:
            - account

        FLOW:
          ask -> confirm

          ask:
            GATHER:
              - account: required
              - amount: required
              STRATEGY: pattern
            THEN: confirm

          confirm:
            RESPOND: "Paying {{amount}} EUR from {{account}}. Shall I go ahead?"
            ON_INPUT:
              - IF: yes
                RESPOND: "Paid {{amount}} EUR."
                THEN: COMPLETE
              - IF: input.contains("later")
                RESPOND: "I'll keep it for later."
                THEN: confirm
              - IF: no
                RESPOND: "Nothing paid."
                THEN: COMPLETE
              - ELSE:
                RESPOND: "Please answer yes or no."
                THEN: confirm
        """,
    "balance.agent.abl": """
        AGENT: Balance
        GOAL: "Tell the account balance"

        FLOW:
          tell -> done

          tell:
            RESPOND: "Your balance is 1250 EUR."
            THEN: done

          done:
            THEN: COMPLETE
        """,
}


def test_a_member_started_again_asks_its_fields_afresh_but_keeps_memory_session_values(tmp_path, local_model):
    program = _load(tmp_path, PAY)
    run = _offline(program, ["I'd like to pay my credit card bill", "checking", "100", "yes",
                             "pay my card bill", "40", "no"], local_model)
    turns = _turns(run)
    assert turns[3] == ["Paid 100 EUR.", ANYTHING_ELSE]  # the hub is not done: it asks for more
    # started again: the amount of the finished activation is not reused (no "Paying 100 EUR" at once);
    # the account, a MEMORY session variable, is kept and not asked again
    assert turns[4] == ["How much?"]
    assert turns[5] == ["Paying 40 EUR from checking. Shall I go ahead?"]
    cleared = [e["data"] for e in run.events if e["type"] == "step"
               and e["data"].get("action") == "fields of an earlier activation cleared"]
    assert cleared == [{"action": "fields of an earlier activation cleared", "fields": ["amount"]}]


def test_the_support_hub_asks_the_amount_again_after_a_failed_payment(local_model, tmp_path):
    program, _ = load_program(SUPPORT_HUB)
    run = _offline(program, ["I want to pay off my credit card", "5000", "yes", "please pay my credit card bill"],
                   local_model)
    turns = _turns(run)
    assert "The payment did not go through." in turns[2]
    assert turns[3] == ["How much would you like to pay on your credit card?"]


def test_a_value_passed_to_the_new_activation_is_kept(tmp_path):
    """A flow that hands over twice with CONTEXT pass: the value passed the second time is the new
    activation's, even when it equals the one the first activation ended with."""
    program = _load(tmp_path, {
        "desk.agent.abl": """
            AGENT: Desk
            GOAL: "Take orders and pass them to checkout"

            GATHER:
              item:
                prompt: "Which item?"
                type: string
                required: true
                options: [lamp, vase]

            FLOW:
              ask -> price -> hand

              ask:
                GATHER:
                  - item: required
                  STRATEGY: pattern
                THEN: price

              price:
                SET:
                  total = 30
                THEN: hand

              hand:
                HANDOFF:
                  TO: Checkout
                  CONTEXT:
                    pass: [total]
                  RETURN: true
                THEN: again

              again:
                CLEAR: [item]
                THEN: ask
            """,
        "checkout.agent.abl": """
            AGENT: Checkout
            GOAL: "Take the payment"

            GATHER:
              total:
                prompt: "What total should I charge?"
                type: number
                required: true

            FLOW:
              ask -> done

              ask:
                GATHER:
                  - total: required
                  STRATEGY: pattern
                THEN: done

              done:
                RESPOND: "Charged {{total}} EUR."
                THEN: COMPLETE
            """,
    })
    chat = Chat(program)
    assert chat.opening == ["Which item?"]
    assert chat.say("lamp") == ["Charged 30 EUR.", "Which item?"]
    assert chat.say("vase") == ["Charged 30 EUR.", "Which item?"]  # passed again: not asked again


# ---- bug 2: the starting message gives the field ---------------------------------------------


def test_a_starting_message_with_the_amount_gets_no_amount_question(tmp_path, local_model):
    program = _load(tmp_path, PAY)
    run = _offline(program, ["I want to pay 100 EUR on my credit card from checking", "yes"], local_model)
    turns = _turns(run)
    assert turns[0] == ["Paying 100 EUR from checking. Shall I go ahead?"]
    skipped = [e for e in run.events if e["type"] == "step"
               and e["data"].get("action", "").startswith("question not asked")]
    assert skipped


def test_a_starting_message_without_the_field_gets_the_question_once(tmp_path, local_model):
    program = _load(tmp_path, PAY)
    run = _offline(program, ["I'd like to pay my credit card bill"], local_model)
    assert _turns(run)[0] == ["Which account should I pay from?"]


def test_a_starting_message_with_one_of_two_fields_asks_only_the_other(tmp_path, local_model):
    program = _load(tmp_path, PAY)
    run = _offline(program, ["I'd like to pay my credit card bill from savings"], local_model)
    assert _turns(run)[0] == ["How much?"]


# ---- bug 3: the topic check at an ON_INPUT (yes/no) step ---------------------------------------


def test_a_question_for_another_member_at_a_confirmation_is_answered_and_the_confirmation_asked_again(
        tmp_path, local_model):
    program = _load(tmp_path, PAY)
    run = _offline(program, ["I'd like to pay my credit card bill", "checking", "100",
                             "what's my account balance?", "yes"], local_model)
    turns = _turns(run)
    assert turns[3] == ["Your balance is 1250 EUR.", "Paying 100 EUR from checking. Shall I go ahead?"]
    assert turns[4] == ["Paid 100 EUR.", ANYTHING_ELSE]
    kinds = [(e["type"], e["agent"]) for e in run.events]
    assert ("agent_suspended", "Payer") in kinds and ("thread_return", "Payer") in kinds


def test_yes_no_and_on_input_matches_stay_with_the_flow(tmp_path, local_model):
    program = _load(tmp_path, PAY)
    run = _offline(program, ["I'd like to pay my credit card bill", "checking", "100",
                             "let me check my account balance later", "no"], local_model)
    turns = _turns(run)
    # an ON_INPUT case (input.contains("later")) matches: no topic switch, although balance is named
    assert turns[3] == ["I'll keep it for later.", "Paying 100 EUR from checking. Shall I go ahead?"]
    assert turns[4] == ["Nothing paid.", ANYTHING_ELSE]
    assert not [e for e in run.events if e["type"] == "agent_suspended"]


def test_an_unclear_answer_at_a_confirmation_gets_the_else(tmp_path, local_model):
    program = _load(tmp_path, PAY)
    run = _offline(program, ["I'd like to pay my credit card bill", "checking", "100", "hmm not sure about that"],
                   local_model)
    assert _turns(run)[3] == ["Please answer yes or no.", "Paying 100 EUR from checking. Shall I go ahead?"]


# ---- bug 6: options fields ---------------------------------------------------------------------

CITY = """
AGENT: Trip
GOAL: "Book a city trip"

ENTITIES:
  incident_kind:
    TYPE: enum
    VALUES: [water damage, fire, theft]
    SYNONYMS:
      theft: [stole, stolen, burglary]

GATHER:
  city:
    prompt: "Which city?"
    type: string
    required: true
    options: [Paris, Lisbon]
  kind:
    prompt: "What happened?"
    ENTITY_REF: incident_kind
    required: true

ON_ERROR:
  validation_error:
    RESPOND: "Let's stop here."
    THEN: COMPLETE

FLOW:
  where -> what -> done

  where:
    GATHER:
      - city: required
      STRATEGY: pattern
    THEN: what

  what:
    GATHER:
      - kind: required
      STRATEGY: pattern
    THEN: done

  done:
    RESPOND: "{{kind}} in {{city}}."
    THEN: COMPLETE
"""


def test_a_value_that_is_none_of_the_options_is_answered_and_counted(tmp_path):
    chat = Chat(_load(tmp_path, {"trip.agent.abl": CITY}))
    assert chat.opening == ["Which city?"]
    assert chat.say("Berlin") == ["Please choose one of: Paris or Lisbon.", "Which city?"]
    failed = chat.kinds("gather_validation")
    assert failed[0]["field"] == "city" and failed[0]["kind"] == "options" and failed[0]["retries"] == 1
    assert failed[0]["rule"] == "Paris, Lisbon"
    assert chat.say("Madrid") == ["Please choose one of: Paris or Lisbon.", "Which city?"]
    assert chat.say("Rome") == ["Please choose one of: Paris or Lisbon.", "Which city?"]
    assert chat.say("Oslo") == ["Let's stop here."]  # past max_retries (3): ON_ERROR validation_error


def test_an_entity_synonym_gives_the_option_and_a_miss_lists_the_entity_values(tmp_path):
    chat = Chat(_load(tmp_path, {"trip.agent.abl": CITY}))
    assert chat.say("Lisbon") == ["What happened?"]
    assert chat.say("a meteor") == ["Please choose one of: water damage, fire or theft.", "What happened?"]
    assert chat.say("someone stole my bike") == ["theft in Lisbon."]


def test_synonyms_are_read_only_when_no_option_is_named_and_must_be_unambiguous():
    options = {"kind": ["fire", "theft"]}
    synonyms = {"kind": {"theft": ["stole"], "fire": ["burned"]}}
    assert extract_values("someone stole my bike", {"kind": "string"}, None, options, None, synonyms) == \
        {"kind": "theft"}
    assert extract_values("a fire, and they stole things", {"kind": "string"}, None, options, None, synonyms) == \
        {"kind": "fire"}
    assert extract_values("they stole it and it burned", {"kind": "string"}, None, options, None, synonyms) == {}
    assert extract_values("stolen", {"kind": "string"}, None, options, None, synonyms) == {}


# ---- flow gaps: step-level CLEAR, ON_RESULT ELSE, pattern booleans -------------------------------

GAPS = """
AGENT: Shop
GOAL: "Check stock"

TOOLS:
  stock(item: string) -> {count: number}

GATHER:
  item:
    prompt: "Which item?"
    type: string
    required: true
  gift:
    prompt: "Is it a gift?"
    type: boolean
    required: true

FLOW:
  ask -> check -> wrap

  ask:
    GATHER:
      - item: required
      STRATEGY: pattern
    THEN: check

  check:
    CALL: stock(item)
    AS: stocked
    ON_RESULT:
      - IF: stocked.count > 5
        RESPOND: "Plenty of {{item}}."
        THEN: wrap
      - IF: stocked.count > 0
        RESPOND: "A few {{item}} left."
        THEN: wrap
      - ELSE:
        RESPOND: "No {{item}} in stock."
        THEN: forget

  forget:
    CLEAR: [item]
    THEN: ask

  wrap:
    GATHER:
      - gift: required
      STRATEGY: pattern
    THEN: done

  done:
    RESPOND: "Gift: {{gift}}."
    THEN: COMPLETE
"""


def _shop(tmp_path):
    counts = {"lamp": 9, "vase": 2, "sofa": 0}
    return Chat(_load(tmp_path, {"shop.agent.abl": GAPS}), {"stock": lambda item: {"count": counts.get(item, 0)}})


def test_on_result_else_runs_when_no_case_holds_and_a_step_clear_asks_again(tmp_path):
    chat = _shop(tmp_path)
    assert chat.opening == ["Which item?"]
    assert chat.say("sofa") == ["No sofa in stock.", "Which item?"]  # ELSE, then CLEAR: [item] -> asked again
    assert chat.value("item") is None
    assert chat.say("vase") == ["A few vase left.", "Is it a gift?"]  # the second IF, not the ELSE


def test_on_result_first_case_wins(tmp_path):
    chat = _shop(tmp_path)
    assert chat.say("lamp") == ["Plenty of lamp.", "Is it a gift?"]


@pytest.mark.parametrize(("answer", "value"), [("yes please", True), ("yep", True), ("nope", False),
                                                ("no, it's for me", False)])
def test_a_boolean_field_is_read_by_pattern_in_a_gather_run(tmp_path, answer, value):
    chat = _shop(tmp_path)
    chat.say("lamp")
    assert chat.say(answer) == [f"Gift: {value}."]
    extracted = chat.kinds("gather_extraction")
    assert extracted == [{"fields": {"gift": value}, "by": "pattern"}]


def test_an_unreadable_boolean_answer_is_told_what_is_expected(tmp_path):
    chat = _shop(tmp_path)
    chat.say("lamp")
    assert chat.say("perhaps") == ["Please answer yes or no.", "Is it a gift?"]
    assert chat.kinds("gather_validation")[0]["kind"] == "type"


def test_the_confirmation_digression_with_an_llm_and_no_local_model(tmp_path):
    """The same on the LLM path: the message at "Shall I go ahead?" matches no ON_INPUT case, so one
    understand call reads it as a turn to Account_Info; "yes" afterwards matches a case and costs no call."""
    tmp_path.joinpath("data").mkdir()
    program, _ = load_program(SUPPORT_HUB)
    llm = ScriptedProvider([
        {"purpose": "route", "expect": "route here when: user wants to pay their credit card bill",
         "call": "route", "with": {"agent": "Card_Services"}},
        {"purpose": "understand", "expect": "switch:Account_Info", "call": "understand",
         "with": {"choice": "switch:Account_Info"}},
    ])
    run = run_conversation(program, ["I want to pay 100 EUR on my credit card", "hmm, what's my balance then?",
                                      "yes"], llm)
    assert _turns(run) == [
        ["Paying 100 EUR on your credit card from your checking account. Shall I go ahead?"],
        ["Your checking account balance is 1250 EUR.",
         "Paying 100 EUR on your credit card from your checking account. Shall I go ahead?"],
        ["Done: payment P-10000 of 100 EUR. Your card balance is now 330 EUR.", "Is there anything else I can help with?"],
    ]
    llm.assert_finished()
