"""Session state: plain JSON-serialisable data that a turn reads and writes, nothing else."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, model_validator

# 2: the session has a user id, a channel and a status instead of an `ended` flag (issue 8).
# 3: frames carry typed per-executor data and a parent; suspended agents live in a threads table
#    instead of inside their router (issue 8).
STATE_VERSION = 3

SessionStatus = Literal["active", "waiting", "escalated", "ended"]
FrameStatus = Literal["new", "running", "waiting", "done"]


# How much conversation the stored state keeps; everything else lives in the event log.
HISTORY_LIMIT = 200
TRANSCRIPT_STORE_LIMIT = 120
# Suspended threads a session keeps at most; the oldest is dropped (with an event) beyond that.
THREAD_LIMIT = 16
# state.system: agent -> {field: value} its last activation ended with (runtime/flow.py, handoff.py)
GATHERED_BEFORE = "_gathered_before"


class FlowData(BaseModel):
    """Where a step graph (a flow agent, or an agent's setup steps) stands."""

    kind: Literal["flow"] = "flow"
    node: str | None = None  # next node to execute
    returns: list[str | None] = Field(default_factory=list)  # subflow return addresses
    subflow_calls: list[str] = Field(default_factory=list)  # subflow names entered with `call`
    tries: dict[str, int] = Field(default_factory=dict)  # jump node id -> jumps taken
    last_listen: str | None = None
    last_say: str | None = None  # the `say` node that asked the question being waited on
    tool_spoke: bool = False  # a tool the flow called spoke after that `say` (its words are the question)
    step: str | None = None  # the named step (an ABL FLOW step, an ADL label) it is in
    decisions: dict[str, str] = Field(default_factory=dict)  # branch node id -> chosen case
    decided_by: dict[str, str] = Field(default_factory=dict)  # branch node id -> "embedding" | "llm"
    fallbacks: int = 0  # consecutive fallbacks
    extracted: dict[str, dict[str, Any]] = Field(default_factory=dict)  # listen node id -> args read from its answer
    rejected: dict[str, list[Any]] = Field(default_factory=dict)  # arg -> values the flow asked again for


class ReasoningData(BaseModel):
    """A reasoning agent's transcript and, while a child agent it delegated to runs, where its loop stopped."""

    kind: Literal["reasoning"] = "reasoning"
    messages: list[dict[str, Any]] = Field(default_factory=list)
    # tool calls of the model's last answer not run yet (the loop stopped at a delegation)
    pending: list[dict[str, Any]] = Field(default_factory=list)
    awaiting: str | None = None  # id of the tool call a delegated agent answers
    awaiting_tool: str = ""  # and the name of that tool
    iterations: int = 0  # model calls in the current run of the loop
    refused_finish: bool = False
    # the model's answer being acted on: its words, and the finish / hand_back it asked for
    answer: dict[str, Any] = Field(default_factory=dict)
    # context compaction: the first `compacted` messages are not sent any more; `summary` stands for
    # them (the transcript itself is kept whole)
    summary: str = ""
    compacted: int = 0
    # a fan_out call being run one task at a time: only sessions stored by the version before
    # runtime/fanout.py (which runs a fan_out within one turn) have it; kept so they can finish
    fan_out: dict[str, Any] = Field(default_factory=dict)


class RouterData(BaseModel):
    """A router's pending decisions and the threads of members it interrupted, oldest first."""

    kind: Literal["router"] = "router"
    decisions: dict[str, str] = Field(default_factory=dict)  # "route" -> member, "clarify" -> "a|b"
    suspended: list[str] = Field(default_factory=list)  # thread ids


class KnowledgeData(BaseModel):
    kind: Literal["knowledge"] = "knowledge"


class RemoteData(BaseModel):
    """A remote agent's conversation with its service: the CONTEXT the first request carries."""

    kind: Literal["remote"] = "remote"
    context: dict[str, Any] = Field(default_factory=dict)


FrameData = Annotated[FlowData | ReasoningData | RouterData | KnowledgeData | RemoteData, Field(discriminator="kind")]
DATA_OF = {"flow": FlowData, "reasoning": ReasoningData, "router": RouterData, "knowledge": KnowledgeData,
           "remote": RemoteData}


class Frame(BaseModel):
    """One running agent: its id, the frame that started it, its status and its executor's data."""

    id: str = ""  # unique within the session (`f1`, `f2`, ...)
    agent: str
    kind: Literal["flow", "reasoning", "knowledge", "router", "remote"]  # the executor that runs it
    graph: Literal["main", "setup"] = "main"  # which step graph a flow-like frame runs
    parent: str | None = None  # id of the frame that started it (None: the session did)
    status: FrameStatus = "new"
    last_prompt: str | None = None  # what this agent last said, re-said when it resumes
    said_since_start: bool = False
    reask: bool = False  # it was resumed unasked: it asks its question again when it next runs
    locals: dict[str, Any] = Field(default_factory=dict)  # values only this run of the agent sees
    data: FrameData = Field(default_factory=FlowData)

    @model_validator(mode="after")
    def _data_fits_kind(self) -> Frame:
        if self.data.kind != self.kind:
            self.data = DATA_OF[self.kind]()
        return self

    @property
    def started(self) -> bool:
        return self.status != "new"

    @started.setter
    def started(self, value: bool) -> None:
        if value and self.status == "new":
            self.status = "running"
        elif not value:
            self.status = "new"

    @property
    def waiting(self) -> bool:
        """Waiting for the user's next message."""
        return self.status == "waiting"

    @waiting.setter
    def waiting(self, value: bool) -> None:
        if value:
            self.status = "waiting"
        elif self.status == "waiting":
            self.status = "running"


class Thread(BaseModel):
    """A conversation thread taken off the stack: an interrupted member with the agents it had called
    above it (bottom first), kept whole to be resumed later with its data and transcript intact."""

    id: str
    frames: list[Frame]
    status: Literal["suspended", "done"] = "suspended"
    # why it was taken off: the user turned to another agent (switch), its agent gave the message
    # back (hand_back), or it handed the conversation to another agent and waits for it (handoff)
    reason: Literal["switch", "hand_back", "handoff"] = "switch"
    owner: str | None = None  # the router frame that resumes it
    resume_after: str | None = None  # handoff: the frame whose end brings it back
    suspended_at: int = 0  # the turn in which it was suspended
    offered: bool = False  # stale, and the user was told they can come back to it

    @property
    def base(self) -> Frame:
        return self.frames[0]

    @property
    def top(self) -> Frame:
        return self.frames[-1]

    def agents(self) -> list[str]:
        return [f.agent for f in self.frames]


class ResultRecord(BaseModel):
    """What a tool, agent or subflow last returned: its status, its message and its values."""

    status: str | None = None  # success | error; None: running, or never run
    message: str | None = None
    values: dict[str, Any] = Field(default_factory=dict)


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
    # session variables, by namespace (an ADL agent's arguments live under the agent's name)
    variables: dict[str, dict[str, Any]] = Field(default_factory=dict)
    # what each tool, agent and subflow (`agent/subflow`) last returned
    results: dict[str, ResultRecord] = Field(default_factory=dict)
    stack: list[Frame] = Field(default_factory=list)  # the active thread's frames, bottom first
    threads: dict[str, Thread] = Field(default_factory=dict)  # suspended threads by id
    history: list[HistoryItem] = Field(default_factory=list)
    next_frame: int = 1  # numbering of frame ids
    next_thread: int = 1  # numbering of thread ids
    tokens: dict[str, int] = Field(default_factory=lambda: {"prompt": 0, "completion": 0, "calls": 0})
    # system variables the runtime sets (ABL 8.8): all_fields_gathered, tool_failures, match,
    # _validation_retries, _clarification_count, ...; read through Ref space "system"
    system: dict[str, Any] = Field(default_factory=dict)

    @property
    def ended(self) -> bool:
        return self.status == "ended"

    @ended.setter
    def ended(self, value: bool) -> None:
        self.status = "ended" if value else "active"


def migrate_state(raw: dict[str, Any], tools: Iterable[str] = ()) -> dict[str, Any]:
    """A stored session as the current version reads it; a session stored by an earlier version of
    Frontdesk loads after an upgrade. `tools` names the program's tools (their records became
    results). Raises ValueError for a state from a newer version."""
    data = dict(raw)
    version = data.get("version", 1)
    if not isinstance(version, int) or version > STATE_VERSION:
        raise ValueError(f"the session was stored by a newer Frontdesk (state version {version!r})")
    if version < 2:
        # version 1 had an `ended` flag; between turns a session waits for the user
        data["status"] = "ended" if data.pop("ended", False) else "waiting"
        data.setdefault("user_id", "")
        data.setdefault("channel", "")
    if version < 3:
        _migrate_frames_v2(data)
        _migrate_records_v2(data, set(tools))
    data["version"] = STATE_VERSION
    return data


def _migrate_records_v2(data: dict[str, Any], tools: set[str]) -> None:
    """Version 2 kept one record per agent, tool and subflow: values, with the last status and
    message under `__status` / `__message` (and a tool's message also under `message`)."""
    variables: dict[str, dict[str, Any]] = {}
    results: dict[str, dict[str, Any]] = {}
    for scope, record in (data.pop("records", None) or {}).items():
        record = dict(record)
        status, message = record.pop("__status", None), record.pop("__message", None)
        if scope in tools:
            record.pop("message", None)
            results[scope] = {"status": status, "message": message, "values": record}
            continue
        if status is not None or message is not None:
            results[scope] = {"status": status, "message": message}
        if record:
            variables[scope] = record
    data["variables"] = variables
    data["results"] = results


_FLOW_FIELDS = ("node", "returns", "subflow_calls", "tries", "last_listen", "decisions", "decided_by",
                "fallbacks", "extracted", "rejected")


def _migrate_frames_v2(data: dict[str, Any]) -> None:
    """Version 2 frames kept every executor's fields flat, and a router kept the members it had
    interrupted (`suspended`, each with the agents it had `called`) inside itself."""
    counter = {"frame": int(data.get("next_frame", 1) or 1), "thread": 1}
    threads: dict[str, Any] = {}

    def convert(old: dict[str, Any], parent: str | None) -> dict[str, Any]:
        old = dict(old)
        if not old.get("id"):
            old["id"] = f"f{counter['frame']}"
            counter["frame"] += 1
        kind = old.get("kind", "flow")
        started, waiting = old.pop("started", False), old.pop("waiting", False)
        frame: dict[str, Any] = {
            "id": old["id"], "agent": old["agent"], "kind": kind, "graph": old.get("graph", "main"),
            "parent": parent, "status": "waiting" if waiting else ("running" if started else "new"),
            "last_prompt": old.get("last_prompt"), "said_since_start": old.get("said_since_start", False),
        }
        if kind == "flow":
            frame["data"] = {"kind": "flow", **{k: old[k] for k in _FLOW_FIELDS if k in old}}
            # a subflow's result was kept as `agent/subflow`; its name is now the record's key
            frame["data"]["subflow_calls"] = [f"{old['agent']}/{n}" for n in old.get("subflow_calls", [])]
        elif kind == "reasoning":
            frame["data"] = {"kind": "reasoning", "messages": old.get("messages", [])}
        elif kind == "router":
            ids = []
            for paused in old.get("suspended", []):
                chain = [convert(paused, old["id"])]
                for called in paused.get("called", []):
                    chain.append(convert(called, chain[-1]["id"]))
                tid = f"t{counter['thread']}"
                counter["thread"] += 1
                threads[tid] = {"id": tid, "frames": chain, "owner": old["id"],
                                "suspended_at": paused.get("suspended_at", 0),
                                "offered": paused.get("offered", False)}
                ids.append(tid)
            frame["data"] = {"kind": "router", "decisions": old.get("decisions", {}), "suspended": ids}
        else:
            frame["data"] = {"kind": kind}
        return frame

    stack, parent = [], None
    for old in data.get("stack", []):
        frame = convert(old, parent)
        stack.append(frame)
        parent = frame["id"]
    data["stack"] = stack
    data["threads"] = threads
    data["next_frame"] = counter["frame"]
    data["next_thread"] = counter["thread"]


def load_state(raw: dict[str, Any], tools: Iterable[str] = ()) -> SessionState:
    return SessionState.model_validate(migrate_state(raw, tools))




def bound_history(state: SessionState) -> None:
    """Keep the stored history and transcripts bounded: a long session costs the same per turn."""
    if len(state.history) > HISTORY_LIMIT:
        del state.history[: len(state.history) - HISTORY_LIMIT]
    frames = [*state.stack, *(f for t in state.threads.values() for f in t.frames)]
    for frame in frames:
        data = frame.data
        if isinstance(data, ReasoningData) and len(data.messages) > TRANSCRIPT_STORE_LIMIT and not data.pending:
            tail = data.messages[-TRANSCRIPT_STORE_LIMIT:]
            # start at a user message so no tool result loses the call it answers
            start = next((i for i, m in enumerate(tail) if m.get("role") == "user"), 0)
            data.messages = tail[start:]
