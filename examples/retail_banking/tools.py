"""The retail banking example's custom functions (ADL tools), backed by a small SQLite database.

Every tool follows the ADL return convention: a list whose first item is
{"status": "success" | "error", "msg": ...} for the caller agent, optionally a
{"bot": ...} item with a message for the user, then {"arg": name, "value": ...} argument
updates. What a tool prints also goes to the caller agent. Invalid input (unknown user, account,
payee or card, a non-numeric amount, a bad date) gives an "error" status with a helpful
message; the single deliberate exception is documented in action_process_immediate_payment.

The database is created (and filled from data.py) on first use, in the folder named by the
environment variable FRONTDESK_EXAMPLE_DB_DIR, or in a `.data/` folder beside this file.
Each call opens and closes its own connection, so changing the variable takes effect at once.
Set FRONTDESK_EXAMPLE_TODAY=YYYY-MM-DD to pin "today" for repeatable conversations.
Money is stored in pence; amounts are pounds sterling (GBP).
"""

import contextlib
import datetime
import decimal
import importlib.util
import math
import os
import pathlib
import re
import sqlite3

_EXAMPLE_DIR = pathlib.Path(__file__).resolve().parent
_DB_FILE_NAME = "retail_banking.db"
_SUPPORT_PHONE = "020 7946 0321"
# Above this amount the (simulated) payment service fails; see action_process_immediate_payment.
_PAYMENT_SERVICE_LIMIT_PENCE = 1_000_000 * 100
_MAX_REFERENCE_LENGTH = 18
_MAX_PAYEE_NAME_LENGTH = 40
_MAX_PAYEES_PER_USER = 100


def _load_seed_data():
    """Load data.py from this folder by path (the example folder is not a package)."""
    spec = importlib.util.spec_from_file_location(
        "frontdesk_example_retail_banking_data", _EXAMPLE_DIR / "data.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_seed = _load_seed_data()

_SCHEMA = """
CREATE TABLE IF NOT EXISTS users (
    username TEXT PRIMARY KEY COLLATE NOCASE,
    segment TEXT NOT NULL,
    email_address TEXT NOT NULL,
    physical_address TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS accounts (
    account_number TEXT PRIMARY KEY,
    username TEXT NOT NULL REFERENCES users(username),
    name TEXT NOT NULL,
    account_type TEXT NOT NULL,
    balance_pence INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS payees (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    username TEXT NOT NULL REFERENCES users(username),
    payee_name TEXT NOT NULL,
    account_number TEXT NOT NULL,
    payee_type TEXT NOT NULL CHECK (payee_type IN ('person', 'business')),
    reference TEXT NOT NULL DEFAULT '',
    UNIQUE (username, payee_name COLLATE NOCASE)
);
CREATE TABLE IF NOT EXISTS cards (
    id INTEGER PRIMARY KEY,
    username TEXT NOT NULL REFERENCES users(username),
    card_type TEXT NOT NULL CHECK (card_type IN ('debit', 'credit')),
    last_four TEXT NOT NULL,
    account_number TEXT,
    expiry TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('active', 'frozen', 'blocked'))
);
CREATE TABLE IF NOT EXISTS card_events (
    id INTEGER PRIMARY KEY,
    card_id INTEGER NOT NULL REFERENCES cards(id),
    new_status TEXT NOT NULL,
    reason TEXT NOT NULL,
    replacement_requested INTEGER NOT NULL,
    delivery_address TEXT,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS payments (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    username TEXT NOT NULL REFERENCES users(username),
    account_from TEXT NOT NULL REFERENCES accounts(account_number),
    payee_id INTEGER NOT NULL,
    payee_name TEXT NOT NULL,
    amount_pence INTEGER NOT NULL CHECK (amount_pence > 0),
    payment_date TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('completed', 'scheduled', 'cancelled')),
    created_at TEXT NOT NULL
);
"""


def _database_path() -> pathlib.Path:
    folder = os.environ.get("FRONTDESK_EXAMPLE_DB_DIR") or str(_EXAMPLE_DIR / ".data")
    return pathlib.Path(folder) / _DB_FILE_NAME


def _seed_database(connection) -> None:
    connection.executemany(
        "INSERT INTO users (username, segment, email_address, physical_address)"
        " VALUES (:username, :segment, :email_address, :physical_address)",
        _seed.USERS,
    )
    connection.executemany(
        "INSERT INTO accounts (account_number, username, name, account_type, balance_pence)"
        " VALUES (?, ?, ?, ?, ?)",
        [
            (a["account_number"], a["username"], a["name"], a["account_type"],
             round(a["balance"] * 100))
            for a in _seed.ACCOUNTS
        ],
    )
    connection.executemany(
        "INSERT INTO payees (username, payee_name, account_number, payee_type, reference)"
        " VALUES (:username, :payee_name, :account_number, :payee_type, :reference)",
        _seed.PAYEES,
    )
    connection.executemany(
        "INSERT INTO cards (username, card_type, last_four, account_number, expiry, status)"
        " VALUES (:username, :card_type, :last_four, :account_number, :expiry, :status)",
        _seed.CARDS,
    )


@contextlib.contextmanager
def _open_database():
    """Yield a connection to the example database, creating and seeding it on first use.

    The block runs in one transaction: committed on success, rolled back on an exception.
    """
    path = _database_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path)
    try:
        connection.row_factory = sqlite3.Row
        connection.execute("PRAGMA foreign_keys = ON")
        connection.executescript(_SCHEMA)
        with connection:
            if connection.execute("SELECT COUNT(*) FROM users").fetchone()[0] == 0:
                _seed_database(connection)
        with connection:
            yield connection
    finally:
        connection.close()


