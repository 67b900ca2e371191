"""Seaview Hotel tools (stand-ins)."""


def book_room(nights):
    return {"booking_id": "SV-3310"}


def book_treatment(treatment):
    return {"slot": "today at 4 pm"}
