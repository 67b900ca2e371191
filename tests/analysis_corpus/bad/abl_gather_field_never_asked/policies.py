"""Evergreen Insurance tools (stand-ins)."""


def update_address(policy_number, postcode):
    return {"new_premium": 31.5}
