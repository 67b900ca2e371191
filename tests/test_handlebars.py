"""Tests of Handlebars-style templates: lowering to IR template parts and rendering them."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from frontdesk.expr import EvalEnv, parse_handlebars, render_template, template_refs
from frontdesk.expr.template import TemplateSyntaxError
from frontdesk.ir.models import (
    EachPart,
    ExprPart,
    Get,
    IfPart,
    Lit,
    Local,
    Not,
    Ref,
    Template,
    TextPart,
)

AGENT = "cart"

CART = {
    "items": [
        {"name": "Mug", "quantity": 2, "price": 8},
        {"name": "Tea", "quantity": 1, "price": 5.5},
    ],
    "currency": "USD",
    "total": 21.5,
}


def render(text: str, values: dict, **kw) -> str:
    return render_template(parse_handlebars(text, AGENT), lambda ref: values.get(ref.name), **kw)


def test_holes_lower_to_expr_parts_with_flat_paths():
    template = parse_handlebars("Hi {{name}}, order {{order.id}}!", AGENT)
    assert template == Template(
        source="Hi {{name}}, order {{order.id}}!",
        parts=[
            TextPart(text="Hi "),
            ExprPart(expr=Ref(scope=AGENT, name="name")),
            TextPart(text=", order "),
            ExprPart(expr=Get(obj=Ref(scope=AGENT, name="order"), key=Lit(value="id"))),
            TextPart(text="!"),
        ],
    )


def test_each_lowers_to_each_part_with_this_and_index_locals():
    template = parse_handlebars("{{#each items}}{{@index}}:{{this.name}} {{/each}}", AGENT)
    assert template.parts == [
        EachPart(
            items=Ref(scope=AGENT, name="items"),
            var="this",
            body=[
                ExprPart(expr=Local(name="@index")),
                TextPart(text=":"),
                ExprPart(expr=Get(obj=Local(name="this"), key=Lit(value="name"))),
                TextPart(text=" "),
            ],
        )
    ]
    assert template_refs(template) == [Ref(scope=AGENT, name="items")]


def test_if_else_and_unless_lower_to_if_parts():
    template = parse_handlebars("{{#if vip}}Gold{{else}}Std{{/if}}{{#unless paid}}!{{/unless}}", AGENT)
    assert template.parts == [
        IfPart(condition=Ref(scope=AGENT, name="vip"), then=[TextPart(text="Gold")], otherwise=[TextPart(text="Std")]),
        IfPart(condition=Not(item=Ref(scope=AGENT, name="paid")), then=[TextPart(text="!")]),
    ]


def test_the_cart_summary_of_the_abl_spec_renders_line_by_line():
    text = (
        "Your Cart:\n"
        "{{#each items}}\n"
        "- {{this.name}} x{{this.quantity}} — {{this.price}} {{currency}}\n"
        "{{/each}}\n"
        "Total: {{total}} {{currency}}"
    )
    assert render(text, CART) == (
        "Your Cart:\n"
        "- Mug x2 — 8 USD\n"
        "- Tea x1 — 5.5 USD\n"
        "Total: 21.5 USD"
    )


def test_each_binds_this_index_first_last_and_nests_with_shadowing():
    values = {"groups": [{"name": "A", "tags": ["x", "y"]}, {"name": "B", "tags": ["z"]}]}
    text = ("{{#each groups}}{{this.name}}{{@index}}[{{#each this.tags}}{{@index}}{{this}}"
            "{{#unless @last}},{{/unless}}{{/each}}]{{#if @first}}; {{/if}}{{/each}}")
    assert render(text, values) == "A0[0x,1y]; B1[0z]"


def test_each_with_a_named_item_and_outer_values():
    text = "{{#each items as |item|}}{{item.name}}={{item.price * item.quantity}} {{currency}}; {{/each}}"
    assert render(text, CART) == "Mug=16 USD; Tea=5.5 USD; "


def test_each_else_runs_for_an_empty_or_unset_list():
    text = "{{#each items}}{{this}} {{else}}nothing yet{{/each}}"
    assert render(text, {"items": ["a", "b"]}) == "a b "
    assert render(text, {"items": []}) == "nothing yet"
    assert render(text, {}) == "nothing yet"


def test_if_else_if_chain():
    text = "{{#if n > 10}}big{{else if n > 5}}medium{{else}}small{{/if}}"
    assert [render(text, {"n": n}) for n in (20, 7, 1)] == ["big", "medium", "small"]


def test_unless_and_truthiness():
    text = "{{#unless items}}empty{{else}}{{items.length}}full{{/unless}}"
    assert render(text, {"items": []}) == "empty"
    assert render(text, {"items": [1]}).endswith("full")


def test_expressions_and_functions_inside_holes():
    values = {"total": 1234.5, "name": "ada"}
    text = '{{UPPER(name)}} owes {{FORMAT_CURRENCY(total, "USD")}} (ref {{UNIQUE_ID(4)}}, {{NOW()}})'
    env = EvalEnv(clock=lambda: datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC), random=random.Random(1))
    first = render(text, values, env=env)
    again = render(text, values, env=EvalEnv(clock=env.clock, random=random.Random(1)))
    assert first == again
    assert first.startswith("ADA owes $1,234.50 (ref ") and first.endswith(", 2024-01-02T03:04:05+00:00)")


def test_unset_holes_show_the_placeholder_and_are_reported():
    missing: list[Ref] = []
    text = "Hi {{name}} ({{order.id}})"
    assert render(text, {"order": {}}, on_missing=missing.append) == "Hi (none) ((none))"
    assert missing == [Ref(scope=AGENT, name="name"), Ref(scope=AGENT, name="order")]


def test_a_hole_that_fails_to_evaluate_shows_the_placeholder_and_is_reported():
    errors: list[str] = []
    text = "{{a / b}} left"
    assert render(text, {"a": 1, "b": 0}, on_error=lambda expr, exc: errors.append(str(exc))) == "(none) left"
    assert errors == ["division by zero"]


def test_comments_triple_braces_whitespace_control_and_parent_paths():
    text = "{{! a comment }}{{!-- {{not a tag}} --}}A  {{~name~}}  B {{{name}}} {{#each items}}{{../currency}}{{/each}}"
    assert render(text, {"name": "<b>", "items": [1], "currency": "USD"}) == "A<b>B <b> USD"


def test_blank_template():
    assert parse_handlebars("", AGENT).parts == []
    assert render("plain text", {}) == "plain text"


@pytest.mark.parametrize(
    ("text", "column", "message"),
    [
        ("Hi {{name", 4, "unclosed '{{'"),
        ("Hi {{}}", 4, "'{{}}' needs an expression"),
        ("{{#each items}}x", 1, "{{#each}} is not closed"),
        ("ab{{#if a}}x{{else if b}}y", 3, "{{#if}} is not closed"),
        ("{{#each items}}x{{/if}}", 17, "{{/if}} does not close {{#each}} (opened at column 1)"),
        ("x{{/each}}", 2, "unexpected {{/each}}: no block is open"),
        ("{{else}}", 1, "unexpected {{else}} outside {{#if}}, {{#unless}} or {{#each}}"),
        ("{{#if a}}1{{else}}2{{else}}3{{/if}}", 20, "unexpected a second {{else}}"),
        ("{{#with a}}{{/with}}", 1, "unsupported block '#with'"),
        ("{{> header}}", 1, "partials ({{> name}}) are not supported"),
        ("Hi {{this.name}}", 6, "'this' can only be used inside {{#each}}"),
        ("Hi {{a ==}}", 8, "expected a value after '=='"),
        ("Hi {{@index}}", 6, "'@index' can only be used inside {{#each}}"),
        ("{{#each}}{{/each}}", 1, "{{#each}} needs an expression"),
        ("{{#if x}}{{len(a, b)}}{{/if}}", 12, "len() takes 1 argument (value), but 2 given"),
    ],
)
def test_syntax_errors_carry_a_column(text, column, message):
    with pytest.raises(TemplateSyntaxError) as info:
        parse_handlebars(text, AGENT)
    assert info.value.message == message
    assert info.value.column == column


def test_handlebars_templates_round_trip_through_json():
    template = parse_handlebars("{{#each xs}}{{#if this > 1}}{{this}}{{else}}-{{/if}}{{/each}}", AGENT)
    assert Template.model_validate_json(template.model_dump_json()) == template


def test_block_tags_alone_on_their_lines_take_the_line_with_them():
    text = "Hello\n  {{#if vip}}\n  Gold member\n  {{else}}\n  Standard\n  {{/if}}\nBye"
    assert render(text, {"vip": True}) == "Hello\n  Gold member\nBye"
    assert render(text, {"vip": False}) == "Hello\n  Standard\nBye"
    assert render("a {{#if vip}}b{{/if}} c", {"vip": True}) == "a b c"  # inline tags keep their spaces
