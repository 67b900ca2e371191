"""An LLM provider for any server speaking the OpenAI chat-completions API (OpenAI, Azure, Ollama, vLLM, llama.cpp)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

import openai

from frontdesk.llm.base import ChatMessage, LLMError, LLMRequest, LLMResponse, ToolCall, ToolSchema, Usage

DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_RETRIES = 2
# Local servers (Ollama, llama.cpp) accept any key, but the client insists on having one.
PLACEHOLDER_API_KEY = "not-needed"
OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"

# Environment variables consulted when the config does not say, first match wins.
BASE_URL_ENV_VARS = ("FRONTDESK_LLM_BASE_URL", "OPENAI_BASE_URL")
API_KEY_ENV_VARS = ("FRONTDESK_LLM_API_KEY", "OPENAI_API_KEY")
MODEL_ENV_VARS = ("FRONTDESK_LLM_MODEL", "OPENAI_MODEL")
TIMEOUT_ENV_VARS = ("FRONTDESK_LLM_TIMEOUT",)

_FIXED_TOOL_CHOICES = ("auto", "required", "none")
_ERROR_DETAIL_LIMIT = 200


class OpenAICompatibleProvider:
    """Sends LLMRequests to a chat-completions endpoint and turns the answers into LLMResponses."""

    def __init__(
        self,
        base_url: str | None,
        api_key: str | None,
        model: str,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
    ) -> None:
        self.model = model
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.name = f"openai:{model}"
        self.base_url = (base_url or OPENAI_DEFAULT_BASE_URL).rstrip("/")
        self._client = openai.OpenAI(
            base_url=self.base_url,
            api_key=api_key or PLACEHOLDER_API_KEY,
            timeout=self.timeout,
            max_retries=self.max_retries,
        )

    def __repr__(self) -> str:
        return f"OpenAICompatibleProvider(model={self.model!r}, base_url={self.base_url!r})"

    def complete(self, request: LLMRequest) -> LLMResponse:
        arguments = self._request_arguments(request)
        try:
            completion = self._client.chat.completions.create(**arguments)
        except openai.APITimeoutError as exc:
            raise LLMError(f"LLM request timed out after {self.timeout:g}s ({self.base_url})") from exc
        except openai.APIConnectionError as exc:
            raise LLMError(f"cannot connect to LLM server at {self.base_url}: {_short(exc)}") from exc
        except openai.APIStatusError as exc:
            raise LLMError(self._status_error_message(exc)) from exc
        except openai.OpenAIError as exc:
            raise LLMError(f"LLM request to {self.base_url} failed: {_short(exc)}") from exc
        except ValueError as exc:  # e.g. a 200 answer whose body is not JSON
            raise LLMError(f"LLM server at {self.base_url} sent an unreadable answer: {_short(exc)}") from exc
        return self._parse_completion(completion)

    # -- request -------------------------------------------------------------------------

    def _request_arguments(self, request: LLMRequest) -> dict[str, Any]:
        arguments: dict[str, Any] = {
            "model": self.model,
            "messages": [_message_payload(message) for message in request.messages],
        }
        if request.tools:
            arguments["tools"] = [_tool_payload(tool) for tool in request.tools]
            arguments["tool_choice"] = _tool_choice_payload(request.tool_choice, request.tools)
        if request.temperature is not None:
            arguments["temperature"] = request.temperature
        if request.max_tokens is not None:
            arguments["max_tokens"] = request.max_tokens
        return arguments

    # -- response ------------------------------------------------------------------------

    def _parse_completion(self, completion: Any) -> LLMResponse:
        choices = getattr(completion, "choices", None) or []
        if not choices:
            raise LLMError(f"LLM server at {self.base_url} answered without any choices")
        message = getattr(choices[0], "message", None)
        if message is None:
            raise LLMError(f"LLM server at {self.base_url} answered without a message")
        tool_calls = [
            _parse_tool_call(raw_call, index)
            for index, raw_call in enumerate(getattr(message, "tool_calls", None) or [], start=1)
        ]
        usage = getattr(completion, "usage", None)
        return LLMResponse(
            content=getattr(message, "content", None),
            tool_calls=tool_calls,
            usage=Usage(
                prompt_tokens=_as_count(getattr(usage, "prompt_tokens", None)),
                completion_tokens=_as_count(getattr(usage, "completion_tokens", None)),
            ),
            model=getattr(completion, "model", None) or self.model,
        )

    def _status_error_message(self, exc: openai.APIStatusError) -> str:
        status = exc.status_code
        detail = _error_detail(exc)
        if status == 401:
            summary = "LLM server rejected the API key"
        elif status == 403:
            summary = "LLM server refused the request"
        elif status == 404:
            summary = f"LLM server does not know model {self.model!r} or the endpoint"
        elif status == 429:
            summary = "LLM server is rate limiting requests"
        elif status >= 500:
            summary = "LLM server failed"
        else:
            summary = "LLM server rejected the request"
        message = f"{summary} (HTTP {status}, {self.base_url})"
        return f"{message}: {detail}" if detail else message


def _message_payload(message: ChatMessage) -> dict[str, Any]:
    payload: dict[str, Any] = {"role": message.role}
    if message.role == "tool":
        payload["tool_call_id"] = message.tool_call_id or ""
        payload["content"] = message.content or ""
        return payload
    if message.role == "assistant":
        payload["content"] = message.content
        if message.tool_calls:
            payload["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments, ensure_ascii=False)},
                }
                for call in message.tool_calls
            ]
    else:
        payload["content"] = message.content or ""
    if message.name:
        payload["name"] = message.name
    return payload


def _tool_payload(tool: ToolSchema) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name, "parameters": tool.parameters}
    if tool.description:
        function["description"] = tool.description
    return {"type": "function", "function": function}


def _tool_choice_payload(tool_choice: str, tools: list[ToolSchema]) -> Any:
    if tool_choice in _FIXED_TOOL_CHOICES:
        return tool_choice
    offered = [tool.name for tool in tools]
    if tool_choice not in offered:
        raise LLMError(
            f"tool_choice names {tool_choice!r}, which is not among the offered tools ({', '.join(offered)})"
        )
    return {"type": "function", "function": {"name": tool_choice}}


def _parse_tool_call(raw_call: Any, index: int) -> ToolCall:
    function = getattr(raw_call, "function", None)
    name = getattr(function, "name", None)
    if not name:
        raise LLMError(f"the model made tool call #{index} without a function name")
    raw_arguments = getattr(function, "arguments", None)
    if raw_arguments is None or (isinstance(raw_arguments, str) and not raw_arguments.strip()):
        arguments: Any = {}
    elif isinstance(raw_arguments, str):
        try:
            arguments = json.loads(raw_arguments)
        except json.JSONDecodeError as exc:
            raise LLMError(
                f"the model called tool {name!r} with arguments that are not valid JSON: {_clip(raw_arguments)}"
            ) from exc
    else:
        arguments = raw_arguments
    if not isinstance(arguments, dict):
        raise LLMError(
            f"the model called tool {name!r} with arguments that are not a JSON object: {_clip(str(raw_arguments))}"
        )
    return ToolCall(id=getattr(raw_call, "id", None) or f"call_{index}", name=name, arguments=arguments)


def _as_count(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


def _error_detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return _clip(inner["message"])
        if isinstance(inner, str):
            return _clip(inner)
    if isinstance(body, str):
        return _clip(body)
    return ""


def _short(exc: BaseException) -> str:
    return _clip(str(exc) or type(exc).__name__)


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _ERROR_DETAIL_LIMIT else text[: _ERROR_DETAIL_LIMIT - 3] + "..."


def provider_from_config(
    config: dict | None = None, env: Mapping[str, str] | None = None
) -> OpenAICompatibleProvider | None:
    """Build a provider from an `llm:` config section and the environment; None when nothing says where to send calls."""
    config = config or {}
    env = os.environ if env is None else env

    def setting(key: str, env_vars: tuple[str, ...]) -> Any:
        value = config.get(key)
        if value is not None and value != "":
            return value
        for var in env_vars:
            if env.get(var):
                return env[var]
        return None

    base_url = setting("base_url", BASE_URL_ENV_VARS)
    api_key = setting("api_key", API_KEY_ENV_VARS)
    if not base_url and not api_key:
        return None
    model = setting("model", MODEL_ENV_VARS) or DEFAULT_MODEL
    timeout = _positive_number("timeout", setting("timeout", TIMEOUT_ENV_VARS), DEFAULT_TIMEOUT)
    max_retries = config.get("max_retries", DEFAULT_MAX_RETRIES)
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise ValueError(f"llm.max_retries must be a whole number >= 0, got {max_retries!r}")
    return OpenAICompatibleProvider(
        base_url=str(base_url) if base_url else None,
        api_key=str(api_key) if api_key else None,
        model=str(model),
        timeout=timeout,
        max_retries=max_retries,
    )


def _positive_number(key: str, value: Any, default: float) -> float:
    if value is None:
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = -1.0
    if isinstance(value, bool) or not number > 0:
        raise ValueError(f"llm.{key} must be a number of seconds greater than 0, got {value!r}")
    return number
