"""Tests for the OpenAI-compatible provider against a real local chat-completions HTTP server."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from frontdesk.llm import (
    LLM,
    ChatMessage,
    LLMError,
    LLMRequest,
    OpenAICompatibleProvider,
    ToolCall,
    ToolSchema,
    provider_from_config,
)

# A behaviour gets (request body, attempt number starting at 1) and returns (status, JSON payload, headers).
Behaviour = Callable[[dict, int], tuple[int, Any, dict[str, str]]]


class FakeChatServer:
    """A tiny chat-completions server that records every request and answers as the test configures."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.behaviour: Behaviour = lambda body, attempt: (200, completion(content="ok"), {})
        self.stall = threading.Event()  # set at teardown so stalled handlers finish at once
        self.stall_seconds = 0.0
        self.in_flight = 0  # requests being answered now, and the most at one time
        self.most_at_once = 0
        self._count = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server naming
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})
                with fake._count:
                    fake.in_flight += 1
                    fake.most_at_once = max(fake.most_at_once, fake.in_flight)
                if fake.stall_seconds:
                    fake.stall.wait(fake.stall_seconds)
                with fake._count:
                    fake.in_flight -= 1
                status, payload, headers = fake.behaviour(body, len(fake.requests))
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
                pass

        class QuietServer(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that timed out closed its socket; nothing to report

        self.httpd = QuietServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def last_body(self) -> dict:
        return self.requests[-1]["body"]


def completion(
    content: str | None = None,
    tool_calls: list[dict] | None = None,
    usage: dict | None = None,
    model: str = "served-model",
) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    payload: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
    }
    if usage is not None:
        payload["usage"] = usage
    return payload


def tool_call(call_id: str, name: str, arguments: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


@pytest.fixture
def server(chat_server):
    return chat_server  # conftest.py's running FakeChatServer


def make_provider(server: FakeChatServer, **options: Any) -> OpenAICompatibleProvider:
    options.setdefault("timeout", 5.0)
    options.setdefault("max_retries", 0)
    return OpenAICompatibleProvider(base_url=server.base_url, api_key="test-key", model="test-model", **options)


def user_request(text: str = "hello", **fields: Any) -> LLMRequest:
    return LLMRequest(messages=[ChatMessage(role="system", content="be brief"), ChatMessage(role="user", content=text)], **fields)


ORDER_TOOL = ToolSchema(
    name="lookup_order",
    description="Find an order by number",
    parameters={"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
)


def test_plain_text_reply_with_usage(server):
    server.behaviour = lambda body, attempt: (
        200,
        completion(content="Hi there!", usage={"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}),
        {},
    )
    provider = make_provider(server)
    response = provider.complete(user_request("hello", max_tokens=50))

    assert response.content == "Hi there!"
    assert response.tool_calls == []
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (12, 3)
    assert response.model == "served-model"
    assert isinstance(provider, LLM)
    assert provider.name == "openai:test-model"

    sent = server.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["authorization"] == "Bearer test-key"
    assert sent["body"]["model"] == "test-model"
    assert sent["body"]["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hello"},
    ]
    assert sent["body"]["temperature"] == 0.0
    assert sent["body"]["max_tokens"] == 50
    assert "tools" not in sent["body"] and "tool_choice" not in sent["body"]


def test_missing_usage_counts_as_zero(server):
    server.behaviour = lambda body, attempt: (200, completion(content="x"), {})
    response = make_provider(server).complete(user_request())
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (0, 0)


def test_tool_call_reply_is_parsed_and_tools_are_sent(server):
    server.behaviour = lambda body, attempt: (
        200,
        completion(tool_calls=[tool_call("call_abc", "lookup_order", '{"order_id": "A-17"}')]),
        {},
    )
    response = make_provider(server).complete(user_request("where is A-17?", tools=[ORDER_TOOL], tool_choice="lookup_order"))

    assert response.content is None
    assert len(response.tool_calls) == 1
    call = response.tool_calls[0]
    assert (call.id, call.name, call.arguments) == ("call_abc", "lookup_order", {"order_id": "A-17"})

    body = server.last_body
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "lookup_order",
                "description": "Find an order by number",
                "parameters": ORDER_TOOL.parameters,
            },
        }
    ]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "lookup_order"}}