# ---------------------------------------------------------------------------
# Helpers: lookups and input parsing. Lookups return (row, None) or (None, error message).
# ---------------------------------------------------------------------------


class _InputError(Exception):
    """Bad tool input; turned into an error status by _error, never raised to the caller."""


def _error(message: str, *updates: dict) -> list:
    return [{"status": "error", "msg": message}, *updates]


def _today() -> datetime.date:
    pinned = os.environ.get("FRONTDESK_EXAMPLE_TODAY", "").strip()
    if pinned:
        try:
            return datetime.date.fromisoformat(pinned)
        except ValueError:
            pass
    return datetime.date.today()


def _now_text() -> str:
    return datetime.datetime.now().isoformat(timespec="seconds")


def _money(pence: int) -> str:
    return f"GBP {pence / 100:,.2f}"


def _text(value) -> str:
    return "" if value is None else " ".join(str(value).split())


def _find_user(connection, username):
    name = _text(username)
    if not name:
        raise _InputError("I need the customer's username first.")
    row = connection.execute("SELECT * FROM users WHERE username = ?", (name,)).fetchone()
    if row is None:
        raise _InputError(f"I couldn't find a customer called '{name}'.")
    return row


def _user_accounts(connection, username: str) -> list:
    return connection.execute(
        "SELECT * FROM accounts WHERE username = ? ORDER BY account_number", (username,)
    ).fetchall()


def _find_account(connection, username: str, account):
    """An account of the user, named by its number, its name, or its type ("savings")."""
    accounts = _user_accounts(connection, username)
    names = " or ".join(a["name"] for a in accounts)
    wanted = _text(account).lower()
    if not wanted:
        raise _InputError(f"Which account? {username} has: {names}.")
    digits = re.sub(r"[\s-]", "", wanted)
    if digits.isdigit():
        for row in accounts:
            if row["account_number"] == digits or (
                len(digits) == 4 and row["account_number"].endswith(digits)
            ):
                return row
        raise _InputError(f"Account {digits} is not one of {username}'s accounts ({names}).")
    for row in accounts:
        if row["name"].lower() == wanted:
            return row
    matches = [
        row for row in accounts
        if row["account_type"] in wanted.split() or wanted in row["name"].lower()
        or any(word in row["name"].lower().split() for word in wanted.split() if len(word) > 3)
    ]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise _InputError(
            f"'{account}' could be {' or '.join(m['name'] for m in matches)}. Which one?"
        )
    raise _InputError(f"{username} has no account called '{account}'. Accounts: {names}.")


