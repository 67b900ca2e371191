"""Request and response bodies of the HTTP API (/v1)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic_core import PydanticCustomError

from frontdesk.runtime.usertext import text_problem


def _keepable(text: str) -> str:
    """A client's text a session can keep and send back; else a 422 that says why (runtime/usertext.py)."""
    problem = text_problem(text)
    if problem is not None:
        raise PydanticCustomError("unkeepable_text", "{problem}", {"problem": problem})
    return text


# Text from a client: refused (422, nothing stored, no turn run) when it has a lone surrogate or a NUL.
ClientText = Annotated[str, AfterValidator(_keepable)]


class CreateSession(BaseModel):
    model_config = ConfigDict(extra="forbid")
    program: ClientText = Field(description="The name of a loaded program (see GET /v1/programs).")
    channel: ClientText = Field("http", max_length=64)
    user_id: ClientText | None = Field(
        None, max_length=200, description="The end user within the caller's account (memory is kept per user).")


class SendMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: ClientText
    message_id: ClientText | None = Field(None, min_length=1, max_length=200,
                                          description="A client id: a retry with the same id returns the first result.")


class Message(BaseModel):
    agent: str | None = None
    text: str
    actions: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Buttons, choices and input fields shown with the message (ABL ACTIONS): each has kind, id, "
                    "label; a button's `send` is the text to send when it is picked.")


class TurnOut(BaseModel):
    session_id: str
    turn: int
    messages: list[Message]
    events: list[dict[str, Any]]
    ended: bool
    active_agent: str | None = None
    replayed: bool = Field(False, description="True when this is the stored result of an earlier request with the same message_id.")
    preempted: bool = Field(False, description="Strategy `preemptive`: a newer message superseded this one; it is "
                                               "in the history and the newer message's turn answers both.")


class ProgramOut(BaseModel):
    name: str
    language: str
    entry: str
    agents: list[str]
    version: str = Field(description="The digest of the version new sessions start on; sessions record theirs.")
    loaded_versions: list[str] = Field(default_factory=list,
                                       description="Every version this server runs sessions on, oldest first.")


class ReloadOut(BaseModel):
    name: str
    version: str
    previous: str
    changed: bool


class SessionOut(BaseModel):
    session_id: str
    program: str
    program_version: str
    status: str
    active_agent: str | None
    turn: int
    ended: bool
