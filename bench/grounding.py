"""Values the user never gave (issue 27): how many a bot keeps, offline and with a model that invents.

The cases (`bench/grounding/cases/*.yml`, format in bench/grounding/README.md) each send a few user
messages to a fresh session and then a probe. Every value written in the probe's turn from what the
user said (an `arg_set` whose reason is an extraction, a gathering, a model's set_args or a correction)
is compared with what the case says the user gave: one the user never gave, still held when the turn
ends (not refused by a validation later in it), is **invented**; each value the probe gives must be
held after the turn (**filled**).

Two modes:
- **offline**: the models `frontdesk chat` picks with no endpoint (the local embedding model, and
  SmolLM2 when installed), as a new user first meets them.
- **invent**: an in-process model that answers every request as a correct model would for the values
  the user gave, and invents all the others: each argument, field and tool parameter it is asked
  for gets the true value when the case has one, else a plausible one (the example in the field's
  own description when it has one, the first listed value, 2, 2026-12-01, "Alex"). Routing and
  conditions come from the embedding model where it is sure; asked to route, it picks the agent
  whose name and description share the most words with the message.

Run: python bench/grounding.py [--mode offline|invent|all] [--cases DIR] [--json FILE] [-v]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from ideal_model import FINISH_TOOL, HAND_BACK_TOOL, NO_ANSWER, NONE_CHOICE, ROUTE_TOOL, SET_ARGS_TOOL, \
    UNDERSTAND_TOOL, request_kind  # noqa: E402
from intent_shift import environment, same_value  # noqa: E402

TODAY = "2026-11-28"
# the reasons a value is written from what the user said (runtime: ctx.write(..., why=...))
FROM_THE_USER = ("extracted from the user's message", "gathered (", "set by the model", "corrected by the user")


@dataclass
class Case:
    name: str
    program: Path
    before: list[str]
    message: str
    gives: dict[str, Any]
    given_before: dict[str, Any]


@dataclass
class Outcome:
    case: Case
    invented: dict[str, Any] = field(default_factory=dict)
    filled: list[str] = field(default_factory=list)
    missed: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    bot: list[str] = field(default_factory=list)


def load_cases(folder: Path) -> list[Case]:
    cases = []
    for path in sorted(folder.glob("*.yml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        program = (path.parent / data["program"]).resolve()
        for item in data.get("cases") or []:
            cases.append(Case(f"{path.stem}::{item['name']}", program, [str(m) for m in item.get("before") or []],
                              str(item["message"]), dict(item.get("gives") or {}), dict(item.get("given_before") or {})))
    return cases


# ---- the inventing model ------------------------------------------------------------------------------


_EXAMPLE = re.compile(r"(?i)(?:looks like|like|e\.g\.,?|for example|such as)\s+\"?([A-Za-z0-9][\w/@+-]*\d[\w/@+-]*)")


def invent(name: str, schema: dict[str, Any]) -> Any:
    """A plausible value nobody gave, for a parameter with this JSON schema."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    described = f"{schema.get('description', '')}"
    example = _EXAMPLE.search(described)
    if schema.get("enum"):
        return schema["enum"][0]
    if kind in ("number", "integer"):
        return 2
    if kind == "boolean":
        return True
    if kind == "array":
        return [invent(name, schema.get("items") or {})]
    lowered = name.lower()
    if example:
        return example.group(1)
    if "date" in lowered or "day" in lowered or schema.get("format") == "date":
        return "2026-12-01"
    if "phone" in lowered:
        return "+15551234567"
    if "mail" in lowered:
        return "alex@example.com"
    if "time" in lowered:
        return "18:30"
    if re.search(r"(?:^|_)(?:id|number|code|ref)(?:$|_)", lowered):
        return "AB-1234"
    return "Alex"


