"""Parcelpoint tools (stand-ins)."""


def track_parcel(tracking_number: str):
    """Where a parcel is and when it should arrive."""
    return [{"status": "success", "msg": "found"}, {"arg": "state", "value": "at the local depot"}, {"arg": "eta", "value": "tomorrow"}]
