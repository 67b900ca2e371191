"""Brightcart refund tools (stand-ins)."""


def issue_refund():
    """Refund the customer's latest order."""
    return [{"status": "success", "msg": "refunded"}, {"arg": "amount", "value": 39.99}]