def _find_payee(connection, username: str, payee_name):
    name = _text(payee_name)
    if not name:
        raise _InputError("I need the name of the payee.")
    payees = connection.execute(
        "SELECT * FROM payees WHERE username = ? ORDER BY payee_name", (username,)
    ).fetchall()
    for row in payees:
        if row["payee_name"].lower() == name.lower():
            return row
    partial = [row for row in payees if name.lower() in row["payee_name"].lower()]
    if len(partial) == 1 and len(name) >= 3:
        return partial[0]
    known = ", ".join(row["payee_name"] for row in payees) or "none"
    raise _InputError(
        f"'{name}' is not one of {username}'s authorised payees (payees: {known}). "
        "A new payee has to be added before money can be sent to them."
    )


def _parse_amount(amount) -> int:
    """An amount in pounds (number or text like "GBP 1,200.50") as a positive number of pence."""
    if isinstance(amount, bool) or amount is None:
        raise _InputError("Please give the amount to transfer, e.g. 250 or 49.99.")
    if isinstance(amount, (int, float)):
        if isinstance(amount, float) and not math.isfinite(amount):
            raise _InputError("The amount must be a number of pounds, e.g. 250 or 49.99.")
        value = decimal.Decimal(str(amount))
    else:
        text = re.sub(r"(?i)gbp|pounds?|\u00a3|,|\s", "", str(amount))
        try:
            value = decimal.Decimal(text)
        except decimal.InvalidOperation:
            raise _InputError(
                f"'{amount}' is not an amount of money. Please give a number, e.g. 250 or 49.99."
            ) from None
        if not value.is_finite():
            raise _InputError("The amount must be a number of pounds, e.g. 250 or 49.99.")
    if value != value.quantize(decimal.Decimal("0.01")):
        raise _InputError("The amount can have at most two decimal places (pence).")
    if value <= 0:
        raise _InputError("The amount must be more than zero.")
    return int(value * 100)


def _parse_future_date(payment_date) -> datetime.date:
    text = _text(payment_date)
    if not re.fullmatch(r"\d{1,2}/\d{1,2}/\d{4}", text):
        raise _InputError(
            f"'{text}' is not a date in the format DD/MM/YYYY (for example 05/09/2025)."
        )
    try:
        day = datetime.datetime.strptime(text, "%d/%m/%Y").date()
    except ValueError:
        raise _InputError(f"{text} is not a real calendar date.") from None
    today = _today()
    if day <= today:
        raise _InputError(
            f"{day:%d/%m/%Y} is not in the future (today is {today:%d/%m/%Y}). "
            "Scheduled payments need a future date; use an immediate transfer for today."
        )
    return day


def _as_bool(value) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "yes", "y", "1")
    return bool(value)


def _card_label(card) -> str:
    return f"{card['card_type']} card ending {card['last_four']}"


def _find_card(connection, username: str, card):
    """One of the user's cards, named by type ("debit"), last four digits, or both."""
    cards = connection.execute(
        "SELECT * FROM cards WHERE username = ? ORDER BY id", (username,)
    ).fetchall()
    wanted = _text(card).lower()
    if not wanted:
        usable = [c for c in cards if c["status"] != "blocked"]
        if len(usable) == 1:
            return usable[0]
        raise _InputError(
            "Which card? " + " or ".join(_card_label(c) for c in usable) + "."
            if usable else f"{username} has no active cards."
        )
    matches = cards
    last_four = re.findall(r"\d{4}", wanted)
    if last_four:
        matches = [c for c in matches if c["last_four"] in last_four]
    for card_type in ("debit", "credit"):
        if card_type in wanted:
            matches = [c for c in matches if c["card_type"] == card_type]
    if not last_four and not any(t in wanted for t in ("debit", "credit")):
        matches = []
    if len(matches) == 1:
        return matches[0]
    known = " or ".join(_card_label(c) for c in cards) or "no cards"
    if matches:
        raise _InputError(f"'{card}' matches more than one card: {known}. Which one?")
    raise _InputError(f"'{card}' is not one of {username}'s cards ({known}).")


# ---------------------------------------------------------------------------
# Tools
# ---------------------------------------------------------------------------


