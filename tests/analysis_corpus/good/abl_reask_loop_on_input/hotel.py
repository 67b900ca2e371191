"""Seaview Hotel tools (stand-ins)."""


def cancel(booking_id):
    return {"refund": 120.0}
