"""Olive & Thyme tools (stand-ins)."""


def find_booking(booking_ref: str):
    """Look up a reservation."""
    return [
        {"status": "success", "msg": "found"},
        {"arg": "guests", "value": 4},
        {"arg": "time", "value": "19:30"},
    ]


def move_reservation(booking_ref: str, new_time: str):
    """Move a reservation to another time the same day."""
    return [
        {"status": "success", "msg": "checked"},
        {"arg": "moved", "value": True},
        {"arg": "nearest", "value": "21:15"},
    ]
