"""The LLM provider protocol and the request/response data every provider speaks."""

from __future__ import annotations

import json
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field, field_validator

# What an LLM call is for; traces, scripts and descriptions (ACDL) are keyed on it.
Purpose = Literal["route", "understand", "reason", "kb_answer", "extract", "fallback", "other", "summarize"]


class ToolCall(BaseModel):
    id: str = ""
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ChatMessage(BaseModel):
    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    name: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None


def message_record(message: ChatMessage) -> dict[str, Any]:
    """A message as traces keep it: what `model_dump(exclude_none=True, exclude_defaults=True)` gives,
    built directly (every LLM call records its whole prompt, so this is on every turn's path)."""
    out: dict[str, Any] = {"role": message.role}
    if message.content is not None:
        out["content"] = message.content
    if message.name is not None:
        out["name"] = message.name
    if message.tool_calls:
        calls = []
        for call in message.tool_calls:
            record: dict[str, Any] = {"name": call.name}
            if call.id:
                record = {"id": call.id, "name": call.name}
            if call.arguments:
                record["arguments"] = call.arguments
            calls.append(record)
        out["tool_calls"] = calls
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    return out


class ToolSchema(BaseModel):
    """A function the model may call; `parameters` is a JSON schema object."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class LLMRequest(BaseModel):
    purpose: Purpose = "other"
    messages: list[ChatMessage]
    tools: list[ToolSchema] = Field(default_factory=list)
    # "auto": the model may answer in text or call tools; "required": it must call one;
    # a tool name: it must call that tool.
    tool_choice: str = "auto"
    temperature: float | None = 0.0
    max_tokens: int | None = None
    # Another model than the provider's own for this call (ABL 3.15: the pipeline's classifier model),
    # and a shorter time limit in seconds; providers that serve one model ignore `model`.
    model: str | None = None
    timeout: float | None = None
    # Which prompt plan built the messages and the ACDL elements of each (for traces and verify).
    plan: str = ""
    structure: list[dict[str, Any]] = Field(default_factory=list)


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class LLMResponse(BaseModel):
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    model: str = ""

    @field_validator("content", mode="before")
    @classmethod
    def _content_as_text(cls, value: Any) -> str | None:
        return content_text(value)


def content_text(value: Any) -> str | None:
    """A model's reply content as text, whatever a server sent: a list of content parts becomes their
    text joined, a number or an object its JSON text; None stays None."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates from a JSON escape
            return value.encode("utf-8", errors="replace").decode("utf-8")
        return value
    if isinstance(value, list) and all(isinstance(part, dict) for part in value):
        texts = [part.get("text") for part in value]
        if all(isinstance(text, str) for text in texts):
            return "".join(texts)  # type: ignore[arg-type]
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


class LLMError(Exception):
    """A model call failed (network, timeout, HTTP error, unusable answer).

    The runtime turns it into the program's error handling; it never reaches the user as a traceback.
    """


class ScriptError(Exception):
    """A scripted conversation went off its script: a test or replay bug, reported loudly."""


@runtime_checkable
class LLM(Protocol):
    name: str

    def complete(self, request: LLMRequest) -> LLMResponse: ...
