"""What a turn's context may ask of the engine that drives it (`TurnContext.driver`).

The engine (runtime/engine.py) implements `Driver`; the modules that run agents outside the turn's
own loop (a fan_out task, a best-of-n draft, a constraint that hands over and drives again, see
runtime/handoff.py) reach it only through this interface, never through the engine's internals.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # pragma: no cover
    from frontdesk.runtime.context import TurnContext
    from frontdesk.runtime.events import Event
    from frontdesk.runtime.state import Frame
    from frontdesk.runtime.steps import ChildResult


class Driver(Protocol):
    """The engine as a turn's context sees it."""

    # the strategy every router runs whatever the program says (`--orchestration`); None: the program's
    orchestration: str | None
    # the engine's own subscribers: they see every event of every turn as it happens
    subscribers: list[Callable[[Event], None]]

    def drive_turn(self, ctx: TurnContext) -> None:
        """Drive the context's stack as a turn does, until an agent waits or the stack is empty."""
        ...

    def drive_task(self, ctx: TurnContext) -> ChildResult | None:
        """Drive a fan_out task's own stack; the result of the agent that ended last (None: one waits)."""
        ...

    def child_finished(self, frame: Frame, result: ChildResult, ctx: TurnContext) -> None:
        """Give `frame`'s executor the result of a child that ended or stepped aside."""
        ...