def action_session_start(username: str):
    """Start a banking session: load the customer's profile (segment, email and postal address).

    Args:
        username: The customer's full name as registered with the bank, e.g. "Mary Brown".
    """
    try:
        with _open_database() as connection:
            user = _find_user(connection, username)
    except _InputError as problem:
        return _error(str(problem))
    return [
        {"status": "success", "msg": f"Session started for {user['username']}."},
        {"arg": "username", "value": user["username"]},
        {"arg": "segment", "value": user["segment"]},
        {"arg": "email_address", "value": user["email_address"]},
        {"arg": "physical_address", "value": user["physical_address"]},
    ]


def action_ask_account(username: str):
    """Show the customer's accounts and ask which one they want to check.

    Args:
        username: The customer's username.
    """
    try:
        with _open_database() as connection:
            user = _find_user(connection, username)
            accounts = _user_accounts(connection, user["username"])
    except _InputError as problem:
        return _error(str(problem))
    print("Accounts: " + "; ".join(
        f"{a['name']} (account_number {a['account_number']})" for a in accounts
    ))
    names = " or ".join(a["name"] for a in accounts)
    return [
        {"status": "success", "msg": f"{user['username']} has {len(accounts)} accounts."},
        {"bot": f"Which account would you like to check: {names}?"},
        {"arg": "accounts", "value": [
            {"name": a["name"], "account_number": a["account_number"]} for a in accounts
        ]},
    ]


def action_ask_account_from(username: str):
    """Show the customer's accounts with their balances and ask which one to pay from.

    Args:
        username: The customer's username.
    """
    try:
        with _open_database() as connection:
            user = _find_user(connection, username)
            accounts = _user_accounts(connection, user["username"])
    except _InputError as problem:
        return _error(str(problem))
    print("Accounts: " + "; ".join(
        f"{a['name']} (account_number {a['account_number']})" for a in accounts
    ))
    choices = " or ".join(
        f"{a['name']} (balance {_money(a['balance_pence'])})" for a in accounts
    )
    return [
        {"status": "success", "msg": f"{user['username']} has {len(accounts)} accounts."},
        {"bot": f"Which account would you like to send the money from: {choices}?"},
        {"arg": "accounts", "value": [
            {"name": a["name"], "account_number": a["account_number"]} for a in accounts
        ]},
    ]


def action_check_balance(username: str, account: str):
    """Tell the customer the balance of one of their accounts.

    Args:
        username: The customer's username.
        account: The account number, or the account's name or type (e.g. "savings").
    """
    try:
        with _open_database() as connection:
            user = _find_user(connection, username)
            row = _find_account(connection, user["username"], account)
    except _InputError as problem:
        return _error(str(problem))
    balance = _money(row["balance_pence"])
    return [
        {"status": "success", "msg": f"Balance of {row['name']}: {balance}."},
        {"bot": f"The balance of your {row['name']} account is {balance}."},
        {"arg": "account", "value": row["account_number"]},
        {"arg": "balance", "value": row["balance_pence"] / 100},
    ]


def action_check_payee_existence(username: str, payee_name: str):
    """Check that a payee is on the customer's list of authorised payees.

    Args:
        username: The customer's username.
        payee_name: The name of the payee to send money to.
    """
    try:
        with _open_database() as connection:
            user = _find_user(connection, username)
            payee = _find_payee(connection, user["username"], payee_name)
    except _InputError as problem:
        return _error(str(problem), {"arg": "payee_exists", "value": False})
    return [
        {"status": "success", "msg": f"{payee['payee_name']} is an authorised payee."},
        {"arg": "payee_exists", "value": True},
        {"arg": "payee_name", "value": payee["payee_name"]},
    ]


def action_check_sufficient_funds(username: str, account_from: str, amount: str):
    """Check that an account holds enough money for a transfer.

    Args:
        username: The customer's username.
        account_from: The account to pay from: its number, name or type.
        amount: The amount to transfer in pounds, e.g. "250" or "49.99".
    """
    try:
        pence = _parse_amount(amount)
        with _open_database() as connection:
            user = _find_user(connection, username)
            account = _find_account(connection, user["username"], account_from)
    except _InputError as problem:
        return _error(str(problem))
    if account["balance_pence"] < pence:
        return _error(
            f"Insufficient funds: {account['name']} holds {_money(account['balance_pence'])}, "
            f"the transfer needs {_money(pence)}.",
            {"arg": "has_sufficient_funds", "value": False},
        )
    return [
        {"status": "success",
         "msg": f"{account['name']} has enough money for a transfer of {_money(pence)}."},
        {"arg": "has_sufficient_funds", "value": True},
        {"arg": "amount", "value": pence / 100},
        {"arg": "account_from", "value": account["account_number"]},
    ]


