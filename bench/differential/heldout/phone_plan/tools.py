"""Tools for the Nimbus Mobile support bot (deterministic, no I/O)."""

CUSTOMERS = {
    "C-5521": {"first_name": "Dana", "phone_number": "0171 555 0199", "plan": "Plus"},
}
USAGE = {
    "0171 555 0199": {"data_used_gb": 14.2, "data_allowance_gb": 20, "minutes": 310, "texts": 42},
}
PLANS = {
    "basic": {"name": "Basic", "price": 15, "data_gb": 5},
    "plus": {"name": "Plus", "price": 25, "data_gb": 20},
    "unlimited": {"name": "Unlimited", "price": 40, "data_gb": None},
}
ROAMING = {
    "spain": ("EU", {"Basic": 5, "Plus": 3, "Unlimited": 0}),
    "france": ("EU", {"Basic": 5, "Plus": 3, "Unlimited": 0}),
    "italy": ("EU", {"Basic": 5, "Plus": 3, "Unlimited": 0}),
    "usa": ("USA", {"Basic": 10, "Plus": 8, "Unlimited": 0}),
    "united states": ("USA", {"Basic": 10, "Plus": 8, "Unlimited": 0}),
    "japan": ("World", {"Basic": 12, "Plus": 12, "Unlimited": 9}),
}
NEXT_CYCLE = "2026-12-01"


def start_session(customer_id: str):
    """Load the signed-in customer's profile."""
    c = CUSTOMERS.get(customer_id)
    if c is None:
        return [{"status": "error", "msg": "unknown customer"}]
    return [{"status": "success", "msg": f"customer {customer_id} loaded"},
            {"arg": "first_name", "value": c["first_name"]},
            {"arg": "phone_number", "value": c["phone_number"]},
            {"arg": "plan", "value": c["plan"]}]


def get_usage(phone_number: str):
    """Return this month's usage (data in GB, minutes, texts) for a phone number."""
    u = USAGE.get((phone_number or "").strip())
    if u is None:
        return [{"status": "error", "msg": "no usage found for this number"}]
    left = round(u["data_allowance_gb"] - u["data_used_gb"], 1)
    msg = (f"Data used {u['data_used_gb']} GB of {u['data_allowance_gb']} GB ({left} GB left), "
           f"{u['minutes']} minutes, {u['texts']} texts.")
    return [{"status": "success", "msg": msg},
            {"arg": "data_left_gb", "value": left}]


def quote_plan_change(current_plan: str = "", new_plan: str = ""):
    """Quote the monthly price of the new plan and explain what changes."""
    new = PLANS.get((new_plan or "").strip().lower())
    cur = PLANS.get((current_plan or "").strip().lower())
    if new is None:
        return [{"status": "error", "msg": f"unknown plan {new_plan}"}]
    if cur is not None and cur["name"] == new["name"]:
        note = "That is the plan you already have."
    elif new["data_gb"] is None:
        note = "You get unlimited data."
    elif cur is not None and cur["data_gb"] is not None and new["data_gb"] < cur["data_gb"]:
        note = f"You would have {cur['data_gb'] - new['data_gb']} GB less data each month."
    else:
        note = f"You get {new['data_gb']} GB of data."
    return [{"status": "success", "msg": f"{new['name']} costs {new['price']} dollars"},
            {"arg": "monthly_price", "value": new["price"]},
            {"arg": "note", "value": note}]


def apply_plan_change(phone_number: str, new_plan: str):
    """Schedule the plan change for the next billing cycle."""
    if (new_plan or "").strip().lower() not in PLANS:
        return [{"status": "error", "msg": f"unknown plan {new_plan}"}]
    return [{"status": "success", "msg": f"{phone_number} moves to {new_plan} on {NEXT_CYCLE}"},
            {"arg": "effective_date", "value": NEXT_CYCLE}]


def roaming_rate(country: str = "", plan: str = "Plus"):
    """Return the daily roaming price for a country on the customer's plan."""
    entry = ROAMING.get((country or "").strip().lower())
    if entry is None:
        return [{"status": "error", "msg": f"no roaming partner in {country}"}]
    zone, prices = entry
    price = prices.get((plan or "Plus").strip().title(), prices["Plus"])
    return [{"status": "success", "msg": f"{zone} roaming, {price} dollars per day"},
            {"arg": "zone", "value": zone},
            {"arg": "daily_price", "value": price}]


def enable_roaming(phone_number: str):
    """Turn roaming on for the phone number."""
    return [{"status": "success", "msg": f"roaming enabled for {phone_number}"}]
