"""Roadstar Car Rental tools (stand-ins)."""


def find_rental(agreement_number):
    return {"car": "Skoda Octavia", "return_branch": "Central Station", "return_due": "Friday 18:00"}


def extend_rental(agreement_number, days):
    return {"new_return_due": "Sunday 18:00", "extra_cost": 98.0}


def report_damage(agreement_number, description):
    return {"claim_id": "DMG-3320", "excess": 800.0}
