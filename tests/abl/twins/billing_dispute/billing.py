"""The billing desk's data, in memory: two bills of account AC-1234, a few orders, the disputes opened."""

BILLS = {
    ("AC-1234", "2026-03"): {
        "total": 64.0,
        "lines": [
            {"item": "Monthly plan", "amount": 39.0},
            {"item": "Roaming in Switzerland, 3 days", "amount": 25.0},
        ],
    },
    ("AC-1234", "2026-02"): {"total": 39.0, "lines": [{"item": "Monthly plan", "amount": 39.0}]},
}

ORDERS = {
    "O-123": {"status": "out for delivery", "eta": "2026-04-02"},
    "O-456": {"status": "at the depot", "eta": "2026-04-05"},
}

DISPUTES: list[dict] = []


def get_bill(account_id: str, month: str) -> dict:
    """Read the customer's bill for a month (YYYY-MM): its total and its lines."""
    bill = BILLS.get((str(account_id).upper(), str(month)))
    if bill is None:
        return {"found": False}
    return {"found": True, "total": bill["total"], "lines": bill["lines"]}


def open_dispute(account_id: str, month: str, reason: str) -> dict:
    """Open a dispute case for a bill; billing reviews it."""
    case_id = f"D-{len(DISPUTES) + 1001}"
    DISPUTES.append({"case_id": case_id, "account_id": str(account_id).upper(), "month": month, "reason": reason})
    return {"case_id": case_id}


def track_order(order_id: str) -> dict:
    """Find where an order is and when it should arrive."""
    order = ORDERS.get(str(order_id).upper())
    if order is None:
        return {"found": False}
    return {"found": True, **order}
