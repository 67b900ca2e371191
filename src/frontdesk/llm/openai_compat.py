"""An LLM provider for any server speaking the OpenAI chat-completions API (OpenAI, Azure, Ollama, vLLM, llama.cpp)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import openai

from frontdesk.llm.base import (ChatMessage, LLMError, LLMRequest, LLMResponse, ToolCall, ToolSchema, Usage,
                                content_text)
from frontdesk.textutil import error_detail, error_text

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


class OpenAICompatibleProvider:
    """Sends LLMRequests to a chat-completions endpoint and turns the answers into LLMResponses."""

    def __init__(
        self,
        base_url: str | None,
        api_key: str | None,
        model: str,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        key_note: str = "",
    ) -> None:
        self.model = model
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.name = f"openai:{model}"
        self.base_url = (base_url or OPENAI_DEFAULT_BASE_URL).rstrip("/")
        # Error messages and traces name the endpoint without any user:password in it.
        self.shown_url = url_without_credentials(self.base_url)
        self._secrets = _secrets_of(self.base_url, api_key)
        self._key_note = key_note  # why the environment's key was not sent, for a 401
        self._client = openai.OpenAI(
            base_url=self.base_url,
            api_key=api_key or PLACEHOLDER_API_KEY,
            timeout=self.timeout,
            max_retries=self.max_retries,
        )

    def __repr__(self) -> str:
        return f"OpenAICompatibleProvider(model={self.model!r}, base_url={self.shown_url!r})"

    def complete(self, request: LLMRequest) -> LLMResponse:
        try:
            return self._complete(request)
        except LLMError as exc:
            raise LLMError(self.redact(str(exc))) from exc.__cause__

    def redact(self, text: str) -> str:
        """`text` with the endpoint's credentials and the API key replaced by ***."""
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def _complete(self, request: LLMRequest) -> LLMResponse:
        arguments = self._request_arguments(request)
        url = self.shown_url
        try:
            completion = self._client.chat.completions.create(**arguments)
        except openai.APITimeoutError as exc:
            limit = arguments.get("timeout", self.timeout)
            raise LLMError(f"LLM request timed out after {limit:g}s ({url})") from exc
        except openai.APIConnectionError as exc:
            raise LLMError(f"cannot connect to LLM server at {url}: {error_detail(exc)}") from exc
        except openai.APIStatusError as exc:
            raise LLMError(self._status_error_message(exc, arguments["model"])) from exc
        except openai.OpenAIError as exc:
            raise LLMError(f"LLM request to {url} failed: {error_detail(exc)}") from exc
        except ValueError as exc:  # e.g. a 200 answer whose body is not JSON
            raise LLMError(f"LLM server at {url} sent an unreadable answer: {error_detail(exc)}") from exc
        try:
            return self._parse_completion(completion, arguments["model"])
        except LLMError:
            raise
        except (ValueError, TypeError, AttributeError) as exc:  # a well-formed JSON answer of the wrong shape
            raise LLMError(f"LLM server at {url} sent an answer of an unexpected shape: {error_detail(exc)}") from exc

    # -- request -------------------------------------------------------------------------

    def _request_arguments(self, request: LLMRequest) -> dict[str, Any]:
        arguments: dict[str, Any] = {
            "model": request.model or self.model,
            "messages": [_message_payload(message) for message in request.messages],
        }
        if request.tools:
            arguments["tools"] = [_tool_payload(tool) for tool in request.tools]
            arguments["tool_choice"] = _tool_choice_payload(request.tool_choice, request.tools)
        if request.temperature is not None:
            arguments["temperature"] = request.temperature
        if request.max_tokens is not None:
            arguments["max_tokens"] = request.max_tokens
        if request.timeout is not None and request.timeout > 0:
            arguments["timeout"] = min(float(request.timeout), self.timeout)
        return arguments

    # -- response ------------------------------------------------------------------------

    def _parse_completion(self, completion: Any, model: str | None = None) -> LLMResponse:
        choices = getattr(completion, "choices", None) or []
        if not choices:
            raise LLMError(f"LLM server at {self.shown_url} answered without any choices")
        message = getattr(choices[0], "message", None)
        if message is None:
            raise LLMError(f"LLM server at {self.shown_url} answered without a message")
        tool_calls = [
            _parse_tool_call(raw_call, index)
            for index, raw_call in enumerate(getattr(message, "tool_calls", None) or [], start=1)
        ]
        usage = getattr(completion, "usage", None)
        return LLMResponse(
            content=content_text(getattr(message, "content", None)),
            tool_calls=tool_calls,
            usage=Usage(
                prompt_tokens=_as_count(getattr(usage, "prompt_tokens", None)),
                completion_tokens=_as_count(getattr(usage, "completion_tokens", None)),
            ),
            model=str(getattr(completion, "model", None) or model or self.model),
        )

    def _status_error_message(self, exc: openai.APIStatusError, model: str | None = None) -> str:
        status = exc.status_code
        detail = _error_detail(exc)
        if status == 401:
            summary = "LLM server rejected the API key" + (f" ({self._key_note})" if self._key_note else "")
        elif status == 403:
            summary = "LLM server refused the request"
        elif status == 404:
            summary = f"LLM server does not know model {model or self.model!r} or the endpoint"
        elif status == 429:
            summary = "LLM server is rate limiting requests"
        elif status >= 500:
            summary = "LLM server failed"
        else:
            summary = "LLM server rejected the request"
        message = f"{summary} (HTTP {status}, {self.shown_url})"
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
    if not name or not isinstance(name, str):
        raise LLMError(f"the model made tool call #{index} without a function name")
    raw_arguments = getattr(function, "arguments", None)
    if raw_arguments is None or (isinstance(raw_arguments, str) and not raw_arguments.strip()):
        arguments: Any = {}
    elif isinstance(raw_arguments, str):
        try:
            arguments = json.loads(raw_arguments)
        except json.JSONDecodeError as exc:
            raise LLMError(
                f"the model called tool {name!r} with arguments that are not valid JSON: {error_text(raw_arguments)}"
            ) from exc
    else:
        arguments = raw_arguments
    if not isinstance(arguments, dict):
        raise LLMError(
            f"the model called tool {name!r} with arguments that are not a JSON object: {error_text(str(raw_arguments))}"
        )
    return ToolCall(id=str(getattr(raw_call, "id", None) or f"call_{index}"), name=name, arguments=arguments)


