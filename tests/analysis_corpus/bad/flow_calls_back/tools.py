"""Skyline Mobile tools (stand-ins)."""


def switch_plan(plan: str):
    """Move the customer to another plan from the next bill."""
    return [{"status": "success", "msg": f"Switched to {plan}."}]


def enable_roaming():
    """Turn roaming on."""
    return [{"status": "success", "msg": "Roaming enabled."}]
