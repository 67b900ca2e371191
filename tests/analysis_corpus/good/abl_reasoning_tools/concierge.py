"""Seaview Hotel tools (stand-ins)."""


def book_table(restaurant, time):
    return {"confirmation": "T-88"}


def order_taxi(destination):
    return {"eta_minutes": 12}
