"""Compilers of GATHER (top-level and inside FLOW steps), ENTITIES and LOOKUP_TABLES: the fields an agent collects and the reference data they use."""

from __future__ import annotations

import re
from typing import Any

from frontdesk.diagnostics import Span
from frontdesk.ir.behaviour import (
    AgentRules,
    EntityDef,
    GatherField,
    LookupTable,
    Validation,
)
from frontdesk.ir.expr import ExprCondition

from .. import codes
from ..context import SectionContext
from ..outline import Node
from ._common import (
    NAME,
    condition,
    flatten,
    key,
    names_with_offsets,
    node_condition,
    span_at,
    unquote,
)

BASE_TYPES = ("string", "number", "boolean", "date", "email", "phone", "attachment", "array", "object")
ACTIVATIONS = ("required", "optional", "progressive")
VALIDATION_KINDS = ("pattern", "range", "enum", "custom", "llm")
ATTACHMENT_CATEGORIES = ("image", "document", "audio", "video")
# properties of a field kept as written in GatherField.extra (privacy, attachments, hints)
EXTRA_FIELD_KEYS = (
    "DESCRIPTION", "EXAMPLES", "CATEGORY", "ALLOWED_MIME_TYPES", "MAX_FILE_SIZE", "PROCESSING",
    "SENSITIVE_DISPLAY", "MASK_CONFIG", "PII_TYPE", "RETRY_PROMPT", "CONFIRM", "FORMAT", "STRATEGY",
)
FIELD_KEYS = (
    "PROMPT", "TYPE", "REQUIRED", "DEFAULT", "VALIDATE", "VALIDATION", "ACTIVATION", "DEPENDS_ON", "INFER",
    "INFER_CONFIRM", "OPTIONS", "VALUES", "ENUM_VALUES", "SEMANTICS", "ENTITY_REF", "SENSITIVE", *EXTRA_FIELD_KEYS,
)
_RANGE = re.compile(r"\s*(-?\d+(?:\.\d+)?)\s*(?:-|\.\.|to)\s*(-?\d+(?:\.\d+)?)\s*")
_INLINE_WHEN = re.compile(r"\{\s*when\s*:\s*(.*?)\s*\}\s*$", re.IGNORECASE | re.DOTALL)


# ---- reserved names ------------------------------------------------------------------------------


# abl-specification 8.8: the variables the runtime assigns (besides `match` and the `_` names)
SYSTEM_VARIABLES = {"all_fields_gathered", "sentiment_trajectory", "tool_failures", "constraint_failures",
                    "channel", "language", "user.intent", "user.sentiment"}
LAST_RESULT = re.compile(r"last_\w+_result")


def check_variable_name(name: str, node: Node | Span, ctx: SectionContext) -> None:
    """Warn (ABL104) when a variable the agent sets is named like one the runtime owns: `match`
    (the capture groups of `matches`), anything starting with `_`, or another system variable of
    abl-specification 8.8 (`all_fields_gathered`, `tool_failures`, `language`, `last_<tool>_result`, ...)."""
    if name != "match" and not name.startswith("_") and name not in SYSTEM_VARIABLES \
            and not LAST_RESULT.fullmatch(name):
        return
    where = _name_span(name, node)
    if name in SYSTEM_VARIABLES or LAST_RESULT.fullmatch(name):
        ctx.warning(codes.RESERVED_NAME, f"'{name}' is a system variable the runtime sets (abl-specification "
                    "8.8); the agent's value would be overwritten or hide it", where, "choose another name")
    elif name == "match":
        ctx.warning(codes.RESERVED_NAME, "'match' is set by every successful `matches` test and will be overwritten",
                    where, "choose another name")
    else:
        ctx.warning(codes.RESERVED_NAME, f"'{name}': names starting with '_' are reserved for the runtime",
                    where, "choose a name that does not start with '_'")


def _name_span(name: str, node: Node | Span) -> Node | Span:
    """Where `name` is written on the node's line: its key, or the word in its value (`SET: match = x`)."""
    if isinstance(node, Span) or node.key == name or not node.value or not node.value_column:
        return node
    found = re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", node.value)
    if found is None:
        return node
    return span_at(node, found.start() + (1 if node.quoted else 0))


