"""Skyline Mobile tools (stand-ins)."""


def roaming_state():
    return {"enabled": True, "has_pass": False}


def buy_pass():
    return {"pass_id": "EU7-5521"}
