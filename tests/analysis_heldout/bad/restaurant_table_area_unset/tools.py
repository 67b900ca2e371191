"""Olive & Thyme tools (stand-ins)."""


def assign_table(guests: int, time: str):
    """Reserve a free table for a party at a time."""
    return [
        {"status": "success", "msg": "assigned"},
        {"arg": "table_no", "value": 14},
        {"arg": "area", "value": "garden room"},
    ]
