"""Tests of the function registry: signatures, parse-time checks, the injected clock and randomness, the ABL built-ins."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from frontdesk.expr import (
    EvalEnv,
    EvalError,
    ExprSyntaxError,
    evaluate,
    functions,
    parse_expression,
)
from frontdesk.ir.models import Call, Lit, Ref

AGENT = "a"
SPEC = Path(__file__).resolve().parents[2] / "shared" / "spec" / "abl-specification.txt"
FIXED = datetime(2024, 5, 31, 14, 30, 5, tzinfo=UTC)


def run(text: str, env: EvalEnv | None = None, **values):
    return evaluate(parse_expression(text, AGENT), lambda ref: values.get(ref.name), env)


def test_one_registry_answers_parser_and_evaluator():
    spec = functions.lookup("ROUND")
    assert spec is not None and spec.signature() == "ROUND(n, decimals?) -> number"
    assert functions.lookup("round") is spec  # names are case-insensitive
    assert parse_expression("round(x)", AGENT) == Call(fn="ROUND", args=[Ref(scope=AGENT, name="x")])
    assert parse_expression("UPPER(x)", AGENT) == Call(fn="upper", args=[Ref(scope=AGENT, name="x")])
    assert functions.lookup("LENGTH") is functions.lookup("len")


def test_every_builtin_of_the_abl_spec_is_registered():
    if not SPEC.exists():
        pytest.skip("the ABL specification is not beside this checkout")
    text = SPEC.read_text(encoding="utf-8")
    section = text[text.index("8. Built-in Functions Reference"): text.index("8.8 System-Assigned Variables")]
    import re

    names = set(re.findall(r"^([A-Z_]+)\1\(", section, re.MULTILINE))
    assert len(names) >= 30
    missing = [n for n in sorted(names) if functions.lookup(n) is None]
    assert missing == []


def test_arity_is_checked_at_parse_time_with_a_column():
    with pytest.raises(ExprSyntaxError) as info:
        parse_expression("x + SUBSTRING(s)", AGENT)
    assert info.value.message == "SUBSTRING() takes 2 to 3 arguments (s, start, end?), but 1 given"
    assert info.value.column == 5
    assert parse_expression("COALESCE()", AGENT) == Call(fn="COALESCE", args=[])
    assert parse_expression("OBJECT_MERGE(a, b, c)", AGENT).fn == "OBJECT_MERGE"


def test_unknown_function_suggests_across_letter_case():
    with pytest.raises(ExprSyntaxError) as info:
        parse_expression("FORMAT_CURENCY(x, 'USD')", AGENT)
    assert info.value.hint == "did you mean 'FORMAT_CURRENCY'?"
    assert info.value.column == 1


def test_the_evaluator_checks_arity_of_handmade_ir():
    with pytest.raises(EvalError, match=r"len\(\) takes 1 argument"):
        evaluate(Call(fn="len", args=[Lit(value="a"), Lit(value="b")]), lambda ref: None)


def test_now_and_unique_id_use_the_injected_clock_and_random_source():
    env = EvalEnv(clock=lambda: FIXED, random=random.Random(7))
    assert run("NOW()", env) == "2024-05-31T14:30:05+00:00"
    first = run("UNIQUE_ID(10)", env)
    again = run("UNIQUE_ID(10)", EvalEnv(clock=lambda: FIXED, random=random.Random(7)))
    assert first == again and len(first) == 10 and first.isalnum() and first.upper() == first
    assert len(run("UNIQUE_ID()", env)) == functions.DEFAULT_ID_LENGTH
    assert run("UNIQUE_ID(10)", env) != first  # the source moves on


def test_now_without_an_env_reads_the_real_clock():
    before = datetime.now(UTC) - timedelta(seconds=2)
    assert datetime.fromisoformat(run("NOW()")) >= before


def test_the_env_can_carry_the_resolver():
    env = EvalEnv(resolve=lambda ref: {"x": 4}.get(ref.name))
    assert evaluate(parse_expression("x * 2", AGENT), env=env) == 8


def test_a_naive_clock_is_an_error():
    with pytest.raises(EvalError, match="time zone"):
        run("NOW()", EvalEnv(clock=lambda: datetime(2024, 1, 1)))


@pytest.mark.parametrize(
    ("text", "values", "expected"),
    [
        ("ADD(2, '3')", {}, 5),
        ("SUB(2, 3)", {}, -1),
        ("MUL(2, 2.5)", {}, 5.0),
        ("DIV(7, 2)", {}, 3.5),
        ("DIV(7, 0)", {}, None),
        ("ROUND(2.5)", {}, 3),
        ("ROUND(2.345, 2)", {}, 2.35),
        ("ROUND(-2.5)", {}, -3),
        ("ABS(-4)", {}, 4),
        ("MIN(3, x)", {"x": 1}, 1),
        ("MAX(3, x)", {}, 3),
        ("TRIM('  a b ')", {}, "a b"),
        ("SUBSTRING('abcdef', 1, 3)", {}, "bc"),
        ("SUBSTRING('abcdef', 3, 1)", {}, "bc"),
        ("SUBSTRING('abcdef', 4)", {}, "ef"),
        ("UPPER(SUBSTRING(t, 0, 1))", {"t": "debit"}, "D"),
        ("REPLACE('$1,000', '$', '')", {}, "1,000"),
        ("TO_NUMBER(REPLACE(raw, '$', ''))", {"raw": "$250"}, 250),
        ("SPLIT('a,b,,c', ',')", {}, ["a", "b", "", "c"]),
        ("SPLIT('ab', '')", {}, ["a", "b"]),
        ("JOIN(x, ' / ')", {"x": ["a", 1, 2.0]}, "a / 1 / 2"),
        ("PAD_START('7', 3, '0')", {}, "007"),
        ("PAD_END('ab', 5, 'xy')", {}, "abxyx"),
        ("PAD_START('abcd', 2)", {}, "abcd"),
        ("REPEAT('ab', 3)", {}, "ababab"),
        ("MASK('4111111111111111', 'last4')", {}, "************1111"),
        ("MASK('4111111111111111', 'first4')", {}, "4111************"),
        ("MASK('4111111111111111', '4*4', '#')", {}, "4111########1111"),
        ("MASK('123', 'last4')", {}, "123"),
        ("FORMAT_CURRENCY(1234.5, 'USD')", {}, "$1,234.50"),
        ("FORMAT_CURRENCY(-3, 'EUR', 'de-DE')", {}, "-3,00 €"),
        ("FORMAT_CURRENCY(1234567.891, 'EUR', 'de-DE')", {}, "1.234.567,89 €"),
        ("FORMAT_CURRENCY(1500, 'JPY')", {}, "¥1,500"),
        ("FORMAT_DATE('2024-03-05', 'MMM DD, YYYY')", {}, "Mar 05, 2024"),
        ("FORMAT_DATE('2024-03-05T15:04:09Z', 'dddd D MMMM YY, h:mm A [at] ss')", {},
         "Tuesday 5 March 24, 3:04 PM at 09"),
        ("FORMAT_DATE('2024-03-05T23:30:00Z', 'YYYY-MM-DD HH:mm', 'UTC')", {}, "2024-03-05 23:30"),
        ("ORDINAL(1)", {}, "1st"),
        ("ORDINAL(22)", {}, "22nd"),
        ("ORDINAL(13)", {}, "13th"),
        ("ORDINAL(103)", {}, "103rd"),
        ("IS_ARRAY(x)", {"x": [1]}, True),
        ("IS_ARRAY(x)", {"x": "a"}, False),
        ("IS_NUMBER(3.5)", {}, True),
        ("IS_NUMBER('3')", {}, False),
        ("IS_STRING('3')", {}, True),
        ("TO_NUMBER('x')", {}, None),
        ("TO_NUMBER(' 4.5 ')", {}, 4.5),
        ("TO_STRING(3.0)", {}, "3"),
        ("LENGTH(x)", {"x": [1, 2, 3]}, 3),
        ("ARRAY_FIND(x, 'id', 2).name", {"x": [{"id": 1, "name": "a"}, {"id": "2", "name": "b"}]}, "b"),
        ("ARRAY_FIND(x, 'id', 9)", {"x": [{"id": 1}]}, None),
        ("ARRAY_FIND_INDEX(x, 'id', 1)", {"x": [{"id": 0}, {"id": 1}]}, 1),
        ("ARRAY_FIND_INDEX(x, 'id', 5)", {"x": [{"id": 0}]}, -1),
        ("OBJECT_KEYS(x)", {"x": {"a": 1, "b": 2}}, ["a", "b"]),
        ("OBJECT_VALUES(x)", {"x": {"a": 1, "b": 2}}, [1, 2]),
        ("OBJECT_MERGE(x, {'b': 3}, none)", {"x": {"a": 1, "b": 2}}, {"a": 1, "b": 3}),
        ("COALESCE(x, y, 'USD')", {"y": ""}, ""),
        ("COALESCE(x, 'USD')", {}, "USD"),
        ("LIMIT(x, 2)", {"x": [1, 2, 3]}, [1, 2]),
    ],
)
def test_abl_builtins(text, values, expected):
    result = run(text, **values)
    assert result == expected and type(result) is type(expected)


@pytest.mark.parametrize(
    ("text", "values", "needle"),
    [
        ("ADD(x, 1)", {"x": "abc"}, "ADD() needs a number"),
        ("ROUND(x)", {}, "ROUND() needs a number, but the value is not set"),
        ("REPEAT('ab', n)", {"n": 10**6}, "longer than"),
        ("JOIN(x, ',')", {"x": "abc"}, "JOIN() needs a list"),
        ("OBJECT_KEYS(x)", {"x": [1]}, "needs a mapping"),
        ("FORMAT_DATE(x, 'YYYY')", {"x": "yesterday"}, "needs a date"),
        ("FORMAT_DATE('2024-01-01', 'YYYY', 'Mars/Olympus')", {}, "unknown time zone"),
        ("MASK('1234', p)", {"p": "middle"}, "the pattern of MASK()"),
        ("UNIQUE_ID(n)", {"n": 500}, "UNIQUE_ID() takes a length"),
    ],
)
def test_builtin_errors(text, values, needle):
    with pytest.raises(EvalError) as info:
        run(text, **values)
    assert needle in str(info.value)


def test_regex_literal_is_checked_at_parse_time_and_functions_keep_their_old_behaviour():
    with pytest.raises(ExprSyntaxError) as info:
        parse_expression("re.search('[a', x)", AGENT)
    assert info.value.message.startswith("invalid regular expression") and info.value.column == 11
    assert run("re.search('b', x)", x="abc") is True
    assert run("lower(x)") is None
    assert run("int(x)", x="3.7") == 3
