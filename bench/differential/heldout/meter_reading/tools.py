"""Tools for the Brightwater Energy assistant (deterministic, no I/O)."""

ACCOUNTS = {
    "UA1234567": {"holder": "Olu Adeyemi",
                  "meters": {"electricity": (45210, "2026-10-31"), "gas": (10877, "2026-10-31")}},
    "UA7654321": {"holder": "Grace Kim",
                  "meters": {"electricity": (8020, "2026-10-30")}},
}
BILLS = {
    "UA1234567": {"month": "November", "units": 265, "last_month_units": 190, "unit_price": 0.28,
                  "standing": 14.20, "estimated": True, "due": "2026-12-15"},
    "UA7654321": {"month": "November", "units": 120, "last_month_units": 131, "unit_price": 0.28,
                  "standing": 14.20, "estimated": False, "due": "2026-12-15"},
}


def _acct(account_number):
    return "".join(str(account_number or "").split()).upper()


def find_account(account_number: str = ""):
    """Find a customer account by its number, e.g. UA1234567."""
    a = ACCOUNTS.get(_acct(account_number))
    if a is None:
        return [{"status": "error", "msg": f"account {account_number} not found"}]
    return [{"status": "success", "msg": f"account of {a['holder']}"},
            {"arg": "holder", "value": a["holder"]}]


def save_reading(account_number: str, meter_type: str, reading):
    """Save a meter reading if it is not lower than the previous one; returns units used since then."""
    a = ACCOUNTS.get(_acct(account_number))
    if a is None:
        return [{"status": "error", "msg": "account not found"}]
    kind = str(meter_type or "").strip().lower()
    if kind not in a["meters"]:
        return [{"status": "error", "msg": f"no {kind} meter on this account"},
                {"arg": "previous", "value": "none"}]
    previous, previous_date = a["meters"][kind]
    try:
        value = int(str(reading).strip())
    except ValueError:
        return [{"status": "error", "msg": "reading is not a number"}, {"arg": "previous", "value": previous}]
    if value < previous:
        return [{"status": "error", "msg": f"reading {value} is lower than previous {previous}"},
                {"arg": "previous", "value": previous}]
    return [{"status": "success", "msg": f"saved; {value - previous} units used"},
            {"arg": "usage", "value": value - previous},
            {"arg": "previous_date", "value": previous_date}]


def get_tariffs():
    """Return the current unit prices."""
    summary = "Electricity 0.28 euros per kWh, gas 0.09 euros per kWh, standing charge 14.20 euros per month."
    return [{"status": "success", "msg": summary}, {"arg": "summary", "value": summary}]


def get_bill(account_number: str):
    """Return the latest bill for an account: total, units, standing charge and whether it was estimated."""
    b = BILLS.get(_acct(account_number))
    if b is None:
        return [{"status": "error", "msg": f"no bill for {account_number}"}]
    total = b["units"] * b["unit_price"] + b["standing"]
    kind = "an estimated" if b["estimated"] else "an actual"
    msg = (f"{b['month']} bill: {total:.2f} euros for {b['units']} kWh at {b['unit_price']} euros plus "
           f"{b['standing']:.2f} euros standing charge, based on {kind} reading; last month {b['last_month_units']} kWh; "
           f"due {b['due']}.")
    return [{"status": "success", "msg": msg}, {"arg": "total", "value": f"{total:.2f}"}]
