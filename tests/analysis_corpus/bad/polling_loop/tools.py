"""Evergreen Insurance tools (stand-ins)."""


def get_claim_status(policy_number: str):
    """The state of the latest claim on a policy."""
    return [{"status": "success", "msg": "read"}, {"arg": "state", "value": "pending"}]
