"""Generation and location of the IR's JSON schema (checked in as ir/schema.json)."""

from __future__ import annotations

import json
from pathlib import Path

from frontdesk.ir.models import Program

SCHEMA_PATH = Path(__file__).with_name("schema.json")


def generate_schema() -> str:
    return json.dumps(Program.model_json_schema(mode="serialization"), indent=2, sort_keys=True) + "\n"
