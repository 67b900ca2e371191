"""Brightwater Energy tools (stand-ins)."""


def outage_lookup(postcode: str):
    """Whether a power cut is known near a postcode."""
    return [{"status": "success", "msg": "looked up"}, {"arg": "known", "value": True}]


def log_fault(postcode: str):
    """Log a customer's fault report."""
    return [{"status": "success", "msg": "Fault logged."}]


def restore_time(postcode: str):
    """The expected restore time for a postcode."""
    return [{"status": "success", "msg": "estimated"}, {"arg": "eta", "value": "18:30"}]
