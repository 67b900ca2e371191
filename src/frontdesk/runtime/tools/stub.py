"""Tools answered from a table: StubToolRunner for tests, and the stub binding of a program's tools."""

from __future__ import annotations

from typing import Any

from frontdesk.ir.models import StubBinding

from .conventions import read_return
from .python import Returned, describe
from .result import ToolResult, failed


class StubToolRunner:
    """Tool calls answered from a table, for tests and for trying a program before its tools exist.

    `answers` maps a tool's name to a ToolResult, to a return value in `convention` (ADL's by
    default), or to a function of the call's arguments giving either; a tool not in the table is an
    error result. Every call is kept in `calls`.
    """

    def __init__(self, answers: dict[str, Any], convention: str = "adl") -> None:
        self.answers = dict(answers)
        self.convention = convention
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def call(self, tool: str, args: dict[str, Any], timeout: float | None = None) -> ToolResult:
        self.calls.append((tool, dict(args)))  # a stub answers at once: `timeout` is not needed
        if tool not in self.answers:
            return failed("not_found", f"no stub answer for {tool}")
        answer = self.answers[tool]
        if callable(answer):
            try:
                answer = answer(**args)
            except Exception as exc:  # noqa: BLE001 - a stub that fails is a failing tool
                return failed("raised", f"{tool} failed: {describe(exc)}")
        if isinstance(answer, ToolResult):
            return answer
        try:
            return read_return(self.convention, answer)
        except Exception as exc:  # noqa: BLE001 - an answer the convention cannot read
            return failed("bad_result", f"{tool}: its stub answer cannot be read: {describe(exc)}")


def stub_answer(tool: str, binding: StubBinding, args: dict[str, Any]) -> Returned:
    """The first answer of `binding` whose `when` the arguments match."""
    for answer in binding.answers:
        if all(_same(args.get(name), value) for name, value in answer.when.items()):
            if answer.error is not None:
                return Returned(failure=failed("raised", f"{tool} failed: {answer.error}"))
            return Returned(value=answer.value)
    if not binding.answers:
        return Returned(failure=failed("not_found", f"tool {tool} has no implementation bound"))
    return Returned(failure=failed("not_found", f"tool {tool}: no stub answer fits the arguments "
                                   f"{', '.join(sorted(args)) or '(none)'}"))


def _same(given: Any, expected: Any) -> bool:
    """An argument matches a `when` value when equal, or equal as text (a model passing "3" for 3)."""
    return given == expected or (given is not None and str(given) == str(expected))
