"""Next steps: what an executor's run left its frame in, one small type per step; the engine acts on
each by its type (runtime/engine.py, `Engine._drive`).

- `Wait`: the frame waits for the user's next message (the turn ends).
- `Done`: the agent finished, with a status, a message and a value (its result); the frame that
  called it gets them in `child_finished`. With `ends_conversation` the whole session ends with it.
- `Call`: start `frame` above this one; this one gets the child's result when it ends.
- `Transfer`: hand the conversation to `frame`: with `resume`, this frame's thread is suspended and
  comes back when that agent ends (a handoff that returns); without, this frame ends.
- `Yield`: step aside for the frame that started this one (its router): the user turned to another
  agent (`reason` "switch", `target` that agent) or the agent gave the message back ("hand_back").
  The thread is suspended and resumed later.
- `Escalate`: hand the conversation to a person; the session's status becomes escalated.

Executors make them with `Outcome.wait()`, `Outcome.done(...)`, `Outcome.call(frame)`, ... and may
read `.kind` ("wait", "done", ...). `ChildResult` is what a caller learns of a child that ended.
This module imports nothing of the runtime but the session state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeAlias

if TYPE_CHECKING:  # pragma: no cover
    from frontdesk.runtime.state import Frame

OutcomeKind = Literal["wait", "done", "call", "transfer", "yield", "escalate"]


class UnknownStep(TypeError):
    """An executor returned something that is not one of the next steps below."""

    def __init__(self, step: object, agent: str = "") -> None:
        who = f" of {agent}" if agent else ""
        super().__init__(f"the executor{who} returned {type(step).__name__} {step!r}, which is not a next step "
                         f"(one of {', '.join(t.__name__ for t in STEP_TYPES)}; see runtime/steps.py)")
        self.step = step


class Outcome:
    """The next steps' common base, and where executors make them (`Outcome.wait()`, ...)."""

    __slots__ = ()
    kind: ClassVar[OutcomeKind]

    @staticmethod
    def wait() -> Wait:
        return Wait()

    @staticmethod
    def done(status: str = "success", message: str = "", value: dict[str, Any] | None = None) -> Done:
        return Done(status=status, message=message, value=value)

    @staticmethod
    def call(frame: Frame) -> Call:
        return Call(frame)

    @staticmethod
    def transfer(frame: Frame, resume: bool = False, message: str = "") -> Transfer:
        return Transfer(frame, resume=resume, message=message)

    @staticmethod
    def switch(target: str) -> Yield:
        return Yield(reason="switch", target=target)

    @staticmethod
    def hand_back(message: str = "") -> Yield:
        return Yield(reason="hand_back", message=message)

    @staticmethod
    def escalate(reason: str = "") -> Escalate:
        return Escalate(reason=reason, message=reason)


@dataclass(frozen=True)
class Wait(Outcome):
    """The frame waits for the user's next message."""

    kind: ClassVar[OutcomeKind] = "wait"


@dataclass(frozen=True)
class Done(Outcome):
    """The agent finished: its status, message and value go to its caller."""

    kind: ClassVar[OutcomeKind] = "done"
    status: str = "success"
    message: str = ""
    value: dict[str, Any] | None = None  # what the agent returns to its caller
    # the user ended the conversation (a goodbye an exit policy recognised): the agents below end too
    ends_conversation: bool = False


@dataclass(frozen=True)
class Call(Outcome):
    """Start `frame` above this one; this one gets its result."""

    kind: ClassVar[OutcomeKind] = "call"
    frame: Frame


@dataclass(frozen=True)
class Transfer(Outcome):
    """Hand the conversation to `frame`; with `resume`, come back to this frame when it ends."""

    kind: ClassVar[OutcomeKind] = "transfer"
    frame: Frame
    resume: bool = False
    message: str = ""  # the summary passed along


@dataclass(frozen=True)
class Yield(Outcome):
    """Step aside for the router below: the user turned to `target` ("switch"), or the agent gave the
    message back ("hand_back")."""

    kind: ClassVar[OutcomeKind] = "yield"
    reason: str = "switch"  # "switch" | "hand_back"
    target: str | None = None  # switch: the agent the user turned to
    message: str = ""


@dataclass(frozen=True)
class Escalate(Outcome):
    """Hand the conversation to a person."""

    kind: ClassVar[OutcomeKind] = "escalate"
    reason: str = ""
    message: str = ""


NextStep: TypeAlias = "Wait | Done | Call | Transfer | Yield | Escalate"
STEP_TYPES: tuple[type[Outcome], ...] = (Wait, Done, Call, Transfer, Yield, Escalate)


@dataclass(frozen=True)
class ChildResult:
    """What a caller learns of a child frame that ended or stepped aside: never the frame itself."""

    agent: str
    frame_id: str
    graph: Literal["main", "setup"]
    kind: OutcomeKind
    status: str = "success"
    message: str = ""
    value: dict[str, Any] | None = None
    reason: str = ""  # yield: "switch" | "hand_back"
    target: str | None = None  # yield with reason switch: the agent the user turned to
    thread: str | None = None  # yield: the thread it was suspended as (None: it ended)

    @property
    def setup(self) -> bool:
        return self.graph == "setup"
