"""Inactivity in ADL policy text: "If there is no input from the user for 30 seconds, please remind the
user for an input. If there is no input for 3 minutes, please say good-bye to the user." (the ADL
paper's exit policy) read into timed rules (frontdesk.ir.models.InactivityRule)."""

from __future__ import annotations

import re

from frontdesk.ir.models import InactivityRule

# "no input / response / reply / answer / message / activity ... for 30 seconds" (also "within", "in",
# "after" and numbers written as words up to sixty)
_WORD_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "fifteen": 15, "twenty": 20, "thirty": 30, "forty": 40, "forty-five": 45,
    "fifty": 50, "sixty": 60,
}
_UNITS = {"s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1, "min": 60, "mins": 60, "minute": 60,
          "minutes": 60, "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600}
_IDLE = re.compile(
    r"\bno\s+(?:further\s+|more\s+)?(?:input|response|reply|answer|message|messages|activity)\b"
    r"[^.;]*?\b(?:for|within|in|after)\s+(?:more\s+than\s+|over\s+|about\s+)?"
    r"(?P<n>\d+(?:\.\d+)?|" + "|".join(sorted(map(re.escape, _WORD_NUMBERS), key=len, reverse=True)) + r")"
    r"\s*(?P<unit>" + "|".join(sorted(map(re.escape, _UNITS), key=len, reverse=True)) + r")\b",
    re.IGNORECASE,
)
_ENDS = re.compile(r"\b(good-?\s?bye|bye|end|ends|close|closes|terminate|hang\s+up|exit|finish)\b", re.IGNORECASE)
_QUOTED = re.compile(r"[\"“]([^\"”]{2,300})[\"”]")

def read_policy(text: str) -> list[InactivityRule]:
    """The timed rules a natural-language policy states, in order of their delay; [] when it states none.
    Each sentence with "no input ... for N <unit>" is one rule: it ends the session when the sentence
    says good-bye, end, close or the like, and reminds the user otherwise; a quoted text is what is said."""
    rules = []
    for sentence in re.split(r"(?<=[.;!])\s+|\n+", text or ""):
        found = _IDLE.search(sentence)
        if not found:
            continue
        amount = found["n"].lower()
        seconds = float(_WORD_NUMBERS.get(amount, 0) or amount) * _UNITS[found["unit"].lower()]
        if seconds <= 0:
            continue
        rest = sentence[found.end():]
        action = "end" if _ENDS.search(rest) else "remind"
        quoted = _QUOTED.search(rest)
        rules.append(InactivityRule(after=seconds, action=action, text=quoted.group(1).strip() if quoted else ""))
    return sorted(rules, key=lambda r: r.after)
