def lookup_order(order_id: str) -> dict:
    """Find an order."""
    return {"found": False}
