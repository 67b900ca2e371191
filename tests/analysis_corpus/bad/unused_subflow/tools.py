"""Skyline broadband tools (stand-ins)."""


def line_test():
    """Test the customer's line."""
    return [{"status": "success", "msg": "tested"}, {"arg": "fault", "value": True}]


def open_ticket():
    """Open a repair ticket."""
    return [{"status": "success", "msg": "opened"}, {"arg": "ticket", "value": "T-5521"}]
