"""The built-in functions of the ABL specification (section 8, MASK patterns of 8.9), run through the real ABL
expression parser and the evaluator: one or more cases per function, the edge cases the spec names (null
arguments, division by zero, empty arrays, bad types), locale formatting, and property tests."""

from __future__ import annotations

import math
import random
import re
from datetime import UTC, date, datetime
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontdesk.expr import (
    EvalEnv,
    EvalError,
    ExprSyntaxError,
    evaluate,
    lookup_function,
    parse_expression,
    parse_handlebars,
    render_template,
)

SPEC = Path(__file__).resolve().parents[2] / "shared" / "spec" / "abl-specification.txt"
FIXED = datetime(2026, 3, 15, 9, 5, 7, tzinfo=UTC)


def env(seed: int = 3) -> EvalEnv:
    return EvalEnv(clock=lambda: FIXED, random=random.Random(seed))


def run(text: str, values: dict | None = None, environment: EvalEnv | None = None):
    """Parse `text` as an ABL value (as in SET / MAP / WITH) and evaluate it over session variables."""
    given_values = values or {}
    expr = parse_expression(text, "Builtins_Agent", dialect="abl")
    return evaluate(expr, lambda ref: given_values.get(ref.name), environment or env())


CARD = "4111111111111111"
TXNS = [{"id": "t1", "amount": -12.5, "type": "debit"}, {"id": "t2", "amount": 40, "type": "credit"}]