# ---- GATHER ---------------------------------------------------------------------------------------


def compile_gather(node: Node, ctx: SectionContext, rules: AgentRules) -> None:
    """The top-level GATHER section into `rules.gather` (the mapping form, or the list form of FLOW)."""
    entities = {e.name for e in rules.entities}
    seen = {f.name: f for f in rules.gather}
    for field in _read_fields(node, ctx, top_level=True, entities=entities):
        if field.name in seen:
            first = seen[field.name].span
            ctx.error(codes.DUPLICATE_NAME, f"GATHER declares the field {field.name} twice", field.span,
                      f"the first is on line {first.line}" if first else None)
            continue
        seen[field.name] = field
        rules.gather.append(field)


def gather_fields(node: Node, ctx: SectionContext, entities: set[str] | None = None) -> list[GatherField]:
    """The fields of a FLOW step's GATHER: `- destination: required`, `- checkin:` with TYPE / REQUIRED
    / PROMPT under it, `- checkin_date: required` with `type: date` beside it, or `GATHER: a, b, c`.
    STRATEGY and PROMPT of the GATHER itself are left to the flow compiler. With `entities` (the
    names ENTITIES declares), ENTITY_REF is checked against them."""
    out: list[GatherField] = []
    seen: dict[str, GatherField] = {}
    for field in _read_fields(node, ctx, top_level=False, entities=entities):
        if field.name in seen:
            ctx.error(codes.DUPLICATE_NAME, f"this GATHER lists the field {field.name} twice", field.span)
            continue
        seen[field.name] = field
        out.append(field)
    return out


def _unknown_entity(name: str, where: Any, ctx: SectionContext, entities: set[str]) -> None:
    from frontdesk.diagnostics import did_you_mean

    guess = did_you_mean(name, sorted(entities))
    ctx.error(codes.UNKNOWN_ENTITY, f"ENTITY_REF names {name}, which ENTITIES does not declare", where,
              f"did you mean {guess}?" if guess else "declare it under ENTITIES:")


def _read_fields(node: Node, ctx: SectionContext, top_level: bool, entities: set[str] | None) -> list[GatherField]:
    out: list[GatherField] = []
    if node.value is not None and not node.block and not node.children:
        out += _name_list(node, node.text, 1 if node.quoted else 0, ctx)
    for child in node.children:
        if child.item:
            field = _item_field(child, ctx, entities)
            if field is not None:
                out.append(field)
        elif child.key is None:
            out += _name_list(child, child.text, 0, ctx)
        elif key(child) == "STRATEGY" and not child.children:
            if top_level:
                ctx.warning(codes.IGNORED, "STRATEGY has no effect in the top-level GATHER (extraction there always "
                            "uses the LLM)", child, "set STRATEGY on the GATHER of a FLOW step")
        elif key(child) == "FIELDS" and (child.children or child.value):
            out += _read_fields(child, ctx, top_level, entities)
        elif key(child) == "PROMPT" and not top_level and not child.children:
            continue
        else:
            out.append(_field(child.key or "", None if child.block else child.value, child.children, child, ctx,
                              entities))
    for field in out:
        ctx.fields.add(field.name)
    return out


def _name_list(node: Node, text: str, offset: int, ctx: SectionContext) -> list[GatherField]:
    """`destination, checkin, checkout`: required string fields."""
    out = []
    for name, at in names_with_offsets(text):
        where = span_at(node, offset + at)
        if not NAME.fullmatch(name):
            ctx.error(codes.BAD_NAME, f"'{name}' is not a field name", where, "a name is letters, digits and _")
            continue
        check_variable_name(name, where, ctx)
        out.append(GatherField(name=name, span=where))
    return out


def _item_field(item: Node, ctx: SectionContext, entities: set[str] | None) -> GatherField | None:
    if not item.children:
        ctx.error(codes.WRONG_SHAPE, "an empty GATHER item", item, "write - <field>: required")
        return None
    first = item.children[0]
    props = flatten(item)
    if first.key is None:
        text = first.text.strip()
        if not NAME.fullmatch(text):
            ctx.error(codes.BAD_NAME, f"'{text}' is not a field name", first, "write - <field>: required")
            return None
        return _field(text, None, props, first, ctx, entities)
    if key(first) == "NAME" and first.value and first.value.strip().lower() not in ACTIVATIONS:
        return _field(first.text.strip(), None, item.children[1:], first, ctx, entities)
    return _field(first.key or "", first.value, props, first, ctx, entities)


