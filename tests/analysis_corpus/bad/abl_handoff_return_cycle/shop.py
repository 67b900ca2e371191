"""Brightcart tools (stand-ins)."""


def order_status(order_id):
    return {"state": "shipped", "eta": "Thursday"}


def start_return(order_id):
    return {"label_url": f"https://brightcart.example/labels/{order_id}"}
