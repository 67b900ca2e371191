"""Helpers for tests that run an ADL program written in the test itself (not a test module)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from frontdesk.lang import load_program


def program(tmp_path: Path, text: str):
    """The program of `text` (indented YAML, dedented here) written to tmp_path/agents.yml; the test fails
    when it does not load or has an error."""
    (tmp_path / "agents.yml").write_text(textwrap.dedent(text), encoding="utf-8")
    prog, diags = load_program(tmp_path)
    errors = [d.format() for d in diags if d.is_error]
    assert prog is not None and not errors, errors
    return prog


def said(run, index: int) -> list[str]:
    """The texts the bot said in turn `index` of a run_conversation run (0 is the opening)."""
    return [m.text for m in run.turns[index].messages]
