"""The one registry of built-in expression functions: names, signatures, parse-time checks and implementations.

The parser checks calls against it (known name, number of arguments, literal arguments such as
a regex pattern); the evaluator runs calls through it. Names are looked up case-insensitively, so
ADL's `upper(x)` and ABL's `UPPER(x)` are the same function; a call is stored in the IR under the
function's registered name.

Numbers: arithmetic functions accept numbers and numeric text ("42"); True/False are not numbers.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation, localcontext
from typing import TYPE_CHECKING, Any

from frontdesk.expr.values import (
    EvalError,
    arith,
    format_value,
    is_number,
    numeric_text,
    to_number,
    values_equal,
)

if TYPE_CHECKING:  # pragma: no cover
    from frontdesk.expr.evaluator import EvalEnv

MAX_TEXT_RESULT = 100_000  # longest text REPEAT / PAD_START / PAD_END may build
MAX_ID_LENGTH = 64
DEFAULT_ID_LENGTH = 12
ID_ALPHABET = string.ascii_uppercase + string.digits


@dataclass(frozen=True)
class Param:
    """One parameter: `type` is informative ("any", "text", "number", "integer", "list", "object", "boolean")."""

    name: str
    type: str = "any"
    optional: bool = False
    variadic: bool = False
    # Checks a literal argument at parse time: returns an error message, or None when it is fine.
    check: Callable[[Any], str | None] | None = None


@dataclass(frozen=True)
class Function:
    name: str
    params: tuple[Param, ...]
    returns: str
    impl: Callable[..., Any]
    doc: str = ""
    uses_env: bool = False  # impl takes the EvalEnv as its first argument (clock, randomness)
    aliases: tuple[str, ...] = field(default=())

    @property
    def min_args(self) -> int:
        return sum(1 for p in self.params if not p.optional and not p.variadic)

    @property
    def max_args(self) -> int | None:
        return None if any(p.variadic for p in self.params) else len(self.params)

    def param_list(self) -> str:
        """The parameters as written in messages: `pattern, value`, `n, decimals?`, `...objs`."""
        return ", ".join(("..." if p.variadic else "") + p.name + ("?" if p.optional else "") for p in self.params)

    def signature(self) -> str:
        return f"{self.name}({self.param_list()}) -> {self.returns}"

    def arity_error(self, given: int) -> str | None:
        """The message for a call with `given` arguments, or None when the count is right."""
        low, high = self.min_args, self.max_args
        if low <= given and (high is None or given <= high):
            return None
        if high is None:
            count = f"at least {low} argument{'s' if low != 1 else ''}"
        elif low == high:
            count = f"{low} argument{'s' if low != 1 else ''}"
        else:
            count = f"{low} to {high} arguments"
        listed = f" ({self.param_list()})" if self.params else ""
        return f"{self.name}() takes {count}{listed}, but {given} given"

    def param_at(self, index: int) -> Param | None:
        if index < len(self.params):
            return self.params[index]
        if self.params and self.params[-1].variadic:
            return self.params[-1]
        return None


_REGISTRY: dict[str, Function] = {}


def register(fn: Function) -> Function:
    for key in (fn.name, *fn.aliases):
        if key.lower() in _REGISTRY:
            raise ValueError(f"function {key!r} is registered twice")
        _REGISTRY[key.lower()] = fn
    return fn


def lookup(name: str) -> Function | None:
    """The function called `name` (any letter case), or None."""
    return _REGISTRY.get(name.lower())


def function_names() -> list[str]:
    """Every registered name as written in the registry, sorted case-insensitively."""
    names = {fn.name for fn in _REGISTRY.values()} | {a for fn in _REGISTRY.values() for a in fn.aliases}
    return sorted(names, key=str.lower)


def call(name: str, args: list[Any], env: EvalEnv) -> Any:
    """Run the function `name` on already evaluated arguments."""
    fn = lookup(name)
    if fn is None:
        raise EvalError(f"unknown function {name!r}")
    problem = fn.arity_error(len(args))
    if problem is not None:
        raise EvalError(problem)
    if fn.uses_env:
        return fn.impl(env, *args)
    return fn.impl(*args)


def _fn(name: str, params: list[Param], returns: str, doc: str = "", uses_env: bool = False,
        aliases: tuple[str, ...] = ()) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def wrap(impl: Callable[..., Any]) -> Callable[..., Any]:
        register(Function(name, tuple(params), returns, impl, doc, uses_env, aliases))
        return impl

    return wrap


# ---------------------------------------------------------------------------
# Literal checks (parse time)
# ---------------------------------------------------------------------------


def _check_regex(value: Any) -> str | None:
    if not isinstance(value, str):
        return "must be text in quotes"
    try:
        re.compile(value)
    except re.error as exc:
        return f"invalid regular expression: {exc}"
    return None


def _check_whole(low: int, high: int | None = None) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            return "must be a whole number"
        if value < low or (high is not None and value > high):
            return f"must be between {low} and {high}" if high is not None else f"must be at least {low}"
        return None

    return check


_MASK_PATTERN = re.compile(r"(?:last|first)(\d+)|(\d+)\*(\d+)", re.IGNORECASE)


def _check_mask(value: Any) -> str | None:
    if not isinstance(value, str) or not _MASK_PATTERN.fullmatch(value.strip()):
        return 'must be "lastN", "firstN" or "N*N" (e.g. "last4", "4*4")'
    return None


def _check_text(value: Any) -> str | None:
    return None if value is None or isinstance(value, str) else "must be text in quotes"


def _check_currency(value: Any) -> str | None:
    if not isinstance(value, str):
        return "must be text in quotes"
    try:
        from babel.numbers import list_currencies
    except ImportError:  # pragma: no cover (checked again when the call runs)
        return None
    if value.strip().upper() not in list_currencies():
        return "must be an ISO 4217 currency code such as USD or EUR"
    return None


def _check_locale(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        return "must be text in quotes"
    try:
        _babel_locale(value, "FORMAT_CURRENCY")
    except EvalError:
        return "must be a locale such as 'en_US' or 'de-DE'"
    return None


# ---------------------------------------------------------------------------
# Shared helpers
# ---------------------------------------------------------------------------


def _text(value: Any) -> str:
    return value if isinstance(value, str) else format_value(value)


def _whole(value: Any, fn: str, what: str) -> int:
    number = to_number(value)
    if number is None or isinstance(number, bool) or not math.isfinite(number) or int(number) != number:
        raise EvalError(f"{fn}() needs a whole number for {what}, not {format_value(value)!r}")
    return int(number)


def _number(value: Any, fn: str) -> int | float:
    number = to_number(value)
    if number is None:
        raise EvalError(f"{fn}() needs a number, not {format_value(value)!r}" if value is not None
                        else f"{fn}() needs a number, but the value is not set")
    return number


def _list(value: Any, fn: str) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    raise EvalError(f"{fn}() needs a list, not {format_value(value)!r}")


def _round_half_up(number: float, places: int, fn: str) -> Decimal:
    """`number` rounded half away from zero to `places` decimals, as written in decimal (so 2.675 -> 2.68),
    with enough precision for any float (1e300 rounds to itself instead of failing)."""
    try:
        exact = Decimal(str(number))
        context = Context(prec=max(28, exact.adjusted() + places + 5))
        return exact.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP, context=context)
    except (InvalidOperation, ValueError):  # infinity, NaN, an int too long to write out
        raise EvalError(f"{fn}() cannot round {format_value(number)[:40]!r}") from None


def _capped(text: str, fn: str) -> str:
    if len(text) > MAX_TEXT_RESULT:
        raise EvalError(f"{fn}() would build text longer than {MAX_TEXT_RESULT} characters")
    return text


# ---------------------------------------------------------------------------
# The functions ADL has always had (behaviour kept exactly)
# ---------------------------------------------------------------------------


def _regex(kind: str) -> Callable[[Any, Any], bool]:
    def run(pattern: Any, value: Any) -> bool:
        if not isinstance(pattern, str):
            raise EvalError(f"the pattern of re.{kind}() must be text, got {format_value(pattern)!r}")
        if value is None:
            return False
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise EvalError(f"invalid regular expression {pattern!r}: {exc}") from None
        return getattr(compiled, kind)(_text(value)) is not None

    return run


for _kind in ("match", "search", "fullmatch"):
    register(Function(
        f"re.{_kind}",
        (Param("pattern", "text", check=_check_regex), Param("value", "text")),
        "boolean",
        _regex(_kind),
        f"whether the regular expression matches the text (Python re.{_kind}); None never matches",
    ))


@_fn("len", [Param("value")], "integer", "the length of text, a list or a mapping; 0 for None",
     aliases=("LENGTH",))
def _len(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, (str, list, tuple, dict, set, frozenset)):
        return len(value)
    raise EvalError(f"len() needs text, a list or a dict, not {format_value(value)!r}")


@_fn("lower", [Param("value", "text")], "text", "the text in lower case; None stays None")
def _lower(value: Any) -> str | None:
    return None if value is None else format_value(value).lower()


@_fn("upper", [Param("value", "text")], "text", "the text in upper case; None stays None")
def _upper(value: Any) -> str | None:
    return None if value is None else format_value(value).upper()


register(Function("str", (Param("value"),), "text", format_value, "the value as plain text (None as \"\")"))


@_fn("int", [Param("value")], "integer", "a whole number from a number or numeric text (cut toward 0)")
def _int(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise EvalError(f"cannot convert {value!r} to a whole number")
        return int(value)
    if isinstance(value, str):
        number = numeric_text(value)
        if number is not None and math.isfinite(number):
            return int(number)
    raise EvalError(f"cannot convert {format_value(value)!r} to a whole number")


@_fn("float", [Param("value")], "number", "a number from a number or numeric text")
def _float(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, (bool, int, float)):
        return float(value)
    if isinstance(value, str):
        number = numeric_text(value)
        if number is not None:
            return float(number)
    raise EvalError(f"cannot convert {format_value(value)!r} to a number")


# ---------------------------------------------------------------------------
# ABL built-ins (abl-specification, section 8): math
# ---------------------------------------------------------------------------


@_fn("ADD", [Param("a", "number"), Param("b", "number")], "number", "a + b")
def _add(a: Any, b: Any) -> Any:
    return arith("+", _number(a, "ADD"), _number(b, "ADD"))


@_fn("SUB", [Param("a", "number"), Param("b", "number")], "number", "a - b")
def _sub(a: Any, b: Any) -> Any:
    return arith("-", _number(a, "SUB"), _number(b, "SUB"))


@_fn("MUL", [Param("a", "number"), Param("b", "number")], "number", "a * b")
def _mul(a: Any, b: Any) -> Any:
    return arith("*", _number(a, "MUL"), _number(b, "MUL"))


@_fn("DIV", [Param("a", "number"), Param("b", "number")], "number|null", "a / b; None when b is 0")
def _div(a: Any, b: Any) -> Any:
    left, right = _number(a, "DIV"), _number(b, "DIV")
    if right == 0:
        return None
    return arith("/", left, right)


@_fn("ROUND", [Param("n", "number"), Param("decimals", "integer", optional=True, check=_check_whole(0, 15))],
     "number", "n rounded half away from zero to `decimals` places (default 0, a whole number)")
def _round(n: Any, decimals: Any = None) -> int | float:
    number = _number(n, "ROUND")
    places = 0 if decimals is None else _whole(decimals, "ROUND", "decimals")
    if not 0 <= places <= 15:
        raise EvalError("ROUND() takes 0 to 15 decimals")
    if isinstance(number, float) and not math.isfinite(number):
        return number
    rounded = _round_half_up(number, places, "ROUND")
    return int(rounded) if places == 0 else float(rounded)


@_fn("ABS", [Param("n", "number")], "number", "the absolute value")
def _abs(n: Any) -> int | float:
    return abs(_number(n, "ABS"))


def _extreme(name: str, pick: Callable[..., Any]) -> Callable[[Any, Any], Any]:
    def run(a: Any, b: Any) -> Any:
        values = [_number(v, name) for v in (a, b) if v is not None]
        return pick(values) if values else None

    return run


register(Function("MIN", (Param("a", "number"), Param("b", "number")), "number", _extreme("MIN", min),
                  "the smaller of two numbers (an unset one is left out)"))
register(Function("MAX", (Param("a", "number"), Param("b", "number")), "number", _extreme("MAX", max),
                  "the larger of two numbers (an unset one is left out)"))


# ---------------------------------------------------------------------------
# Strings
# ---------------------------------------------------------------------------


@_fn("TRIM", [Param("s", "text")], "text", "the text without leading and trailing spaces")
def _trim(s: Any) -> str | None:
    return None if s is None else _text(s).strip()


@_fn("SUBSTRING", [Param("s", "text"), Param("start", "integer"), Param("end", "integer", optional=True)], "text",
     "the characters from start (0-based) up to end (exclusive); like JavaScript's substring")
def _substring(s: Any, start: Any, end: Any = None) -> str | None:
    if s is None:
        return None
    text = _text(s)
    lo = min(max(_whole(start, "SUBSTRING", "start"), 0), len(text))
    hi = len(text) if end is None else min(max(_whole(end, "SUBSTRING", "end"), 0), len(text))
    if lo > hi:
        lo, hi = hi, lo
    return text[lo:hi]


@_fn("REPLACE", [Param("s", "text"), Param("find", "text"), Param("replacement", "text")], "text",
     "the text with every occurrence of find replaced")
def _replace(s: Any, find: Any, replacement: Any) -> str | None:
    if s is None:
        return None
    needle = _text(find)
    if not needle:
        return _text(s)
    return _capped(_text(s).replace(needle, _text(replacement)), "REPLACE")


@_fn("SPLIT", [Param("s", "text"), Param("delimiter", "text")], "list",
     "the pieces of the text between delimiters (an empty delimiter splits into characters, an unset one "
     "gives the whole text as the one piece)")
def _split(s: Any, delimiter: Any) -> list[str]:
    if s is None:
        return []
    if delimiter is None:
        return [_text(s)]
    text, sep = _text(s), _text(delimiter)
    return list(text) if sep == "" else text.split(sep)


@_fn("JOIN", [Param("arr", "list"), Param("delimiter", "text")], "text", "the items as text, joined by delimiter")
def _join(arr: Any, delimiter: Any) -> str:
    return _text(delimiter).join(_text(item) for item in _list(arr, "JOIN"))


def _pad(name: str, at_start: bool) -> Callable[..., Any]:
    def run(s: Any, length: Any, char: Any = None) -> str:
        text = "" if s is None else _text(s)
        width = _whole(length, name, "length")
        if width > MAX_TEXT_RESULT:
            raise EvalError(f"{name}() would build text longer than {MAX_TEXT_RESULT} characters")
        fill = " " if char is None else _text(char)
        if width <= len(text) or not fill:
            return text
        need = width - len(text)
        padding = (fill * (need // len(fill) + 1))[:need]
        return padding + text if at_start else text + padding

    return run


for _name, _start in (("PAD_START", True), ("PAD_END", False)):
    register(Function(
        _name,
        (Param("s", "text"), Param("length", "integer", check=_check_whole(0, MAX_TEXT_RESULT)),
         Param("char", "text", optional=True, check=_check_text)),
        "text",
        _pad(_name, _start),
        f"the text padded at its {'start' if _start else 'end'} to length with char (default a space)",
    ))


@_fn("REPEAT", [Param("s", "text"), Param("count", "integer", check=_check_whole(0))], "text",
     "the text repeated count times")
def _repeat(s: Any, count: Any) -> str:
    times = _whole(count, "REPEAT", "count")
    if times < 0:
        raise EvalError("REPEAT() needs a count of 0 or more")
    text = "" if s is None else _text(s)
    if len(text) * times > MAX_TEXT_RESULT:
        raise EvalError(f"REPEAT() would build text longer than {MAX_TEXT_RESULT} characters")
    return text * times


# ---------------------------------------------------------------------------
# Formatting
# ---------------------------------------------------------------------------


@_fn("MASK", [Param("s", "text"), Param("pattern", "text", check=_check_mask),
              Param("char", "text", optional=True, check=_check_text)], "text",
     'the text with all but some characters hidden: "last4", "first4", "4*4" (start and end)')
def _mask(s: Any, pattern: Any, char: Any = None) -> str | None:
    if s is None:
        return None
    problem = _check_mask(pattern)
    if problem:
        raise EvalError(f"the pattern of MASK() {problem}")
    text = _text(s)
    cover = "*" if char is None or _text(char) == "" else _text(char)[0]
    found = _MASK_PATTERN.fullmatch(str(pattern).strip())
    assert found is not None
    if found.group(1) is not None:
        keep = int(found.group(1))
        if str(pattern).strip().lower().startswith("last"):
            head, tail = 0, keep
        else:
            head, tail = keep, 0
    else:
        head, tail = int(found.group(2)), int(found.group(3))
    if head + tail >= len(text):
        return text
    return text[:head] + cover * (len(text) - head - tail) + (text[len(text) - tail:] if tail else "")


DEFAULT_LOCALE = "en_US"
# Babel writes a no-break space (U+00A0) or a narrow one (U+202F) between digits and symbol; chat text and
# authored conditions use plain spaces, so FORMAT_CURRENCY does too.
_LOCALE_SPACES = str.maketrans({"\u00a0": " ", "\u202f": " ", "\u2009": " "})


def _babel_locale(locale: Any, fn: str) -> Any:
    """The babel Locale for "de_DE", "de-DE" or "de" (None is DEFAULT_LOCALE)."""
    try:
        from babel import Locale, UnknownLocaleError
    except ImportError:  # pragma: no cover (babel is a dependency of frontdesk)
        raise EvalError(f"{fn}() needs the 'babel' package for locale data") from None
    name = DEFAULT_LOCALE if locale is None else _text(locale).strip().replace("-", "_")
    try:
        return Locale.parse(name or DEFAULT_LOCALE)
    except (UnknownLocaleError, ValueError, TypeError):
        raise EvalError(f"{fn}(): unknown locale {_text(locale)[:40]!r} (write it like 'en_US' or 'de-DE')") from None


@_fn("FORMAT_CURRENCY", [Param("n", "number"), Param("currency", "text", check=_check_currency),
                         Param("locale", "text", optional=True, check=_check_locale)], "text",
     'the amount as money in the locale (default en_US), e.g. FORMAT_CURRENCY(1234.5, "USD") is "$1,234.50" '
     'and FORMAT_CURRENCY(1234.5, "EUR", "de_DE") is "1.234,50 €"; rounded half away from zero to the '
     "currency's digits")
def _format_currency(n: Any, currency: Any, locale: Any = None) -> str | None:
    if n is None:
        return None
    amount = _number(n, "FORMAT_CURRENCY")
    if isinstance(amount, float) and not math.isfinite(amount):
        raise EvalError(f"FORMAT_CURRENCY() cannot format {format_value(amount)!r}")
    where = _babel_locale(locale, "FORMAT_CURRENCY")
    from babel.numbers import format_currency, get_currency_precision, list_currencies

    code = "" if currency is None else _text(currency).strip().upper()
    if code not in list_currencies():
        raise EvalError(f"FORMAT_CURRENCY(): unknown currency {_text(currency)[:40]!r} "
                        "(use an ISO 4217 code such as USD or EUR)")
    rounded = _round_half_up(amount, get_currency_precision(code), "FORMAT_CURRENCY")
    if rounded == 0:
        rounded = abs(rounded)  # no "-$0.00"
    try:
        with localcontext(Context(prec=max(28, rounded.adjusted() + 10), rounding=ROUND_HALF_UP)):
            text = format_currency(rounded, code, locale=where)
    except (InvalidOperation, ValueError, ArithmeticError):
        raise EvalError(f"FORMAT_CURRENCY() cannot format {format_value(amount)[:40]!r}") from None
    return text.translate(_LOCALE_SPACES)


_DATE_TOKENS = re.compile(r"\[([^\]]*)\]|YYYY|YY|MMMM|MMM|MM|M|Do|DD|D|dddd|ddd|HH|H|hh|h|mm|ss|A|a|ZZ|Z")


def _as_datetime(value: Any, fn: str) -> tuple[datetime, bool]:
    """The moment a value names, and whether it is a calendar date only (which no time zone shifts)."""
    if isinstance(value, datetime):
        return value, False
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day), True
    if is_number(value):  # seconds since 1970 (JavaScript's milliseconds are too big to be plausible seconds)
        try:
            seconds = value / 1000 if abs(value) > 1e11 else value
            return datetime.fromtimestamp(seconds, tz=UTC), False
        except (OverflowError, OSError, ValueError):
            pass
    if isinstance(value, str):
        text = value.strip()
        try:
            day = date.fromisoformat(text)
            return datetime(day.year, day.month, day.day), True
        except ValueError:
            pass
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            return datetime.fromisoformat(text), False
        except ValueError:
            pass
    raise EvalError(f"{fn}() needs a date like 2024-05-31 or 2024-05-31T14:30:00, not {format_value(value)[:40]!r}")


def _offset(moment: datetime, sep: str) -> str:
    delta = moment.utcoffset() if moment.tzinfo is not None else None
    minutes = 0 if delta is None else int(delta.total_seconds() // 60)
    sign = "-" if minutes < 0 else "+"
    hours, mins = divmod(abs(minutes), 60)
    return f"{sign}{hours:02d}{sep}{mins:02d}"


def _in_zone(moment: datetime, tz: Any, fn: str) -> datetime:
    if tz is None:
        return moment
    name = _text(tz).strip()
    if name.upper() in ("UTC", "Z", "GMT"):
        zone: Any = UTC
    else:
        try:
            from zoneinfo import ZoneInfo, ZoneInfoNotFoundError
        except ImportError:  # pragma: no cover
            raise EvalError(f"{fn}(): time zones are not available here") from None
        try:
            zone = ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise EvalError(f"{fn}(): unknown time zone {name!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(zone)


_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


@_fn("FORMAT_DATE", [Param("d", "text"), Param("format", "text", check=_check_text),
                     Param("tz", "text", optional=True, check=_check_text)], "text",
     "the date written with tokens YYYY YY MMMM MMM MM M Do DD D dddd ddd HH H hh h mm ss A a Z ZZ ([text] is "
     "kept), in the time zone tz (a time without a zone is UTC; a date without a time is never shifted)")
def _format_date(d: Any, fmt: Any, tz: Any = None) -> str | None:
    if d is None:
        return None
    moment, date_only = _as_datetime(d, "FORMAT_DATE")
    if date_only:
        _in_zone(moment, tz, "FORMAT_DATE")  # still reject an unknown zone
    else:
        moment = _in_zone(moment, tz, "FORMAT_DATE")
    hour12 = moment.hour % 12 or 12

    def token(found: re.Match[str]) -> str:
        if found.group(1) is not None:
            return found.group(1)
        t = found.group(0)
        return {
            "YYYY": f"{moment.year:04d}", "YY": f"{moment.year % 100:02d}",
            "MMMM": _MONTHS[moment.month - 1], "MMM": _MONTHS[moment.month - 1][:3],
            "MM": f"{moment.month:02d}", "M": str(moment.month),
            "Do": _ordinal(moment.day) or "", "DD": f"{moment.day:02d}", "D": str(moment.day),
            "dddd": _DAYS[moment.weekday()], "ddd": _DAYS[moment.weekday()][:3],
            "HH": f"{moment.hour:02d}", "H": str(moment.hour),
            "hh": f"{hour12:02d}", "h": str(hour12),
            "mm": f"{moment.minute:02d}", "ss": f"{moment.second:02d}",
            "A": "AM" if moment.hour < 12 else "PM", "a": "am" if moment.hour < 12 else "pm",
            "Z": _offset(moment, ":"), "ZZ": _offset(moment, ""),
        }[t]

    return _DATE_TOKENS.sub(token, _text(fmt))


@_fn("ORDINAL", [Param("n", "integer")], "text", 'the number with its English ordinal suffix: 1st, 2nd, 3rd, 11th')
def _ordinal(n: Any) -> str | None:
    if n is None:
        return None
    number = _whole(n, "ORDINAL", "n")
    last_two = abs(number) % 100
    suffix = "th" if 11 <= last_two <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(abs(number) % 10, "th")
    return f"{number}{suffix}"


# ---------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------


register(Function("IS_ARRAY", (Param("x"),), "boolean", lambda x: isinstance(x, (list, tuple)),
                  "whether the value is a list"))
register(Function("IS_NUMBER", (Param("x"),), "boolean", is_number,
                  "whether the value is a number (numeric text is not; True/False are not)"))
register(Function("IS_STRING", (Param("x"),), "boolean", lambda x: isinstance(x, str), "whether the value is text"))


@_fn("TO_NUMBER", [Param("x")], "number|null", "the number a value spells (True is 1), or None")
def _to_number(x: Any) -> int | float | None:
    if isinstance(x, bool):
        return int(x)
    number = to_number(x)
    if number is None or (isinstance(number, float) and math.isnan(number)):
        return None
    return number


@_fn("TO_STRING", [Param("x")], "text",
     'the value as plain text: None as "", 3.0 as "3", true/false as ABL writes them, lists as "a, b"')
def _to_string(x: Any) -> str:
    if isinstance(x, bool):
        return "true" if x else "false"
    return format_value(x)


# ---------------------------------------------------------------------------
# Lists and mappings
# ---------------------------------------------------------------------------


def _find_index(arr: Any, fld: Any, value: Any, fn: str) -> int:
    key = _text(fld)
    for index, item in enumerate(_list(arr, fn)):
        if isinstance(item, dict) and key in item and values_equal(item[key], value):
            return index
    return -1


@_fn("ARRAY_FIND", [Param("arr", "list"), Param("field", "text"), Param("value")], "object|null",
     "the first item whose field equals value, or None")
def _array_find(arr: Any, fld: Any, value: Any) -> Any:
    index = _find_index(arr, fld, value, "ARRAY_FIND")
    return None if index < 0 else _list(arr, "ARRAY_FIND")[index]


@_fn("ARRAY_FIND_INDEX", [Param("arr", "list"), Param("field", "text"), Param("value")], "integer",
     "the position (0-based) of the first item whose field equals value, or -1")
def _array_find_index(arr: Any, fld: Any, value: Any) -> int:
    return _find_index(arr, fld, value, "ARRAY_FIND_INDEX")


@_fn("LIMIT", [Param("arr", "list"), Param("count", "integer", check=_check_whole(0))], "list",
     "the first count items (TRANSFORM's LIMIT stage)")
def _limit(arr: Any, count: Any) -> list[Any]:
    if count is None:
        return _list(arr, "LIMIT")
    keep = _whole(count, "LIMIT", "count")
    return _list(arr, "LIMIT")[: max(keep, 0)]


def _mapping(value: Any, fn: str) -> dict[Any, Any]:
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    raise EvalError(f"{fn}() needs a mapping, not {format_value(value)!r}")


register(Function("OBJECT_KEYS", (Param("obj", "object"),), "list",
                  lambda obj: list(_mapping(obj, "OBJECT_KEYS")), "the keys of a mapping"))
register(Function("OBJECT_VALUES", (Param("obj", "object"),), "list",
                  lambda obj: list(_mapping(obj, "OBJECT_VALUES").values()), "the values of a mapping"))


@_fn("OBJECT_MERGE", [Param("objs", "object", variadic=True)], "object",
     "one mapping with the entries of all (later values win; unset ones are skipped)")
def _object_merge(*objs: Any) -> dict[Any, Any]:
    merged: dict[Any, Any] = {}
    for obj in objs:
        merged.update(_mapping(obj, "OBJECT_MERGE"))
    return merged


# ---------------------------------------------------------------------------
# Utilities
# ---------------------------------------------------------------------------


@_fn("COALESCE", [Param("args", variadic=True)], "any", "the first value that is not None")
def _coalesce(*args: Any) -> Any:
    return next((a for a in args if a is not None), None)


@_fn("NOW", [], "text", "the current time as ISO 8601 text, from the evaluation's clock", uses_env=True)
def _now(env: EvalEnv) -> str:
    moment = env.clock()
    if moment.tzinfo is None:
        raise EvalError("the clock must give a time with a time zone")
    return moment.isoformat(timespec="seconds")


@_fn("UNIQUE_ID", [Param("length", "integer", optional=True, check=_check_whole(1, MAX_ID_LENGTH))], "text",
     f"a random ID of upper-case letters and digits (default {DEFAULT_ID_LENGTH} long)", uses_env=True)
def _unique_id(env: EvalEnv, length: Any = None) -> str:
    size = DEFAULT_ID_LENGTH if length is None else _whole(length, "UNIQUE_ID", "length")
    if not 1 <= size <= MAX_ID_LENGTH:
        raise EvalError(f"UNIQUE_ID() takes a length from 1 to {MAX_ID_LENGTH}")
    return "".join(env.random.choice(ID_ALPHABET) for _ in range(size))


# ---------------------------------------------------------------------------
# ABL's tests on text (abl-specification 3.14.3 and 3.14.5: `input.contains("change")`,
# `input matches /room\s*\d+/`, and the bare words `yes` / `no` of an ON_INPUT condition)
# ---------------------------------------------------------------------------


@_fn("CONTAINS", [Param("value"), Param("part")], "boolean",
     "whether text contains part (ignoring letter case), a list has part as an item, or a mapping "
     "has the key part; None contains nothing")
def _contains(value: Any, part: Any) -> bool:
    if value is None or part is None:
        return False
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(values_equal(item, part) for item in value)
    if isinstance(value, dict):
        return _text(part) in value
    return _text(part).casefold() in _text(value).casefold()


@_fn("MATCHES", [Param("value", "text"), Param("pattern", "text", check=_check_regex)], "boolean",
     "whether the regular expression is found in the text (Python re.search); None never matches. "
     "The ABL runtime keeps the groups of a successful match in the system variable `match`")
def _matches(value: Any, pattern: Any) -> bool:
    return _regex("search")(pattern, value)


_WORDS = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
_YES_STARTS = (("yes",), ("y",), ("yeah",), ("yep",), ("yup",), ("ya",), ("sure",), ("ok",), ("okay",),
               ("k",), ("correct",), ("right",), ("absolutely",), ("definitely",), ("certainly",), ("affirmative",),
               ("confirm",), ("confirmed",), ("agreed",), ("yes", "please"), ("please", "do"), ("go", "ahead"),
               ("of", "course"), ("sounds", "good"), ("that's", "right"), ("that", "is", "right"),
               ("do", "it"), ("proceed",))
_NO_STARTS = (("no",), ("n",), ("nope",), ("nah",), ("negative",), ("never",), ("not", "now"),
              ("not", "really"), ("don't",), ("do", "not"), ("cancel",), ("stop",), ("no", "thanks"))
_NEGATIONS = frozenset({"not", "don't", "no", "never", "cancel", "stop", "nope", "nah"})


def _words(value: Any) -> list[str]:
    return [w.casefold().replace("\u2019", "'") for w in _WORDS.findall(_text(value))] if value is not None else []


def _starts_with_any(words: list[str], starts: tuple[tuple[str, ...], ...]) -> bool:
    return any(tuple(words[: len(start)]) == start for start in starts)


@_fn("SAYS_YES", [Param("text", "text")], "boolean",
     'whether the message starts with a yes ("yes", "yeah", "sure", "ok", "go ahead", ...) and says '
     "no word of refusal; a fixed word list, no model")
def _says_yes(text: Any) -> bool:
    words = _words(text)
    return bool(words) and _starts_with_any(words, _YES_STARTS) and not (_NEGATIONS & set(words))


@_fn("SAYS_NO", [Param("text", "text")], "boolean",
     'whether the message starts with a no ("no", "nope", "not now", "don\'t", "cancel", ...); a fixed '
     "word list, no model")
def _says_no(text: Any) -> bool:
    words = _words(text)
    return bool(words) and _starts_with_any(words, _NO_STARTS)