def _field(name: str, shorthand: str | None, props: list[Node], node: Node, ctx: SectionContext,
           entities: set[str] | None) -> GatherField:
    check_variable_name(name, node, ctx)
    field = GatherField(name=name, span=node.span)
    activation: str | None = None
    required: bool | None = None
    if shorthand is not None and shorthand.strip():
        word = shorthand.strip().lower()
        if word in ACTIVATIONS and not node.quoted:
            activation = word
        elif node.quoted:
            field.prompt = shorthand
        elif word in BASE_TYPES or word in ctx.names.types:
            field.type = word
        else:
            ctx.error(codes.BAD_VALUE, f"{name}: '{shorthand}' is not required, optional or progressive",
                      node.value_span(), "write <field>: required, or give the field's properties under it")
    contract: list[Node] = []  # TYPE / OPTIONS / VALUES, which an ENTITY_REF owns
    activation_node: Node | None = None
    type_node: Node | None = None
    entity_node: Node | None = None
    for prop in props:
        word = key(prop)
        if prop.key is None or prop.item:
            ctx.error(codes.WRONG_SHAPE, f"the field {name} holds '{prop.text}', which is not a property", prop,
                      "write the field's properties as KEY: value")
            continue
        if word == "PROMPT":
            field.prompt = ctx.text(prop)
        elif word == "TYPE":
            type_node = prop
            contract.append(prop)
        elif word == "REQUIRED":
            required = ctx.boolean(prop, True)
        elif word == "DEFAULT":
            field.default = ctx.data(prop)
        elif word in ("VALIDATE", "VALIDATION"):
            field.validations += _validations(prop, ctx)
        elif word == "ACTIVATION":
            activation_node = prop
            activation = _activation(prop, field, ctx) or activation
        elif word == "DEPENDS_ON":
            field.depends_on = ctx.names_list(prop)
        elif word == "INFER":
            field.infer = ctx.boolean(prop)
        elif word == "INFER_CONFIRM":
            field.infer_confirm = ctx.boolean(prop)
        elif word in ("OPTIONS", "VALUES", "ENUM_VALUES"):
            field.options = [str(v) for v in ctx.names_list(prop)]
            contract.append(prop)
        elif word == "SEMANTICS":
            data = ctx.data(prop)
            if isinstance(data, dict):
                field.semantics = data
            else:
                ctx.error(codes.WRONG_SHAPE, "semantics holds properties (format, components, unit, lookup, ...)",
                          prop)
        elif word == "ENTITY_REF":
            field.entity = ctx.text(prop) or None
            entity_node = prop
        elif word == "SENSITIVE":
            field.sensitive = ctx.boolean(prop)
        elif word in EXTRA_FIELD_KEYS:
            field.extra[(prop.key or "").lower()] = ctx.data(prop)
        else:
            ctx.unknown_key(prop, [k.lower() for k in FIELD_KEYS], "a GATHER field")
    if activation is not None:
        field.activation = activation  # type: ignore[assignment]
        field.required = activation != "optional"
        if required is not None and required != field.required and activation != "when":
            field.required = required
    elif required is not None:
        field.required = required
        field.activation = "required" if required else "optional"
    elif field.default is not None:
        # a field that gives its own DEFAULT and does not say REQUIRED: true is not asked: it takes the
        # default unless the user gives it (the §3.14.2 example; docs/abl-semantics.md)
        field.required = False
        field.activation = "optional"
    if field.activation == "progressive" and not field.depends_on:
        ctx.error(codes.MISSING_KEY, f"{name} is progressive but has no depends_on", activation_node or node,
                  "list the fields that make it required: depends_on: [field]")
    if field.entity:
        for prop in contract:
            ctx.warning(codes.ENTITY_REF_WITH_TYPE, f"{name} refers to the entity {field.entity}, which owns its "
                        f"{(prop.key or '').upper()}; this {(prop.key or '').upper()} is ignored", prop)
        field.type = "string"
        field.options = []
        if entities is not None and field.entity not in entities:
            _unknown_entity(field.entity, entity_node.value_span() if entity_node else node, ctx, entities)
    elif type_node is not None:
        field.type = _type(type_node, ctx)
    if field.type == "attachment":
        field.attachment = True
        category = field.extra.get("category")
        if category is not None and str(category).lower() not in ATTACHMENT_CATEGORIES:
            where = next((p for p in props if key(p) == "CATEGORY"), node)
            ctx.error(codes.BAD_VALUE, f"category must be one of {', '.join(ATTACHMENT_CATEGORIES)}, not '{category}'",
                      where.value_span())
    enum_set = field.semantics.get("enum_set")
    if not field.options and isinstance(enum_set, list):
        field.options = [str(v) for v in enum_set]
    for check in field.validations:
        if check.kind == "enum" and not field.options and not field.entity:
            field.options = [part.strip() for part in check.rule.split(",") if part.strip()]
    _check_default(field, props, ctx)
    return field


