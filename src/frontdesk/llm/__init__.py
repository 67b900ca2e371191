"""LLM providers: the protocol, an OpenAI-compatible client and a scripted stand-in for tests."""

from frontdesk.llm.base import (
    LLM,
    ChatMessage,
    LLMError,
    LLMRequest,
    LLMResponse,
    Purpose,
    ScriptError,
    ToolCall,
    ToolSchema,
    Usage,
)
from frontdesk.llm.openai_compat import DEFAULT_MODEL, OpenAICompatibleProvider, provider_from_config
from frontdesk.llm.scripted import ScriptedProvider, load_script

__all__ = [
    "DEFAULT_MODEL",
    "LLM",
    "ChatMessage",
    "LLMError",
    "LLMRequest",
    "LLMResponse",
    "OpenAICompatibleProvider",
    "Purpose",
    "ScriptError",
    "ScriptedProvider",
    "ToolCall",
    "ToolSchema",
    "Usage",
    "load_script",
    "provider_from_config",
]