def _as_count(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


def _error_detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return error_text(inner["message"])
        if isinstance(inner, str):
            return error_text(inner)
    if isinstance(body, str):
        return error_text(body)
    return ""


def provider_from_config(
    config: dict | None = None, env: Mapping[str, str] | None = None
) -> OpenAICompatibleProvider | None:
    """Build a provider from an `llm:` config section and the environment; None when nothing says where to send calls.

    An API key from the environment is the user's: it is sent only to the endpoint the
    environment names (or to OpenAI's when it names none), never to a `base_url` that the
    program's own config chose.
    """
    config = config or {}
    env = os.environ if env is None else env

    def configured(key: str) -> Any:
        value = config.get(key)
        return value if value is not None and value != "" else None

    def from_env(env_vars: tuple[str, ...]) -> str | None:
        return next((env[var] for var in env_vars if env.get(var)), None)

    def setting(key: str, env_vars: tuple[str, ...]) -> Any:
        value = configured(key)
        return value if value is not None else from_env(env_vars)

    env_url = from_env(BASE_URL_ENV_VARS)
    env_key = from_env(API_KEY_ENV_VARS)
    config_url = configured("base_url")
    base_url = config_url if config_url is not None else env_url
    api_key = configured("api_key")
    key_note = ""
    if api_key is None and env_key:
        users_endpoint = env_url or OPENAI_DEFAULT_BASE_URL
        if config_url is None or _same_endpoint(str(config_url), users_endpoint):
            api_key = env_key
        else:
            key_note = ("the API key in the environment is only sent to the endpoint the environment names; "
                        "this program's config.yml chose another base_url, so give that one its own llm.api_key")
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
        key_note=key_note,
    )


def _same_endpoint(first: str, second: str) -> bool:
    return first.strip().rstrip("/").lower() == second.strip().rstrip("/").lower()


def url_without_credentials(url: str) -> str:
    """`url` with any `user:password@` replaced by `***@`."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit((parts.scheme, f"***@{host}", parts.path, parts.query, parts.fragment))


def _secrets_of(base_url: str, api_key: str | None) -> list[str]:
    """The texts no error message may show: the API key and the URL's user and password (longest first)."""
    secrets = [api_key] if api_key else []
    try:
        parts = urlsplit(base_url)
        secrets += [parts.username or "", parts.password or ""]
        if "@" in parts.netloc:
            secrets.append(parts.netloc.rsplit("@", 1)[0])
    except ValueError:
        pass
    return sorted({s for s in secrets if len(s) >= 3}, key=len, reverse=True)


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
