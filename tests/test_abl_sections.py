"""The compilers of ABL's declarative sections (lang/abl/sections/) on the spec's own examples, and each diagnostic they emit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from frontdesk.diagnostics import DiagnosticBag
from frontdesk.expr.parser import parse_expression
from frontdesk.ir.behaviour import Action, AgentRules
from frontdesk.lang.abl.context import SectionContext
from frontdesk.lang.abl.outline import Node, read_outline
from frontdesk.lang.abl.sections import (
    execution,
    gather,
    guardrails,
    memory,
    meta,
    rules,
    templates,
)

# Conditions written with ABL's upper-case AND / OR / NOT / IMPLIES / IS SET need the ABL dialect of
# the expression parser; without it they are ABL013 errors, so those tests are skipped.
abl_dialect = pytest.mark.skipif("dialect" not in parse_expression.__code__.co_varnames,
                                 reason="the expression parser has no ABL dialect yet")


class Compiled:
    """A section compiled with a fresh context: the rules, the context and the diagnostics."""

    def __init__(self, text: str, compile_fn: Callable[..., Any] | None, *, tools: set[str] | None = None,
                 rules_in: AgentRules | None = None) -> None:
        self.bag = DiagnosticBag()
        self.root = read_outline(text, "t.agent.abl", self.bag)
        assert not self.bag.items, [d.message for d in self.bag.items]  # the snippet itself reads cleanly
        self.ctx = SectionContext(bag=self.bag, file="t.agent.abl", agent="Test_Agent")
        if tools:
            self.ctx.tools = set(tools)
        self.rules = rules_in or AgentRules()
        if compile_fn is not None:
            for section in self.root.children:
                compile_fn(section, self.ctx, self.rules)

    @property
    def section(self) -> Node:
        return self.root.children[0]

    @property
    def diagnostics(self) -> list[tuple[str, int, int]]:
        return [(d.code, d.span.line if d.span else 0, d.span.column if d.span else 0) for d in self.bag.items]

    @property
    def codes(self) -> list[str]:
        return [d.code for d in self.bag.items]

    def warnings(self) -> list[tuple[str, int, int]]:
        return [(d.code, d.span.line, d.span.column) for d in self.bag.items if not d.is_error and d.span]


def refs(node: Any) -> list[str]:
    """The names a dumped expression reads (Ref names, and the member names of Get on a Ref)."""
    data = node.model_dump() if hasattr(node, "model_dump") else node
    out: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if value.get("op") == "ref":
                out.append(value["name"])
            elif value.get("op") == "get" and isinstance(value.get("obj"), dict) and value["obj"].get("op") == "ref":
                key = value.get("key", {})
                out.append(f"{value['obj']['name']}.{key.get('value')}")
                return
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(data)
    return out


def text_of(template) -> str:
    return template.source if template is not None else ""


# ---------------------------------------------------------------------------------------------------
# GATHER
# ---------------------------------------------------------------------------------------------------

REFUND_GATHER = """\
GATHER:
  order_id:
    prompt: "Could you share your order number?"
    type: string
    required: true
  refund_reason:
    prompt: "What's the reason for the refund?"
    type: string
    required: true
    validate: "Must describe a specific issue"
"""


def test_gather_reasoning_agent_fields() -> None:
    c = Compiled(REFUND_GATHER, gather.compile_gather)
    assert c.diagnostics == []
    order, reason = c.rules.gather
    assert (order.name, order.prompt, order.type, order.required, order.activation) == (
        "order_id", "Could you share your order number?", "string", True, "required")
    assert order.span is not None and (order.span.line, order.span.column) == (2, 3)
    assert reason.validations[0].kind == "llm"
    assert reason.validations[0].rule == "Must describe a specific issue"
    assert c.ctx.fields == {"order_id", "refund_reason"}


STANDALONE_GATHER = """\
GATHER:
  destination:
    prompt: "Where would you like to stay?"
    type: string
    required: true
    validate: "Must be a valid city name"

  checkin:
    prompt: "What's your check-in date?"
    type: date
    required: true
    validate: "Must be today or future date"

  guests:
    prompt: "How many guests will be staying?"
    type: number
    required: false
    default: 2
    validate: "Must be between 1 and 10"

  room_preference:
    prompt: "Any room preferences? (king bed, ocean view, etc.)"
    type: string
    required: false
"""


def test_gather_standalone_fields() -> None:
    c = Compiled(STANDALONE_GATHER, gather.compile_gather)
    assert c.diagnostics == []
    fields = {f.name: f for f in c.rules.gather}
    assert list(fields) == ["destination", "checkin", "guests", "room_preference"]
    assert fields["checkin"].type == "date"
    guests = fields["guests"]
    assert (guests.type, guests.required, guests.default, guests.activation) == ("number", False, 2, "optional")
    assert fields["room_preference"].required is False


VALIDATION_GATHER = r"""GATHER:
  policy_number:
    prompt: "What is your policy number?"
    type: string
    required: true
    validate:
      type: pattern
      rule: "^POL-[A-Z]{2}\\d{6}$"
      error: "Policy number must be in format POL-XX999999"
      max_retries: 3

  cabin_class:
    prompt: "What class would you like to fly?"
    type: string
    required: true
    validate:
      type: enum
      rule: "economy, premium_economy, business, first"
    infer: true
    infer_confirm: true
  guests:
    type: number
    validate:
      range: "1-10"
  checkout:
    type: date
    validate:
      custom: "checkout > checkin"
"""


def test_gather_typed_validations() -> None:
    c = Compiled(VALIDATION_GATHER, gather.compile_gather)
    assert c.diagnostics == []
    fields = {f.name: f for f in c.rules.gather}
    check = fields["policy_number"].validations[0]
    assert (check.kind, check.rule, check.error, check.max_retries) == (
        "pattern", r"^POL-[A-Z]{2}\d{6}$", "Policy number must be in format POL-XX999999", 3)
    cabin = fields["cabin_class"]
    assert cabin.validations[0].kind == "enum"
    assert cabin.options == ["economy", "premium_economy", "business", "first"]
    assert cabin.infer and cabin.infer_confirm
    assert fields["guests"].validations[0].kind == "range"
    custom = fields["checkout"].validations[0]
    assert custom.kind == "custom" and custom.expr is not None
    assert custom.expr.op == "cmp" and refs(custom.expr) == ["checkout", "checkin"]


ACTIVATION_GATHER = """\
GATHER:
  has_loyalty:
    prompt: "Are you a loyalty program member?"
    type: boolean
    required: true

  loyalty_number:
    prompt: "What is your loyalty number?"
    type: string
    activation: progressive
    depends_on: [has_loyalty]

  upgrade_preference:
    prompt: "Would you like to use points for an upgrade?"
    type: boolean
    activation:
      when: "has_loyalty == true AND loyalty_points > 5000"
