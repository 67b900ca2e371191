"""ACDL structural diff: kinds and paths of changes, the text and JSON listings, side-by-side HTML, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from frontdesk.acdl import parse_acdl
from frontdesk.acdl.diff import diff_acdl, render_diff_html
from frontdesk.acdl.render_cli import acdl_app

# the shared folder beside the repository (../shared), or where the workplace keeps it
SHARED = next((p for p in (Path(__file__).resolve().parents[2] / "shared", Path("/work/shared")) if p.is_dir()),
              Path("/work/shared"))

BASE = """Agent[@T]: {
    S: {
        INSTRUCTIONS
        AVAILABLE_TOOLS
    }
    U: env.user_input[@1]
    ForEach(@t: range(1, @T)) {
        A: {
            resp.reasoning[@t]
            sys.tool_call[@t]
        }
        T: sys.tool_call[@t].response
    }
    S: CONTINUE_OR_ANSWER
}
"""


def _parse(text: str):
    file_ast, diags = parse_acdl(text, "t.acdl")
    assert file_ast is not None, [d.format() for d in diags]
    return file_ast


def _diff(old: str, new: str):
    return diff_acdl(_parse(old), _parse(new), "old.acdl", "new.acdl")


def _only(diff, kind: str):
    found = diff.of_kind(kind)
    assert len(found) == 1, diff.to_text()
    return found[0]


def test_identical_files_give_an_empty_diff() -> None:
    diff = _diff(BASE, BASE)
    assert diff.is_empty and diff.changes == []
    assert "no structural differences" in diff.to_text()
    assert diff.to_json()["equal"] is True


def test_comments_and_layout_are_not_structural() -> None:
    reformatted = BASE.replace("    U: env.user_input[@1]", "  // the question\n  U: { env.user_input[@1] }  // inline")
    assert _diff(BASE, reformatted).is_empty


def test_an_added_role_message_is_reported_with_its_path() -> None:
    new = BASE.replace("        T: sys.tool_call[@t].response\n", "        T: sys.tool_call[@t].response\n        U: env.feedback[@t]\n")
    diff = _diff(BASE, new)
    change = _only(diff, "added")
    assert change.path == "Agent/ForEach(@t)/U[3]"
    assert change.after == "U: env.feedback[@t]"
    assert len(diff.changes) == 1


def test_a_removed_element_is_reported_with_its_path() -> None:
    new = BASE.replace("            resp.reasoning[@t]\n", "")
    diff = _diff(BASE, new)
    change = _only(diff, "removed")
    assert change.path == "Agent/ForEach(@t)/A[1]/resp.reasoning[1]"
    assert change.before == "resp.reasoning[@t]"
    assert len(diff.changes) == 1


def test_a_moved_block_is_reported_from_and_to() -> None:
    old = BASE
    new = BASE.replace(
        "        A: {\n            resp.reasoning[@t]\n            sys.tool_call[@t]\n        }\n        T: sys.tool_call[@t].response\n",
        "        T: sys.tool_call[@t].response\n        A: {\n            resp.reasoning[@t]\n            sys.tool_call[@t]\n        }\n",
    )
    diff = _diff(old, new)
    change = _only(diff, "moved")
    assert change.old_path == "Agent/ForEach(@t)/A[1]"
    assert change.path == "Agent/ForEach(@t)/A[2]"
    assert change.after.startswith("A: {")
    assert len(diff.changes) == 1


def test_a_message_moved_to_the_top_is_a_move() -> None:
    new = BASE.replace("    S: CONTINUE_OR_ANSWER\n", "").replace("Agent[@T]: {\n", "Agent[@T]: {\n    S: CONTINUE_OR_ANSWER\n")
    change = _only(_diff(BASE, new), "moved")
    assert (change.old_path, change.path) == ("Agent/S[4]", "Agent/S[1]")


def test_an_element_moved_between_messages_is_a_move() -> None:
    new = BASE.replace("            sys.tool_call[@t]\n        }\n", "        }\n").replace(
        "    U: env.user_input[@1]\n", "    U: {\n        env.user_input[@1]\n        sys.tool_call[@t]\n    }\n")
    diff = _diff(BASE, new)
    change = _only(diff, "moved")
    assert change.old_path == "Agent/ForEach(@t)/A[1]/sys.tool_call[2]"
    assert change.path == "Agent/U[2]/sys.tool_call[2]"
    assert len(diff.changes) == 1


def test_a_changed_template_is_reported_as_changed() -> None:
    diff = _diff(BASE, BASE.replace("        INSTRUCTIONS\n", "        INSTRUCTIONS_V2\n"))
    change = _only(diff, "changed")
    assert change.old_path == "Agent/S[1]/INSTRUCTIONS[1]"
    assert change.path == "Agent/S[1]/INSTRUCTIONS_V2[1]"
    assert (change.before, change.after) == ("INSTRUCTIONS", "INSTRUCTIONS_V2")
    assert len(diff.changes) == 1


def test_a_changed_loop_header_is_changed_and_its_body_compared() -> None:
    new = BASE.replace("range(1, @T)", "range(1, @T-1)").replace("resp.reasoning[@t]", "resp.thoughts[@t]")
    diff = _diff(BASE, new)
    changed = diff.of_kind("changed")
    assert [c.path for c in changed] == ["Agent/ForEach(@t)", "Agent/ForEach(@t)/A[1]/resp.thoughts[1]"]
    assert changed[0].before == "ForEach(@t: range(1, @T))" and changed[0].after == "ForEach(@t: range(1, @T-1))"


def test_a_mark_taken_away_is_a_change_of_that_element() -> None:
    marked = BASE.replace("            resp.reasoning[@t]\n", "            Mark 1 {\n                resp.reasoning[@t]\n            }\n")
    diff = _diff(marked, BASE)
    change = _only(diff, "changed")
    assert change.old_path == "Agent/ForEach(@t)/A[1]/Mark(1)"
    assert change.before == "Mark 1 { resp.reasoning }" and change.after == "resp.reasoning"
    assert len(diff.changes) == 1


def test_renamed_single_spec_is_compared_not_replaced() -> None:
    diff = _diff(BASE, BASE.replace("Agent[@T]", "Agent2[@T.I]"))
    change = _only(diff, "changed")
    assert (change.old_path, change.path) == ("Agent", "Agent2")
    assert (change.before, change.after) == ("Agent[@T]", "Agent2[@T.I]")


def test_added_and_removed_specs_and_fragments() -> None:
    extra = BASE + "\nStrFrag Ctx[doc]: {\n    env.doc[doc]\n}\nOther[@T]: {\n    S: X\n}\n"
    diff = _diff(BASE, extra)
    assert {c.path for c in diff.of_kind("added")} == {"Ctx", "Other"}
    back = _diff(extra, BASE)
    assert {c.path for c in back.of_kind("removed")} == {"Ctx", "Other"}


def test_text_listing_uses_unified_markers() -> None:
    new = BASE.replace("        INSTRUCTIONS\n", "        INSTRUCTIONS_V2\n").replace("    S: CONTINUE_OR_ANSWER\n", "")
    text = _diff(BASE, new).to_text()
    lines = text.splitlines()
    assert lines[0] == "--- old.acdl" and lines[1] == "+++ new.acdl"
    assert "~ changed  Agent/S[1]/INSTRUCTIONS[1] -> Agent/S[1]/INSTRUCTIONS_V2[1]: INSTRUCTIONS  =>  INSTRUCTIONS_V2" in lines
    assert "- removed  Agent/S[4]: S: CONTINUE_OR_ANSWER" in lines


def test_json_shape() -> None:
    new = BASE.replace("    S: CONTINUE_OR_ANSWER\n", "    S: CONTINUE_OR_ANSWER\n    U: env.more[@T]\n")
    data = json.loads(json.dumps(_diff(BASE, new).to_json()))
    assert set(data) == {"a", "b", "equal", "summary", "changes"}
    assert data["equal"] is False
    assert data["summary"] == {"removed": 0, "added": 1, "moved": 0, "changed": 0}
    assert data["changes"] == [
        {"kind": "added", "path": "Agent/U[5]", "old_path": None, "before": None, "after": "U: env.more[@T]"}
    ]


def test_side_by_side_html_highlights_each_kind() -> None:
    old = _parse(BASE)
    new_text = (
        BASE.replace("        INSTRUCTIONS\n", "        INSTRUCTIONS_V2\n")
        .replace("            resp.reasoning[@t]\n", "")
        .replace("    S: CONTINUE_OR_ANSWER\n", "")
        .replace("Agent[@T]: {\n", "Agent[@T]: {\n    S: CONTINUE_OR_ANSWER\n")
        .replace("        T: sys.tool_call[@t].response\n", "        T: sys.tool_call[@t].response\n        U: env.feedback[@t]\n")
    )
    new = _parse(new_text)
    diff = diff_acdl(old, new, "old.acdl", "new.acdl")
    assert diff.summary() == {"removed": 1, "added": 1, "moved": 1, "changed": 1}, diff.to_text()
    page = render_diff_html(old, new, diff)
    left, right = page.split('<div class="side"><h2>B:', 1)
    assert "hl-removed" in left and "hl-moved" in left and "hl-changed" in left and "hl-added" not in left.split("</div></div>", 1)[-1]
    assert 'class="role role-U hl-added"' in right
    assert 'class="role role-S hl-moved"' in right and 'class="role role-S hl-moved"' in left
    assert 'class="line hl-removed"' in left
    assert 'class="line hl-changed"' in right
    assert "~ changed" in page and "&gt; moved" in page


# ---------------------------------------------------------------------------------------------

runner = CliRunner()


def _files(tmp_path: Path, old: str, new: str) -> tuple[Path, Path]:
    a, b = tmp_path / "a.acdl", tmp_path / "b.acdl"
    a.write_text(old)
    b.write_text(new)
    return a, b


def test_diff_command_exit_status_0_when_equal(tmp_path: Path) -> None:
    a, b = _files(tmp_path, BASE, BASE)
    result = runner.invoke(acdl_app, ["diff", str(a), str(b)])
    assert result.exit_code == 0, result.output
    assert "no structural differences" in result.output


def test_diff_command_exit_status_1_when_different_and_writes_html(tmp_path: Path) -> None:
    a, b = _files(tmp_path, BASE, BASE.replace("AVAILABLE_TOOLS", "TOOLS_LIST"))
    out = tmp_path / "side.html"
    result = runner.invoke(acdl_app, ["diff", str(a), str(b), "--format", "json", "-o", str(out)])
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert data["changes"][0]["kind"] == "changed"
    assert "hl-changed" in out.read_text()


def test_diff_command_exit_status_2_on_parse_error(tmp_path: Path) -> None:
    a, b = _files(tmp_path, BASE, "Agent[@T]: {\n    S: {\n")
    result = runner.invoke(acdl_app, ["diff", str(a), str(b)])
    assert result.exit_code == 2
    assert "b.acdl:" in result.output and "Traceback" not in result.output


def test_diff_command_rejects_unknown_format(tmp_path: Path) -> None:
    a, b = _files(tmp_path, BASE, BASE)
    result = runner.invoke(acdl_app, ["diff", str(a), str(b), "--format", "yaml"])
    assert result.exit_code == 2 and "text or json" in result.output


@pytest.mark.skipif(not (SHARED / "conformance/acdl/MintAgent_variants").is_dir(), reason="corpus absent")
def test_mint_variant_diff_names_the_pruned_reasoning() -> None:
    root = SHARED / "conformance/acdl/MintAgent_variants"
    a = _parse((root / "mint-original.acdl").read_text())
    b = _parse((root / "mint-pruned-reasoning.acdl").read_text())
    diff = diff_acdl(a, b)
    removed = [c.before for c in diff.of_kind("removed")]
    assert "Mark 1 { resp.tool_reasoning[@t.i] }" in removed
    assert "resp.tool_reasoning[@T.i]" in removed
