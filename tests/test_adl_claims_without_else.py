"""Issue 25, found on the held-out library_loans bot: "Which one would you like to renew?" is followed by
`if: the user claims "All of them"` (which sets `book_title: "all"`) and no `else`. The answer "The
Hobbit" was not read for `book_title` (the flow sets it itself, so it was never asked of the model),
no case matched, and the fallback agent took the conversation. MICA and the spec's author both go on
with the renewal. docs/adl-semantics.md, "Conditions". Each test failed before the fix."""

from __future__ import annotations


from frontdesk.llm import ScriptedProvider
from frontdesk.testing import run_conversation

from adl_text import program, said

LIBRARY = """
    main:
      type: flow agent
      description: Renews books.
      args:
        - book_title
      fallback: "Sorry, I didn't understand that. Could you rephrase it?"
      steps:
        - bot: "Which one would you like to renew?"
        - user
        - if: the user claims "All of them", "Renew everything"
          then:
            - set:
                book_title: "all"
        - bot: "Renewing ${book_title}."
"""


def test_an_answer_that_gives_the_value_goes_on_when_no_case_matches(tmp_path):
    llm = ScriptedProvider([{"purpose": "understand", "call": "understand",
                             "with": {"choice": "none", "args": {"book_title": "The Hobbit"}}}])
    run = run_conversation(program(tmp_path, LIBRARY), ["The Hobbit"], llm)
    assert said(run, 1) == ["Renewing The Hobbit."]
    # the argument a `set:` of a literal fills in one case was asked of the model with the case
    assert "book_title" in str(run.events_of("llm_call")[0]["data"])


def test_a_case_still_wins(tmp_path):
    llm = ScriptedProvider([{"purpose": "understand", "call": "understand", "with": {"choice": "1", "args": {}}}])
    run = run_conversation(program(tmp_path, LIBRARY), ["all of them please"], llm)
    assert said(run, 1) == ["Renewing all."]


def test_an_answer_that_gives_nothing_still_gets_the_fallback(tmp_path):
    llm = ScriptedProvider([{"purpose": "understand", "call": "understand", "with": {"choice": "none", "args": {}}}])
    run = run_conversation(program(tmp_path, LIBRARY), ["hmm"], llm)
    assert said(run, 1) == ["Sorry, I didn't understand that. Could you rephrase it?"]
