"""Wayfarer Travel tools (stand-ins)."""


def cheapest_fare(destination, date):
    return {"best_price": 149.0}


def convert(amount, currency):
    return {"converted": round(amount * 0.86, 2)}
