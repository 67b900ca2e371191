"""Skyline Mobile account tools (stand-ins)."""


def get_usage(phone_number: str):
    """Data used this month."""
    return [{"status": "success", "msg": "read"}, {"arg": "used_gb", "value": 3.2}, {"arg": "allowance_gb", "value": 10}]


def latest_bill():
    """The latest bill."""
    return [{"status": "success", "msg": "read"}, {"arg": "amount", "value": 18.5}, {"arg": "due", "value": "2025-04-02"}]
