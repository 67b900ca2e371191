"""Wayfarer Travel tools (stand-ins)."""


def reserve_flight():
    """Hold a seat on the next flight."""
    return [{"status": "success", "msg": "Seat held."}]


def reserve_hotel():
    """Hold a hotel room."""
    return [{"status": "success", "msg": "Room held."}]


def reserve_car():
    """Reserve a rental car."""
    return [{"status": "success", "msg": "Car reserved."}]