# (function, expression, session variables, expected value). The expected type is checked too.
CASES = [
    # 8.1 math
    ("ADD", "ADD(2, 3)", {}, 5),
    ("ADD", "ADD(x, 0.5)", {"x": "1.5"}, 2.0),  # numeric text is its number
    ("SUB", "SUB(2, 3)", {}, -1),
    ("SUB", "SUB(10, 2.5)", {}, 7.5),
    ("MUL", "MUL(4, 2.5)", {}, 10.0),
    ("MUL", "MUL(-3, 0)", {}, 0),
    ("DIV", "DIV(7, 2)", {}, 3.5),
    ("DIV", "DIV(7, 0)", {}, None),  # spec: null on divide-by-zero
    ("DIV", "DIV(0, 0.0)", {}, None),
    ("DIV", "DIV(x, y)", {"x": 1, "y": "0"}, None),
    ("ROUND", "ROUND(2.5)", {}, 3),  # default 0 decimals gives a whole number
    ("ROUND", "ROUND(-2.5)", {}, -3),  # half away from zero
    ("ROUND", "ROUND(2.675, 2)", {}, 2.68),  # as written in decimal, not the binary 2.67499...
    ("ROUND", "ROUND(1234.5678, 1)", {}, 1234.6),
    ("ROUND", "ROUND(1e300)", {}, 10**300),  # big values round instead of failing
    ("ABS", "ABS(-4)", {}, 4),
    ("ABS", "ABS(t.amount)", {"t": TXNS[0]}, 12.5),
    ("MIN", "MIN(3, 1)", {}, 1),
    ("MIN", "MIN(3, x)", {}, 3),  # an unset value is left out
    ("MAX", "MAX(3, 7.5)", {}, 7.5),
    ("MAX", "MAX(x, y)", {}, None),
    # 8.2 strings
    ("UPPER", "UPPER(t.type)", {"t": TXNS[0]}, "DEBIT"),
    ("UPPER", "UPPER(x)", {}, None),
    ("LOWER", 'LOWER("MiXeD")', {}, "mixed"),
    ("TRIM", 'TRIM("  a b  ")', {}, "a b"),
    ("TRIM", "TRIM(x)", {}, None),
    ("SUBSTRING", 'SUBSTRING("abcdef", 1, 3)', {}, "bc"),
    ("SUBSTRING", 'SUBSTRING("abcdef", 4)', {}, "ef"),  # end is optional
    ("SUBSTRING", 'SUBSTRING("abcdef", 3, 1)', {}, "bc"),  # swapped bounds, as JavaScript's substring
    ("SUBSTRING", 'SUBSTRING("abc", -5, 99)', {}, "abc"),  # clamped
    ("SUBSTRING", "UPPER(SUBSTRING(t.type, 0, 1))", {"t": TXNS[1]}, "C"),  # spec 3.14.11
    ("REPLACE", 'REPLACE("a-b-c", "-", "+")', {}, "a+b+c"),  # all occurrences
    ("REPLACE", 'TO_NUMBER(REPLACE(raw, "$", ""))', {"raw": "$250"}, 250),  # spec 3.14.7
    ("SPLIT", 'SPLIT("a,b,,c", ",")', {}, ["a", "b", "", "c"]),
    ("SPLIT", 'SPLIT(x, ",")', {}, []),
    ("SPLIT", 'SPLIT("a,b", "")', {}, ["a", ",", "b"]),
    ("SPLIT", 'SPLIT("a,b", sep)', {}, ["a,b"]),  # an unset delimiter does not split (as JavaScript)
    ("JOIN", 'JOIN(x, " / ")', {"x": ["a", 1, 2.0]}, "a / 1 / 2"),
    ("JOIN", 'JOIN(x, ",")', {"x": []}, ""),
    ("PAD_START", 'PAD_START("7", 3, "0")', {}, "007"),
    ("PAD_START", 'PAD_START("7", 3)', {}, "  7"),  # default a space
    ("PAD_START", 'PAD_START("abcd", 2, "0")', {}, "abcd"),
    ("PAD_END", 'PAD_END("ab", 5, "xy")', {}, "abxyx"),
    ("REPEAT", 'REPEAT("ab", 3)', {}, "ababab"),
    ("REPEAT", 'REPEAT("ab", 0)', {}, ""),
    # 8.3 formatting
    ("MASK", f'MASK("{CARD}", "last4")', {}, "************1111"),  # spec 8.9
    ("MASK", f'MASK("{CARD}", "first4")', {}, "4111************"),
    ("MASK", f'MASK("{CARD}", "4*4")', {}, "4111********1111"),
    ("MASK", 'MASK(acct, "last4", "#")', {"acct": 98761234}, "####1234"),  # a number is masked as its digits
    ("MASK", 'MASK(acct, "2*1", "")', {"acct": "abcdef"}, "ab***f"),  # empty char means "*"
    ("MASK", 'MASK("123", "last4")', {}, "123"),  # shorter than what is shown
    ("MASK", 'MASK(x, "last4")', {}, None),
    ("FORMAT_CURRENCY", 'FORMAT_CURRENCY(1234.56, "USD")', {}, "$1,234.56"),
    ("FORMAT_CURRENCY", 'FORMAT_CURRENCY(1234.5, "EUR", "de_DE")', {}, "1.234,50 €"),
    ("FORMAT_CURRENCY", 'FORMAT_CURRENCY(1234.5, "EUR", "de-DE")', {}, "1.234,50 €"),
    ("FORMAT_CURRENCY", 'FORMAT_CURRENCY(1234.5, "EUR", "fr_FR")', {}, "1 234,50 €"),
    ("FORMAT_CURRENCY", 'FORMAT_CURRENCY(1234.5, "MXN", "es-MX")', {}, "$1,234.50"),  # es-MX writes a point
    ("FORMAT_CURRENCY", 'FORMAT_CURRENCY(1500.4, "JPY")', {}, "¥1,500"),  # yen has no cents
    ("FORMAT_CURRENCY", 'FORMAT_CURRENCY(0.125, "usd")', {}, "$0.13"),  # half away from zero, code any case
    ("FORMAT_CURRENCY", 'FORMAT_CURRENCY(-0.001, "USD")', {}, "$0.00"),  # no "-$0.00"
    ("FORMAT_CURRENCY", 'FORMAT_CURRENCY(-3, "EUR", "de")', {}, "-3,00 €"),
    ("FORMAT_CURRENCY", 'FORMAT_CURRENCY(ABS(t.amount), "USD")', {"t": TXNS[0]}, "$12.50"),  # spec 3.14.11
    ("FORMAT_CURRENCY", 'FORMAT_CURRENCY(x, "USD")', {}, None),
    ("FORMAT_DATE", 'FORMAT_DATE("2026-03-05", "MMM DD, YYYY")', {}, "Mar 05, 2026"),
    ("FORMAT_DATE", 'FORMAT_DATE(d, "MMM DD")', {"d": date(2026, 12, 1)}, "Dec 01"),
    ("FORMAT_DATE", 'FORMAT_DATE("2026-03-05T15:04:09Z", "dddd Do MMMM YY, h:mm A [at] ss")', {},
     "Thursday 5th March 26, 3:04 PM at 09"),
    ("FORMAT_DATE", 'FORMAT_DATE("2026-03-05T02:30:00Z", "YYYY-MM-DD HH:mm Z", "America/New_York")', {},
     "2026-03-04 21:30 -05:00"),  # converted to the zone
    ("FORMAT_DATE", 'FORMAT_DATE("2026-03-05", "MMM D", "America/New_York")', {}, "Mar 5"),  # a date is not shifted
    ("FORMAT_DATE", 'FORMAT_DATE(NOW(), "YYYY-MM-DDTHH:mm:ssZZ")', {}, "2026-03-15T09:05:07+0000"),
    ("FORMAT_DATE", 'FORMAT_DATE(x, "YYYY")', {}, None),
    ("ORDINAL", "ORDINAL(1)", {}, "1st"),
    ("ORDINAL", "ORDINAL(22)", {}, "22nd"),
    ("ORDINAL", "ORDINAL(113)", {}, "113th"),
    ("ORDINAL", 'ORDINAL("3")', {}, "3rd"),
    # 8.4 types
    ("IS_ARRAY", "IS_ARRAY([1, 2])", {}, True),
    ("IS_ARRAY", "IS_ARRAY([])", {}, True),
    ("IS_ARRAY", 'IS_ARRAY("abc")', {}, False),
    ("IS_ARRAY", "IS_ARRAY(x)", {}, False),
    ("IS_NUMBER", "IS_NUMBER(3.5)", {}, True),
    ("IS_NUMBER", 'IS_NUMBER("3")', {}, False),
    ("IS_NUMBER", "IS_NUMBER(true)", {}, False),
    ("IS_STRING", 'IS_STRING("")', {}, True),
    ("IS_STRING", "IS_STRING(3)", {}, False),
    ("TO_NUMBER", 'TO_NUMBER(" 4.5 ")', {}, 4.5),
    ("TO_NUMBER", 'TO_NUMBER("42")', {}, 42),
    ("TO_NUMBER", 'TO_NUMBER("abc")', {}, None),  # spec: null if NaN
    ("TO_NUMBER", 'TO_NUMBER("NaN")', {}, None),
    ("TO_NUMBER", "TO_NUMBER(x)", {}, None),
    ("TO_NUMBER", "TO_NUMBER(true)", {}, 1),
    ("TO_STRING", "TO_STRING(3.0)", {}, "3"),
    ("TO_STRING", "TO_STRING(true)", {}, "true"),  # as ABL writes it
    ("TO_STRING", "TO_STRING(x)", {}, ""),
    # 8.5 arrays
    ("LENGTH", "LENGTH(x)", {"x": [1, 2, 3]}, 3),
    ("LENGTH", 'LENGTH("héllo")', {}, 5),
    ("LENGTH", "LENGTH([])", {}, 0),
    ("LENGTH", "LENGTH(x)", {}, 0),
    ("ARRAY_FIND", 'ARRAY_FIND(txns, "id", "t2").amount', {"txns": TXNS}, 40),
    ("ARRAY_FIND", 'ARRAY_FIND(txns, "id", "t9")', {"txns": TXNS}, None),
    ("ARRAY_FIND", 'ARRAY_FIND([], "id", 1)', {}, None),
    ("ARRAY_FIND", 'ARRAY_FIND(x, "id", 1)', {}, None),
    ("ARRAY_FIND_INDEX", 'ARRAY_FIND_INDEX(txns, "type", "credit")', {"txns": TXNS}, 1),
    ("ARRAY_FIND_INDEX", 'ARRAY_FIND_INDEX(txns, "type", "refund")', {"txns": TXNS}, -1),
    ("ARRAY_FIND_INDEX", 'ARRAY_FIND_INDEX([], "id", 1)', {}, -1),
    # 8.6 objects
    ("OBJECT_KEYS", "OBJECT_KEYS(o)", {"o": {"a": 1, "b": 2}}, ["a", "b"]),
    ("OBJECT_KEYS", "OBJECT_KEYS({})", {}, []),
    ("OBJECT_VALUES", "OBJECT_VALUES(o)", {"o": {"a": 1, "b": 2}}, [1, 2]),
    ("OBJECT_VALUES", "OBJECT_VALUES(x)", {}, []),
    ("OBJECT_MERGE", 'OBJECT_MERGE(o, {"b": 3}, {c: 4})', {"o": {"a": 1, "b": 2}}, {"a": 1, "b": 3, "c": 4}),
    ("OBJECT_MERGE", "OBJECT_MERGE(x, o)", {"o": {"a": 1}}, {"a": 1}),
    ("OBJECT_MERGE", "OBJECT_MERGE()", {}, {}),
    # 8.7 utilities
    ("COALESCE", 'COALESCE(preferred_currency, "USD")', {}, "USD"),  # spec 3.14.7
    ("COALESCE", 'COALESCE(null, x, "", "b")', {}, ""),  # empty text is a value
    ("COALESCE", "COALESCE(t.merchant, t.id)", {"t": TXNS[0]}, "t1"),
    ("COALESCE", "COALESCE()", {}, None),
    ("NOW", "NOW()", {}, "2026-03-15T09:05:07+00:00"),
    ("UNIQUE_ID", "LENGTH(UNIQUE_ID(10))", {}, 10),  # spec 3.14.7
    ("UNIQUE_ID", "LENGTH(UNIQUE_ID())", {}, 12),
]


