"""Pageleaf Books tools (stand-ins)."""


def place_order():
    """Order the book named in the user's last message."""
    return [{"status": "success", "msg": "Ordered."}]
