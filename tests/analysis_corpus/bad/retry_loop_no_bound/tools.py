"""Brightcart checkout tools (stand-ins)."""


def get_basket_total():
    """The total of the open basket."""
    return [{"status": "success", "msg": "ok"}, {"arg": "total", "value": 54.9}]


def charge_card(amount: float):
    """Charge the saved card."""
    return [{"status": "error", "msg": "declined"}]
