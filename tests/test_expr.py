"""Tests of the condition/expression parser and the evaluator (frontdesk.expr)."""

from __future__ import annotations

import pytest

from frontdesk.expr import (
    EvalError,
    ExprSyntaxError,
    collect_refs,
    evaluate,
    is_true,
    parse_condition,
    parse_expression,
)
from frontdesk.expr.parser import MAX_NESTING_DEPTH
from frontdesk.ir.models import (
    BoolOp,
    Call,
    ClaimsCondition,
    Compare,
    ExprCondition,
    Lit,
    Not,
    Ref,
)

AGENT = "shop"


def expr_of(text: str):
    condition = parse_condition(text, AGENT)
    assert isinstance(condition, ExprCondition)
    assert condition.source == text
    return condition.expr


def run(text: str, **values):
    """Evaluate a condition; `values` maps "name" or "scope__name" to a value (missing -> None)."""

    def lookup(ref: Ref):
        key = ref.name if ref.scope == AGENT else f"{ref.scope}__{ref.name}"
        return values.get(key)

    return evaluate(expr_of(text), lookup)


# ---------------------------------------------------------------------------
# Parsing: the forms of Table 4 and the rest of the language
# ---------------------------------------------------------------------------


def test_table4_equals_none():
    assert expr_of("restaurant_name == None") == Compare(
        cmp="==", left=Ref(scope=AGENT, name="restaurant_name"), right=Lit(value=None)
    )


def test_table4_not_equals_none_with_agent_path():
    assert expr_of("order.items != None") == Compare(
        cmp="!=", left=Ref(scope="order", name="items"), right=Lit(value=None)
    )


def test_table4_equals_value():
    assert expr_of("is_new_customer == True").right == Lit(value=True)
    assert expr_of('status == "gold"').right == Lit(value="gold")
    assert expr_of("place_order.status == True").left == Ref(scope="place_order", name="status")


def test_table4_regex_match():
    assert expr_of(r're.match("\d{6}", code)') == Call(
        fn="re.match", args=[Lit(value=r"\d{6}"), Ref(scope=AGENT, name="code")]
    )


def test_table4_and_or_combination():
    expr = expr_of("restaurant_name != None or num_of_people != None and x == 1")
    assert isinstance(expr, BoolOp) and expr.op == "or"
    assert isinstance(expr.items[1], BoolOp) and expr.items[1].op == "and"


def test_and_chain_is_flat():
    expr = expr_of("a and b and c")
    assert expr == BoolOp(op="and", items=[Ref(scope=AGENT, name=n) for n in "abc"])


def test_not_binds_looser_than_comparison_and_tighter_than_and():
    expr = expr_of("not x == 1 and y")
    assert isinstance(expr, BoolOp) and expr.op == "and"
    assert expr.items[0] == Not(item=Compare(cmp="==", left=Ref(scope=AGENT, name="x"), right=Lit(value=1)))


def test_parentheses_override_precedence():
    expr = expr_of("(a or b) and c")
    assert isinstance(expr, BoolOp) and expr.op == "and"
    assert expr.items[0] == BoolOp(op="or", items=[Ref(scope=AGENT, name="a"), Ref(scope=AGENT, name="b")])


@pytest.mark.parametrize("op", ["==", "!=", "<", ">", "<=", ">=", "in", "not in"])
def test_every_comparison_operator(op):
    expr = expr_of(f"x {op} 3")
    assert isinstance(expr, Compare) and expr.cmp == op


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("None", None),
        ("null", None),
        ("True", True),
        ("true", True),
        ("False", False),
        ("false", False),
        ("42", 42),
        ("-7", -7),
        ("0.9", 0.9),
        ("1e3", 1000.0),
        ('"double"', "double"),
        ("'single'", "single"),
        (r'"say \"hi\"\n"', 'say "hi"\n'),
        (r"'it\'s'", "it's"),
        (r'"\d+\.\w"', r"\d+\.\w"),  # unknown escapes keep their backslash, for regexes
        (r'r"\d\\"', "\\d\\\\"),
        ("[1, 'a', None, [true]]", [1, "a", None, [True]]),
        ("[]", []),
        ("[1, 2,]", [1, 2]),
    ],
)
def test_literals(text, value):
    lit = parse_expression(text, AGENT)
    assert lit == Lit(value=value)
    assert type(lit.value) is type(value)


