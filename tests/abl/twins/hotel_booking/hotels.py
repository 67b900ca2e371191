"""The hotel booking example's systems: a small hotel inventory, a reservation book and a card
terminal, enough to chat with the example. Bookings and payments are kept in memory."""

from __future__ import annotations

import itertools
from datetime import date

HOTELS = {
    "paris": {"hotel": "Hotel Lumiere", "price_per_night": 180, "max_guests": 4},
    "lisbon": {"hotel": "Casa do Rio", "price_per_night": 120, "max_guests": 6},
    "rome": {"hotel": "Albergo Sole", "price_per_night": 150, "max_guests": 4},
    "oslo": {"hotel": "Fjord Inn", "price_per_night": 210, "max_guests": 5},
}
_numbers = itertools.count(101)
BOOKINGS: dict[str, dict] = {}


def _nights(checkin: str, checkout: str) -> int:
    return max((date.fromisoformat(str(checkout)[:10]) - date.fromisoformat(str(checkin)[:10])).days, 0)


def search_hotels(destination: str, checkin: str, checkout: str, guests: int) -> dict:
    """Find a room for the stay: how many hotels fit, the best one and its price for the whole stay."""
    hotel = HOTELS.get(str(destination).strip().lower())
    nights = _nights(checkin, checkout)
    if hotel is None or int(guests) > hotel["max_guests"] or nights == 0:
        return {"total": 0, "hotel": "", "nights": nights, "price": 0}
    return {"total": 1, "hotel": hotel["hotel"], "nights": nights, "price": hotel["price_per_night"] * nights}


def book_hotel(hotel: str, checkin: str, checkout: str, guests: int, price: float) -> dict:
    """Reserve the room; the reservation waits for its payment."""
    booking_id = f"HB-{next(_numbers)}"
    BOOKINGS[booking_id] = {"hotel": hotel, "checkin": checkin, "checkout": checkout, "guests": guests,
                            "amount": price, "paid": False}
    return {"booking_id": booking_id, "amount": price}


def charge_card(booking_id: str, amount: float, card_number: str) -> dict:
    """Charge the card for a booking. Cards ending in 0000 are declined."""
    digits = "".join(ch for ch in str(card_number) if ch.isdigit())
    if digits.endswith("0000"):
        raise ValueError("the card was declined")
    booking = BOOKINGS.setdefault(booking_id, {"amount": amount, "paid": False})
    booking["paid"] = True
    return {"payment_id": "PAY-" + booking_id.removeprefix("HB-"), "amount": amount}
