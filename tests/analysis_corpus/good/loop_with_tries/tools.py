"""Brightcart tools (stand-ins)."""


def basket_total():
    """Total of the open basket."""
    return [{"status": "success", "msg": "ok"}, {"arg": "total", "value": 54.9}]


def charge_card(amount: float):
    """Charge the saved card."""
    return [{"status": "success", "msg": "charged"}]
