"""The refund desk's order system: a few fixed orders, enough to chat with the example."""

ORDERS = {
    "A-100": {"status": "delivered", "total": 59.0, "item": "a kettle"},
    "A-200": {"status": "refunded", "total": 25.0, "item": "a mug"},
    "A-300": {"status": "delivered", "total": 899.0, "item": "an espresso machine"},
}


def lookup_order(order_id: str) -> dict:
    """Find an order by its number."""
    order = ORDERS.get(order_id.strip().upper())
    if order is None:
        raise LookupError(f"no order {order_id}")
    return dict(order)


def process_refund(order_id: str) -> dict:
    """Refund an order in full."""
    order = lookup_order(order_id)
    return {"refund_id": "R-" + order_id.strip().upper()[2:], "amount": order["total"]}