class InventingModel:
    """Answers as a correct model for the values the user gave, and invents every other one."""

    name = "inventing"
    can_classify = True

    def __init__(self, program) -> None:
        self.program = program
        self.truth: dict[str, Any] = {}
        self.calls = 0

    def true_value(self, name: str) -> Any:
        for key, value in self.truth.items():
            if key == name or key.split(".")[-1] == name:
                return value
        return None

    def fill(self, properties: dict[str, Any]) -> dict[str, Any]:
        out = {}
        for name, schema in properties.items():
            value = self.true_value(name)
            out[name] = value if value is not None else invent(name, schema or {})
        return out

    def complete(self, request):
        from frontdesk.llm.base import LLMResponse, ToolCall

        self.calls += 1
        tools = {t.name: t.parameters or {} for t in request.tools}
        kind = request_kind(list(tools))

        def call(tool: str, args: dict[str, Any]) -> LLMResponse:
            return LLMResponse(tool_calls=[ToolCall(id=f"c{self.calls}", name=tool, arguments=args)])

        if kind == "route":
            enum = (tools[ROUTE_TOOL].get("properties", {}).get("agent", {}).get("enum") or [])
            return call(ROUTE_TOOL, {"agent": self._route(request, enum)})
        if kind == "understand":
            props = tools[UNDERSTAND_TOOL].get("properties", {})
            args: dict[str, Any] = {}
            if "choice" in props:
                args["choice"] = NONE_CHOICE
            if "args" in props:
                args["args"] = self.fill(props["args"].get("properties") or {})
            return call(UNDERSTAND_TOOL, args)
        if kind == "reason":
            done = self._calls_since_user(request)
            own = [n for n in tools if n not in (FINISH_TOOL, HAND_BACK_TOOL, SET_ARGS_TOOL) and not n.startswith("__")]
            steps = ([SET_ARGS_TOOL] if SET_ARGS_TOOL in tools else []) + own[:1]
            if done < len(steps):
                tool = steps[done]
                return call(tool, self.fill(tools[tool].get("properties") or {}))
            return LLMResponse(content="Could you tell me a bit more?")
        if kind == "kb_answer":
            return LLMResponse(content=NO_ANSWER)
        if kind == "text" and tools:
            first = next(iter(tools))
            return call(first, self.fill(tools[first].get("properties") or {}))
        return LLMResponse(content="All right.")

    @staticmethod
    def _calls_since_user(request) -> int:
        count = 0
        for message in reversed(request.messages):
            if message.role == "user":
                break
            if message.role == "assistant":
                count += len(message.tool_calls)
        return count

    def _route(self, request, enum: list[str]) -> str:
        user = next((m.content or "" for m in reversed(request.messages) if m.role == "user"), "")
        user = user.rsplit("User:", 1)[-1]  # the route call shows the conversation: only the user's last words
        words = set(re.findall(r"[a-z]{3,}", user.lower()))
        best, score = NONE_CHOICE, 0
        for name in enum:
            agent = self.program.agents.get(name)
            about = f"{name} {getattr(agent, 'description', '')} {getattr(agent, 'instructions', '')}".lower()
            shared = len(words & set(re.findall(r"[a-z]{3,}", about.replace("_", " "))))
            if shared > score:
                best, score = name, shared
        return best if best != NONE_CHOICE or NONE_CHOICE in enum else (enum[0] if enum else NONE_CHOICE)


# ---- running --------------------------------------------------------------------------------------


class Bench:
    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.programs: dict[Path, Any] = {}
        self.models: dict[Path, tuple] = {}
        self.notes: set[str] = set()

    def program(self, path: Path):
        if path not in self.programs:
            from frontdesk.lang import load_program

            program, diags = load_program(path)
            errors = [d.format() for d in diags if d.is_error]
            if program is None or errors:
                raise RuntimeError(f"{path}: {'; '.join(errors[:3])}")
            self.programs[path] = program
        return self.programs[path]

    def engine_models(self, path: Path) -> tuple:
        if path not in self.models:
            from frontdesk.app import choose_models

            program = self.program(path)
            with environment(None):
                models = choose_models(program, "auto", embeddings=True)
            llm = models.llm if self.mode == "offline" else InventingModel(program)
            self.notes.add(models.describe() if self.mode == "offline" else f"inventing model; {models.describe()}")
            self.models[path] = (llm, models.understanding, models.embedder)
        return self.models[path]

    def run(self, case: Case) -> Outcome:
        from frontdesk.app import knowledge_for
        from frontdesk.runtime.engine import Engine
        from frontdesk.store.memory import MemorySessionStore

        outcome = Outcome(case)
        try:
            program = self.program(case.program)
            llm, understanding, embedder = self.engine_models(case.program)
        except Exception as exc:  # noqa: BLE001 - a case whose program does not load is reported
            outcome.error = str(exc)
            return outcome
        if isinstance(llm, InventingModel):
            llm.truth = {**case.given_before}
        with tempfile.TemporaryDirectory() as data, environment(FRONTDESK_EXAMPLE_DB_DIR=data,
                                                                  FRONTDESK_EXAMPLE_TODAY=TODAY):
            engine = Engine(program, llm, MemorySessionStore(), understanding=understanding,
                            knowledge=knowledge_for(program, embedder))
            sid = engine.start(program_label=case.name).session_id
            try:
                for text in case.before:
                    engine.send(sid, text)
                if isinstance(llm, InventingModel):
                    llm.truth = {**case.given_before, **case.gives}
                result = engine.send(sid, case.message)
            except Exception as exc:  # noqa: BLE001 - a crash is a finding, reported with the case
                outcome.error = f"{type(exc).__name__}: {exc}"
                return outcome
            outcome.bot = [m.text for m in result.messages]
            allowed = {**case.given_before, **case.gives}
            state = engine.load_state(sid)
            for event in result.events:
                if event.type != "arg_set" or not str(event.data.get("why", "")).startswith(FROM_THE_USER):
                    continue
                name, value = event.data.get("name"), event.data.get("value")
                if value is None:
                    continue
                expected = _lookup(allowed, event.agent, name)
                if expected is not _MISSING and same(expected, value):
                    continue
                # the same value under another agent's name for it (a router's `ref` binding, an agent
                # handing a value on): still one the user gave
                items = value if isinstance(value, list) else [value]
                if items and all(any(same(v, item) for v in allowed.values()) for item in items):
                    continue
                scope = event.data.get("scope") or event.agent
                if any(same_value(value, held) for held in _held(state, f"{scope}.{name}")):
                    outcome.invented[f"{event.agent}.{name}"] = value  # kept (not refused later in the turn)
            for key, expected in case.gives.items():
                held = _held(state, key) or _held_by_ref(program, state, key)
                if any(same(expected, v) for v in held):
                    outcome.filled.append(key)
                else:
                    outcome.missed[key] = held[0] if held else None
        return outcome