def action_process_immediate_payment(
    username: str, account_from: str, payee_name: str, amount: str
):
    """Send money to an authorised payee now.

    Args:
        username: The customer's username.
        account_from: The account to pay from: its number, name or type.
        payee_name: The name of an authorised payee.
        amount: The amount to transfer in pounds, e.g. "250" or "49.99".
    """
    try:
        pence = _parse_amount(amount)
    except _InputError as problem:
        return _error(str(problem))
    # Deliberate failure, whatever the other arguments: amounts above GBP 1,000,000 make the
    # simulated payment service raise, so conversation tests can exercise how the runtime
    # handles a tool that raises. Every other bad input returns an error status instead.
    if pence > _PAYMENT_SERVICE_LIMIT_PENCE:
        raise RuntimeError("payment service unavailable")
    try:
        with _open_database() as connection:
            user = _find_user(connection, username)
            account = _find_account(connection, user["username"], account_from)
            payee = _find_payee(connection, user["username"], payee_name)
            if account["balance_pence"] < pence:
                raise _InputError(
                    f"Insufficient funds: {account['name']} holds "
                    f"{_money(account['balance_pence'])}, the transfer needs {_money(pence)}."
                )
            connection.execute(
                "UPDATE accounts SET balance_pence = balance_pence - ? WHERE account_number = ?",
                (pence, account["account_number"]),
            )
            cursor = connection.execute(
                "INSERT INTO payments (username, account_from, payee_id, payee_name,"
                " amount_pence, payment_date, status, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, 'completed', ?)",
                (user["username"], account["account_number"], payee["id"],
                 payee["payee_name"], pence, _today().isoformat(), _now_text()),
            )
            payment_id = cursor.lastrowid
            new_balance = account["balance_pence"] - pence
    except _InputError as problem:
        return _error(str(problem))
    return [
        {"status": "success",
         "msg": f"Transferred {_money(pence)} from {account['name']} to {payee['payee_name']}"
                f" (payment {payment_id}). New balance {_money(new_balance)}."},
        {"arg": "payment_id", "value": payment_id},
        {"arg": "balance", "value": new_balance / 100},
    ]


def action_validate_payment_date(payment_date: str):
    """Check that a payment date is written as DD/MM/YYYY and lies in the future.

    Args:
        payment_date: The date the customer wants the payment made, as DD/MM/YYYY.
    """
    try:
        day = _parse_future_date(payment_date)
    except _InputError as problem:
        return _error(str(problem), {"arg": "payment_date_valid", "value": False})
    return [
        {"status": "success", "msg": f"{day:%d/%m/%Y} is a valid future payment date."},
        {"arg": "payment_date", "value": f"{day:%d/%m/%Y}"},
        {"arg": "payment_date_valid", "value": True},
    ]


def action_schedule_payment(
    username: str, account_from: str, payee_name: str, amount: str, payment_date: str
):
    """Schedule a payment to an authorised payee on a future date.

    Args:
        username: The customer's username.
        account_from: The account to pay from: its number, name or type.
        payee_name: The name of an authorised payee.
        amount: The amount to transfer in pounds, e.g. "250" or "49.99".
        payment_date: The future date of the payment, as DD/MM/YYYY.
    """
    try:
        pence = _parse_amount(amount)
        day = _parse_future_date(payment_date)
        with _open_database() as connection:
            user = _find_user(connection, username)
            account = _find_account(connection, user["username"], account_from)
            payee = _find_payee(connection, user["username"], payee_name)
            cursor = connection.execute(
                "INSERT INTO payments (username, account_from, payee_id, payee_name,"
                " amount_pence, payment_date, status, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, 'scheduled', ?)",
                (user["username"], account["account_number"], payee["id"],
                 payee["payee_name"], pence, day.isoformat(), _now_text()),
            )
            payment_id = cursor.lastrowid
    except _InputError as problem:
        return _error(str(problem))
    return [
        {"status": "success",
         "msg": f"Scheduled {_money(pence)} from {account['name']} to {payee['payee_name']}"
                f" on {day:%d/%m/%Y} (payment {payment_id}). Funds are checked on that day."},
        {"arg": "scheduled_payment_id", "value": payment_id},
    ]


