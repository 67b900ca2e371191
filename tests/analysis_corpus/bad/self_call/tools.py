"""Evergreen Insurance tools (stand-ins)."""


def register_claim():
    """Register a claim and return its reference."""
    return [{"status": "success", "msg": "Registered."}, {"arg": "claim_id", "value": "CL-1042"}]
