"""Skyline Mobile tools (stand-ins)."""


def eligibility(phone_number):
    return {"eligible": True, "model": "Nova 12"}
