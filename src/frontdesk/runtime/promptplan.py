"""Prompt plans: the messages of an LLM call as named parts, rendered to text or described in ACDL.

The runtime builds every prompt as a plan. `render()` gives the chat messages that are sent;
`structure()` gives, per message, the ACDL element each part stands for (recorded in the
trace so calls can be verified); `acdl_body()` describes the plan's shape in ACDL. One plan,
three views, so the description cannot drift from what is sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from frontdesk.llm.base import ChatMessage, ToolCall


@dataclass
class Fixed:
    """Fixed wording: an ACDL template (ALL_CAPS) whose text is `text`."""

    name: str
    text: str
    comment: str = ""

    def element(self) -> str:
        return self.name


@dataclass
class Value:
    """A value from the program or the session: an ACDL context variable such as `sys.agent.prompt`."""

    path: str  # without indices, e.g. "env.user_message"
    text: str
    indices: str = ""  # as written in ACDL, e.g. "[@t]"
    comment: str = ""

    def element(self) -> str:
        return self.path


@dataclass
class Each:
    """Parts repeated per item (ACDL `ForEach`): `shape` describes one item, `items` are the real ones."""

    var: str
    iterable: str
    shape: list[Part]
    items: list[list[Part]] = field(default_factory=list)


@dataclass
class Maybe:
    """Parts present only when `cond` holds (ACDL `If`)."""

    cond: str
    shape: list[Part]
    present: bool = False
    parts: list[Part] = field(default_factory=list)


Part = Union[Fixed, Value, Each, Maybe]

ROLE_LETTER = {"system": "S", "user": "U", "assistant": "A", "tool": "T"}


@dataclass
class Message:
    role: str  # system | user | assistant | tool
    parts: list[Part]
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None


@dataclass
class Turns:
    """Messages repeated over the conversation (a top-level ACDL `ForEach`): `shape` is the
    symbolic messages of one step; `messages` the real ones."""

    var: str
    iterable: str
    shape: list[Message]
    messages: list[Message] = field(default_factory=list)
    optional_roles: bool = True  # each message of the shape may be absent in a given step


Block = Union[Message, Turns]


def _flatten(parts: list[Part]) -> list[Fixed | Value]:
    out: list[Fixed | Value] = []
    for p in parts:
        if isinstance(p, Each):
            for item in p.items:
                out.extend(_flatten(item))
        elif isinstance(p, Maybe):
            if p.present:
                out.extend(_flatten(p.parts))
        else:
            out.append(p)
    return out


@dataclass
class PromptPlan:
    name: str  # the ACDL prompt name, e.g. "Route_triage"
    indices: str  # e.g. "[@T]"
    blocks: list[Block]
    comment: str = ""

    def messages(self) -> list[Message]:
        out: list[Message] = []
        for b in self.blocks:
            out.extend(b.messages if isinstance(b, Turns) else [b])
        return out

    def render(self) -> list[ChatMessage]:
        rendered = []
        for m in self.messages():
            text = "\n".join(p.text for p in _flatten(m.parts) if p.text)
            rendered.append(ChatMessage(role=m.role, content=text if text or not m.tool_calls else None,
                                        tool_calls=m.tool_calls, tool_call_id=m.tool_call_id, name=m.name))
        return rendered

    def structure(self) -> list[dict]:
        """Per message sent: its role letter and the ACDL elements of its parts, in order."""
        return [{"role": ROLE_LETTER[m.role], "elements": [p.element() for p in _flatten(m.parts)]}
                for m in self.messages()]

    def acdl(self) -> str:
        lines = []
        if self.comment:
            lines.extend(f"// {line}" for line in self.comment.splitlines())
        lines.append(f"{self.name}{self.indices}: {{")
        for b in self.blocks:
            lines.extend(_block_acdl(b, 1))
        lines.append("}")
        return "\n".join(lines)


def _gist(text: str, limit: int = 70) -> str:
    """The start of a fixed text, as an inline comment that says what the template holds."""
    flat = " ".join(text.split()).replace("//", "/")
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _ind(level: int) -> str:
    return "    " * level


def _parts_acdl(parts: list[Part], level: int) -> list[str]:
    lines = []
    for p in parts:
        if isinstance(p, Fixed):
            note = p.comment or _gist(p.text)
            lines.append(_ind(level) + p.name + (f"  // {note}" if note else ""))
        elif isinstance(p, Value):
            lines.append(_ind(level) + p.path + p.indices + (f"  // {p.comment}" if p.comment else ""))
        elif isinstance(p, Each):
            lines.append(f"{_ind(level)}ForEach({p.var}: {p.iterable}) {{")
            lines.extend(_parts_acdl(p.shape, level + 1))
            lines.append(_ind(level) + "}")
        elif isinstance(p, Maybe):
            lines.append(f"{_ind(level)}If {p.cond} {{")
            lines.extend(_parts_acdl(p.shape, level + 1))
            lines.append(_ind(level) + "}")
    return lines


def _message_acdl(m: Message, level: int) -> list[str]:
    letter = ROLE_LETTER[m.role]
    if len(m.parts) == 1 and isinstance(m.parts[0], (Fixed, Value)):
        return [f"{_ind(level)}{letter}: " + _parts_acdl(m.parts, 0)[0]]  # the single-line form
    body = _parts_acdl(m.parts, level + 1)
    return [f"{_ind(level)}{letter}: {{", *body, _ind(level) + "}"]


def _block_acdl(b: Block, level: int) -> list[str]:
    if isinstance(b, Message):
        return _message_acdl(b, level)
    lines = [f"{_ind(level)}ForEach({b.var}: {b.iterable}) {{"]
    for m in b.shape:
        if b.optional_roles:
            first = next((p for p in m.parts if isinstance(p, Value)), None)
            cond = (first.path + first.indices) if first else "true"
            lines.append(f"{_ind(level + 1)}If {cond} {{")
            lines.extend(_message_acdl(m, level + 2))
            lines.append(_ind(level + 1) + "}")
        else:
            lines.extend(_message_acdl(m, level + 1))
    lines.append(_ind(level) + "}")
    return lines