def _type(prop: Node, ctx: SectionContext) -> str:
    written = ctx.text(prop)
    base = written.removesuffix("[]")
    if base.lower() in BASE_TYPES:
        return written.lower()
    if base in ctx.names.types:
        return written
    from frontdesk.diagnostics import did_you_mean

    guess = did_you_mean(base.lower(), list(BASE_TYPES))
    ctx.error(codes.UNKNOWN_TYPE, f"unknown type '{written}'", prop.value_span(),
              f"did you mean {guess}?" if guess else f"use one of {', '.join(BASE_TYPES)}, or a declared type")
    return "string"


def _check_default(field: GatherField, props: list[Node], ctx: SectionContext) -> None:
    value = field.default
    if value is None:
        return
    where = next((p for p in props if key(p) == "DEFAULT"), None)
    if where is None:
        return
    wrong = (field.type == "number" and (isinstance(value, bool) or not isinstance(value, (int, float)))) or (
        field.type == "boolean" and not isinstance(value, bool))
    if wrong:
        ctx.error(codes.BAD_VALUE, f"the default of {field.name} is not a {field.type}", where.value_span())
    elif field.options and not field.entity and str(value) not in field.options:
        ctx.error(codes.BAD_VALUE, f"the default of {field.name} is not one of its options", where.value_span(),
                  f"options: {', '.join(field.options)}")


def _activation(prop: Node, field: GatherField, ctx: SectionContext) -> str | None:
    when = prop.get("when")
    if when is not None:
        field.when = node_condition(ctx, when)
        return "when"
    text = prop.text.strip()
    found = _INLINE_WHEN.fullmatch(text) if not prop.quoted else None
    if found:
        inner, quoted = unquote(found.group(1))
        field.when = condition(ctx, inner, prop, found.start(1) + (1 if quoted else 0))
        return "when"
    if prop.children or not text:
        ctx.error(codes.WRONG_SHAPE, "activation is required, optional, progressive or {when: <condition>}", prop)
        return None
    return ctx.choice(prop, (*ACTIVATIONS, "when")) if text.lower() != "when" else _missing_when(prop, ctx)


def _missing_when(prop: Node, ctx: SectionContext) -> None:
    ctx.error(codes.MISSING_KEY, "activation: when needs its condition", prop, "write activation: {when: <condition>}")


# ---- validations ------------------------------------------------------------------------------------


def _validations(prop: Node, ctx: SectionContext) -> list[Validation]:
    """`validate: "<instruction>"` (an LLM rule), `validate:` with type / rule / error / max_retries,
    `validate:` with `pattern: ...` / `range: ...` / ..., or a list of such."""
    if prop.items():
        out: list[Validation] = []
        for item in prop.items():
            entries = [c for c in item.children if c.key is not None]
            out += _validation_block(entries, item, ctx)
        return out
    if prop.children:
        return _validation_block(prop.entries(), prop, ctx)
    text = prop.text.strip()
    if not text:
        ctx.error(codes.MISSING_KEY, "validate needs a rule", prop)
        return []
    if not prop.quoted and text.startswith("{"):
        data = ctx.data(prop)
        if isinstance(data, dict):
            lowered = {str(k).lower(): v for k, v in data.items()}
            if "type" in lowered:
                return _one_validation(str(lowered.get("type", "")), lowered.get("rule"), lowered.get("error"),
                                       lowered.get("max_retries"), prop, None, ctx)
            return [v for k, val in lowered.items()
                    for v in _one_validation(k, val, None, None, prop, None, ctx)]
    return [Validation(kind="llm", rule=text)]


