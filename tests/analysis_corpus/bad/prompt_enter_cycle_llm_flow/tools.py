"""Northwind Outdoor tools (stand-ins)."""


def search_products(activity: str):
    """Products suited to an activity."""
    return [{"status": "success", "msg": "Trail Tent 2, Ridge Boots"}]


def take_payment(items: list):
    """Charge the saved card for the items."""
    return [{"status": "success", "msg": "Paid."}]
