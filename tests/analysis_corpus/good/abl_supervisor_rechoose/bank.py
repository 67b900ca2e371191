"""Harbour Bank tools (stand-ins)."""


def pay_card(amount):
    return {"confirmation": "PC-301"}


def get_balance():
    return {"balance": 1250.4}
