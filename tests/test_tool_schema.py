"""A tool's `returns` checked with the jsonschema library (runtime/tools/schema.py): JSON Schema's
own meaning (`oneOf` is exactly one), the tool-contract additions (unknown type names, `nullable`)
and a schema that cannot be used never failing the call."""

from __future__ import annotations

import pytest

from frontdesk.runtime.tools import schema_problem

PRICE = {"oneOf": [{"type": "integer"}, {"type": "number"}]}


def test_one_of_refuses_a_value_that_fits_two_branches():
    # 3 is an integer and a number: two branches fit, and oneOf allows exactly one
    assert schema_problem(3, PRICE) == \
        "the value fits more than one of its allowed shapes, and oneOf allows exactly one"
    assert schema_problem(3.5, PRICE) is None  # a number that is not an integer: one branch
    # anyOf takes the same value
    assert schema_problem(3, {"anyOf": PRICE["oneOf"]}) is None


def test_one_of_with_no_fitting_branch_says_the_first_branchs_problem():
    assert schema_problem("x", PRICE) == \
        "the value fits none of its allowed shapes (the value is a string, not integer)"


@pytest.mark.parametrize("value, schema, problem", [
    ({"items": [{"price": "9"}]},
     {"type": "object", "properties": {"items": {"type": "array", "items": {
         "type": "object", "properties": {"price": {"type": "number"}}}}}},
     "items[0].price is a string, not number"),
    (None, {"type": "string", "nullable": True}, None),
    (None, {"type": "string"}, "the value is null, not string"),
    ("2024-01-01", {"type": ["date", "null"]}, None),  # a type name JSON Schema does not know
    ("anything", {"type": "any"}, None),
    (2.0, {"type": "integer"}, None),  # a whole float is an integer
    (True, {"type": "number"}, "the value is a boolean, not number"),
    ([1, 2, 3], {"type": "array", "maxItems": 2}, "the value has 3 items, more than 2"),
    ({"a": {"b": "x"}}, {"properties": {"a": {"properties": {"b": {"const": "y"}}}}}, "a.b is 'x', not 'y'"),
    (5, {"type": "integer", "minimum": 10}, "the value: 5 is less than the minimum of 10"),
    ("xbc", {"type": "string", "pattern": "^a"}, "the value: 'xbc' does not match '^a'"),
    (1, {"$ref": "#/$defs/t", "$defs": {"t": {"type": "string"}}}, "the value is a number, not string"),
])
def test_schema_problems_in_words(value, schema, problem):
    assert schema_problem(value, schema) == problem


@pytest.mark.parametrize("schema", [
    {"$ref": "http://127.0.0.1:9/elsewhere.json"},  # never fetched
    {"type": 5},
    {"minimum": "ten"},
    {"pattern": "("},
])
def test_a_schema_that_cannot_be_used_accepts_the_value(schema):
    assert schema_problem(1, schema) is None
