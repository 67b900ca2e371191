"""A model that errs on purpose: the ideal model (bench/ideal_model.py) with seeded faults (issue 28).

Each request the ideal model answers may, with probability `rate`, come back with one fault that fits the
kind of request, chosen at random (seeded per dialogue, so a run is repeatable):

- wrong_route: a route names another agent than the right one (a plausible one: a listed member);
- wrong_choice: an `understand` answer picks another listed choice (a wrong case, yes for no);
- invented_arg: an argument set or passed holds a value nobody said ("Alex Morgan", 4242, a listed value
  other than the right one);
- missing_arg: an argument of a tool call or `set_args` is left out;
- unknown_tool: a reasoning step calls a tool that does not exist;
- bad_json: a tool call's arguments are not valid JSON;
- wrong_type: an argument is a list or an object where a plain value was due;
- no_tool: a reasoning step answers in text where a tool call (or `finish`) was due;
- empty: the answer has no text and no tool call;
- http_500, http_429: the endpoint answers with that HTTP error instead;
- timeout: the endpoint answers only after TIMEOUT_DELAY seconds, when the client has given up (bench
  robustness.py sets the client's timeout, FRONTDESK_LLM_TIMEOUT, to CLIENT_TIMEOUT for its runs).
"""

from __future__ import annotations

import json
import random
import zlib
from typing import Any

from ideal_model import DELAY, HTTP_STATUS, IdealModel, request_kind

FAULTS_BY_KIND = {
    "route": ("wrong_route", "bad_json", "empty", "http_500", "http_429", "timeout"),
    "understand": ("wrong_choice", "invented_arg", "missing_arg", "bad_json", "wrong_type", "empty", "http_500",
                   "timeout"),
    "reason": ("invented_arg", "missing_arg", "unknown_tool", "bad_json", "wrong_type", "no_tool", "empty",
               "http_500", "http_429", "timeout"),
    "kb_answer": ("empty", "http_500", "timeout"),
    "text": ("empty", "http_500", "timeout"),
}
CLIENT_TIMEOUT = 1.0  # seconds: the OpenAI client's timeout in a run with faults
TIMEOUT_DELAY = 1.6  # seconds a `timeout` answer waits: past the client's timeout
ALL_FAULTS = sorted({f for kinds in FAULTS_BY_KIND.values() for f in kinds})
INVENTED = ("Alex Morgan", 4242, "ZZ-9999", "2031-02-29")
CONTROL = {"finish", "hand_back"}  # the engine's own reasoning tools: not where values are invented


class FaultyModel(IdealModel):
    """The ideal model, with a fault in about `rate` of its answers (see the module's docstring)."""

    def __init__(self, program, counter=None, dialogue: str = "", rate: float = 0.1, seed: int = 0,
                 only: set[str] | None = None) -> None:
        super().__init__(program, counter)
        self.rate = rate
        self.only = only
        self.rng = random.Random(zlib.crc32(f"{seed}:{dialogue}".encode()))
        self.injected: list[tuple[str, str]] = []  # (request kind, fault), in this turn

    def begin_turn(self, oracle) -> None:
        super().begin_turn(oracle)
        with self.lock:
            self.injected = []

    def complete(self, body: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        answer, record = super().complete(body)
        tools = [t.get("function", {}).get("name", "") for t in body.get("tools") or []]
        kind = request_kind(tools)
        with self.lock:
            draw = self.rng.random()
            choices = [f for f in FAULTS_BY_KIND.get(kind, ()) if self.only is None or f in self.only]
            fault = self.rng.choice(choices) if choices else None
            if fault is None or draw >= self.rate:
                return answer, record
            body_tools = {t.get("function", {}).get("name", ""): t.get("function", {}).get("parameters") or {}
                          for t in body.get("tools") or []}
            if apply_fault(fault, answer, body_tools, self.rng):
                self.injected.append((kind, fault))
        return answer, record


def _message(answer: dict[str, Any]) -> dict[str, Any]:
    return answer["choices"][0]["message"]


def _calls(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return _message(answer).get("tool_calls") or []


def _args(call: dict[str, Any]) -> dict[str, Any]:
    try:
        value = json.loads(call["function"]["arguments"] or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _set_args(call: dict[str, Any], args: dict[str, Any]) -> None:
    call["function"]["arguments"] = json.dumps(args)


def _enum(schema: dict[str, Any], name: str) -> list[Any]:
    return (schema.get("properties", {}).get(name, {}) or {}).get("enum") or []


def apply_fault(fault: str, answer: dict[str, Any], schemas: dict[str, dict[str, Any]], rng: random.Random) -> bool:
    """Change `answer` in place by one fault; False when the fault does not fit this answer (nothing changed)."""
    message = _message(answer)
    calls = _calls(answer)
    value_calls = [c for c in calls if c["function"]["name"] not in CONTROL]
    if fault == "timeout":
        answer[DELAY] = TIMEOUT_DELAY
        return True
    if fault in ("http_500", "http_429"):
        answer[HTTP_STATUS] = 500 if fault == "http_500" else 429
        return True
    if fault == "empty":
        message["content"] = ""
        message.pop("tool_calls", None)
        answer["choices"][0]["finish_reason"] = "stop"
        return True
    if fault == "no_tool":
        if not calls:
            return False
        message["content"] = "Let me look into that for you."
        message.pop("tool_calls", None)
        answer["choices"][0]["finish_reason"] = "stop"
        return True
    if fault == "bad_json":
        if not calls:
            return False
        call = rng.choice(calls)
        call["function"]["arguments"] = call["function"]["arguments"][:-1] + ",}"  # a trailing comma
        return True
    if fault == "unknown_tool":
        if not value_calls:
            return False
        rng.choice(value_calls)["function"]["name"] = "lookup_everything"
        return True
    if fault in ("wrong_route", "wrong_choice"):
        for call in calls:
            key = "agent" if fault == "wrong_route" else "choice"
            args = _args(call)
            options = [o for o in _enum(schemas.get(call["function"]["name"], {}), key)
                       if o != args.get(key) and o != "none"]
            if key in args and options:
                args[key] = rng.choice(options)
                _set_args(call, args)
                return True
        return False
    if fault == "missing_arg":
        for call in rng.sample(value_calls, len(value_calls)):
            args = _args(call)
            holders = _value_holders_of(args)
            if holders:
                target, key = rng.choice(holders)
                target.pop(key)
                _set_args(call, args)
                return True
        return False
    if fault in ("invented_arg", "wrong_type"):
        for call in rng.sample(value_calls, len(value_calls)):
            args = _args(call)
            holders = _value_holders_of(args)
            if not holders:
                continue
            target, key = rng.choice(holders)
            if fault == "wrong_type":
                target[key] = [target[key], {"note": "see above"}]
            else:
                current = target[key]
                listed = _enum(schemas.get(call["function"]["name"], {}), key)
                others = [o for o in listed if o != current]
                target[key] = rng.choice(others) if others else (
                    INVENTED[1] if isinstance(current, (int, float)) and not isinstance(current, bool)
                    else rng.choice([INVENTED[0], INVENTED[2], INVENTED[3]]))
            _set_args(call, args)
            return True
        return False
    return False


def _value_holders_of(args: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
    out = [(args, k) for k, v in args.items() if not isinstance(v, (dict, list)) and k != "choice"]
    for v in args.values():
        if isinstance(v, dict):
            out += [(v, kk) for kk, vv in v.items() if not isinstance(vv, (dict, list))]
    return out
