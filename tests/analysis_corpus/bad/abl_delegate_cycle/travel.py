"""Wayfarer Travel tools (stand-ins)."""


def search_flights(destination, date):
    return {"flight": f"WF 212 to {destination} on {date}", "price": 189.0}


def cheapest_fare(destination, date):
    return {"best_price": 149.0}


def miles_balance():
    return {"miles": 12400, "tier": "silver"}
