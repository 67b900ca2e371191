"""Tools for the broken-program corpus (parsed, never run)."""


def get_date():
    """Today's date."""
    return [{"status": "success"}, {"arg": "today", "value": "2025-01-01"}]


def place_order(ordered_book: list, date: str, express: bool = False):
    """Place an order.

    Args:
        ordered_book: the books to order
        date: the order date
        express: ship express
    """
    return [{"status": "success"}]
