"""Harbour Bank card tools (stand-ins)."""


def block_card(card):
    return {"blocked": True}


def order_replacement(card):
    return {"arrives": "in five working days"}
