"""Brightcart tools (stand-ins)."""


def read_order_number():
    """Find the order number in the user's last message."""
    return [{"status": "success", "msg": "found"}, {"arg": "order_number", "value": "BC-10422"}]


def start_return(order_number: str):
    """Register a return and email a label."""
    return [{"status": "success", "msg": f"Return for {order_number} started."}]
