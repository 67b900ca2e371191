"""Harbour Bank card tools (stand-ins)."""


def activate(username: str):
    """Activate the customer's newest card."""
    return [{"status": "success", "msg": "Card activated."}]
