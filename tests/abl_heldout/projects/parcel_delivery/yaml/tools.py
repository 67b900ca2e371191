"""In-memory tools for the parcel delivery project (no network)."""

PARCELS = {
    "PX10000001": {"status": "in_transit", "location": "Lisbon hub", "eta": "2026-11-30", "postcode": "1000-123", "address_line": "Rua Augusta 10, Lisboa"},
    "PX10000002": {"status": "delivered", "location": "front door", "eta": "2026-11-27", "postcode": "4000-321", "address_line": "Rua de Santa Catarina 5, Porto"},
    "PX10000003": {"status": "missed", "location": "Rua do Ouro 22", "eta": "2026-11-27", "postcode": "1100-060", "address_line": "Rua do Ouro 22, Lisboa"},
}


def track_parcel(tracking_number):
    """Current status of a parcel."""
    parcel = PARCELS.get(str(tracking_number).upper())
    if parcel is None:
        return {"status": "unknown", "location": "", "eta": ""}
    return {"status": parcel["status"], "location": parcel["location"], "eta": parcel["eta"]}


def verify_address(tracking_number, postcode):
    """Check a postcode against the parcel's address."""
    parcel = PARCELS.get(str(tracking_number).upper())
    if parcel is None or parcel["postcode"] != str(postcode).strip():
        return {"matches": False, "address_line": ""}
    return {"matches": True, "address_line": parcel["address_line"]}


def book_redelivery(tracking_number, new_date, address_line):
    """Book a redelivery."""
    return {"booking_ref": "RD-" + str(tracking_number)[-4:] + "-" + str(new_date)[5:10].replace("-", ""), "window": "09:00-13:00"}