@pytest.mark.parametrize(("name", "text", "values", "expected"), CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_builtin(name: str, text: str, values: dict, expected) -> None:
    assert lookup_function(name) is not None
    result = run(text, values)
    assert result == expected
    assert type(result) is type(expected)


def _spec_names() -> set[str]:
    text = SPEC.read_text(encoding="utf-8")
    section = text[text.index("8. Built-in Functions Reference"): text.index("8.8 System-Assigned Variables")]
    return set(re.findall(r"^([A-Z_]+)\1\(", section, re.MULTILINE))


@pytest.mark.skipif(not SPEC.exists(), reason="the ABL specification is not beside this checkout")
def test_every_spec_function_has_a_case_here_and_its_signature() -> None:
    names = _spec_names()
    assert len(names) >= 35
    assert names - {case[0] for case in CASES} == set()
    text = SPEC.read_text(encoding="utf-8")
    for name in names:
        fn = lookup_function(name)
        assert fn is not None, name
        # the parameters read as in the spec's signature column, e.g. "ROUND(n, decimals?)"; the functions
        # ADL shares (len/LENGTH, upper/UPPER, lower/LOWER) keep ADL's parameter names but the same shape
        written = re.search(rf"^{name}{name}\(([^)]*)\)", text, re.MULTILINE)
        assert written is not None, name
        if fn.name == name:
            assert fn.param_list() == written.group(1), name
        assert re.sub(r"\w+", "p", fn.param_list()) == re.sub(r"\w+", "p", written.group(1)), name


def test_unique_id_is_alphanumeric_and_comes_from_the_injected_random_source() -> None:
    first = run("UNIQUE_ID(16)", environment=env(seed=11))
    assert re.fullmatch(r"[A-Z0-9]{16}", first)
    assert run("UNIQUE_ID(16)", environment=env(seed=11)) == first
    assert run("UNIQUE_ID(16)", environment=env(seed=12)) != first
    ids = {run("UNIQUE_ID(8)", environment=EvalEnv()) for _ in range(50)}
    assert len(ids) == 50  # real randomness without an injected source


def test_now_reads_the_injected_clock_as_iso_8601() -> None:
    later = EvalEnv(clock=lambda: datetime(2027, 1, 2, 3, 4, 5, tzinfo=UTC))
    assert run("NOW()", environment=later) == "2027-01-02T03:04:05+00:00"
    assert datetime.fromisoformat(run("NOW()", environment=later)) == datetime(2027, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_builtins_render_inside_a_respond_template() -> None:
    template = parse_handlebars('Charged {{FORMAT_CURRENCY(amount, "EUR", "de_DE")}} to card '
                                '{{MASK(card, "last4")}} on {{FORMAT_DATE(when, "MMM D, YYYY")}}',
                                dialect="abl")
    values = {"amount": 1234.5, "card": CARD, "when": "2026-03-05"}
    text = render_template(template, lambda ref: values.get(ref.name), env=env())
    assert text == "Charged 1.234,50 € to card ************1111 on Mar 5, 2026"


# ---------------------------------------------------------------------------
# Mistakes an author can make: caught when the file is read where the argument is literal ...
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "message"), [
    ("DIV(1)", "DIV() takes 2 arguments (a, b), but 1 given"),
    ("ROUND(1, 2, 3)", "ROUND() takes 1 to 2 arguments (n, decimals?), but 3 given"),
    ("NOW(1)", "NOW() takes 0 arguments, but 1 given"),
    ("ROUND(x, 16)", "the decimals of ROUND() must be between 0 and 15"),
    ('MASK(card, "middle")', 'the pattern of MASK() must be "lastN", "firstN" or "N*N"'),
    ('MASK(card, "last4", 7)', "the char of MASK() must be text in quotes"),
    ('FORMAT_CURRENCY(x, "$")', "the currency of FORMAT_CURRENCY() must be an ISO 4217 currency code"),
    ('FORMAT_CURRENCY(x, "USD", "xx-QQ")', "the locale of FORMAT_CURRENCY() must be a locale"),
    ("UNIQUE_ID(0)", "the length of UNIQUE_ID() must be between 1 and 64"),
    ('REPEAT("a", -1)', "the count of REPEAT() must be at least 0"),
    ("FORMAT_CURENCY(x, 'USD')", "unknown function"),
])
def test_literal_mistakes_are_syntax_errors(text: str, message: str) -> None:
    with pytest.raises(ExprSyntaxError) as info:
        parse_expression(text, "Builtins_Agent", dialect="abl")
    assert message in info.value.message