def action_list_payees(username: str):
    """List the customer's authorised payees.

    Args:
        username: The customer's username.
    """
    try:
        with _open_database() as connection:
            user = _find_user(connection, username)
            payees = connection.execute(
                "SELECT * FROM payees WHERE username = ? ORDER BY payee_name",
                (user["username"],),
            ).fetchall()
    except _InputError as problem:
        return _error(str(problem))
    if not payees:
        return [
            {"status": "success", "msg": "The customer has no authorised payees."},
            {"bot": "You don't have any authorised payees yet. I can help you add one."},
            {"arg": "payees", "value": []},
        ]
    lines = [
        f"- {p['payee_name']} ({p['payee_type']}, account ending {p['account_number'][-4:]}"
        + (f", reference: {p['reference']})" if p["reference"] else ")")
        for p in payees
    ]
    return [
        {"status": "success", "msg": f"The customer has {len(payees)} authorised payees."},
        {"bot": "Your authorised payees are:\n" + "\n".join(lines)},
        {"arg": "payees", "value": [p["payee_name"] for p in payees]},
    ]


def action_add_payee(
    username: str, payee_name: str, account_number: str, payee_type: str, reference: str = ""
):
    """Add a new authorised payee to the customer's list.

    Args:
        username: The customer's username.
        payee_name: The payee's name, e.g. "Olivia Grant" or "Northgate Energy".
        account_number: The payee's 8-digit bank account number.
        payee_type: "person" or "business".
        reference: A short note (at most 18 characters) to identify the payee or purpose.
    """
    name = _text(payee_name)
    number = re.sub(r"[\s-]", "", _text(account_number))
    kind = _text(payee_type).lower()
    kind = {"individual": "person", "personal": "person", "company": "business"}.get(kind, kind)
    note = _text(reference)
    if not name:
        return _error("I need the payee's name.")
    if len(name) > _MAX_PAYEE_NAME_LENGTH:
        return _error(f"The payee's name can be at most {_MAX_PAYEE_NAME_LENGTH} characters.")
    if not re.fullmatch(r"\d{8}", number):
        return _error(
            f"'{_text(account_number)}' is not a valid account number: it must be 8 digits."
        )
    if kind not in ("person", "business"):
        return _error(f"The payee type must be 'person' or 'business', not '{_text(payee_type)}'.")
    if len(note) > _MAX_REFERENCE_LENGTH:
        return _error(f"The reference can be at most {_MAX_REFERENCE_LENGTH} characters.")
    try:
        with _open_database() as connection:
            user = _find_user(connection, username)
            clash = connection.execute(
                "SELECT payee_name FROM payees"
                " WHERE username = ? AND payee_name = ? COLLATE NOCASE",
                (user["username"], name),
            ).fetchone()
            if clash is not None:
                raise _InputError(
                    f"{clash['payee_name']} is already one of your authorised payees."
                )
            count = connection.execute(
                "SELECT COUNT(*) FROM payees WHERE username = ?", (user["username"],)
            ).fetchone()[0]
            if count >= _MAX_PAYEES_PER_USER:
                raise _InputError(
                    f"You already have {_MAX_PAYEES_PER_USER} payees, the most allowed. "
                    "Remove one before adding another."
                )
            connection.execute(
                "INSERT INTO payees (username, payee_name, account_number, payee_type, reference)"
                " VALUES (?, ?, ?, ?, ?)",
                (user["username"], name, number, kind, note),
            )
    except _InputError as problem:
        return _error(str(problem))
    return [
        {"status": "success",
         "msg": f"{name} ({kind}, account ending {number[-4:]}) was added as an authorised payee."},
        {"arg": "payee_name", "value": name},
    ]


