"""Parcelpoint tools (stand-ins)."""


def find_order():
    """Read the order number from the user's last message."""
    return [{"status": "success", "msg": "ok"}, {"arg": "order_id", "value": "PP-88120"}]


def delivery_window(order_id: str):
    """When an order will be delivered."""
    return [{"status": "success", "msg": "Thursday, 8 am to noon"}]
