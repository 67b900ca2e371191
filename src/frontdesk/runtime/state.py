"""Session state: plain JSON-serialisable data that a turn reads and writes, nothing else."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

# 2: the session has a user id, a channel and a status instead of an `ended` flag (issue 8).
STATE_VERSION = 2

SessionStatus = Literal["active", "waiting", "escalated", "ended"]


# How much conversation the stored state keeps; everything else lives in the event log.
HISTORY_LIMIT = 200
TRANSCRIPT_STORE_LIMIT = 120


class Frame(BaseModel):
    """One active agent on the call stack."""

    id: str = ""  # unique within the session (`f1`, `f2`, ...)
    agent: str
    kind: Literal["flow", "reasoning", "knowledge", "router"]
    graph: Literal["main", "setup"] = "main"  # which step graph a flow-like frame runs
    node: str | None = None  # next node to execute (flow-like frames)
    started: bool = False
    waiting: bool = False  # waiting for a user message
    returns: list[str | None] = Field(default_factory=list)  # subflow return addresses
    subflow_calls: list[str] = Field(default_factory=list)  # subflow names entered with `call`
    tries: dict[str, int] = Field(default_factory=dict)  # jump node id -> jumps taken
    last_listen: str | None = None
    last_prompt: str | None = None  # what this agent last said, re-said when it resumes
    said_since_start: bool = False
    decisions: dict[str, str] = Field(default_factory=dict)  # branch node id -> chosen case
    decided_by: dict[str, str] = Field(default_factory=dict)  # branch node id -> "embedding" | "llm"
    fallbacks: int = 0  # consecutive fallbacks
    extracted: dict[str, dict[str, Any]] = Field(default_factory=dict)  # listen node id -> args read from its answer
    rejected: dict[str, list[Any]] = Field(default_factory=dict)  # arg -> values the flow asked again for
    messages: list[dict[str, Any]] = Field(default_factory=list)  # reasoning agents' transcript
    suspended: list["Frame"] = Field(default_factory=list)  # routers: members interrupted by a switch
    # a suspended member's own callees (an agent its flow called), bottom first: they go back on the
    # stack above it when it resumes
    called: list["Frame"] = Field(default_factory=list)
    suspended_at: int = 0  # the turn in which this frame was suspended
    offered: bool = False  # a stale suspended frame the user was told they can come back to


class HistoryItem(BaseModel):
    role: Literal["user", "bot"]
    text: str
    agent: str | None = None
    turn: int = 0


class SessionState(BaseModel):
    version: int = STATE_VERSION
    session_id: str
    user_id: str = ""  # who the session is with, when the channel knows (memory is kept per user)
    channel: str = ""  # where the conversation happens: "cli", "http", "test", ...
    # active: a turn is running; waiting: for the user's next message; escalated: handed to a person;
    # ended: nothing more will happen
    status: SessionStatus = "active"
    program: str = ""  # program path as given
    program_digest: str = ""
    turn: int = 0
    event_seq: int = 0
    records: dict[str, dict[str, Any]] = Field(default_factory=dict)
    stack: list[Frame] = Field(default_factory=list)
    history: list[HistoryItem] = Field(default_factory=list)
    next_frame: int = 1  # numbering of frame ids
    tokens: dict[str, int] = Field(default_factory=lambda: {"prompt": 0, "completion": 0, "calls": 0})

    @property
    def ended(self) -> bool:
        return self.status == "ended"

    @ended.setter
    def ended(self, value: bool) -> None:
        self.status = "ended" if value else "active"


def migrate_state(raw: dict[str, Any]) -> dict[str, Any]:
    """A stored session as the current version reads it; a session stored by an earlier version of
    Frontdesk loads after an upgrade. Raises ValueError for a state from a newer version."""
    data = dict(raw)
    version = data.get("version", 1)
    if not isinstance(version, int) or version > STATE_VERSION:
        raise ValueError(f"the session was stored by a newer Frontdesk (state version {version!r})")
    if version < 2:
        # version 1 had an `ended` flag; between turns a session waits for the user
        data["status"] = "ended" if data.pop("ended", False) else "waiting"
        data.setdefault("user_id", "")
        data.setdefault("channel", "")
    data["version"] = STATE_VERSION
    return data


def load_state(raw: dict[str, Any]) -> SessionState:
    return SessionState.model_validate(migrate_state(raw))


Frame.model_rebuild()


def bound_history(state: SessionState) -> None:
    """Keep the stored history and transcripts bounded: a long session costs the same per turn."""
    if len(state.history) > HISTORY_LIMIT:
        del state.history[: len(state.history) - HISTORY_LIMIT]

    def trim(frame: Frame) -> None:
        if len(frame.messages) > TRANSCRIPT_STORE_LIMIT:
            tail = frame.messages[-TRANSCRIPT_STORE_LIMIT:]
            # start at a user message so no tool result loses the call it answers
            start = next((i for i, m in enumerate(tail) if m.get("role") == "user"), 0)
            frame.messages = tail[start:]
        for child in frame.suspended:
            trim(child)

    for frame in state.stack:
        trim(frame)
