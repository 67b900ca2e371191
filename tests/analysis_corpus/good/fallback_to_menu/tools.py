"""Brightcart tools (stand-ins)."""


def lookup():
    """Find the order named in the user's last message."""
    return [{"status": "success", "msg": "ok"}, {"arg": "order", "value": "BC-10422"}, {"arg": "state", "value": "shipped"}]