_MISSING = object()


def same(expected: Any, actual: Any) -> bool:
    """same_value, and a day the user's words name ("9th of December", as an ADL flow keeps it) is the
    same as the ISO date the case writes."""
    if same_value(expected, actual):
        return True
    text = str(expected)
    if isinstance(actual, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        from datetime import datetime

        from frontdesk.runtime import extract

        now = datetime.fromisoformat(f"{TODAY}T09:00")
        if text in extract._dates(actual, now, with_time=False):
            return True
        try:
            return text in extract._dates(actual, now, with_time=False, past=True)
        except TypeError:  # an older Frontdesk (PYTHONPATH) reads days forward only
            return False
    return False


def _lookup(values: dict[str, Any], agent: str | None, name: str) -> Any:
    for key in (f"{agent}.{name}", name):
        if key in values:
            return values[key]
    return _MISSING


def _held(state, key: str) -> list[Any]:
    agent, _, name = key.rpartition(".")
    found = []
    for scope, values in state.variables.items():
        if agent and scope != agent:
            continue
        if name in values and values[name] is not None:
            found.append(values[name])
    return found


def _held_by_ref(program, state, key: str) -> list[Any]:
    """A member's argument bound by `ref` to a router's (book_recommendation's book_wanted is the triage's
    book): what the router holds under its own name."""
    agent, _, name = key.rpartition(".")
    found = []
    for router in program.agents.values():
        for member in getattr(router, "members", None) or []:
            if agent and member.agent != agent:
                continue
            for binding in member.bindings:
                if binding.member_arg == name and binding.two_way:
                    found += _held(state, f"{router.name}.{binding.router_arg}")
    return found


def summarise(outcomes: list[Outcome]) -> dict[str, Any]:
    given = sum(len(o.case.gives) for o in outcomes)
    filled = sum(len(o.filled) for o in outcomes)
    return {
        "cases": len(outcomes),
        "probes_giving_nothing": sum(1 for o in outcomes if not o.case.gives),
        "values_invented": sum(len(o.invented) for o in outcomes),
        "cases_with_invented_values": sum(1 for o in outcomes if o.invented),
        "values_given": given,
        "values_filled": filled,
        "filled_rate": round(filled / given, 3) if given else None,
        "errors": sum(1 for o in outcomes if o.error),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=["offline", "invent", "all"], default="all")
    parser.add_argument("--cases", type=Path, default=HERE / "grounding" / "cases")
    parser.add_argument("--json", type=Path)
    parser.add_argument("-k", dest="only", help="only cases whose name contains this")
    parser.add_argument("-v", "--verbose", action="count", default=0)
    args = parser.parse_args(argv)
    cases = [c for c in load_cases(args.cases) if not args.only or args.only in c.name]
    report: dict[str, Any] = {"cases": len(cases), "modes": {}}
    for mode in (["offline", "invent"] if args.mode == "all" else [args.mode]):
        bench = Bench(mode)
        started = time.perf_counter()
        outcomes = []
        for number, case in enumerate(cases, start=1):
            outcomes.append(bench.run(case))
            if args.verbose > 1:
                print(f"  [{number}/{len(cases)}] {case.name}", flush=True)
        totals = summarise(outcomes)
        totals["seconds"] = round(time.perf_counter() - started, 1)
        report["modes"][mode] = {"models": sorted(bench.notes), "totals": totals, "cases": [
            {"case": o.case.name, "invented": o.invented, "missed": o.missed, "error": o.error,
             **({"bot": o.bot} if args.verbose else {})} for o in outcomes if o.invented or o.missed or o.error
            or args.verbose]}
        print(f"\nmode: {mode} ({'; '.join(sorted(bench.notes))})")
        for o in outcomes:
            if o.invented or o.missed or o.error or args.verbose:
                print(f"  {o.case.name}: " + "; ".join(filter(None, [
                    f"invented {o.invented}" if o.invented else "", f"missed {o.missed}" if o.missed else "",
                    f"error {o.error}" if o.error else "", f"bot {o.bot}" if args.verbose else ""])))
        print("  " + json.dumps(totals))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
