"""`frontdesk graph`: the agents and their edges, each flow's steps, cycles in red (frontdesk.analysis.graph)."""

from __future__ import annotations

import textwrap
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from frontdesk.analysis.agentgraph import agent_graph
from frontdesk.analysis.graph import draw_program, layered_layout
from frontdesk.analysis.lint import agent_cycles, flow_loops, lint_program
from frontdesk.cli import app
from frontdesk.lang import load_program
from frontdesk.acdl import render as render_mod

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SVG = "{http://www.w3.org/2000/svg}"
RED = "#d62728"

has_chromium = pytest.mark.skipif(render_mod.chromium_path() is None, reason="headless Chromium is not installed")

CYCLE = """\
main:
  type: flow agent
  steps:
    - call: transfer_money

transfer_money:
  type: llm agent
  description: Send money to a saved payee.
  args:
    - payee_name
  prompt: |
    Ask who the money is for and fill payee_name.
    If the payee is not saved yet, enter the add_payee agent so the customer can add them.

add_payee:
  type: llm agent
  description: Save a new payee.
  args:
    - payee_name
  prompt: |
    Ask for the payee's name and account number, and save the payee.
    Ask the user if they need to make a transfer; if so, enter the transfer_money agent.
"""

LOOP = """\
main:
  type: flow agent
  args:
    - count
  steps:
    - bot: "Price < 5 & > 2, \\"quoted\\" 'too'"
    - label: poll
    - bot: "Still checking..."
    - if: count == 1
      then:
        - bot: "Done."
        - return: success, finished.
    - next: poll
"""


def _load(path: Path):
    program, diags = load_program(str(path))
    assert program is not None, [d.message for d in diags]
    assert not [d for d in diags if d.is_error], [d.message for d in diags]
    return program


def _write(tmp_path: Path, text: str, name: str = "prog") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "agents.yml").write_text(textwrap.dedent(text), encoding="utf-8")
    return folder


def _panels(svg: str) -> list[ET.Element]:
    root = ET.fromstring(svg)  # valid XML, or this raises
    assert root.tag == f"{SVG}svg"
    return [g for g in root.iter(f"{SVG}g") if g.get("class") == "panel"]


def _edges(panel: ET.Element) -> list[ET.Element]:
    return [p for p in panel.iter(f"{SVG}path") if "edge" in (p.get("class") or "").split()]


def _nodes(panel: ET.Element) -> list[ET.Element]:
    return [g for g in panel.iter(f"{SVG}g") if g.get("class") == "node"]


def _kinds(panel: ET.Element) -> Counter:
    return Counter((p.get("class") or "").split()[1] for p in _edges(panel))


@pytest.mark.parametrize("example", ["bookstore", "support_hub", "hotel_booking", "retail_banking"])
def test_agent_panel_has_one_node_per_agent_and_every_edge_by_kind(example: str) -> None:
    program = _load(EXAMPLES / example)
    picture = draw_program(program)
    panels = _panels(picture.svg)
    agents = panels[0]
    assert sorted(n.get("data-id") for n in _nodes(agents)) == sorted(program.agents)
    assert _kinds(agents) == Counter(e.kind for e in agent_graph(program))
    assert not [p for p in _edges(agents) if p.get("stroke") == RED]  # the examples have no cycle
    step_graphs = sum(1 for a in program.agents.values() for g in (getattr(a, "graph", None), a.setup) if g and g.nodes)
    assert len(panels) == 1 + step_graphs == picture.panels


def test_bookstore_and_support_hub_edge_counts() -> None:
    bookstore = _panels(draw_program(_load(EXAMPLES / "bookstore")).svg)[0]
    assert _kinds(bookstore) == Counter({"call": 3, "member": 3})
    hub = _panels(draw_program(_load(EXAMPLES / "support_hub")).svg)[0]  # ABL: a supervisor and its members
    assert _kinds(hub) == Counter({"member": 4})
    hotel = _panels(draw_program(_load(EXAMPLES / "hotel_booking")).svg)[0]  # ABL HANDOFF with RETURN
    handoffs = [p for p in _edges(hotel) if "handoff" in p.get("class", "")]
    assert len(handoffs) == 1 and handoffs[0].get("stroke-dasharray")


def test_cycle_edges_are_red_and_the_path_is_written(tmp_path: Path) -> None:
    program = _load(_write(tmp_path, CYCLE))
    cycles = agent_cycles(program)
    assert [[(e.source, e.target) for e in c] for c in cycles] == [[("transfer_money", "add_payee"),
                                                                      ("add_payee", "transfer_money")]]
    svg = draw_program(program).svg
    agents = _panels(svg)[0]
    red = [p for p in _edges(agents) if p.get("stroke") == RED]
    assert len(red) == 2 and all("cycle" in p.get("class", "") and "mention" in p.get("class", "") for p in red)
    assert all(float(p.get("stroke-width")) > 2 for p in red)
    black = [p for p in _edges(agents) if p.get("stroke") != RED]
    assert len(black) == 1 and "call" in black[0].get("class")  # main calls transfer_money, not in the cycle
    texts = ["".join(t.itertext()) for t in agents.iter(f"{SVG}text")]
    assert any("transfer_money -> add_payee -> transfer_money" in t and "ADL041" in t for t in texts)


