"""ACDL rendering: HTML and SVG for every conformance file, selectable SVG text, SVG snapshots, PNG/PDF export."""

from __future__ import annotations

import os
import re
import struct
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from frontdesk.acdl import parse_acdl
from frontdesk.acdl import render as render_mod
from frontdesk.acdl.render import ExportError, export, measure_file, render_html, render_svg
from frontdesk.acdl.render_cli import acdl_app

# the shared folder beside the repository (../shared), or where the workplace keeps it
SHARED = next((p for p in (Path(__file__).resolve().parents[2] / "shared", Path("/work/shared")) if p.is_dir()),
              Path("/work/shared"))

CONFORMANCE = SHARED / "conformance/acdl"
CONFORMANCE_FILES = sorted(CONFORMANCE.rglob("*.acdl")) if CONFORMANCE.is_dir() else []
needs_corpus = pytest.mark.skipif(not CONFORMANCE_FILES, reason="ACDL conformance folder is absent")

SNAPSHOTS = Path(__file__).parent / "snapshots" / "acdl"
SNAPSHOT_SOURCES = {
    "React": "React_variants/React.acdl",
    "basic-rag": "other/basic-rag.acdl",
    "mint-original": "MintAgent_variants/mint-original.acdl",
}
UPDATE_ENV = "FRONTDESK_UPDATE_SNAPSHOTS"
SVG_NS = "{http://www.w3.org/2000/svg}"

EVERYTHING = """
// a file-level comment
StrFrag DocumentContext[doc]: {
    env.doc_title[doc]
    summarize(env.doc_metadata[doc])
}

RolesFrag ToolResult[@t, tool]: {
    A: sys.tool_call[@t, tool]
    T: sys.tool_response[@t, tool]
}

Everything[@T]: {
    S: {
        // standalone inside a role
        INSTRUCTIONS  // beside the template
        QUERY(sys.agent_name)
    }
    U: {
        Name docs := k_relevant_docs(env.user_input[@T])
        ForEach(i: range(1, $docs.len)) {
            $docs[i].source
        }
        ForEach(doc: env.documents) {
            Frag DocumentContext[doc]
        }
        "a literal"
    }
    Mark 1 {
        ForEach(@t: range(1, @T)) {
            Frag ToolResult[@t, sys.selected_tool[@t]]
        }
    }
    If sys.tool[@T] == get_clarification {
        U: env.user_input[@T]
    }
    ElseIf sys.tool[@T] == search {
        A: env.search_results[@T]
    }
    Else {
        A: resp.answer[@T]
    }
    Switch sys.action_type[@T] {
        Case "search" {
            U: env.search_results[@T]
        }
        Default {
            U: env.fallback[@T]
        }
    }
    PromptEndsHere when (@T == 1)
    T: sys.tool[@T].tool_response
}
"""


def _parse(text: str, name: str = "test.acdl"):
    file_ast, diags = parse_acdl(text, name)
    assert file_ast is not None, [d.format() for d in diags]
    return file_ast


def _parse_path(path: Path):
    return _parse(path.read_text(encoding="utf-8"), str(path))


def _svg_texts(svg: str) -> list[str]:
    root = ET.fromstring(svg)
    return ["".join(t.itertext()) for t in root.iter(f"{SVG_NS}text")]


# ---------------------------------------------------------------------------------------------


@needs_corpus
@pytest.mark.parametrize("path", CONFORMANCE_FILES, ids=lambda p: str(p.relative_to(CONFORMANCE)))
def test_conformance_file_renders_to_html_and_valid_svg(path: Path) -> None:
    file_ast = _parse_path(path)
    page = render_html(file_ast, title=path.name)
    assert page.startswith("<!DOCTYPE html>")
    assert "<style>" in page and "http://" not in page and "https://" not in page, "no external resources"
    for spec in file_ast.specs:
        assert f">{spec.name}<" in page
    svg = render_svg(file_ast)
    root = ET.fromstring(svg)  # well-formed XML
    assert root.tag == f"{SVG_NS}svg"
    assert float(root.get("width")) > 100 and float(root.get("height")) > 50
    assert not list(root.iter(f"{SVG_NS}foreignObject"))
    texts = _svg_texts(svg)
    for spec in file_ast.specs:
        assert any(spec.name in t for t in texts)


