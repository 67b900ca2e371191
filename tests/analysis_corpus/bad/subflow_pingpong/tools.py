"""Northwind Outdoor store tools (stand-ins)."""


def stock_level(store: str):
    """Units of the item in a store."""
    return [{"status": "success", "msg": "read"}, {"arg": "count", "value": 2}]


def hold_item(store: str):
    """Put one unit aside for the customer."""
    return [{"status": "success", "msg": "held"}]
