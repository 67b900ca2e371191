"""A provider that plays back a fixed script of model answers, for tests and replays."""

from __future__ import annotations

import copy
import json
import threading
from pathlib import Path
from typing import Any, get_args

import yaml

from frontdesk.diagnostics import did_you_mean
from frontdesk.llm.base import LLMError, LLMRequest, LLMResponse, Purpose, ScriptError, ToolCall, Usage
from frontdesk.textutil import clip

ENTRY_KEYS = ("purpose", "expect", "reply", "calls", "call", "with", "error")
CALL_KEYS = ("name", "arguments")
ANSWER_KEYS = ("reply", "calls", "call", "error")
PURPOSES: tuple[str, ...] = get_args(Purpose)
_QUOTE_LIMIT = 80


class ScriptedProvider:
    """Answers each request with the next script entry, checking it was the call the script expected."""

    # Its answers depend on the order of the calls: calls the runtime could make at the same time
    # (a supervisor's parallel pipeline) are made one after the other, in the order they are written.
    ordered = True

    def __init__(self, entries: list[dict], name: str = "scripted") -> None:
        if not isinstance(entries, list):
            raise ScriptError(f"a script must be a list of answers, got {type(entries).__name__}")
        for number, entry in enumerate(entries, start=1):
            _validate_entry(entry, number)
        self.name = name
        self._entries = copy.deepcopy(entries)
        self._used = 0
        self._next_call_number = 1
        self._lock = threading.Lock()
        self.calls: list[LLMRequest] = []

    def __repr__(self) -> str:
        return f"ScriptedProvider(name={self.name!r}, used={self._used}, remaining={self.remaining()})"

    def remaining(self) -> int:
        return len(self._entries) - self._used

    def assert_finished(self) -> None:
        """Raise ScriptError if the conversation ended before the script did."""
        left = self.remaining()
        if left:
            step = self._used + 1
            raise ScriptError(
                f"the script has {left} unused answer{'s' if left != 1 else ''} left "
                f"(next: step {step}, {_describe_entry(self._entries[self._used])})"
            )

    def complete(self, request: LLMRequest) -> LLMResponse:
        with self._lock:
            self.calls.append(request)
            if self._used >= len(self._entries):
                raise ScriptError(
                    f"the script has no answer left for a '{request.purpose}' call "
                    f"({self._used} answer{'s were' if self._used != 1 else ' was'} used); "
                    f"last user message: {_last_user_message(request)}"
                )
            step = self._used + 1
            entry = self._entries[self._used]
            expected_purpose = entry.get("purpose")
            if expected_purpose is not None and expected_purpose != request.purpose:
                raise ScriptError(
                    f"script step {step} expected a '{expected_purpose}' call but the runtime made a "
                    f"'{request.purpose}' call; last user message: {_last_user_message(request)}"
                )
            expected_text = entry.get("expect")
            if expected_text is not None and expected_text not in _request_text(request):
                raise ScriptError(
                    f"script step {step} expected the '{request.purpose}' call's messages to contain "
                    f"{expected_text!r}, but they do not; last user message: {_last_user_message(request)}"
                )
            self._used += 1
            if "error" in entry:
                raise LLMError(entry["error"])
            tool_calls = []
            for call in _entry_calls(entry):
                tool_calls.append(
                    ToolCall(id=f"call_{self._next_call_number}", name=call["name"], arguments=call["arguments"])
                )
                self._next_call_number += 1
            reply = entry.get("reply")
            completion_text = (reply or "") + "".join(
                call.name + json.dumps(call.arguments, ensure_ascii=False) for call in tool_calls
            )
            return LLMResponse(
                content=reply,
                tool_calls=tool_calls,
                usage=Usage(
                    prompt_tokens=_estimate_tokens(_request_text(request)),
                    completion_tokens=_estimate_tokens(completion_text),
                ),
                model=self.name,
            )


