"""Tools for the Spoke & Chain bike repair shop (deterministic, no I/O)."""

PRICES = {
    "flat": (20, 1),
    "puncture": (20, 1),
    "brake": (25, 1),
    "gear": (30, 2),
    "chain": (35, 2),
    "wheel": (40, 3),
    "battery": (60, 5),
}
BIKE_SURCHARGE = {"road": 0, "city": 0, "mountain": 10, "e-bike": 20, "ebike": 20}
OPEN_DAYS = ["tuesday", "wednesday", "thursday", "friday", "saturday"]
CLOSED_DAYS = ["sunday", "monday"]
TICKETS = {
    "SC-FRI-150": {"status": "ready for pick-up", "amount": 45},
    "SC-TUE-121": {"status": "waiting for a spare part", "amount": 0},
    "SC-SAT-184": {"status": "in the workshop", "amount": 0},
}


def estimate_repair(bike_type: str = "", problem: str = ""):
    """Estimate price (euros) and duration (working days) of a repair from the bike type and the problem."""
    text = (problem or "").lower()
    price, days = 45, 2  # general service
    for word, (p, d) in PRICES.items():
        if word in text:
            price, days = p, d
            break
    kind = (bike_type or "").lower()
    for name, extra in BIKE_SURCHARGE.items():
        if name in kind:
            price += extra
            break
    return [
        {"status": "success", "msg": f"estimate {price} euros, {days} days"},
        {"arg": "price", "value": price},
        {"arg": "days", "value": days},
    ]


def check_drop_off(day: str = ""):
    """Check whether the shop accepts bikes on the given weekday."""
    text = (day or "").lower()
    for d in OPEN_DAYS:
        if d in text or (len(text.strip()) == 3 and d[:3] == text.strip()):
            return [{"status": "success", "msg": f"{d.capitalize()} is a drop-off day."},
                    {"arg": "day", "value": d.capitalize()}]
    for d in CLOSED_DAYS:
        if d in text:
            return [{"status": "error", "msg": f"The shop is closed on {d.capitalize()}."}]
    return [{"status": "error", "msg": "Not a weekday the shop recognises."}]


def create_ticket(name: str = "", day: str = ""):
    """Create a repair ticket and return its number."""
    d = (day or "xxx").strip()[:3].upper()
    ticket = f"SC-{d}-{len((name or '').strip()) * 7 + 100}"
    return [{"status": "success", "msg": f"ticket {ticket} created"},
            {"arg": "ticket_id", "value": ticket}]


def lookup_ticket(ticket_id: str = ""):
    """Look up the repair status of a ticket number such as SC-FRI-150."""
    key = (ticket_id or "").strip().upper()
    if key not in TICKETS:
        return [{"status": "error", "msg": f"No ticket {key} found."}]
    t = TICKETS[key]
    return [{"status": "success", "msg": f"Ticket {key}: {t['status']}, amount due {t['amount']} euros."},
            {"arg": "status", "value": t["status"]},
            {"arg": "amount", "value": t["amount"]}]
