def lookup_order(order_id: str) -> dict
    return {
