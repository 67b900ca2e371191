"""Fixtures of the behaviour suite: the program of a behaviour in the form under test, and conversations
that run each turn on a fresh Engine over the same SQLite store, so every behaviour also proves that the
session's state round-trips through the store between turns.

Only the engine's public API is used: `Engine(program, llm, store, tools=...)`, `start`, `send`, the
`TurnResult`s, their events' `type`/`agent`/`data`, and `Engine.load_state` for `status`, `turn` and
`history`. No embedding model is loaded (`understanding` stays None): routing and `the user claims`
decisions come from the scripted model, or there is none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from frontdesk.llm import ScriptedProvider
from frontdesk.runtime.engine import Engine, TurnResult
from frontdesk.store.sqlite import SqliteSessionStore

from .programs import FORMS


@pytest.fixture(params=sorted(FORMS))
def front_end(request) -> str:
    """The form the program is given in: each behaviour test runs once per front end."""
    return request.param


@pytest.fixture
def make_program(front_end, tmp_path):
    """`make_program("routing")`: the behaviour's program in the form under test (in its own folder)."""
    def make(behaviour: str):
        factory = FORMS[front_end].get(behaviour)
        if factory is None:
            pytest.skip(f"the {front_end} front end does not give the {behaviour!r} program yet")
        folder = tmp_path / f"{front_end}-{behaviour}"
        folder.mkdir()
        return factory(folder)

    return make


@dataclass
class Conversation:
    """One session, each turn run by a new Engine (and a new store connection) as another process would."""

    program: Any
    llm: ScriptedProvider | None
    db: Path
    tools: Any = None
    session_id: str = ""
    turns: list[TurnResult] = field(default_factory=list)
    stores: list[SqliteSessionStore] = field(default_factory=list)

    def engine(self) -> Engine:
        store = SqliteSessionStore(self.db)
        self.stores.append(store)
        # no program of the suite reads web pages: the engine's defaults fetch nothing
        return Engine(self.program, self.llm, store, tools=self.tools)

    def close(self) -> None:
        for store in self.stores:
            store.close()

    def start(self) -> TurnResult:
        result = self.engine().start()
        self.session_id = result.session_id
        self.turns.append(result)
        return result

    def send(self, text: str) -> TurnResult:
        assert self.session_id, "start the conversation first"
        result = self.engine().send(self.session_id, text)
        self.turns.append(result)
        return result

    def say(self, text: str) -> list[str]:
        """Send `text`; what the bot answered."""
        return said(self.send(text))

    def state(self):
        state = self.engine().load_state(self.session_id)
        assert state is not None
        return state

    @property
    def bot_lines(self) -> list[str]:
        return [m.text for t in self.turns for m in t.messages]

    @property
    def events(self):
        return [e for t in self.turns for e in t.events]

    def events_of(self, type_: str, agent: str | None = None):
        return [e for e in self.events if e.type == type_ and (agent is None or e.agent == agent)]

    def stored_events(self) -> list[dict]:
        store = SqliteSessionStore(self.db)
        self.stores.append(store)
        return store.events(self.session_id)

    def check_stored(self) -> None:
        """What the store kept matches what the turns reported: every event, and the conversation's
        history (user and bot lines in order)."""
        stored = self.stored_events()
        assert [(e["type"], e.get("agent")) for e in stored] == [(e.type, e.agent) for e in self.events]
        state = self.state()
        assert state.turn == len(self.turns) - 1
        bot_history = [h.text for h in state.history if h.role == "bot"]
        assert bot_history == self.bot_lines


def said(result: TurnResult) -> list[str]:
    return [m.text for m in result.messages]


@pytest.fixture
def converse(tmp_path):
    """`converse(program, llm, tools=None)`: a conversation over a SQLite file in the test's folder."""
    made: list[Conversation] = []

    def make(program, llm: ScriptedProvider | None = None, tools=None) -> Conversation:
        conversation = Conversation(program, llm, tmp_path / f"sessions-{len(made) + 1}.sqlite3", tools)
        made.append(conversation)
        return conversation

    yield make
    for conversation in made:
        conversation.close()
