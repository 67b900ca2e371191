"""PulseFit tools (stand-ins)."""


def freeze_membership(member_id: str, months: int):
    """Pause a membership and give the restart date."""
    return [{"status": "success", "msg": "frozen"}, {"arg": "restart_date", "value": "1 June"}]
