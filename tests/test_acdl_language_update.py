"""ACDL as its authors' language reference describes it today (nogaplab/ACDL, acdl-agent/acdl-language.md),
beyond the paper: a Name used as a time index (`@$C`), a second index list on a value (`x[@t][m]`),
`Case value:` with a colon, Mark blocks that do not scope names; and long lines wrapped when rendered.
Each construct parses, checks, formats back to text that parses to the same tree, renders, diffs and,
where a trace can show it, verifies. The examples are written here from the reference's descriptions."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from frontdesk.acdl import parse_acdl
from frontdesk.acdl import render as render_mod
from frontdesk.acdl.ast import TimeName, node_from_dict, walk
from frontdesk.acdl.diff import diff_acdl
from frontdesk.acdl.printer import format_acdl
from frontdesk.acdl.render import WRAP_COLUMNS, VBlock, VLine, build_view, export, render_html, render_svg
from frontdesk.acdl.verify import verify_calls

# "bind a name to a time index and use it as an index value" (the reference's compaction example)
COMPACTION = """
Support[@T.I]: {
    S: INSTRUCTIONS
    Name C := sys.last_compaction_turn[@T]
    If (@$C > 1) {
        U: {
            THIS_IS_A_SUMMARY  // what the summary stands for
            sys.conversation_summary[@$C]
        }
        A: resp.response[@$C]
    }
    ForEach(t: range(@$C + 1, @T)) {
        U: env.user_message[@t]
        A: resp.response[@t]
    }
    U: env.user_message[@T]
}
"""

# a value kept per turn that is itself a list: its elements are reached with a second index list
PENDING = """
Inbox[@T]: {
    U: {
        ForEach(m: range(1, sys.pending_messages[@T].len)) {
            sys.pending_messages[@T][m].date_time
            sys.pending_messages[@T][m].message
        }
        env.user_query[@T]
    }
}
"""

# `Case value:` with a colon before the block, as the reference's coding-agent example writes it
SWITCH_COLON = """
Agent[@T]: {
    S: INSTRUCTIONS
    Switch env.input_source[@T] {
        Case user: {
            U: env.user_query[@T]
        }
        Case heartbeat_timer: {
            U: HEARTBEAT_INSTRUCTIONS
        }
        Default: {
            U: env.other_input[@T]
        }
    }
}
"""

# "Mark blocks are purely presentational: no effect on semantics or scoping"
NAME_IN_MARK = """
Agent[@T]: {
    Mark 2 {
        Name C := sys.last_compaction_time[@T]
        If (@$C > 1) {
            U: sys.conversation_summary[@$C]
        }
    }
    ForEach(t: range(@$C + 1, @T)) {
        U: env.user_query[@t]
    }
}
"""

ALL = {"compaction": COMPACTION, "pending": PENDING, "switch_colon": SWITCH_COLON, "name_in_mark": NAME_IN_MARK}


def parsed(text: str, name: str = "spec.acdl"):
    file_ast, diags = parse_acdl(text, name)
    errors = [d.format(text) for d in diags if d.is_error]
    assert file_ast is not None and not errors, errors
    return file_ast


@pytest.mark.parametrize("name", sorted(ALL))
def test_each_construct_parses_checks_and_round_trips(name):
    first = parsed(ALL[name])
    text = format_acdl(first)
    second = parsed(text)
    assert second.to_dict(spans=False) == first.to_dict(spans=False)  # the same tree, comments and all
    assert format_acdl(second) == text  # fmt is stable
    assert node_from_dict(first.to_dict()).to_dict(spans=False) == first.to_dict(spans=False)  # and its JSON form


def test_a_name_used_as_a_time_index_is_its_own_node_and_prints_as_written():
    file_ast = parsed(COMPACTION)
    names = [n for n in walk(file_ast) if isinstance(n, TimeName)]
    assert [n.name for n in names] == ["C", "C", "C", "C"]
    text = format_acdl(file_ast)
    assert "If (@$C > 1) {" in text and "sys.conversation_summary[@$C]" in text
    assert "range(@$C + 1, @T)" in text or "range(@$C+1, @T)" in text


def test_a_time_index_naming_no_definition_is_an_error_at_its_place():
    text = "P[@T]: {\n    U: sys.summary[@$D]\n}\n"
    _, diags = parse_acdl(text, "p.acdl")
    found = [(d.code, d.span.line, d.span.column) for d in diags if d.is_error]
    assert found and found[0][1:] == (2, 20), found
    assert "@$D" in next(d for d in diags if d.is_error).message


def test_a_name_defined_in_a_block_is_not_visible_outside_it_but_a_mark_is_no_block():
    inside_if = NAME_IN_MARK.replace("Mark 2 {", "If @T > 2 {")
    _, diags = parse_acdl(inside_if, "p.acdl")
    assert any(d.is_error and "@$C" in d.message for d in diags)
    parsed(NAME_IN_MARK)  # the same inside a Mark: fine


def test_a_second_index_list_is_kept_apart_from_the_first():
    text = format_acdl(parsed(PENDING))
    assert "sys.pending_messages[@T][m].date_time" in text
    assert "sys.pending_messages[@T, m]" not in text


def test_case_with_a_colon_is_the_same_case():
    with_colon = parsed(SWITCH_COLON)
    without = parsed(SWITCH_COLON.replace("user: {", "user {").replace("timer: {", "timer {").replace("Default: {", "Default {"))
    assert format_acdl(with_colon) == format_acdl(without)


# ---- render -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(ALL))
def test_each_construct_renders_in_html_and_svg(name):
    file_ast = parsed(ALL[name])
    page = render_html(file_ast)
    root = ET.fromstring(render_svg(file_ast))  # well-formed
    texts = "".join(root.itertext())
    if "@$C" in ALL[name]:
        assert "@$C" in page and "@$C" in texts
    if name == "pending":
        assert "[m]" in texts and ".date_time" in texts


LONG = """
Support[@T]: {
    S: {
        CUSTOMER_SERVICE_INSTRUCTIONS_FOR_THE_BOOKSTORE_ASSISTANT_WITH_RETURN_POLICY_AND_SHIPPING_RULES
        describeTools(sys.available_tools[@T], sys.tool_schemas[@T], sys.agent_name, sys.current_channel[@T], sys.locale)
    }
    ForEach(t: range(sys.first_turn_after_the_last_compaction[@T] + 1, @T - 1, sys.history_window_step_size)) {
        U: env.user_message[@t]  // what the customer wrote at turn t, after the guardrails and the redaction of card numbers were applied
    }
}
"""


def _line_text(view: VLine) -> str:
    return "".join(r.text for p in view.parts for r in (p.runs if hasattr(p, "runs") else [p]))


def _lines(views) -> list:
    found = []
    for view in views:
        if isinstance(view, VLine):
            found.append(view)
        found.extend(_lines(getattr(view, "children", []) or []))
    return found


def test_long_lines_are_wrapped_after_commas_with_the_continuation_indented():
    views = build_view(parsed(LONG))
    lines = [_line_text(v) for v in _lines(views)]
    assert all(len(line) <= WRAP_COLUMNS for line in lines), lines
    call = [line for line in lines if "current_channel" in line or "describeTools" in line]
    assert len(call) >= 2 and call[0].startswith("describeTools(") and call[0].rstrip().endswith(",")
    assert call[1].startswith("    ")  # the continuation's hanging indent
    # a template name longer than a line is cut after an underscore
    template = [line for line in lines if "CUSTOMER_SERVICE" in line or "SHIPPING_RULES" in line]
    assert len(template) == 2 and template[0].endswith("_")
    # the long ForEach header goes on a second header line; the too-long inline comment on its own line
    block = next(v for v in views[0].children if isinstance(v, VBlock))
    assert block.more and "history_window_step_size" in "".join(r.text for r in block.more[0])
    assert _lines(block.children)[0].comment is None


def test_wrapping_can_be_turned_off_and_short_lines_are_untouched():
    unwrapped = [_line_text(v) for v in _lines(build_view(parsed(LONG), wrap=0))]
    assert any(len(line) > WRAP_COLUMNS for line in unwrapped)
    short = parsed(COMPACTION)
    assert [_line_text(v) for v in _lines(build_view(short))] == [_line_text(v) for v in _lines(build_view(short, wrap=0))]


def test_wrapped_html_and_svg_stay_narrow_and_keep_every_character():
    file_ast = parsed(LONG)
    svg = render_svg(file_ast)
    width = float(ET.fromstring(svg).get("width"))
    assert width < (WRAP_COLUMNS + 30) * render_mod.ADVANCE + 200
    flat = re.sub(r"\s+", "", "".join(ET.fromstring(svg).itertext()))
    for piece in ("CUSTOMER_SERVICE_INSTRUCTIONS_FOR_THE_BOOKSTORE_ASSISTANT_WITH_RETURN_POLICY_AND_SHIPPING_RULES",
                  "sys.current_channel[@T]", "sys.history_window_step_size"):
        assert re.sub(r"\s+", "", piece) in flat
    page = render_html(file_ast)
    assert page.count('class="head"') >= 2  # the ForEach header and its continuation


@pytest.mark.skipif(render_mod.chromium_path() is None, reason="headless Chromium is not installed")
def test_wrapped_png_is_no_wider_than_the_svg(tmp_path):
    file_ast = parsed(LONG)
    out = export(file_ast, tmp_path / "long.png")
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    png_width = int.from_bytes(data[16:20], "big")
    assert png_width <= float(ET.fromstring(render_svg(file_ast)).get("width")) * 2 + 2


# ---- diff -----------------------------------------------------------------------------------------------------------


def test_diff_sees_a_changed_time_name():
    old = parsed(COMPACTION, "old.acdl")
    new = parsed(COMPACTION.replace("sys.conversation_summary[@$C]", "sys.conversation_summary[@$C - 1]"), "new.acdl")
    diff = diff_acdl(old, new, "old.acdl", "new.acdl")
    assert not diff.is_empty and "@$C" in diff.to_text()
    assert diff_acdl(old, parsed(COMPACTION, "same.acdl"), "old.acdl", "same.acdl").is_empty


# ---- verify against a recorded trace --------------------------------------------------------------------------------

SPEC_FOR_TRACE = """
Chat[@T]: {
    S: INSTRUCTIONS
    Name C := sys.last_compaction_turn[@T]
    If (@$C > 1) {
        U: sys.conversation_summary[@$C]
    }
    ForEach(t: range(@$C + 1, @T - 1)) {
        U: env.user_message[@t]
        Switch sys.reply_kind[@t] {
            Case text: {
                A: resp.answer[@t]
            }
            Default: {
                A: resp.tool_calls[@t]
                T: sys.tool_results[@t][1]
            }
        }
    }
    U: env.user_message[@T]
}
"""


def call(*messages, seq=1):
    structure = [{"role": role, "elements": list(elements)} for role, *elements in messages]
    return {"type": "llm_call", "seq": seq, "data": {"plan": "Chat", "structure": structure}}


def test_a_spec_using_the_new_constructs_verifies_calls_with_and_without_a_summary():
    file_ast = parsed(SPEC_FOR_TRACE)
    calls = [
        call(("S", "INSTRUCTIONS"), ("U", "env.user_message"), seq=1),
        call(("S", "INSTRUCTIONS"), ("U", "sys.conversation_summary"), ("U", "env.user_message"),
             ("A", "resp.answer"), ("U", "env.user_message"), seq=2),
        call(("S", "INSTRUCTIONS"), ("U", "env.user_message"), ("A", "resp.tool_calls"),
             ("T", "sys.tool_results"), ("U", "env.user_message"), seq=3),
    ]
    results = verify_calls(file_ast, calls)
    assert [r.ok for r in results] == [True, True, True], [r.problem for r in results]
    wrong = call(("S", "INSTRUCTIONS"), ("A", "resp.answer"), seq=4)
    assert not verify_calls(file_ast, [wrong])[0].ok


def test_a_recorded_frontdesk_trace_verifies_against_a_spec_written_with_a_time_name(tmp_path):
    """A real session: the reasoning agent of a small program, its llm_call events recorded by the engine,
    checked against a hand-written description that binds the compaction turn with Name and @$C."""
    from frontdesk.lang import load_program
    from frontdesk.llm.scripted import ScriptedProvider
    from frontdesk.testing import run_conversation

    (tmp_path / "agents.yml").write_text(
        "main:\n  type: llm agent\n  description: Answers questions.\n  prompt: Answer briefly.\n", encoding="utf-8")
    program, diags = load_program(tmp_path)
    assert program is not None and not [d for d in diags if d.is_error]
    script = ScriptedProvider([{"purpose": "reason", "reply": "Hello!"}, {"purpose": "reason", "reply": "Sure."},
                               {"purpose": "reason", "reply": "Anything else?"}])
    run = run_conversation(program, ["hi", "one more thing"], script)
    events = [e for e in run.events if e["type"] == "llm_call"]
    assert len(events) >= 2
    plan = events[0]["data"]["plan"]
    system = [m for m in events[0]["data"]["structure"] if m["role"] == "S"][0]["elements"]
    spec = f"""
{plan}[@T.I]: {{
    Name C := sys.last_compaction_turn[@T]
    S: {{
        {system[0]}
        If (@$C > 1) {{
            SUMMARY_HEADER
            sys.conversation_summary[@$C]
        }}
        ForEach(e: range(2, {len(system)})) {{
            sys.other_system_element[e]
        }}
    }}
    ForEach(t: range(@$C + 1, @T)) {{  // the transcript since the last compaction; the agent spoke first
        If env.user_message[@t] {{
            U: env.user_message[@t]
        }}
        If resp.agent_message[@t] {{
            A: resp.agent_message[@t]
        }}
    }}
}}
"""
    # the elements after the first are written as they were recorded, by name
    spec = spec.replace("        ForEach(e: range(2, " + str(len(system)) + ")) {\n            sys.other_system_element[e]\n        }\n",
                        "".join(f"        {element}\n" for element in system[1:]))
    file_ast = parsed(spec, "chat.acdl")
    results = verify_calls(file_ast, events)
    assert len(results) == len(events) and all(r.ok for r in results), [r.problem for r in results]


# ---- one tour of the whole reference ------------------------------------------------------------------------------

# Every construct the reference describes, section by section, in specifications written for a clinic's
# booking assistant: several specifications and fragments in one file (2), the five roles in both forms
# (3), context variables with nested paths and indices (4), time and other indices with arithmetic (5),
# templates (6), functions and range (7), ForEach / If / ElseIf / Else / Switch / break / continue /
# PromptEndsHere (8), Name with $ and @$ and a list comprehension (9), Mark (10), fragments (11), comments (12).
TOUR = """
// the clinic assistant's contexts
StrFrag SlotDetails[slot]: {
    env.slot_time[slot]
    env.slot_doctor[slot]
    formatPrice(env.slot_price[slot])  // the fee, with currency
}

