"""Finding test files, running them with a progress bar, and reporting: terminal and JUnit XML."""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from .model import (
    TestCase,
    TestFormatError,
    load_test_file,
    looks_like_test_file,
    split_case_selector,
)
from .runner import CaseResult, Runner

SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".frontdesk", ".data", ".tox", ".mypy_cache",
             ".pytest_cache", ".ruff_cache"}
TEST_FOLDERS = ("conversations",)


def is_conversation_test(path: Path) -> bool:
    """The naming rule: a YAML file named test_*.yml (or .yaml), or any YAML file in a `conversations/`
    folder, whose top level has `steps:` or `test_cases:`. Other YAML (programs, configs, Rasa files
    outside those names) is left alone."""
    if path.suffix.lower() not in (".yml", ".yaml"):
        return False
    if not (path.name.startswith("test_") or path.parent.name in TEST_FOLDERS):
        return False
    try:
        with path.open(encoding="utf-8") as handle:
            head = handle.read(200_000)
    except (OSError, UnicodeDecodeError):
        return False
    return looks_like_test_file(head)


def find_test_files(folder: Path) -> list[Path]:
    found = []
    for path in sorted(folder.rglob("*")):
        if any(part in SKIP_DIRS for part in path.relative_to(folder).parts[:-1]):
            continue
        if path.is_file() and is_conversation_test(path):
            found.append(path)
    return found


def keyword_matches(expression: str | None, case: TestCase) -> bool:
    """`-k`: words joined by `and` / `or`, each maybe `not WORD`; a word matches the case's name or file."""
    if not expression:
        return True
    haystack = f"{case.path.stem} {case.name}".lower()

    def term(word: str) -> bool:
        word = word.strip()
        if word.startswith("not "):
            return not term(word[4:])
        return word.lower() in haystack

    return any(all(term(part) for part in alternative.split(" and ")) for alternative in expression.split(" or "))


def collect(given: Iterable[str], keyword: str | None, console: Console) -> tuple[list[TestCase], int]:
    """The cases to run and the number of test files that could not be read (their problems printed)."""
    cases: list[TestCase] = []
    unreadable = 0
    for item in given:
        path, case_name = split_case_selector(item)
        if path.is_dir():
            files = find_test_files(path)
            if not files:
                console.print(Text(f"note: no conversation test files under {path} (test_*.yml, or *.yml in a "
                                   "conversations/ folder, with steps: or test_cases:)", style="yellow"))
        elif path.is_file():
            files = [path]
        else:
            console.print(Text(f"error: no such file or folder: {path}", style="red"))
            unreadable += 1
            continue
        for file in files:
            try:
                test_file = load_test_file(file)
            except TestFormatError as exc:
                console.print(Text(exc.format(), style="red"))
                unreadable += 1
                continue
            except (OSError, UnicodeDecodeError) as exc:
                console.print(Text(f"error: cannot read {file}: {exc}", style="red"))
                unreadable += 1
                continue
            chosen = [c for c in test_file.cases if case_name is None or c.name == case_name]
            if case_name is not None and not chosen:
                console.print(Text(f"error: {file} has no case named {case_name!r}; its cases: "
                                   f"{', '.join(c.name for c in test_file.cases)}", style="red"))
                unreadable += 1
            cases.extend(c for c in chosen if keyword_matches(keyword, c))
    return cases, unreadable


def _display(case: TestCase) -> str:
    try:
        shown = case.path.resolve().relative_to(Path.cwd())
    except ValueError:
        shown = case.path
    return f"{shown}::{case.name}"


