"""Tools: calling what a program's tools are bound to, and reading what comes back.

- `result`: ToolResult (a value, or a typed ToolError) and the bounds on it;
- `runner`: ProgramToolRunner (`PythonToolRunner` is its older name), which sends each call to the
  tool's binding and reads the value in the tool's `convention`, checked against its `returns`;
- `python`, `http`, `stub`: the bindings; `conventions`: the readers front ends register
  (`register_return_convention`); `schema`: the check of a value against `returns`.
"""

from __future__ import annotations

from .conventions import read_return, register_return_convention, return_convention
from .http import HttpCalls
from .python import PythonFunctions, ToolLoadError
from .result import (
    TOO_SLOW_MESSAGE,
    UNAVAILABLE_MESSAGE,
    ErrorKind,
    ToolError,
    ToolResult,
    bound_result,
    cut_marker,
    failed,
    json_safe,
    text_of,
    value_result,
)
from .runner import ProgramToolRunner, PythonToolRunner, ToolRunner, finish, read_value
from .schema import schema_problem
from .stub import StubToolRunner, stub_answer

__all__ = [
    "TOO_SLOW_MESSAGE", "UNAVAILABLE_MESSAGE", "ErrorKind", "HttpCalls", "ProgramToolRunner", "PythonFunctions",
    "PythonToolRunner", "StubToolRunner", "ToolError", "ToolLoadError", "ToolResult", "ToolRunner", "bound_result",
    "cut_marker", "failed", "finish", "json_safe", "read_return", "read_value",
    "register_return_convention", "return_convention", "schema_problem", "stub_answer", "text_of", "value_result",
]
