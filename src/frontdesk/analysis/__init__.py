"""Language-independent checks over a lowered Program (reachability, call cycles, unused agents)."""

from __future__ import annotations

from frontdesk.diagnostics import Diagnostic, DiagnosticBag
from frontdesk.ir.models import Program

from .calls import check_call_cycles, check_unused_agents
from .codes import AnalysisCodes, analysis_codes_for
from .reachability import check_graph_reachability, successors

__all__ = ["AnalysisCodes", "analysis_codes_for", "analyze_program", "check_call_cycles", "check_graph_reachability", "check_unused_agents", "successors", "with_analysis"]


def analyze_program(program: Program, bag: DiagnosticBag, codes: AnalysisCodes = AnalysisCodes(),
                    cycles: bool = True) -> None:
    """Run every check; findings are warnings added to `bag`. `cycles=False` leaves call cycles to
    `frontdesk.analysis.lint`, which reports them with their path."""
    for agent in program.agents.values():
        for graph in (getattr(agent, "graph", None), agent.setup):
            if graph is not None:
                check_graph_reachability(graph, bag, codes.unreachable, codes.unused_subflow)
    if cycles:
        check_call_cycles(program, bag, codes.recursion)
    check_unused_agents(program, bag, codes.unused_agent)


def with_analysis(program: Program, diags: list[Diagnostic]) -> list[Diagnostic]:
    """What `frontdesk check` reports: the load's diagnostics with the deeper analysis's findings
    (`frontdesk.analysis.lint`), whose cycle finding (with the path and what breaks it) replaces the load's
    shorter one of the same code."""
    from .lint import check_extraction_only, lint_program

    codes = analysis_codes_for(program.language)
    found = lint_program(program, cycle_code=codes.recursion)
    notes = DiagnosticBag()
    check_extraction_only(program, notes, codes)  # an info for `check`, not one of lint's findings
    found = found + notes.sorted()
    if program.language != "adl":  # the ADL loader already ran the shared checks; ABL's steps are lint's
        bag = DiagnosticBag()
        check_unused_agents(program, bag, codes.unused_agent)
        found = bag.sorted() + found
    return [d for d in diags if d.code != codes.recursion] + found
