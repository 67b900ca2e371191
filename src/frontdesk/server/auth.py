"""Server settings and bearer-token authentication: every token is one user, and some users are operators.

An operator token (FRONTDESK_OPERATOR_TOKENS, or an `operator:` line in a tokens file) may also do
what changes the server for everyone, such as reloading a program; an ordinary token may only talk
to the programs in its own sessions (docs/security.md)."""

from __future__ import annotations

import hashlib
import hmac
import os
from dataclasses import dataclass, field

TOKENS_ENV = "FRONTDESK_API_TOKENS"
OPERATOR_TOKENS_ENV = "FRONTDESK_OPERATOR_TOKENS"
OPERATOR_MARK = "operator:"
STRATEGIES = ("serial", "preemptive")


def user_for_token(token: str) -> str:
    """A stable user id for a token that does not reveal it (sessions record users, never tokens)."""
    return "user-" + hashlib.sha256(token.encode("utf-8")).hexdigest()[:12]


def tokens_from_env(value: str | None = None) -> dict[str, str]:
    """Tokens from `FRONTDESK_API_TOKENS` (comma-separated), each its own user."""
    text = os.environ.get(TOKENS_ENV, "") if value is None else value
    return {t.strip(): user_for_token(t.strip()) for t in text.split(",") if t.strip()}


def operator_tokens_from_env(value: str | None = None) -> dict[str, str]:
    """Operator tokens from `FRONTDESK_OPERATOR_TOKENS` (comma-separated), each its own user."""
    text = os.environ.get(OPERATOR_TOKENS_ENV, "") if value is None else value
    return tokens_from_env(text)


def read_tokens_file(path: str | os.PathLike) -> tuple[dict[str, str], set[str]]:
    """Tokens from a file, and which of them are operators': one per line, `name=token` to give its user
    a name (else a hash names them), `operator:` before either for an operator; blank lines and lines
    starting with # are skipped. ValueError names a line that is not a token."""
    tokens: dict[str, str] = {}
    operators: set[str] = set()
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            operator = text.startswith(OPERATOR_MARK)
            if operator:
                text = text[len(OPERATOR_MARK):].strip()
            name, sep, token = text.partition("=")
            token, name = (token.strip(), name.strip()) if sep else (text, "")
            if not token or any(c.isspace() for c in token):
                raise ValueError(f"{path}:{number}: a line is a token, name=token, or either after operator:")
            tokens[token] = name or user_for_token(token)
            if operator:
                operators.add(token)
    return tokens, operators


def tokens_from_file(path: str | os.PathLike) -> dict[str, str]:
    """Every token of a tokens file (operators' too) with its user (see read_tokens_file)."""
    return read_tokens_file(path)[0]


@dataclass
class ServerSettings:
    """What a server accepts: its tokens (token -> user id), which of them are operators', and its limits."""

    tokens: dict[str, str] = field(default_factory=dict)
    operators: set[str] = field(default_factory=set)  # tokens with the operator role (also in `tokens`)
    max_message_chars: int = 4000  # longer messages get 413
    max_turns: int = 500  # a session that reached this many turns takes no more messages (409)
    recent_message_ids: int = 64  # client message ids remembered per session for idempotent retries
    # serial: one session's messages run one after another, each answered; preemptive: a message that
    # arrives while the session's turn runs supersedes it (until a tool has run), and is answered instead
    strategy: str = "serial"
    # the orchestration strategy every router runs (runtime/orchestration.py); None: each program's own
    orchestration: str | None = None
    inactivity_tick: float = 1.0  # seconds between runs of the inactivity timer (0: no timer)
    expire_idle_after: float = 0.0  # delete sessions idle this many seconds (0: keep them)
    follow_poll: float = 0.5  # seconds between looks at the store for turns other processes ran
    lock_timeout: float = 30.0  # seconds a message waits for the session's turn in progress (then 409)

    def __post_init__(self) -> None:
        for token in self.operators:  # an operator is a user too
            self.tokens.setdefault(token, user_for_token(token))
        if self.strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {self.strategy!r}; use one of {', '.join(STRATEGIES)}")

    @classmethod
    def from_env(cls, **overrides) -> "ServerSettings":
        settings = cls(**overrides)
        if not settings.tokens:
            settings.tokens = tokens_from_env()
            operators = operator_tokens_from_env()
            settings.tokens.update(operators)
            settings.operators |= set(operators)
        return settings

    def user(self, token: str) -> str | None:
        """The user a presented token belongs to (compared in constant time), or None."""
        found = None
        for known, user in self.tokens.items():
            if hmac.compare_digest(known.encode("utf-8"), token.encode("utf-8")):
                found = user
        return found

    def is_operator(self, token: str) -> bool:
        """Whether a presented token has the operator role (compared in constant time)."""
        found = False
        for known in self.operators:
            if hmac.compare_digest(known.encode("utf-8"), token.encode("utf-8")):
                found = True
        return found