# ... and, where the value only arrives at run time, a clear EvalError (the runtime's error handling)


@pytest.mark.parametrize(("text", "values", "message"), [
    ("ADD(x, 1)", {"x": "abc"}, "ADD() needs a number, not 'abc'"),
    ("SUB(x, 1)", {}, "SUB() needs a number, but the value is not set"),
    ("MUL(x, 2)", {"x": [1]}, "MUL() needs a number"),
    ("DIV(x, 2)", {"x": True}, "DIV() needs a number, not 'True'"),
    ("ABS(x)", {"x": "ten"}, "ABS() needs a number"),
    ("ROUND(x, d)", {"x": 1.5, "d": 1.5}, "ROUND() needs a whole number for decimals"),
    ("MIN(x, 1)", {"x": "low"}, "MIN() needs a number"),
    ("SUBSTRING(s, i)", {"s": "abc", "i": "one"}, "SUBSTRING() needs a whole number for start"),
    ("JOIN(x, ',')", {"x": "abc"}, "JOIN() needs a list"),
    ("REPEAT('ab', n)", {"n": 10**6}, "longer than"),
    ("PAD_START('a', n)", {"n": 10**9}, "longer than"),
    ("MASK(card, p)", {"card": CARD, "p": "most"}, "the pattern of MASK()"),
    ("FORMAT_CURRENCY(x, 'USD')", {"x": "lots"}, "FORMAT_CURRENCY() needs a number"),
    ("FORMAT_CURRENCY(1, c)", {"c": "dollars"}, "unknown currency 'dollars'"),
    ("FORMAT_CURRENCY(1, 'USD', l)", {"l": "klingon"}, "unknown locale 'klingon'"),
    ("FORMAT_DATE(d, 'YYYY')", {"d": "next tuesday"}, "FORMAT_DATE() needs a date"),
    ("FORMAT_DATE(d, 'YYYY')", {"d": 1e20}, "FORMAT_DATE() needs a date"),
    ("FORMAT_DATE('2026-01-01', 'YYYY', z)", {"z": "Mars/Olympus"}, "unknown time zone"),
    ("ORDINAL(x)", {"x": 2.5}, "ORDINAL() needs a whole number"),
    ("LENGTH(x)", {"x": 5}, "needs text, a list or a dict"),
    ("ARRAY_FIND(x, 'id', 1)", {"x": "abc"}, "ARRAY_FIND() needs a list"),
    ("ARRAY_FIND_INDEX(x, 'id', 1)", {"x": 3}, "ARRAY_FIND_INDEX() needs a list"),
    ("OBJECT_KEYS(x)", {"x": [1]}, "OBJECT_KEYS() needs a mapping"),
    ("OBJECT_VALUES(x)", {"x": "a"}, "OBJECT_VALUES() needs a mapping"),
    ("OBJECT_MERGE(x, 1)", {"x": {}}, "OBJECT_MERGE() needs a mapping"),
    ("UNIQUE_ID(n)", {"n": 500}, "UNIQUE_ID() takes a length from 1 to 64"),
])
def test_bad_values_at_run_time_are_clear_errors(text: str, values: dict, message: str) -> None:
    with pytest.raises(EvalError) as info:
        run(text, values)
    assert message in str(info.value)


