"""Offline, an LLM agent whose tools change something follows its prompt as a form (runtime/offline_form.py):
it asks for its arguments in the prompt's order, reads them with typed readers only, runs the checks that
change nothing as soon as they can run, and runs the change only after the user said yes to a summary."""

from __future__ import annotations

from pathlib import Path


from frontdesk.lang import load_program
from frontdesk.testing import run_conversation

ROOT = Path(__file__).resolve().parents[1]
BANKING = ROOT / "examples" / "retail_banking"


def offline(lines, local_model):
    program, _ = load_program(BANKING)
    understanding, embedder = local_model
    return run_conversation(program, lines, None, understanding=understanding, embedder=embedder)


def calls(run, index=None):
    turns = run.turns if index is None else [run.turns[index]]
    return [(e.data["tool"], e.data.get("args") or {}) for t in turns for e in t.events if e.type == "tool_call"]


def said(run, index):
    return " ".join(m.text for m in run.turns[index].messages)


TRANSFER = ["I want to transfer money", "From my Everyday Current account.", "To Olivia Grant", "£120",
            "Right now, please."]


def test_a_transfer_is_gathered_in_the_prompts_order_and_run_after_yes(local_model, example_db):
    run = offline([*TRANSFER, "Yes"], local_model)
    assert "Which account would you like to send the money from" in said(run, 1)
    assert calls(run, 2) == []  # the account is held; the payee is asked for next
    assert "payee" in said(run, 2).lower()
    assert calls(run, 3) == [("action_check_payee_existence", {"username": "Mary Brown", "payee_name": "Olivia Grant"})]
    assert [c[0] for c in calls(run, 4)] == ["action_check_sufficient_funds"]
    assert calls(run, 4)[0][1]["account_from"] == "40021873"  # the number of the account the user named
    confirm = said(run, 5)
    assert confirm.endswith("Shall I go ahead?") and "Everyday Current" in confirm and "40021873" not in confirm
    assert calls(run, 5) == []  # nothing changed before the yes
    assert [c[0] for c in calls(run, 6)] == ["action_process_immediate_payment"]
    assert calls(run, 6)[0][1] == {"username": "Mary Brown", "account_from": "40021873", "payee_name": "Olivia Grant",
                                   "amount": 120}


def test_no_to_the_summary_changes_nothing(local_model, example_db):
    run = offline([*TRANSFER, "No"], local_model)
    assert [c for c in calls(run) if c[0] == "action_process_immediate_payment"] == []
    assert "not done" in said(run, 6)


def test_a_field_not_asked_for_takes_no_free_text(local_model, example_db):
    # the account named is not read as the payee's name, nor "current" as the transfer's timing
    run = offline(TRANSFER[:2], local_model)
    read = [e.data["args"] for e in run.turns[2].events
            if e.type == "reasoning_offline" and e.data.get("action") == "read"]
    assert read == [{"account_from": "40021873"}]


def test_a_check_that_fails_says_why_and_asks_again(local_model, example_db):
    run = offline([*TRANSFER[:2], "To Zed Unknown"], local_model)
    text = said(run, 3)
    assert "not one of" in text and "payee" in text.lower()
    assert not [c for c in calls(run, 3) if c[0] == "action_check_sufficient_funds"]


def test_a_correction_at_the_summary_checks_again_and_asks_again(local_model, example_db):
    run = offline([*TRANSFER, "Actually, make it 50 pounds.", "Yes"], local_model)
    assert [c for c in calls(run, 6) if c[0] == "action_check_sufficient_funds"][0][1]["amount"] == 50
    assert said(run, 6).endswith("Shall I go ahead?") and "amount: 50" in said(run, 6)
    assert calls(run, 7)[0][0] == "action_process_immediate_payment" and calls(run, 7)[0][1]["amount"] == 50


def test_a_payee_is_removed_only_after_yes(local_model, example_db):
    run = offline(["I want to remove a payee", "Samuel Okafor", "Yes"], local_model)
    assert calls(run, 2) == [] and said(run, 2).endswith("Shall I go ahead?")
    assert calls(run, 3) == [("action_remove_payee", {"username": "Mary Brown", "payee_name": "Samuel Okafor"})]


def test_one_thing_said_fills_one_field_and_an_asked_note_is_taken_in_the_users_words(local_model, example_db):
    run = offline(["I want to add a new payee", "Harbour Lettings Ltd", "The account number is 12345678",
                   "It's a business.", "Rent", "Yes, correct."], local_model)
    assert "reference" in said(run, 4).lower()  # the account number was not also taken as the reference
    assert calls(run, 6) == [("action_add_payee", {"username": "Mary Brown", "payee_name": "Harbour Lettings Ltd",
                                                    "account_number": "12345678", "payee_type": "business",
                                                    "reference": "Rent"})]


def test_a_corrected_name_replaces_the_first_and_yes_is_no_name(local_model, example_db):
    run = offline(["Remove Olivia Grant from my payees.", "Sorry, I meant Northgate Energy, not Olivia.", "Yes."],
                  local_model)
    assert "payee name: Olivia Grant" in said(run, 1)
    assert "payee name: Northgate Energy" in said(run, 2)
    assert calls(run, 3) == [("action_remove_payee", {"username": "Mary Brown", "payee_name": "Northgate Energy"})]


def test_a_day_is_written_as_the_parameter_says(local_model, example_db):
    run = offline(["I want to make a transfer.", "OK, from savings then. 100 pounds to Northgate Energy.",
                   "On 15/12/2026.", "Yes please."], local_model)
    assert ("action_validate_payment_date", {"payment_date": "15/12/2026"}) in calls(run, 3)
    assert [c[0] for c in calls(run, 4)] == ["action_schedule_payment"]


def test_an_agent_that_answered_and_asks_nothing_is_done_and_does_not_come_back(local_model, example_db):
    run = offline(["Who are my payees?", "Please remove Samuel Okafor.", "Yes, remove him."], local_model)
    assert "Samuel Okafor" in said(run, 1)
    agents = {e.agent for e in run.turns[3].events if e.type in ("agent_resumed", "bot_message")}
    assert agents == {"remove_payee"}


def test_proper_name_skips_a_leading_verb_and_a_name_said_no_to():
    from frontdesk.runtime.offline_tools import proper_name

    assert proper_name("Remove Olivia Grant from my payees.") == "Olivia Grant"
    assert proper_name("Harbour Lettings Ltd") is None  # the whole answer at a start: read as the answer asked
    assert proper_name("Sorry, I meant Northgate Energy, not Olivia.") == "Northgate Energy"


def test_a_role_is_no_name_and_a_number_of_other_length_is_no_account_number(local_model, example_db):
    run = offline(["I want to add a new payee", "It's for my new landlord.", "Harbour Lettings Ltd",
                   "My own account ends in 1873, if that matters."], local_model)
    read = [e.data["args"] for t in run.turns for e in t.events
            if e.type == "reasoning_offline" and e.data.get("action") == "read"]
    assert read == [{"payee_name": "Harbour Lettings Ltd"}]
    refused = [e.data["values"] for e in run.turns[4].events if e.type == "value_refused"]
    assert refused and "account_number" in refused[0]
    assert "account number" in said(run, 4).lower()  # asked again


def test_a_month_is_no_name_and_confirm_says_yes():
    from frontdesk.nlu.matcher import polarity
    from frontdesk.runtime.offline_tools import proper_name

    assert proper_name("Make it go out on the 1st of December.") is None
    assert polarity("Confirm.") > 0