"""


@abl_dialect
def test_gather_activation_modes() -> None:
    c = Compiled(ACTIVATION_GATHER, gather.compile_gather)
    assert c.diagnostics == []
    fields = {f.name: f for f in c.rules.gather}
    assert fields["has_loyalty"].type == "boolean"
    loyalty = fields["loyalty_number"]
    assert (loyalty.activation, loyalty.depends_on, loyalty.required) == ("progressive", ["has_loyalty"], True)
    upgrade = fields["upgrade_preference"]
    assert upgrade.activation == "when"
    assert upgrade.when is not None and upgrade.when.expr.op == "and"
    assert refs(upgrade.when.expr) == ["has_loyalty", "loyalty_points"]


def test_gather_inline_when_activation() -> None:
    c = Compiled("GATHER:\n  promo:\n    activation: { when: has_loyalty == true }\n", gather.compile_gather)
    assert c.diagnostics == []
    promo = c.rules.gather[0]
    assert promo.activation == "when" and promo.when.expr.op == "cmp" and refs(promo.when.expr) == ["has_loyalty"]


def test_gather_inline_when_reports_the_column_of_its_problem() -> None:
    c = Compiled("GATHER:\n  promo:\n    activation: { when: has_loyalty == }\n", gather.compile_gather)
    assert c.codes == ["ABL013"]
    _, line, column = c.diagnostics[0]
    assert line == 3 and column > len("    activation: { when: ")


ENTITIES_AND_GATHER = """\
ENTITIES:
  request_type:
    TYPE: enum
    VALUES: [REQ_REFUND, REQ_EXCHANGE, REQ_CANCEL]
    SYNONYMS:
      REQ_REFUND: [refund, money back, reimburse]
      REQ_EXCHANGE: [exchange, swap]
      REQ_CANCEL: [cancel, cancellation]

  booking_ref:
    TYPE: pattern
    PATTERN: "^[A-Z]{2}[0-9]{4,6}$"

GATHER:
  request:
    ENTITY_REF: request_type
    PROMPT: "What type of request do you have?"
"""


def test_entities_and_entity_ref() -> None:
    c = Compiled(ENTITIES_AND_GATHER, None)
    entities, gathered = c.root.children
    gather.compile_entities(entities, c.ctx, c.rules)
    gather.compile_gather(gathered, c.ctx, c.rules)
    assert c.diagnostics == []
    request_type, booking_ref = c.rules.entities
    assert (request_type.type, request_type.values) == ("enum", ["REQ_REFUND", "REQ_EXCHANGE", "REQ_CANCEL"])
    assert request_type.synonyms["REQ_REFUND"] == ["refund", "money back", "reimburse"]
    assert (booking_ref.type, booking_ref.pattern) == ("pattern", "^[A-Z]{2}[0-9]{4,6}$")
    field = c.rules.gather[0]
    assert (field.name, field.entity, field.prompt) == ("request", "request_type", "What type of request do you have?")


def test_entity_ref_with_type_warns_and_unknown_entity_is_an_error() -> None:
    text = ENTITIES_AND_GATHER + "    TYPE: enum\n  other:\n    ENTITY_REF: request_kind\n"
    c = Compiled(text, None)
    entities, gathered = c.root.children
    gather.compile_entities(entities, c.ctx, c.rules)
    gather.compile_gather(gathered, c.ctx, c.rules)
    assert c.diagnostics == [("ABL107", 18, 5), ("ABL021", 20, 17)]
    assert c.rules.gather[0].type == "string"  # the entity owns the contract


def test_entity_problems() -> None:
    text = """\
ENTITIES:
  kind:
    TYPE: enum
    SYNONYMS:
      A: [a]
  ref:
    TYPE: pattern
    PATTERN: "[A-Z"
  colour:
    TYPE: enum
    VALUES: [RED]
    SYNONYMS:
      BLUE: [navy]
  other:
    TYPE: list
"""
    c = Compiled(text, gather.compile_entities)
    assert c.diagnostics == [("ABL010", 2, 3), ("ABL026", 8, 14), ("ABL026", 13, 7), ("ABL026", 15, 11)]


ATTACHMENT_GATHER = """\
GATHER:
  - damage_photo: required
    type: attachment
    category: image
    prompt: "Please upload a photo of the damage."
    allowed_mime_types: [image/jpeg, image/png, image/heic]
    max_file_size: 10485760  # 10MB
    processing:
      ocr_enabled: true

  - claim_document: optional
    type: attachment
    category: document
    prompt: "If you have a police report or repair estimate, please upload it."
    allowed_mime_types: [application/pdf, image/jpeg]
    max_file_size: 20971520  # 20MB
    processing:
      ocr_enabled: true
"""


def test_gather_attachment_list_form() -> None:
    c = Compiled(ATTACHMENT_GATHER, gather.compile_gather)
    assert c.diagnostics == []
    photo, document = c.rules.gather
    assert (photo.name, photo.type, photo.attachment, photo.required) == ("damage_photo", "attachment", True, True)
    assert photo.extra == {"category": "image", "allowed_mime_types": ["image/jpeg", "image/png", "image/heic"],
                           "max_file_size": 10485760, "processing": {"ocr_enabled": True}}
    assert (document.required, document.activation, document.extra["category"]) == (False, "optional", "document")


def test_gather_semantics_enum_set_fills_options_but_options_win() -> None:
    text = """\
GATHER:
  size:
    semantics:
      enum_set: [small, medium, large]
  airport:
    options: [LAX, JFK]
    semantics:
      format: airport_code
      enum_set: [CDG]
      lookup: iata_codes
"""
    c = Compiled(text, gather.compile_gather)
    assert c.diagnostics == []
    size, airport = c.rules.gather
    assert size.options == ["small", "medium", "large"]
    assert airport.options == ["LAX", "JFK"]
    assert airport.semantics == {"format": "airport_code", "enum_set": ["CDG"], "lookup": "iata_codes"}


FLOW_GATHER = """\
GATHER:
  - destination: required
  - checkin:
      TYPE: date
      REQUIRED: true
      PROMPT: "When do you want to check in?"
  - checkout:
      TYPE: date
      REQUIRED: true
  - guests:
      TYPE: number
      DEFAULT: 2
  STRATEGY: hybrid
  PROMPT: "Please provide destination, dates, and number of guests."