def test_a_naive_clock_is_refused_by_now() -> None:
    with pytest.raises(EvalError, match="time zone"):
        run("NOW()", environment=EvalEnv(clock=lambda: datetime(2026, 1, 1)))


# ---------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------

PLAIN_TEXT = st.text(alphabet=st.characters(blacklist_characters="*\"\\", blacklist_categories=("Cs",)),
                     max_size=40)


@st.composite
def mask_patterns(draw):
    kind = draw(st.sampled_from(["last", "first", "both"]))
    a, b = draw(st.integers(0, 12)), draw(st.integers(0, 12))
    if kind == "last":
        return f"last{a}", 0, a
    if kind == "first":
        return f"first{a}", a, 0
    return f"{a}*{b}", a, b


@settings(max_examples=300, deadline=None)
@given(text=PLAIN_TEXT, pattern=mask_patterns())
def test_mask_never_reveals_more_than_the_pattern_allows(text: str, pattern) -> None:
    written, head, tail = pattern
    masked = run(f'MASK(s, "{written}")', {"s": text})
    assert len(masked) == len(text)
    shown = [i for i, ch in enumerate(masked) if ch != "*"]
    assert len(shown) <= head + tail
    for i in shown:
        assert masked[i] == text[i]  # what is shown is the original character in its place
        if len(text) > head + tail:  # else nothing needs hiding
            assert i < head or i >= len(text) - tail
    if len(text) > head + tail:
        assert masked.count("*") == len(text) - head - tail


