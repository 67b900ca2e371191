"""The evaluation report: verdicts gathered per scenario and evaluator (over repetitions and the two
versions), a terminal table, a JSON document and a self-contained HTML page with the transcripts.

How a cell is decided: an evaluator passes for a version when it passed in every repetition; it fails when
it failed in at least one; otherwise (some repetition could not decide) it is an error. Comparing with a
baseline, a row is *newly failing* when it passed on the baseline and does not on the program, and *newly
passing* the other way round.

Exit status: without a baseline, 1 when any evaluator of the program does not pass; with a baseline, 1
when the program regresses (any row newly failing); otherwise 0.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from frontdesk.evaluation.evaluators import Verdict
from frontdesk.evaluation.runner import RunResult, Target
from frontdesk.evaluation.scenarios import Scenario
from frontdesk.textutil import clip

FORMAT = "frontdesk-eval/1"
NEWLY_FAILING = "newly failing"
NEWLY_PASSING = "newly passing"


@dataclass
class Cell:
    """One evaluator of one scenario on one version, over its repetitions."""

    verdicts: list[Verdict] = field(default_factory=list)

    @property
    def runs(self) -> int:
        return len(self.verdicts)

    @property
    def passed(self) -> int:
        return sum(1 for v in self.verdicts if v.verdict == "pass")

    @property
    def status(self) -> str:
        if not self.verdicts:
            return "missing"
        if any(v.verdict == "fail" for v in self.verdicts):
            return "fail"
        if any(v.verdict == "error" for v in self.verdicts):
            return "error"
        return "pass"

    @property
    def reason(self) -> str:
        """The reason of the first verdict that decided the status."""
        status = self.status
        first = next((v for v in self.verdicts if v.verdict == status), None)
        return first.reason if first is not None else ""

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "passed": self.passed, "runs": self.runs, "reason": self.reason}


@dataclass
class Row:
    scenario: str
    evaluator: str
    kind: str
    program: Cell
    baseline: Cell | None = None

    @property
    def change(self) -> str:
        if self.baseline is None:
            return ""
        before, now = self.baseline.status == "pass", self.program.status == "pass"
        if before and not now:
            return NEWLY_FAILING
        if now and not before:
            return NEWLY_PASSING
        return ""


class Report:
    def __init__(self, scenarios: list[Scenario], results: list[RunResult], targets: list[Target],
                 scenarios_path: str = "", repeat: int = 1, concurrency: int = 1, seconds: float = 0.0) -> None:
        self.scenarios = scenarios
        self.results = results
        self.targets = {t.label: t for t in targets}
        self.scenarios_path = scenarios_path
        self.repeat = repeat
        self.concurrency = concurrency
        self.seconds = seconds
        self.created = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        self.comparing = "baseline" in self.targets
        self.rows: list[Row] = []
        for scenario in scenarios:
            for evaluator in scenario.evaluators:
                cells = {label: Cell([v for r in self.runs(scenario.name, label) for v in r.verdicts
                                      if v.evaluator == evaluator.label]) for label in self.targets}
                self.rows.append(Row(scenario.name, evaluator.label, evaluator.kind, cells["program"],
                                     cells.get("baseline")))

    def runs(self, scenario: str, target: str) -> list[RunResult]:
        return sorted((r for r in self.results if r.scenario == scenario and r.target == target),
                      key=lambda r: r.repeat)

    # ---- numbers ----

    def stats(self, scenario: str, target: str) -> dict[str, float]:
        runs = self.runs(scenario, target)
        n = max(1, len(runs))
        return {
            "turns": sum(r.turns for r in runs) / n,
            "llm_calls": sum(r.usage.get("bot", {}).get("calls", 0) for r in runs) / n,
            "tokens": sum(r.usage.get("bot", {}).get("prompt_tokens", 0)
                          + r.usage.get("bot", {}).get("completion_tokens", 0) for r in runs) / n,
        }

    def summary(self, target: str = "program") -> dict[str, Any]:
        cells = [r.program if target == "program" else r.baseline for r in self.rows]
        cells = [c for c in cells if c is not None]
        usage: dict[str, dict[str, int]] = {}
        for r in self.results:
            if r.target != target:
                continue
            for role, counts in r.usage.items():
                into = usage.setdefault(role, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
                for key in into:
                    into[key] += counts.get(key, 0)
        return {
            "evaluators": len(cells),
            "passed": sum(1 for c in cells if c.status == "pass"),
            "failed": sum(1 for c in cells if c.status == "fail"),
            "errors": sum(1 for c in cells if c.status == "error"),
            "run_errors": sum(1 for r in self.results if r.target == target and r.error),
            "usage": usage,
        }

    @property
    def newly_failing(self) -> list[Row]:
        return [r for r in self.rows if r.change == NEWLY_FAILING]

    @property
    def newly_passing(self) -> list[Row]:
        return [r for r in self.rows if r.change == NEWLY_PASSING]

    @property
    def exit_status(self) -> int:
        if self.comparing:
            return 1 if self.newly_failing else 0
        return 0 if all(r.program.status == "pass" for r in self.rows) else 1

    # ---- JSON ----

    def to_json(self) -> dict[str, Any]:
        def target_json(label: str) -> dict[str, Any] | None:
            t = self.targets.get(label)
            return {"path": t.path, "digest": t.digest} if t is not None else None

        return {
            "format": FORMAT,
            "created": self.created,
            "scenarios_file": self.scenarios_path,
            "program": target_json("program"),
            "baseline": target_json("baseline"),
            "repeat": self.repeat,
            "concurrency": self.concurrency,
            "seconds": round(self.seconds, 3),
            "exit_status": self.exit_status,
            "summary": {label: self.summary(label) for label in self.targets},
            "newly_failing": [{"scenario": r.scenario, "evaluator": r.evaluator} for r in self.newly_failing],
            "newly_passing": [{"scenario": r.scenario, "evaluator": r.evaluator} for r in self.newly_passing],
            "rows": [{"scenario": r.scenario, "evaluator": r.evaluator, "kind": r.kind,
                      "program": r.program.to_json(),
                      "baseline": r.baseline.to_json() if r.baseline is not None else None,
                      "change": r.change} for r in self.rows],
            "scenarios": [{
                "name": s.name, "description": s.description, "persona": s.persona, "goals": s.goals,
                "max_turns": s.max_turns, "evaluators": [e.label for e in s.evaluators],
                "stats": {label: self.stats(s.name, label) for label in self.targets},
                "runs": {label: [r.to_json() for r in self.runs(s.name, label)] for label in self.targets},
            } for s in self.scenarios],
        }

    def write_json(self, path) -> None:
        from pathlib import Path

        Path(path).write_text(json.dumps(self.to_json(), indent=2, ensure_ascii=False, default=str) + "\n",
                              encoding="utf-8")

    # ---- terminal ----

    def cell_text(self, cell: Cell | None) -> tuple[str, str]:
        """The cell as shown, and its style."""
        if cell is None or cell.status == "missing":
            return "-", "dim"
        mark, style = {"pass": ("✓", "green"), "fail": ("✗", "red"), "error": ("!", "yellow")}[cell.status]
        if self.repeat > 1:
            return f"{mark} {cell.passed}/{cell.runs}", style
        return f"{mark} {cell.status}", style

    def table(self):
        from rich.table import Table
        from rich.text import Text

        table = Table(title=None, show_lines=False, header_style="bold")
        table.add_column("scenario", overflow="fold")
        table.add_column("evaluator", overflow="fold")
        if self.comparing:
            table.add_column("baseline", no_wrap=True)
        table.add_column("program" if self.comparing else "verdict", no_wrap=True)
        if self.comparing:
            table.add_column("change", no_wrap=True)
        table.add_column("turns", justify="right", no_wrap=True)
        table.add_column("LLM calls", justify="right", no_wrap=True)
        table.add_column("tokens", justify="right", no_wrap=True)
        table.add_column("why (program)", overflow="fold", ratio=1)
        shown_scenario = None
        for row in self.rows:
            first = row.scenario != shown_scenario
            shown_scenario = row.scenario
            cells: list[Text] = [Text(row.scenario if first else "", style="bold"), Text(row.evaluator)]
            if self.comparing:
                cells.append(Text(*self.cell_text(row.baseline)))
            cells.append(Text(*self.cell_text(row.program)))
            if self.comparing:
                change = row.change
                cells.append(Text(change, style="red bold" if change == NEWLY_FAILING else "green"))
            if first:
                now = self.stats(row.scenario, "program")
                before = self.stats(row.scenario, "baseline") if self.comparing else None
                for key in ("turns", "llm_calls", "tokens"):
                    value = _number(now[key])
                    if before is not None:
                        value = f"{_number(before[key])} → {value}"
                    cells.append(Text(value))
            else:
                cells += [Text(""), Text(""), Text("")]
            reason = row.program.reason if row.program.status != "pass" else ""
            cells.append(Text(clip(reason, 160), style="dim"))
            table.add_row(*cells)
        return table

    def summary_lines(self) -> list[tuple[str, str]]:
        """Lines under the table, each with its style."""
        lines = []
        runs = len(self.scenarios) * self.repeat
        for label in (("baseline", "program") if self.comparing else ("program",)):
            s = self.summary(label)
            name = f"{label} ({self.targets[label].path})"
            text = (f"{name}: {s['passed']} of {s['evaluators']} evaluators passed, {s['failed']} failed, "
                    f"{s['errors']} could not decide ({runs} conversation{'s' if runs != 1 else ''})")
            style = "green" if s["passed"] == s["evaluators"] else ("red" if label == "program" else "yellow")
            lines.append((text, style))
            usage = s["usage"]
            parts = []
            for role, shown in (("bot", "bot"), ("user", "simulated user"), ("judge", "judge")):
                u = usage.get(role)
                if u and u["calls"]:
                    parts.append(f"{shown}: {u['calls']} LLM calls, {u['prompt_tokens'] + u['completion_tokens']} tokens")
            if parts:
                lines.append(("  " + " · ".join(parts), "dim"))
        for r in self.results:
            if r.error:
                lines.append((f"{r.scenario} ({r.target}, run {r.repeat}) stopped: {r.error}", "yellow"))
            for note in r.notes:
                lines.append((f"{r.scenario} ({r.target}, run {r.repeat}): {note}", "dim"))
        if self.comparing:
            failing, passing = self.newly_failing, self.newly_passing
            lines.append((f"newly failing: {len(failing)}"
                          + (" (" + "; ".join(f"{r.scenario}: {r.evaluator}" for r in failing) + ")" if failing else "")
                          + f" · newly passing: {len(passing)}"
                          + (" (" + "; ".join(f"{r.scenario}: {r.evaluator}" for r in passing) + ")" if passing else ""),
                          "red bold" if failing else "green"))
        return lines

    # ---- HTML ----

    def to_html(self) -> str:
        e = _e
        labels = ["baseline", "program"] if self.comparing else ["program"]
        out: list[str] = []
        add = out.append
        add("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")
        add(f"<title>frontdesk eval: {e(self.targets['program'].path)}</title>")
        add(f"<style>{_CSS}</style></head><body>")
        add("<h1>frontdesk eval</h1>")
        add("<p class=\"meta\">")
        add(f"scenarios: <code>{e(self.scenarios_path)}</code><br>")
        for label in labels:
            t = self.targets[label]
            add(f"{e(label)}: <code>{e(t.path)}</code> <span class=\"dim\">({e(t.digest)})</span><br>")
        add(f"{len(self.scenarios)} scenarios × {self.repeat} run{'s' if self.repeat != 1 else ''}, "
            f"concurrency {self.concurrency}, {self.seconds:.1f} s, {e(self.created)}</p>")
        verdict = "regresses" if self.comparing and self.exit_status else (
            "does not regress" if self.comparing else ("passes" if not self.exit_status else "fails"))
        add(f"<p class=\"overall {'bad' if self.exit_status else 'good'}\">The program {verdict}"
            f" (exit status {self.exit_status}).</p>")
        add("<ul class=\"summary\">")
        for text, _style in self.summary_lines():
            add(f"<li>{e(text)}</li>")
        add("</ul>")
        # the overview table
        add("<table class=\"grid\"><thead><tr><th>scenario</th><th>evaluator</th>")
        for label in labels:
            add(f"<th>{e(label)}</th>")
        if self.comparing:
            add("<th>change</th>")
        add("</tr></thead><tbody>")
        for row in self.rows:
            add(f"<tr><td><a href=\"#{e(_anchor(row.scenario))}\">{e(row.scenario)}</a></td><td>{e(row.evaluator)}</td>")
            for label in labels:
                add(self._html_cell(row.program if label == "program" else row.baseline))
            if self.comparing:
                add(f"<td class=\"change {'bad' if row.change == NEWLY_FAILING else 'good'}\">{e(row.change)}</td>")
            add("</tr>")
        add("</tbody></table>")
        # each scenario: verdicts with reasons, then the transcripts
        for scenario in self.scenarios:
            add(f"<section id=\"{e(_anchor(scenario.name))}\"><h2>{e(scenario.name)}</h2>")
            if scenario.description:
                add(f"<p>{e(scenario.description)}</p>")
            add(f"<p><b>Persona:</b> {e(scenario.persona)}</p><p><b>Goals:</b></p><ul>")
            for goal in scenario.goals:
                add(f"<li>{e(goal)}</li>")
            add(f"</ul><p class=\"dim\">at most {scenario.max_turns} turns</p>")
            add("<table class=\"grid\"><thead><tr><th>evaluator</th>")
            for label in labels:
                add(f"<th>{e(label)}</th>")
            if self.comparing:
                add("<th>change</th>")
            add("</tr></thead><tbody>")
            for row in (r for r in self.rows if r.scenario == scenario.name):
                add(f"<tr><td>{e(row.evaluator)}</td>")
                for label in labels:
                    add(self._html_cell(row.program if label == "program" else row.baseline, with_reason=True))
                if self.comparing:
                    add(f"<td class=\"change {'bad' if row.change == NEWLY_FAILING else 'good'}\">{e(row.change)}</td>")
                add("</tr>")
            add("</tbody></table>")
            for repeat in range(1, self.repeat + 1):
                if self.repeat > 1:
                    add(f"<h3>run {repeat}</h3>")
                add(f"<div class=\"runs cols{len(labels)}\">")
                for label in labels:
                    run = next((r for r in self.runs(scenario.name, label) if r.repeat == repeat), None)
                    add(self._html_run(label, run))
                add("</div>")
            add("</section>")
        add("</body></html>\n")
        return "".join(out)

    def _html_cell(self, cell: Cell | None, with_reason: bool = False) -> str:
        if cell is None or cell.status == "missing":
            return "<td class=\"dim\">-</td>"
        text, _ = self.cell_text(cell)
        reasons = ""
        if with_reason:
            shown = list(cell.verdicts)
            if len(shown) == 1:
                reasons = f"<div class=\"reason\">{_e(shown[0].reason)}</div>"
            else:
                reasons = "".join(f"<div class=\"reason\">run {i}: {_e(v.verdict)}: {_e(v.reason)}</div>"
                                  for i, v in enumerate(shown, start=1))
        return f"<td class=\"verdict {cell.status}\">{_e(text)}{reasons}</td>"

    def _html_run(self, label: str, run: RunResult | None) -> str:
        e = _e
        if run is None:
            return f"<div class=\"run\"><h4>{e(label)}</h4><p class=\"dim\">not run</p></div>"
        bot = run.usage.get("bot", {})
        tokens = bot.get("prompt_tokens", 0) + bot.get("completion_tokens", 0)
        session = f" · session {e(run.session_id)}" if run.session_id else ""
        numbers = f"{run.turns} turns · {bot.get('calls', 0)} bot LLM calls · {tokens} tokens · {run.seconds:.2f} s"
        parts = [f"<div class=\"run\"><h4>{e(label)}</h4>", f"<p class=\"dim\">{numbers}{session}</p>",
                 "<ol class=\"transcript\">"]
        for item in run.transcript:
            role = item["role"]
            if role == "tool":
                args = json.dumps(item.get("args") or {}, ensure_ascii=False, default=str)
                status = f" → {item['status']}" if item.get("status") else ""
                said = f": {item['text']}" if item.get("text") else ""
                parts.append(f"<li class=\"tool\"><span class=\"who\">{e(item.get('agent') or '')} tool</span>"
                             f"<code>{e(str(item.get('tool')))}({e(args)}){e(status)}{e(said)}</code></li>")
            else:
                who = "user" if role == "user" else (item.get("agent") or "bot")
                parts.append(f"<li class=\"{e(role)}\"><span class=\"who\">{e(who)}</span>"
                             f"<span class=\"text\">{e(item['text'])}</span></li>")
        parts.append("</ol>")
        if run.finished:
            parts.append(f"<p class=\"end\">The simulated user finished (goals "
                         f"{'met' if run.goals_met else 'not met'}): {e(run.finish_reason)}</p>")
        elif run.ended:
            parts.append("<p class=\"end\">The program ended the conversation.</p>")
        elif run.escalated:
            parts.append("<p class=\"end\">The conversation was handed to a person.</p>")
        elif run.max_turns_reached:
            parts.append(f"<p class=\"end\">Stopped after {run.turns} turns (max_turns).</p>")
        if run.error:
            parts.append(f"<p class=\"error\">The run stopped: {e(run.error)}</p>")
        for note in run.notes:
            parts.append(f"<p class=\"dim\">{e(note)}</p>")
        parts.append("</div>")
        return "".join(parts)


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _anchor(name: str) -> str:
    return "s-" + "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in name)


def _number(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem;color:#222;max-width:1400px}
code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.9em}
.dim{color:#777}.meta{line-height:1.5}
.overall{font-size:1.2em;font-weight:600}.overall.good{color:#17692b}.overall.bad{color:#b3261e}
table.grid{border-collapse:collapse;margin:1rem 0;width:100%}
table.grid th,table.grid td{border:1px solid #ddd;padding:.35rem .5rem;text-align:left;vertical-align:top}
table.grid th{background:#f4f4f4}
td.verdict.pass{background:#e7f5ea}td.verdict.fail{background:#fbe9e7}td.verdict.error{background:#fff6dd}
td.change.bad{color:#b3261e;font-weight:600}td.change.good{color:#17692b}
.reason{font-size:.85em;color:#444;margin-top:.2rem}
section{border-top:2px solid #ccc;margin-top:2rem;padding-top:.5rem}
.runs{display:grid;gap:1rem}.runs.cols2{grid-template-columns:1fr 1fr}.runs.cols1{grid-template-columns:1fr}
.run{border:1px solid #ddd;border-radius:6px;padding:.5rem 1rem;background:#fcfcfc;min-width:0}
ol.transcript{list-style:none;padding:0}
ol.transcript li{margin:.3rem 0;padding:.3rem .5rem;border-radius:4px;white-space:pre-wrap;overflow-wrap:anywhere}
ol.transcript li.user{background:#e8f0fe}ol.transcript li.bot{background:#f1f1f1}
ol.transcript li.tool{background:#fff;border:1px dashed #ccc;font-size:.85em}
.who{font-weight:600;margin-right:.5rem}.who::after{content:":"}
.end{font-style:italic}.error{color:#b3261e;font-weight:600}
"""
