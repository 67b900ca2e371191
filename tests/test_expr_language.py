"""Tests of the extended expression language: paths, indexing, arithmetic, is set, implies, literals, item-wise operations."""

from __future__ import annotations

import pytest

from frontdesk.expr import (
    EvalError,
    collect_refs,
    evaluate,
    parse_condition,
    parse_expression,
)
from frontdesk.ir.models import (
    Arith,
    BoolOp,
    Each,
    ExprCondition,
    Get,
    Implies,
    IsSet,
    ListLit,
    Lit,
    Local,
    Neg,
    Not,
    ObjEntry,
    ObjLit,
    Ref,
)

AGENT = "shop"


def ex(text: str, **kw):
    return parse_expression(text, AGENT, **kw)


def run(text: str, values: dict | None = None, **kw):
    """Evaluate `text`; `values` maps "name" (this agent) or "scope.name" to a value."""
    values = values or {}

    def lookup(ref: Ref):
        return values.get(ref.name if ref.scope == AGENT else f"{ref.scope}.{ref.name}")

    return evaluate(ex(text, **kw), lookup)


# ---------------------------------------------------------------------------
# Paths and indexing
# ---------------------------------------------------------------------------


def test_first_two_levels_are_the_ref_and_further_levels_are_gets():
    assert ex("order.items") == Ref(scope="order", name="items")
    assert ex("order.items.first.sku") == Get(
        obj=Get(obj=Ref(scope="order", name="items"), key=Lit(value="first")), key=Lit(value="sku")
    )
    assert ex("items[0]") == Get(obj=Ref(scope=AGENT, name="items"), key=Lit(value=0))
    assert ex('order["id"]') == Get(obj=Ref(scope=AGENT, name="order"), key=Lit(value="id"))
    assert ex("lookup.result[i].name") == Get(
        obj=Get(obj=Ref(scope="lookup", name="result"), key=Ref(scope=AGENT, name="i")), key=Lit(value="name")
    )


def test_flat_paths_make_every_further_level_a_member():
    assert ex("order.items", paths="flat") == Get(obj=Ref(scope=AGENT, name="order"), key=Lit(value="items"))


def test_member_and_index_access_on_nested_data():
    data = {"order.data": {"items": [{"sku": "A1", "tags": ["x", "y"]}, {"sku": "B2"}], "n": 2}}
    assert run("order.data.items[1].sku", data) == "B2"
    assert run("order.data.items[0].tags[-1]", data) == "y"
    assert run("order.data['items'][0]['sku']", data) == "A1"
    assert run("order.data.items[order.data.n - 1].sku", data) == "B2"


@pytest.mark.parametrize(
    "text",
    [
        "order.data.missing",
        "order.data.missing.deeper",
        "order.data.items[5]",
        "order.data.items[-9]",
        "order.data.items['x']",
        "order.data.n.x",
        "order.data.items[0.5]",
        "order.nothing[0]",
    ],
)
def test_missing_keys_and_indexes_give_none(text):
    data = {"order.data": {"items": [{"sku": "A1"}], "n": 2}}
    assert run(text, data) is None


def test_refs_inside_paths_are_collected():
    assert collect_refs(ex("a.b.c[i] + len(x)")) == [
        Ref(scope="a", name="b"), Ref(scope=AGENT, name="i"), Ref(scope=AGENT, name="x")
    ]


# ---------------------------------------------------------------------------
# Arithmetic
# ---------------------------------------------------------------------------


def test_arithmetic_precedence_and_associativity():
    assert ex("1 + 2 * 3") == Arith(arith="+", left=Lit(value=1),
                                    right=Arith(arith="*", left=Lit(value=2), right=Lit(value=3)))
    assert run("1 + 2 * 3") == 7
    assert run("(1 + 2) * 3") == 9
    assert run("10 - 4 - 3") == 3  # left to right
    assert run("2 * 3 % 4") == 2
    assert run("7 / 2") == 3.5
    assert run("-2 * 3") == -6
    assert run("- x + 1", {"x": 4}) == -3
    assert ex("-x") == Neg(item=Ref(scope=AGENT, name="x"))
    assert run("price * qty > 100 and qty > 1", {"price": 60, "qty": 2}) is True


def test_plus_joins_text_and_lists_and_numeric_text_counts_as_a_number():
    assert run("first + ' ' + last", {"first": "Ada", "last": "Lovelace"}) == "Ada Lovelace"
    assert run("a + b", {"a": [1], "b": [2, 3]}) == [1, 2, 3]
    assert run("n + 1", {"n": "41"}) == 42
    assert run("n * 2", {"n": " 2.5 "}) == 5.0


