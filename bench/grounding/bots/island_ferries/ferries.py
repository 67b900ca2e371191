"""Island Ferries' systems for the grounding corpus: fares, a timetable and bookings kept in memory."""

from __future__ import annotations

import itertools
from datetime import date

ROUTES = {
    "mull": {"departure": "Oban 09:50", "foot": 4.5, "car": 17.0},
    "islay": {"departure": "Kennacraig 07:00", "foot": 8.0, "car": 39.0},
    "arran": {"departure": "Ardrossan 10:30", "foot": 4.2, "car": 16.5},
    "colonsay": {"departure": "Oban 15:10", "foot": 7.5, "car": 35.0},
}
_codes = itertools.count(20001)
BOOKINGS: dict[str, dict] = {"FB10001": {"island": "Mull", "sailing_date": "2026-12-12"}}


def _day(text: str) -> date:
    return date.fromisoformat(str(text).strip()[:10])


def _yes(value) -> bool:
    return str(value).strip().lower() in {"true", "yes", "1", "y"}


def quote_fare(island: str, sailing_date: str, passengers: float, with_car) -> dict:
    """Whether a sailing to the island has room on a date, its fare and departure time."""
    route = ROUTES.get(str(island).strip().lower())
    day = _day(sailing_date)
    if route is None or day.month == 12 and day.day == 25:
        return {"available": False, "fare": 0, "departure": ""}
    fare = route["foot"] * int(passengers) + (route["car"] if _yes(with_car) else 0)
    return {"available": True, "fare": round(fare, 2), "departure": route["departure"]}


def book_crossing(lead_passenger: str, island: str, sailing_date: str, passengers: float, with_car) -> dict:
    """Book a crossing and return its booking code."""
    code = f"FB{next(_codes)}"
    BOOKINGS[code] = {"lead_passenger": lead_passenger, "island": island, "sailing_date": str(sailing_date)[:10],
                      "passengers": int(passengers), "with_car": _yes(with_car)}
    return {"booking_code": code}


def find_booking(booking_code: str) -> dict:
    """Find a booking by its code."""
    booking = BOOKINGS.get(str(booking_code).strip().upper())
    if booking is None:
        return {"found": False}
    return {"found": True, "island": booking["island"], "sailing_date": booking["sailing_date"]}


def move_booking(booking_code: str, new_date: str) -> dict:
    """Move a booking to another date."""
    booking = BOOKINGS.get(str(booking_code).strip().upper())
    if booking is None:
        raise LookupError(f"no booking {booking_code}")
    day = _day(new_date)
    if day.month == 12 and day.day == 25:
        raise ValueError("no sailings on Christmas Day")
    booking["sailing_date"] = day.isoformat()
    return {"moved": True, "departure": ROUTES[booking["island"].lower()]["departure"]}
