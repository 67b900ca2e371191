"""`frontdesk graph PROGRAM [-o FILE.svg|.png] [--agent NAME]`: draw the agents, their edges and each
flow's steps, with the cycles `frontdesk check` reports in red. Imports only typer and the standard
library here; the drawing is loaded when the command runs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer


def graph_command(
    program: Annotated[str, typer.Argument(help="A program file or the folder that holds it.")],
    output: Annotated[Path | None, typer.Option(
        "-o", "--output", help="Write FILE.svg or FILE.png (PNG through headless Chromium); without it, the SVG "
                               "goes to standard output.")] = None,
    agent: Annotated[str | None, typer.Option(
        "--agent", help="Draw only this agent's steps (and the agents).")] = None,
    entry: Annotated[str | None, typer.Option("--entry", help="ABL: the agent a conversation starts with.")] = None,
    scale: Annotated[float, typer.Option("--scale", help="PNG only: pixels per SVG unit (2 for high-DPI).")] = 1.0,
) -> None:
    """Draw the agents with their call/member/handoff/delegate/mention edges, and each flow's step graph;
    cycles between agents (FD041/ADL041, FD044) and loops in flows (FD045) are drawn in red."""
    from frontdesk.loading import load_or_exit

    suffix = output.suffix.lower() if output is not None else ".svg"
    if suffix not in (".svg", ".png"):
        typer.echo(f"error: cannot draw to '{output}': use a .svg or .png file name", err=True)
        raise typer.Exit(2)
    if not 0.25 <= scale <= 8:
        typer.echo(f"error: scale {scale} is out of range: use a value from 0.25 to 8", err=True)
        raise typer.Exit(2)
    prog, _ = load_or_exit(program, quiet_warnings=True, entry=entry)
    if agent is not None and agent not in prog.agents:
        typer.echo(f"error: no agent '{agent}' in {program}; agents: {', '.join(prog.agents)}", err=True)
        raise typer.Exit(2)

    from frontdesk.analysis.graph import draw_program, svg_to_png
    from frontdesk.acdl.render import ExportError

    picture = draw_program(prog, agent)
    if output is None:
        sys.stdout.write(picture.svg)
        return
    try:
        if suffix == ".png":
            svg_to_png(picture.svg, picture.width, picture.height, output, scale)
        else:
            output.parent.mkdir(parents=True, exist_ok=True)
            output.write_text(picture.svg, encoding="utf-8")
    except (ExportError, OSError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1)
    cycles, loops = len(picture.cycles), picture.loops
    typer.echo(f"wrote {output}: {len(prog.agents)} agents, {picture.panels - 1} step graph"
               f"{'s' if picture.panels != 2 else ''}, {cycles} cycle{'s' if cycles != 1 else ''} between agents, "
               f"{loops} loop{'s' if loops != 1 else ''} in flows", err=True)


def register(app: typer.Typer) -> None:
    app.command("graph")(graph_command)