def _validation_block(entries: list[Node], at: Node, ctx: SectionContext) -> list[Validation]:
    by_key = {key(e): e for e in entries}
    if "TYPE" in by_key:
        for extra in entries:
            if key(extra) not in ("TYPE", "RULE", "ERROR", "MESSAGE", "MAX_RETRIES"):
                ctx.unknown_key(extra, ["type", "rule", "error", "max_retries"], "validate")
        rule = by_key.get("RULE")
        error = by_key.get("ERROR") or by_key.get("MESSAGE")
        retries = by_key.get("MAX_RETRIES")
        kind = by_key["TYPE"]
        return _one_validation(ctx.text(kind), ctx.text(rule) if rule else None, ctx.text(error) if error else None,
                               ctx.number(retries) if retries else None, kind, rule, ctx)
    out = []
    error = by_key.get("ERROR") or by_key.get("MESSAGE")
    for entry in entries:
        if key(entry) in ("ERROR", "MESSAGE"):
            continue
        out += _one_validation((entry.key or "").lower(), ctx.text(entry), ctx.text(error) if error else None, None,
                               entry, entry, ctx)
    if not out and not entries:
        ctx.error(codes.MISSING_KEY, "validate needs a rule", at)
    return out


def _one_validation(kind: str, rule: Any, error: Any, retries: Any, at: Node, rule_node: Node | None,
                    ctx: SectionContext) -> list[Validation]:
    kind = kind.strip().lower()
    if kind not in VALIDATION_KINDS:
        from frontdesk.diagnostics import did_you_mean

        guess = did_you_mean(kind, list(VALIDATION_KINDS))
        ctx.error(codes.BAD_VALUE, f"a validation type is one of {', '.join(VALIDATION_KINDS)}, not '{kind}'",
                  at.value_span() if at.key and at.key.upper() == "TYPE" else at,
                  f"did you mean {guess}?" if guess else None)
        return []
    where = rule_node if rule_node is not None else at
    if rule is None or str(rule).strip() == "":
        ctx.error(codes.MISSING_KEY, f"a {kind} validation needs its rule", at, "add rule: <the rule>")
        return []
    rule_text = ", ".join(str(v) for v in rule) if isinstance(rule, list) else str(rule)
    check = Validation(kind=kind, rule=rule_text, error="" if error is None else str(error))  # type: ignore[arg-type]
    if retries is not None:
        if isinstance(retries, bool) or not isinstance(retries, (int, float)) or retries < 0 or retries != int(retries):
            ctx.error(codes.BAD_VALUE, "max_retries must be a whole number of 0 or more", at)
        else:
            check.max_retries = int(retries)
    if kind == "pattern":
        try:
            re.compile(rule_text)
        except re.error as exc:
            ctx.error(codes.BAD_VALUE, f"the pattern is not a valid regular expression: {exc}", where.value_span())
            return []
    elif kind == "range":
        found = _RANGE.fullmatch(rule_text)
        if not found or float(found.group(1)) > float(found.group(2)):
            ctx.error(codes.BAD_VALUE, f"'{rule_text}' is not a range", where.value_span(), "write low-high, e.g. \"1-10\"")
            return []
    elif kind == "custom":
        offset = 1 if where.quoted else 0
        parsed = condition(ctx, rule_text, where, offset if rule_node is not None else 0)
        check.expr = parsed.expr if isinstance(parsed, ExprCondition) else None
    return [check]


# ---- ENTITIES ---------------------------------------------------------------------------------------