"""


def test_flow_gather_fields_uppercase_properties() -> None:
    c = Compiled(FLOW_GATHER, None)
    fields = gather.gather_fields(c.section, c.ctx)
    assert c.diagnostics == []  # STRATEGY and PROMPT of the GATHER belong to the flow step
    assert [f.name for f in fields] == ["destination", "checkin", "checkout", "guests"]
    assert fields[1].type == "date" and fields[1].prompt == "When do you want to check in?"
    assert (fields[3].type, fields[3].default) == ("number", 2)
    assert c.ctx.fields == {"destination", "checkin", "checkout", "guests"}


def test_flow_gather_fields_sibling_properties_and_comma_form() -> None:
    c = Compiled("GATHER:\n  - checkin_date: required\n    type: date\n  - guest_email: required\n    type: email\n",
                 None)
    fields = gather.gather_fields(c.section, c.ctx)
    assert [(f.name, f.type, f.required) for f in fields] == [("checkin_date", "date", True),
                                                              ("guest_email", "email", True)]
    c = Compiled("GATHER: destination, checkin, checkout\n", None)
    fields = gather.gather_fields(c.section, c.ctx)
    assert c.diagnostics == []
    assert [(f.name, f.span.column) for f in fields] == [("destination", 9), ("checkin", 22), ("checkout", 31)]


def test_gather_duplicates_strategy_and_reserved_names() -> None:
    text = """\
GATHER:
  city:
    prompt: "Which city?"
  city:
    prompt: "Again?"
  match:
    type: string
  _secret:
    type: string
  strategy: hybrid
"""
    c = Compiled(text, gather.compile_gather)
    assert c.diagnostics == [("ABL104", 6, 3), ("ABL104", 8, 3), ("ABL109", 10, 3), ("ABL011", 4, 3)]
    assert [f.name for f in c.rules.gather] == ["city", "match", "_secret"]
    c = Compiled("GATHER: a, b, a\n", None)
    gather.gather_fields(c.section, c.ctx)
    assert c.diagnostics == [("ABL011", 1, 15)]


def test_gather_field_problems() -> None:
    text = """\
GATHER:
  a:
    type: strng
  b:
    validate:
      type: pattern
      rule: "(unclosed"
  c:
    validate:
      range: "10-1"
  d:
    promt: "x"
  e:
    activation: progressive
  f:
    activation: sometimes
  g: maybe
  h:
    type: number
    default: lots
"""
    c = Compiled(text, gather.compile_gather)
    assert c.diagnostics == [("ABL017", 3, 11), ("ABL026", 7, 13), ("ABL026", 10, 14), ("ABL008", 12, 5),
                             ("ABL010", 14, 5), ("ABL026", 16, 17), ("ABL026", 17, 6), ("ABL026", 20, 14)]


def test_lookup_tables_are_experimental() -> None:
    text = """\
LOOKUP_TABLES:
  airports:
    source: inline
    values: [LAX, JFK, CDG, LHR]
    case_sensitive: false
    fuzzy_match: true
    fuzzy_threshold: 0.85

  hotels:
    source: collection
    table_name: lookup_hotels
    field: name
"""
    c = Compiled(text, gather.compile_lookup_tables)
    assert c.diagnostics == [("ABL103", 1, 1)]
    airports, hotels = c.rules.lookup_tables
    assert (airports.source, airports.values, airports.fuzzy_match, airports.fuzzy_threshold) == (
        "inline", ["LAX", "JFK", "CDG", "LHR"], True, 0.85)
    assert (hotels.source, hotels.table_name, hotels.field) == ("collection", "lookup_hotels", "name")


def test_lookup_table_problems() -> None:
    c = Compiled("LOOKUP_TABLES:\n  t:\n    source: api\n    fuzzy_threshold: 3\n  u:\n    source: collection\n",
                 gather.compile_lookup_tables)
    assert c.diagnostics == [("ABL103", 1, 1), ("ABL026", 4, 22), ("ABL010", 5, 3)]


def test_check_variable_name() -> None:
    c = Compiled("SET: match = input\n", None)
    gather.check_variable_name("match", c.section, c.ctx)  # points at the name in the value
    gather.check_variable_name("_x", c.section, c.ctx)
    gather.check_variable_name("fine", c.section, c.ctx)
    assert c.diagnostics == [("ABL104", 1, 6), ("ABL104", 1, 1)]


# ---------------------------------------------------------------------------------------------------
# MEMORY
# ---------------------------------------------------------------------------------------------------

MEMORY_SPEC = """\
MEMORY:
  session:
    - search_results
    - selected_hotel
    - routing_history
    - handoff_count
        INITIAL: 0
        RESET: per_activation

  persistent:
    - PATH: user.preferred_hotel_chains
      SCOPE: user
      ACCESS: readwrite
    - PATH: project.exchange_rates
      SCOPE: project
      ACCESS: read
    - PATH: workflow.current_quote
      SCOPE: execution_tree
      ACCESS: readwrite

  remember:
    - WHEN: booking.confirmed == true
      STORE: {destination, hotel_chain, room_type, price, dates} -> user.past_bookings

    - WHEN: user.mentions_loyalty_program == true
      STORE: {program, tier} -> user.loyalty_programs

    - WHEN: quote_ready == true
      STORE: quoted_price -> workflow.current_quote

  recall:
    - ON: session:start
      ACTION: inject_context
      PATHS: [user.preferred_hotel_chains, user.loyalty_programs]
    - ON: tool:search_hotels:after
      ACTION: prompt_llm
      INSTRUCTION: "Prefer hotels aligned with the user's known room and loyalty preferences"
    - ON: agent:*:after
      ACTION: load_memory
      DOMAIN: "travel_preferences"
"""


def test_memory_spec_example() -> None:
    c = Compiled(MEMORY_SPEC, memory.compile_memory)
    assert c.diagnostics == []
    spec = c.rules.memory
    assert [v.name for v in spec.session] == ["search_results", "selected_hotel", "routing_history", "handoff_count"]
    assert (spec.session[3].initial, spec.session[3].reset) == (0, "per_activation")
    assert [(p.path, p.scope, p.access) for p in spec.persistent] == [
        ("user.preferred_hotel_chains", "user", "readwrite"), ("project.exchange_rates", "project", "read"),
        ("workflow.current_quote", "execution_tree", "readwrite")]
    first, _, third = spec.remember
    assert first.target == "user.past_bookings" and first.when.expr.op == "cmp"
    assert first.value.op == "obj"
    assert [e.key for e in first.value.entries] == ["destination", "hotel_chain", "room_type", "price", "dates"]
    assert (third.target, refs(third.value)) == ("workflow.current_quote", ["quoted_price"])
    assert [(r.on, r.action) for r in spec.recall] == [("session:start", "inject_context"),
                                                       ("tool:search_hotels:after", "prompt_llm"),
                                                       ("agent:*:after", "load_memory")]
    assert spec.recall[0].paths == ["user.preferred_hotel_chains", "user.loyalty_programs"]
    assert spec.recall[2].domain == "travel_preferences"
    assert {"user.preferred_hotel_chains", "project.exchange_rates", "workflow.current_quote",
            "user.past_bookings"} <= c.ctx.memory_paths
    assert {"search_results", "handoff_count"} <= c.ctx.fields


def test_memory_core_concepts_form() -> None:
    text = """\
