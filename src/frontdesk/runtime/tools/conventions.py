"""Return conventions: how the value a tool's code returns is read into a ToolResult.

The runtime knows one convention itself, "value" (the returned value is the result). A front end
whose tools answer in a shape of their own registers a reader for it, under the name its programs
put in `ToolDef.convention`: the ADL front end registers "adl" (`frontdesk.lang.adl.returns`) when
it is imported, and the application module (`frontdesk.app`) imports every front end.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .result import ToolResult, value_result

Reader = Callable[[Any], ToolResult]

_readers: dict[str, Reader] = {"value": value_result}
_lock = threading.Lock()

def register_return_convention(name: str, reader: Reader) -> None:
    """Read the values of tools whose `convention` is `name` with `reader` (value -> ToolResult)."""
    with _lock:
        _readers[name] = reader


def return_convention(name: str) -> Reader:
    """The reader registered for `name`; LookupError when there is none."""
    reader = _readers.get(name)
    if reader is None:
        raise LookupError(f"no reader is registered for the return convention {name!r}")
    return reader


def read_return(convention: str, value: Any) -> ToolResult:
    """`value` read in `convention`."""
    return return_convention(convention)(value)
