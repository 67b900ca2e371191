"""Harbour Bank tools (stand-ins with fixed data)."""

_PAYEES = {"Alex Morgan": {"Jo Smith", "City Energy"}}


def check_payee(username: str, payee_name: str):
    """Whether the payee is saved for this customer."""
    found = payee_name in _PAYEES.get(username, set())
    return [{"status": "success", "msg": "saved" if found else "not saved"}, {"arg": "exists", "value": found}]


def send_transfer(username: str, payee_name: str, amount: float):
    """Send money to a saved payee."""
    return [{"status": "success", "msg": f"Sent {amount} GBP to {payee_name}."}]


def save_payee(username: str, payee_name: str, sort_code: str, account_number: str):
    """Save a new payee."""
    _PAYEES.setdefault(username, set()).add(payee_name)
    return [{"status": "success", "msg": f"{payee_name} saved."}]


def get_balance(username: str):
    """The balance of the customer's current account."""
    return [{"status": "success", "msg": "Balance read."}, {"arg": "balance", "value": 1250.40}]