@pytest.mark.parametrize(
    ("text", "values", "needle"),
    [
        ("x / 0", {"x": 1}, "division by zero"),
        ("x % 0", {"x": 1}, "remainder of a division by zero"),
        ("x + 1", {}, "cannot add no value and the number 1"),
        ("x + 1", {"x": "abc"}, "cannot add the text 'abc' and the number 1"),
        ("x * 2", {"x": [1]}, "cannot multiply a list"),
        ("x - 1", {"x": True}, "True/False"),
        ("-x", {"x": "abc"}, "cannot negate"),
    ],
)
def test_arithmetic_errors_are_clear(text, values, needle):
    with pytest.raises(EvalError) as info:
        run(text, values)
    assert needle in str(info.value)


# ---------------------------------------------------------------------------
# is set, implies
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["x is set", "x IS SET", "x Is Set"])
def test_is_set_forms(text):
    assert ex(text) == IsSet(item=Ref(scope=AGENT, name="x"))


@pytest.mark.parametrize("text", ["x is not set", "x IS NOT SET", "x is NOT set"])
def test_is_not_set_forms(text):
    assert ex(text) == Not(item=IsSet(item=Ref(scope=AGENT, name="x")))


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, False), ("", False), ("   ", False), ("a", True), (0, True), (False, True), ([], True), ({}, True)],
)
def test_is_set_means_not_none_and_not_blank_text(value, expected):
    assert run("x is set", {"x": value}) is expected
    assert run("x is not set", {"x": value}) is (not expected)


def test_is_set_binds_tighter_than_and_and_works_on_paths():
    assert ex("a is set and b") == BoolOp(op="and", items=[IsSet(item=Ref(scope=AGENT, name="a")),
                                                          Ref(scope=AGENT, name="b")])
    assert run("order.data.id is set", {"order.data": {"id": 7}}) is True
    assert run("order.data.id is set", {"order.data": {}}) is False


@pytest.mark.parametrize(("a", "b", "expected"), [(True, True, True), (True, False, False),
                                                  (False, True, True), (False, False, True)])
def test_implies_truth_table(a, b, expected):
    assert run("a implies b", {"a": a, "b": b}) is expected


def test_implies_is_looser_than_or_and_right_associative():
    assert ex("a or b implies c") == Implies(
        left=BoolOp(op="or", items=[Ref(scope=AGENT, name="a"), Ref(scope=AGENT, name="b")]),
        right=Ref(scope=AGENT, name="c"),
    )
    assert ex("a implies b implies c") == Implies(
        left=Ref(scope=AGENT, name="a"),
        right=Implies(left=Ref(scope=AGENT, name="b"), right=Ref(scope=AGENT, name="c")),
    )
    condition = parse_condition('dispute_type == "card" implies card_id is set', AGENT)
    assert isinstance(condition, ExprCondition) and isinstance(condition.expr, Implies)
    assert run('dispute_type == "card" implies card_id is set', {"dispute_type": "card"}) is False
    assert run('dispute_type == "card" implies card_id is set', {"dispute_type": "cash"}) is True


def test_implies_skips_the_right_side_when_the_left_is_false():
    assert run("x is set implies int(x) > 3") is True  # int(None) would be fine, but not even evaluated


# ---------------------------------------------------------------------------
# List and object literals
# ---------------------------------------------------------------------------


def test_list_literals_of_fixed_values_stay_literals_and_computed_ones_are_listlit():
    assert ex("[1, 'a']") == Lit(value=[1, "a"])
    assert ex("[a, 1]") == ListLit(items=[Ref(scope=AGENT, name="a"), Lit(value=1)])
    assert run("[a, a + 1]", {"a": 1}) == [1, 2]
    assert run("x in [a, b]", {"x": "2", "a": 1, "b": 2}) is True


def test_object_literals():
    assert ex('{"k": 1, name: "x"}') == Lit(value={"k": 1, "name": "x"})
    assert ex('{"id": order.id}') == ObjLit(entries=[ObjEntry(key="id", value=Ref(scope="order", name="id"))])
    assert run('{"total": price * qty, "tags": [t]}', {"price": 2, "qty": 3, "t": "gift"}) == {
        "total": 6, "tags": ["gift"]
    }
    assert run("{}") == {}
    assert run('{"a": {"b": [x]}}.a.b[0]', {"x": 5}) == 5


def test_new_nodes_round_trip_through_json():
    condition = parse_condition(
        "filter(items, i => i.p > x * 2 and i.tags is set)[0] implies {'a': [y, -z]} in w", AGENT
    )
    assert ExprCondition.model_validate_json(condition.model_dump_json()) == condition


