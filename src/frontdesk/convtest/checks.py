"""The assertions of a conversation test, checked against a played turn.

Bot checks of a turn match its messages in the order they are written: each one looks at the message
where the previous one matched (after the matched text) and later ones, as a reader would go down the
transcript. `bot` is a whole message, `bot_contains` a part of one, `bot_matches` a regular expression
searched in one, `bot_like` a message whose meaning is close (cosine similarity of the local sentence
embeddings at least the threshold). The other checks read the turn's events and the session state
after the turn.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from frontdesk.diagnostics import Span

from .model import Check, show_value


@dataclass
class Failure:
    """A check that did not hold, or a turn that could not be played."""

    message: str
    span: Span | None = None
    turn: int | None = None
    check: str = ""  # the check as written, e.g. "bot_contains: 'Done!'"

    def location(self) -> str:
        return f"{self.span.file}:{self.span.line}:{self.span.column}" if self.span and self.span.line else ""

    def format(self) -> str:
        where = self.location()
        head = f"{where}: " if where else ""
        turn = f"turn {self.turn}: " if self.turn is not None else ""
        return f"{head}{turn}{self.message}"


@dataclass
class PlayedTurn:
    """What a turn did: its messages (speaker, text), its events (as stored), where the conversation is."""

    index: int
    user: str | None
    messages: list[tuple[str | None, str]]
    events: list[dict[str, Any]]
    active_agent: str | None
    ended: bool
    variables: dict[str, dict[str, Any]] = field(default_factory=dict)
    llm_used: int | None = None  # scripted answers used once this turn ended (None: not counted)


Similarity = Callable[[str, str], float]


def same(expected: Any, actual: Any, written: str | None = None) -> bool:
    """Equal, or equal as text (a tool given "3" for 3; `yes` written for the text "yes"); lists and
    mappings item by item."""
    if isinstance(expected, bool) and isinstance(actual, bool):
        return expected == actual
    if not isinstance(expected, bool) and not isinstance(actual, bool) and expected == actual:
        return True
    if isinstance(expected, list) and isinstance(actual, (list, tuple)):
        return len(expected) == len(actual) and all(same(e, a) for e, a in zip(expected, actual))
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(same(v, actual[k]) for k, v in expected.items())
    if actual is None or isinstance(actual, (list, dict)) or isinstance(expected, (list, dict)):
        return False
    texts = {_text(expected)} | ({written} if written is not None else set())
    return _text(actual) in texts


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def arg_targets(program, name: str, variables: dict[str, dict[str, Any]] | None = None) -> list[tuple[str, str]]:
    """Where the argument `name` (or `scope.name`) lives: each agent declaring it (through what it is bound
    to), and any scope of the session that holds a value by that name; otherwise where the program keeps
    names no agent declares (`Program.slot_of`: ABL's `session` scope)."""
    bound = program.slot_of
    if "." in name:
        scope, arg = name.split(".", 1)
        return [bound(scope, arg)]
    targets: list[tuple[str, str]] = []
    for agent_name, agent in program.agents.items():
        if any(a.name == name for a in agent.args):
            targets.append(bound(agent_name, name))
    for scope, values in (variables or {}).items():
        if name in values:
            targets.append((scope, name))
    if not targets:
        # a name no agent declares: where the program keeps such names (ABL: the session's shared
        # variables); a program that would only guess the entry agent's own keeps them nowhere
        kept = bound(None, name)
        if kept != (program.entry, name):
            targets.append(kept)
    return list(dict.fromkeys(targets))


def check_turn(turn: PlayedTurn, checks: list[Check], program, similarity: Similarity | None = None) -> list[Failure]:
    """The failures of `checks` on a played turn (empty: every check held)."""
    failures: list[Failure] = []
    cursor = [0, 0]  # message index, character offset: where the next bot check starts looking
    texts = [text for _, text in turn.messages]
    for check in checks:
        problem = _check_one(turn, check, texts, cursor, program, similarity)
        if problem:
            failures.append(Failure(problem, check.span, turn.index, check.describe()))
    return failures


def _said(texts: list[str]) -> str:
    if not texts:
        return "the bot said nothing in this turn"
    return "the bot said: " + " | ".join(repr(t) for t in texts)


def _check_one(turn: PlayedTurn, check: Check, texts: list[str], cursor: list[int], program,
               similarity: Similarity | None) -> str | None:
    kind, value = check.kind, check.value
    if kind in ("bot", "bot_like"):
        first = cursor[0] + (1 if cursor[1] else 0)
        if kind == "bot":
            for i in range(first, len(texts)):
                if texts[i].strip() == value.strip():
                    cursor[:] = [i + 1, 0]
                    return None
            return f"no message is {value!r}; {_said(texts[first:] if first else texts)}"
        if similarity is None:
            return "bot_like needs the local embedding model, which is not loaded"
        best = (-1.0, "")
        for i in range(first, len(texts)):
            score = similarity(value["text"], texts[i])
            if score >= value["threshold"]:
                cursor[:] = [i + 1, 0]
                return None
            best = max(best, (score, texts[i]))
        if best[0] < 0:
            return f"no message is like {value['text']!r}; {_said([])}"
        return (f"no message is like {value['text']!r} (similarity at least {value['threshold']:g}); the closest, "
                f"{best[1]!r}, scores {best[0]:.2f}")
    if kind in ("bot_contains", "bot_matches"):
        pattern = re.compile(value if kind == "bot_matches" else re.escape(value))
        for i in range(cursor[0], len(texts)):
            found = pattern.search(texts[i], cursor[1] if i == cursor[0] else 0)
            if found:
                cursor[:] = [i, found.end()]
                return None
        verb = "contains" if kind == "bot_contains" else "matches"
        later = " after the previous match" if cursor != [0, 0] else ""
        return f"no message {verb} {value!r}{later}; {_said(texts)}"
    if kind in ("bot_not_contains", "bot_not_matches"):
        pattern = re.compile(value if kind == "bot_not_matches" else re.escape(value))
        hit = next((t for t in texts if pattern.search(t)), None)
        return None if hit is None else f"a message {'contains' if kind == 'bot_not_contains' else 'matches'} " \
                                          f"{value!r}: {hit!r}"
    if kind == "agent":
        if turn.active_agent == value:
            return None
        return f"the active agent is {turn.active_agent!r}, not {value!r}"
    if kind == "ended":
        if turn.ended == value:
            return None
        return "the conversation has not ended" if value else "the conversation ended"
    if kind in ("args", "args_not_set"):
        targets = arg_targets(program, value["name"], turn.variables)
        held = {f"{s}.{n}": turn.variables.get(s, {}).get(n) for s, n in targets}
        if kind == "args":
            if not targets:
                return f"no agent has an argument {value['name']!r} and no scope holds one; write scope.name"
            if any(same(value["value"], v, value.get("text")) for v in held.values()):
                return None
            return f"{value['name']} is {_values(held)}, not {show_value(value['value'])}"
        if value.get("has_value"):
            bad = {k: v for k, v in held.items() if same(value["value"], v, value.get("text"))}
            return None if not bad else f"{value['name']} holds {show_value(value['value'])} ({', '.join(bad)})"
        set_ = {k: v for k, v in held.items() if v is not None}
        return None if not set_ else f"{value['name']} is set: {_values(set_)}"
    if kind == "args_set":
        name = value["name"]
        targets = set(arg_targets(program, name, turn.variables))
        plain = name.split(".", 1)[-1]
        hits = [e for e in turn.events if e["type"] == "arg_set" and (e.get("data") or {}).get("name") == plain and (
            "." not in name or ((e.get("data") or {}).get("scope"), plain) in targets)]
        if hits:
            return None
        set_here = sorted({f"{(e.get('data') or {}).get('scope')}.{(e.get('data') or {}).get('name')}"
                           for e in turn.events if e["type"] == "arg_set"})
        return f"{name} was not set in this turn" + (f"; set were: {', '.join(set_here)}" if set_here else "")
    if kind in ("tool_called", "tool_not_called"):
        # a call a rule answered (a constraint refused it, a confirmation was declined) never reached the tool
        calls = [(e.get("data") or {}) for e in turn.events if e["type"] in ("tool_call", "tool_called")
                 and not (e.get("data") or {}).get("answered_by")]
        name = value["name"] if kind == "tool_called" else value
        mine = [c for c in calls if c.get("tool") == name]
        if kind == "tool_not_called":
            return None if not mine else f"{name} was called with {show_value(mine[0].get('args'))}"
        wanted = value["args"]
        if any(all(same(v, (c.get("args") or {}).get(k)) for k, v in wanted.items()) for c in mine):
            return None
        if mine:
            return f"{name} was called, but with {'; '.join(show_value(c.get('args')) for c in mine)}"
        made = ", ".join(f"{c.get('tool')}({show_value(c.get('args'), 80)})" for c in calls)
        return f"{name} was not called in this turn" + (f"; calls made: {made}" if made else "; no tool was called")
    if kind == "events":
        return event_problem(value, turn.events)
    return f"unknown check {kind}"  # pragma: no cover


def _values(held: dict[str, Any]) -> str:
    return ", ".join(f"{k} = {show_value(v)}" for k, v in held.items()) or "not set"


def event_problem(want: dict[str, Any], events: list[dict[str, Any]]) -> str | None:
    """An expected event (`type` and data fields; `absent: true`: must not occur) against events."""
    want = dict(want)
    type_ = str(want.pop("type"))
    negate = bool(want.pop("absent", False))
    if type_ in ("tool_call", "tool_called") and "answered_by" not in want:
        # a call a rule answered never reached its tool: it is no tool call here (ask for it with answered_by)
        events = [e for e in events if not (e["type"] == type_ and (e.get("data") or {}).get("answered_by"))]
    hits = [e for e in events if e["type"] == type_ and all(
        same(v, e.get("agent")) if k == "agent" else same(v, (e.get("data") or {}).get(k)) for k, v in want.items())]
    if negate:
        return None if not hits else f"unexpected event {type_} {show_value(want)}: {show_value(hits[0].get('data'))}"
    if hits:
        return None
    near = [e for e in events if e["type"] == type_]
    if near:
        return (f"no event {type_} with {show_value(want)}; the {type_} events were: "
                + "; ".join(show_value({"agent": e.get("agent"), **(e.get("data") or {})}, 160) for e in near[:4]))
    return f"no event {type_} {show_value(want) if want else ''}".rstrip()


def llm_problem(turn_index: int, expected_total: int, used: int | None, previous: int) -> str | None:
    """A turn that did not use exactly the scripted answers written for it."""
    if used is None or used == expected_total:
        return None
    own = expected_total - previous
    if used < expected_total:
        return (f"the turn used {used - previous} of the {own} scripted model answers written for it"
                if used >= previous else f"the turn used fewer answers than written ({used} < {expected_total})")
    return (f"the turn made {used - expected_total} more model call(s) than the {own} scripted answer(s) written "
            "for it (it took answers written for a later turn)")
