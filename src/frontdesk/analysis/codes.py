"""The codes the language-independent checks report with: each language's own set (ADL has its own;
ABL and programs built in Python use the FD codes)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AnalysisCodes:
    """The diagnostic code each check reports with; every front end passes its own."""

    unreachable: str = "FD040"
    recursion: str = "FD041"
    unused_subflow: str = "FD042"
    unused_agent: str = "FD043"
    # a value read that nothing sets (an ensemble's or the entry agent's argument, a field of a tool's result)
    never_set: str = "FD052"
    # a flow argument only ever filled from what the user says (a model reads it; with none, words must give it)
    extraction_only: str = "FD053"


# ADL's codes for these checks (also in frontdesk.lang.adl.codes, which reads them from here)
ADL_ANALYSIS_CODES = AnalysisCodes(unreachable="ADL040", recursion="ADL041", unused_subflow="ADL042",
                                   unused_agent="ADL043", never_set="ADL048", extraction_only="ADL049")


def analysis_codes_for(language: str) -> AnalysisCodes:
    """The codes a language reports the shared checks with (ADL has its own; ABL uses the FD codes)."""
    return ADL_ANALYSIS_CODES if language == "adl" else AnalysisCodes()