def action_remove_payee(username: str, payee_name: str):
    """Remove a payee from the customer's list of authorised payees.

    Args:
        username: The customer's username.
        payee_name: The name of the payee to remove.
    """
    try:
        with _open_database() as connection:
            user = _find_user(connection, username)
            payee = _find_payee(connection, user["username"], payee_name)
            cancelled = connection.execute(
                "UPDATE payments SET status = 'cancelled'"
                " WHERE payee_id = ? AND status = 'scheduled'",
                (payee["id"],),
            ).rowcount
            connection.execute("DELETE FROM payees WHERE id = ?", (payee["id"],))
    except _InputError as problem:
        return _error(str(problem))
    msg = f"{payee['payee_name']} was removed from the authorised payees."
    if cancelled:
        msg += f" {cancelled} scheduled payment(s) to them were cancelled."
    return [
        {"status": "success", "msg": msg},
        {"arg": "payee_name", "value": payee["payee_name"]},
    ]


def action_ask_card(username: str):
    """Show the customer's cards that are not blocked and ask which one needs help.

    Args:
        username: The customer's username.
    """
    try:
        with _open_database() as connection:
            user = _find_user(connection, username)
            cards = connection.execute(
                "SELECT * FROM cards WHERE username = ? AND status != 'blocked' ORDER BY id",
                (user["username"],),
            ).fetchall()
    except _InputError as problem:
        return _error(str(problem))
    if not cards:
        return _error(
            f"{user['username']} has no active cards. For help, call us on {_SUPPORT_PHONE}."
        )
    choices = " or ".join(
        _card_label(c) + (" (frozen)" if c["status"] == "frozen" else "") for c in cards
    )
    return [
        {"status": "success", "msg": f"{user['username']} has {len(cards)} usable cards."},
        {"bot": f"Select the card you require assistance with: your {choices}."},
        {"arg": "cards", "value": [
            {"card_type": c["card_type"], "last_four": c["last_four"], "status": c["status"]}
            for c in cards
        ]},
    ]


def action_update_card_status(
    username: str,
    card: str,
    reason_for_blocking: str,
    temporary_block: bool = False,
    issue_new_card: bool = False,
):
    """Block a card (or freeze it temporarily) and, if asked, order a replacement.

    Args:
        username: The customer's username.
        card: Which card: "debit", "credit", or its last four digits.
        reason_for_blocking: Why the card is blocked, e.g. "damaged", "lost", "suspected fraud".
        temporary_block: True to freeze the card temporarily (e.g. travelling) instead of
            blocking it.
        issue_new_card: True to send a replacement card to the address on file.
    """
    temporary = _as_bool(temporary_block)
    replacement = _as_bool(issue_new_card)
    reason = _text(reason_for_blocking) or "unspecified"
    try:
        with _open_database() as connection:
            user = _find_user(connection, username)
            row = _find_card(connection, user["username"], card)
            if row["status"] == "blocked":
                raise _InputError(f"Your {_card_label(row)} is already blocked.")
            if row["status"] == "frozen" and temporary:
                raise _InputError(f"Your {_card_label(row)} is already frozen.")
            new_status = "frozen" if temporary else "blocked"
            address = user["physical_address"] if replacement else None
            connection.execute("UPDATE cards SET status = ? WHERE id = ?", (new_status, row["id"]))
            connection.execute(
                "INSERT INTO card_events (card_id, new_status, reason, replacement_requested,"
                " delivery_address, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                (row["id"], new_status, reason, int(replacement), address, _now_text()),
            )
    except _InputError as problem:  # the customer is told why, and the flow that the card is unchanged
        return _error(str(problem), {"bot": str(problem)})
    if temporary:
        told = (f"Your {_card_label(row)} is now temporarily frozen. Call us on "
                f"{_SUPPORT_PHONE} when you want it unfrozen.")
    else:
        told = f"Your {_card_label(row)} is now blocked and can no longer be used."
    msg = f"{_card_label(row)} {new_status} (reason: {reason})."
    if replacement:
        msg += f" Replacement ordered to {address}."
    return [
        {"status": "success", "msg": msg},
        {"bot": told},
        {"arg": "card", "value": _card_label(row)},
        {"arg": "card_status", "value": new_status},
        {"arg": "replacement_requested", "value": replacement},
    ]
