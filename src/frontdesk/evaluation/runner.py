"""Running scenarios: a simulated user talks with the bot (one session each), then the evaluators decide.

Each run gets its own session store, engine and (for scripted roles) fresh scripted models; the program's
tools, knowledge indexes and configured models are shared. Runs go through a thread pool of `concurrency`
workers.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

from frontdesk.evaluation.evaluators import Conversation, Verdict, evaluate
from frontdesk.evaluation.roles import (
    CountingLLM,
    SimulatedUserError,
    judge,
    next_user_turn,
)
from frontdesk.evaluation.scenarios import Scenario, Script
from frontdesk.ir.models import Program
from frontdesk.llm.base import LLM, ScriptError


@dataclass
class Target:
    """A version of the program under test: `label` is "program" or "baseline"."""

    label: str
    path: str
    program: Program
    knowledge: Any = None  # KnowledgeCache, shared by the runs
    tools: Any = None  # ToolRunner, shared by the runs
    models: Any = None  # frontdesk.app.Models: the program's own models, for scenarios that script no `llm`
    digest: str = ""


@dataclass
class RoleModels:
    """The configured models of the simulated user and the judge (None: only scripts can play them)."""

    user: LLM | None = None
    judge: LLM | None = None
    user_temperature: float | None = 0.7


@dataclass
class RunResult:
    scenario: str
    target: str
    repeat: int
    transcript: list[dict[str, Any]] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    turns: int = 0
    ended: bool = False
    escalated: bool = False
    finished: bool = False
    goals_met: bool = False
    finish_reason: str = ""
    max_turns_reached: bool = False
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    usage: dict[str, dict[str, int]] = field(default_factory=dict)
    seconds: float = 0.0
    session_id: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario, "target": self.target, "repeat": self.repeat, "turns": self.turns,
            "ended": self.ended, "escalated": self.escalated, "finished": self.finished,
            "goals_met": self.goals_met, "finish_reason": self.finish_reason,
            "max_turns_reached": self.max_turns_reached, "error": self.error, "notes": self.notes,
            "usage": self.usage, "seconds": round(self.seconds, 3), "session_id": self.session_id,
            "verdicts": [v.to_json() for v in self.verdicts], "transcript": self.transcript,
        }


def missing_models(scenarios: list[Scenario], targets: list[Target], roles: RoleModels) -> list[str]:
    """What is missing for each scenario to run, as sentences; empty when every role has a model."""
    problems = []
    for s in scenarios:
        script = s.script or Script()
        if script.user is None and roles.user is None:
            problems.append(f"scenario '{s.name}': the simulated user has no script and no model")
        if s.needs_judge and script.judge is None and roles.judge is None:
            problems.append(f"scenario '{s.name}': its judge evaluators have no script and no judge model")
        if script.llm is None:
            for t in targets:
                if t.models is None or t.models.llm is None:
                    problems.append(f"scenario '{s.name}': the bot ({t.label}) has no LLM and no scripted `llm:`")
    return problems


def slot_resolver(program: Program) -> Callable[[str], tuple[str, str]]:
    """Where a fixture or `value:` name lives in the session's variables: `agent.arg` (through the
    argument's binding, e.g. book_recommendation.book_wanted -> triage.book), or a bare `arg` that
    one agent (or one binding) has; a bare name no agent has lives where the program keeps such names
    (`Program.slot_of`: ABL's shared `session`, else the entry agent's own)."""

    def follow(scope: str, name: str) -> tuple[str, str]:
        for _ in range(16):  # a binding to an argument that is bound in turn
            slot = program.slot_of(scope, name)
            if slot == (scope, name):
                return slot
            scope, name = slot
        return scope, name

    def resolve(key: str) -> tuple[str, str]:
        if "." in key:
            scope, name = key.split(".", 1)
            return follow(scope, name)
        found = {follow(agent_name, key) for agent_name, agent in program.agents.items() if key in agent.arg_names()}
        if len(found) == 1:
            return found.pop()
        if not found:
            return program.slot_of(None, key)  # where the program keeps names no agent declares
        places = ", ".join(sorted(f"{s}.{n}" for s, n in found))
        raise ValueError(f"{key!r} names several arguments ({places}); write agent.{key}")

    return resolve


def _apply_fixtures(engine, session_id: str, fixtures: dict[str, Any], resolve) -> None:
    """Write the scenario's fixtures into the session: after its start (greeting), before the first message."""
    from frontdesk.runtime.engine import hold_session

    with hold_session(engine.store, session_id):
        state = engine.load_state(session_id)
        for key, value in fixtures.items():
            scope, name = resolve(key)
            state.variables.setdefault(scope, {})[name] = value
        engine.store.save(session_id, state.model_dump(mode="json"))