@pytest.mark.parametrize("choice", ["auto", "required"])
def test_fixed_tool_choices_are_sent_as_strings(server, choice):
    make_provider(server).complete(user_request(tools=[ORDER_TOOL], tool_choice=choice))
    assert server.last_body["tool_choice"] == choice


def test_tool_choice_naming_an_unoffered_tool_is_an_llm_error(server):
    with pytest.raises(LLMError, match="not among the offered tools"):
        make_provider(server).complete(user_request(tools=[ORDER_TOOL], tool_choice="cancel_order"))
    assert server.requests == []


def test_malformed_tool_arguments_raise_llm_error_naming_the_tool(server):
    server.behaviour = lambda body, attempt: (
        200,
        completion(tool_calls=[tool_call("call_1", "lookup_order", '{"order_id": "A-17"')]),
        {},
    )
    with pytest.raises(LLMError, match="lookup_order.*not valid JSON"):
        make_provider(server).complete(user_request(tools=[ORDER_TOOL]))


def test_non_object_tool_arguments_raise_llm_error(server):
    server.behaviour = lambda body, attempt: (200, completion(tool_calls=[tool_call("call_1", "lookup_order", "[1, 2]")]), {})
    with pytest.raises(LLMError, match="lookup_order.*not a JSON object"):
        make_provider(server).complete(user_request(tools=[ORDER_TOOL]))


def test_empty_tool_arguments_mean_no_arguments_and_missing_ids_are_generated(server):
    server.behaviour = lambda body, attempt: (
        200,
        completion(tool_calls=[{"id": "", "type": "function", "function": {"name": "lookup_order", "arguments": ""}}]),
        {},
    )
    response = make_provider(server).complete(user_request(tools=[ORDER_TOOL]))
    assert response.tool_calls == [ToolCall(id="call_1", name="lookup_order", arguments={})]


def test_server_error_is_retried_then_becomes_llm_error(server):
    # retry-after-ms keeps the client's back-off short
    server.behaviour = lambda body, attempt: (500, {"error": {"message": "model crashed"}}, {"retry-after-ms": "1"})
    provider = make_provider(server, max_retries=2)
    with pytest.raises(LLMError) as caught:
        provider.complete(user_request())
    assert len(server.requests) == 3
    assert "HTTP 500" in str(caught.value) and "model crashed" in str(caught.value)
    assert caught.value.__cause__ is not None


def test_server_error_then_success_recovers(server):
    server.behaviour = lambda body, attempt: (
        (500, {"error": {"message": "busy"}}, {"retry-after-ms": "1"}) if attempt == 1 else (200, completion(content="fine"), {})
    )
    response = make_provider(server, max_retries=1).complete(user_request())
    assert response.content == "fine"
    assert len(server.requests) == 2


def test_rate_limits_are_retried_with_backoff_then_recover(server):
    # 429 with Retry-After is waited out and tried again, as a 5xx is
    server.behaviour = lambda body, attempt: (
        (429, {"error": {"message": "slow down"}}, {"retry-after-ms": "1"}) if attempt <= 2
        else (200, completion(content="after the wait"), {})
    )
    response = make_provider(server, max_retries=3).complete(user_request())
    assert response.content == "after the wait" and len(server.requests) == 3


def test_rate_limits_that_persist_become_an_llm_error(server):
    server.behaviour = lambda body, attempt: (429, {"error": {"message": "quota exceeded"}}, {"retry-after-ms": "1"})
    with pytest.raises(LLMError, match="429") as caught:
        make_provider(server, max_retries=2).complete(user_request())
    assert len(server.requests) == 3 and "quota exceeded" in str(caught.value)


@pytest.mark.parametrize(
    ("status", "expected"),
    [(401, "API key"), (404, "test-model"), (400, "HTTP 400")],
)
def test_client_errors_become_llm_errors(server, status, expected):
    server.behaviour = lambda body, attempt: (status, {"error": {"message": "nope"}}, {})
    with pytest.raises(LLMError, match=expected):
        make_provider(server).complete(user_request())
    assert len(server.requests) == 1


