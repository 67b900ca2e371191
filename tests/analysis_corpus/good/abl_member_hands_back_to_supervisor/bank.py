"""Harbour Bank tools (stand-ins)."""


def email_statement():
    return {"sent_to": "a.m***@example.com"}


def get_balance():
    return {"balance": 1250.4}
