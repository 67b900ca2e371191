"""The OpenAI-compatible client against hostile configs and servers: whose key goes where, secrets in errors, odd replies."""

from __future__ import annotations

import json
import socket

import pytest

from frontdesk.llm import LLMError, provider_from_config
from frontdesk.llm.base import LLMResponse

from test_llm_openai import FakeChatServer, completion, make_provider, server, user_request  # noqa: F401 - fixture


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_users_env_key_is_not_sent_to_a_base_url_from_the_programs_config(server):
    provider = provider_from_config({"base_url": server.base_url, "max_retries": 0},
                                    env={"OPENAI_API_KEY": "sk-user-secret"})
    provider.complete(user_request())
    assert server.requests[-1]["headers"]["authorization"] == "Bearer not-needed"


def test_the_users_env_key_goes_to_the_endpoint_the_env_names(server):
    provider = provider_from_config({"max_retries": 0},
                                    env={"FRONTDESK_LLM_BASE_URL": server.base_url,
                                         "FRONTDESK_LLM_API_KEY": "sk-user-secret"})
    provider.complete(user_request())
    assert server.requests[-1]["headers"]["authorization"] == "Bearer sk-user-secret"
    # also when the program's config names that same endpoint
    same = provider_from_config({"base_url": server.base_url + "/", "max_retries": 0},
                                env={"FRONTDESK_LLM_BASE_URL": server.base_url,
                                     "FRONTDESK_LLM_API_KEY": "sk-user-secret"})
    same.complete(user_request())
    assert server.requests[-1]["headers"]["authorization"] == "Bearer sk-user-secret"


def test_the_configs_own_key_goes_to_the_configs_endpoint(server):
    provider = provider_from_config({"base_url": server.base_url, "api_key": "sk-program", "max_retries": 0},
                                    env={"OPENAI_API_KEY": "sk-user-secret"})
    provider.complete(user_request())
    assert server.requests[-1]["headers"]["authorization"] == "Bearer sk-program"


def test_a_401_says_why_the_env_key_was_not_sent(server):
    server.behaviour = lambda body, attempt: (401, {"error": {"message": "bad key"}}, {})
    provider = provider_from_config({"base_url": server.base_url, "max_retries": 0},
                                    env={"OPENAI_API_KEY": "sk-user-secret"})
    with pytest.raises(LLMError, match="only sent to the endpoint the environment names"):
        provider.complete(user_request())


def test_credentials_in_the_base_url_never_reach_an_error_message(server):
    host = server.base_url.split("//", 1)[1]
    server.behaviour = lambda body, attempt: (
        500, {"error": {"message": "upstream said: user alice:s3cr3t-pw with key sk-abc-123 failed"}}, {})
    provider = provider_from_config({"base_url": f"http://alice:s3cr3t-pw@{host}", "api_key": "sk-abc-123",
                                     "max_retries": 0, "timeout": 5}, env={})
    with pytest.raises(LLMError) as caught:
        provider.complete(user_request())
    message = str(caught.value)
    assert "s3cr3t-pw" not in message and "sk-abc-123" not in message and "alice" not in message
    assert "***@127.0.0.1" in message
    assert "s3cr3t-pw" not in repr(provider)
    closed = provider_from_config({"base_url": f"http://alice:s3cr3t-pw@127.0.0.1:{free_port()}/v1",
                                   "max_retries": 0, "timeout": 2}, env={})
    with pytest.raises(LLMError) as refused:
        closed.complete(user_request())
    assert "s3cr3t-pw" not in str(refused.value) and "cannot connect" in str(refused.value)


@pytest.mark.parametrize("content, text", [
    (42, "42"),
    (3.5, "3.5"),
    (True, "true"),
    ({"answer": "yes"}, '{"answer": "yes"}'),
    (["a", 1], '["a", 1]'),
    ([{"type": "text", "text": "Hello "}, {"type": "text", "text": "there"}], "Hello there"),
])
def test_a_reply_whose_content_is_not_text_becomes_text(server, content, text):
    server.behaviour = lambda body, attempt: (200, completion(content=content), {})
    response = make_provider(server).complete(user_request())
    assert response.content == text


def test_a_reply_of_the_wrong_shape_is_an_llm_error(server):
    server.behaviour = lambda body, attempt: (200, {"choices": [{"message": {
        "content": None, "tool_calls": [{"id": 7, "type": "function", "function": {"name": 12, "arguments": "{}"}}]}}]}, {})
    with pytest.raises(LLMError, match="without a function name"):
        make_provider(server).complete(user_request())


def test_response_content_is_always_text_or_none():
    assert LLMResponse(content=7).content == "7"
    assert LLMResponse(content=None).content is None
    assert LLMResponse(content="lone \ud800").content == "lone ?"
    json.dumps(LLMResponse(content={"a": object()}).model_dump())


def test_a_server_that_echoes_the_authorization_header_never_gets_the_key_into_errors_or_events(server, tmp_path):
    """Issue 8: a 401 whose body repeats the Authorization header put the key into the stored llm_call
    event and stderr."""
    from frontdesk.lang import load_program
    from frontdesk.runtime.engine import Engine
    from frontdesk.store.memory import MemorySessionStore

    def echo(body, attempt):
        auth = server.requests[-1]["headers"].get("authorization", "")
        return 401, {"error": {"message": f"invalid credentials: {auth} (key {auth.split()[-1]})"}}, {}

    server.behaviour = echo
    provider = provider_from_config({"max_retries": 0, "timeout": 5},
                                    env={"FRONTDESK_LLM_BASE_URL": server.base_url,
                                         "FRONTDESK_LLM_API_KEY": "sk-live-7f3a9c2e"})
    with pytest.raises(LLMError) as caught:
        provider.complete(user_request())
    assert "sk-live-7f3a9c2e" not in str(caught.value) and "***" in str(caught.value)
    (tmp_path / "agents.yml").write_text(
        "main:\n  type: llm agent\n  description: Talks.\n  prompt: Talk to the user.\n", encoding="utf-8")
    program, _ = load_program(tmp_path)
    store = MemorySessionStore()
    engine = Engine(program, provider, store)
    sid = engine.start().session_id
    engine.send(sid, "hello")
    assert "sk-live-7f3a9c2e" not in json.dumps(store.events(sid)) + json.dumps(store.load(sid))
