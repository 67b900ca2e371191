"""Olive & Thyme tools (stand-ins)."""


def create_enquiry(host_name, phone, event_date, guests, dietary_notes):
    return {"enquiry_id": "PD-1187"}
