"""PulseFit tools (stand-ins)."""


def create_membership(full_name: str, iban: str, plan: str, monthly_fee: float):
    """Create the membership and its direct debit mandate."""
    return [{"status": "success", "msg": "created"}, {"arg": "member_number", "value": "PF-90317"}]
