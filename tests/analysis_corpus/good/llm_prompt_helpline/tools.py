"""Harbour Bank tools (stand-ins)."""


def recent_payments():
    """The last ten card payments."""
    return [{"status": "success", "msg": "P1 Coffee 3.20; P2 Online 89.99"}]


def dispute_payment(payment_id: str):
    """Open a dispute on a payment."""
    return [{"status": "success", "msg": "dispute opened"}]
