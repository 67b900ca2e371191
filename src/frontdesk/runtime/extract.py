"""Reading typed values out of a user's message without a model: e-mail addresses, phone numbers,
numbers, yes/no, dates ("tomorrow", "March 15", "next Friday") and values from a fixed list.

This is ABL's `pattern` GATHER strategy (and the first half of `hybrid`); a flow uses it for every
field it can when no LLM is there to extract. Dates come from dateparser, phone numbers from
phonenumbers (libphonenumber's rules).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
NUMBER = re.compile(r"(?<![\w.-])-?\d+(?:[.,]\d+)?(?![\w-])")  # not a part of POL-123 or 555-2671
YES = {"yes", "yeah", "yep", "sure", "ok", "okay", "correct", "right", "true", "y", "definitely", "please do"}
NO = {"no", "nope", "nah", "false", "n", "not really", "never"}
NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
                "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}
PATTERN_TYPES = ("email", "phone", "number", "integer", "boolean", "date", "datetime")
# a length of stay ("for 2 nights", "for a week"): how long, not how many of something
_STAY_COUNTS = {**NUMBER_WORDS, "a": 1, "an": 1}
STAY_LENGTH = re.compile(rf"\b(?:for\s+)?(\d{{1,3}}|{'|'.join(_STAY_COUNTS)})\s+(night|day|week)s?\b", re.IGNORECASE)
# a day counted from today ("in 3 days", "2 weeks from now"): a date, not a number of something
RELATIVE_DATE = re.compile(r"(?i)\bin\s+\d+\s+(?:day|week|month|year)s?\b|"
                           r"\b\d+\s+(?:day|week|month|year)s?\s+(?:from\s+now|from\s+today|later|ago)\b")


def extract_values(text: str, fields: dict[str, str], now: datetime | None = None,
                   options: dict[str, list[str]] | None = None,
                   patterns: dict[str, str] | None = None,
                   synonyms: dict[str, dict[str, list[str]]] | None = None) -> dict[str, Any]:
    """The values of `fields` (name -> type) the message gives; a field it does not give is left out.
    A field with `options` takes the one option the message names, or whose `synonyms` (option ->
    phrases, an ENTITIES enum's SYNONYMS) it uses ("someone stole my bike" -> theft).

    Two fields of the same type take the values in the order the message gives them (a check-in and
    a check-out date: "from March 3 to March 5")."""
    options = options or {}
    patterns = patterns or {}
    found: dict[str, Any] = {}
    by_type: dict[str, list[str]] = {}
    for name, kind in fields.items():
        if name in patterns:
            value = _by_regex(text, patterns[name])
            if value is not None:
                found[name] = value
            continue
        if options.get(name):
            choice = _choice(text, options[name], (synonyms or {}).get(name))
            if choice is not None:
                found[name] = choice
            continue
        by_type.setdefault(kind, []).append(name)
    dateless = text
    if by_type.get("number") or by_type.get("integer"):
        for phrase in _date_phrases(text, now):  # "December 5" is a date, not 5 of something
            dateless = dateless.replace(phrase, " ")
        if by_type.get("date") or by_type.get("datetime"):  # "in 3 days" gives the date, not 3 guests
            dateless = RELATIVE_DATE.sub(" ", dateless)
            # "for 2 nights" is a length of stay (the dates' business), not 2 of what a number field counts,
            # unless the field counts those very units (`nights`)
            counted = by_type.get("number", []) + by_type.get("integer", [])
            dateless = STAY_LENGTH.sub(lambda m: m.group(0) if any(m.group(2).lower() in n for n in counted)
                                       else " ", dateless)
    for kind, names in by_type.items():
        if kind in ("date", "datetime") and len(names) == 1 and PAST_FIELD.search(names[0]):
            found_days = _dates(text, now, with_time=kind == "datetime", past=True)
            if found_days:
                found[names[0]] = found_days[0]
            continue
        if kind == "boolean":
            for name in names:  # each yes/no field by what its name is about ("no car" for with_car)
                answer = boolean_for(text, name)
                if answer is not None:
                    found[name] = answer
            continue
        values = _values(dateless if kind in ("number", "integer") else text, kind, now)
        if kind in ("number", "integer") and len(names) == 1 and values:
            values = _counted(dateless, names[0], kind == "integer")  # not "2 questions" for guests
        if kind in ("number", "integer") and len(names) == 1 and not values and counts_people(names[0]):
            party = people_named(text)  # "just me and my wife": 2 guests
            values = [party] if party else []
        for name, value in zip(names, values):
            found[name] = value
    return found


def numbers_for(text: str, name: str, now: datetime | None = None, integer: bool = False) -> list[int | float]:
    """The numbers a message gives for the number field `name`, in order: not a day of a month ("December
    5"), a day counted from today ("in 3 days"), a phone number or e-mail address, a time of day, nor a
    number of something else than the field counts (counts_for: "2 other kids" or "year 5" for an age)."""
    dateless = text
    for phrase in _date_phrases(text, now):
        dateless = dateless.replace(phrase, " ")
    dateless = RELATIVE_DATE.sub(" ", dateless)
    return _counted(dateless, name, integer)


_COMPANIONS = ("wife|husband|partner|friend|son|daughter|mother|father|mum|mom|dad|boyfriend|girlfriend|"
               "colleague|sister|brother|fiancee?|child|kid|baby|grandmother|grandfather|grandma|grandpa")
# the party said by naming its people: "just me and my wife", "my husband and I", "only me"
_PARTY = re.compile(rf"(?i)^\W*(?:it'?s\s+|it\s+will\s+be\s+|there'?ll\s+be\s+)?(?:just|only)?\s*"
                    rf"(?:(?:me|myself|i)(?P<mine>(?:\s*(?:,|and|\+|plus|with)\s*(?:my|our)\s+(?:{_COMPANIONS}))*)|"
                    rf"(?P<first>(?:my|our)\s+(?:{_COMPANIONS}))\s+and\s+(?:me|myself|i))\W*(?:please|thanks)?\W*$")


def people_named(text: str) -> int | None:
    """How many people a message counts by naming them ("Just me and my wife." 2, "my husband and I" 2,
    "only me" 1); None when it names no party that way (a count in digits or words is read as a number)."""
    found = _PARTY.match(text or "")
    if found is None:
        return None
    if found.group("first"):
        return 2
    return 1 + len(re.findall(rf"(?i)\b(?:my|our)\s+(?:{_COMPANIONS})\b", found.group("mine") or ""))


def counts_people(name: str) -> bool:
    """Whether a number field counts people (guests, passengers, party_size)."""
    return any(stem in name.lower() for stem in _UNIT_FIELDS["people"][:8])


def _counted(text: str, name: str, integer: bool) -> list[int | float]:
    """The numbers of the text that count what field `name` counts (counts_for), in order."""
    out: list[int | float] = []
    text = _without_contacts(text)
    for written in [text] if NUMBER.search(text) else [digits_for_words(text)]:
        for found in NUMBER.finditer(written):
            if counts_for(written[:found.start()], written[found.end():], name):
                value = float(found.group(0).replace(",", "."))
                out.append(int(value) if value.is_integer() or integer else value)
        if out:
            break
    return out


# what a number counts, by the word after it: a number of something else is not this field's value
_UNITS = {
    "people": {"people", "persons", "person", "adults", "adult", "kids", "children", "child", "guests", "guest",
               "passengers", "passenger", "travellers", "travelers", "pax", "seats", "seat", "tickets", "ticket"},
    "money": {"pounds", "pound", "euros", "euro", "eur", "dollars", "dollar", "usd", "gbp", "quid", "bucks",
              "cents", "pence", "gbp.", "k"},
    "time": {"nights", "night", "days", "day", "weeks", "week", "months", "month", "hours", "hour", "minutes",
             "years", "year"},
}
_UNIT_FIELDS = {
    "people": ("guest", "passeng", "people", "person", "party", "adult", "travel", "pax", "seat", "ticket", "size",
               "count", "number_of"),
    "money": ("amount", "price", "cost", "total", "fee", "balance", "budget", "sum", "pay", "value", "limit",
              "deposit", "estimate"),
    "time": ("night", "day", "stay", "duration", "length", "week", "month", "hour", "year", "age", "term"),
}
_TIME_OF_DAY = re.compile(r"(?i)^\s*(?:am|pm|a\.m\.|p\.m\.|o'?clock|in the (?:morning|afternoon|evening)|h\b|:\d)")
_TIME_BEFORE = re.compile(r"(?i)\b(?:at|before|after|until|till|by|from|around)\s*$")


# a noun a number right after it names one of ("year 5" at school, "grade 3", "room 12", "page 4"): the
# number labels that thing, it counts nothing
_LABEL_BEFORE = re.compile(r"(?i)\b(year|grade|class|form|room|level|page|platform|gate|floor|flat|apartment|"
                           r"chapter|step|stage|lane|route|bus|line|question|no\.?|#)\s*$")


_MEASURES = frozenset("kg kgs kilo kilos kilograms g grams km kms miles mile m metres meters cm mm lb lbs "
                      "oz litres liters l ml percent gb mb tb inches inch ft feet tonnes tons degrees".split())
_FILLER = frozenset("a an the and or of to in on at for by with from my your our it is are be please thanks".split())


def counts_for(before: str, after: str, name: str) -> bool:
    """Whether a number, with the text `before` and `after` it, is a value for the number field `name`:
    not a time of day ("before 9 in the morning") and not a number of something else ("I have 2
    questions" for guests, "2 cards" for an amount); a field named for a count takes any ("2 books")."""
    field = name.lower()
    timed = any(w in field for w in ("time", "hour", "when"))
    if not timed and (_TIME_OF_DAY.match(after) or (_TIME_BEFORE.search(before) and not re.match(r"\s*[a-z]", after))):
        return False
    label = _LABEL_BEFORE.search(before)
    if label and not any(label.group(1).lower().rstrip("s")[:4] in w for w in re.split(r"[_\W]+", field) if w):
        return False  # "year 5", "room 12": the name of a school year or a room, not what this field counts
    # the thing counted, past the words that only qualify it ("2 other kids", "3 more guests")
    following = re.match(r"\s*(?:(?:other|more|extra|additional|older|younger|little|small|grown-?up)\s+)?([a-z]+)",
                         after.lower())
    word = following.group(1) if following else ""
    if not word and re.match(r"(?i)\s*more\b", after):
        word = "more"
    units = set().union(*_UNITS.values())
    if word and word not in units and word not in _MEASURES and word not in _FILLER and not word.endswith("s"):
        # a compound noun counts its last word: "2 concert tickets" counts tickets, not concerts
        rest = re.findall(r"[a-z]+", after.lower()[following.end():])[:2] if following else []
        for later in rest:
            if later in _FILLER:
                break
            if later in units or (len(later) > 3 and later.endswith("s") and not later.endswith("ss")):
                word = later
                break
    if not word or word in _FILLER or word in {"more", "total", "altogether", "please", "thanks", "each", "max"}:
        return True
    if any(word.startswith(w[:4]) or w.startswith(word[:4]) for w in re.split(r"[_\W]+", field) if len(w) >= 4):
        return True  # "3 rooms" for rooms, "2 nights" for nights
    if word in _MEASURES or any(stem in field for stem in ("quant", "qty", "count", "num", "many", "copies", "items")):
        return True  # a count of whatever the user names ("2 books" for quantity)
    for unit, words in _UNITS.items():
        if word in words:
            return any(stem in field for stem in _UNIT_FIELDS[unit]) or not field
    # "2 questions", "2 bikes": a number of something else; a word after it that counts nothing ("item 3
    # cost") says nothing
    return not field or not (len(word) > 3 and word.endswith("s") and not word.endswith("ss"))


# an answer that declines to answer: never a free-text value
_DECLINES = re.compile(r"(?i)\b(?:rather not|prefer not|don'?t want to|do not want to|won'?t say|not telling|no comment|"
                       r"don'?t know|do not know|not sure|no idea|skip (?:it|this|that)|pass on that|none of your)\b")
_ASKS = re.compile(r"(?i)^\W*(?:what|whats|what's|where|when|why|who|how|which|can|could|would|do|does|did|is|are|"
                   r"will|should|may)\b")


# a message that is only a word for leaving the question unanswered ("skip", "pass")
_SKIPS = re.compile(r"(?i)^\W*(?:skip|pass|skip it|skip this|skip that|next question)\W*$")


def declines(text: str) -> bool:
    """Whether a message declines to answer: a refusal, a shrug, or only a word that skips the question
    ("skip"): it gives no free-text value, whatever words of it a model rewrites."""
    text = (text or "").strip()
    return bool(_DECLINES.search(text)) or bool(_SKIPS.match(text))


# the user tells of something they already did: "I booked it last week", "we've already paid", "I ordered it"
_DONE = re.compile(r"(?i)\b(?:i|we)(?:\s+have|'ve|\s+had|'d)?(?:\s+already)?\s+(?:booked|bought|ordered|reserved|"
                   r"purchased|paid(?:\s+for)?|made|placed|arranged)\b")


def describes_done(text: str) -> bool:
    """Whether the message tells of something the user already did ("I booked it last week, it's the one
    to Mull"): the values in it describe that existing thing (a booking, an order), not a new request."""
    return bool(_DONE.search(text or ""))


# what a loss or some damage befell, as the user tells it: "took the TV and a laptop", "smashed my windscreen"
_AFFECTED = re.compile(r"(?i)\b(?:took|stole|damaged|broke|destroyed|smashed|ruined|cracked|burned|burnt|flooded|"
                       r"scratched|dented|lost)\s+((?:the|my|our|a|an|his|her|their|both|some|all)\b.+?)"
                       r"(?=\s*[,.;!?]|\s+(?:but|while|when|because|before|after|during|last|yesterday|today|"
                       r"and\s+(?:then|also|they|he|she|it|we|i)\b)|\s*$)")
# a text field that holds what was damaged, lost or stolen (damaged_items, stolen_property, lost_items)
AFFECTED_FIELD = re.compile(r"(?i)damag|stolen|lost|broken|belongings|(?:^|_)items?(?:_|$)")


def things_affected(text: str) -> str | None:
    """The things a loss or some damage befell, in the user's words ("Someone forced the back door and
    took the TV and a laptop" -> "the TV and a laptop"); None when the message names one in no such way
    or several times."""
    found = [m.group(1).strip() for m in _AFFECTED.finditer(text or "")]
    return found[0] if len(found) == 1 else None


def no_answer(text: str) -> bool:
    """Whether a message is no value for a text field: a question, a refusal, a skip or a shrug."""
    text = (text or "").strip()
    return not text or text.endswith("?") or bool(_ASKS.match(text)) or declines(text)


def stay_days(text: str) -> int | None:
    """The days a length of stay says ("for 2 nights" 2, "for a week" 7), or None."""
    found = next((m for m in STAY_LENGTH.finditer(text or "") if m.group(0)[:3].lower() == "for"), None)
    if found is None:
        return None
    said = found.group(1).lower()
    count = int(said) if said.isdigit() else _STAY_COUNTS[said]
    return count * 7 if found.group(2).lower() == "week" else count


def _values(text: str, kind: str, now: datetime | None) -> list[Any]:
    if kind == "email":
        return EMAIL.findall(text)
    if kind == "phone":
        return _phones(text)
    if kind in ("number", "integer"):
        return _numbers(text, integer=kind == "integer")
    if kind == "boolean":
        answer = _yes_no(text)
        return [] if answer is None else [answer]
    if kind in ("date", "datetime"):
        return _dates(text, now, with_time=kind == "datetime")
    return []


def _phones(text: str) -> list[str]:
    import phonenumbers

    out = []
    for match in phonenumbers.PhoneNumberMatcher(text, "US"):
        out.append(phonenumbers.format_number(match.number, phonenumbers.PhoneNumberFormat.E164))
    return out


def _without_contacts(text: str) -> str:
    """The text without its e-mail addresses and phone numbers (a phone number is no count of anything)."""
    text = EMAIL.sub(" ", text)
    if len(re.findall(r"\d", text)) >= 7:
        import phonenumbers

        for match in phonenumbers.PhoneNumberMatcher(text, "US"):
            text = text.replace(match.raw_string, " ")
    return text


def _numbers(text: str, integer: bool) -> list[int | float]:
    without_dates = _without_contacts(text)
    out: list[int | float] = []
    for raw in NUMBER.findall(without_dates):
        value = float(raw.replace(",", "."))
        out.append(int(value) if value.is_integer() or integer else value)
    if not out:
        for raw in NUMBER.findall(digits_for_words(without_dates)):
            value = float(raw.replace(",", "."))
            out.append(int(value) if value.is_integer() or integer else value)
    return out


def digits_for_words(text: str) -> str:
    """The text with its numbers written in words as digits ("fifty pounds" -> "50 pounds", "a table
    for two" -> "a table for 2"), by text2num."""
    if not re.search(r"[A-Za-z]", text):
        return text
    from text_to_num import alpha2digit

    # "which one", "the blue one", "one of them": a pronoun, not the number 1
    kept = _PRONOUN_ONE.sub(lambda m: m.group(0)[:-3] + "\x00", text)
    try:
        return alpha2digit(kept, "en", threshold=0).replace("\x00", "one")
    except Exception:  # noqa: BLE001 - an odd text gives no number, not an error
        return text


_PRONOUN_ONE = re.compile(r"(?i)\b(?:which|this|that|the|any|each|every|no|another|other|same|last|next|right|"
                          r"wrong|new|old|[a-z]+(?:er|est)|blue|red|green|black|white|big|small|cheap)\s+one\b|"
                          r"\bone(?=\s+(?:of|more|another|day|thing)\b)")


def _yes_no(text: str) -> bool | None:
    words = re.findall(r"[a-z]+", text.lower())
    if not words:
        return None
    if words[0] in YES or " ".join(words[:2]) in YES:
        return True
    if words[0] in NO or " ".join(words[:2]) in NO:
        return False
    return None


# the words of a yes/no field's name that say how it relates to the thing it is about, not the thing
_RELATION_WORDS = frozenset("with has have need needs want wants is are bring brings bringing take takes taking "
                            "include includes uses use own owns any extra add".split())
_VEHICLES = frozenset("car cars vehicle vehicles van vans motorbike motorcycle".split())
# travelling on foot: no vehicle ("we're travelling on foot", "as foot passengers", "walking on")
_ON_FOOT = re.compile(r"(?i)\bon\s+foot\b|\bfoot\s+passengers?\b|\bwalk(?:ing)?\s+on\b")


def boolean_for(text: str, name: str = "") -> bool | None:
    """A yes or no for the yes/no field `name`: a message that opens with one ("yes please", "no"), or
    that says it of the thing the field's name is about: "no car", "without a car", "not bringing the
    car" (False), "with a car", "bringing our car" (True) for with_car; travelling "on foot" is no
    vehicle. None when the message says neither."""
    answer = _yes_no(text)
    if answer is not None:
        return answer
    things = [w for w in re.split(r"[_\W]+", name.lower()) if len(w) > 2 and w not in _RELATION_WORDS]
    if not things:
        return None
    lowered = (text or "").lower().replace("’", "'")
    for thing in things:
        noun = rf"{re.escape(thing)}s?\b"
        det = r"(?:(?:a|an|the|my|our|your|any)\s+)?"
        if re.search(rf"\b(?:no|without|zero)\s+{det}{noun}|(?:\bnot|n't|\bnever)\s+(?:\w+\s+){{0,2}}{det}{noun}",
                     lowered):
            return False
        if thing in _VEHICLES and _ON_FOOT.search(lowered):
            return False
        if re.search(rf"\b(?:with|bringing|taking|plus|and)\s+{det}{noun}", lowered):
            return True
    return None


def _date_settings(now: datetime | None) -> dict:
    settings = {"PREFER_DATES_FROM": "future", "RETURN_AS_TIMEZONE_AWARE": False}
    if now is not None:
        settings["RELATIVE_BASE"] = now.replace(tzinfo=None)
    return settings


def _found_dates(text: str, settings: dict) -> list:
    """(phrase, datetime) for each date the message names; none when the date library fails on odd text."""
    from dateparser.search import search_dates

    try:
        return search_dates(text, languages=["en"], settings=settings) or []
    except Exception:  # noqa: BLE001 - a date library failing on odd text gives no date, not an error
        return []


# what makes a phrase name a day (not only a time of day, "at 3 in the morning", "in 2 hours")
_DAY_WORDS = re.compile(r"(?i)\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|mon|tue|wed|thu|fri|sat|sun)[a-z]*\b|"
                        r"\b(?:today|tomorrow|yesterday|tonight|day|days|week|weeks|month|months|year|years|weekend)\b|"
                        r"\d{1,4}[/.-]\d{1,2}|\b\d{4}\b|\b\d{1,2}(?:st|nd|rd|th)\b")


_MONTH_ONLY = re.compile(r"(?i)^\W*(?:in|during|for|of|by|this|next|last|early|late|mid|the)?\s*"
                         r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\W*(?:\d{4})?\W*$")
_TWO_DAYS = re.compile(r"(?i)\b(?:the\s+)?day\s+(after\s+tomorrow|before\s+yesterday)\b")
# a date field about something that already happened: a day without a year is the last one, not the next
PAST_FIELD = re.compile(r"(?i)incident|happen|occur|birth|dob|born|purchase|bought|issued|lost|stolen|since|last_|"
                        r"accident|loss|damage|delivered_on|received")


def names_a_day(phrase: str, value: datetime, month_ok: bool = False) -> bool:
    """Whether a phrase the date library read names a day: a day of a month, a weekday, a relative day,
    a written date; not a time alone ("3pm"), a month alone ("in December", unless `month_ok`), nor a
    number read as a far-off year ("ends in 4471")."""
    if not 1900 <= value.year <= 2200 or not _DAY_WORDS.search(phrase):
        return False
    if month_ok:
        return True
    return not _MONTH_ONLY.match(phrase) and not only_a_period(phrase)


# the words that name one day (a weekday, a day of a month, a written date, a day named from today)
_ONE_DAY_WORDS = re.compile(r"(?i)\b(?:mon|tues?|wed|thu|thurs?|fri|sat|sun|(?:mon|tues|wednes|thurs|fri|satur|sun)day)\b|\b(?:today|tomorrow|yesterday|tonight)\b|"
                            r"\d{1,4}[/.-]\d{1,2}|\b\d{1,2}(?:st|nd|rd|th)?\b")
# a number of periods counted from today: "in 3 days", "two weeks from now", "a week ago"
_COUNTED_FROM_TODAY = re.compile(r"(?i)\bin\s+(?:\d+|a|an)\s+(?:day|week|month|year)s?\b|"
                                 r"\b(?:\d+|a|an)\s+(?:day|week|month|year)s?\s+(?:from\s+(?:now|today)|later|ago|"
                                 r"after|before)\b")


def only_a_period(phrase: str) -> bool:
    """Whether a date phrase names only a period, no one day: a length ("twelve years", "2 weeks") or a
    vague span ("next month", "this year", "next week"). A day counted from today ("in 3 days", "two
    weeks from now") and any phrase with a weekday, a day of a month or a written date name one day."""
    written = digits_for_words(phrase)
    if _COUNTED_FROM_TODAY.search(written):
        return False
    if re.search(r"(?i)\b(?:day|days|week|weeks|month|months|year|years|weekend)\b", written) is None:
        return False  # no period word at all: a month name, a weekday (decided by the other checks)
    return _ONE_DAY_WORDS.search(re.sub(r"(?i)\b\d+\s+(?:day|week|month|year)s?\b", " ", written)) is None


def _relative_days(text: str, now: datetime | None) -> str:
    """"The day after tomorrow" / "the day before yesterday" written as the date (the date library reads
    only "tomorrow" in them)."""
    if now is None or not _TWO_DAYS.search(text):
        return text
    from datetime import timedelta

    def day(match: re.Match) -> str:
        shift = 2 if match.group(1).lower().startswith("after") else -2
        return (now + timedelta(days=shift)).date().isoformat()

    return _TWO_DAYS.sub(day, text)


def _dates(text: str, now: datetime | None, with_time: bool, past: bool = False) -> list[str]:
    settings = _date_settings(now)
    if past:
        settings["PREFER_DATES_FROM"] = "past"
    found = _found_dates(_relative_days(text, now), settings)
    out = []
    for phrase, value in found:
        if not re.search(r"[A-Za-z]{3,}|\d", phrase) or phrase.strip().isdigit() or not names_a_day(phrase, value):
            continue  # a bare number is a number, not a day of the month; a time alone is no day
        out.append(value.isoformat(timespec="minutes") if with_time else value.date().isoformat())
    return out


def _date_phrases(text: str, now: datetime | None) -> list[str]:
    """The parts of the message that name a day with a month or weekday ("December 5", "5th of May")."""
    if not re.search(r"(?i)\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b|\d{4}-\d{2}-\d{2}|"
                     r"\d{1,2}/\d{1,2}", text):
        return []
    found = _found_dates(text, _date_settings(now))
    return [phrase for phrase, _ in found if re.search(r"\d", phrase) and not phrase.strip().isdigit()]


def _by_regex(text: str, pattern: str) -> str | None:
    """The first part of the message that the field's validation pattern accepts (its ^ and $ let go).
    Where the pattern was anchored the part must not go on in the message: "A-1001" gives nothing for
    ^A-\\d{3}$, not "A-100"."""
    starts, ends = pattern.startswith("^"), pattern.endswith("$") and not pattern.endswith("\\$")
    body = pattern[1 if starts else 0:len(pattern) - 1 if ends else len(pattern)]
    try:
        compiled = re.compile(body, re.IGNORECASE)
    except re.error:
        return None
    for match in compiled.finditer(text):
        before = text[match.start() - 1] if match.start() > 0 else ""
        after = text[match.end()] if match.end() < len(text) else ""
        if (starts and _word_char(before)) or (ends and _word_char(after)):
            continue
        return match.group(0)
    return None


def _word_char(char: str) -> bool:
    return bool(char) and (char.isalnum() or char == "_")


def _choice(text: str, options: list[str], synonyms: dict[str, list[str]] | None = None) -> str | None:
    """The one option the message names (or whose synonym it uses), not counting one it rules out
    ("Porto, not Lisbon"; "it wasn't a fire")."""
    def said(phrase: str) -> bool:
        flat = re.sub(r"[\W_]+", " ", str(phrase).lower()).strip()
        return bool(flat) and said_as_meant(flat, text, choosing=True)

    hits = [o for o in options if said(o)]
    if not hits and synonyms:  # no option named: one whose phrases the message uses
        hits = [o for o in options if any(said(p) for p in synonyms.get(str(o), []) if str(p).strip())]
    return hits[0] if len(hits) == 1 else None


# a mention the user rules out: "not Paris", "it wasn't a fire", "anything but the blue one"
RULED_OUT = re.compile(r"(?i)(?:\b(?:not|no|never|except|but not|rather than|instead of|other than|anything but)|n't)"
                        r"(?:\s+(?:\w+)){0,2}\s*$")

def said_as_meant(flat: str, text: str, choosing: bool = False) -> bool:
    """`flat` (a value, lowercase words) is in the text, once at least as the user's answer: not only
    where they rule it out ("not Paris", "it wasn't a fire") or, for a listed value being chosen
    (`choosing`), ask about it ("How long is the crossing to Mull?")."""
    pattern = r"\W+".join(re.escape(w) for w in flat.split())
    for sentence in re.split(r"(?<=[.!?])\s+", text.replace("’", "'")):
        if choosing and sentence.rstrip().endswith("?") and WH_QUESTION.match(sentence):
            continue  # a listed value asked about is not chosen (an order number in a question is given)
        said = re.sub(r"[^\w']+|_", " ", sentence.lower())
        for found in re.finditer(rf"(?<!\w){pattern}(?!\w)", said):
            if not RULED_OUT.search(said[:found.start()]):
                return True
    return False


WH_QUESTION = re.compile(r"(?i)\s*(?:and\s+|so\s+|but\s+)?(?:how|what|when|where|which|why|who|whose)\b")




# ---- corrections and typed validation (ABL GATHER: CORRECTIONS, validate) ----------------------------

# Words that say the user changes something already given: "actually 4 guests", "no, make it Friday",
# "sorry, I meant Rome", "change the destination to Rome", "4 guests, not 3".
CORRECTION_CUE = re.compile(
    r"\b(actually|instead|correction|i\s+meant|i\s+mean|change|changed|make\s+it|make\s+that|rather|not|"
    r"sorry|wait|oops|no)\b", re.IGNORECASE)


def says_correction(text: str) -> bool:
    """Whether the message is worded as a correction of something said before."""
    return bool(CORRECTION_CUE.search(text or ""))


def named_fields(text: str, names: list[str]) -> list[str]:
    """The fields the message names ("the check-out date", "guests"): every part of the field's name
    (check_out, checkout, number_of_guests -> guests) appears in it."""
    words = set(re.findall(r"[a-z]+", (text or "").lower().replace("-", "")))
    words |= {w[:-1] for w in words if w.endswith("s")}
    out = []
    for name in names:
        parts = [p for p in name.lower().split("_") if p and p not in ("of", "number", "the", "date")]
        if parts and (all(p in words or p.rstrip("s") in words for p in parts) or "".join(parts) in words):
            out.append(name)
    return out


_RANGE_RULE = re.compile(r"\s*(-?\d+(?:\.\d+)?)\s*(?:-|\.\.|to)\s*(-?\d+(?:\.\d+)?)\s*")


def check_value(kind: str, rule: str, value: Any, options: list[str] | None = None) -> tuple[bool, Any]:
    """A `pattern`, `range` or `enum` validation of a gathered value: whether it passes, and the value
    as kept (an enum answer in the case its options are written in; a number for a range)."""
    if value is None:
        return False, value
    if kind == "pattern":
        try:
            return re.search(rule, str(value)) is not None, value
        except re.error:
            return False, value
    if kind == "range":
        bounds = _RANGE_RULE.fullmatch(rule or "")
        try:
            number = float(value) if not isinstance(value, bool) else None
        except (TypeError, ValueError):
            number = None
        if bounds is None or number is None:
            return False, value
        low, high = float(bounds.group(1)), float(bounds.group(2))
        kept = int(number) if number.is_integer() else number
        return low <= number <= high, kept
    if kind == "enum":
        allowed = options or [part.strip() for part in (rule or "").split(",") if part.strip()]
        for option in allowed:
            if str(option).casefold() == str(value).strip().casefold():
                return True, option
        return False, value
    return True, value


# ---- an untyped argument read without a model (ADL flow args: issue 25) -----------------------------

# What the words of an argument's name say it holds (`phone`, `contact_email`, `drop_off_day`,
# `number_of_guests`, `ticket_id`): the kind its value is read as. A name that says none stays a text.
_NAME_KINDS = (
    ("phone", {"phone", "mobile", "telephone", "cell", "tel"}),
    ("email", {"email", "mail", "e_mail"}),
    ("date", {"date", "day", "birthday", "dob"}),
    ("number", {"count", "amount", "quantity", "qty", "age", "guests", "people", "persons", "nights",
                "tickets", "seats", "budget", "price", "total", "size", "copies", "weeks", "months", "years"}),
    ("identifier", {"id", "number", "code", "reference", "ref", "no"}),
)


def kind_of_name(name: str) -> str | None:
    """The kind of value an argument's name says it holds: phone, email, date, number, identifier (a
    code with a digit in it: SC-THU-170, 12345), or None (a text). `number_of_guests` and `num_items`
    count something; `order_number` names one."""
    words = [w for w in re.split(r"[_\W]+", name.lower()) if w]
    if not words:
        return None
    if words[0] in ("number", "num") and len(words) > 1:
        return "number"
    for kind, cues in _NAME_KINDS:
        if any(w in cues for w in words) or name.lower().replace("-", "_") in cues:
            return kind
    return None


_IDENTIFIER = re.compile(r"(?<![\w-])(?=[\w-]*\d)[A-Za-z0-9][A-Za-z0-9-]{2,}(?![\w-])")


def spans(text: str, kind: str, now: datetime | None = None) -> list[Any]:
    """The values of one kind the message gives, as the user wrote them (a phone number or a day is kept
    in the user's words, "555 123 4567", "Thursday"; a number as a number), in the message's order."""
    if kind == "phone":
        import phonenumbers

        matcher = phonenumbers.PhoneNumberMatcher(text, "US", leniency=phonenumbers.Leniency.POSSIBLE)
        return [m.raw_string for m in matcher]
    if kind == "email":
        return EMAIL.findall(text)
    if kind in ("number", "integer"):
        return _numbers(text, integer=kind == "integer")
    if kind in ("date", "datetime"):
        return _date_words(text, now)
    if kind == "identifier":
        without = EMAIL.sub(" ", text)
        return [m.group(0) for m in _IDENTIFIER.finditer(without)]
    return []


_NOT_A_DAY = {"one", "a", "an", "the", "on", "at", "by", "for", "it", "is", "ok", "okay", "then", "please", "so"}


def _date_words(text: str, now: datetime | None) -> list[str]:
    settings = _date_settings(now)
    found = _found_dates(text, settings)
    from dateparser import parse

    out = []
    for phrase, value in found:
        phrase = phrase.strip()
        if not re.search(r"[A-Za-z]{3,}|\d", phrase) or phrase.isdigit() or phrase.lower() in ("now", "on", "at", "in"):
            continue
        if not names_a_day(phrase, value):
            continue  # a date argument takes one day: not "twelve years", "next month", "in December", "3pm"
        words = phrase.split()
        while len(words) > 1 and words[0].lower() in _NOT_A_DAY:  # "one on Thursday" -> "Thursday"
            try:
                shorter = parse(" ".join(words[1:]), languages=["en"], settings=settings)
            except Exception:  # noqa: BLE001 - see _dates
                shorter = None
            if shorter is None:
                break
            words = words[1:]
        out.append(" ".join(words))
    return out


_LIST = re.compile(r"((?:[\w'-]+(?: [\w'-]+){0,2}, )+[\w'-]+(?: [\w'-]+){0,2},? (?:or|and) [\w'-]+(?: [\w'-]+){0,2})")


def listed_values(text: str) -> list[str]:
    """The choices a sentence lists ("road, mountain, city or e-bike"), each of at most three words; the
    list after a colon when there is one ("What kind of bike is it: road, mountain or city?")."""
    tail = text.rsplit(":", 1)[1] if ":" in text else text
    found = _LIST.search(tail)
    if found is None:
        return []
    parts = [p.strip() for p in re.split(r",\s*(?:or\s+|and\s+)?|\s+(?:or|and)\s+", found.group(1)) if p.strip()]
    if len(parts) > 1:  # "one of pizza, pasta and salad": the first choice is as long as the others
        longest = max(len(p.split()) for p in parts[1:])
        parts[0] = " ".join(parts[0].split()[-longest:])
    return parts


def value_named(text: str, name: str) -> str | None:
    """The value the message gives by the argument's name: "genre=mystery", "my name is Marta Ruiz"
    (customer_name), "the colour: blue". At most four words, up to a comma, a full stop or an `and`."""
    words = [w for w in re.split(r"[_\W]+", name.lower()) if w]
    if not words:
        return None
    for said in (r"[\s_-]*".join(map(re.escape, words)), re.escape(words[-1])):
        found = re.search(rf"(?i)(?<!\w){said}\s*(?:=|:|\bis\b|\bwill be\b|\bshould be\b)\s*"
                          r"([^\s,.;!?=:][^,.;!?=:]*)", text)
        if found is None:
            continue
        value = re.split(r"(?i)\s+(?:and|but|please|thanks|thank you)\b", found.group(1))[0].strip(" '\"")
        if value and len(value.split()) <= 4:
            return value
    return None


_LEAD_INS = re.compile(r"^(?:(?:i'?d like|i would like|i want|i'?m looking|i need)\s+(?:to\s+)?"
                       r"(?:go|stay|travel|book)?\s*(?:to|in|at)?|(?:it'?s|it is|that'?s|my \w+ is|to|in|at)\b|"
                       # the name a booking is put under: "put it under Morag MacLeod", "in the name of Ana Costa"
                       r"(?:(?:please\s+)?(?:put|book|make|have)\s+(?:it|that|this|the\s+booking|them|us)\s+)?"
                       r"(?:under|in)\s+the\s+name\s+(?:of\s+)?|(?:please\s+)?(?:put|book|make|have)\s+"
                       r"(?:it|that|this|the\s+booking|them|us)\s+(?:under|for)\b|the\s+name\s+is\b)\s*",
                       re.IGNORECASE)


def short_answer(text: str, max_words: int = 6) -> str | None:
    """A short answer as the value it gives, without its lead-in and politeness ("to Lisbon please" ->
    Lisbon, "it's Marta Ruiz" -> Marta Ruiz); None when nothing is left or it is longer than `max_words`."""
    text = _LEAD_INS.sub("", (text or "").strip())
    text = re.sub(r"\s*(?:,?\s*please|,?\s*thanks?(?: you)?)?[.!?]*$", "", text, flags=re.IGNORECASE).strip()
    if not text or len(text.split()) > max_words:
        return None
    return text


def named_option(text: str, options: list[str]) -> str | None:
    """The one option the message names in so many words (None: none, or more than one)."""
    return _choice(text, options)