RolesFrag PastTurn[@t]: {
    U: env.patient_message[@t]
    If sys.tool[@t] != none {
        A: sys.tool[@t].call
        T: sys.tool[@t].tool_response[@t]
    }
    A: resp.answer[@t]
}

Booking[@T.I]: {
    Mark 1 {
        S: {
            BOOKING_INSTRUCTIONS  // who the assistant is and what it may book
            AVAILABLE_TOOLS
            sys.clinic_name
            DOCTOR_RULES(sys.clinic_name, sys.today[@T])
        }
    }
    Name C := sys.last_compaction_turn[@T]
    If (@$C > 1) {
        U: {
            THIS_IS_A_SUMMARY
            sys.conversation_summary[@$C]
        }
    }
    Mark 2 {
        ForEach(@t: range(@$C + 1, @T - 1)) {
            Frag PastTurn[@t]
        }
    }
    U: {
        Name slots := freeSlots(env.requested_day[@T], sys.doctors)
        ForEach(i: range(1, $slots.len)) {
            If i > 5 {
                break
            }
            Frag SlotDetails[$slots[i]]
        }
        env.patient_message[@T]
    }
    PromptEndsHere when (@T.I == 0)
    ForEach(i: range(1, I)) {
        A: sys.tool_used[@T.i].name_and_args
        T: sys.tool_used[@T.i].tool_response
    }
}