ENTITY_KEYS = ("TYPE", "VALUES", "SYNONYMS", "PATTERN", "SENSITIVE", "SENSITIVE_DISPLAY", "MASK_CONFIG", "PII_TYPE",
               "DESCRIPTION")
PII_TYPES = ("email", "phone", "ssn", "credit_card", "address", "name", "custom")


def compile_entities(node: Node, ctx: SectionContext, rules: AgentRules) -> None:
    """ENTITIES into `rules.entities`: enums (VALUES, SYNONYMS) and patterns (PATTERN), with privacy."""
    seen = {e.name for e in rules.entities}
    for child in node.children:
        if child.key is None or child.item:
            ctx.error(codes.WRONG_SHAPE, "ENTITIES holds <name>: with the entity's properties under it", child)
            continue
        entity = _entity(child, ctx)
        if entity is None:
            continue
        if entity.name in seen:
            ctx.error(codes.DUPLICATE_NAME, f"ENTITIES declares {entity.name} twice", child)
            continue
        seen.add(entity.name)
        rules.entities.append(entity)


def _entity(node: Node, ctx: SectionContext) -> EntityDef | None:
    name = node.key or ""
    props = {key(p): p for p in node.entries()}
    for prop in node.children:
        if prop.key is None or prop.item or key(prop) not in ENTITY_KEYS:
            if prop.key is None or prop.item:
                ctx.error(codes.WRONG_SHAPE, f"the entity {name} holds '{prop.text}', which is not a property", prop)
            else:
                ctx.unknown_key(prop, [k for k in ENTITY_KEYS], "an entity")
    kind_node = props.get("TYPE")
    if kind_node is None:
        ctx.error(codes.MISSING_KEY, f"the entity {name} has no TYPE", node, "add TYPE: enum or TYPE: pattern")
        return None
    kind = ctx.choice(kind_node, ("enum", "pattern"))
    if kind is None:
        return None
    entity = EntityDef(name=name, type=kind, span=node.span)  # type: ignore[arg-type]
    if kind == "enum":
        values = props.get("VALUES")
        entity.values = [str(v) for v in ctx.names_list(values)]
        if not entity.values:
            ctx.error(codes.MISSING_KEY, f"the enum entity {name} has no VALUES", values or node,
                      "add VALUES: [A, B, C]")
        synonyms = props.get("SYNONYMS")
        if synonyms is not None:
            entity.synonyms = _synonyms(synonyms, entity.values, ctx)
    else:
        pattern = props.get("PATTERN")
        if pattern is None or not ctx.text(pattern):
            ctx.error(codes.MISSING_KEY, f"the pattern entity {name} has no PATTERN", pattern or node)
        else:
            entity.pattern = ctx.text(pattern)
            try:
                re.compile(entity.pattern)
            except re.error as exc:
                ctx.error(codes.BAD_VALUE, f"PATTERN is not a valid regular expression: {exc}", pattern.value_span())
    entity.sensitive = ctx.boolean(props.get("SENSITIVE"))
    display = props.get("SENSITIVE_DISPLAY")
    if display is not None:
        entity.extra["sensitive_display"] = ctx.choice(display, ("redact", "replace", "mask"))
    pii = props.get("PII_TYPE")
    if pii is not None:
        entity.extra["pii_type"] = ctx.choice(pii, PII_TYPES)
    for word in ("MASK_CONFIG", "DESCRIPTION"):
        if word in props:
            entity.extra[word.lower()] = ctx.data(props[word])
    return entity


def _synonyms(node: Node, values: list[str], ctx: SectionContext) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    entries = node.entries()
    if not entries and node.value:
        data = ctx.data(node)
        if isinstance(data, dict):
            out = {str(k): [str(v) for v in (val if isinstance(val, list) else [val])] for k, val in data.items()}
        else:
            ctx.error(codes.WRONG_SHAPE, "SYNONYMS maps each value to its phrases", node)
        return out
    for entry in entries:
        canonical = entry.key or ""
        if values and canonical not in values:
            ctx.error(codes.BAD_VALUE, f"SYNONYMS names {canonical}, which is not one of VALUES", entry,
                      f"VALUES: {', '.join(values)}")
            continue
        out[canonical] = [str(v) for v in ctx.names_list(entry)]
    return out


