"""Tests for the retail banking example's tools, called directly against a fresh SQLite database."""

import importlib.util
import pathlib
import sqlite3

import pytest

_TOOLS_FILE = pathlib.Path(__file__).with_name("tools.py")
MARY = "Mary Brown"


def _load_tools_module():
    """Import tools.py by file path: the example folder is not a package."""
    spec = importlib.util.spec_from_file_location("retail_banking_tools_under_test", _TOOLS_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def tools(tmp_path, monkeypatch):
    monkeypatch.setenv("FRONTDESK_EXAMPLE_DB_DIR", str(tmp_path))
    monkeypatch.setenv("FRONTDESK_EXAMPLE_TODAY", "2025-03-14")
    return _load_tools_module()


@pytest.fixture
def query(tools, tmp_path):
    """Run one SQL query against the test database (created first) and return all rows."""
    tools.action_session_start(MARY)  # creates and seeds the database

    def run(sql, *params):
        connection = sqlite3.connect(tmp_path / "retail_banking.db")
        try:
            return connection.execute(sql, params).fetchall()
        finally:
            connection.close()

    return run


def _assert_convention(result, status):
    """The ADL return convention: a status item first, then bot messages and arg updates."""
    assert isinstance(result, list) and result
    head = result[0]
    assert set(head) == {"status", "msg"}
    assert head["status"] == status, head
    assert isinstance(head["msg"], str) and head["msg"]
    for item in result[1:]:
        assert set(item) in ({"bot"}, {"arg", "value"}), item


def _args(result) -> dict:
    return {item["arg"]: item["value"] for item in result[1:] if "arg" in item}


def _bot(result) -> str:
    return " ".join(item["bot"] for item in result[1:] if "bot" in item)


def _balance(query, account_number) -> int:
    return query("SELECT balance_pence FROM accounts WHERE account_number = ?", account_number)[0][0]


# -- session ----------------------------------------------------------------------------------


def test_session_start_loads_the_profile(tools, tmp_path):
    result = tools.action_session_start("mary brown")
    _assert_convention(result, "success")
    assert _args(result) == {
        "username": MARY,
        "segment": "premier",
        "email_address": "mary.brown@example.com",
        "physical_address": "14 Elmwood Road, Bristol, BS6 7QT",
    }
    assert (tmp_path / "retail_banking.db").is_file()


@pytest.mark.parametrize("username", ["Nobody Known", "", None])
def test_session_start_rejects_an_unknown_user(tools, username):
    result = tools.action_session_start(username)
    _assert_convention(result, "error")
    assert _args(result) == {}


# -- accounts and balances --------------------------------------------------------------------


def test_ask_account_asks_the_user_and_tells_the_agent_the_numbers(tools, capsys):
    result = tools.action_ask_account(MARY)
    _assert_convention(result, "success")
    assert "Everyday Current" in _bot(result) and "Rainy Day Savings" in _bot(result)
    assert "40021873" not in _bot(result)
    assert "40021873" in capsys.readouterr().out
    assert [a["account_number"] for a in _args(result)["accounts"]] == ["40021873", "40021881"]


def test_ask_account_from_shows_balances(tools):
    result = tools.action_ask_account_from(MARY)
    _assert_convention(result, "success")
    assert "GBP 2,450.75" in _bot(result) and "GBP 8,120.00" in _bot(result)


@pytest.mark.parametrize("tool_name", ["action_ask_account", "action_ask_account_from"])
def test_ask_account_tools_reject_an_unknown_user(tools, tool_name):
    _assert_convention(getattr(tools, tool_name)("Nobody Known"), "error")


@pytest.mark.parametrize("account", ["40021881", "savings", "Rainy Day Savings", "rainy day", "1881"])
def test_check_balance_finds_the_account_by_number_name_or_type(tools, account):
    result = tools.action_check_balance(MARY, account)
    _assert_convention(result, "success")
    assert _bot(result) == "The balance of your Rainy Day Savings account is GBP 8,120.00."
    assert _args(result) == {"account": "40021881", "balance": 8120.0}


@pytest.mark.parametrize(
    ("username", "account", "hint"),
    [(MARY, "pension", "Everyday Current"),
     (MARY, "40035517", "not one of"),  # James Carter's account
     (MARY, "", "Which account"),
     ("Nobody Known", "savings", "couldn't find")],
)
def test_check_balance_rejects_bad_input(tools, username, account, hint):
    result = tools.action_check_balance(username, account)
    _assert_convention(result, "error")
    assert hint in result[0]["msg"]


# -- payees -------------------------------------------------------------------------------------


def test_check_payee_existence_finds_a_payee_by_full_or_partial_name(tools):
    for name in ("Olivia Grant", "olivia"):
        result = tools.action_check_payee_existence(MARY, name)
        _assert_convention(result, "success")
        assert _args(result) == {"payee_exists": True, "payee_name": "Olivia Grant"}


def test_check_payee_existence_reports_an_unknown_payee(tools):
    result = tools.action_check_payee_existence(MARY, "Leeds Lettings Ltd")  # James's payee
    _assert_convention(result, "error")
    assert _args(result) == {"payee_exists": False}
    assert "added" in result[0]["msg"]


def test_list_payees_shows_each_payee_to_the_user(tools):
    result = tools.action_list_payees(MARY)
    _assert_convention(result, "success")
    assert _args(result)["payees"] == ["Northgate Energy", "Olivia Grant", "Samuel Okafor"]
    assert "Rent share" in _bot(result) and "ending 4857" in _bot(result)
    assert "20394857" not in _bot(result)


def test_list_payees_with_no_payees(tools):
    result = tools.action_list_payees("Aisha Khan")
    _assert_convention(result, "success")
    assert _args(result)["payees"] == []
    assert "don't have any" in _bot(result)


def test_list_payees_rejects_an_unknown_user(tools):
    _assert_convention(tools.action_list_payees("Nobody Known"), "error")


def test_add_payee_stores_the_payee(tools, query):
    result = tools.action_add_payee(MARY, "Lena Fischer", "1234 5678", "Individual", "Physio")
    _assert_convention(result, "success")
    assert _args(result) == {"payee_name": "Lena Fischer"}
    assert query(
        "SELECT account_number, payee_type, reference FROM payees WHERE payee_name = ?",
        "Lena Fischer",
    ) == [("12345678", "person", "Physio")]
    assert "Lena Fischer" in _args(tools.action_list_payees(MARY))["payees"]


@pytest.mark.parametrize(
    ("payee_name", "account_number", "payee_type", "reference", "hint"),
    [("", "12345678", "person", "", "name"),
     ("Lena Fischer", "1234", "person", "", "8 digits"),
     ("Lena Fischer", "abcdefgh", "person", "", "8 digits"),
     ("Lena Fischer", "12345678", "charity", "", "person"),
     ("Lena Fischer", "12345678", "person", "A reference that is too long", "18"),
     ("olivia grant", "12345678", "person", "", "already")],
)
def test_add_payee_rejects_bad_input(tools, payee_name, account_number, payee_type, reference, hint):
    result = tools.action_add_payee(MARY, payee_name, account_number, payee_type, reference)
    _assert_convention(result, "error")
    assert hint in result[0]["msg"]


def test_add_payee_rejects_an_unknown_user(tools):
    result = tools.action_add_payee("Nobody Known", "Lena Fischer", "12345678", "person")
    _assert_convention(result, "error")


def test_remove_payee_deletes_it_and_cancels_its_scheduled_payments(tools, query):
    tools.action_schedule_payment(MARY, "current", "Northgate Energy", "60", "01/04/2025")
    result = tools.action_remove_payee(MARY, "northgate energy")
    _assert_convention(result, "success")
    assert _args(result) == {"payee_name": "Northgate Energy"}
    assert "cancelled" in result[0]["msg"]
    assert query("SELECT COUNT(*) FROM payees WHERE payee_name = 'Northgate Energy'") == [(0,)]
    assert query("SELECT status FROM payments") == [("cancelled",)]


@pytest.mark.parametrize(("username", "payee_name"), [(MARY, "Zed Unknown"), ("Nobody Known", "Olivia Grant")])
def test_remove_payee_rejects_unknown_payee_or_user(tools, query, username, payee_name):
    result = tools.action_remove_payee(username, payee_name)
    _assert_convention(result, "error")
    assert query("SELECT COUNT(*) FROM payees WHERE username = ?", MARY) == [(3,)]


# -- transfers ------------------------------------------------------------------------------------


@pytest.mark.parametrize("amount", [100, 100.5, "100", "GBP 1,000.00", "\u00a3250", " 2450.75 "])
def test_check_sufficient_funds_accepts_amounts_in_several_forms(tools, amount):
    result = tools.action_check_sufficient_funds(MARY, "current", amount)
    _assert_convention(result, "success")
    assert _args(result)["has_sufficient_funds"] is True
    assert _args(result)["account_from"] == "40021873"


def test_check_sufficient_funds_reports_insufficient_funds(tools):
    result = tools.action_check_sufficient_funds(MARY, "current", "2450.76")
    _assert_convention(result, "error")
    assert _args(result) == {"has_sufficient_funds": False}
    assert "Insufficient" in result[0]["msg"]


@pytest.mark.parametrize(
    "amount", ["lots", "", None, True, 0, -5, "-5", "12.345", float("nan"), "Infinity"]
)
def test_check_sufficient_funds_rejects_bad_amounts(tools, amount):
    result = tools.action_check_sufficient_funds(MARY, "current", amount)
    _assert_convention(result, "error")


def test_immediate_payment_moves_money_and_records_it(tools, query):
    result = tools.action_process_immediate_payment(MARY, "Everyday Current", "Olivia Grant", "50.25")
    _assert_convention(result, "success")
    assert _args(result)["balance"] == 2400.50
    assert _balance(query, "40021873") == 240050
    assert query("SELECT payee_name, amount_pence, status, payment_date FROM payments") == [
        ("Olivia Grant", 5025, "completed", "2025-03-14")
    ]
    assert query("SELECT id FROM payments")[0][0] == _args(result)["payment_id"]


@pytest.mark.parametrize(
    ("username", "account_from", "payee_name", "amount"),
    [("Nobody Known", "current", "Olivia Grant", "10"),
     (MARY, "pension", "Olivia Grant", "10"),
     (MARY, "current", "Zed Unknown", "10"),
     (MARY, "current", "Olivia Grant", "ten pounds"),
     (MARY, "current", "Olivia Grant", "5000")],  # more than the balance
)
def test_immediate_payment_rejects_bad_input_without_moving_money(
    tools, query, username, account_from, payee_name, amount
):
    result = tools.action_process_immediate_payment(username, account_from, payee_name, amount)
    _assert_convention(result, "error")
    assert _balance(query, "40021873") == 245075
    assert query("SELECT COUNT(*) FROM payments") == [(0,)]


def test_immediate_payment_raises_above_one_million_on_purpose(tools):
    # The deliberate tool failure that lets conversation tests exercise tool-error handling.
    with pytest.raises(RuntimeError, match="payment service unavailable"):
        tools.action_process_immediate_payment(MARY, "current", "Olivia Grant", "1000000.01")


def test_immediate_payment_of_exactly_one_million_does_not_raise(tools):
    result = tools.action_process_immediate_payment(MARY, "current", "Olivia Grant", 1_000_000)
    _assert_convention(result, "error")  # insufficient funds, reported normally


@pytest.mark.parametrize(("given", "normalised"), [("15/03/2025", "15/03/2025"), ("1/4/2025", "01/04/2025")])
def test_validate_payment_date_accepts_future_dates(tools, given, normalised):
    result = tools.action_validate_payment_date(given)
    _assert_convention(result, "success")
    assert _args(result) == {"payment_date": normalised, "payment_date_valid": True}


@pytest.mark.parametrize(
    ("given", "hint"),
    [("14/03/2025", "not in the future"),  # today
     ("01/01/2020", "not in the future"),
     ("2025-04-01", "DD/MM/YYYY"),
     ("next Friday", "DD/MM/YYYY"),
     ("", "DD/MM/YYYY"),
     (None, "DD/MM/YYYY"),
     ("31/02/2026", "not a real calendar date")],
)
def test_validate_payment_date_rejects_bad_dates(tools, given, hint):
    result = tools.action_validate_payment_date(given)
    _assert_convention(result, "error")
    assert hint in result[0]["msg"]
    assert _args(result) == {"payment_date_valid": False}


def test_schedule_payment_records_a_future_payment_without_moving_money(tools, query):
    result = tools.action_schedule_payment(MARY, "savings", "Samuel Okafor", "35", "20/03/2025")
    _assert_convention(result, "success")
    assert isinstance(_args(result)["scheduled_payment_id"], int)
    assert query("SELECT account_from, amount_pence, payment_date, status FROM payments") == [
        ("40021881", 3500, "2025-03-20", "scheduled")
    ]
    assert _balance(query, "40021881") == 812000


@pytest.mark.parametrize(
    ("account_from", "payee_name", "amount", "payment_date"),
    [("savings", "Samuel Okafor", "35", "10/03/2025"),
     ("savings", "Samuel Okafor", "35", "2025-03-20"),
     ("savings", "Samuel Okafor", "abc", "20/03/2025"),
     ("savings", "Zed Unknown", "35", "20/03/2025"),
     ("pension", "Samuel Okafor", "35", "20/03/2025")],
)
def test_schedule_payment_rejects_bad_input(tools, query, account_from, payee_name, amount, payment_date):
    result = tools.action_schedule_payment(MARY, account_from, payee_name, amount, payment_date)
    _assert_convention(result, "error")
    assert query("SELECT COUNT(*) FROM payments") == [(0,)]


# -- cards --------------------------------------------------------------------------------------------


def test_ask_card_lists_usable_cards(tools):
    result = tools.action_ask_card(MARY)
    _assert_convention(result, "success")
    assert "debit card ending 4821" in _bot(result) and "credit card ending 7390" in _bot(result)
    assert [c["last_four"] for c in _args(result)["cards"]] == ["4821", "7390"]


def test_ask_card_leaves_out_blocked_cards(tools):
    tools.action_update_card_status(MARY, "debit", "damaged")
    result = tools.action_ask_card(MARY)
    assert "4821" not in _bot(result)
    assert [c["last_four"] for c in _args(result)["cards"]] == ["7390"]


def test_ask_card_rejects_an_unknown_user(tools):
    _assert_convention(tools.action_ask_card("Nobody Known"), "error")


@pytest.mark.parametrize("card", ["debit", "my debit card", "4821", "the card ending 4821"])
def test_update_card_status_blocks_the_named_card(tools, query, card):
    result = tools.action_update_card_status(MARY, card, "damaged")
    _assert_convention(result, "success")
    assert _args(result) == {
        "card": "debit card ending 4821",
        "card_status": "blocked",
        "replacement_requested": False,
    }
    assert "blocked" in _bot(result)
    assert query("SELECT last_four, status FROM cards WHERE username = ?", MARY) == [
        ("4821", "blocked"), ("7390", "active")
    ]


def test_update_card_status_freezes_temporarily_and_orders_a_replacement(tools, query):
    result = tools.action_update_card_status(MARY, "credit", "travelling or moving", True, "yes")
    _assert_convention(result, "success")
    assert _args(result)["card_status"] == "frozen"
    assert _args(result)["replacement_requested"] is True
    assert "frozen" in _bot(result)
    assert query("SELECT new_status, reason, replacement_requested, delivery_address FROM card_events") == [
        ("frozen", "travelling or moving", 1, "14 Elmwood Road, Bristol, BS6 7QT")
    ]


def test_update_card_status_picks_the_only_usable_card_when_none_is_named(tools):
    result = tools.action_update_card_status("James Carter", "", "lost or stolen")
    _assert_convention(result, "success")
    assert _args(result)["card"] == "debit card ending 1156"


@pytest.mark.parametrize(
    ("username", "card", "hint"),
    [(MARY, "", "Which card"),  # two usable cards
     (MARY, "9999", "not one of"),
     (MARY, "my gold card", "not one of"),
     ("Nobody Known", "debit", "couldn't find")],
)
def test_update_card_status_rejects_bad_input(tools, query, username, card, hint):
    result = tools.action_update_card_status(username, card, "damaged")
    _assert_convention(result, "error")
    assert hint in result[0]["msg"]
    assert query("SELECT COUNT(*) FROM cards WHERE status != 'active'") == [(0,)]


def test_update_card_status_refuses_to_block_a_card_twice(tools):
    tools.action_update_card_status(MARY, "debit", "damaged")
    result = tools.action_update_card_status(MARY, "debit", "damaged")
    _assert_convention(result, "error")
    assert "already blocked" in result[0]["msg"]
    assert "already blocked" in _bot(result)  # the customer is told why nothing changed


def test_each_test_gets_a_fresh_database(tools, query):
    # Other tests move money from the current account; here it holds the seed balance again.
    tools.action_session_start(MARY)
    assert _balance(query, "40021873") == 245075
