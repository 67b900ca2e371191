"""Northfield University tools (stand-ins)."""


def find_application(applicant_ref: str):
    """Look up an application by reference."""
    return [
        {"status": "success", "msg": "found"},
        {"arg": "found", "value": True},
        {"arg": "programme", "value": "MEng Civil Engineering"},
        {"arg": "documents_complete", "value": False},
        {"arg": "missing_documents", "value": "a reference letter"},
        {"arg": "interview_days", "value": "Monday 10 March or Wednesday 12 March"},
    ]


def book_interview_slot(applicant_ref: str, day: str):
    """Book an interview on a day."""
    return [
        {"status": "success", "msg": "booked"},
        {"arg": "time", "value": "14:30"},
        {"arg": "room", "value": "Brunel 2.05"},
    ]
