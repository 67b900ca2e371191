"""What a tool call gives back: a value, or a typed error; and the bounds on what it may push into a
session (JSON data only, texts cut to a length)."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Literal

ErrorKind = Literal[
    "timeout",  # the call (or importing its file) did not finish in time
    "raised",  # the tool's code raised, exited, or its file could not be imported
    "bad_arguments",  # a required argument has no value, or the call could not take the arguments
    "not_found",  # no such tool, no such function, no implementation bound
    "http_status",  # the service answered with an error status (`status_code`)
    "connection",  # the service could not be reached
    "bad_result",  # the value does not fit the tool's `returns`, or the response cannot be read
    "too_large",  # the response is longer than the binding allows
    "config",  # the binding cannot be used as configured (a missing or ungranted environment variable, a
    # bad url, a file outside the program folder)
    "declined",  # the user did not approve a call that needs approval (ABL `confirm:`); it did not run
    "awaiting_confirmation",  # the call waits for the user's approval, asked this turn; it did not run
]

# What the caller (and, through `${tool.message}`, the customer) is told when a tool breaks; the
# details (exception, time limit, import failure) go to the result's `error`, which is logged.
UNAVAILABLE_MESSAGE = "the service is unavailable right now, please try again later"
TOO_SLOW_MESSAGE = "the service did not answer in time, please try again later"


@dataclass(frozen=True)
class ToolError:
    """Why a tool call failed: a kind to branch on and the details for the log (never a credential)."""

    kind: ErrorKind
    message: str
    status_code: int | None = None  # for `http_status`

    def __str__(self) -> str:
        return self.message


@dataclass
class ToolResult:
    """What a tool call produced.

    `value` is the returned value as JSON data (a "value" tool's result; for an ADL tool, its
    argument updates). `args` are the updates the call makes to the tool's record (and, when it
    succeeds, to its caller's arguments): an ADL tool's `{arg, value}` items; a "value" tool's fields
    when the value is an object, else `{"value": value}`.

    A call that failed has `status` "error", `failure` (the typed error) and `error` (its text, as
    logged); `message` is then what the caller may show the customer. A tool may also answer with
    an error status itself (ADL's `{"status": "error", "msg": ...}`): that is its answer, not a
    failure, so `failure` and `error` stay None.
    """

    status: str = "success"  # success | error
    message: str = ""  # for the caller agent: the status msg plus printed output
    bot: list[str] = field(default_factory=list)  # lines said to the user
    args: dict[str, Any] = field(default_factory=dict)  # argument updates
    error: str | None = None  # the text of `failure`: set when the tool failed or could not be called
    truncated: dict[str, int] = field(default_factory=dict)  # what was cut -> its full length in characters
    value: Any = None  # the returned value, JSON data
    failure: ToolError | None = None  # the typed error

    def __post_init__(self) -> None:
        if self.failure is not None:
            self.status = "error"
            if self.error is None:
                self.error = self.failure.message
        elif self.error is not None:
            self.failure = ToolError("raised", self.error)

    @property
    def ok(self) -> bool:
        return self.status == "success" and self.failure is None

    def for_model(self, call_args: dict[str, Any] | None = None) -> str:
        """The tool's result as text for an LLM's tool message: a success is its message (then the values
        and words it adds); a failure, or a success with no message, starts with its status. A returned
        value the model already has (the argument it passed, or text the message holds word for word) is
        not repeated: the result stays in the agent's transcript and is resent with every later call."""
        if self.status == "success" and self.message:
            parts = [self.message]  # a success says what its message says ("status: success" only when silent)
        else:
            parts = [f"status: {self.status}"] + ([f"message: {self.message}"] if self.message else [])
        given = call_args or {}
        new = {k: v for k, v in self.args.items()
               if not (k in given and str(given[k]) == str(v))
               and not (isinstance(v, str) and len(v) > 12 and v in self.message)
               and not (isinstance(v, (list, dict)) and v and _all_shown(v, self.message))}
        if new:
            parts.append("values: " + ", ".join(f"{k}={v!r}" for k, v in new.items()))
        if self.bot:
            parts.append("said to the user: " + " / ".join(self.bot))
        return "\n".join(parts)


def _all_shown(value: Any, message: str) -> bool:
    """Whether every item of a list or object (its texts of four characters or more, and its numbers) stands
    in `message` as a word of its own: "Accounts: Everyday Current (account_number 40021873); ..." holds
    accounts=[{'name': 'Everyday Current', 'account_number': '40021873'}, ...], so the list says nothing more."""
    leaves: list[Any] = []

    def walk(item: Any) -> None:
        if isinstance(item, dict):
            for v in item.values():
                walk(v)
        elif isinstance(item, (list, tuple)):
            for v in item:
                walk(v)
        else:
            leaves.append(item)

    walk(value)
    if not leaves:
        return False
    for leaf in leaves:
        if isinstance(leaf, bool) or leaf is None:
            return False
        text = str(leaf)
        if isinstance(leaf, str) and len(text) < 4:
            return False
        if not re.search(rf"(?<![\w.]){re.escape(text)}(?![\w])", message):
            return False
    return True


def failed(kind: ErrorKind, detail: str, message: str = UNAVAILABLE_MESSAGE,
           status_code: int | None = None) -> ToolResult:
    """An error result: `detail` is logged, `message` is what the caller may show."""
    return ToolResult(status="error", message=message, failure=ToolError(kind, detail, status_code))


def value_result(value: Any) -> ToolResult:
    """A "value" tool's result: the value as JSON data, and as record updates (an object's fields,
    else `value`)."""
    safe = json_safe(value)
    if isinstance(safe, dict):
        args = dict(safe)
    else:
        args = {} if safe is None else {"value": safe}
    return ToolResult(value=safe, args=args)


_MAX_JSON_DEPTH = 32


def json_safe(value: Any, depth: int = 0) -> Any:
    """`value` as JSON data: text is valid UTF-8, bytes are decoded (bad bytes replaced), containers are
    lists and string-keyed dicts, non-finite floats and any other object become their text."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else str(value)
    if isinstance(value, (str, bytes, bytearray)):
        return text_of(value)
    if depth >= _MAX_JSON_DEPTH:
        return text_of(value)
    if isinstance(value, dict):
        return {text_of(k): json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_safe(v, depth + 1) for v in value]
    return text_of(value)


def text_of(value: Any) -> str:
    """Any value as valid UTF-8 text: bytes decoded with replacement, lone surrogates replaced, and an
    object whose `str()` fails named by its type."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, str):
        text = value
    else:
        try:
            text = str(value)
        except Exception:  # noqa: BLE001 - a broken __str__ in tool code
            return f"<{type(value).__name__}>"
        if not isinstance(text, str):
            return f"<{type(value).__name__}>"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", errors="replace").decode("utf-8")
    return text


def cut_marker(total: int) -> str:
    return f" [... cut: {total:,} characters in all]"


def bounded_text(text: str, limit: int) -> tuple[str, int]:
    """(the text cut to `limit` characters with a marker, its full length) or (text, 0) when it fits."""
    if len(text) <= limit:
        return text, 0
    return text[:limit] + cut_marker(len(text)), len(text)


def _bounded_json(value: Any, limit: int) -> tuple[Any, int]:
    """A value kept whole when its text (JSON for data) fits `limit`, else its text cut to it."""
    shown, total = bounded_text(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False), limit)
    return (shown, total) if total else (value, 0)


def bound_result(result: ToolResult, limit: int) -> None:
    """Cut each text of a tool's result (its message, a line it says, a value it returns) to `limit`
    characters, noting in `result.truncated` what was cut and how long it was."""
    result.message, total = bounded_text(result.message, limit)
    if total:
        result.truncated["message"] = total
    for i, line in enumerate(result.bot):
        result.bot[i], total = bounded_text(line, limit)
        if total:
            result.truncated[f"said line {i + 1}"] = total
    for name, value in list(result.args.items()):
        result.args[name], total = _bounded_json(value, limit)
        if total:
            result.truncated[f"value {name}"] = total
    if result.value is None or result.value is result.args:
        return
    if isinstance(result.value, dict):  # each field as in args
        for name, value in list(result.value.items()):
            result.value[name], total = _bounded_json(value, limit)
            if total:
                result.truncated[f"value {name}"] = total
    else:
        result.value, total = _bounded_json(result.value, limit)
        if total:
            result.truncated["value"] = total
