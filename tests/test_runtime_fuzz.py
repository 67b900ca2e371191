"""Conversations with a model that answers at random (but well-formed): the runtime never crashes, the
agent on top waits for the user after every turn, event numbers increase and the engine reports no
error of its own."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from frontdesk.lang import load_program
from frontdesk.llm.base import LLMError, LLMRequest, LLMResponse, ToolCall
from frontdesk.runtime.answering import KnowledgeCache
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.retrieval.fetch import NoFetcher
from frontdesk.store.memory import MemorySessionStore

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
MESSAGES = ["hi", "I want to order a book", "yes", "no", "mystery please", "what is your return policy?",
            "block my card", "my debit card", "I lost it", "send 50 pounds to Olivia Grant", "now", "",
            "🙂", "Thanks, bye", "asdf qwer", "what can you do?", "The Glass Orbit", "40021873", "12/12/2030"]


class RandomModel:
    """Answers every request with a random but well-formed reply or tool call; sometimes fails."""

    name = "random"

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def _value(self, schema: dict):
        if "enum" in schema:
            return self.rng.choice(schema["enum"])
        kind = schema.get("type")
        if kind == "object":
            return {k: self._value(v) for k, v in (schema.get("properties") or {}).items() if self.rng.random() < 0.7}
        if kind == "integer":
            return self.rng.randint(-3, 2_000_000)
        if kind == "number":
            return self.rng.uniform(-5, 5)
        if kind == "boolean":
            return self.rng.random() < 0.5
        if kind == "array":
            return [self.rng.choice(MESSAGES) for _ in range(self.rng.randint(0, 2))]
        return self.rng.choice(MESSAGES + [None, 3])

    def complete(self, request: LLMRequest) -> LLMResponse:
        roll = self.rng.random()
        if roll < 0.05:
            raise LLMError("random failure")
        tools = {t.name: t for t in request.tools}
        forced = tools.get(request.tool_choice)
        if forced is None and tools and roll < 0.6:
            forced = tools[self.rng.choice(sorted(tools))]
        if forced is not None:
            calls = [ToolCall(id=f"c{self.rng.random()}", name=forced.name,
                              arguments=self._value(forced.parameters) or {})]
            return LLMResponse(content=self.rng.choice([None, "ok"]), tool_calls=calls)
        return LLMResponse(content=self.rng.choice(MESSAGES + ["NO_ANSWER"]))


@pytest.mark.parametrize("example", ["bookstore", "retail_banking"])
@pytest.mark.parametrize("seed", range(6))
def test_random_model_answers_never_crash_the_runtime(example, seed, tmp_path, monkeypatch):
    monkeypatch.setenv("FRONTDESK_EXAMPLE_DB_DIR", str(tmp_path))
    program, _ = load_program(EXAMPLES / example)
    rng = random.Random(seed)
    engine = Engine(program, RandomModel(seed), MemorySessionStore(),
                    knowledge=KnowledgeCache(program, fetcher=NoFetcher()))
    session = engine.start().session_id
    sessions = [session]
    for _ in range(25):
        result = engine.send(session, rng.choice(MESSAGES))
        if result.ended:
            session = engine.start().session_id
            sessions.append(session)
            continue
        # at the end of every turn the agent on top waits for the user's next message
        state = engine.load_state(session)
        assert state.stack and state.stack[-1].waiting, [(f.agent, f.waiting) for f in state.stack]
    for sid in sessions:
        events = engine.store.events(sid)
        numbers = [e["seq"] for e in events]
        assert numbers == sorted(set(numbers)), "event numbers must increase"
        engine_errors = [e for e in events if e["type"] == "error" and e["data"].get("where") == "engine"]
        assert not engine_errors, engine_errors
    state = engine.store.load(session)
    json.dumps(state)  # the state stays plain JSON