Triage[@T, patient]: {
    S: TRIAGE_INSTRUCTIONS
    Switch env.channel[@T] {
        Case "phone" {
            U: transcribe(env.audio[@T, patient])
        }
        Case sms: {
            U: env.sms_text[@T, patient]
        }
        Default {
            U: env.web_form[@T, patient]
        }
    }
    If sys.urgency[@T] == high & sys.doctor_on_call[@T] != none {
        S: URGENT_CASE
    }
    ElseIf sys.urgency[@T] == medium | sys.repeat_visit[@T, patient] {
        S: SAME_WEEK_CASE
    }
    Else {
        S: ROUTINE_CASE
    }
    U: {
        Name recent := [sys.visit_note[@t, patient] for t in range(@T - 1, @T - 30, -1)]
        summarize($recent)
        ForEach(t: range(1, @T - 1, 2)) {
            If @t % 25 == 0 {
                continue
            }
            env.vital_signs[@t, patient]
        }
    }
}

Reminder[@T]: {
    N: {
        REMINDER_TEMPLATE
        sys.appointment[@T].time
        sys.appointment[@1].first_visit_note
        env.patient_name
    }
}
"""


def test_a_tour_of_every_construct_checks_round_trips_and_renders():
    file_ast = parsed(TOUR, "clinic.acdl")
    text = format_acdl(file_ast)
    again = parsed(text, "clinic.acdl")
    assert again.to_dict(spans=False) == file_ast.to_dict(spans=False)
    assert format_acdl(again) == text
    for construct in ("StrFrag SlotDetails[slot]", "RolesFrag PastTurn[@t]", "Name C := ", "@$C", "break", "continue",
                      "PromptEndsHere when", "Mark 2", "Frag PastTurn[@t]", "N: {", "Switch env.channel[@T]",
                      "Name recent := [", "Triage[@T, patient]", "range(1, @T - 1, 2)"):
        assert construct.replace(" - ", "-") in text.replace(" - ", "-"), construct
    page = render_html(file_ast)
    ET.fromstring(render_svg(file_ast))
    for shown in ("SlotDetails", "PastTurn", "@$C", "PromptEndsHere", "REMINDER_TEMPLATE", "THIS_IS_A_SUMMARY"):
        assert shown in page


def test_the_tour_verifies_calls_shaped_as_it_says():
    file_ast = parsed(TOUR, "clinic.acdl")
    system = ("S", "BOOKING_INSTRUCTIONS", "AVAILABLE_TOOLS", "sys.clinic_name", "DOCTOR_RULES")
    first = {"type": "llm_call", "seq": 1, "data": {"plan": "Booking", "structure": [
        {"role": r, "elements": list(e)} for r, *e in [system, ("U", "env.patient_message")]]}}
    later = {"type": "llm_call", "seq": 2, "data": {"plan": "Booking", "structure": [
        {"role": r, "elements": list(e)} for r, *e in [
            system, ("U", "THIS_IS_A_SUMMARY", "sys.conversation_summary"),
            ("U", "env.patient_message"), ("A", "sys.tool.call"), ("T", "sys.tool.tool_response"), ("A", "resp.answer"),
            ("U", "env.slot_time", "env.slot_doctor", "formatPrice()", "env.patient_message"),
            ("A", "sys.tool_used.name_and_args"), ("T", "sys.tool_used.tool_response")]]}}
    results = verify_calls(file_ast, [first, later])
    assert [r.ok for r in results] == [True, True], [r.problem for r in results]
