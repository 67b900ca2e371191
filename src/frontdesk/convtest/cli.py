"""`frontdesk test PATH...`: run conversation tests (and convert Rasa end-to-end tests with --from-rasa).

Only typer is imported here; everything else is imported when the command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from frontdesk.access import ALLOW_ENV_HELP, ALLOW_PATH_HELP  # help texts: the module imports nothing heavy


def register(app: typer.Typer) -> None:
    app.command("test")(test_command)


def test_command(
    paths: Annotated[list[str] | None, typer.Argument(
        help="Test files or folders (FILE::CASE runs one case). Folders are searched for conversation test "
             "files. [default: .]", show_default=False)] = None,
    keyword: Annotated[str | None, typer.Option(
        "-k", help="Run only the cases whose name (or file name) contains this text; `not TEXT` excludes, "
                   "`and` / `or` combine.")] = None,
    program: Annotated[Path | None, typer.Option(
        "--program", help="The program to test (default: each file's `program:`, else the nearest folder "
                          "above it holding a program).")] = None,
    junit: Annotated[Path | None, typer.Option("--junit", help="Also write the results as JUnit XML to this "
                                                               "file.")] = None,
    fail_fast: Annotated[bool, typer.Option("-x", "--fail-fast", help="Stop at the first case that fails.")] = False,
    verbose: Annotated[bool, typer.Option("-v", "--verbose", help="Show every case's transcript, not only "
                                                                  "failures'.")] = False,
    from_rasa: Annotated[Path | None, typer.Option(
        "--from-rasa", help="Convert this Rasa end-to-end test file (or a folder of them) to Frontdesk "
                            "conversation tests instead of running tests.")] = None,
    output: Annotated[Path | None, typer.Option(
        "-o", "--output", help="With --from-rasa: the file to write (a folder for a folder of Rasa files; "
                               "default: standard output).")] = None,
    allow_env: Annotated[list[str] | None, typer.Option(
        "--allow-env", metavar="NAME", help=ALLOW_ENV_HELP)] = None,
    allow_path: Annotated[list[str] | None, typer.Option(
        "--allow-path", metavar="DIR", help=ALLOW_PATH_HELP)] = None,
) -> None:
    """Run conversation tests: each case's user turns through the program with a scripted model, checking
    what the bot says and does. Exit status 1 when a case fails, 2 when a test file cannot be read."""
    if from_rasa is not None:
        from frontdesk.convtest.rasa import rasa_command

        raise typer.Exit(rasa_command(from_rasa, output, program))
    from frontdesk.access import grant
    from frontdesk.convtest.report import run_command

    grant(allow_env or [], allow_path or [])

    raise typer.Exit(run_command(paths or ["."], keyword, program, junit, fail_fast, verbose))
