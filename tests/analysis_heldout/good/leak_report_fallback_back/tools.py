"""Clearwater Utilities tools (stand-ins)."""


def log_leak(location: str):
    """Log a leak report."""
    return [{"status": "success", "msg": "logged"}, {"arg": "reference", "value": "LK-40917"}]


def subscribe_updates(mobile: str, location: str):
    """Send text updates about a leak to a mobile number."""
    return [{"status": "success", "msg": "subscribed"}]
