"""In-memory tools for the gym membership project (no network)."""

FEES = {"basic": (25, 20), "plus": (40, 20), "premium": (65, 0)}
MEMBERS = {}


def quote_plan(plan, age):
    """Monthly and joining fee of a plan."""
    monthly, joining = FEES.get(str(plan).lower(), (0, 0))
    if float(age) < 25:
        monthly = round(monthly * 0.8, 2)
        if monthly == int(monthly):
            monthly = int(monthly)
    return {"monthly_fee": monthly, "joining_fee": joining}


def create_membership(member_email, plan, start_date, age):
    """Create a membership."""
    membership_id = "PF-" + str(sum(ord(c) for c in str(member_email).lower() + str(plan)) % 100000).rjust(5, "0")
    MEMBERS[str(member_email).lower()] = {"plan": plan, "start_date": str(start_date), "membership_id": membership_id}
    return {"membership_id": membership_id, "status": "active"}


def freeze_membership(member_email, freeze_months):
    """Freeze a membership."""
    months = int(float(freeze_months))
    return {"frozen_until": "2027-0%d-01" % min(months + 1, 9), "status": "frozen"}