def test_agent_cycles_match_the_check_findings(tmp_path: Path) -> None:
    program = _load(_write(tmp_path, CYCLE))
    found = [d for d in lint_program(program, cycle_code="ADL041") if d.code in ("ADL041", "FD044")]
    assert len(found) == len(agent_cycles(program)) == 1
    assert "transfer_money -> add_payee -> transfer_money" in found[0].message


def test_flow_loop_is_red_and_text_is_escaped(tmp_path: Path) -> None:
    program = _load(_write(tmp_path, LOOP))
    graph = program.agents["main"].graph
    loops = flow_loops(program, "main", graph)
    assert len(loops) == 1 and loops[0][0] == loops[0][-1]
    assert [d.code for d in lint_program(program)].count("FD045") == 1
    svg = draw_program(program).svg
    assert "Price &lt; 5 &amp; &gt; 2" in svg and "<5" not in svg
    panels = _panels(svg)
    flow = panels[1]
    red = [p for p in _edges(flow) if p.get("stroke") == RED]
    assert len(red) >= 2  # round the loop: the jump back and at least one step on
    red_nodes = [n for n in _nodes(flow) if any(s.get("stroke") == RED for s in n)]
    assert {n.get("data-id") for n in red_nodes} == set(loops[0])
    texts = ["".join(t.itertext()) for t in flow.iter(f"{SVG}text")]
    assert any('bot: "Price < 5 & > 2' in t for t in texts)  # unescaped again by the XML parser
    assert any(t.startswith("loop (FD045)") for t in texts)
    assert any(t == "count == 1" for t in texts) and "else" in texts  # branch edges labelled


def test_agent_option_draws_one_flow(tmp_path: Path) -> None:
    program = _load(EXAMPLES / "bookstore")
    panels = _panels(draw_program(program, agent="order").svg)
    assert len(panels) == 2
    titles = ["".join(t.itertext()) for t in panels[1].iter(f"{SVG}text")]
    assert "flow of agent order" in titles


def test_layout_keeps_boxes_apart_and_routes_long_edges_around_them() -> None:
    nodes = {k: (80.0, 30.0) for k in "abcde"}
    edges = [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d"), ("d", "a"), ("a", "e"), ("e", "e")]
    layout = layered_layout(nodes, edges, {3: (40.0, 12.0)})
    boxes = list(layout.boxes.values())
    for i, one in enumerate(boxes):
        for other in boxes[i + 1:]:
            apart_x = abs(one.x - other.x) >= (one.width + other.width) / 2
            apart_y = abs(one.y - other.y) >= (one.height + other.height) / 2
            assert apart_x or apart_y, (one.key, other.key)
    assert layout.self_loops == [6]
    assert layout.routes[4].reversed and not layout.routes[0].reversed
    assert layout.routes[3].label_at is not None
    # the long edge a -> d passes b and c beside them, not through them
    for x, y in layout.routes[3].points[2:-2]:
        for key in "bc":
            box = layout.boxes[key]
            assert not (abs(x - box.x) < box.width / 2 and abs(y - box.y) < box.height / 2)


def test_cli_writes_svg_and_exits_0(tmp_path: Path) -> None:
    out = tmp_path / "g" / "bookstore.svg"
    result = CliRunner().invoke(app, ["graph", str(EXAMPLES / "bookstore"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert len(_panels(out.read_text(encoding="utf-8"))) == 4
    result = CliRunner().invoke(app, ["graph", str(EXAMPLES / "support_hub"), "--agent", "Card_Services"])
    assert result.exit_code == 0 and result.stdout.startswith("<svg")
    assert len(_panels(result.stdout)) == 2


def test_cli_errors(tmp_path: Path) -> None:
    broken = _write(tmp_path, "main:\n  type: bogus agent\n", "broken")
    result = CliRunner().invoke(app, ["graph", str(broken), "-o", str(tmp_path / "x.svg")])
    assert result.exit_code == 1 and not (tmp_path / "x.svg").exists()
    assert "ADL008" in result.output
    result = CliRunner().invoke(app, ["graph", str(EXAMPLES / "bookstore"), "-o", str(tmp_path / "x.gif")])
    assert result.exit_code == 2
    result = CliRunner().invoke(app, ["graph", str(EXAMPLES / "bookstore"), "--agent", "nobody"])
    assert result.exit_code == 2


def test_png_without_a_converter_names_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(render_mod, "chromium_path", lambda: None)
    monkeypatch.setattr(render_mod, "_cairosvg", lambda: None)
    result = CliRunner().invoke(app, ["graph", str(EXAMPLES / "bookstore"), "-o", str(tmp_path / "b.png")])
    assert result.exit_code == 1 and "chromium" in result.output.lower()


@has_chromium
def test_png_through_chromium(tmp_path: Path) -> None:
    out = tmp_path / "cycle.png"
    program = _write(tmp_path, CYCLE)
    result = CliRunner().invoke(app, ["graph", str(program), "-o", str(out)])
    assert result.exit_code == 0, result.output
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    picture = draw_program(_load(program))
    assert (width, height) == (int(picture.width + 0.999), int(picture.height + 0.999))
