"""Clearwater Utilities tools (stand-ins)."""


def submit_reading(account_number, reading):
    return {"accepted": True, "next_bill": 48.2}


def book_engineer_visit(account_number):
    return {"visit_day": "Wednesday"}
