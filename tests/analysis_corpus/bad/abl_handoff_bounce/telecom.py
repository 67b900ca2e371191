"""Skyline Mobile tools (stand-ins)."""


def current_bill():
    return {"amount": 24.5, "due": "2025-04-02"}


def network_status(postcode):
    return {"outage": False}
