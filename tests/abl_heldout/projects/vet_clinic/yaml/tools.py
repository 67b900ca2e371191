"""In-memory tools for the veterinary clinic project (no network)."""

SLOTS = {
    "2026-12-01": ["09:00", "11:30", "15:00"],
    "2026-12-02": ["10:00"],
    "2026-12-03": [],
}
_BOOKED = {}


def find_slots(species, visit_date):
    """Free appointment slots for a species on a day."""
    day = str(visit_date)[:10]
    free = [s for s in SLOTS.get(day, ["09:30", "14:00"]) if (day, s) not in _BOOKED]
    return {"count": len(free), "first_slot": free[0] if free else "", "slots": free}


def book_appointment(pet_name, species, visit_date, slot, owner_phone):
    """Book an appointment slot."""
    day = str(visit_date)[:10]
    appointment_id = "WV-" + day.replace("-", "") + "-" + str(slot).replace(":", "")
    _BOOKED[(day, slot)] = pet_name
    return {"appointment_id": appointment_id, "status": "booked"}


def page_on_call_vet(owner_phone, species, summary):
    """Page the on-call vet to call the owner."""
    digits = "".join(ch for ch in str(owner_phone) if ch.isdigit())
    return {"page_id": "PG-" + digits[-4:], "callback_minutes": 10}
