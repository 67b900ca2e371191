"""Issue 25, found by the differential harness: a kb agent or an llm agent as a program's entry (`main`).

Before the fix a kb agent as `main` answered an empty question at the session's opening, said its
fallback and ended the conversation, and after a first answer the session ended too; an llm agent
as `main` whose steps greeted asked its model to answer a message nobody had sent. Each test failed
before its fix (docs/adl-semantics.md, "Entry agents")."""

from __future__ import annotations

from pathlib import Path

from frontdesk.llm import ScriptedProvider
from frontdesk.runtime.engine import ENDED_REPLY, Engine
from frontdesk.store.memory import MemorySessionStore

from adl_text import program

MUSEUM = """
    main:
      type: kb agent
      description: Answers visitor questions about the museum.
      fallback: "Sorry, I don't know that. Please call the ticket desk."
      faq:
        - q: Can I buy tickets online?
          a: Yes, tickets are sold on our website.
        - q: Is there parking at the museum?
          a: The Harbour Gate car park is a 5-minute walk away.
"""

GYM = """
    main:
      type: llm agent
      description: The gym's front desk.
      steps:
        - bot: "Hi, welcome to FitHub!"
      prompt: Help members with classes.
"""


def engine(tmp_path: Path, text: str, llm=None) -> Engine:
    return Engine(program(tmp_path, text), llm, MemorySessionStore())


def texts(result) -> list[str]:
    return [m.text for m in result.messages]


def test_kb_entry_waits_for_the_first_question_and_answers_every_one(tmp_path):
    eng = engine(tmp_path, MUSEUM)
    start = eng.start()
    assert texts(start) == [] and not start.ended
    first = eng.send(start.session_id, "Can I buy tickets online?")
    assert texts(first) == ["Yes, tickets are sold on our website."] and not first.ended
    second = eng.send(start.session_id, "Is there parking at the museum?")
    assert texts(second) == ["The Harbour Gate car park is a 5-minute walk away."]
    assert ENDED_REPLY not in texts(second) and not second.ended


def test_kb_entry_without_an_answer_says_its_fallback_and_goes_on(tmp_path):
    eng = engine(tmp_path, MUSEUM)
    session = eng.start().session_id
    missed = eng.send(session, "Do you sell submarines?")
    assert texts(missed) == ["Sorry, I don't know that. Please call the ticket desk."] and not missed.ended
    assert texts(eng.send(session, "Can I buy tickets online?")) == ["Yes, tickets are sold on our website."]


def test_llm_entry_that_greets_waits_for_the_first_message(tmp_path):
    llm = ScriptedProvider([{"reply": "Yoga is on Monday at 9."}])
    eng = engine(tmp_path, GYM, llm)
    start = eng.start()
    assert texts(start) == ["Hi, welcome to FitHub!"] and not start.ended
    assert llm.calls == []  # nothing was asked of the model before the user spoke
    answer = eng.send(start.session_id, "When is yoga?")
    assert texts(answer) == ["Yoga is on Monday at 9."]
    assert any(m.get("content") == "When is yoga?" for m in llm.calls[0].messages if isinstance(m, dict)) or \
        any(getattr(m, "content", None) == "When is yoga?" for m in llm.calls[0].messages)


SHOP = """
    main:
      type: ensemble agent
      description: A bike shop.
      contains:
        - shop_faq
        - repair

    shop_faq:
      type: kb agent
      description: Answers questions about the shop.
      faq:
        - q: When are you open?
          a: We are open 9 to 5.

    repair:
      type: flow agent
      description: Book a bike repair.
      steps:
        - bot: "What kind of bike is it?"
        - user
"""


def test_a_question_nobody_answers_gets_an_apology_not_anything_else(tmp_path):
    """Found by the differential harness (conformance bookstore, "Where is your Riverside shop?" with no
    passage): the kb agent gave the unanswered message back, nobody else took it, and the user was asked
    "Is there anything else I can help you with?" as if the question had been answered."""
    from frontdesk.runtime.routing import ANYTHING_ELSE

    from frontdesk.runtime.prompts import NO_ANSWER

    llm = ScriptedProvider([{"purpose": "route", "call": "route", "with": {"agent": "shop_faq"}},
                            {"purpose": "kb_answer", "reply": NO_ANSWER},  # the small FAQ, read whole
                            {"purpose": "route", "call": "route", "with": {"agent": "none"}}])
    eng = engine(tmp_path, SHOP, llm)
    session = eng.start().session_id
    said = texts(eng.send(session, "Do you sell second-hand frames from the nineteen-seventies?"))
    assert said and ANYTHING_ELSE not in said
    assert said[0].startswith("Sorry")


def test_a_small_kb_is_read_whole_by_the_model_when_no_keyword_matches(tmp_path):
    """Found by the differential harness (custom_llm_example: "can I get my money back?" for the FAQ
    "What is the refund policy?"): with no embedding model, keyword search found nothing and the model
    was never asked; MICA sends its retrieved passages to the model, which answers."""
    llm = ScriptedProvider([{"purpose": "kb_answer", "reply": "We offer a 30-day return policy."}])
    eng = engine(tmp_path, """
        main:
          type: kb agent
          description: Store policies.
          faq:
            - q: What is the refund policy?
              a: We offer a 30-day return policy.
            - q: What is the shipping policy?
              a: We offer free shipping on all orders.
    """, llm)
    session = eng.start().session_id
    assert texts(eng.send(session, "And can I get my money back if I don't like it?")) == \
        ["We offer a 30-day return policy."]
    asked = str(llm.calls[0].messages)
    assert "30-day return policy" in asked and "free shipping" in asked  # the whole FAQ was read