MEMORY:
  session:
    - selected_booking
    - action_type
  persistent:
    - user.booking_history
    - user.preferences
  remember:
    - WHEN action_completed == true
      STORE: {booking_id: selected_booking, action: action_type} -> user.booking_history
  recall:
    - ON: session:start
      ACTION: inject_context
      PATHS: [user.booking_history, user.preferences]
"""
    c = Compiled(text, memory.compile_memory)
    assert c.diagnostics == []
    spec = c.rules.memory
    assert [(p.path, p.scope, p.access) for p in spec.persistent] == [("user.booking_history", "user", "readwrite"),
                                                                      ("user.preferences", "user", "readwrite")]
    rule = spec.remember[0]
    assert refs(rule.when.expr) == ["action_completed"] and rule.target == "user.booking_history"
    assert [e.key for e in rule.value.entries] == ["booking_id", "action"]


def test_memory_reads_writes_form() -> None:
    text = """\
MEMORY:
  persistent:
    READS:
      - user.preferences
      - workflow.current_quote
    WRITES:
      - workflow.current_quote
      - user.notes
"""
    c = Compiled(text, memory.compile_memory)
    assert c.diagnostics == []
    assert [(p.path, p.access) for p in c.rules.memory.persistent] == [
        ("user.preferences", "read"), ("workflow.current_quote", "readwrite"), ("user.notes", "write")]


def test_memory_legacy_recall_events() -> None:
    text = """\
MEMORY:
  recall:
    - ON_START: "Load user's preferred chains and room types"
    - ON_SEARCH: "Prioritize hotels matching preferences"
    - ON: session_start
      RETRIEVE: [user.preferences]
    - ON: entity:destination:extracted
      RETRIEVE: [user.destination_history]
"""
    c = Compiled(text, memory.compile_memory)
    assert c.diagnostics == [("ABL108", 3, 7), ("ABL108", 4, 7), ("ABL108", 5, 11)]
    recall = c.rules.memory.recall
    assert [(r.on, r.action) for r in recall] == [("session:start", "prompt_llm"), ("search", "prompt_llm"),
                                                  ("session:start", "inject_context"),
                                                  ("entity:destination:extracted", "inject_context")]
    assert recall[0].instruction == "Load user's preferred chains and room types"
    assert recall[2].paths == ["user.preferences"]


def test_memory_problems() -> None:
    text = """\
MEMORY:
  session:
    - count
        RESET: weekly
  persistent:
    - PATH: project.rates
      ACCESS: read
    - PATH: user.x
      SCOPE: project
  remember:
    - WHEN: done == true
      STORE: total -> project.rates
    - WHEN: done == true
      STORE: total
    - STORE: x -> user.x
  recall:
    - ON: sesion:start
      PATHS: [user.x]
    - ON: session:end
      ACTION: prompt_llm
  stuff: []
"""
    c = Compiled(text, memory.compile_memory)
    assert c.diagnostics == [("ABL008", 21, 3), ("ABL026", 4, 16), ("ABL026", 9, 14), ("ABL026", 12, 23),
                             ("ABL009", 14, 7), ("ABL010", 15, 5), ("ABL026", 17, 11), ("ABL010", 20, 7)]


# ---------------------------------------------------------------------------------------------------
# Actions (ON_FAIL and friends)
# ---------------------------------------------------------------------------------------------------


def _action(text: str) -> tuple[Action, Compiled]:
    c = Compiled(text, None)
    return rules.parse_action(c.section, c.ctx), c


def test_parse_action_inline_forms() -> None:
    action, c = _action('ON_FAIL: "Pick a hotel before I try to reserve it."\n')
    assert text_of(action.respond) == "Pick a hotel before I try to reserve it." and not action.escalate
    action, _ = _action("ON_FAIL: ESCALATE\n")
    assert action.escalate and action.escalate_reason == ""
    action, _ = _action('ON_FAIL: ESCALATE "Refund exceeds automatic approval limit"\n')
    assert action.escalate and action.escalate_reason == "Refund exceeds automatic approval limit"
    action, _ = _action("ON_FAIL: HANDOFF Fraud_Review_Team\n")
    assert action.handoff == "Fraud_Review_Team"
    action, _ = _action("ON_FAIL: BLOCK\n")
    assert action.block
    action, _ = _action("ON_FAIL: TEMPLATE(policy_notice)\n")
    assert action.template == "policy_notice" and action.respond is None
    action, _ = _action('ON_FAIL: "ESCALATE"\n')  # quoted: a message, not the directive
    assert not action.escalate and text_of(action.respond) == "ESCALATE"
    action, _ = _action("ON_FAIL: |\n  Those dates fall within a blackout period.\n  Try other dates?\n")
    assert text_of(action.respond) == "Those dates fall within a blackout period.\nTry other dates?"
    assert rules.parse_action("DELEGATE -> Fallback_Agent", c.ctx).delegate == "Fallback_Agent"
    assert rules.parse_action("GOTO collect_dates", c.ctx).goto == "collect_dates"
    assert c.diagnostics == []


def test_parse_action_structured_block() -> None:
    action, c = _action("""\
ON_FAIL:
  RESPOND: "Please provide the required information."
  COLLECT: [field_a, field_b]
  RETRY: true
  GOTO: previous_step
  THEN: continue
""")
    assert c.diagnostics == []
    assert text_of(action.respond) == "Please provide the required information."
    assert (action.collect, action.retry, action.goto) == (["field_a", "field_b"], True, "previous_step")
    action, c = _action("ON_FAIL:\n  RESPOND: TEMPLATE(notice)\n  SET: attempts = attempts + 1\n  ESCALATE: true\n")
    assert c.diagnostics == []
    assert action.template == "notice" and action.escalate
    assert action.set[0][0] == "attempts" and action.set[0][1].op == "arith"


def test_parse_action_problems() -> None:
    action, c = _action("ON_FAIL: ESCLATE\n")
    assert c.diagnostics == [("ABL026", 1, 10)] and not action.escalate
    action, c = _action("ON_FAIL:\n  RESPONSE: \"x\"\n  THEN: go to step 2\n")
    assert c.diagnostics == [("ABL008", 2, 3), ("ABL026", 3, 9)]
    action, c = _action("ON_FAIL: HANDOFF\n")
    assert c.diagnostics == [("ABL010", 1, 10)]


# ---------------------------------------------------------------------------------------------------
# CONSTRAINTS
# ---------------------------------------------------------------------------------------------------

CONSTRAINTS_SPEC = """\
CONSTRAINTS:
  booking_requirements: # label only; runtime gating comes from WHEN / BEFORE
    - REQUIRE selected_hotel IS SET BEFORE calling reserve_hotel
      ON_FAIL: "Pick a hotel before I try to reserve it."

    - REQUIRE user.email IS SET
      WHEN: selected_hotel IS SET
      ON_FAIL: "I'll need your email address to send the confirmation. What's your email?"

    - REQUIRE dispute_type == "card" IMPLIES card_unique_id IS SET
      ON_FAIL: "Card disputes require the card unique ID."

  risk_controls:
    - LIMIT clarification_count < 5
      ON_FAIL: ESCALATE

    - RESTRICT beneficiary_country IN ["CU", "IR", "KP", "SY"]
      ON_FAIL: BLOCK

    - REQUIRE fraud_review_complete == true BEFORE returning results
      ON_FAIL: HANDOFF Fraud_Review_Team
