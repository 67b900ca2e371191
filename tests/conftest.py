"""Fixtures shared by several test modules."""

from __future__ import annotations

import pytest


@pytest.fixture
def chat_server():
    """A real local chat-completions server (FakeChatServer of test_llm_openai.py), running for one test."""
    from test_llm_openai import FakeChatServer

    fake = FakeChatServer()
    fake.thread.start()
    yield fake
    fake.stall.set()
    fake.httpd.shutdown()
    fake.httpd.server_close()
    fake.thread.join(timeout=5)