# ---- LOOKUP_TABLES ----------------------------------------------------------------------------------

LOOKUP_KEYS = ("source", "values", "table_name", "field", "case_sensitive", "fuzzy_match", "fuzzy_threshold")


def compile_lookup_tables(node: Node, ctx: SectionContext, rules: AgentRules) -> None:
    """LOOKUP_TABLES into `rules.lookup_tables` (agent-local tables are experimental: ABL103)."""
    ctx.warning(codes.EXPERIMENTAL_LOOKUP_TABLES, "agent-local LOOKUP_TABLES are experimental", node,
                "prefer the project's runtime-config lookup tables for shared reference data")
    seen = {t.name for t in rules.lookup_tables}
    for child in node.children:
        if child.key is None or child.item:
            ctx.error(codes.WRONG_SHAPE, "LOOKUP_TABLES holds <name>: with the table's properties under it", child)
            continue
        table = LookupTable(name=child.key, span=child.span)
        props: dict[str, Node] = {}
        for prop in child.children:
            word = (prop.key or "").lower()
            if prop.key is None or prop.item or word not in LOOKUP_KEYS:
                if prop.key is None or prop.item:
                    ctx.error(codes.WRONG_SHAPE, f"the lookup table {table.name} holds '{prop.text}'", prop)
                else:
                    ctx.unknown_key(prop, list(LOOKUP_KEYS), "a lookup table")
                continue
            props[word] = prop
        table.source = ctx.choice(props.get("source"), ("inline", "collection", "api"), "inline")  # type: ignore[assignment]
        if "values" in props:
            data = ctx.data(props["values"])
            if isinstance(data, list):
                table.values = data
            else:
                ctx.error(codes.WRONG_SHAPE, "values is a list: [a, b, c]", props["values"])
        table.table_name = ctx.text(props.get("table_name"))
        table.field = ctx.text(props.get("field"))
        table.case_sensitive = ctx.boolean(props.get("case_sensitive"))
        table.fuzzy_match = ctx.boolean(props.get("fuzzy_match"))
        threshold = ctx.number(props.get("fuzzy_threshold"))
        if threshold is not None:
            if 0 <= threshold <= 1:
                table.fuzzy_threshold = float(threshold)
            else:
                ctx.error(codes.BAD_VALUE, "fuzzy_threshold is a similarity between 0 and 1",
                          props["fuzzy_threshold"].value_span())
        if table.source == "inline" and not table.values:
            ctx.error(codes.MISSING_KEY, f"the inline lookup table {table.name} has no values", child,
                      "add values: [a, b, c]")
        if table.source == "collection" and not table.table_name:
            ctx.error(codes.MISSING_KEY, f"the collection lookup table {table.name} has no table_name", child)
        if table.name in seen:
            ctx.error(codes.DUPLICATE_NAME, f"LOOKUP_TABLES declares {table.name} twice", child)
            continue
        seen.add(table.name)
        rules.lookup_tables.append(table)


# ---- BEHAVIOR_PROFILES GATHER_OVERRIDES ----------------------------------------------------------------

OVERRIDE_KEYS = ("prompt", "required", "type", "options", "values", "default", "validate", "validation",
                 "retry_prompt", "error")
OVERRIDE_STYLES = {"validation_style": ("strict", "lenient"), "confirmation": ("always", "never", "on_change")}