def test_svg_text_is_selectable_text_elements() -> None:
    file_ast = _parse(EVERYTHING)
    texts = _svg_texts(render_svg(file_ast))
    for expected in ("INSTRUCTIONS", "QUERY(sys.agent_name)", "env.user_input[@T]", "$docs[i].source",
                     "Frag DocumentContext[doc]", "k_relevant_docs(env.user_input[@T])", '"a literal"',
                     "// beside the template", "// standalone inside a role"):
        assert expected in texts, f"{expected!r} is not one <text> element"
    joined = "\n".join(texts)
    for expected in ("ForEach(@t: range(1, @T))", "If sys.tool[@T] == get_clarification", "ElseIf", "Else",
                     "Switch sys.action_type[@T]", 'Case "search"', "Default",
                     "PromptEndsHere when (@T == 1)", "StrFrag", "RolesFrag", "DocumentContext[doc]:"):
        assert expected in joined
    # Mark numbers and role tags are text too.
    assert "1" in texts and {"S", "U", "A", "T"} <= set(texts)


def test_html_distinguishes_the_kinds_of_element() -> None:
    page = render_html(_parse(EVERYTHING))
    assert '<span class="chip tmpl"><span class="tm">INSTRUCTIONS</span></span>' in page
    assert '<span class="chip func"><span class="fn">k_relevant_docs</span>' in page
    assert '<span class="chip var"><span class="ns ns-env">env</span>' in page
    assert '<span class="ns ns-sys">sys</span>' in page
    assert '<span class="chip ref">' in page and '<span class="chip frag">' in page
    assert '<span class="chip lit">' in page
    for role in "SUAT":
        assert f'class="role role-{role}"' in page
    assert page.count('<div class="block">') >= 6  # 2 ForEach in U, 1 in Mark, If/ElseIf/Else, Switch + cases
    assert '<div class="bracket"></div><div class="num">1</div>' in page
    assert '<div class="ends">' in page
    assert '<span class="comment">// beside the template</span>' in page
    assert '<div class="cline">// standalone inside a role</div>' in page
    assert '<span class="fraglabel">StrFrag</span>' in page and '<span class="fraglabel">RolesFrag</span>' in page


def test_html_escapes_authored_text() -> None:
    page = render_html(_parse('X[@T]: {\n  S: INSTRUCTIONS // <script>alert(1)</script> & more\n}\n'), title="<b>")
    assert "<script>alert" not in page and "&lt;script&gt;" in page and "&amp; more" in page
    assert "<title>&lt;b&gt;</title>" in page


def test_layout_is_measured_from_the_text() -> None:
    short = _parse("A[@T]: {\n  S: X\n}\n")
    longer = _parse("A[@T]: {\n  S: X\n  U: " + "VERY_" * 15 + "LONG\n}\n")  # 79 characters: not wrapped
    w1, h1 = measure_file(short)
    w2, h2 = measure_file(longer)
    assert w2 > w1 + 250 and h2 > h1
    root = ET.fromstring(render_svg(longer))
    assert abs(float(root.get("width")) - w2) < 1.0 and abs(float(root.get("height")) - h2) < 1.0


# ---------------------------------------------------------------------------------------------


@needs_corpus
@pytest.mark.parametrize("name", sorted(SNAPSHOT_SOURCES))
def test_svg_snapshot(name: str) -> None:
    """The SVG of three conformance files is exactly the stored one.

    After an intended change to the renderer, regenerate with
    `FRONTDESK_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_acdl_render.py -q -k snapshot`
    and look at the new files before committing them."""
    source = CONFORMANCE / SNAPSHOT_SOURCES[name]
    if not source.exists():
        pytest.skip(f"{source} is absent")
    svg = render_svg(_parse_path(source))
    snapshot = SNAPSHOTS / f"{name}.svg"
    if os.environ.get(UPDATE_ENV):
        snapshot.parent.mkdir(parents=True, exist_ok=True)
        snapshot.write_text(svg, encoding="utf-8")
    assert snapshot.exists(), f"missing snapshot {snapshot}; create it with {UPDATE_ENV}=1"
    expected = snapshot.read_text(encoding="utf-8")
    assert svg == expected, (
        f"SVG for {source.name} differs from {snapshot}. If the change is intended, regenerate with "
        f"{UPDATE_ENV}=1 python -m pytest tests/test_acdl_render.py -q -k snapshot"
    )


# ---------------------------------------------------------------------------------------------


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _pdf_pages_and_box(path: Path) -> tuple[int, list[float]]:
    data = path.read_bytes()
    assert data.startswith(b"%PDF-"), "not a PDF file"
    pages = len(re.findall(rb"/Type\s*/Page(?![s\w])", data))
    box = re.search(rb"/MediaBox\s*\[\s*([\d.\s]+)\]", data)
    return pages, [float(x) for x in box.group(1).split()] if box else []


has_chromium = pytest.mark.skipif(render_mod.chromium_path() is None, reason="headless Chromium is not installed")
has_cairosvg = pytest.mark.skipif(render_mod._cairosvg() is None, reason="cairosvg is not installed")

