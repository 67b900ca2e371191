"""`frontdesk eval`: run scenarios with a simulated user against a program (and a baseline), and report.

Only typer and the standard library are imported here at import time; the rest is imported by the command.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from frontdesk.access import ALLOW_ENV_HELP, ALLOW_PATH_HELP  # help texts: the module imports nothing heavy

LLM_MODES = ("auto", "local", "openai", "none")


def register(app: typer.Typer) -> None:
    app.command("eval")(eval_command)


def eval_command(
    scenarios: Annotated[Path, typer.Argument(help="The scenario file (YAML; see docs/evaluation.md).")],
    program: Annotated[str, typer.Option("--program", help="The program under test (a file or its folder).")],
    baseline: Annotated[str | None, typer.Option(
        "--baseline", help="Another version of the program to compare with; exit status 1 only when the "
                           "program regresses against it.")] = None,
    html_path: Annotated[Path | None, typer.Option(
        "--html", help="Write an HTML report (one self-contained file with the transcripts).")] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the report as JSON.")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", help="Conversations run at the same time.")] = 4,
    repeat: Annotated[int, typer.Option(
        "--repeat", help="Run each scenario this many times; an evaluator passes when it passed every time.")] = 1,
    user_model: Annotated[str | None, typer.Option(
        "--user-model", help="The simulated user's model on the configured OpenAI-compatible endpoint "
                             "(default: the endpoint's model).")] = None,
    judge_model: Annotated[str | None, typer.Option(
        "--judge-model", help="The judge's model on the configured endpoint (default: the endpoint's model).")] = None,
    script: Annotated[Path | None, typer.Option(
        "--script", help="Scripted answers per scenario for the simulated user, the judge and the bot "
                         "(runs offline).")] = None,
    llm_mode: Annotated[str, typer.Option(
        "--llm", help="The bot's models when a scenario scripts none: auto, local, openai or none "
                      "(as for chat).")] = "auto",
    only: Annotated[list[str] | None, typer.Option(
        "--scenario", help="Run only this scenario (repeatable).")] = None,
    allow_env: Annotated[list[str] | None, typer.Option(
        "--allow-env", metavar="NAME", help=ALLOW_ENV_HELP)] = None,
    allow_path: Annotated[list[str] | None, typer.Option(
        "--allow-path", metavar="DIR", help=ALLOW_PATH_HELP)] = None,
) -> None:
    """Evaluate a program with simulated users: scenarios (a persona with goals) and evaluators (rules or an
    LLM judge); a table, and optionally HTML and JSON reports. Exit status: 0 all passed (or, with
    --baseline, no regression), 1 failures (or a regression), 2 unusable input."""
    from rich.console import Console
    from rich.text import Text

    from frontdesk.access import grant
    from frontdesk.diagnostics import format_all
    from frontdesk.evaluation.scenarios import load_scenarios

    grant(allow_env or [], allow_path or [])

    err = Console(stderr=True, highlight=False, soft_wrap=True)

    def fail(message: str) -> None:
        err.print(Text.assemble(("error:", "red"), " ", message))
        raise typer.Exit(2)

    if concurrency < 1:
        fail(f"--concurrency must be at least 1, not {concurrency}")
    if not 1 <= repeat <= 1000:
        fail(f"--repeat must be between 1 and 1000, not {repeat}")
    if llm_mode not in LLM_MODES:
        fail(f"--llm must be auto, local, openai or none, not {llm_mode!r}")
    loaded, diags = load_scenarios(scenarios, script)
    shown = [d for d in diags if d.severity.value != "info"]
    if shown:
        err.print(Text(format_all(shown)))
    if loaded is None:
        n = sum(1 for d in diags if d.is_error)
        fail(f"{scenarios}: {n} error{'s' if n != 1 else ''} in the scenarios; fix them and run again")
    chosen = loaded.scenarios
    if only:
        names = {s.name for s in chosen}
        unknown = [n for n in only if n not in names]
        if unknown:
            fail(f"no scenario named {', '.join(map(repr, unknown))}; the scenarios are: {', '.join(sorted(names))}")
        chosen = [s for s in chosen if s.name in set(only)]

    from frontdesk.evaluation.runner import missing_models

    # the simulated user and the judge run on an endpoint or a script: when they have neither, say so now,
    # before the bot's models (the local ones take seconds to a minute to load) are loaded for nothing
    programs = [("program", program, _read_program("program", program, err, fail))]
    if baseline is not None:
        programs.insert(0, ("baseline", baseline, _read_program("baseline", baseline, err, fail)))
    roles = _roles(chosen, programs[-1][2], user_model, judge_model, fail)
    problems = missing_models(chosen, [], roles)
    if not problems:
        targets = [_target(label, path, prog, chosen, llm_mode, err, fail) for label, path, prog in programs]
        problems = missing_models(chosen, targets, roles)
    if problems:
        for problem in problems:
            err.print(Text.assemble(("error:", "red"), " ", problem))
        fail("give the missing answers in a script (--script or `script:`), or configure an OpenAI-compatible "
             "endpoint (FRONTDESK_LLM_BASE_URL, FRONTDESK_LLM_API_KEY, FRONTDESK_LLM_MODEL)")

    report = _run(chosen, targets, roles, concurrency, repeat, str(scenarios), err)

    out = Console(highlight=False, width=None if Console().is_terminal else 200)
    out.print(report.table())
    for text, style in report.summary_lines():
        out.print(Text(text, style=style))
    if json_path is not None:
        report.write_json(json_path)
        err.print(Text(f"wrote {json_path}", style="dim"))
    if html_path is not None:
        html_path.write_text(report.to_html(), encoding="utf-8")
        err.print(Text(f"wrote {html_path}", style="dim"))
    raise typer.Exit(report.exit_status)


def _read_program(label, path, err, fail):
    """The program at `path`, or exit status 2 with its errors."""
    from rich.text import Text

    from frontdesk.diagnostics import format_all
    from frontdesk.lang import load_program

    try:
        prog, diags = load_program(path)
    except (OSError, ValueError) as exc:
        fail(f"{label} {path}: cannot read the program: {exc}")
    errors = [d for d in diags if d.is_error]
    if errors or prog is None:
        err.print(Text(format_all(errors)))
        fail(f"{label} {path}: {len(errors)} error{'s' if len(errors) != 1 else ''} in the program")
    return prog


def _target(label, path, prog, scenarios, llm_mode, err, fail):
    """A loaded version of the program with its tools, knowledge and (when a scenario needs them) models."""
    from rich.text import Text

    from frontdesk.app import ModelChoiceError, choose_models, knowledge_for
    from frontdesk.evaluation.runner import Target
    from frontdesk.llm.base import ScriptError
    from frontdesk.progress import IndexProgressBar
    from frontdesk.runtime.engine import program_digest
    from frontdesk.runtime.tools import ProgramToolRunner

    models = None
    if any(s.script is None or s.script.llm is None for s in scenarios):
        try:
            models = choose_models(prog, llm_mode)  # type: ignore[arg-type]
        except (ScriptError, ModelChoiceError, OSError, ValueError) as exc:
            fail(f"{label}: {exc}")
        for note in models.notes:
            err.print(Text.assemble(("note:", "yellow"), " ", f"{label}: {note}"))
    embedder = models.embedder if models is not None else None
    knowledge = knowledge_for(prog, embedder, on_progress=IndexProgressBar())
    return Target(label, path, prog, knowledge=knowledge, tools=ProgramToolRunner(prog), models=models,
                  digest=program_digest(prog))


def _roles(scenarios, prog, user_model, judge_model, fail):
    """The simulated user's and the judge's models on the configured endpoint, where a scenario needs one."""
    from frontdesk.evaluation.runner import RoleModels
    from frontdesk.llm.openai_compat import provider_from_config

    need_user = user_model is not None or any(s.script is None or s.script.user is None for s in scenarios)
    need_judge = judge_model is not None or any(
        s.needs_judge and (s.script is None or s.script.judge is None) for s in scenarios)

    def provider(model):
        config = dict(prog.settings.llm or {})
        if model:
            config["model"] = model
        try:
            return provider_from_config(config)
        except ValueError as exc:
            fail(str(exc))

    user = provider(user_model) if need_user else None
    judge = provider(judge_model) if need_judge else None
    if user_model is not None and user is None or judge_model is not None and judge is None:
        fail("--user-model and --judge-model name models on an OpenAI-compatible endpoint, and none is "
             "configured: set FRONTDESK_LLM_BASE_URL (and FRONTDESK_LLM_API_KEY), or OPENAI_API_KEY")
    return RoleModels(user=user, judge=judge)


def _run(scenarios, targets, roles, concurrency, repeat, scenarios_path, err):
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )
    from rich.text import Text

    from frontdesk.evaluation.report import Report
    from frontdesk.evaluation.runner import run_all

    total = len(scenarios) * repeat * len(targets)
    started = time.perf_counter()
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        console=err, transient=True)
    task = progress.add_task("evaluating", total=total)
    live = err.is_terminal

    def done(result) -> None:
        passed = sum(1 for v in result.verdicts if v.verdict == "pass")
        mark, style = ("✓", "green") if passed == len(result.verdicts) else ("✗", "red")
        line = Text.assemble((mark, style), f" {result.scenario} ({result.target}, run {result.repeat}): "
                             f"{passed} of {len(result.verdicts)} passed, {result.turns} turns")
        if live:
            progress.console.print(line)
        else:
            err.print(line)
        progress.update(task, advance=1, description=f"evaluating · {result.scenario}")

    with progress if live else _nothing():
        results = run_all(scenarios, targets, roles, concurrency=concurrency, repeat=repeat, on_result=done)
    return Report(scenarios, results, targets, scenarios_path, repeat, concurrency, time.perf_counter() - started)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
