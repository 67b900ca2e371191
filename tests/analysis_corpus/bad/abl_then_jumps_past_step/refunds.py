"""Brightcart tools (stand-ins)."""


def order_age(order_id):
    return {"days": 12}