def test_bare_path_is_a_condition():
    assert expr_of("get_discount.success") == Ref(scope="get_discount", name="success")
    assert expr_of("confirmed") == Ref(scope=AGENT, name="confirmed")


def test_keywords_inside_names_are_names():
    assert expr_of("android or order_in") == BoolOp(
        op="or", items=[Ref(scope=AGENT, name="android"), Ref(scope=AGENT, name="order_in")]
    )


@pytest.mark.parametrize("fn", ["len", "lower", "upper", "str", "int", "float"])
def test_single_argument_functions(fn):
    assert expr_of(f"{fn}(x) == 1").left == Call(fn=fn, args=[Ref(scope=AGENT, name="x")])


@pytest.mark.parametrize("fn", ["re.search", "re.fullmatch"])
def test_other_regex_functions(fn):
    assert expr_of(f"{fn}('a', x)") == Call(fn=fn, args=[Lit(value="a"), Ref(scope=AGENT, name="x")])


def test_parse_expression_values():
    assert parse_expression("0.9", AGENT) == Lit(value=0.9)
    assert parse_expression("web_searcher.description", AGENT) == Ref(scope="web_searcher", name="description")
    assert parse_expression("'In-N-Out'", AGENT) == Lit(value="In-N-Out")


def test_parse_expression_rejects_claims():
    with pytest.raises(ExprSyntaxError, match="only be used as an if"):
        parse_expression('the user claims "hi"', AGENT)


def test_collect_refs_in_source_order():
    expr = expr_of("a == b.c and not re.match('x', d) or e in [1]")
    assert collect_refs(expr) == [
        Ref(scope=AGENT, name="a"),
        Ref(scope="b", name="c"),
        Ref(scope=AGENT, name="d"),
        Ref(scope=AGENT, name="e"),
    ]


def test_condition_round_trips_through_json():
    condition = parse_condition("x in ['a', 1] and re.match('^a', y)", AGENT)
    assert ExprCondition.model_validate_json(condition.model_dump_json()) == condition


# ---------------------------------------------------------------------------
# The natural-language form
# ---------------------------------------------------------------------------


def test_claims_single_example():
    condition = parse_condition('the user claims "Is there any discount?"', AGENT)
    assert condition == ClaimsCondition(
        source='the user claims "Is there any discount?"', examples=["Is there any discount?"]
    )


def test_claims_several_examples_mixed_quotes_and_or():
    text = """The User Claims "My card is damaged", 'My card has expired' or "I don’t have it", or 'x'"""
    condition = parse_condition(text, AGENT)
    assert isinstance(condition, ClaimsCondition)
    assert condition.examples == ["My card is damaged", "My card has expired", "I don’t have it", "x"]


def test_claims_escapes_and_typographic_quotes():
    condition = parse_condition('the user claims "say \\"yes\\"", \u201cOK then\u201d', AGENT)
    assert condition.examples == ['say "yes"', "OK then"]


@pytest.mark.parametrize(
    ("text", "column", "needle"),
    [
        ('the user claims "a" and x == 1', 21, "cannot be combined"),
        ('the user claims "a" or x == 1', 21, "cannot be combined"),
        ('x == 1 and the user claims "a"', 12, "cannot be combined"),
        ("the user claims", 16, "expected a quoted example"),
        ("the user claims I want pizza", 17, "must be in quotes"),
        ('the user claims "a", ', 22, "expected a quoted example after ','"),
        ('the user claims "a" "b"', 21, "expected ','"),
        ('the user claims "open', 17, "unclosed string"),
        ('the user claims ""', 17, "cannot be empty"),
    ],
)
def test_claims_errors(text, column, needle):
    with pytest.raises(ExprSyntaxError) as info:
        parse_condition(text, AGENT)
    assert needle in info.value.message
    assert info.value.column == column


def test_claims_combination_error_has_hint():
    with pytest.raises(ExprSyntaxError) as info:
        parse_condition('the user claims "a" and x == 1', AGENT)
    assert info.value.hint and "nested if" in info.value.hint


