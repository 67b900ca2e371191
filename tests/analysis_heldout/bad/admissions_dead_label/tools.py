"""Northfield University tools (stand-ins)."""


def find_application(applicant_ref: str):
    """Look up an application by reference."""
    return [
        {"status": "success", "msg": "found"},
        {"arg": "found", "value": True},
        {"arg": "decision", "value": "conditional"},
        {"arg": "programme", "value": "BSc Marine Biology"},
        {"arg": "condition", "value": "AAB at A level including Biology"},
    ]