def profile_fields(rules: AgentRules, ctx: SectionContext) -> None:
    """GATHER_OVERRIDES of the agent's behaviour profiles (3.13.2): each `field_overrides` entry becomes the
    agent's field as the profile has it (`profile.gather_fields`: prompt, required, type, options, default,
    validation, retry_prompt) and its prompt a template (`profile.gather_prompts`). Called once the agent's
    fields are known (after its FLOW's GATHER steps). A field the agent does not gather is ignored with a
    warning: a profile document may serve several agents."""
    declared = {f.name: f for f in rules.gather}
    for profile in rules.profiles:
        overrides = {str(k).lower(): v for k, v in (profile.gather_overrides or {}).items()}
        at = Node(key=None, value=None, span=profile.span or Span(file=ctx.file, line=1, column=1))
        for word, allowed in OVERRIDE_STYLES.items():
            value = overrides.get(word)
            if value is not None and str(value).lower() not in allowed:
                ctx.error(codes.BAD_VALUE, f"{word} of profile {profile.name} is {' or '.join(allowed)}, not '{value}'",
                          at)
        fields = overrides.get("field_overrides") or {}
        if not isinstance(fields, dict):
            ctx.error(codes.WRONG_SHAPE, f"field_overrides of profile {profile.name} maps field names to properties",
                      at, "write field_overrides: {card_number: {prompt: \"...\"}}")
            continue
        for name, data in fields.items():
            name = str(name)
            base = declared.get(name)
            if base is None:
                from frontdesk.diagnostics import did_you_mean

                guess = did_you_mean(name, sorted(declared))
                ctx.warning(codes.IGNORED, f"profile {profile.name} overrides {name}, which {ctx.agent} does not "
                            "gather; the override is ignored", at, f"did you mean {guess}?" if guess else None)
                continue
            field = _overridden(base, {"prompt": data} if isinstance(data, str) else data, profile.name, at, ctx)
            if field is None:
                continue
            profile.gather_fields[name] = field
            if field.prompt != base.prompt:
                profile.gather_prompts[name] = ctx.template(field.prompt, at)


def _overridden(base: GatherField, data: Any, profile: str, at: Node, ctx: SectionContext) -> GatherField | None:
    if not isinstance(data, dict):
        ctx.error(codes.WRONG_SHAPE, f"profile {profile}: the override of {base.name} holds properties "
                  "(prompt, required, validate, ...)", at)
        return None
    field = base.model_copy(deep=True)
    for word, value in ((str(k).lower(), v) for k, v in data.items()):
        if word == "prompt":
            field.prompt = str(value)
        elif word == "required":
            if not isinstance(value, bool):
                ctx.error(codes.BAD_VALUE, f"profile {profile}: required of {base.name} is true or false", at)
                continue
            field.required = value
            if field.activation in ("required", "optional"):
                field.activation = "required" if value else "optional"
        elif word == "type":
            if str(value).lower() not in BASE_TYPES and str(value) not in ctx.names.types:
                ctx.error(codes.UNKNOWN_TYPE, f"profile {profile}: unknown type '{value}' for {base.name}", at)
                continue
            field.type = str(value).lower() if str(value).lower() in BASE_TYPES else str(value)
        elif word in ("options", "values"):
            field.options = [str(v) for v in (value if isinstance(value, list) else str(value).split(","))]
        elif word == "default":
            field.default = value
        elif word in ("validate", "validation"):
            field.validations = _data_validations(value, at, ctx)
        elif word in ("retry_prompt", "error"):
            field.extra["retry_prompt"] = str(value)
        else:
            from frontdesk.diagnostics import did_you_mean

            guess = did_you_mean(word, list(OVERRIDE_KEYS))
            ctx.error(codes.UNKNOWN_KEY, f"profile {profile}: a field override has no key '{word}'", at,
                      f"did you mean {guess}?" if guess else f"a field override takes: {', '.join(OVERRIDE_KEYS)}")
    return field


def _data_validations(value: Any, at: Node, ctx: SectionContext) -> list[Validation]:
    """A `validate` written in a profile (data, not lines): an LLM rule, {type, rule, error, max_retries},
    {pattern: ..., range: ...}, or a list of these."""
    if isinstance(value, list):
        return [v for item in value for v in _data_validations(item, at, ctx)]
    if isinstance(value, str):
        return [Validation(kind="llm", rule=value)] if value.strip() else []
    if not isinstance(value, dict):
        ctx.error(codes.WRONG_SHAPE, "validate holds type, rule, error and max_retries", at)
        return []
    lowered = {str(k).lower(): v for k, v in value.items()}
    if "type" in lowered:
        return _one_validation(str(lowered["type"]), lowered.get("rule"), lowered.get("error"),
                               lowered.get("max_retries"), at, None, ctx)
    error = lowered.get("error")
    return [v for k, rule in lowered.items() if k != "error"
            for v in _one_validation(k, rule, error, None, at, None, ctx)]