# ---------------------------------------------------------------------------
# Syntax errors: message and column
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "column", "message"),
    [
        ("x ==", 3, "expected a value after '=='"),
        ("x == and y", 6, "expected a value after '==' but found 'and'"),
        ('name == "abc', 9, "unclosed string"),
        ("x = 1", 3, "use '==' to compare values, not '='"),
        ("x == 1 2", 8, "expected an operator before '2'"),
        ("(x == 1", 1, "unclosed '('"),
        ("x == 1)", 7, "unmatched ')'"),
        ("x in [1, 2", 6, "unclosed '['"),
        ("a.None == 1", 1, "'None' is a value and cannot be part of a name like 'a.None'"),
        ("x and", 3, "expected a condition after 'and'"),
        ("x or or y", 6, "expected a condition after 'or' but found 'or'"),
        ("x && y", 3, "unexpected '&'"),
        ("a < b < c", 7, "comparisons cannot be chained"),
        ("x is None", 3, "'is' can only be used as 'is set' or 'is not set'"),
        ("x is", 3, "expected 'set' or 'not set' after 'is'"),
        ("x is not", 9, "expected 'set' after 'is not'"),
        ("x is nothing", 6, "expected 'set' after is"),
        ("x y z", 3, "expected an operator before 'y'"),
        ("x y", 3, "expected an operator before 'y'"),
        ("x AND y", 3, "write 'and' in lower case"),
        ("x not y", 3, "expected 'in' after 'not'"),
        ("a. == 1", 4, "expected a name after '.' but found '=='"),
        ("", 1, "the condition is empty"),
        ("   ", 1, "the condition is empty"),
        ("${x} == 1", 1, "unexpected '$'"),
        ("x == 1 AND y", 8, "write 'and' in lower case"),
        ("x - > 0", 5, "expected a value after '-' but found '>'"),
        ("x *", 3, "expected a value after '*'"),
        ("x ^ 2", 3, "unexpected character '^'"),
        ("{a: 1, 'a': 2} == x", 8, "the key 'a' is given twice"),
        ("{a: 1", 1, "unclosed '{'"),
        ("x => 1", 3, "'=>' can only follow the item name"),
        ("len(v => v)", 5, "len() does not take a function of each item"),
        ("filter(items)", 1, "filter() takes a list and a function of each item"),
        ("filter(items, 3)", 15, "the second argument of filter() must be a function of each item"),
        ("sort_by(items, i => i.a, 'up')", 26, 'the direction of sort_by() must be "asc" or "desc"'),
        ("x[0](1)", 1, "only functions can be called"),
        ("@index == 1", 1, "'@index' can only be used inside {{#each}}"),
        ("NOW(1)", 1, "NOW() takes 0 arguments, but 1 given"),
        ("ROUND(x, 1, 2)", 1, "ROUND() takes 1 to 2 arguments (n, decimals?), but 3 given"),
        ("UNIQUE_ID(0)", 11, "the length of UNIQUE_ID() must be between 1 and 64"),
        ("MASK(x, 'middle')", 9, 'the pattern of MASK() must be "lastN", "firstN" or "N*N"'),
        ("re.match(3, x)", 10, "the pattern of re.match() must be text in quotes"),
        ("len(x, y)", 1, "len() takes 1 argument (value), but 2 given"),
        ("re.match('a')", 1, "re.match() takes 2 arguments (pattern, value), but 1 given"),
        ("re.match('(', x)", 10, "invalid regular expression"),
        (", x", 1, "a condition cannot start with ','"),
    ],
)
def test_syntax_errors(text, column, message):
    with pytest.raises(ExprSyntaxError) as info:
        parse_condition(text, AGENT)
    assert info.value.message.startswith(message), info.value.message
    assert info.value.column == column


def test_unknown_function_lists_known_ones_and_suggests():
    with pytest.raises(ExprSyntaxError) as info:
        parse_condition("rematch('a', x)", AGENT)
    assert "unknown function 'rematch'" in info.value.message
    assert "re.match" in info.value.message and "len" in info.value.message
    assert info.value.hint == "did you mean 're.match'?"


def test_unclosed_string_hint_names_the_quote():
    with pytest.raises(ExprSyntaxError) as info:
        parse_condition("x == 'abc", AGENT)
    assert info.value.hint == "add the closing '"


