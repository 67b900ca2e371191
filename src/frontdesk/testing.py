"""Conversation files: replay a scripted conversation through the whole turn engine and check it.

A conversation file is YAML with `user:` (the user's lines), `llm:` (the scripted model's
answers, see `frontdesk.llm.scripted`) and, for tests, `expect:` (texts the bot must say, in
order, each a substring of one bot message) and `events:` (event types, optionally with data
fields, that must occur). With `embeddings: true` the local embedding model decides routing
and `the user claims` conditions and the script stands in for the local generator, which is
not asked to classify (`llm_classifies: true` makes it stand in for a remote LLM instead, which
is asked when the embedding model is unsure). `frontdesk chat PROGRAM --script FILE` replays
the same file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from frontdesk.llm.scripted import ScriptedProvider
from frontdesk.runtime.engine import Engine, TurnResult
from frontdesk.store.memory import MemorySessionStore


@dataclass
class ConversationRun:
    engine: Engine
    session_id: str
    turns: list[TurnResult] = field(default_factory=list)
    llm: ScriptedProvider | None = None

    @property
    def bot_lines(self) -> list[str]:
        return [m.text for t in self.turns for m in t.messages]

    @property
    def events(self) -> list[dict[str, Any]]:
        return self.engine.store.events(self.session_id)

    def events_of(self, type_: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == type_]

    def transcript(self) -> str:
        lines = []
        for t in self.turns:
            for e in t.events:
                if e.type == "user_message":
                    lines.append(f"user> {e.data['text']}")
                elif e.type == "bot_message":
                    lines.append(f"{e.agent}> {e.data['text']}")
        return "\n".join(lines)


def run_conversation(program, user: list[str], llm: ScriptedProvider | None, store=None,
                     fetch_urls: bool = False, understanding=None, embedder=None) -> ConversationRun:
    engine = Engine(program, llm, store or MemorySessionStore(), fetch_urls=fetch_urls,
                    understanding=understanding, embedder=embedder)
    first = engine.start(program_label="test")
    run = ConversationRun(engine, first.session_id, [first], llm)
    for line in user:
        run.turns.append(engine.send(run.session_id, line))
    return run


def load_conversation(path: str | Path) -> dict[str, Any]:
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a conversation file is a mapping with user:, llm: and expect:")
    return data


def check_expectations(run: ConversationRun, spec: dict[str, Any]) -> list[str]:
    """The ways the run differs from the file's `expect:` and `events:`; empty when it conforms."""
    problems = []
    lines = run.bot_lines
    pos, offset = 0, 0  # expectations match in order: later ones after the end of earlier ones
    for want in spec.get("expect") or []:
        want = str(want)
        for i in range(pos, len(lines)):
            at = lines[i].find(want, offset if i == pos else 0)
            if at >= 0:
                pos, offset = i, at + len(want)
                break
        else:
            problems.append(f"the bot never said {want!r} (after message {pos})")
    events = run.events
    for want in spec.get("events") or []:
        want = dict(want) if isinstance(want, dict) else {"type": str(want)}
        type_ = want.pop("type")
        negate = bool(want.pop("absent", False))
        hits = [e for e in events if e["type"] == type_ and all(
            e.get("agent") == v if k == "agent" else (e.get("data") or {}).get(k) == v for k, v in want.items())]
        if negate and hits:
            problems.append(f"unexpected event {type_} {want}")
        if not negate and not hits:
            problems.append(f"no event {type_} {want}")
    if run.llm is not None and run.llm.remaining():
        problems.append(f"{run.llm.remaining()} scripted LLM answers were not used")
    return problems


def scripted_model(spec: dict[str, Any]) -> ScriptedProvider:
    """The scripted model a conversation file describes."""
    llm = ScriptedProvider(spec.get("llm") or [])
    if spec.get("embeddings") and not spec.get("llm_classifies", False):
        llm.can_classify = False  # type: ignore[attr-defined]
    return llm