def load_script(path: str | Path) -> ScriptedProvider:
    """Read a YAML script: a list of answers, or a mapping whose `llm:` key holds that list."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScriptError(f"cannot read script {path}: {exc.strerror or exc}") from exc
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScriptError(f"script {path} is not valid YAML: {exc}") from exc
    if document is None:
        entries: Any = []
    elif isinstance(document, list):
        entries = document
    elif isinstance(document, dict):
        entries = document.get("llm")
        if entries is None:
            entries = []
        elif not isinstance(entries, list):
            raise ScriptError(f"script {path}: 'llm' must be a list of answers, got {type(entries).__name__}")
    else:
        raise ScriptError(
            f"script {path} must be a list of answers or a mapping with an 'llm:' list, got {type(document).__name__}"
        )
    try:
        return ScriptedProvider(entries)
    except ScriptError as exc:
        raise ScriptError(f"script {path}: {exc}") from None


# -- validation ------------------------------------------------------------------------


def _validate_entry(entry: Any, number: int) -> None:
    where = f"script entry {number}"
    if not isinstance(entry, dict):
        raise ScriptError(f"{where} must be a mapping such as {{reply: ...}} or {{call: ..., with: ...}}, got {entry!r}")
    for key in entry:
        if key not in ENTRY_KEYS:
            raise ScriptError(f"{where} has unknown key {key!r}{_suggestion(key, ENTRY_KEYS)}; allowed keys: {', '.join(ENTRY_KEYS)}")
    if not any(key in entry for key in ANSWER_KEYS):
        raise ScriptError(f"{where} has no answer: give 'reply', 'call' (with 'with'), 'calls' or 'error'")
    purpose = entry.get("purpose")
    if purpose is not None and purpose not in PURPOSES:
        raise ScriptError(f"{where} has purpose {purpose!r}{_suggestion(str(purpose), PURPOSES)}; purposes are: {', '.join(PURPOSES)}")
    for text_key in ("expect", "reply", "error"):
        if text_key in entry and not isinstance(entry[text_key], str):
            raise ScriptError(f"{where}: {text_key!r} must be text (quote it in YAML), got {entry[text_key]!r}")
    if "error" in entry and any(key in entry for key in ("reply", "calls", "call", "with")):
        raise ScriptError(f"{where}: 'error' cannot be combined with 'reply', 'call', 'with' or 'calls'")
    if "call" in entry and "calls" in entry:
        raise ScriptError(f"{where}: use either 'call' (one tool call) or 'calls' (a list), not both")
    if "with" in entry and "call" not in entry:
        raise ScriptError(f"{where}: 'with' gives the arguments of 'call', but there is no 'call'")
    if "call" in entry:
        if not isinstance(entry["call"], str) or not entry["call"]:
            raise ScriptError(f"{where}: 'call' must be a tool name, got {entry['call']!r}")
        arguments = entry.get("with", {})
        if arguments is not None and not isinstance(arguments, dict):
            raise ScriptError(f"{where}: 'with' must be a mapping of arguments, got {arguments!r}")
    if "calls" in entry:
        calls = entry["calls"]
        if not isinstance(calls, list) or not calls:
            raise ScriptError(f"{where}: 'calls' must be a non-empty list of {{name, arguments}}, got {calls!r}")
        for index, call in enumerate(calls, start=1):
            call_where = f"{where}, call {index}"
            if not isinstance(call, dict):
                raise ScriptError(f"{call_where} must be a mapping with 'name' and 'arguments', got {call!r}")
            for key in call:
                if key not in CALL_KEYS:
                    raise ScriptError(f"{call_where} has unknown key {key!r}{_suggestion(key, CALL_KEYS)}; allowed keys: name, arguments")
            if not isinstance(call.get("name"), str) or not call["name"]:
                raise ScriptError(f"{call_where} needs a tool 'name'")
            arguments = call.get("arguments", {})
            if arguments is not None and not isinstance(arguments, dict):
                raise ScriptError(f"{call_where}: 'arguments' must be a mapping, got {arguments!r}")


def _suggestion(word: str, candidates: tuple[str, ...]) -> str:
    match = did_you_mean(str(word), candidates)
    return f" (did you mean {match!r}?)" if match else ""


# -- helpers ---------------------------------------------------------------------------


def _entry_calls(entry: dict) -> list[dict[str, Any]]:
    if "call" in entry:
        return [{"name": entry["call"], "arguments": copy.deepcopy(entry.get("with") or {})}]
    return [{"name": call["name"], "arguments": copy.deepcopy(call.get("arguments") or {})} for call in entry.get("calls", [])]


def _describe_entry(entry: dict) -> str:
    purpose = entry.get("purpose")
    kind = f"a '{purpose}' call" if purpose else "any call"
    if "error" in entry:
        return f"{kind} failing with {_quote(entry['error'])}"
    names = [call["name"] for call in _entry_calls(entry)]
    parts = []
    if "reply" in entry:
        parts.append(f"replying {_quote(entry['reply'])}")
    if names:
        parts.append(f"calling {', '.join(names)}")
    return f"{kind} {' and '.join(parts)}"


def _request_text(request: LLMRequest) -> str:
    pieces = []
    for message in request.messages:
        if message.content:
            pieces.append(message.content)
        for call in message.tool_calls:
            pieces.append(call.name + json.dumps(call.arguments, ensure_ascii=False))
    return "\n".join(pieces)


def _last_user_message(request: LLMRequest) -> str:
    for message in reversed(request.messages):
        if message.role == "user" and message.content:
            return _quote(message.content)
    return "(none)"


def _quote(text: str) -> str:
    return repr(clip(text, _QUOTE_LIMIT, "..."))


def _estimate_tokens(text: str) -> int:
    return (len(text) + 3) // 4
