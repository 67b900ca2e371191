"""Riverside Surgery tools (stand-ins)."""


def triage_advice(symptoms: str):
    """Self-care advice for minor symptoms."""
    return [{"status": "success", "msg": "Rest, fluids, paracetamol if needed."}]


def gp_slots():
    """The earliest free GP appointments."""
    return [{"status": "success", "msg": "Today 16:10 (Dr Khan), Tomorrow 08:30 (Dr Reid), Tomorrow 11:50 (Dr Khan)"}]


def book_gp_slot(nhs_number: str, slot: str):
    """Book a GP appointment."""
    return [{"status": "success", "msg": "Booked"}]
