"""The refund desk's order system: a few fixed orders, enough to chat with the example."""

ORDERS = {
    "A-100": {"status": "delivered", "total": 59.0, "item": "a kettle"},
    "A-200": {"status": "refunded", "total": 25.0, "item": "a mug"},
    "A-300": {"status": "delivered", "total": 899.0, "item": "an espresso machine"},
}


def lookup_order(order_id: str) -> dict:
    """Find an order by its number.

    An unknown number is an answer, not a failure: the call succeeds with `found: false` and the flow
    branches on it (ON_RESULT). Raising would mean the order system itself is broken (ON_ERROR, ON_FAIL).
    """
    order = ORDERS.get(order_id.strip().upper())
    if order is None:
        return {"found": False}
    return {"found": True, **order}


def process_refund(order_id: str) -> dict:
    """Refund an order in full."""
    order = ORDERS.get(order_id.strip().upper())
    if order is None:  # the flow never refunds an order it did not find: this is a real failure
        raise LookupError(f"no order {order_id}")
    return {"refund_id": "R-" + order_id.strip().upper()[2:], "amount": order["total"]}
