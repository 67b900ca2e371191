"""Tools for the Bright Smile Dental Clinic bot (deterministic, no I/O)."""

TODAY = "2026-12-01"
FREE_SLOTS = {
    "2026-12-02": ["10:30", "15:00"],
    "2026-12-03": ["09:00"],
    "2026-12-04": [],
    "2026-12-07": ["11:15", "16:45"],
}
EMERGENCY_SLOT = "08:00"
APPOINTMENTS = {
    "DC-1042": {"name": "Priya Nair", "date": "2026-12-09", "time": "10:00", "treatment": "cleaning"},
    "DC-1077": {"name": "Tom Becker", "date": "2026-12-02", "time": "14:30", "treatment": "check-up"},
}
CANCELLED = {}


def get_today():
    """Return today's date at the clinic."""
    return [{"status": "success", "msg": f"today is {TODAY}"},
            {"arg": "today", "value": TODAY}]


def check_availability(date: str = "", treatment: str = "routine", today: str = TODAY):
    """Find the first free slot on a date (YYYY-MM-DD) for a treatment (routine or emergency)."""
    date = (date or "").strip()
    if date <= (today or TODAY):
        return [{"status": "error", "msg": f"{date} is not after today ({today})."}]
    if treatment == "emergency":
        return [{"status": "success", "msg": f"emergency slot {EMERGENCY_SLOT}"},
                {"arg": "slot", "value": EMERGENCY_SLOT}]
    slots = FREE_SLOTS.get(date, [])
    if not slots:
        return [{"status": "error", "msg": f"No free slot on {date}."}]
    return [{"status": "success", "msg": f"first free slot {slots[0]}"},
            {"arg": "slot", "value": slots[0]}]


def book_slot(name: str = "", date: str = "", time: str = "", treatment: str = "routine"):
    """Book the slot and return a booking reference."""
    day = int(date[-2:]) if date[-2:].isdigit() else 0
    ref = f"DC-{2000 + len((name or '').strip()) * 10 + day}"
    return [{"status": "success", "msg": f"booked {ref}"},
            {"arg": "booking_ref", "value": ref}]


def find_appointment(booking_ref: str):
    """Find an appointment by its booking reference, e.g. DC-1042."""
    ref = (booking_ref or "").strip().upper()
    a = APPOINTMENTS.get(ref)
    if a is None:
        return [{"status": "error", "msg": f"No appointment with reference {ref}."}]
    return [{"status": "success",
             "msg": f"{ref}: {a['treatment']} for {a['name']} on {a['date']} at {a['time']}."},
            {"arg": "booking_ref", "value": ref}]


def cancel_booking(booking_ref: str):
    """Cancel the appointment with this booking reference."""
    ref = (booking_ref or "").strip().upper()
    a = APPOINTMENTS.get(ref)
    if a is None:
        return [{"status": "error", "msg": f"No appointment with reference {ref}."}]
    late = a["date"] <= "2026-12-02"
    fee = " A late-cancellation fee of 30 dollars applies." if late else " No fee applies."
    return [{"status": "success", "msg": f"{ref} cancelled.{fee}"}]
