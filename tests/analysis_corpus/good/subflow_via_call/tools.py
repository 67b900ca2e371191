"""Harbour Bank tools (stand-ins)."""


def update_address():
    """Save the address in the user's last message."""
    return [{"status": "success", "msg": "updated"}]
