"""Seaview Hotel tools (stand-ins)."""


def late_checkout_price():
    """Today's price of a late checkout."""
    return [{"status": "success", "msg": "priced"}, {"arg": "price", "value": 25}]
