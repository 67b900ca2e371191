"""Conversation files read into the dict `frontdesk.testing` replays and `frontdesk chat --script`
checks (the format is described in `frontdesk.testing`); the scripted model such a file describes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from frontdesk.convtest.model import (
    TestFormatError,
    legacy_view,
    looks_like_test_file,
    parse_test_file,
    select_case,
    split_case_selector,
)
from frontdesk.llm.base import ScriptError
from frontdesk.llm.scripted import ScriptedProvider

CONVERSATION_KEYS = ("user", "llm", "expect", "events", "embeddings", "llm_classifies", "today")


def load_conversation(path: str | Path) -> dict[str, Any]:
    """A conversation file as a dict, its `user:` lines as the text written.

    ValueError when the file is not a mapping (e.g. a bare list of LLM answers); ScriptError when
    it has a key this format does not know or a user line that is not text.
    """
    path, case_name = split_case_selector(path)
    text = path.read_text(encoding="utf-8")
    if looks_like_test_file(text):  # a conversation test (`steps:` / `test_cases:`, see frontdesk.convtest)
        return _test_case_view(path, text, case_name)
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else {}
    finally:
        loader.dispose()
    data = data or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a conversation file is a mapping with user:, llm: and expect:")
    unknown = [str(key) for key in data if key not in CONVERSATION_KEYS]
    if unknown:
        raise ScriptError(f"{path}: unknown key{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} "
                          f"in a conversation file; the known keys are {', '.join(CONVERSATION_KEYS)}")
    if "user" in data:
        data["user"] = _user_lines(path, node)
    return data


def _test_case_view(path: Path, text: str, case_name: str | None) -> dict[str, Any]:
    """A conversation test file's case (`FILE::CASE`, else its first) in this module's dict form, with
    the case itself under "case"; ScriptError for a file with format errors or no such case."""
    try:
        return legacy_view(select_case(parse_test_file(text, path), case_name))
    except TestFormatError as exc:
        raise ScriptError(exc.format()) from None
    except LookupError as exc:
        raise ScriptError(str(exc)) from None


def _user_lines(path: Path, root: yaml.Node) -> list[str]:
    """The `user:` items as written (plain `yes` stays "yes"), or ScriptError naming a line that is not text."""
    value = next((v for k, v in root.value if isinstance(k, yaml.ScalarNode) and k.value == "user"), None)
    if value is None or (isinstance(value, yaml.ScalarNode) and value.tag.endswith(":null")):
        return []
    if not isinstance(value, yaml.SequenceNode):
        raise ScriptError(f"{path}:{value.start_mark.line + 1}: 'user' must be a list of lines")
    lines = []
    for item in value.value:
        if not isinstance(item, yaml.ScalarNode):
            kind = "mapping" if isinstance(item, yaml.MappingNode) else "list"
            raise ScriptError(f"{path}:{item.start_mark.line + 1}: this user line is a YAML {kind}, not text; "
                              "quote it (a ': ' inside plain text starts a mapping)")
        lines.append(item.value)
    return lines


def scripted_model(spec: dict[str, Any]) -> ScriptedProvider:
    """The scripted model a conversation file describes."""
    llm = ScriptedProvider(spec.get("llm") or [])
    if spec.get("embeddings") and not spec.get("llm_classifies", False):
        llm.can_classify = False  # type: ignore[attr-defined]
    llm.can_reason = bool(spec.get("llm"))  # type: ignore[attr-defined]  # as convtest's scripted_model_for
    return llm
