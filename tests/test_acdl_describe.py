"""`frontdesk describe`: the ACDL of our own LLM calls parses, and recorded calls verify against it."""

from __future__ import annotations

from pathlib import Path

import pytest

from frontdesk.lang import load_program
from frontdesk.acdl import parse_acdl
from frontdesk.runtime.describe import describe_program
from frontdesk.acdl.verify import verify_calls
from frontdesk.testing import load_conversation, run_conversation, scripted_model

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture(autouse=True)
def example_data(tmp_path, monkeypatch):
    monkeypatch.setenv("FRONTDESK_EXAMPLE_DB_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("FRONTDESK_EXAMPLE_TODAY", "2026-11-22")


def described(example: str):
    program, _ = load_program(EXAMPLES / example)
    text = describe_program(program, label=example)
    file_ast, diags = parse_acdl(text, f"{example}.acdl")
    assert file_ast is not None and not diags, [d.format(text) for d in diags]
    return program, text, file_ast


def recorded_events(program, example: str) -> list[dict]:
    events = []
    for path in sorted((EXAMPLES / example / "conversations").glob("*.yml")):
        spec = load_conversation(path)
        if spec.get("embeddings"):
            continue
        run = run_conversation(program, [str(u) for u in spec["user"]], scripted_model(spec))
        events.extend(run.events)
    return events


@pytest.mark.parametrize("example", ["bookstore", "retail_banking"])
def test_description_parses_and_every_recorded_call_conforms(example):
    program, text, file_ast = described(example)
    names = {item.name for item in file_ast.items if hasattr(item, "body")}
    events = recorded_events(program, example)
    calls = [e for e in events if e["type"] == "llm_call"]
    assert {e["data"]["plan"] for e in calls} <= names  # every kind of call made is described
    results = verify_calls(file_ast, events)
    assert len(results) == len(calls) > 0
    assert [r.problem for r in results if not r.ok] == []
    # the structure the description states is what was sent: as many messages, in the same roles
    for event in calls:
        sent = [m["role"][0].upper() for m in event["data"]["messages"]]
        recorded = [m["role"] for m in event["data"]["structure"]]
        assert sent == recorded


@pytest.mark.parametrize("example", ["bookstore", "retail_banking"])
def test_description_renders(example):
    import xml.etree.ElementTree as ET

    from frontdesk.acdl.render import render_html, render_svg

    _, _, file_ast = described(example)
    svg = render_svg(file_ast)
    ET.fromstring(svg)  # well-formed
    assert "ROUTER_ROLE" in svg and "ROUTER_ROLE" in render_html(file_ast)


def test_description_covers_each_kind_of_call():
    _, text, _ = described("bookstore")
    for name in ("Route_triage", "Understand_order", "Reason_book_recommendation", "Answer_store_policy_kb"):
        assert f"{name}[" in text


def test_a_spec_that_differs_from_the_calls_is_reported_with_the_first_mismatch():
    program, text, _ = described("bookstore")
    events = recorded_events(program, "bookstore")
    changed = text.replace("        AGENTS_HEADER", "        AGENT_LIST_HEADER", 1)
    file_ast, diags = parse_acdl(changed, "changed.acdl")
    assert file_ast is not None
    results = [r for r in verify_calls(file_ast, events) if r.spec == "Route_triage"]
    assert results and not any(r.ok for r in results)
    assert "expected AGENT_LIST_HEADER" in results[0].problem and "found AGENTS_HEADER" in results[0].problem
    swapped = text.replace("Route_triage[@T]: {\n    S: {", "Route_triage[@T]: {\n    A: {", 1)
    file_ast, _ = parse_acdl(swapped, "swapped.acdl")
    problem = next(r for r in verify_calls(file_ast, events) if r.spec == "Route_triage").problem
    assert problem.startswith("message 1: expected a A: message")