"""


@abl_dialect
def test_constraints_spec_example() -> None:
    c = Compiled(CONSTRAINTS_SPEC, rules.compile_constraints)
    assert c.diagnostics == []
    found = c.rules.constraints
    assert [(k.kind, k.label, k.checkpoint) for k in found] == [
        ("require", "booking_requirements", "before_tool"), ("require", "booking_requirements", "turn"),
        ("require", "booking_requirements", "turn"), ("limit", "risk_controls", "turn"),
        ("restrict", "risk_controls", "turn"), ("require", "risk_controls", "before_results")]
    first, email, implies, limit, restrict, fraud = found
    assert first.tool == "reserve_hotel" and first.condition.expr.op == "is_set"
    assert first.condition.source == "selected_hotel IS SET"
    assert text_of(first.on_fail.respond) == "Pick a hotel before I try to reserve it."
    assert email.when is not None and email.when.expr.op == "is_set"
    assert implies.condition.expr.op == "implies"
    assert limit.on_fail.escalate and restrict.on_fail.block
    assert restrict.condition.expr.op == "cmp" and restrict.condition.expr.cmp == "in"
    assert fraud.on_fail.handoff == "Fraud_Review_Team"
    assert (first.span.line, first.span.column) == (3, 7)


def test_constraints_plain_list_lowercase_operators() -> None:
    text = """\
CONSTRAINTS:
  - REQUIRE lookup_order.status != "already_refunded"
    ON_FAIL: "This order has already been refunded."
  - WARN amount > 500 and amount <= 1000
    WHEN: amount is set
  - REQUIRE refund_amount <= 1000
    ON_FAIL: ESCALATE "Refund exceeds automatic approval limit"
"""
    c = Compiled(text, rules.compile_constraints)
    assert c.diagnostics == []
    status, warn, limit = c.rules.constraints
    assert status.label == "" and status.condition.expr.cmp == "!=" and refs(status.condition.expr) == [
        "lookup_order.status"]
    assert warn.kind == "warn" and warn.condition.expr.op == "and" and warn.when.expr.op == "is_set"
    assert limit.on_fail.escalate and limit.on_fail.escalate_reason == "Refund exceeds automatic approval limit"


def test_constraints_structured_on_fail() -> None:
    text = """\
CONSTRAINTS:
  always:
    - REQUIRE some_condition
      ON_FAIL:
        RESPOND: "Please provide the required information."
        COLLECT: [field_a, field_b]
        RETRY: true
        GOTO: previous_step
        THEN: continue
"""
    c = Compiled(text, rules.compile_constraints)
    assert c.diagnostics == []
    on_fail = c.rules.constraints[0].on_fail
    assert (on_fail.collect, on_fail.retry, on_fail.goto) == (["field_a", "field_b"], True, "previous_step")


def test_constraint_diagnostics() -> None:
    text = """\
CONSTRAINTS:
  checks:
    - REQUIRE amount > 0 BEFORE the user leaves
      ON_FAIL: "x"
    - REQUIRE amount > 0
      ON_FAIL:
        RESPOND: "Try again"
        CLEAR: [amount]
    - REQIRE amount > 0
    - REQUIRE amount >
    - REQUIRE amount > 0
      UNLESS: x
  empty: nothing
"""
    c = Compiled(text, rules.compile_constraints)
    assert c.diagnostics == [("ABL105", 3, 26), ("ABL109", 8, 9), ("ABL026", 9, 7), ("ABL013", 10, 22),
                             ("ABL008", 12, 7), ("ABL009", 13, 3)]
    first, cleared, broken, unless = c.rules.constraints
    assert first.checkpoint == "turn" and first.tool is None  # a non-structural BEFORE has no effect
    assert cleared.on_fail.clear == [] and text_of(cleared.on_fail.respond) == "Try again"
    assert broken.condition.source == "amount >" and unless.condition.expr.op == "cmp"


def test_constraint_before_key() -> None:
    c = Compiled("CONSTRAINTS:\n  - REQUIRE: x > 1\n    BEFORE: calling book\n    ON_FAIL: BLOCK\n",
                 rules.compile_constraints)
    assert c.diagnostics == []
    rule = c.rules.constraints[0]
    assert (rule.checkpoint, rule.tool, rule.on_fail.block, refs(rule.condition.expr)) == (
        "before_tool", "book", True, ["x"])


# ---------------------------------------------------------------------------------------------------
# COMPLETE and ON_ERROR
# ---------------------------------------------------------------------------------------------------

COMPLETE_SPEC = """\
COMPLETE:
  - WHEN: reservation.confirmed == true
    RESPOND: |
      Your reservation is confirmed!
      Confirmation #: {{reservation.confirmation_number}}
    STORE: {destination, hotel: selected_hotel.name, dates: {checkin, checkout}, price: reservation.total} -> user.past_bookings

  - WHEN: user.intent == "cancel" or user.intent == "nevermind"
    RESPOND: "No problem! Your search has been saved."
    STORE: {search_state} -> user.saved_searches

  - WHEN: handoff.completed == true
    # Silent completion - handoff agent takes over

  - WHEN: order_confirmed == true
    RESPOND: TEMPLATE(checkout_confirmation)
    RETURN: {refund_id, amount: process_refund.amount}
"""


def test_complete_spec_example() -> None:
    c = Compiled(COMPLETE_SPEC, rules.compile_complete)
    assert c.diagnostics == []
    confirmed, cancel, silent, templated = c.rules.complete
    assert confirmed.when.expr.op == "cmp"
    assert "Your reservation is confirmed!" in text_of(confirmed.action.respond)
    store = confirmed.action.store[0]
    assert store.target == "user.past_bookings" and [e.key for e in store.value.entries] == [
        "destination", "hotel", "dates", "price"]
    assert cancel.when.expr.op == "or" and cancel.action.store[0].target == "user.saved_searches"
    assert silent.action == Action() and silent.returns == {}
    assert templated.action.template == "checkout_confirmation"
    assert list(templated.returns) == ["refund_id", "amount"]
    assert refs(templated.returns["amount"]) == ["process_refund.amount"]


def test_complete_returns_block_and_problems() -> None:
    text = """\
