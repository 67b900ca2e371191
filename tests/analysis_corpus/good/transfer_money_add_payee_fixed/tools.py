"""Harbour Bank tools (stand-ins)."""


def check_payee(username: str, payee_name: str):
    """Whether the payee is saved."""
    return [{"status": "success", "msg": "saved"}]


def send_transfer(username: str, payee_name: str, amount: float):
    """Send money to a saved payee."""
    return [{"status": "success", "msg": "sent"}]


def save_payee(username: str, payee_name: str, account_number: str):
    """Save a new payee."""
    return [{"status": "success", "msg": "saved"}]
