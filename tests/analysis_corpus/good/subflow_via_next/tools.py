"""Wayfarer Travel tools (stand-ins)."""


def add_bag():
    """Add one checked bag to the booking."""
    return [{"status": "success", "msg": "added"}]
