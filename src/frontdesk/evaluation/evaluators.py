"""Evaluators: each decides pass, fail or error for one finished conversation, with a reason.

Rule evaluators read the session's events and final state; the `judge` evaluator asks an LLM (see roles.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import regex

from frontdesk.evaluation.roles import JudgeVerdict
from frontdesk.evaluation.scenarios import Evaluator
from frontdesk.textutil import clip

REGEX_TIMEOUT = 1.0  # seconds an authored pattern may take on one message
SHOWN_LIMIT = 140  # characters of a message or value a verdict's reason quotes


@dataclass
class Verdict:
    evaluator: str  # the evaluator's label
    kind: str
    verdict: str  # pass | fail | error
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"evaluator": self.evaluator, "kind": self.kind, "verdict": self.verdict, "reason": self.reason}


@dataclass
class Conversation:
    """What the evaluators see of a finished run."""

    transcript: list[dict[str, Any]]  # {"role": user|bot|tool, "text", "agent", "turn", ...}
    events: list[dict[str, Any]]
    turns: int
    variables: dict[str, dict[str, Any]] = field(default_factory=dict)
    slot_of: Callable[[str], tuple[str, str]] | None = None
    ended: bool = False
    escalated: bool = False
    finished: bool = False  # the simulated user ended the conversation itself
    goals_met: bool = False
    finish_reason: str = ""
    agents: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()

    @property
    def bot_lines(self) -> list[str]:
        return [t["text"] for t in self.transcript if t["role"] == "bot"]

    def tool_calls(self) -> list[dict[str, Any]]:
        """Each tool call with its arguments and the status of its result."""
        calls: list[dict[str, Any]] = []
        open_calls: list[dict[str, Any]] = []
        for event in self.events:
            data = event.get("data") or {}
            if event["type"] in ("tool_call", "tool_called"):
                call = {"tool": data.get("tool"), "args": data.get("args") or {}, "status": None,
                        "agent": event.get("agent"), "turn": event.get("turn")}
                calls.append(call)
                open_calls.append(call)
            elif event["type"] == "tool_result":
                match = next((c for c in open_calls if c["tool"] == data.get("tool")), None)
                if match is not None:
                    match["status"] = data.get("status")
                    open_calls.remove(match)
        return calls

    def reached(self) -> list[str]:
        seen: list[str] = []
        for event in self.events:
            if event["type"] == "agent_started" and event.get("agent") and event["agent"] not in seen:
                seen.append(event["agent"])
        return seen


Judge = Callable[[str], JudgeVerdict]


def evaluate(evaluator: Evaluator, conversation: Conversation, judge: Judge | None = None) -> Verdict:
    """The verdict of one evaluator; an evaluator that cannot decide gives `error`, never raises."""
    try:
        verdict, reason = _RULES[evaluator.kind](evaluator, conversation, judge)
    except regex.error as exc:  # includes a pattern that ran out of time
        verdict, reason = "error", f"the pattern could not be matched: {exc}"
    except TimeoutError:
        verdict, reason = "error", "the pattern took too long to match"
    except ValueError as exc:  # a `value:` name that several arguments have
        verdict, reason = "error", str(exc)
    return Verdict(evaluator.label, evaluator.kind, verdict, reason)


# ---- rules --------------------------------------------------------------------------------------


def _tool_called(ev: Evaluator, conv: Conversation, _judge) -> tuple[str, str]:
    name = ev.target
    wanted = ev.options.get("with") or {}
    status = ev.options.get("status")
    calls = [c for c in conv.tool_calls() if c["tool"] == name]
    matching = [c for c in calls if _args_match(wanted, c["args"]) and (status is None or c["status"] == status)]
    if matching:
        c = matching[0]
        return "pass", f"{name}({_args_text(c['args'])}) was called in turn {c['turn']}" + (
            f" and returned {c['status']}" if c["status"] else "")
    if not calls:
        others = sorted({str(c["tool"]) for c in conv.tool_calls()})
        unknown = "" if not conv.tools or name in conv.tools else f" (the program has no tool named {name!r})"
        return "fail", f"{name} was never called{unknown}; tools called: {', '.join(others) or 'none'}"
    shown = "; ".join(f"{name}({_args_text(c['args'])}) -> {c['status'] or '?'}" for c in calls[:3])
    want = ", ".join(f"{k}={v!r}" for k, v in wanted.items())
    need = " and ".join(x for x in (f"with {want}" if want else "", f"returning {status}" if status else "") if x)
    return "fail", f"{name} was called {len(calls)} time{'s' if len(calls) != 1 else ''}, never {need}: {shown}"


def _tool_not_called(ev: Evaluator, conv: Conversation, _judge) -> tuple[str, str]:
    name = ev.target
    wanted = ev.options.get("with") or {}
    matching = [c for c in conv.tool_calls() if c["tool"] == name and _args_match(wanted, c["args"])]
    if matching:
        c = matching[0]
        return "fail", f"{name}({_args_text(c['args'])}) was called in turn {c['turn']}"
    return "pass", f"{name} was not called" + (" with those arguments" if wanted else "")


def _agent_reached(ev: Evaluator, conv: Conversation, _judge) -> tuple[str, str]:
    reached = conv.reached()
    unknown = "" if not conv.agents or ev.target in conv.agents else f" (the program has no agent named {ev.target!r})"
    if ev.target in reached:
        return "pass", f"{ev.target} took part in the conversation"
    return "fail", f"{ev.target} never started{unknown}; agents that did: {', '.join(reached) or 'none'}"


def _agent_not_reached(ev: Evaluator, conv: Conversation, judge) -> tuple[str, str]:
    if ev.target in conv.reached():
        turn = next((e.get("turn") for e in conv.events if e["type"] == "agent_started" and e.get("agent") == ev.target), "?")
        return "fail", f"{ev.target} started in turn {turn}"
    return "pass", f"{ev.target} never started"


_MISSING = object()


def _value(ev: Evaluator, conv: Conversation, _judge) -> tuple[str, str]:
    scope, name = conv.slot_of(ev.target) if conv.slot_of else _split(ev.target)
    actual = conv.variables.get(scope, {}).get(name, _MISSING)
    shown = "has no value" if actual is _MISSING or actual is None else f"is {_show(actual)}"
    where = ev.target if f"{scope}.{name}" == ev.target else f"{ev.target} ({scope}.{name})"
    test, expected = ev.options["test"], ev.options["expected"]
    present = actual is not _MISSING and actual is not None
    if test == "set":
        ok = present == expected
    elif not present:
        ok = False
    elif test == "equals":
        ok = _same(expected, actual)
    elif test == "contains":
        ok = _contains(actual, expected)
    else:  # matches
        ok = regex.search(expected, _as_text(actual), timeout=REGEX_TIMEOUT) is not None
    return ("pass" if ok else "fail"), f"at the end {where} {shown}"


def _bot_said(ev: Evaluator, conv: Conversation, _judge) -> tuple[str, str]:
    hit = _find(ev, conv)
    what = f"/{ev.target}/" if ev.options.get("regex") else repr(ev.target)
    if hit is not None:
        return "pass", f"turn {hit['turn']}: {clip(hit['text'], SHOWN_LIMIT)}"
    return "fail", f"no bot message matches {what} ({len(conv.bot_lines)} bot messages)"


def _bot_never_said(ev: Evaluator, conv: Conversation, _judge) -> tuple[str, str]:
    hit = _find(ev, conv)
    what = f"/{ev.target}/" if ev.options.get("regex") else repr(ev.target)
    if hit is not None:
        return "fail", f"turn {hit['turn']} matches {what}: {clip(hit['text'], SHOWN_LIMIT)}"
    return "pass", f"no bot message matches {what}"


def _turns_at_most(ev: Evaluator, conv: Conversation, _judge) -> tuple[str, str]:
    ok = conv.turns <= ev.target
    plural = "s" if conv.turns != 1 else ""
    return ("pass" if ok else "fail"), f"the conversation took {conv.turns} user turn{plural} (at most {ev.target})"


def _ended(ev: Evaluator, conv: Conversation, _judge) -> tuple[str, str]:
    ok = conv.ended == ev.target
    return ("pass" if ok else "fail"), "the program ended the conversation" if conv.ended else \
        "the program did not end the conversation"


def _escalated(ev: Evaluator, conv: Conversation, _judge) -> tuple[str, str]:
    ok = conv.escalated == ev.target
    return ("pass" if ok else "fail"), "the conversation was handed to a person" if conv.escalated else \
        "the conversation was not handed to a person"


def _completed(ev: Evaluator, conv: Conversation, _judge) -> tuple[str, str]:
    done = conv.finished and conv.goals_met
    if conv.finished:
        said = f"the simulated user finished, goals {'met' if conv.goals_met else 'not met'}"
        said += f": {conv.finish_reason}" if conv.finish_reason else ""
    elif conv.ended:
        said = f"the program ended the conversation after {conv.turns} turns before the simulated user finished"
    else:
        said = f"the simulated user had not finished after {conv.turns} turns"
    return ("pass" if done == ev.target else "fail"), said


def _judged(ev: Evaluator, conv: Conversation, judge: Judge | None) -> tuple[str, str]:
    if judge is None:
        return "error", "no judge model is available"
    result = judge(ev.target)
    return result.verdict, result.reason


_RULES: dict[str, Callable[[Evaluator, Conversation, Judge | None], tuple[str, str]]] = {
    "tool_called": _tool_called,
    "tool_not_called": _tool_not_called,
    "agent_reached": _agent_reached,
    "agent_not_reached": _agent_not_reached,
    "value": _value,
    "bot_said": _bot_said,
    "bot_never_said": _bot_never_said,
    "turns_at_most": _turns_at_most,
    "ended": _ended,
    "escalated": _escalated,
    "completed": _completed,
    "judge": _judged,
}


# ---- helpers ------------------------------------------------------------------------------------


def _find(ev: Evaluator, conv: Conversation) -> dict[str, Any] | None:
    for item in conv.transcript:
        if item["role"] != "bot":
            continue
        text = item["text"]
        if ev.options.get("regex"):
            if regex.search(ev.target, text, timeout=REGEX_TIMEOUT) is not None:
                return item
        elif _fold(ev.target) in _fold(text):
            return item
    return None


def _fold(text: str) -> str:
    return " ".join(str(text).split()).casefold()


def _same(expected: Any, actual: Any) -> bool:
    """Equal values: text ignoring case and surrounding spaces, numbers by value, lists item by item,
    mappings key by key."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual if isinstance(expected, bool) and isinstance(actual, bool) else False
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return float(expected) == float(actual)
    if isinstance(expected, (int, float)) and isinstance(actual, str):
        try:
            return float(actual.strip()) == float(expected)
        except ValueError:
            return False
    if isinstance(expected, str) and isinstance(actual, (int, float)):
        return _same(actual, expected)
    if isinstance(expected, str) and isinstance(actual, str):
        return _fold(expected) == _fold(actual)
    if isinstance(expected, list) and isinstance(actual, (list, tuple)):
        return len(expected) == len(actual) and all(_same(e, a) for e, a in zip(expected, actual))
    if isinstance(expected, dict) and isinstance(actual, dict):
        return set(expected) == set(actual) and all(_same(v, actual[k]) for k, v in expected.items())
    return expected == actual


def _contains(actual: Any, expected: Any) -> bool:
    if isinstance(actual, str):
        return _fold(str(expected)) in _fold(actual)
    if isinstance(actual, (list, tuple)):
        return any(_same(expected, item) for item in actual)
    if isinstance(actual, dict):
        return any(_same(expected, key) for key in actual)
    return False


def _args_match(wanted: dict[str, Any], args: dict[str, Any]) -> bool:
    """Every argument given in `with:` has the same value in the call (a text also matches a list
    holding just that text: `ordered_book: Emberwild` matches ['Emberwild'])."""
    for key, value in wanted.items():
        if key not in args:
            return False
        got = args[key]
        if _same(value, got):
            continue
        if isinstance(got, (list, tuple)) and len(got) == 1 and _same(value, got[0]):
            continue
        return False
    return True


def _split(target: str) -> tuple[str, str]:
    scope, _, name = target.rpartition(".")
    return scope, name


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _show(value: Any) -> str:
    return clip(json.dumps(value, ensure_ascii=False, default=str), SHOWN_LIMIT)


def _args_text(args: dict[str, Any]) -> str:
    return clip(", ".join(f"{k}={json.dumps(v, ensure_ascii=False, default=str)}" for k, v in args.items()), 100)
