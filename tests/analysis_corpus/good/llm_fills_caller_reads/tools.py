"""Evergreen Insurance tools (stand-ins)."""


def book_callback(phone: str):
    """Book an adviser call back."""
    return [{"status": "success", "msg": "booked"}]
