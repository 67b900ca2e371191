"""CEL checks of ABL GUARDRAILS: validation with columns, the documented helpers, evaluation."""

from __future__ import annotations

import pytest

from frontdesk.expr.cel import (
    HELPERS,
    CelCheck,
    CelError,
    CelProblem,
    check_cel,
    compile_check,
    contains_email,
    contains_pii,
    contains_url,
    evaluate_check,
    sentence_count,
    word_count,
)

# Every `check:` of abl-specification 3.9, and CEL forms a guardrail may use.
SPEC_CHECKS = [
    "contains_pii(content)",
    "abl.word_count(tool_input) >= 200",
    "abl.matches_pattern(input, '(?i)acme travel|globex bookings')",
]
MORE_CHECKS = [
    "abl.contains_pii(output) || abl.contains_url(output)",
    "abl.sentence_count(output) > 3 && !abl.contains_email(output)",
    'size(input) > 2000 || input.contains("DROP TABLE")',
    'input.matches("^[0-9]+$")',
    "tool_input.amount > 1000",
    '"password" in tool_output',
]


@pytest.mark.parametrize("text", SPEC_CHECKS + MORE_CHECKS)
def test_valid_checks(text: str) -> None:
    assert check_cel(text) is None
    assert isinstance(compile_check(text), CelCheck)


@pytest.mark.parametrize(("text", "column", "message", "hint"), [
    ("a and b", 3, "malformed CEL expression", "&&"),
    ("x = 1", 3, "malformed CEL expression", "=="),
    ("size(input) > ", None, "", None),
    ('"abc', 1, "malformed", "close the quoted text"),
    ("abl.toxicity(output) > 0.5", 5, "unknown helper abl.toxicity", "llm_check"),
    ("empathy_score(output) < 3", 1, "unknown function empathy_score", "llm_check"),
    ("", 1, "empty", None),
])
def test_malformed_checks_have_a_column(text: str, column: int | None, message: str, hint: str | None) -> None:
    problem = check_cel(text)
    assert isinstance(problem, CelProblem)
    assert message in problem.message
    if column is not None:
        assert problem.column == column
    if hint is not None:
        assert problem.hint is not None and hint in problem.hint
    with pytest.raises(CelError):
        compile_check(text)


def test_problem_on_a_later_line() -> None:
    problem = check_cel("size(input) > 3 &&\n  abl.toxic(input)")
    assert problem is not None and problem.line == 2 and problem.column == 7


def test_extra_functions_can_be_declared() -> None:
    assert check_cel("sentiment(input) < 0") is not None
    assert check_cel("sentiment(input) < 0", functions=["sentiment"]) is None


def test_spec_checks_evaluate() -> None:
    assert evaluate_check(SPEC_CHECKS[0], {"content": "write to jane.doe@example.com"}) is True
    assert evaluate_check(SPEC_CHECKS[0], {"content": "your room is ready"}) is False
    long_input = {"query": " ".join(["word"] * 250)}
    assert evaluate_check(SPEC_CHECKS[1], {"tool_input": long_input}) is True
    assert evaluate_check(SPEC_CHECKS[1], {"tool_input": {"query": "short"}}) is False
    check = compile_check(SPEC_CHECKS[2])
    assert check.fires({"input": "Is Globex Bookings cheaper?"}) is True
    assert check.fires({"input": "Book me a room"}) is False


def test_cel_values_come_back_as_python_data() -> None:
    assert evaluate_check("tool_input.amount * 2", {"tool_input": {"amount": 21}}) == 42
    assert evaluate_check("[1, 2].map(x, x + 1)", {}) == [2, 3]
    assert evaluate_check("abl.word_count(s)", {"s": "one two three"}) == 3
    assert evaluate_check('{"a": x}', {"x": "y"}) == {"a": "y"}


def test_fires_only_on_true() -> None:
    check = compile_check("abl.word_count(s)")
    assert check.evaluate({"s": "a b"}) == 2
    assert check.fires({"s": "a b"}) is False


def test_evaluation_errors() -> None:
    with pytest.raises(CelError, match="undeclared reference to 'missing'"):
        evaluate_check("missing > 1", {})
    with pytest.raises(CelError, match="invalid regular expression"):
        evaluate_check("abl.matches_pattern(s, '(')", {"s": "x"})
    with pytest.raises(CelError):
        evaluate_check("a and b", {})


@pytest.mark.parametrize(("text", "pii"), [
    ("call me at +1 555-123-4567", True),
    ("my ssn is 123-45-6789", True),
    ("card 4111 1111 1111 1111", True),
    ("card 4111 1111 1111 1112", False),  # fails the Luhn check
    ("a@b.io", True),
    ("order 12345 for 2 guests", False),
    ("", False),
])
def test_contains_pii(text: str, pii: bool) -> None:
    assert contains_pii(text) is pii


def test_text_helpers() -> None:
    assert word_count("Hello, world! It's me.") == 4
    assert word_count(None) == 0
    assert sentence_count("One. Two! Three?") == 3
    assert sentence_count("no end") == 1
    assert sentence_count("   ") == 0
    assert contains_url("see https://example.org/x") is True
    assert contains_url("visit www.example.com") is True
    assert contains_url("mail a@example.com") is False
    assert contains_email("mail a@example.com") is True
    assert set(HELPERS) == {"contains_pii", "matches_pattern", "word_count", "sentence_count", "contains_url",
                            "contains_email"}
