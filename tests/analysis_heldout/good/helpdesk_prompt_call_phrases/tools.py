"""Corvid Systems IT tools (stand-ins)."""


def ticket_status(ticket_id: str):
    """The state of a ticket and who has it."""
    return [{"status": "success", "msg": "In progress, assigned to Priya (Desktop team)"}]


def add_ticket_note(ticket_id: str, note: str):
    """Add a note to a ticket."""
    return [{"status": "success", "msg": "note added"}]
