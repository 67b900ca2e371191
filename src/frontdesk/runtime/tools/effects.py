"""Whether a tool may change something for the customer (place an order, move money, block a card): such a
tool never runs without a model and a person (runtime/offline_tools.py), a reasoning agent's model reads
the user's words strictly for its arguments (runtime/grounding.py), and the benchmarks count it as a side
effect."""

from __future__ import annotations

import re

# Undeclared (ADL tools declare nothing): a tool whose name starts with one of these changes something.
_CHANGING = {"add", "append", "assign", "block", "book", "buy", "cancel", "change", "charge", "close", "create",
             "delete", "deposit", "disable", "enable", "escalate", "file", "freeze", "insert", "issue", "lock",
             "make", "modify", "open", "pay", "place", "post", "process", "purchase", "put", "record", "refund",
             "register", "remove", "renew", "replace", "reserve", "reset", "save", "schedule", "send", "set",
             "submit", "transfer", "unblock", "unlock", "update", "upsert", "withdraw", "write"}
_PREFIXES = {"action", "actions", "tool", "tools", "api", "fn", "func", "function", "cmd", "command", "do", "run",
             "exec", "execute", "op", "task", "utter"}


def changes_something(tdef) -> bool:
    """Whether running the tool may change something (then it never runs without a model and a person)."""
    conf = tdef.confirmation
    if conf is not None:
        return bool(conf.side_effects) or conf.require == "always"
    # its verb: the first word of its name, after a prefix that names no action ("action_remove_payee"
    # changes something as "remove_payee" does; "query_book_genre" does not)
    words = [w for w in re.split(r"[_\W]+", tdef.name.lower()) if w] if tdef.name else []
    while len(words) > 1 and words[0] in _PREFIXES:
        words = words[1:]
    return bool(words) and words[0] in _CHANGING

