"""In-memory tools for the restaurant project (no network)."""

FULL = {("2026-12-24", "20:00"), ("2026-12-31", "21:00")}


def check_table(party_size, res_date, res_time, seating="indoor"):
    """Check for a free table."""
    key = (str(res_date)[:10], str(res_time))
    if key in FULL:
        return {"available": False, "table_id": "", "alternative_time": "18:30"}
    table = ("T" if seating == "terrace" else "I") + str(min(int(float(party_size)), 8))
    return {"available": True, "table_id": table, "alternative_time": ""}


def book_table(table_id, guest_name, party_size, res_date, res_time):
    """Book a table."""
    return {"booking_code": "CV-" + str(res_date)[5:10].replace("-", "") + str(res_time).replace(":", "") + "-" + str(table_id)}


def log_event_enquiry(party_size, res_date, contact_phone):
    """Log an enquiry for the events team."""
    return {"enquiry_id": "EV-" + str(res_date)[:10].replace("-", "")}
