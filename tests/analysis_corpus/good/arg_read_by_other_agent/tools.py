"""Brightcart tools (stand-ins)."""


def price_basket():
    """Total of the basket with delivery."""
    return [{"status": "success", "msg": "ok"}, {"arg": "total", "value": 61.4}]


def charge(amount: float):
    """Charge the saved card."""
    return [{"status": "success", "msg": "charged"}]
