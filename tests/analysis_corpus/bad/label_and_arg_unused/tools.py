"""Skyline Mobile SIM tools (stand-ins)."""


def current_sim():
    """The SIM the number is on now."""
    return [{"status": "success", "msg": "read"}, {"arg": "iccid", "value": "8944 1100 2233 4455"}]


def read_sim_digits():
    """Read six digits from the user's last message."""
    return [{"status": "success", "msg": "read"}, {"arg": "digits", "value": "778812"}]


def swap_sim(new_sim: str):
    """Move the number to another SIM."""
    return [{"status": "success", "msg": "swapped"}]
