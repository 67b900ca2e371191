"""Corvid Systems IT tools (stand-ins)."""


def vpn_service_status():
    return {"outage": False, "message": ""}


def open_vpn_ticket():
    return {"ticket_id": "INC-20931"}
