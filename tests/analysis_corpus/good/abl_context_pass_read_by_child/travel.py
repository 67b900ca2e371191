"""Wayfarer Travel tools (stand-ins)."""


def quote_trip(city):
    return {"total": 420.0}


def charge(amount):
    return {"payment_id": "PAY-712"}
