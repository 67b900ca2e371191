"""Pageleaf Books tools (stand-ins)."""


def search_catalogue(title: str):
    """Look a book up by title."""
    return [{"status": "success", "msg": f"{title}: in stock, 12.99 EUR"}]


def add_gift_wrap(gift_message: str):
    """Add gift wrapping with a message to the open order."""
    return [{"status": "success", "msg": "Gift wrap added."}]