def test_error_str_is_the_message():
    with pytest.raises(ExprSyntaxError) as info:
        parse_condition("x ==", AGENT)
    assert str(info.value) == "expected a value after '=='"


def test_depth_limit():
    ok = "not " * MAX_NESTING_DEPTH + "x"
    assert isinstance(expr_of(ok), Not)
    for hostile in (
        "not " * (MAX_NESTING_DEPTH + 1) + "x",
        "not " * 2000 + "x",
        "[" * 100 + "]" * 100,
        "len(" * 100 + "x" + ")" * 100,
    ):
        with pytest.raises(ExprSyntaxError, match="nested too deeply"):
            parse_condition(hostile, AGENT)


def test_redundant_parentheses_do_not_count_as_depth():
    assert expr_of("(" * 200 + "x" + ")" * 200) == Ref(scope=AGENT, name="x")


def test_overlong_text_is_rejected():
    with pytest.raises(ExprSyntaxError, match="too long"):
        parse_condition("x == 1 and " * 2000 + "y", AGENT)


# ---------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------


def test_eval_none_checks():
    assert run("x == None") is True
    assert run("x == None", x=0) is False
    assert run("x != None", x="") is True
    assert run("x != None") is False
    assert run("None == None") is True


@pytest.mark.parametrize(
    ("text", "values", "expected"),
    [
        ("x == 3", {"x": "3"}, True),
        ("x == 3", {"x": " 3.0 "}, True),
        ("x == '3'", {"x": 3}, True),
        ("x == 3", {"x": "three"}, False),
        ("x == '3'", {"x": "3.0"}, False),  # two texts: exact
        ("x == 'Gold'", {"x": "gold"}, False),
        ("x == 'gold'", {"x": "gold"}, True),
        ("x == 3.0", {"x": 3}, True),
        ("x == True", {"x": "true"}, True),
        ("x == False", {"x": "no"}, True),
        ("x == True", {"x": "maybe"}, False),
        ("x != 3", {"x": "3"}, False),
        ("x != 'a'", {"x": "b"}, True),
        ("x == [1, 2]", {"x": [1, 2]}, True),
    ],
)
def test_eval_equality_coercions(text, values, expected):
    assert run(text, **values) is expected


@pytest.mark.parametrize(
    ("text", "values", "expected"),
    [
        ("x < 3", {"x": 2}, True),
        ("x > 3", {"x": 2}, False),
        ("x <= 2", {"x": 2}, True),
        ("x >= 2.5", {"x": 2}, False),
        ("x > 9", {"x": "10"}, True),  # numeric text against a number compares as numbers
        ("'10' < x", {"x": 9}, False),
        ("x < 'b'", {"x": "a"}, True),
        ("x < 3", {}, False),  # None < 3
        ("x > 3", {}, False),
        ("x >= None", {"x": 1}, False),
        ("x < 3", {"x": "abc"}, False),
        ("x < 3", {"x": [1]}, False),
    ],
)
def test_eval_ordering_never_raises(text, values, expected):
    assert run(text, **values) is expected


@pytest.mark.parametrize(
    ("text", "values", "expected"),
    [
        ("x in [1, 2]", {"x": 2}, True),
        ("x in [1, 2]", {"x": "2"}, True),
        ("x in [1, 2]", {"x": 3}, False),
        ("x not in [1, 2]", {"x": 3}, True),
        ("'card' in x", {"x": "my card is lost"}, True),
        ("'Card' in x", {"x": "my card is lost"}, False),
        ("3 in x", {"x": "room 301"}, True),
        ("'k' in x", {"x": {"k": 1}}, True),
        ("'v' in x", {"x": {"k": "v"}}, False),
        ("x in y", {"x": "a"}, False),  # y is None
        ("x in 'abc'", {}, False),  # x is None
        ("x not in 'abc'", {"x": "z"}, True),
        ("x in 5", {"x": 5}, False),
    ],
)
def test_eval_membership(text, values, expected):
    assert run(text, **values) is expected