@settings(max_examples=300, deadline=None)
@given(x=st.floats(min_value=-1e12, max_value=1e12, allow_nan=False), places=st.integers(0, 6))
def test_round_lies_between_floor_and_ceil_and_is_symmetric(x: float, places: int) -> None:
    whole = run("ROUND(x)", {"x": x})
    assert isinstance(whole, int)
    assert math.floor(x) <= whole <= math.ceil(x)
    assert abs(whole - x) <= 0.5
    assert run("ROUND(x)", {"x": -x}) == -whole  # half away from zero treats both signs alike
    rounded = run("ROUND(x, p)", {"x": x, "p": places})
    assert abs(rounded - x) <= 0.5 * 10 ** -places + abs(x) * 1e-15
    assert run("ROUND(ROUND(x, p), p)", {"x": x, "p": places}) == rounded  # rounding twice changes nothing


@settings(max_examples=200, deadline=None)
@given(amount=st.decimals(min_value=-10**9, max_value=10**9, places=3, allow_nan=False))
def test_de_de_currency_reads_back_as_the_amount_rounded_to_cents(amount: Decimal) -> None:
    text = run('FORMAT_CURRENCY(x, "EUR", "de_DE")', {"x": float(amount)})
    assert re.fullmatch(r"-?\d{1,3}(\.\d{3})*,\d{2} €", text)
    read_back = Decimal(text.removesuffix(" €").replace(".", "").replace(",", "."))
    expected = Decimal(str(float(amount))).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    assert read_back == (expected if expected != 0 else abs(expected))


@settings(max_examples=200, deadline=None)
@given(text=PLAIN_TEXT, start=st.integers(-5, 50), end=st.integers(-5, 50))
def test_substring_takes_its_bounds_in_either_order(text: str, start: int, end: int) -> None:
    part = run("SUBSTRING(s, a, b)", {"s": text, "a": start, "b": end})
    assert part == run("SUBSTRING(s, b, a)", {"s": text, "a": start, "b": end})
    assert part in text and len(part) <= len(text)
