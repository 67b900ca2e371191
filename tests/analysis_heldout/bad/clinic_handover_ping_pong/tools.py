"""Maple Health tools (stand-ins)."""


def list_doctors(specialty: str):
    """Doctors of a specialty with their languages and next free day."""
    return [{"status": "success", "msg": "Dr Osei (English, French) Tuesday; Dr Lind (English) Thursday"}]


def free_slots(doctor_name: str):
    """The next free slots of a doctor."""
    return [{"status": "success", "msg": "Tue 09:20, Tue 11:40, Wed 15:00"}]


def book_slot(patient_id: str, doctor_name: str, slot: str):
    """Book a slot for the patient."""
    return [{"status": "success", "msg": "Booked, confirmation MH-A5531"}]
