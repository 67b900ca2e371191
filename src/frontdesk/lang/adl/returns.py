"""ADL's tool return convention, read into the runtime's ToolResult.

An ADL tool returns a list of items (or one): `{"status": "success" | "error", "msg": ...}`,
`{"bot": "a line said to the user"}`, `{"arg": "name", "value": ...}` (also spelled `slot_name`),
`{"error": ...}`, `{"msg": ...}`; a plain mapping updates each of its keys as an argument, and
anything else is text for the message. Importing this module registers the reader as the "adl"
convention of the runtime's tools.
"""

from __future__ import annotations

from typing import Any

from frontdesk.runtime.tools import (
    ToolResult,
    json_safe,
    register_return_convention,
    text_of,
)

_ERROR_STATUSES = ("error", "failed", "failure", "false")


def read_adl_return(value: Any) -> ToolResult:
    """Read a tool's return value in the ADL convention. Whatever the tool returns, the result holds
    only JSON data (see `json_safe`), so it can be stored with the session; its `value` is its
    argument updates."""
    result = ToolResult()
    result.value = result.args
    if value is None:
        return result
    items = value if isinstance(value, list) else [value]
    free: list[str] = []
    for item in items:
        if not isinstance(item, dict):
            free.append(text_of(item))
            continue
        if "status" in item and "arg" not in item and "slot_name" not in item:
            status = text_of(item.get("status", "success")).lower()
            result.status = "error" if status in _ERROR_STATUSES else "success"
            if item.get("msg") is not None:
                free.append(text_of(item["msg"]))
        elif "bot" in item:
            result.bot.append(text_of(item["bot"]))
        elif "arg" in item or "slot_name" in item:
            result.args[text_of(item.get("arg", item.get("slot_name")))] = json_safe(item.get("value"))
        elif "error" in item:
            result.status = "error"
            free.append(text_of(item["error"]))
        elif "msg" in item:
            free.append(text_of(item["msg"]))
        else:
            # A plain mapping of values: treat each key as an argument update.
            result.args.update({text_of(k): json_safe(v) for k, v in item.items()})
    result.message = "\n".join(m for m in free if m)
    return result



register_return_convention("adl", read_adl_return)
