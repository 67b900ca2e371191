"""Wayfarer Travel tools (stand-ins)."""


def get_flight():
    """The traveller's next flight."""
    return [{"status": "success", "msg": "found"}, {"arg": "departure", "value": "14:35"}, {"arg": "gate", "value": "B12"}]
