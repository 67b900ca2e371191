"""The ABL dialect of the one expression language: every condition and value the ABL spec writes, name resolution, errors."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontdesk.expr import (
    ExprSyntaxError,
    evaluate,
    function_names,
    lookup_function,
    parse_condition,
    parse_expression,
    parse_handlebars,
)
from frontdesk.ir.expr import (
    BoolOp,
    Call,
    Compare,
    ExprPart,
    Get,
    Implies,
    IsSet,
    Lit,
    Local,
    Not,
    ObjLit,
    Ref,
)
from frontdesk.ir.models import ExprCondition

TOOLS = ["search_hotels", "lookup_order", "check_blackout_dates", "validate_minimum_stay", "process_refund",
         "transfer_to_agent", "create_reservation"]
MEMORY = {"user.preferred_hotel_chains": "user", "project.exchange_rates": "project",
          "workflow.current_quote": "execution_tree", "user.email": "user", "user.loyalty_programs": "user",
          "user.past_bookings": "user"}


def cond(text: str, **kw):
    kw.setdefault("tools", TOOLS)
    kw.setdefault("memory_paths", MEMORY)
    parsed = parse_condition(text, "Hotel_Search", dialect="abl", **kw)
    assert isinstance(parsed, ExprCondition)
    return parsed.expr


def value(text: str, **kw):
    kw.setdefault("tools", TOOLS)
    kw.setdefault("memory_paths", MEMORY)
    return parse_expression(text, "Hotel_Search", dialect="abl", **kw)


def var(name: str) -> Ref:
    return Ref(space="var", scope="session", name=name)


def system(name: str) -> Ref:
    return Ref(space="system", scope="system", name=name)


INPUT = system("input")


# ---------------------------------------------------------------------------
# Every condition written in the spec (abl-specification.txt, abl-core-concepts.txt)
# ---------------------------------------------------------------------------

SPEC_CONDITIONS = [
    'lookup_order.status != "already_refunded"',
    "refund_id IS SET",
    "checkout > checkin",
    "has_loyalty == true AND loyalty_points > 5000",
    "booking.confirmed == true",
    "user.mentions_loyalty_program == true",
    "quote_ready == true",
    "selected_hotel IS SET",
    "user.email IS SET",
    'dispute_type == "card" IMPLIES card_unique_id IS SET',
    "clarification_count < 5",
    'beneficiary_country IN ["CU", "IR", "KP", "SY"]',
    "fraud_review_complete == true",
    "user.mentions_loyalty OR booking.ready",
    "search_results.count > 0 AND user.flexible_dates == true",
    "user.selects_hotel",
    "reservation.ready_for_payment == true",
    'user.intent == "also_need_flight"',
    'user.intent == "complaint" OR user.sentiment == "frustrated"',
    "needs_specialist == true",
    "user.is_authenticated == false",
    "needs_processing == true",
    "needs_external == true",
    "tool_failures > 3",
    'constraint_failures > 2 AND user.sentiment == "frustrated"',
    "booking.total > 5000",
    "user.wants_human_agent == true",
    "user.has_special_request AND NOT agent.can_handle",
    "user.mentions_legal OR user.mentions_lawsuit",
    "human.resolved == true",
    "human.handed_back == true",
    "human.escalated_further == true",
    "reservation.confirmed == true",
    'user.intent == "cancel" OR user.intent == "nevermind"',
    "handoff.completed == true",
    "escalate.completed == true",
    "order_confirmed == true",
    'context.channel == "voice"',
    "len(response) < 500",
    'context.channel == "sdk" OR context.channel == "web"',
    'transfer_to_agent.status == "waiting"',
    "destination AND checkin AND checkout",
    'input == "yes" OR yes',
    'input == "no" OR no',
    'input.contains("change")',
    r"input matches /room\s*\d+/",
    'recipientResult.status == "valid"',
    'recipientResult.status == "INVALID_ROUTING"',
    'recipientResult.status == "ACCOUNT_CLOSED"',
    "all_fields_gathered == true",
    "last_search_hotels_result.total > 0",
    'user.sentiment == "very_negative" AND sentiment_trajectory == "declining"',
    'language == "es"',
    'channel == "voice"',
    "booking.confirmed",
    "check_blackout_dates.allowed == true",
    "validate_minimum_stay.valid == true",
    "booking.ready AND user.loyalty_programs IS SET",
    "reservation.confirmed_pending_payment",
    'user.sentiment == "frustrated" OR user.wants_human_agent',
    "user.wants_human_agent",
    "handoff.completed",
    'user.intent == "cancel"',
    "reservation.ready_for_payment",
    "user.wants_human_agent OR user.sentiment == \"frustrated\"",
    "lookup_order.eligible == true",
    "refund_processed == true",
    "action_completed == true",
    'action_type == "modify"',
    "order.eligible == true",
    "refund_amount <= 1000",
]


@pytest.mark.parametrize("text", SPEC_CONDITIONS)
def test_every_spec_condition_parses(text: str) -> None:
    expr = cond(text)
    assert expr is not None
    # no bare ADL-style agent scope: every name is read the ABL way
    assert "Hotel_Search" not in expr.model_dump_json()


def test_transform_filter_with_the_item_variable() -> None:
    expr = cond('filter_type == "all" OR txn.type == filter_type', locals=["txn"])
    assert expr == BoolOp(op="or", items=[
        Compare(cmp="==", left=var("filter_type"), right=Lit(value="all")),
        Compare(cmp="==", left=Get(obj=Local(name="txn"), key=Lit(value="type")), right=var("filter_type")),
    ])


SPEC_VALUES = [
    'TO_NUMBER(REPLACE(raw_amount, "$", ""))',
    'COALESCE(preferred_currency, "USD")',
    "NOW()",
    "UNIQUE_ID(10)",
    '"a"',
    '"b"',
    "extracted_room_id",
    "recipientResult.bank_name",
    "recipientResult.account_holder",
    "selected_account.id",
    "preferred_currency",
    "recipient_routing",
    "auth_result.user_id",
    "auth_result.token",
    "page_size",
    "quoted_price",
    "{destination, hotel_chain, room_type, price, dates}",
    "{program, tier}",
    "{destination, hotel: selected_hotel.name, dates: {checkin, checkout}, price: reservation.total}",
    "{hotel: selected_hotel.name, chain: selected_hotel.chain, destination, price: reservation.total}",
    "{search_state}",
    "{resolution_type, resolution_details}",
    "{booking_id: selected_booking, action: action_type}",
    "{user_id, hotel_chain: selected_hotel.chain}",
    "{hotel_id, checkin, checkout, flexibility_days: 3}",
    "{user_id, hotel_chain}",
    "{hotel_id, room_type, dates}",
]
SPEC_MAP_VALUES = [
    "txn.id",
    'FORMAT_DATE(txn.date, "MMM DD")',
    "COALESCE(txn.merchant, txn.description)",
    'FORMAT_CURRENCY(ABS(txn.amount), "USD")',
    "UPPER(SUBSTRING(txn.type, 0, 1))",
    "UPPER(txn.category)",
]


@pytest.mark.parametrize("text", SPEC_VALUES)
def test_every_spec_value_parses(text: str) -> None:
    assert value(text) is not None


@pytest.mark.parametrize("text", SPEC_MAP_VALUES)
def test_every_spec_map_value_parses_with_the_item(text: str) -> None:
    expr = value(text, locals=["txn"])
    assert "Local" in repr(expr) or "local" in expr.model_dump_json()


# ---------------------------------------------------------------------------
# What the spec's forms lower to
# ---------------------------------------------------------------------------


def test_uppercase_keywords_and_literals() -> None:
    assert cond("a AND NOT b OR c") == BoolOp(op="or", items=[
        BoolOp(op="and", items=[var("a"), Not(item=var("b"))]), var("c")])
    assert cond("x IN [1, 2]") == Compare(cmp="in", left=var("x"), right=Lit(value=[1, 2]))
    assert cond("x NOT IN [1]") == Compare(cmp="not in", left=var("x"), right=Lit(value=[1]))
    assert cond("x IS NOT SET") == Not(item=IsSet(item=var("x")))
    assert cond("a IMPLIES b") == Implies(left=var("a"), right=var("b"))
    assert cond("x == TRUE OR y == FALSE OR z == NULL") == BoolOp(op="or", items=[
        Compare(cmp="==", left=var("x"), right=Lit(value=True)),
        Compare(cmp="==", left=var("y"), right=Lit(value=False)),
        Compare(cmp="==", left=var("z"), right=Lit(value=None)),
    ])


def test_lowercase_keeps_working_in_the_abl_dialect() -> None:
    assert cond("a and not b or c") == cond("a AND NOT b OR c")
    assert cond("x is set and y in [1] and z == true") == cond("x IS SET AND y IN [1] AND z == TRUE")


def test_keyword_prefixes_are_still_names() -> None:
    assert cond("android AND order_total") == BoolOp(op="and", items=[var("android"), var("order_total")])
    assert cond("INPUT_MODE == 1") == Compare(cmp="==", left=var("INPUT_MODE"), right=Lit(value=1))


WORDS = st.sampled_from(["a", "b", "count", "user_ok", "x1"])


@st.composite
def conditions(draw, depth: int = 0):
    """(lower-case text, upper-case text) of the same random condition."""
    if depth > 2 or draw(st.booleans()):
        name = draw(WORDS)
        kind = draw(st.sampled_from(["bare", "set", "notset", "in", "cmp", "lit"]))
        if kind == "bare":
            return name, name
        if kind == "set":
            return f"{name} is set", f"{name} IS SET"
        if kind == "notset":
            return f"{name} is not set", f"{name} IS NOT SET"
        if kind == "in":
            return f"{name} in [1, 2]", f"{name} IN [1, 2]"
        if kind == "lit":
            word = draw(st.sampled_from(["true", "false", "null"]))
            return f"{name} == {word}", f"{name} == {word.upper()}"
        return f"{name} >= 3", f"{name} >= 3"
    op = draw(st.sampled_from(["and", "or", "implies", "not"]))
    left = draw(conditions(depth + 1))
    if op == "not":
        return f"not ({left[0]})", f"NOT ({left[1]})"
    right = draw(conditions(depth + 1))
    return f"({left[0]}) {op} ({right[0]})", f"({left[1]}) {op.upper()} ({right[1]})"


@settings(max_examples=150, deadline=None)
@given(conditions())
def test_upper_and_lower_case_conditions_lower_alike(pair: tuple[str, str]) -> None:
    lower, upper = pair
    assert cond(lower) == cond(upper)


def test_input_and_the_intent_words_of_on_input() -> None:
    says_yes = Call(fn="SAYS_YES", args=[INPUT])
    assert cond('input == "yes" OR yes') == BoolOp(op="or", items=[
        Compare(cmp="==", left=INPUT, right=Lit(value="yes")), says_yes])
    assert cond("no") == Call(fn="SAYS_NO", args=[INPUT])
    # a member path or a local is not the intent word
    assert cond("yes.value") == Get(obj=var("yes"), key=Lit(value="value"))
    assert cond("yes", locals=["yes"]) == Local(name="yes")


def test_method_and_infix_text_tests() -> None:
    assert cond('input.contains("change")') == Call(fn="CONTAINS", args=[INPUT, Lit(value="change")])
    assert cond('input.includes("x")') == Call(fn="CONTAINS", args=[INPUT, Lit(value="x")])
    assert cond(r"input matches /room\s*\d+/") == Call(fn="MATCHES", args=[INPUT, Lit(value=r"room\s*\d+")])
    assert cond("input MATCHES /Room/i") == Call(fn="MATCHES", args=[INPUT, Lit(value="(?i)Room")])
    assert cond(r'input matches "a\d"') == Call(fn="MATCHES", args=[INPUT, Lit(value=r"a\d")])
    assert cond("input matches /a\\/b/") == Call(fn="MATCHES", args=[INPUT, Lit(value="a/b")])
    assert cond('note contains "x"') == Call(fn="CONTAINS", args=[var("note"), Lit(value="x")])
    # registry functions with dots still win over methods
    assert cond('re.search("a", input)') == Call(fn="re.search", args=[Lit(value="a"), INPUT])


def test_regex_literal_keeps_the_columns_of_what_follows() -> None:
    with pytest.raises(ExprSyntaxError) as err:
        cond(r"input matches /room\s*\d+/ AND AND x")
    assert err.value.column == len(r"input matches /room\s*\d+/ AND ") + 1


def test_a_division_is_not_a_regex() -> None:
    assert value("a / b / 2") is not None
    assert "MATCHES" not in repr(value("total / 2"))


def test_match_groups_and_braced_names() -> None:
    assert cond('match.0 == "room 4"') == Compare(
        cmp="==", left=Get(obj=system("match"), key=Lit(value=0)), right=Lit(value="room 4"))
    assert cond("match.room_id IS SET") == IsSet(item=Get(obj=system("match"), key=Lit(value="room_id")))
    assert cond("{{order_total}} > 10") == Compare(cmp=">", left=var("order_total"), right=Lit(value=10))
    assert cond("{{ session.cart.size }} > 0") == Compare(
        cmp=">", left=Get(obj=var("cart"), key=Lit(value="size")), right=Lit(value=0))


# ---------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("x", var("x")),
    ("a.b.c", Get(obj=Get(obj=var("a"), key=Lit(value="b")), key=Lit(value="c"))),
    ("session.x", var("x")),
    ("session.x.y", Get(obj=var("x"), key=Lit(value="y"))),
    ("system.turn", system("turn")),
    ("context.channel", system("channel")),
    ("input", INPUT),
    ("channel", system("channel")),
    ("language", system("language")),
    ("tool_failures", system("tool_failures")),
    ("constraint_failures", system("constraint_failures")),
    ("all_fields_gathered", system("all_fields_gathered")),
    ("sentiment_trajectory", system("sentiment_trajectory")),
    ("_clarification_count", system("_clarification_count")),
    ("_validation_retries.email", Get(obj=system("_validation_retries"), key=Lit(value="email"))),
    ("_pending_inferences", system("_pending_inferences")),
    ("_constraint_warnings", system("_constraint_warnings")),
    ("_disambiguation_intents", system("_disambiguation_intents")),
    ("_error", system("_error")),
    ("user_id", system("user_id")),
    ("user.intent", system("user.intent")),
    ("user.sentiment", system("user.sentiment")),
    ("handoff.completed", system("handoff.completed")),
    ("escalate.completed", system("escalate.completed")),
    ("result.total", Ref(space="result", scope="result", name="total")),
    ("result.rooms.0", Get(obj=Ref(space="result", scope="result", name="rooms"), key=Lit(value=0))),
    ("search_hotels.total", Ref(space="result", scope="search_hotels", name="total")),
    ("search_hotels", Ref(space="result", scope="search_hotels", name="value")),
    ("lookup_order.order.id", Get(obj=Ref(space="result", scope="lookup_order", name="order"), key=Lit(value="id"))),
    ("last_search_hotels_result", Ref(space="result", scope="search_hotels", name="value")),
    ("last_search_hotels_result.total", Ref(space="result", scope="search_hotels", name="total")),
    ("user.email", Ref(space="memory", scope="user", name="email")),
    ("user.past_bookings.0.hotel", Get(obj=Get(obj=Ref(space="memory", scope="user", name="past_bookings"),
                                               key=Lit(value=0)), key=Lit(value="hotel"))),
    ("project.exchange_rates.EUR", Get(obj=Ref(space="memory", scope="project", name="exchange_rates"),
                                       key=Lit(value="EUR"))),
    ("workflow.current_quote", Ref(space="memory", scope="execution_tree", name="current_quote")),
    ("user.flexible_dates", Get(obj=var("user"), key=Lit(value="flexible_dates"))),  # not declared: a variable
    ("agent.can_handle", Get(obj=var("agent"), key=Lit(value="can_handle"))),
])
def test_names(text: str, expected) -> None:
    assert value(text) == expected


def test_memory_paths_only_when_declared() -> None:
    assert value("user.email", memory_paths=None) == Get(obj=var("user"), key=Lit(value="email"))
    # a plain list of paths: the scope follows the root
    assert value("workflow.current_quote", memory_paths=["workflow.current_quote"]) == \
        Ref(space="memory", scope="execution_tree", name="current_quote")
    assert value("user.prefs.seat", memory_paths=["user.prefs", "user.prefs.seat"]) == \
        Ref(space="memory", scope="user", name="prefs.seat")


def test_tool_results_only_for_declared_tools() -> None:
    assert value("search_hotels.total", tools=()) == Get(obj=var("search_hotels"), key=Lit(value="total"))


def test_abl_ignores_the_agent_scope_and_literals_cannot_start_paths() -> None:
    assert parse_expression("x", "Some_Agent", dialect="abl") == var("x")
    with pytest.raises(ExprSyntaxError) as err:
        value("TRUE.x")
    assert err.value.column == 1


def test_object_shorthand() -> None:
    assert value("{destination, price: reservation.total}") == ObjLit(entries=[
        {"key": "destination", "value": var("destination")},
        {"key": "price", "value": Get(obj=var("reservation"), key=Lit(value="total"))},
    ])
    with pytest.raises(ExprSyntaxError, match="given twice"):
        value("{a, a: 1}")


def test_handlebars_in_the_abl_dialect() -> None:
    template = parse_handlebars("Found {{result.total}} hotels, {{user.email}}: {{search_hotels.total}}",
                                dialect="abl", tools=TOOLS, memory_paths=MEMORY)
    holes = [part.expr for part in template.parts if isinstance(part, ExprPart)]
    assert holes == [Ref(space="result", scope="result", name="total"), Ref(space="memory", scope="user", name="email"),
                     Ref(space="result", scope="search_hotels", name="total")]


# ---------------------------------------------------------------------------
# Evaluation of what the dialect lowers to
# ---------------------------------------------------------------------------


def run(text: str, values: dict, **kw):
    expr = cond(text, **kw)

    def resolve(ref: Ref):
        return values.get((ref.space, ref.scope, ref.name))

    return evaluate(expr, resolve)


@pytest.mark.parametrize(("message", "yes", "no"), [
    ("yes", True, False), ("Yes please!", True, False), ("yeah, book it", True, False), ("sure", True, False),
    ("ok", True, False), ("go ahead", True, False), ("no", False, True), ("No thanks", False, True),
    ("nope", False, True), ("not now", False, True), ("yes... actually no", False, False),
    ("maybe later", False, False), ("", False, False), ("I don't know", False, False),
])
def test_yes_and_no(message: str, yes: bool, no: bool) -> None:
    values = {("system", "system", "input"): message}
    assert run('input == "yes" OR yes', values) is (yes or message == "yes")
    assert run("no", values) is no


def test_contains_and_matches_evaluate() -> None:
    values = {("system", "system", "input"): "I want to CHANGE room 12"}
    assert run('input.contains("change")', values) is True
    assert run('input.contains("cancel")', values) is False
    assert run(r"input matches /room\s*\d+/", values) is True
    assert run(r"input matches /^room/", values) is False
    assert run('tags.contains("vip")', {("var", "session", "tags"): ["vip", "new"]}) is True
    assert run('tags.contains("VIP")', {("var", "session", "tags"): ["vip"]}) is False
    assert run('input.contains("x")', {}) is False


def test_spec_conditions_evaluate_as_written() -> None:
    values = {("var", "session", "beneficiary_country"): "IR"}
    assert run('beneficiary_country IN ["CU", "IR", "KP", "SY"]', values) is True
    values = {("var", "session", "dispute_type"): "card"}
    assert run('dispute_type == "card" IMPLIES card_unique_id IS SET', values) is False
    values[("var", "session", "card_unique_id")] = "C-1"
    assert run('dispute_type == "card" IMPLIES card_unique_id IS SET', values) is True
    values = {("result", "search_hotels", "total"): 0}
    assert run("last_search_hotels_result.total > 0", values) is False


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "column", "message"), [
    ("a AND", 3, "expected a condition after 'AND'"),
    ("a == (1", 6, "unclosed '('"),
    ("x IS", 3, "expected 'set' or 'not set' after 'is'"),
    ("input matches /a/q", 18, "unknown regex flag 'q'"),
    ("input matches /(/", 15, "invalid regular expression"),
    ('x.nothing("a")', 1, "unknown function 'x.nothing'"),
    ("ROUND()", 1, "ROUND() takes 1 to 2 arguments"),
    ('MASK(card, "last4x")', 12, 'must be "lastN"'),
    ("a = 1", 3, "use '=='"),
    ("", 1, "empty"),
    ("x == {{ }}", 6, "expected a name inside {{ }}"),
])
def test_errors_have_columns(text: str, column: int, message: str) -> None:
    with pytest.raises(ExprSyntaxError) as err:
        cond(text)
    assert message in err.value.message
    assert err.value.column == column


# ---------------------------------------------------------------------------
# ADL is unchanged
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "message"), [
    ("a AND b", "write 'and' in lower case"),
    ('input matches "x"', "expected an operator"),
    ("match.0", "expected an operator"),
    ("{a}", "unexpected '}'"),
    ('x.contains("a")', "unknown function 'x.contains'"),
])
def test_adl_does_not_take_abl_forms(text: str, message: str) -> None:
    with pytest.raises(ExprSyntaxError, match=re.escape(message)):
        parse_condition(text, "A")


def test_adl_names_are_unchanged() -> None:
    assert parse_condition("x", "A").expr == Ref(scope="A", name="x")
    assert parse_condition("TRUE", "A").expr == Ref(scope="A", name="TRUE")
    assert parse_expression("order.total", "A") == Ref(scope="order", name="total")
    assert parse_expression("order.total", "A", paths="flat") == Get(obj=Ref(scope="A", name="order"),
                                                                     key=Lit(value="total"))


# ---------------------------------------------------------------------------
# The built-in functions of section 8
# ---------------------------------------------------------------------------

SECTION_8 = {
    "ADD": 2, "SUB": 2, "MUL": 2, "DIV": 2, "ROUND": 2, "ABS": 1, "MIN": 2, "MAX": 2,
    "UPPER": 1, "LOWER": 1, "TRIM": 1, "SUBSTRING": 3, "REPLACE": 3, "SPLIT": 2, "JOIN": 2, "PAD_START": 3,
    "PAD_END": 3, "REPEAT": 2, "MASK": 3, "FORMAT_CURRENCY": 3, "FORMAT_DATE": 3, "ORDINAL": 1,
    "IS_ARRAY": 1, "IS_NUMBER": 1, "IS_STRING": 1, "TO_NUMBER": 1, "TO_STRING": 1,
    "LENGTH": 1, "ARRAY_FIND": 3, "ARRAY_FIND_INDEX": 3, "OBJECT_KEYS": 1, "OBJECT_VALUES": 1,
    "OBJECT_MERGE": None, "COALESCE": None, "NOW": 0, "UNIQUE_ID": 1,
}


def test_every_section_8_function_is_registered_with_its_arity() -> None:
    names = {n.upper() for n in function_names()}
    for name, max_args in SECTION_8.items():
        assert name in names, name
        fn = lookup_function(name)
        assert fn is not None
        assert fn.max_args == max_args, name


@pytest.mark.parametrize("name", [n for n, m in SECTION_8.items() if m is not None])
def test_section_8_calls_are_arity_checked_at_parse_time(name: str) -> None:
    fn = lookup_function(name)
    assert fn is not None and fn.max_args is not None
    args = ", ".join(["1"] * (fn.max_args + 1))
    with pytest.raises(ExprSyntaxError, match=r"takes"):
        value(f"{name}({args})")


def test_quoted_text_is_left_alone() -> None:
    assert cond('msg == "Hi {{name}}"') == Compare(cmp="==", left=var("msg"), right=Lit(value="Hi {{name}}"))
    assert cond('note == "x matches /a/"') == Compare(cmp="==", left=var("note"), right=Lit(value="x matches /a/"))