def _record(transcript: list[dict[str, Any]], result, turn: int) -> None:
    """The turn's tool calls (with their results) and the messages the bot sent."""
    open_calls: list[dict[str, Any]] = []
    for event in result.events:
        data = event.data or {}
        if event.type in ("tool_call", "tool_called"):
            item = {"role": "tool", "turn": turn, "agent": event.agent, "tool": data.get("tool"),
                    "args": data.get("args") or {}, "status": None, "text": ""}
            transcript.append(item)
            open_calls.append(item)
        elif event.type == "tool_result":
            item = next((c for c in open_calls if c["tool"] == data.get("tool")), None)
            if item is not None:
                item["status"] = data.get("status")
                item["text"] = str(data.get("message") or "")
                open_calls.remove(item)
    for message in result.messages:
        transcript.append({"role": "bot", "turn": turn, "agent": message.agent, "text": message.text})


def transcript_text(transcript: list[dict[str, Any]]) -> str:
    """The transcript as the judge reads it."""
    lines = []
    for item in transcript:
        if item["role"] == "user":
            lines.append(f"Customer: {item['text']}")
        elif item["role"] == "bot":
            lines.append(f"Bot ({item.get('agent') or 'bot'}): {item['text']}")
        else:
            args = json.dumps(item.get("args") or {}, ensure_ascii=False, default=str)
            result = f" -> {item['status']}" if item.get("status") else ""
            result += f": {item['text']}" if item.get("text") else ""
            lines.append(f"  [the bot called tool {item['tool']}({args}){result}]")
    return "\n".join(lines)


def _scripted(entries: list[dict] | None, name: str):
    from frontdesk.llm.scripted import ScriptedProvider

    return ScriptedProvider(entries, name=name) if entries is not None else None