def print_result(console: Console, result: CaseResult, verbose: bool = False) -> None:
    label = {"passed": ("PASS", "green"), "failed": ("FAIL", "red bold"), "skipped": ("SKIP", "yellow"),
             "error": ("ERROR", "red bold")}[result.status]
    line = Text.assemble((f"{label[0]:5}", label[1]), " ", _display(result.case), (f"  {result.duration:.2f} s", "dim"))
    console.print(line)
    if result.status in ("skipped", "error"):
        console.print(Text(f"      {result.reason}", style="yellow" if result.status == "skipped" else "red"))
        return
    if result.failures:
        first = result.failures[0]
        console.print(Text.assemble(("      first failure: ", "red"), first.format()))
        if first.check:
            console.print(Text(f"      check: {first.check}", style="dim"))
        for other in result.failures[1:]:
            console.print(Text(f"      also: {other.format()}", style="red"))
    if (result.failures or verbose) and result.turns:
        mark = result.failures[0].turn if result.failures else None
        console.print(Text("      transcript:", style="dim"))
        for row in result.transcript(mark).splitlines():
            console.print(Text("      " + row, style="bold" if row.startswith(">>") else ""))


def summary(results: list[CaseResult], unreadable: int, seconds: float) -> Text:
    counts = {s: sum(1 for r in results if r.status == s) for s in ("passed", "failed", "error", "skipped")}
    parts = []
    styles = {"passed": "green", "failed": "red", "error": "red", "skipped": "yellow"}
    for status, count in counts.items():
        if count or status == "passed":
            parts.append((f"{count} {status}", styles[status] if count else ""))
    if unreadable:
        parts.append((f"{unreadable} unreadable file{'s' if unreadable != 1 else ''}", "red"))
    text = Text()
    for i, (words, style) in enumerate(parts):
        if i:
            text.append(", ")
        text.append(words, style)
    text.append(f" in {seconds:.2f} s")
    return text


def write_junit(results: list[CaseResult], path: Path, seconds: float) -> None:
    suite = ET.Element("testsuite", name="frontdesk conversation tests", tests=str(len(results)),
                       failures=str(sum(r.status == "failed" for r in results)),
                       errors=str(sum(r.status == "error" for r in results)),
                       skipped=str(sum(r.status == "skipped" for r in results)), time=f"{seconds:.3f}")
    for result in results:
        case = result.case
        element = ET.SubElement(suite, "testcase", classname=str(case.path).replace("/", ".").removesuffix(".yml"),
                                name=case.name, file=str(case.path), line=str(case.span.line),
                                time=f"{result.duration:.3f}")
        if result.status == "failed":
            failure = ET.SubElement(element, "failure", message=result.failures[0].format())
            failure.text = "\n".join(f.format() for f in result.failures) + "\n\ntranscript:\n" + result.transcript(
                result.failures[0].turn)
        elif result.status == "error":
            ET.SubElement(element, "error", message=result.reason.splitlines()[0] if result.reason else "error").text \
                = result.reason
        elif result.status == "skipped":
            ET.SubElement(element, "skipped", message=result.reason)
    root = ET.Element("testsuites")
    root.append(suite)
    tree = ET.ElementTree(root)
    ET.indent(tree)
    path.parent.mkdir(parents=True, exist_ok=True)
    tree.write(path, encoding="utf-8", xml_declaration=True)


def run_command(paths: list[str], keyword: str | None, program: Path | None, junit: Path | None,
                fail_fast: bool, verbose: bool) -> int:
    console = Console(highlight=False, soft_wrap=True)
    started = time.perf_counter()
    cases, unreadable = collect(paths, keyword, console)
    runner = Runner(program)
    results: list[CaseResult] = []
    if cases:
        columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn())
        with Progress(*columns, console=console, transient=True) as progress:
            task = progress.add_task("conversations", total=len(cases))
            for case in cases:
                progress.update(task, description=case.name)
                result = runner.run(case)
                results.append(result)
                print_result(progress.console, result, verbose)
                progress.advance(task)
                if fail_fast and result.status in ("failed", "error"):
                    break
    elif not unreadable:
        console.print(Text("no conversation test cases to run", style="yellow"))
    seconds = time.perf_counter() - started
    console.print(summary(results, unreadable, seconds))
    if junit is not None:
        write_junit(results, junit, seconds)
        console.print(Text(f"wrote {junit}", style="dim"))
    if unreadable:
        return 2
    return 1 if any(r.status in ("failed", "error") for r in results) else 0
