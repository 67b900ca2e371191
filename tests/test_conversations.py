"""The examples' conversations are conversation tests (docs/testing.md).

pytest runs each case itself, through the `frontdesk` plugin (frontdesk.convtest.pytest_plugin), when it
collects `examples/` (a testpath): examples/*/conversations/*.yml are items such as
`examples/bookstore/conversations/happy_path.yml::happy_path`. This module checks what is around them:
that they are all there, readable and collected once, and that the older dict view still reads them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from frontdesk.convtest.model import load_test_file
from frontdesk.convtest.report import find_test_files, is_conversation_test
from frontdesk.testing import load_conversation

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
CONVERSATIONS = sorted(EXAMPLES.glob("*/conversations/*.yml"))


def test_every_example_has_the_required_conversations():
    for example in ("bookstore", "retail_banking"):
        names = {p.stem for p in CONVERSATIONS if p.parent.parent.name == example}
        assert {"happy_path", "intent_change", "tries_limit", "tool_error", "fallback"} <= names, example


@pytest.mark.parametrize("path", CONVERSATIONS, ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_each_conversation_is_a_conversation_test(path: Path):
    assert is_conversation_test(path)
    test_file = load_test_file(path)
    assert [c.name for c in test_file.cases] == [path.stem]
    case = test_file.cases[0]
    assert case.user_lines and any(t.checks for t in case.turns)
    # the older view (frontdesk.testing, `frontdesk chat --script`) reads the same conversation
    view = load_conversation(path)
    assert view["user"] == case.user_lines and view["llm"] == case.all_llm() and view["case"].name == case.name


def test_a_folder_walk_finds_exactly_the_examples_conversations():
    demos = sorted(EXAMPLES.glob("*/tests/test_*.yml"))  # test_cases files beside the conversations
    assert demos and find_test_files(EXAMPLES) == sorted(CONVERSATIONS + demos)


def test_pytest_collects_each_example_case_once(request):
    """The plugin is active here, and the session holds one item per example conversation."""
    assert request.config.pluginmanager.has_plugin("frontdesk")
    items = [item for item in request.session.items if type(item).__name__ == "ConversationItem"
             and Path(item.path).is_relative_to(EXAMPLES) and Path(item.path).parent.name == "conversations"]
    if not items:
        pytest.skip("examples/ was not collected in this run (run the whole suite)")
    files = [Path(item.path) for item in items]
    assert len(files) == len(set(files)) and set(files) <= set(CONVERSATIONS)  # one case per file, once
    examples = {f.parent.parent for f in files}
    assert set(files) == {p for p in CONVERSATIONS if p.parent.parent in examples}