# ---------------------------------------------------------------------------
# Item-wise operations with local bindings
# ---------------------------------------------------------------------------

BOOKS = [
    {"title": "Emma", "price": 7, "tags": ["classic"]},
    {"title": "Dune", "price": 9, "tags": ["sf", "classic"]},
    {"title": "Ubik", "price": 5, "tags": []},
    {"title": "Zed", "tags": ["sf"]},
]


def test_filter_map_sort_by_parse_to_each_with_locals():
    assert ex("filter(books, b => b.price > 6)") == Each(
        kind="filter", source=Ref(scope=AGENT, name="books"), var="b",
        body=parse_expression("b.price > 6", AGENT, locals=["b"]),
    )
    assert parse_expression("b.price", AGENT, locals=["b"]) == Get(obj=Local(name="b"), key=Lit(value="price"))
    each = ex("map(books, b => b.title)")
    assert each.body == Get(obj=Local(name="b"), key=Lit(value="title"))
    assert ex("sort_by(books, b => b.price, 'desc')").descending is True
    assert ex("SORT_BY(books, b => b.price)").kind == "sort_by"


def test_filter_map_sort_by_evaluate():
    data = {"books": BOOKS, "limit": 6}
    assert [b["title"] for b in run("filter(books, b => b.price > limit)", data)] == ["Emma", "Dune"]
    assert run("map(books, b => b.title)", data) == ["Emma", "Dune", "Ubik", "Zed"]
    assert [b["title"] for b in run("sort_by(books, b => b.price)", data)] == ["Ubik", "Emma", "Dune", "Zed"]
    assert [b["title"] for b in run("sort_by(books, b => b.price, 'desc')", data)] == ["Dune", "Emma", "Ubik", "Zed"]
    assert [b["title"] for b in run("sort_by(books, b => b.title, true)", data)] == ["Zed", "Ubik", "Emma", "Dune"]
    assert run("any(books, b => b.price > 8)", data) is True
    assert run("all(books, b => b.price > 8)", data) is False
    assert run("find(books, b => 'sf' in b.tags).title", data) == "Dune"
    assert run("find(books, b => b.price > 100)", data) is None
    assert run("count(books, b => 'classic' in b.tags)", data) == 2
    assert run("map(filter(books, b => b.price is set), b => b.price * 2)", data) == [14, 18, 10]
    assert run("filter(nothing, b => true)", data) == []


def test_nested_bindings_see_outer_locals_and_inner_ones_shadow():
    data = {"books": BOOKS}
    # the inner t is a tag, the outer b still the book
    assert run("map(books, b => map(b.tags, t => b.title + ':' + t))", data) == [
        ["Emma:classic"], ["Dune:sf", "Dune:classic"], [], ["Zed:sf"]
    ]
    # the same name bound twice: the inner binding wins inside, the outer one outside it
    assert run("map(books, x => [x.title, map(x.tags, x => upper(x))])", data) == [
        ["Emma", ["CLASSIC"]], ["Dune", ["SF", "CLASSIC"]], ["Ubik", []], ["Zed", ["SF"]]
    ]


def test_a_local_shadows_an_argument_of_the_same_name():
    assert run("map(items, price => price * 2)", {"items": [1, 2], "price": 100}) == [2, 4]
    assert collect_refs(ex("map(items, price => price * qty)")) == [
        Ref(scope=AGENT, name="items"), Ref(scope=AGENT, name="qty")
    ]


def test_item_wise_operation_on_a_non_list_is_an_error():
    with pytest.raises(EvalError, match="filter needs a list"):
        run("filter(x, i => i)", {"x": 5})


def test_handmade_each_ir_evaluates_with_local():
    expr = Each(kind="map", source=Lit(value=[1, 2]), var="n",
                body=Arith(arith="*", left=Local(name="n"), right=Lit(value=10)))
    assert evaluate(expr, lambda ref: None) == [10, 20]
    with pytest.raises(EvalError, match="not bound"):
        evaluate(Local(name="n"), lambda ref: None)


def test_ref_space_defaults_to_var_and_is_handed_to_the_resolver():
    seen: list[Ref] = []
    expr = Get(obj=Ref(scope="user", name="prefs", space="memory"), key=Lit(value="seat"))
    assert evaluate(expr, lambda ref: seen.append(ref) or {"seat": "aisle"}) == "aisle"
    assert seen == [Ref(scope="user", name="prefs", space="memory")]
    assert Ref(scope="a", name="b").space == "var"
