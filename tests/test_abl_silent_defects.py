"""Issue 26, section 2: broken ABL programs that `check` passed silently. Each test failed before its
check existed."""

from __future__ import annotations

import textwrap
from pathlib import Path

from frontdesk.lang import load_program

BOOKING = """
    AGENT: Booking_Agent
    GOAL: "Book a room"
    GATHER:
      check_in:
        PROMPT: "Which day do you arrive?"
        TYPE: date
      nights:
        PROMPT: "How many nights?"
        TYPE: number
        ACTIVATION: progressive
        DEPENDS_ON: [check_in]
    TEMPLATES:
      welcome: "Welcome to the hotel."
    ON_START:
      RESPOND: TEMPLATE(welcome)
"""


def diagnostics(tmp_path: Path, text: str) -> list:
    (tmp_path / "booking.agent.abl").write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    _, diags = load_program(tmp_path)
    return list(diags)


def test_the_valid_program_checks_clean(tmp_path):
    assert [d.format() for d in diagnostics(tmp_path, BOOKING) if d.is_error] == []


def test_depends_on_naming_no_field_is_an_error(tmp_path):
    found = [d for d in diagnostics(tmp_path, BOOKING.replace("DEPENDS_ON: [check_in]", "DEPENDS_ON: [checkin]"))
             if d.is_error]
    assert [d.code for d in found] == ["ABL023"]
    assert "nights depends on checkin, which no GATHER declares" in found[0].message
    assert "did you mean check_in?" in (found[0].hint or "")
    assert (found[0].span.line, found[0].span.column) == (11, 18)  # the name in DEPENDS_ON


def test_a_hooks_template_that_does_not_exist_is_an_error(tmp_path):
    found = [d for d in diagnostics(tmp_path, BOOKING.replace("TEMPLATE(welcome)", "TEMPLATE(welcom)"))
             if d.is_error]
    assert [d.code for d in found] == ["ABL026"]
    assert "no template named welcom" in found[0].message and "did you mean welcome?" in (found[0].hint or "")



def test_immutable_naming_a_parameter_the_tool_lacks_is_an_error(tmp_path):
    tools = """
        TOOLS:
          charge_card(amount: number, currency: string) -> Result
            side_effects: true
            immutable: [amount, ammount]
    """
    text = BOOKING + textwrap.dedent(tools).replace("\n", "\n    ")
    found = [d for d in diagnostics(tmp_path, text) if d.is_error]
    assert [d.code for d in found] == ["ABL026"]
    assert "immutable names ammount, which is not a parameter of charge_card" in found[0].message
    assert "did you mean amount?" in (found[0].hint or "")


def test_a_field_named_like_a_system_variable_gets_the_reserved_name_warning(tmp_path):
    """abl-specification 8.8: "Do not use these names for user-defined variables"."""
    text = BOOKING.replace("  check_in:\n", "  tool_failures:\n").replace("DEPENDS_ON: [check_in]",
                                                                        "DEPENDS_ON: [tool_failures]")
    found = [d for d in diagnostics(tmp_path, text) if d.code == "ABL104"]
    assert len(found) == 1 and "'tool_failures' is a system variable the runtime sets" in found[0].message
    assert not [d for d in diagnostics(tmp_path, BOOKING) if d.code == "ABL104"]


PETS = """
    AGENT: Pet_Desk
    GOAL: "Book pet-friendly rooms"
    TOOLS:
      book_room(pets: number, nights: number, tags: array<string>) -> {ref: string}
        python: tools.py
      submit_refill(rx: string) -> {ok: boolean}
    GATHER:
      has_pet:
        prompt: "Do you travel with a pet?"
        type: boolean
      nights:
        prompt: "How many nights?"
        type: number
    FLOW:
      ask:
        GATHER: [has_pet, nights]
        THEN: book
      book:
        CALL: book_room
        WITH:
          pets: nights
          nights: nights
        THEN: refill
      refill:
        CALL: submit_refill(rx = "x")
        THEN: COMPLETE
"""


def _pets(tmp_path: Path, text: str = PETS):
    (tmp_path / "pets.agent.abl").write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    (tmp_path / "tools.py").write_text("def book_room(pets, nights, tags=None):\n    return {'ref': 'R1'}\n")
    program, diags = load_program(tmp_path)
    return program, list(diags)


def test_a_generic_array_type_is_a_type(tmp_path):
    _, diags = _pets(tmp_path)
    assert [d.format() for d in diags if d.is_error] == []  # no ABL017 on array<string>


def test_a_boolean_field_passed_to_a_number_parameter_is_a_type_mismatch_at_the_call(tmp_path):
    _, diags = _pets(tmp_path, PETS.replace("pets: nights", "pets: has_pet"))
    found = [d for d in diags if d.is_error]
    assert [(d.code, d.span.line) for d in found] == [("ABL024", 19)]  # the CALL line
    assert "book_room's parameter pets is a number, but the GATHER field has_pet passed to it is a boolean" \
        in found[0].message
    _, diags = _pets(tmp_path, PETS.replace("CALL: book_room\n        WITH:\n          pets: nights\n"
                                            "          nights: nights",
                                            "CALL: book_room(pets = has_pet, nights = nights)"))
    assert [d.code for d in diags if d.is_error] == ["ABL024"]


def test_a_tool_with_no_implementation_is_warned_at_check(tmp_path):
    from frontdesk.analysis.lint import lint_program

    program, _ = _pets(tmp_path)
    found = [d for d in lint_program(program) if d.code == "FD054"]
    assert [(d.message, d.span.line) for d in found] == [
        ("tool 'submit_refill' has no implementation: every call of it fails", 6)]
    assert "python: file.py" in found[0].hint
