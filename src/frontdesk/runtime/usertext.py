"""Which text from outside a session can keep and send back: the one check the HTTP API, `frontdesk chat`
and the engine make on a user's message before a turn starts, and the cleaning of what a model answers."""

from __future__ import annotations

import re
from typing import Any

# A lone surrogate is no Unicode text (a JSON "\ud800" escape, or undecodable bytes read with
# surrogateescape): it cannot be written as UTF-8, so a response or a store that needs UTF-8 fails on it.
# A NUL cannot be kept by PostgreSQL text, C strings or many tools, and is never part of a message.
_UNKEEPABLE = re.compile("[\x00\ud800-\udfff]")


class UnkeepableText(ValueError):
    """Text a session cannot keep and send back (a lone surrogate, a NUL): refused before any turn ran."""


def text_problem(text: str) -> str | None:
    """Why `text` cannot be kept in a session and sent back, in words for whoever sent it; None when it can."""
    found = _UNKEEPABLE.search(text)
    if found is None:
        return None
    where = found.start() + 1
    if found.group() == "\x00":
        return f"it has a NUL character (U+0000) at character {where}, which cannot be stored"
    return (f"it is not valid UTF-8 text (a lone surrogate, U+{ord(found.group()):04X}, or a byte that is not "
            f"UTF-8, at character {where})")


def check_text(text: str, what: str = "the message") -> str:
    """`text` itself when a session can keep it; else UnkeepableText saying why (`what` names it)."""
    problem = text_problem(text)
    if problem is not None:
        raise UnkeepableText(f"{what} cannot be accepted: {problem}")
    return text


def keepable(value: Any) -> Any:
    """`value` with every text in it made keepable: a lone surrogate becomes U+FFFD and a NUL is dropped,
    in strings, dict keys and values, lists and tuples (what a model answered is cleaned like this: it
    cannot be refused, and a bot message or a tool argument with such a character would break the store
    or the response that carries it)."""
    if isinstance(value, str):
        return _UNKEEPABLE.sub(_replacement, value) if _UNKEEPABLE.search(value) else value
    if isinstance(value, dict):
        return {keepable(k): keepable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(keepable(v) for v in value)
    return value


def _replacement(found: re.Match) -> str:
    return "" if found.group() == "\x00" else "\ufffd"