def test_eval_and_or_not_return_bools_and_short_circuit():
    calls: list[str] = []

    def lookup(ref: Ref):
        calls.append(ref.name)
        return {"a": "yes", "b": 0, "c": [1]}.get(ref.name)

    assert evaluate(expr_of("a or b"), lookup) is True
    assert calls == ["a"]
    calls.clear()
    assert evaluate(expr_of("b and a"), lookup) is False
    assert calls == ["b"]
    assert evaluate(expr_of("a and c"), lookup) is True
    assert evaluate(expr_of("not b"), lookup) is True
    assert evaluate(expr_of("not (a and c)"), lookup) is False


def test_eval_short_circuit_skips_errors():
    assert run("x == None or int(x) > 3") is True


def test_eval_regex():
    assert run(r're.match("\d{6}$", code)', code="123456") is True
    assert run(r're.match("\d{6}$", code)', code="12345a") is False
    assert run(r're.match("\d+", code)', code=123) is True  # converted to text
    assert run(r're.match("\d+", code)') is False  # None never matches
    assert run("re.match('b', x)", x="abc") is False
    assert run("re.search('b', x)", x="abc") is True
    assert run("re.fullmatch('ab', x)", x="abc") is False
    assert run("re.match(p, x)", p="^a", x="abc") is True


def test_eval_regex_bad_runtime_pattern():
    with pytest.raises(EvalError, match="invalid regular expression"):
        run("re.match(p, x)", p="(", x="a")
    with pytest.raises(EvalError, match="pattern"):
        run("re.match(p, x)", p=3, x="a")


@pytest.mark.parametrize(
    ("text", "values", "expected"),
    [
        ("len(x)", {"x": "abc"}, 3),
        ("len(x)", {"x": [1, 2]}, 2),
        ("len(x)", {}, 0),
        ("lower(x)", {"x": "AbC"}, "abc"),
        ("upper(x)", {"x": "AbC"}, "ABC"),
        ("lower(x)", {}, None),
        ("str(x)", {"x": 3.0}, "3"),
        ("str(x)", {"x": True}, "True"),
        ("int(x)", {"x": " 42 "}, 42),
        ("int(x)", {"x": "3.7"}, 3),
        ("int(x)", {"x": 2.9}, 2),
        ("int(x)", {"x": True}, 1),
        ("int(x)", {}, None),
        ("float(x)", {"x": "2.5"}, 2.5),
        ("float(x)", {"x": 2}, 2.0),
    ],
)
def test_eval_functions(text, values, expected):
    result = run(text, **values)
    assert result == expected and type(result) is type(expected)


@pytest.mark.parametrize(
    ("text", "values", "needle"),
    [
        ("int(x)", {"x": "abc"}, "cannot convert 'abc' to a whole number"),
        ("float(x)", {"x": "abc"}, "cannot convert 'abc' to a number"),
        ("int(x)", {"x": [1]}, "whole number"),
        ("len(x)", {"x": 5}, "len() needs text"),
    ],
)
def test_eval_errors(text, values, needle):
    with pytest.raises(EvalError) as info:
        run(text, **values)
    assert needle in str(info.value)


def test_eval_functions_in_conditions():
    assert run("int(age) >= 18", age="21") is True
    assert run("lower(answer) in ['yes', 'y']", answer="YES") is True
    assert run("len(code) == 6", code="123456") is True


def test_eval_unknown_function_in_ir():
    with pytest.raises(EvalError, match="unknown function"):
        evaluate(Call(fn="open", args=[Lit(value="x")]), lambda ref: None)


def test_eval_depth_guard_for_handmade_ir():
    expr: object = Lit(value=True)
    for _ in range(300):
        expr = Not(item=expr)
    with pytest.raises(EvalError, match="nested too deeply"):
        evaluate(expr, lambda ref: None)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, False),
        (True, True),
        (False, False),
        (0, False),
        (0.0, False),
        (2, True),
        ("", False),
        ("  ", False),
        ("false", False),
        ("False", False),
        ("no", False),
        ("null", False),
        ("None", False),
        ("0", False),
        ("0.0", False),
        ("yes", True),
        ("anything", True),
        ([], False),
        ([0], True),
        ({}, False),
        ({"a": 1}, True),
    ],
)
def test_is_true(value, expected):
    assert is_true(value) is expected


def test_bare_path_truthiness():
    assert run("get_discount.success", get_discount__success=True) is True
    assert run("get_discount.success", get_discount__success=False) is False
    assert run("not get_discount.success") is True
