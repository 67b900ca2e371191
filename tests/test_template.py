"""Tests of bot message templates: parsing `${...}` holes, rendering and format_value."""

from __future__ import annotations

import pytest

from frontdesk.expr import (
    TemplateSyntaxError,
    format_value,
    parse_template,
    render_template,
    template_refs,
)
from frontdesk.expr.template import display_value
from frontdesk.ir.models import ExprPart, Get, Lit, Ref, Template, TextPart

AGENT = "greeting"


def test_both_reference_forms():
    template = parse_template("Hello, ${user}! or ${get_user_name.user_name}!", AGENT)
    assert template == Template(
        source="Hello, ${user}! or ${get_user_name.user_name}!",
        parts=[
            TextPart(text="Hello, "),
            ExprPart(expr=Ref(scope=AGENT, name="user")),
            TextPart(text="! or "),
            ExprPart(expr=Ref(scope="get_user_name", name="user_name")),
            TextPart(text="!"),
        ],
    )


def test_whitespace_inside_braces():
    template = parse_template("${ user }${  shop . city  }", AGENT)
    assert template.parts == [
        ExprPart(expr=Ref(scope=AGENT, name="user")),
        ExprPart(expr=Ref(scope="shop", name="city")),
    ]


def test_plain_text_and_empty_text():
    assert parse_template("No holes here.", AGENT).parts == [TextPart(text="No holes here.")]
    assert parse_template("", AGENT).parts == []


def test_literal_dollar():
    template = parse_template("Costs $5, or $${price} {x} $", AGENT)
    assert template.parts == [
        TextPart(text="Costs $5, or $"),
        ExprPart(expr=Ref(scope=AGENT, name="price")),
        TextPart(text=" {x} $"),
    ]


def test_unicode_names():
    assert template_refs(parse_template("${café}", AGENT)) == [Ref(scope=AGENT, name="café")]


def test_deeper_paths_are_members_of_the_scope_value():
    template = parse_template("${order.items.first}", AGENT)
    assert template.parts == [ExprPart(expr=Get(obj=Ref(scope="order", name="items"), key=Lit(value="first")))]
    assert template_refs(template) == [Ref(scope="order", name="items")]
    values = {("order", "items"): {"first": "Dune"}}
    assert render_template(template, lambda ref: values.get((ref.scope, ref.name))) == "Dune"
    missing: list[Ref] = []
    assert render_template(template, lambda ref: {"second": 1}, on_missing=missing.append) == "(none)"
    assert missing == [Ref(scope="order", name="items")]


def test_template_refs_in_order():
    template = parse_template("${a} ${b.c} ${a}", AGENT)
    assert template_refs(template) == [
        Ref(scope=AGENT, name="a"),
        Ref(scope="b", name="c"),
        Ref(scope=AGENT, name="a"),
    ]


@pytest.mark.parametrize(
    ("text", "column", "message"),
    [
        ("Hi ${name", 4, "unclosed '${'"),
        ("Hi ${a ${b}", 4, "unclosed '${'"),
        ("Hi ${}", 4, "empty '${}'"),
        ("Hi ${   }", 4, "empty '${}'"),
        ("Hi ${ first name}", 7, "'first name' is not a valid name"),
        ("Hi ${a..c}", 6, "'a..c' is not a valid name"),
        ("Hi ${1st}", 6, "'1st' is not a valid name"),
        ("Hi ${a.}", 6, "'a.' is not a valid name"),
        ("Hi ${order-id}", 6, "'order-id' is not a valid name"),
    ],
)
def test_template_errors(text, column, message):
    with pytest.raises(TemplateSyntaxError) as info:
        parse_template(text, AGENT)
    assert info.value.message == message
    assert info.value.column == column
    assert info.value.hint


def test_render_template():
    template = parse_template("Why not try ${restaurant}: ${web.description} (${seats} seats)", "rec")
    values = {
        ("rec", "restaurant"): "In-N-Out",
        ("web", "description"): "burgers",
        ("rec", "seats"): 12.0,
    }
    assert render_template(template, lambda ref: values[(ref.scope, ref.name)]) == "Why not try In-N-Out: burgers (12 seats)"


def test_render_shows_unset_values_as_a_placeholder_not_as_nothing():
    template = parse_template("I'll text your phone ${phone}. Shall I place it?", AGENT)
    assert render_template(template, lambda ref: None) == "I'll text your phone (none). Shall I place it?"
    books = parse_template("You have selected these books so far: ${books}.", AGENT)
    for unset in (None, [], "", "   ", [None, ""], {}):
        assert render_template(books, lambda ref, v=unset: v) == "You have selected these books so far: (none)."
    assert render_template(books, lambda ref: None, missing_text="nothing yet") == \
        "You have selected these books so far: nothing yet."


def test_render_reports_each_unset_reference_to_the_caller():
    template = parse_template("${name} ordered ${books} (${count}) for ${shop.city}", AGENT)
    values = {"name": "Ada", "books": [], "count": 0, "city": None}
    missing: list[Ref] = []
    text = render_template(template, lambda ref: values[ref.name], on_missing=missing.append)
    assert text == "Ada ordered (none) (0) for (none)"
    assert missing == [Ref(scope=AGENT, name="books"), Ref(scope="shop", name="city")]


def test_render_lists_as_a_person_writes_them():
    template = parse_template("Books: ${books}.", AGENT)
    cases = {
        ("Dune",): "Books: Dune.",
        ("Dune", "Emma"): "Books: Dune and Emma.",
        ("Dune", "Emma", "Ulysses"): "Books: Dune, Emma and Ulysses.",
        ("Dune", None, "Emma"): "Books: Dune and Emma.",
    }
    for books, text in cases.items():
        assert render_template(template, lambda ref, b=list(books): b) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "(none)"),
        ("", "(none)"),
        ([], "(none)"),
        (0, "0"),
        (False, "False"),
        (3.0, "3"),
        (["a", 1, 2.0, None], "a, 1 and 2"),
        ({"name": "Golden Dragon", "price": 35.0, "note": None}, "name: Golden Dragon, price: 35, note: (none)"),
        ([{"title": "Dune", "price": 9}, {"title": "Emma", "price": 7}], "title: Dune, price: 9; title: Emma, price: 7"),
        ({"b", "a"}, "a and b"),
    ],
)
def test_display_value(value, text):
    assert display_value(value) == text


def test_display_value_survives_cycles():
    data: list = []
    data.append(data)
    assert display_value(data) in ("(none)", "...")  # no RecursionError
    other: list = [1]
    other.append(other)
    assert display_value(other).startswith("1 and 1")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, ""),
        ("text", "text"),
        (True, "True"),
        (False, "False"),
        (3, "3"),
        (3.0, "3"),
        (-2.0, "-2"),
        (2.5, "2.5"),
        (0.1 + 0.2, "0.3"),
        (float("inf"), "inf"),
        (["a", 1, 2.0, None], "a, 1, 2, "),
        ({"name": "Golden Dragon", "price": 35.0}, "name: Golden Dragon, price: 35"),
        ({"dishes": ["Tofu", "Rice"]}, "dishes: Tofu, Rice"),
        ([], ""),
        ({}, ""),
        ((1, 2), "1, 2"),
    ],
)
def test_format_value(value, text):
    assert format_value(value) == text


def test_format_value_survives_cycles():
    data: list = [1]
    data.append(data)
    assert format_value(data).startswith("1, 1, 1")
