"""Harbour Bank card tools (stand-ins)."""


def list_cards(username: str):
    """The customer's cards."""
    return [{"status": "success", "msg": "Debit card ending 4821; credit card ending 7390"}]


def freeze_card(username: str, card_last_four: str):
    """Freeze a card."""
    return [{"status": "success", "msg": f"Card ending {card_last_four} frozen."}]
