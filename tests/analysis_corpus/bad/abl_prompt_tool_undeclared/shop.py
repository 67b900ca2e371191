"""Brightcart tools (stand-ins)."""


def lookup_order(order_id):
    return {"found": True, "item": "Rain jacket", "total": 79.0}


def check_refund_status(order_id):
    return {"state": "paid", "paid_on": "2025-03-10"}
