"""Session state: plain JSON-serialisable data that a turn reads and writes, nothing else."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

STATE_VERSION = 1


class Frame(BaseModel):
    """One active agent on the call stack."""

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
    pending_input: str | None = None  # a user message delivered but not yet consumed
    decisions: dict[str, str] = Field(default_factory=dict)  # branch node id -> chosen case
    decided_by: dict[str, str] = Field(default_factory=dict)  # branch node id -> "embedding" | "llm"
    fallbacks: int = 0  # consecutive fallbacks
    messages: list[dict[str, Any]] = Field(default_factory=list)  # reasoning agents' transcript
    suspended: list["Frame"] = Field(default_factory=list)  # routers: members interrupted by a switch
    active_member: str | None = None  # routers: the member currently handling the conversation
    excluded: list[str] = Field(default_factory=list)  # routers: members that handed this message back


class HistoryItem(BaseModel):
    role: Literal["user", "bot"]
    text: str
    agent: str | None = None
    turn: int = 0


class SessionState(BaseModel):
    version: int = STATE_VERSION
    session_id: str
    program: str = ""  # program path as given
    program_digest: str = ""
    turn: int = 0
    event_seq: int = 0
    records: dict[str, dict[str, Any]] = Field(default_factory=dict)
    stack: list[Frame] = Field(default_factory=list)
    history: list[HistoryItem] = Field(default_factory=list)
    ended: bool = False
    tokens: dict[str, int] = Field(default_factory=lambda: {"prompt": 0, "completion": 0, "calls": 0})


Frame.model_rebuild()
