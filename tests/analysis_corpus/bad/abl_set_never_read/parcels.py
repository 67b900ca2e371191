"""Parcelpoint tools (stand-ins)."""


def book_redelivery(tracking_number, day):
    return {"confirmation": "RD-5512", "depot": "Leeds North"}
