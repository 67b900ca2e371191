"""Server settings and bearer-token authentication: every token is one user."""

from __future__ import annotations

import hashlib
import hmac
import os
from dataclasses import dataclass, field

TOKENS_ENV = "FRONTDESK_API_TOKENS"
STRATEGIES = ("serial", "preemptive")


def user_for_token(token: str) -> str:
    """A stable user id for a token that does not reveal it (sessions record users, never tokens)."""
    return "user-" + hashlib.sha256(token.encode("utf-8")).hexdigest()[:12]


def tokens_from_env(value: str | None = None) -> dict[str, str]:
    """Tokens from `FRONTDESK_API_TOKENS` (comma-separated), each its own user."""
    text = os.environ.get(TOKENS_ENV, "") if value is None else value
    return {t.strip(): user_for_token(t.strip()) for t in text.split(",") if t.strip()}


def tokens_from_file(path: str | os.PathLike) -> dict[str, str]:
    """Tokens from a file: one per line, `name=token` to give its user a name (else a hash names them);
    blank lines and lines starting with # are skipped. ValueError names a line that is not a token."""
    tokens: dict[str, str] = {}
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            name, sep, token = text.partition("=")
            token, name = (token.strip(), name.strip()) if sep else (text, "")
            if not token or any(c.isspace() for c in token):
                raise ValueError(f"{path}:{number}: a line is a token, or name=token")
            tokens[token] = name or user_for_token(token)
    return tokens


@dataclass
class ServerSettings:
    """What a server accepts: its tokens (token -> user id) and its limits."""

    tokens: dict[str, str] = field(default_factory=dict)
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
        if self.strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {self.strategy!r}; use one of {', '.join(STRATEGIES)}")

    @classmethod
    def from_env(cls, **overrides) -> "ServerSettings":
        settings = cls(**overrides)
        if not settings.tokens:
            settings.tokens = tokens_from_env()
        return settings

    def user(self, token: str) -> str | None:
        """The user a presented token belongs to (compared in constant time), or None."""
        found = None
        for known, user in self.tokens.items():
            if hmac.compare_digest(known.encode("utf-8"), token.encode("utf-8")):
                found = user
        return found
