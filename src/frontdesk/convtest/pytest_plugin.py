"""pytest plugin: every conversation test case is a pytest item (registered as the `frontdesk` plugin).

Collected: YAML files named test_*.yml / test_*.yaml, and YAML files in a `conversations/` folder, whose
top level has `steps:` or `test_cases:` (see report.is_conversation_test). A file with format errors is a
collection error at its file:line:column. Cases that need the local embedding model carry the `local`
marker and are skipped when it is not installed. Turn collection off with `frontdesk_conversations =
false` in the pytest configuration, or `-p no:frontdesk`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .model import TestCase, TestFormatError, load_test_file
from .report import is_conversation_test
from .runner import CaseResult, Runner

_RUNNER = pytest.StashKey[Runner]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("frontdesk_conversations", "collect conversation test files (test_*.yml, conversations/*.yml "
                  "with steps: or test_cases:) as tests", type="bool", default=True)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "conversation: a Frontdesk conversation test case")
    config.addinivalue_line("markers", "local: needs the local models from the [local] extra")


def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    if not parent.config.getini("frontdesk_conversations"):
        return None
    if is_conversation_test(file_path):
        return ConversationFile.from_parent(parent, path=file_path)
    return None


def _runner(config: pytest.Config) -> Runner:
    if _RUNNER not in config.stash:
        config.stash[_RUNNER] = Runner()
    return config.stash[_RUNNER]


class ConversationFile(pytest.File):
    def collect(self):
        try:
            test_file = load_test_file(self.path)
        except TestFormatError as exc:
            raise self.CollectError(f"conversation test file with errors:\n{exc.format()}") from None
        for case in test_file.cases:
            yield ConversationItem.from_parent(self, name=case.name, case=case)


class ConversationFailed(Exception):
    def __init__(self, result: CaseResult) -> None:
        super().__init__(result.failures[0].format() if result.failures else result.reason)
        self.result = result


class ConversationItem(pytest.Item):
    def __init__(self, *, case: TestCase, **kwargs) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.add_marker("conversation")
        if case.needs_embeddings():
            self.add_marker("local")
        for tag in case.tags:
            self.keywords[tag] = True

    def runtest(self) -> None:
        result = _runner(self.config).run(self.case)
        if result.status == "skipped":
            pytest.skip(result.reason)
        if result.status in ("failed", "error"):
            raise ConversationFailed(result)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, ConversationFailed):
            return failure_text(excinfo.value.result)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, max(self.case.span.line - 1, 0), f"conversation {self.case.name}"


def failure_text(result: CaseResult) -> str:
    """What pytest shows for a failed case: each failed check at its place, then the transcript with the
    turn of the first failure marked `>>`."""
    if result.status == "error":
        return f"{result.case.nodeid}: could not run: {result.reason}"
    lines = [f"conversation {result.case.name!r} failed: {len(result.failures)} check(s)"]
    for number, failure in enumerate(result.failures, start=1):
        lines.append(f"{number}. {failure.format()}")
        if failure.check:
            lines.append(f"   check: {failure.check}")
    if result.turns:
        lines += ["", "transcript:", result.transcript(result.failures[0].turn if result.failures else None)]
    return "\n".join(lines)
