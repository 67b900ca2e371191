"""Tools for the FitHub gym assistant (deterministic, no I/O)."""

TIMETABLE = {
    "monday": [("18:00", "Spin", 0), ("19:00", "Yoga", 3)],
    "wednesday": [("07:00", "HIIT", 10)],
    "friday": [("18:30", "Pilates", 1)],
}
MEMBERS = {
    "FH-1001": {"name": "Chris", "frozen_until": None},
    "FH-2002": {"name": "Ana", "frozen_until": "2027-01-31"},
}
WAITLIST_LENGTH = {"spin": 1}


def get_timetable(day: str = ""):
    """List classes for a weekday (or the whole week if day is empty) with start time and free places."""
    d = (day or "").strip().lower()
    days = [d] if d else list(TIMETABLE)
    lines = []
    for name in days:
        for time, cls, free in TIMETABLE.get(name, []):
            lines.append(f"{name.capitalize()} {time} {cls} ({free} places free)")
    text = "; ".join(lines) if lines else f"No classes on {day}."
    return [{"status": "success", "msg": text}]


def _member(member_id):
    return MEMBERS.get("".join(str(member_id or "").split()).upper())


def book_class(member_id: str, class_name: str, class_day: str):
    """Book a member into a class on a weekday."""
    m = _member(member_id)
    if m is None:
        return [{"status": "error", "msg": f"unknown member ID {member_id}"}]
    if m["frozen_until"]:
        return [{"status": "error", "msg": f"membership is frozen until {m['frozen_until']}"}]
    for time, cls, free in TIMETABLE.get((class_day or "").strip().lower(), []):
        if cls.lower() == (class_name or "").strip().lower():
            if free == 0:
                return [{"status": "error", "msg": f"{cls} on {class_day} at {time} is full; waitlist available"}]
            ref = f"BK-{cls[:3].upper()}-{member_id.strip().upper()[-4:]}"
            return [{"status": "success", "msg": f"booked {cls} {class_day} {time}, reference {ref}"},
                    {"arg": "booking_ref", "value": ref}]
    return [{"status": "error", "msg": f"there is no {class_name} class on {class_day}"}]


def join_waitlist(member_id: str, class_name: str, class_day: str):
    """Put a member on the waitlist of a full class; returns the position in the list."""
    m = _member(member_id)
    if m is None:
        return [{"status": "error", "msg": f"unknown member ID {member_id}"}]
    position = WAITLIST_LENGTH.get((class_name or "").strip().lower(), 0) + 1
    return [{"status": "success", "msg": f"on the waitlist for {class_name} on {class_day}, position {position}"}]


def freeze_membership(member_id: str, freeze_months: int):
    """Freeze a membership for 1 to 3 months; the fee is 5 euros per month."""
    m = _member(member_id)
    if m is None:
        return [{"status": "error", "msg": f"unknown member ID {member_id}"}]
    try:
        months = int(freeze_months)
    except (TypeError, ValueError):
        return [{"status": "error", "msg": "months must be 1, 2 or 3"}]
    if months not in (1, 2, 3):
        return [{"status": "error", "msg": "months must be 1, 2 or 3"}]
    until = {1: "2026-12-31", 2: "2027-01-31", 3: "2027-02-28"}[months]
    return [{"status": "success", "msg": f"membership frozen until {until}; fee {5 * months} euros"}]
