"""Brightsmile Dental tools (stand-ins)."""


def next_checkup_slots(patient_name: str):
    """Free check-up days for a patient's usual dentist."""
    return [{"status": "success", "msg": "slots"}, {"arg": "days", "value": "Tuesday 3rd, Friday 6th"}]


def book_checkup(patient_name: str, visit_day: str):
    """Book a check-up."""
    return [
        {"status": "success", "msg": "booked"},
        {"arg": "booked", "value": True},
        {"arg": "dentist", "value": "Dr Amara Singh"},
    ]


def send_reminder_sms(patient_name: str, visit_day: str):
    """Schedule a reminder text for the day before a visit."""
    return [{"status": "success", "msg": "scheduled"}]
