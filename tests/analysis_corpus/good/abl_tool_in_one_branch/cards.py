"""Harbour Bank tools (stand-ins)."""


def block_card():
    return {"blocked": True}


def order_replacement():
    return {"arrives": "in five working days"}