def run_scenario(scenario: Scenario, target: Target, roles: RoleModels, repeat: int = 1) -> RunResult:
    """Hold one conversation between the simulated user and the bot, then evaluate it. Never raises:
    a run that breaks has `error` set and every verdict `error`."""
    from frontdesk.runtime.engine import Engine
    from frontdesk.store.memory import MemorySessionStore
    from frontdesk.testing import clock_for

    started = time.perf_counter()
    run = RunResult(scenario.name, target.label, repeat)
    script = scenario.script or Script()
    scripted_user = _scripted(script.user, "scripted-user")
    scripted_judge = _scripted(script.judge, "scripted-judge")
    scripted_bot = _scripted(script.llm, "scripted")
    user_llm = CountingLLM(scripted_user or roles.user) if (scripted_user or roles.user) else None
    judge_llm = CountingLLM(scripted_judge or roles.judge) if (scripted_judge or roles.judge) else None
    if scripted_bot is not None:
        bot_llm, understanding = scripted_bot, None
    else:
        models = target.models
        bot_llm = models.llm if models is not None else None
        understanding = models.understanding if models is not None else None
    transcript = run.transcript
    engine = None
    resolve = slot_resolver(target.program)
    try:
        engine = Engine(target.program, bot_llm, MemorySessionStore(), tools=target.tools,
                        knowledge=target.knowledge, understanding=understanding, clock=clock_for(scenario.today))
        result = engine.start(program_label=target.path, user_id=f"eval-{scenario.name}", channel="eval")
        run.session_id = result.session_id
        _record(transcript, result, 0)
        if scenario.fixtures:
            _apply_fixtures(engine, run.session_id, scenario.fixtures, resolve)
        while True:
            state = engine.load_state(run.session_id)
            if result.ended or (state is not None and state.ended):
                run.ended = True
                break
            if state is not None and state.status == "escalated":
                run.escalated = True
                break
            if run.turns >= scenario.max_turns:
                run.max_turns_reached = True
                break
            if run.turns == 0 and scenario.first_message:
                text = scenario.first_message
            else:
                if user_llm is None:
                    raise SimulatedUserError("the simulated user has no model")
                decision = next_user_turn(user_llm, scenario.persona, scenario.goals, transcript,
                                          roles.user_temperature)
                if decision.finished:
                    run.finished, run.goals_met, run.finish_reason = True, decision.goals_met, decision.reason
                    break
                text = decision.text or ""
            run.turns += 1
            transcript.append({"role": "user", "turn": run.turns, "text": text})
            result = engine.send(run.session_id, text)
            _record(transcript, result, run.turns)
    except SimulatedUserError as exc:
        run.error = str(exc)
    except ScriptError as exc:
        run.error = f"the bot's script: {exc}"
    except Exception as exc:  # noqa: BLE001 - one broken run must not stop the others
        run.error = f"{type(exc).__name__}: {exc}"
    state = engine.load_state(run.session_id) if engine is not None and run.session_id else None
    events = engine.store.events(run.session_id) if engine is not None and run.session_id else []
    if state is not None:
        run.usage["bot"] = {"calls": state.tokens.get("calls", 0), "prompt_tokens": state.tokens.get("prompt", 0),
                            "completion_tokens": state.tokens.get("completion", 0)}
    else:
        run.usage["bot"] = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
    if run.error is None:
        conversation = Conversation(
            transcript=transcript, events=events, turns=run.turns,
            variables=state.variables if state is not None else {}, slot_of=resolve,
            ended=run.ended, escalated=run.escalated, finished=run.finished, goals_met=run.goals_met,
            finish_reason=run.finish_reason, agents=tuple(target.program.agents), tools=tuple(target.program.tools))
        text = transcript_text(transcript)

        def ask_judge(criterion: str):
            return judge(judge_llm, criterion, text, scenario.persona, scenario.goals)  # type: ignore[arg-type]

        for evaluator in scenario.evaluators:
            run.verdicts.append(evaluate(evaluator, conversation, ask_judge if judge_llm is not None else None))
    else:
        run.verdicts = [Verdict(e.label, e.kind, "error", f"the conversation did not run to its end: {run.error}")
                        for e in scenario.evaluators]
    for role, counted in (("user", user_llm), ("judge", judge_llm)):
        run.usage[role] = counted.usage() if counted is not None else {"calls": 0, "prompt_tokens": 0,
                                                                       "completion_tokens": 0}
    for role, scripted in (("bot", scripted_bot), ("simulated user", scripted_user), ("judge", scripted_judge)):
        if scripted is not None and scripted.remaining() and run.error is None:
            run.notes.append(f"{scripted.remaining()} scripted {role} answers were not used")
    run.seconds = time.perf_counter() - started
    return run


def run_all(scenarios: list[Scenario], targets: list[Target], roles: RoleModels, concurrency: int = 4,
            repeat: int = 1, on_result: Callable[[RunResult], None] | None = None) -> list[RunResult]:
    """Every scenario, `repeat` times, against every target, at most `concurrency` at a time; the results
    in the order scenario, repetition, target (whatever order they finished in)."""
    jobs = [(s, t, r) for s in scenarios for r in range(1, repeat + 1) for t in targets]
    results: list[RunResult | None] = [None] * len(jobs)
    pool = ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="frontdesk-eval")
    try:
        futures = {pool.submit(run_scenario, s, t, roles, r): i for i, (s, t, r) in enumerate(jobs)}
        for future in as_completed(futures):
            result = future.result()
            results[futures[future]] = result
            if on_result is not None:
                on_result(result)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return [r for r in results if r is not None]