COMPLETE:
  - WHEN: refund_id is set
    RESPOND: "Refund {{refund_id}} processed."
    RETURNS:
      refund_id: refund_id
      total: amount + fee
  - RESPOND: "no condition"
  - WHEN: done
    RETURN: {a b}
"""
    c = Compiled(text, rules.compile_complete)
    assert c.diagnostics == [("ABL010", 7, 3), ("ABL009", 9, 14)]
    rule = c.rules.complete[0]
    assert list(rule.returns) == ["refund_id", "total"] and rule.returns["total"].op == "arith"


ON_ERROR_SPEC = """\
ON_ERROR:
  tool_timeout:
    RESPOND: "I'm having a bit of trouble connecting. Let me try that again..."
    RETRY: 2
    THEN: ESCALATE with REASON: "Service unavailable"

  tool_error:
    LOG: {tool_name, error_message, input_params}
    RESPOND: "Something went wrong while {action_description}. Let me try a different approach."
    RETRY: 1
    THEN: DELEGATE -> Fallback_Agent

  validation_error:
    RESPOND: "That doesn't seem quite right. Could you double-check?"
    RETRY: 2
    THEN: CONTINUE

  api_error:
    LOG: {api_name, status_code, response_body}
    RESPOND: "Our booking system is experiencing issues."
    RETRY: 0
    THEN: ASK_USER {retry, escalate}

  unknown_error:
    LOG: {error_type, error_message, stack_trace, conversation_state}
    RESPOND: "I apologize, but something unexpected happened."
    ESCALATE: PRIORITY: high
"""


def test_on_error_spec_example() -> None:
    c = Compiled(ON_ERROR_SPEC, rules.compile_on_error)
    assert c.diagnostics == []
    handlers = {h.on: h.action for h in c.rules.on_error}
    assert list(handlers) == ["tool_timeout", "tool_error", "validation_error", "api_error", "unknown_error"]
    timeout = handlers["tool_timeout"]
    assert (timeout.retry, timeout.max_retries, timeout.escalate, timeout.escalate_reason) == (
        True, 2, True, "Service unavailable")
    error = handlers["tool_error"]
    assert (error.log, error.max_retries, error.delegate) == (["tool_name", "error_message", "input_params"], 1,
                                                              "Fallback_Agent")
    validation = handlers["validation_error"]
    assert validation.retry and not validation.escalate and validation.goto is None
    api = handlers["api_error"]
    assert (api.retry, api.max_retries, api.ask_user) == (False, 0, ["retry", "escalate"])
    unknown = handlers["unknown_error"]
    assert (unknown.escalate, unknown.escalate_priority) == (True, "high")


def test_on_error_complete_example_and_problems() -> None:
    text = """\
ON_ERROR:
  tool_timeout:
    RESPOND: "Having trouble connecting. Retrying..."
    RETRY: 2
    THEN: ESCALATE
  search_hotels: "The hotel search is down right now."
  tool_eror:
    RESPOND: "x"
  tool_timeout: ESCALATE
  unknown_error:
    ESCALATE: PRIORITY: urgent
"""
    c = Compiled(text, rules.compile_on_error, tools={"search_hotels"})
    assert c.diagnostics == [("ABL026", 7, 3), ("ABL011", 9, 3), ("ABL026", 11, 25)]
    handlers = c.rules.on_error
    assert [h.on for h in handlers] == ["tool_timeout", "search_hotels", "unknown_error"]
    assert handlers[0].action.escalate and handlers[0].action.max_retries == 2
    assert text_of(handlers[1].action.respond) == "The hotel search is down right now."


# ---------------------------------------------------------------------------------------------------
# GUARDRAILS
# ---------------------------------------------------------------------------------------------------

GUARDRAILS_SPEC = """\
GUARDRAILS:
  no_pii_output:
    kind: output
    check: "contains_pii(content)"
    action: redact
    msg: "PII detected in response"

  abusive_input_review:
    kind: input
    llm_check: "Does this input contain abusive, threatening, or harassing language?"
    action: block
    msg: "Inappropriate content detected"

  tool_param_validation:
    kind: tool_input
    check: "abl.word_count(tool_input) >= 200"
    action: block
    msg: "Tool input payload is too large"

  no_competitor_mentions:
    kind: both
    check: "abl.matches_pattern(input, '(?i)acme travel|globex bookings')"
    action: filter
    msg: "Competitor mention detected"
"""


def test_guardrails_spec_example() -> None:
    c = Compiled(GUARDRAILS_SPEC, guardrails.compile_guardrails)
    assert c.diagnostics == []
    found = {g.name: g for g in c.rules.guardrails}
    assert list(found) == ["no_pii_output", "abusive_input_review", "tool_param_validation",
                           "no_competitor_mentions_input", "no_competitor_mentions_output"]
    pii = found["no_pii_output"]
    assert (pii.kind, pii.check, pii.action, text_of(pii.message)) == (
        "output", "contains_pii(content)", "redact", "PII detected in response")
    assert found["abusive_input_review"].llm_check.startswith("Does this input contain abusive")
    assert found["tool_param_validation"].kind == "tool_input"
    both_in, both_out = found["no_competitor_mentions_input"], found["no_competitor_mentions_output"]
    assert (both_in.kind, both_out.kind) == ("input", "output")
    assert both_in.check == both_out.check and both_in.action == both_out.action == "filter"


def test_guardrail_diagnostics() -> None:
    text = """\
GUARDRAILS:
  bad_cel:
    kind: input
    check: "abl.contains_pii(content) &&"
    action: block
  bad_kind:
    kind: outptu
    check: "size(content) > 10"
    action: nuke
  no_action:
    kind: output
    patterns: ["(?i)secret"]
  nothing:
    kind: handoff
    action: warn