REACT = """React[@T.I]: {
    S: {
        TASK_DESC  // you are an assistant who's job is...
        AVAILABLE_TOOLS
    }
    Mark 1 {
        ForEach(@t: range(1, @T-1)) {
            U: env.user_question[@t]
            A: resp.response[@t]
        }
    }
    U: env.user_question[@T]
    S: INSTRUCTION   // choose an action, use ReACT
}
"""


@pytest.mark.parametrize("converter", [
    pytest.param("chromium", marks=has_chromium),
    pytest.param("cairosvg", marks=has_cairosvg),
])
def test_png_export_has_the_size_of_the_layout(converter: str, tmp_path: Path) -> None:
    file_ast = _parse(REACT)
    out = export(file_ast, tmp_path / "react.png", converter=converter)
    width, height = _png_size(out)
    layout_w, layout_h = measure_file(file_ast)
    assert layout_w <= width <= layout_w + 40 and layout_h <= height <= layout_h + 40
    assert out.stat().st_size > 5000  # a real picture, not an empty canvas


@pytest.mark.parametrize("converter", [
    pytest.param("chromium", marks=has_chromium),
    pytest.param("cairosvg", marks=has_cairosvg),
])
def test_pdf_export_is_one_page_of_the_layout_size(converter: str, tmp_path: Path) -> None:
    file_ast = _parse(REACT)
    out = export(file_ast, tmp_path / "react.pdf", converter=converter)
    pages, box = _pdf_pages_and_box(out)
    assert pages == 1
    layout_w, layout_h = measure_file(file_ast)
    points_w, points_h = box[2] - box[0], box[3] - box[1]
    # PDF units are points (3/4 of a CSS pixel).
    assert layout_w * 0.75 - 2 <= points_w <= (layout_w + 40) * 0.75
    assert layout_h * 0.75 - 2 <= points_h <= (layout_h + 40) * 0.75


def test_export_html_and_svg_need_no_converter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(render_mod, "chromium_path", lambda: None)
    monkeypatch.setattr(render_mod, "_cairosvg", lambda: None)
    file_ast = _parse(REACT)
    assert export(file_ast, tmp_path / "a.html").read_text().startswith("<!DOCTYPE html>")
    ET.fromstring(export(file_ast, tmp_path / "sub" / "a.svg").read_text())


def test_missing_converter_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(render_mod, "chromium_path", lambda: None)
    monkeypatch.setattr(render_mod, "_cairosvg", lambda: None)
    with pytest.raises(ExportError, match="apt-get install -y chromium"):
        export(_parse(REACT), tmp_path / "a.png")
    with pytest.raises(ExportError, match=r"\.html, \.svg, \.png or \.pdf"):
        export(_parse(REACT), tmp_path / "a.gif")


# ---------------------------------------------------------------------------------------------

runner = CliRunner()


def test_render_command_writes_the_file(tmp_path: Path) -> None:
    src = tmp_path / "react.acdl"
    src.write_text(REACT)
    result = runner.invoke(acdl_app, ["render", str(src), "-o", str(tmp_path / "react.svg")])
    assert result.exit_code == 0, result.output
    assert "INSTRUCTION" in _svg_texts((tmp_path / "react.svg").read_text())


def test_render_command_reports_parse_errors_with_status_2(tmp_path: Path) -> None:
    src = tmp_path / "broken.acdl"
    src.write_text("Broken[@T]: {\n  S: {\n    INSTRUCTIONS\n")
    result = runner.invoke(acdl_app, ["render", str(src), "-o", str(tmp_path / "x.svg")])
    assert result.exit_code == 2
    assert "broken.acdl:" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "x.svg").exists()


def test_render_command_without_converter_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(render_mod, "chromium_path", lambda: None)
    monkeypatch.setattr(render_mod, "_cairosvg", lambda: None)
    src = tmp_path / "react.acdl"
    src.write_text(REACT)
    result = runner.invoke(acdl_app, ["render", str(src), "-o", str(tmp_path / "x.pdf")])
    assert result.exit_code == 1
    assert "chromium" in result.output and "Traceback" not in result.output


def test_fragment_given_as_an_argument_renders_with_its_arguments():
    import re

    from frontdesk.acdl import parse_acdl
    from frontdesk.acdl.render import render_svg

    text = "StrFrag D[x]: {\n    env.doc[x]\n}\nP[@T]: {\n    U: summarize(Frag D[1])\n}\n"
    file_ast, diags = parse_acdl(text, "frag.acdl")
    assert file_ast is not None and not diags
    assert "summarize(Frag D[1])" in re.sub(r"<[^>]+>", "", render_svg(file_ast))
