"""The answer grammar of the local model: JSON schemas compiled by llguidance into token masks.

llguidance's JSON compiler follows JSON itself: strings hold no raw control characters and
only JSON's escapes, numbers and integers are JSON numbers, enums and consts are exact. So
every answer generated under the grammar is one `json.loads` accepts. Nothing here imports
llguidance until a grammar is built.
"""

from __future__ import annotations

import json
from typing import Any

from frontdesk.llm.base import LLMError
from frontdesk.nlu.embeddings import LocalModelMissing

__all__ = ["JSON_OPTIONS", "json_grammar", "new_matcher"]

# Separators as json.dumps writes them (and as earlier answers are shown to the model); no other
# whitespace, so a small model cannot spend its budget on newlines and indentation.
JSON_OPTIONS = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}


def json_grammar(schema: dict[str, Any]) -> str:
    """The llguidance grammar of JSON text matching `schema`; an LLMError when it cannot be built."""
    try:
        from llguidance import LLMatcher
    except ImportError as exc:
        raise LocalModelMissing("llguidance") from exc
    try:
        grammar = LLMatcher.grammar_from_json_schema(json.dumps(schema), defaults=dict(JSON_OPTIONS))
    except (ValueError, TypeError) as exc:
        raise LLMError(f"cannot turn the tool schema into a grammar: {exc}") from exc
    failed, messages = LLMatcher.validate_grammar_with_warnings(grammar)
    if failed:
        raise LLMError(f"cannot turn the tool schema into a grammar: {' '.join(messages)[:200]}")
    return grammar


def new_matcher(tokenizer: Any, grammar: str) -> Any:
    """A fresh llguidance matcher of `grammar` over an LLTokenizer; an LLMError when the grammar is refused."""
    from llguidance import LLMatcher

    matcher = LLMatcher(tokenizer, grammar, log_level=0)
    if matcher.is_error():
        raise LLMError(f"the answer grammar was refused: {matcher.get_error()[:200]}")
    return matcher
