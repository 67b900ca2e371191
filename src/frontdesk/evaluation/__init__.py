"""`frontdesk eval`: scenarios with a simulated user, rule and LLM-judge evaluators, and reports that
compare two versions of a program (see docs/evaluation.md)."""

from frontdesk.evaluation.scenarios import (
    Evaluator,
    Scenario,
    ScenarioFile,
    Script,
    load_scenarios,
)

__all__ = ["Evaluator", "Scenario", "ScenarioFile", "Script", "load_scenarios"]