"""
    c = Compiled(text, guardrails.compile_guardrails)
    pytest.importorskip("celpy")
    assert c.diagnostics == [("ABL016", 4, 39), ("ABL026", 7, 11), ("ABL026", 9, 13), ("ABL010", 10, 3),
                             ("ABL010", 13, 3)]
    assert [g.name for g in c.rules.guardrails] == ["bad_cel", "no_action", "nothing"]
    assert c.rules.guardrails[1].patterns == ["(?i)secret"]


# ---------------------------------------------------------------------------------------------------
# TEMPLATES and MESSAGES
# ---------------------------------------------------------------------------------------------------

TEMPLATES_SPEC = """\
TEMPLATES:
  cart_summary:
    DEFAULT: |
      Your Cart:
      {{#each items}}
      - {{this.name}} x{{this.quantity}} — {{this.price}} {{currency}}
      {{/each}}
      Total: {{total}} {{currency}}
    MARKDOWN: |
      ## Your Cart

      **Total: {{total}} {{currency}}**
    VOICE INSTRUCTIONS: "Read each item name and price. Then state the total clearly."
  greeting:
    DEFAULT: "Welcome to our service."
    VOICE INSTRUCTIONS: "Speak warmly with a slight pause after 'Welcome'."
  escalation_notice:
    DEFAULT: "Connecting you with a specialist."
    SLACK: '{"blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "{{reason}}"}}]}'
"""


def test_templates_spec_example() -> None:
    c = Compiled(TEMPLATES_SPEC, templates.compile_templates)
    assert c.diagnostics == []
    cart = c.rules.templates["cart_summary"]
    assert cart.default.source.startswith("Your Cart:")
    assert any(part.kind == "each" for part in cart.default.parts)
    assert set(cart.channels) == {"markdown", "voice_instructions"}
    assert cart.channels["voice_instructions"].source == (
        "Read each item name and price. Then state the total clearly.")
    greeting = c.rules.templates["greeting"]
    assert greeting.default.source == "Welcome to our service."
    assert greeting.channels["voice_instructions"].source == "Speak warmly with a slight pause after 'Welcome'."
    assert "slack" in c.rules.templates["escalation_notice"].channels


def test_template_problems() -> None:
    text = """\
TEMPLATES:
  a:
    MARKDOWN: "**hi**"
  b:
    DEFAULT: "x"
    SLAK: "y"
  c:
    DEFAULT: "Hi {{#if x}}"
"""
    c = Compiled(text, templates.compile_templates)
    assert [d[:2] for d in c.diagnostics] == [("ABL010", 2), ("ABL008", 6), ("ABL014", 8)]


def test_messages() -> None:
    text = """\
MESSAGES:
  error_default: "Sorry, something went wrong. Please try again."
  escalation_notice: TEMPLATE(escalation_notice)
  missing: TEMPLATE(nowhere)
"""
    c = Compiled(text, None, rules_in=Compiled(TEMPLATES_SPEC, templates.compile_templates).rules)
    templates.compile_messages(c.section, c.ctx, c.rules)
    assert c.diagnostics == [("ABL026", 4, 12)]
    assert c.rules.messages == {"error_default": "Sorry, something went wrong. Please try again.",
                                "escalation_notice": "TEMPLATE(escalation_notice)", "missing": "TEMPLATE(nowhere)"}


# ---------------------------------------------------------------------------------------------------
# EXECUTION, HOOKS, ON_START, ACTION_HANDLERS
# ---------------------------------------------------------------------------------------------------

EXECUTION_SPEC = """\
EXECUTION:
  model: claude-sonnet-4-5-20250929
  max_iterations: 20          # Allow more reasoning loops
  max_flow_iterations: 200    # Only raise above default 100 for audited flows
  timeouts:
    tool_timeout_ms: 60000    # Some tools are slow
    session_timeout_ms: 3600000  # 1 hour sessions
  voice:
    provider: elevenlabs
    voice_id: aria
    speed: 1.0
  pipeline:
    enabled: true
    mode: sequential          # 'parallel' | 'sequential'
    model: qwen3-30b          # Smaller/faster classifier model
    shortCircuit:
      enabled: true
      confidenceThreshold: 0.85
    toolFilter:
      enabled: true
      maxTools: 6
    keywordVeto:
      enabled: true
      keywords: [reset, cancel, undo]
"""


def test_execution_spec_example() -> None:
    c = Compiled(EXECUTION_SPEC, execution.compile_execution)
    assert c.diagnostics == []
    settings = c.rules.execution
    assert (settings.model, settings.max_iterations, settings.max_flow_iterations) == (
        "claude-sonnet-4-5-20250929", 20, 200)
    assert (settings.tool_timeout, settings.session_timeout, settings.llm_timeout) == (60.0, 3600.0, None)
    assert settings.pipeline["mode"] == "sequential"
    assert settings.pipeline["shortCircuit"] == {"enabled": True, "confidenceThreshold": 0.85}
    assert settings.pipeline["keywordVeto"]["keywords"] == ["reset", "cancel", "undo"]
    assert settings.extra == {"voice": {"provider": "elevenlabs", "voice_id": "aria", "speed": 1.0}}


def test_execution_problems() -> None:
    text = """\
EXECUTION:
  temperature: 7
  max_iterations: 0
  timeouts:
    tool_timeout: 5
  pipeline:
    mode: fast
    shortCircuit:
      confidenceThreshold: 1.5
    toolFilter:
      maxTools: many
    classifier: x
"""
    c = Compiled(text, execution.compile_execution)
    assert c.diagnostics == [("ABL026", 2, 16), ("ABL026", 3, 19), ("ABL008", 5, 5), ("ABL026", 7, 11),
                             ("ABL026", 9, 28), ("ABL026", 11, 17), ("ABL008", 12, 5)]


def test_hooks_spec_example() -> None:
    text = """\
HOOKS:
  before_turn:
    CALL: audit_logger
    SET:
      _turn_start: NOW()
  after_turn:
    CALL: metrics_reporter
    RESPOND: ""  # Silent — no user-facing message
"""
    c = Compiled(text, execution.compile_hooks, tools={"audit_logger", "metrics_reporter"})
    assert c.diagnostics == [("ABL104", 5, 7)]  # `_` starts a name the runtime reserves (8.8)
    before, after = c.rules.hooks
    assert (before.event, before.call) == ("before_turn", "audit_logger")
    assert before.action.set[0][0] == "_turn_start" and before.action.set[0][1].op == "call"
    assert (after.event, after.call) == ("after_turn", "metrics_reporter")
    assert after.action.respond is not None and after.action.respond.source == ""


def test_hook_problems() -> None:
    c = Compiled("HOOKS:\n  befor_turn:\n    CALL: x\n  after_turn:\n    CALL: audit\n",
                 execution.compile_hooks, tools={"audit_logger"})
    assert c.diagnostics == [("ABL008", 2, 3), ("ABL020", 5, 11)]


def test_on_start() -> None:
    c = Compiled("ON_START:\n  RESPOND: TEMPLATE(welcome)\n", execution.compile_on_start)
    assert c.diagnostics == []
    hook = c.rules.hooks[0]
    assert (hook.event, hook.action.template) == ("on_start", "welcome")
    text = """\
ON_START:
  CALL: load_profile(user_id, tier: "gold")
  SET: greeted = true
  RESPOND: "Hello {{user_name}}!"
"""
    c = Compiled(text, execution.compile_on_start, tools={"load_profile"})
    assert c.diagnostics == []
    hook = c.rules.hooks[0]
    assert hook.call == "load_profile" and list(hook.args) == ["user_id", "tier"]
    assert hook.args["tier"].op == "lit" and hook.args["tier"].value == "gold"
    assert hook.action.set[0][0] == "greeted" and text_of(hook.action.respond) == "Hello {{user_name}}!"
    assert "greeted" in c.ctx.fields


def test_action_handlers_and_elements() -> None:
    text = """\
ACTION_HANDLERS:
  option_a:
    SET: user_choice = "a"
    RESPOND: "Great choice!"
    THEN: process_selection
  option_b:
    SET: user_choice = "b"
    THEN: process_selection
"""
    c = Compiled(text, execution.compile_action_handlers)
    assert c.diagnostics == []
    a, b = c.rules.hooks
    assert (a.event, a.action.goto, text_of(a.action.respond)) == ("action:option_a", "process_selection",
                                                                   "Great choice!")
    assert b.action.set[0][0] == "user_choice" and b.action.set[0][1].value == "b"
    text = """\
ACTIONS:
  - BUTTON: "Option A"
    ID: option_a
    VALUE: "a"
  - SELECT: "Departure City"
    ID: departure
    OPTIONS:
      - { id: "NYC", label: "New York" }
      - { id: "LAX", label: "Los Angeles" }
  - INPUT: "Special requests"
    ID: special_requests
    TYPE: text
    PLACEHOLDER: "Any dietary requirements?"
  - SELECT: "Nothing to pick"
    ID: empty
  - BUTTON: "Twice"
    ID: option_a
"""
    c = Compiled(text, execution.compile_action_handlers)
    assert c.diagnostics == [("ABL010", 14, 5), ("ABL011", 17, 5)]
    button, select, field, empty = c.rules.actions
    assert (button.kind, button.id, button.label, button.value) == ("button", "option_a", "Option A", "a")
    assert select.options == [{"id": "NYC", "label": "New York"}, {"id": "LAX", "label": "Los Angeles"}]
    assert (field.kind, field.input_type, field.placeholder) == ("input", "text", "Any dietary requirements?")
    assert empty.options == []


# ---------------------------------------------------------------------------------------------------
# NLU, INTENTS, MULTI_INTENT, TESTS
# ---------------------------------------------------------------------------------------------------

META_SPEC = r"""NLU:
  entities:
    - NAME: ssn
      TYPE: pattern
      PATTERN: "\\d{3}-\\d{2}-\\d{4}"
      SENSITIVE: true

INTENTS:
  LEXICAL_FALLBACK: when_unavailable
  location_lookup: "Help users find a nearby service location"

MULTI_INTENT:
  strategy: primary_queue
  max_intents: 5
  confidence_threshold: 0.7
  enabled: true

TESTS:
  - name: "happy path"
    input: "track my order"
    expect_intent: order_inquiry
"""


def test_metadata_sections() -> None:
    c = Compiled(META_SPEC, None)
    for section in c.root.children:
        meta.compile_metadata(section.key, section, c.ctx, c.rules)
    assert c.diagnostics == []
    data = c.rules.metadata
    assert set(data) == {"NLU", "INTENTS", "MULTI_INTENT", "TESTS"}
    assert data["MULTI_INTENT"] == {"strategy": "primary_queue", "max_intents": 5, "confidence_threshold": 0.7,
                                    "enabled": True}
    assert data["TESTS"] == [{"name": "happy path", "input": "track my order", "expect_intent": "order_inquiry"}]
    assert data["INTENTS"]["location_lookup"] == "Help users find a nearby service location"
    assert data["NLU"]["entities"][0]["pattern"] == r"\d{3}-\d{2}-\d{4}"


def test_multi_intent_shape_checks() -> None:
    text = "MULTI_INTENT:\n  max_intents: 2.5\n  confidence_threshold: 3\n  enabled: sometimes\n  mode: x\n"
    c = Compiled(text, None)
    meta.compile_metadata("MULTI_INTENT", c.section, c.ctx, c.rules)
    assert c.diagnostics == [("ABL026", 2, 16), ("ABL026", 3, 25), ("ABL026", 4, 12), ("ABL008", 5, 3)]
    c = Compiled("TESTS:\n  name: x\n", None)
    meta.compile_metadata("TESTS", c.section, c.ctx, c.rules)
    assert c.diagnostics == [("ABL009", 2, 3)]


# ---------------------------------------------------------------------------------------------------
# Robustness: nothing raises on malformed sections
# ---------------------------------------------------------------------------------------------------

SECTION_FUNCTIONS = [gather.compile_gather, gather.compile_entities, gather.compile_lookup_tables,
                     memory.compile_memory, rules.compile_constraints, rules.compile_complete,
                     rules.compile_on_error, guardrails.compile_guardrails, templates.compile_templates,
                     templates.compile_messages, execution.compile_execution, execution.compile_hooks,
                     execution.compile_on_start, execution.compile_action_handlers]

ODD_SECTIONS = [
    "X:\n",
    "X: 42\n",
    "X:\n  - \n  -\n",
    "X:\n  - - - a\n",
    "X:\n  a:\n    - b: [\n    - c: {x: }\n",
    "X:\n  session: 1\n  persistent: [\n  remember:\n    - WHEN:\n      STORE: ->\n  recall:\n    - ON:\n",
    "X:\n  a:\n    b:\n      c:\n        d: e\n  - REQUIRE\n  - WARN BEFORE\n  - REQUIRE x BEFORE calling\n",
    'X:\n  a: "{{#each"\n  b: TEMPLATE(\n  c: ESCALATE with REASON:\n  d: HANDOFF ->\n',
    "X:\n  a:\n    validate:\n      - type: range\n        rule: x\n    activation: { when: }\n",
]


@pytest.mark.parametrize("text", ODD_SECTIONS)
@pytest.mark.parametrize("function", SECTION_FUNCTIONS, ids=lambda f: f.__name__)
def test_sections_never_raise(function, text: str) -> None:
    bag = DiagnosticBag()
    root = read_outline(text, "t.agent.abl", bag)
    ctx = SectionContext(bag=bag, file="t.agent.abl", agent="Test_Agent")
    for section in root.children:
        function(section, ctx, AgentRules())
    meta.compile_metadata("MULTI_INTENT", root.children[0], ctx, AgentRules())
    gather.gather_fields(root.children[0], ctx)
    for section in root.children:
        for child in section.children:
            rules.parse_action(child, ctx)