def test_timeout_becomes_llm_error(server):
    server.stall_seconds = 10.0  # released at teardown; the client gives up long before
    provider = make_provider(server, timeout=0.5, max_retries=0)
    with pytest.raises(LLMError, match="timed out after 0.5s") as caught:
        provider.complete(user_request())
    assert server.base_url in str(caught.value)
    assert caught.value.__cause__ is not None


def test_connection_refused_becomes_llm_error():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    provider = OpenAICompatibleProvider(base_url=f"http://127.0.0.1:{port}/v1", api_key=None, model="m", max_retries=0)
    with pytest.raises(LLMError, match="cannot connect"):
        provider.complete(user_request())


def test_non_json_answer_becomes_llm_error(server):
    server.behaviour = lambda body, attempt: (200, "<html>not an API</html>", {})
    with pytest.raises(LLMError):
        make_provider(server).complete(user_request())


def test_tool_results_round_trip_in_messages(server):
    request = LLMRequest(
        purpose="reason",
        messages=[
            ChatMessage(role="user", content="where is A-17?"),
            ChatMessage(
                role="assistant",
                content=None,
                tool_calls=[ToolCall(id="call_7", name="lookup_order", arguments={"order_id": "A-17"})],
            ),
            ChatMessage(role="tool", tool_call_id="call_7", content='{"status": "shipped"}'),
        ],
        tools=[ORDER_TOOL],
    )
    server.behaviour = lambda body, attempt: (200, completion(content="It has shipped."), {})
    response = make_provider(server).complete(request)

    assert response.content == "It has shipped."
    sent = server.last_body["messages"]
    assert sent[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_7", "type": "function", "function": {"name": "lookup_order", "arguments": '{"order_id": "A-17"}'}}
        ],
    }
    assert sent[2] == {"role": "tool", "tool_call_id": "call_7", "content": '{"status": "shipped"}'}


# -- provider_from_config ----------------------------------------------------------------


def test_no_base_url_and_no_key_means_no_provider():
    assert provider_from_config({}, env={}) is None
    assert provider_from_config(None, env={"FRONTDESK_LLM_MODEL": "x"}) is None


def test_config_wins_over_environment():
    provider = provider_from_config(
        {"base_url": "http://localhost:11434/v1", "model": "llama3", "timeout": 7},
        env={"FRONTDESK_LLM_BASE_URL": "http://elsewhere/v1", "OPENAI_API_KEY": "sk-env"},
    )
    assert provider is not None
    assert provider.base_url == "http://localhost:11434/v1"
    assert provider.model == "llama3" and provider.name == "openai:llama3"
    assert provider.timeout == 7.0
    assert provider._client.api_key == "not-needed"  # the user's key never goes to the program's endpoint


def test_frontdesk_environment_wins_over_openai_environment():
    provider = provider_from_config(
        None,
        env={
            "FRONTDESK_LLM_BASE_URL": "http://fd/v1",
            "OPENAI_BASE_URL": "http://oa/v1",
            "OPENAI_MODEL": "oa-model",
        },
    )
    assert provider is not None
    assert provider.base_url == "http://fd/v1"
    assert provider.model == "oa-model"


def test_base_url_without_key_uses_placeholder_key_and_default_model():
    provider = provider_from_config({"base_url": "http://localhost:8080/v1"}, env={})
    assert provider is not None
    assert provider._client.api_key == "not-needed"
    assert provider.model == "gpt-4o-mini"


def test_key_without_base_url_targets_openai():
    provider = provider_from_config({"api_key": "sk-1"}, env={})
    assert provider is not None
    assert provider.base_url == "https://api.openai.com/v1"


@pytest.mark.parametrize("timeout", ["soon", 0, -1])
def test_bad_timeout_is_rejected(timeout):
    with pytest.raises(ValueError, match="llm.timeout"):
        provider_from_config({"base_url": "http://x/v1", "timeout": timeout}, env={})
