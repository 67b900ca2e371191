"""Evergreen Insurance tools (stand-ins)."""


def claim_state(claim_id):
    return {"state": "pending", "payout": 0}
