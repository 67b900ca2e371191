"""The model that errs on purpose (bench/faults.py): each fault changes the ideal answer the way it says,
and reaches the engine through the real HTTP endpoint (an injected HTTP error is an HTTP error)."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import faults  # noqa: E402
import ideal_model  # noqa: E402
from frontdesk.lang.adl import load_adl  # noqa: E402
from frontdesk.llm.base import ChatMessage, LLMError, LLMRequest, ToolSchema  # noqa: E402
from frontdesk.llm.openai_compat import OpenAICompatibleProvider  # noqa: E402


def answer(calls=None, content=None):
    message = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [{"id": f"c{i}", "type": "function",
                                  "function": {"name": n, "arguments": json.dumps(a)}} for i, (n, a) in enumerate(calls)]
    return {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}]}


def args_of(ans, i=0):
    return json.loads(ans["choices"][0]["message"]["tool_calls"][i]["function"]["arguments"])


SCHEMAS = {"route": {"properties": {"agent": {"enum": ["kb", "order", "none"]}}}}


def test_a_wrong_route_names_another_listed_agent():
    ans = answer([("route", {"agent": "kb"})])
    assert faults.apply_fault("wrong_route", ans, SCHEMAS, random.Random(1))
    assert args_of(ans) == {"agent": "order"}


def test_an_invented_argument_is_no_value_the_answer_had_and_a_missing_one_is_gone():
    ans = answer([("find_bestsellers", {"genre": "fantasy"})])
    assert faults.apply_fault("invented_arg", ans, {}, random.Random(1))
    assert args_of(ans)["genre"] != "fantasy"
    ans = answer([("find_bestsellers", {"genre": "fantasy"})])
    assert faults.apply_fault("missing_arg", ans, {}, random.Random(1))
    assert args_of(ans) == {}


def test_bad_json_no_tool_empty_and_unknown_tool():
    ans = answer([("find_bestsellers", {"genre": "fantasy"})])
    assert faults.apply_fault("bad_json", ans, {}, random.Random(1))
    with pytest.raises(ValueError):
        json.loads(ans["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"])
    ans = answer([("find_bestsellers", {"genre": "fantasy"})])
    assert faults.apply_fault("unknown_tool", ans, {}, random.Random(1))
    assert ans["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "lookup_everything"
    ans = answer([("find_bestsellers", {"genre": "fantasy"})])
    assert faults.apply_fault("no_tool", ans, {}, random.Random(1))
    assert "tool_calls" not in ans["choices"][0]["message"] and ans["choices"][0]["message"]["content"]
    ans = answer(content="Hello")
    assert faults.apply_fault("empty", ans, {}, random.Random(1))
    assert ans["choices"][0]["message"]["content"] == ""
    assert not faults.apply_fault("unknown_tool", answer(content="Hi"), {}, random.Random(1))  # nothing to change


def test_an_injected_http_error_reaches_the_client_as_one():
    program, _ = load_adl(ROOT / "examples" / "bookstore")
    model = faults.FaultyModel(program, None, "d", rate=1.0, seed=0, only={"http_500"})
    with ideal_model.IdealModelServer(model) as server:
        provider = OpenAICompatibleProvider(server.base_url, None, "ideal", max_retries=0)
        request = LLMRequest(messages=[ChatMessage(role="user", content="hi")],
                             tools=[ToolSchema(name="route", parameters={"type": "object", "properties": {
                                 "agent": {"type": "string", "enum": ["store_policy_kb", "none"]}}})])
        with pytest.raises(LLMError):
            provider.complete(request)
    assert model.injected == [("route", "http_500")]


def test_an_injected_timeout_answers_only_after_the_client_gave_up():
    program, _ = load_adl(ROOT / "examples" / "bookstore")
    model = faults.FaultyModel(program, None, "d", rate=1.0, seed=0, only={"timeout"})
    with ideal_model.IdealModelServer(model) as server:
        provider = OpenAICompatibleProvider(server.base_url, None, "ideal", timeout=0.3, max_retries=0)
        request = LLMRequest(messages=[ChatMessage(role="user", content="hi")],
                             tools=[ToolSchema(name="route", parameters={"type": "object", "properties": {
                                 "agent": {"type": "string", "enum": ["store_policy_kb", "none"]}}})])
        with pytest.raises(LLMError, match="(?i)time"):
            provider.complete(request)
    assert model.injected == [("route", "timeout")]
    assert faults.TIMEOUT_DELAY > faults.CLIENT_TIMEOUT


class _OnceEmpty(faults.FaultyModel):
    """The ideal model whose first answer of the dialogue comes back empty (then no more faults)."""

    def __init__(self, program, counter, name):
        super().__init__(program, counter, name, rate=1.0, seed=0, only={"empty"})
        self.hits = []

    def complete(self, body):
        answer, record = super().complete(body)
        if self.injected:
            self.hits += self.injected
            self.rate = 0.0
        return answer, record


def test_an_empty_answer_is_asked_for_again_and_the_turn_stays_right():
    import intent_shift
    import yaml

    path = ROOT / "bench" / "intent_shift" / "bs_issue7.yml"
    with ideal_model.IdealModelServer() as server:
        bench = intent_shift.Bench("llm", intent_shift.examples_root(), server, ideal_model.TokenCounter())
        models = []
        bench.model_factory = lambda program, counter, name: models.append(_OnceEmpty(program, counter, name)) \
            or models[-1]
        dialogue = intent_shift.load_dialogue(path, bench.program(yaml.safe_load(path.read_text())["program"]))
        row = bench.run(dialogue)
    assert models[0].hits and models[0].hits[0][1] == "empty"
    assert [t.ok for t in row.turns] == [True] * len(row.turns), [t.problems for t in row.turns if not t.ok]
