"""Tools of the Harmony Lane Music School bot (ADL custom functions).

Each tool returns the ADL convention: a list whose first item is {"status", "msg"} for the caller,
then {"arg": name, "value": ...} items that become the tool's result arguments.
Bookings are kept in memory.
"""

import datetime
import itertools

INSTRUMENTS = ("piano", "guitar", "violin", "drums", "flute")
# the weekday (0 = Monday) on which each instrument's teacher does not work
DAY_OFF = {"piano": 0, "guitar": 1, "violin": 2, "drums": 3, "flute": 4}
_refs = itertools.count(2001)
BOOKINGS = {"ML-1001": {"student_name": "Tom Reid", "instrument": "piano", "lesson_date": "2026-12-05"}}


def _date(text):
    try:
        return datetime.date.fromisoformat(str(text).strip()[:10])
    except ValueError:
        return None


def check_teacher_availability(instrument: str, lesson_date: str):
    """Whether a teacher of the instrument is free for a trial lesson on a date (YYYY-MM-DD)."""
    kind = str(instrument or "").strip().lower()
    day = _date(lesson_date)
    if kind not in INSTRUMENTS:
        return [{"status": "error", "msg": f"We do not teach {instrument}."},
                {"arg": "available", "value": False},
                {"arg": "reason", "value": f"We do not teach {instrument}."}]
    if day is None:
        return [{"status": "error", "msg": f"'{lesson_date}' is not a date."},
                {"arg": "available", "value": False},
                {"arg": "reason", "value": "I couldn't read that date."}]
    if day.weekday() == 6:
        reason = "The school is closed on Sundays."
    elif day.weekday() == DAY_OFF[kind]:
        reason = f"Our {kind} teacher does not work on {day.strftime('%A')}s."
    else:
        return [{"status": "success", "msg": f"A {kind} teacher is free on {day.isoformat()}."},
                {"arg": "available", "value": True},
                {"arg": "reason", "value": ""}]
    return [{"status": "success", "msg": reason},
            {"arg": "available", "value": False},
            {"arg": "reason", "value": reason}]


def book_trial_lesson(student_name: str, instrument: str, student_age, lesson_date: str):
    """Book a free trial lesson and return its booking reference."""
    try:
        age = int(float(str(student_age).strip()))
    except ValueError:
        age = -1
    if not 5 <= age <= 90:
        return [{"status": "error", "msg": "Trial lessons are for ages 5 to 90."},
                {"arg": "booking_ref", "value": None},
                {"arg": "message", "value": "trial lessons are for ages 5 to 90."}]
    ref = f"ML-{next(_refs)}"
    BOOKINGS[ref] = {"student_name": str(student_name), "instrument": str(instrument).lower(),
                     "lesson_date": str(lesson_date)}
    return [{"status": "success", "msg": f"Booked {ref}."},
            {"arg": "booking_ref", "value": ref},
            {"arg": "message", "value": "booked"}]


def cancel_booking(booking_ref: str, cancel_reason: str = ""):
    """Cancel a booked lesson by its reference (ML-1234)."""
    ref = str(booking_ref or "").strip().upper()
    if ref not in BOOKINGS:
        return [{"status": "error", "msg": f"No booking {ref}."},
                {"arg": "cancelled", "value": False},
                {"arg": "message", "value": f"I can't find a booking {ref}."}]
    BOOKINGS.pop(ref)
    return [{"status": "success", "msg": f"Cancelled {ref}."},
            {"arg": "cancelled", "value": True},
            {"arg": "message", "value": "You will not be charged."}]
