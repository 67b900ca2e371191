"""Pageleaf Books tools (stand-ins)."""


def find_order_ref():
    """Read an order reference from the user's last message."""
    return [{"status": "success", "msg": "read"}, {"arg": "order_ref", "value": "PL-2291"}]


def order_status(order_ref: str):
    """Where an order is."""
    return [{"status": "success", "msg": "read"}, {"arg": "state", "value": "out for delivery"}]
