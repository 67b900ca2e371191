"""The checked-in IR schema is the one the models generate, and the IR round-trips through JSON."""

from pathlib import Path

from frontdesk.ir.schema import SCHEMA_PATH, generate_schema
from frontdesk.ir.models import Program
from frontdesk.lang import load_program

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_checked_in_schema_is_current():
    assert SCHEMA_PATH.read_text(encoding="utf-8") == generate_schema(), (
        "the IR models changed: regenerate with `frontdesk schema -o src/frontdesk/ir/schema.json`"
    )


def test_example_programs_round_trip_through_json():
    for folder in ("bookstore", "retail_banking"):
        program, _ = load_program(EXAMPLES / folder)
        again = Program.model_validate_json(program.model_dump_json())
        assert again.root == ""  # the root is where the program was loaded from, not part of the IR
        again.root = program.root
        assert again == program
