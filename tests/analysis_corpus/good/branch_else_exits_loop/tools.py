"""Parcelpoint tools (stand-ins)."""


def next_pending_parcel():
    """The next parcel on its way that has not been shown yet."""
    return [{"status": "success", "msg": "ok"}, {"arg": "found", "value": False}]
