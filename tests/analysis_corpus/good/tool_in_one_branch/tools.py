"""Northwind Outdoor tools (stand-ins)."""


def book_repair():
    """Book a free warranty repair."""
    return [{"status": "success", "msg": "booked"}]
