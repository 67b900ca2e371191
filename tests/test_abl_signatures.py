"""ABL tool signatures and types read into JSON schemas: every TOOLS line of the spec, defaults, errors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontdesk.lang.abl.signatures import (
    SignatureError,
    ToolSignature,
    parse_signature,
    parse_type,
    type_to_schema,
)

STRING = {"type": "string"}
NUMBER = {"type": "number"}
BOOLEAN = {"type": "boolean"}
DATE = {"type": "string", "format": "date"}


def ref(name: str) -> dict:
    return {"$ref": f"#/types/{name}"}


def obj(required: list[str] | None = None, **props) -> dict:
    schema: dict = {"type": "object", "properties": props}
    if required is None:
        required = list(props)
    if required:
        schema["required"] = required
    return schema


GET_HOTEL_DETAILS = """get_hotel_details(hotel_id: string) -> {
    name: string,
    rating: number,
    amenities: string[],
    rooms_available: number,
    price_per_night: number
  }"""

# Every TOOLS signature of abl-specification.txt and abl-core-concepts.txt, with what it reads as.
SPEC_SIGNATURES = [
    ("check_blackout_dates(destination: string, checkin: date, checkout: date) -> {allowed: boolean, reason?: string}",
     [("destination", STRING), ("checkin", DATE), ("checkout", DATE)],
     obj(["allowed"], allowed=BOOLEAN, reason=STRING), ()),
    ("search_hotels(destination: string, checkin: date, checkout: date, guests: number = 2) -> Hotel[]",
     [("destination", STRING), ("checkin", DATE), ("checkout", DATE), ("guests", NUMBER)],
     {"type": "array", "items": ref("Hotel")}, ("Hotel",)),
    (GET_HOTEL_DETAILS, [("hotel_id", STRING)],
     obj(name=STRING, rating=NUMBER, amenities={"type": "array", "items": STRING}, rooms_available=NUMBER,
         price_per_night=NUMBER), ()),
    ("create_reservation(hotel_id: string, guest_info: GuestInfo) -> Reservation",
     [("hotel_id", STRING), ("guest_info", ref("GuestInfo"))], ref("Reservation"), ("GuestInfo", "Reservation")),
    ("gmail_lookup(query: string) -> Result", [("query", STRING)], ref("Result"), ("Result",)),
    ("charge_card(amount: number) -> Result", [("amount", NUMBER)], ref("Result"), ("Result",)),
    ("lookup_order(order_id: string) -> {order_id: string, items: object[], total: number, status: string}",
     [("order_id", STRING)],
     obj(order_id=STRING, items={"type": "array", "items": {"type": "object"}}, total=NUMBER, status=STRING), ()),
    ("process_refund(order_id: string, item_id: string, reason: string) -> {refund_id: string, amount: number}",
     [("order_id", STRING), ("item_id", STRING), ("reason", STRING)], obj(refund_id=STRING, amount=NUMBER), ()),
    ("show_carousel(items: object[]) -> {displayed: boolean}",
     [("items", {"type": "array", "items": {"type": "object"}})], obj(displayed=BOOLEAN), ()),
    (("validate_minimum_stay(destination: string, checkin: date, checkout: date) -> "
      "{valid: boolean, minimum: number, nights: number}"),
     [("destination", STRING), ("checkin", DATE), ("checkout", DATE)],
     obj(valid=BOOLEAN, minimum=NUMBER, nights=NUMBER), ()),
    ("get_hotel_details(hotel_id: string) -> HotelDetails", [("hotel_id", STRING)], ref("HotelDetails"),
     ("HotelDetails",)),
    ("check_availability(hotel_id: string, room_type: string, dates: DateRange) -> {available: boolean, price: number}",
     [("hotel_id", STRING), ("room_type", STRING), ("dates", ref("DateRange"))],
     obj(available=BOOLEAN, price=NUMBER), ("DateRange",)),
    ("create_reservation(hotel_id: string, room_type: string, dates: DateRange, guest: GuestInfo) -> Reservation",
     [("hotel_id", STRING), ("room_type", STRING), ("dates", ref("DateRange")), ("guest", ref("GuestInfo"))],
     ref("Reservation"), ("DateRange", "GuestInfo", "Reservation")),
    ("get_invoice(customer_id: string) -> {invoice: object}", [("customer_id", STRING)],
     obj(invoice={"type": "object"}), ()),
    ("process_refund(invoice_id: string, amount: number) -> {success: boolean}",
     [("invoice_id", STRING), ("amount", NUMBER)], obj(success=BOOLEAN), ()),
    ("search_flights(origin: string, destination: string, date: date) -> {flights: array}",
     [("origin", STRING), ("destination", STRING), ("date", DATE)], obj(flights={"type": "array"}), ()),
    ("create_booking(flight_id: string, passenger: object) -> {booking_id: string}",
     [("flight_id", STRING), ("passenger", {"type": "object"})], obj(booking_id=STRING), ()),
    ("check_availability(flight_id: string) -> {seats: number, price: number}",
     [("flight_id", STRING)], obj(seats=NUMBER, price=NUMBER), ()),
    ("lookup_order(order_id: string) -> {order: object, eligible: boolean}",
     [("order_id", STRING)], obj(order={"type": "object"}, eligible=BOOLEAN), ()),
    ("process_refund(order_id: string, reason: string) -> {refund_id: string, amount: number}",
     [("order_id", STRING), ("reason", STRING)], obj(refund_id=STRING, amount=NUMBER), ()),
]


@pytest.mark.parametrize(("text", "params", "returns", "types"), SPEC_SIGNATURES)
def test_every_spec_signature(text: str, params: list, returns: dict, types: tuple) -> None:
    sig = parse_signature(text)
    assert isinstance(sig, ToolSignature)
    assert sig.name == text.split("(")[0]
    assert [(p.name, p.schema) for p in sig.params] == params
    assert sig.returns == returns
    assert sig.types == types
    assert sig.source == text


def test_defaults_make_a_parameter_optional() -> None:
    sig = parse_signature(SPEC_SIGNATURES[1][0])
    guests = sig.params[-1]
    assert (guests.required, guests.default, guests.has_default) == (False, 2, True)
    assert all(p.required and not p.has_default for p in sig.params[:-1])
    assert sig.params_schema() == {
        "type": "object",
        "properties": {"destination": STRING, "checkin": DATE, "checkout": DATE, "guests": {**NUMBER, "default": 2}},
        "required": ["destination", "checkin", "checkout"],
    }


@pytest.mark.parametrize(("default", "declared", "expected"), [
    ('"USD"', "string", "USD"),
    ("'EUR'", "string", "EUR"),
    ("3", "number", 3),
    ("-2.5", "number", -2.5),
    ("1e3", "number", 1000.0),
    ("true", "boolean", True),
    ("FALSE", "boolean", False),
    ("null", "string", None),
    ("[]", "array", []),
    ('["a", 1]', "array", ["a", 1]),
    ('{mode: "fast", "n": 2}', "object", {"mode": "fast", "n": 2}),
    ("USD", "string", "USD"),
    ('"x"', '"x" | "y"', "x"),
])
def test_defaults_of_every_literal_kind(default: str, declared: str, expected) -> None:
    param = parse_signature(f"f(p: {declared} = {default}) -> any").params[0]
    assert param.default == expected
    assert param.has_default and not param.required


def test_optional_parameters_and_types() -> None:
    sig = parse_signature("f(a: email, b?: phone, c: integer, d: string[][], e: array<Room>, f: any) -> object")
    assert [(p.name, p.required) for p in sig.params] == [("a", True), ("b", False), ("c", True), ("d", True),
                                                          ("e", True), ("f", True)]
    assert sig.params[0].schema == {"type": "string", "format": "email"}
    assert sig.params[1].schema == {"type": "string", "format": "phone"}
    assert sig.params[3].schema == {"type": "array", "items": {"type": "array", "items": STRING}}
    assert sig.params[4].schema == {"type": "array", "items": ref("Room")}
    assert sig.params[5].schema == {}
    assert [p.type_name for p in sig.params] == ["string", "string", "integer", "array", "array", "any"]
    assert parse_signature("f(g: GuestInfo)").params[0].type_name == "object"
    assert sig.returns == {"type": "object"}
    assert sig.types == ("Room",)


def test_no_parameters_and_no_return() -> None:
    sig = parse_signature("ping()")
    assert (sig.name, sig.params, sig.returns) == ("ping", (), None)


def test_comments_and_trailing_commas_in_a_multiline_return() -> None:
    text = "f(a: string,) -> {\n  ok: boolean,  # whether it worked\n  rooms?: Room[],\n}"
    sig = parse_signature(text)
    assert sig.returns == obj(["ok"], ok=BOOLEAN, rooms={"type": "array", "items": ref("Room")})


@pytest.mark.parametrize(("text", "schema"), [
    ("string", STRING),
    ("date", DATE),
    ("Hotel[]", {"type": "array", "items": ref("Hotel")}),
    ("{points: number, rewards: Reward[]}", obj(points=NUMBER, rewards={"type": "array", "items": ref("Reward")})),
    ("{loyalty_tier: string, points_balance: number, available_rewards: Reward[]}",
     obj(loyalty_tier=STRING, points_balance=NUMBER, available_rewards={"type": "array", "items": ref("Reward")})),
    ("{best_price: number, best_dates: DateRange, savings: number}",
     obj(best_price=NUMBER, best_dates=ref("DateRange"), savings=NUMBER)),
    ("{available: boolean, alternative_rooms?: Room[]}",
     obj(["available"], available=BOOLEAN, alternative_rooms={"type": "array", "items": ref("Room")})),
    ("'pending' | 'confirmed' | 'cancelled'", {"enum": ["pending", "confirmed", "cancelled"]}),
    ("string | null", {"type": "string", "nullable": True}),
    ("string | number", {"anyOf": [STRING, NUMBER]}),
    ("(string | number)[]", {"type": "array", "items": {"anyOf": [STRING, NUMBER]}}),
    ("String", STRING),
])
def test_type_to_schema(text: str, schema: dict) -> None:
    assert type_to_schema(text) == schema


def test_parse_type_lists_named_types_once_in_order() -> None:
    info = parse_type("{a: Room, b: Hotel[], c: Room}")
    assert info.types == ("Room", "Hotel")


@pytest.mark.parametrize(("text", "column", "message"), [
    ("f(a: strng) -> x", 6, "unknown type 'strng'"),
    ("f(a string)", 5, "unexpected 'string'"),
    ('f(a: number = "x")', 15, "must be a number"),
    ("f(a: boolean = 1)", 16, "must be a boolean"),
    ('f(a: "x" | "y" = "z")', 18, "must be one of"),
    ("f(a: string", 12, "ends too early"),
    ("f(a: string, a: number)", 14, "given twice"),
    ("f(a: {x: string, x: number})", 18, "given twice"),
    ('f(a: "x)', 6, "unclosed text"),
    ("f(a: map<string>)", 6, "unknown generic type"),
    ("f(a: string) -> $", 17, "unexpected character"),
    ("", 1, "empty"),
])
def test_errors(text: str, column: int, message: str) -> None:
    with pytest.raises(SignatureError) as err:
        parse_signature(text)
    assert message in err.value.message
    assert err.value.column == column


def test_error_line_in_a_multiline_signature() -> None:
    with pytest.raises(SignatureError) as err:
        parse_signature("f(a: string) -> {\n  ok: boolean,\n  bad: strng\n}")
    assert err.value.line == 3
    assert err.value.hint is not None and "string" in err.value.hint


def test_type_errors() -> None:
    with pytest.raises(SignatureError):
        type_to_schema("{a: }")
    with pytest.raises(SignatureError, match="unknown type"):
        type_to_schema("hotel")


NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
SIMPLE = st.sampled_from(["string", "number", "boolean", "date", "object", "array", "Hotel", "string[]"])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(NAMES, SIMPLE, st.booleans()), min_size=0, max_size=6, unique_by=lambda t: t[0]),
       SIMPLE)
def test_generated_signatures_read_back(params: list[tuple[str, str, bool]], returns: str) -> None:
    text = "tool_x(" + ", ".join(f"{n}{'?' if opt else ''}: {t}" for n, t, opt in params) + f") -> {returns}"
    sig = parse_signature(text)
    assert [p.name for p in sig.params] == [n for n, _, _ in params]
    assert [p.required for p in sig.params] == [not opt for _, _, opt in params]
    assert [p.schema for p in sig.params] == [type_to_schema(t) for _, t, _ in params]
    assert sig.returns == type_to_schema(returns)
