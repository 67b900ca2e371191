"""Harbour Bank overdraft tools (stand-ins)."""


def verify_identity():
    """Run the identity check on the signed-in customer."""
    return [{"status": "success", "msg": "verified"}, {"arg": "verified", "value": True}]


def set_overdraft(limit: int):
    """Change the arranged overdraft limit."""
    return [{"status": "success", "msg": f"Limit set to {limit}."}]
