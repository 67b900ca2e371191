"""Evergreen Insurance tools (stand-ins)."""


def get_renewal(policy_number: str):
    """The renewal date of a policy."""
    return [{"status": "success", "msg": "ok"}, {"arg": "date", "value": "2025-09-01"}]
