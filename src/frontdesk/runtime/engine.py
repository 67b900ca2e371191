"""The turn engine: loads a session, delivers a user message, drives the agents, stores the result."""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from random import Random, SystemRandom

from frontdesk.expr.evaluator import EvalEnv
from frontdesk.ir.models import InactivityRule, Program
from frontdesk.llm.base import LLM
from frontdesk.nlu.base import Understanding
from frontdesk.runtime import escalation, handoff, orchestration
from frontdesk.runtime.answering import KnowledgeCache, KnowledgeExecutor
from frontdesk.runtime.context import (
    BotMessage,
    TurnContext,
    TurnPreempted,
    TurnInput,
)
from frontdesk.runtime.events import Event, EventLog, register_event_type
from frontdesk.runtime.flow import FlowExecutor
from frontdesk.runtime.pipeline import Pipeline
from frontdesk.runtime.policies import KIND_OF, new_frame
from frontdesk.runtime.reasoning import ReasoningExecutor
from frontdesk.runtime.remote import RemoteExecutor
from frontdesk.runtime.routing import RouterExecutor
from frontdesk.runtime.rules import RulesHook, declares_rules
from frontdesk.runtime.state import (
    FlowData,
    Frame,
    HistoryItem,
    SessionState,
    bound_history,
    load_state,
)
from frontdesk.runtime.steps import Call, ChildResult, Done, Escalate, Transfer, UnknownStep, Wait, Yield
from frontdesk.runtime import inactivity
from frontdesk.runtime.tools import ProgramToolRunner, ToolRunner
from frontdesk.runtime.usertext import check_text
from frontdesk.store.base import DEFAULT_LOCK_TIMEOUT, SessionStore
from frontdesk.store.longterm import DictMemoryStore, MemoryStore

MAX_TRANSITIONS_PER_TURN = 1000
LAST_INPUT_KEY = "last_input_at"  # state.system: when the user last wrote (seconds since the epoch)
FIRED_KEY = "inactivity_fired"  # state.system: the delays of the inactivity rules run since then
ENDED_REPLY = "This conversation has ended. Please start a new one if you need anything else."
LOOP_APOLOGY = "Sorry, I got stuck. Let's start over: how can I help you?"


register_event_type("session_escalated", "an agent handed the conversation to a person", ("reason",))
register_event_type("inactivity", "the user said nothing for a while: a timed rule reminds them or ends the session",
                    ("after", "action"))
register_event_type("turn_preempted", "a newer message superseded this turn; only its message was kept",
                    ("dropped_events",))
register_event_type("execution.started", "a turn began: the agent that holds the conversation", ("agent",))
register_event_type("execution.completed", "a turn ended: what it cost and where the conversation is",
                    ("messages", "llm_calls", "prompt_tokens", "completion_tokens"))


# The session whose lock this thread holds and the version it loaded (see hold_session).
_HELD: ContextVar[tuple[str, int | None] | None] = ContextVar("frontdesk_held_session", default=None)


@contextmanager
def hold_session(store: SessionStore, session_id: str, timeout: float = DEFAULT_LOCK_TIMEOUT) -> Iterator[None]:
    """Hold the session's store lock (across threads and, for SQLite, Redis and PostgreSQL, processes), so
    that turns of one session run one after another; the version seen under the lock is what the turn's
    save expects (a ConflictError if someone wrote meanwhile). Calls nested in the same thread for the same
    session take nothing: a server holds the session while it checks a message, then runs the turn."""
    held = _HELD.get()
    if held is not None and held[0] == session_id:
        yield
        return
    lock = getattr(store, "lock", None)
    with lock(session_id, timeout) if callable(lock) else nullcontext():
        version_of = getattr(store, "version_of", None)
        versioned = getattr(store, "load_versioned", None)
        version = version_of(session_id) if callable(version_of) else \
            versioned(session_id)[1] if callable(versioned) else None
        token = _HELD.set((session_id, version))
        try:
            yield
        finally:
            _HELD.reset(token)


def held_session() -> str | None:
    """The session whose turn this thread is running (under hold_session), if any."""
    held = _HELD.get()
    return held[0] if held else None


class SessionNotFound(LookupError):
    """No session by that id, or one this version of Frontdesk cannot read."""


@dataclass
class TurnResult:
    session_id: str
    messages: list[BotMessage] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    ended: bool = False
    active_agent: str | None = None
    preempted: bool = False  # superseded by a newer message (`preemptive`): only the user's message was kept


def program_digest(program: Program) -> str:
    """The version of a program: a digest of its IR (sessions record the version they started on)."""
    return hashlib.sha256(program.model_dump_json().encode()).hexdigest()[:16]


class Engine:
    """Runs conversations of one program. Everything it remembers between turns is in the store."""

    def __init__(self, program: Program, llm: LLM | None, store: SessionStore,
                 tools: ToolRunner | None = None, clock: Callable[[], float] | None = None,
                 listener: Callable[[Event], None] | None = None,
                 understanding: Understanding | None = None, knowledge: KnowledgeCache | None = None,
                 memory: MemoryStore | None = None, hooks: list[object] | None = None,
                 random: Random | None = None, orchestration: str | None = None) -> None:
        self.program = program
        # the strategy every router runs, whatever the program says (`--orchestration`); None: the program's
        self.orchestration = orchestration
        self.llm = llm
        self.store = store
        self.tools = tools or ProgramToolRunner(program)
        self.clock = clock
        # every event goes to each subscriber as it happens (the CLI's live trace, tests, exporters)
        self.subscribers: list[Callable[[Event], None]] = [listener] if listener else []
        self.understanding = understanding
        # persistent memory (user, project and execution-tree facts): where the store keeps it, else in-process
        if memory is None:
            kept = getattr(store, "memory_store", None)
            memory = kept() if callable(kept) else DictMemoryStore()
        self.memory: MemoryStore = memory
        self.option_cache: dict = {}
        # what expressions read as NOW() and draw UNIQUE_ID() from: the engine's clock, and `random`
        # (a seeded random.Random in tests)
        self.eval_env = EvalEnv(clock=self._now, random=random or SystemRandom())
        # hooks at the turn's interception points (input, tool calls, output, turn end) and where the
        # agents are driven (an agent finishing, a handoff, after the agents ran): see pipeline.py;
        # the agents' declared rules (constraints, guardrails, hooks, memory) are the pipeline's first hook
        self.pipeline = Pipeline(([RulesHook()] if declares_rules(program) else []) + list(hooks or []))
        # knowledge agents' indexes, built on first use (the application wires its fetcher, embedder and
        # progress display); by default web pages are fetched and retrieval is keyword-only
        self.knowledge = knowledge if knowledge is not None else KnowledgeCache(program)
        self.digest = program_digest(program)
        self.lock_timeout = DEFAULT_LOCK_TIMEOUT  # seconds a turn waits while another turn holds the session
        self.executors = {
            "flow": FlowExecutor(),
            "reasoning": ReasoningExecutor(),
            "router": RouterExecutor(),
            "knowledge": KnowledgeExecutor(),
            "remote": RemoteExecutor(),
        }

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self.clock() if self.clock else time.time(), UTC)

    @property
    def rules(self) -> RulesHook | None:
        """The hook of the agents' declared rules in the pipeline, if the program declares any."""
        return next((h for h in self.pipeline.hooks if isinstance(h, RulesHook)), None)

    # ---- public API ----------------------------------------------------------------

    def subscribe(self, subscriber: Callable[[Event], None]) -> None:
        """Hand every event of every later turn to `subscriber` as it happens."""
        self.subscribers.append(subscriber)

    def add_hook(self, hook: object) -> None:
        """Attach a hook to the turn pipeline's interception points (see runtime/pipeline.py)."""
        self.pipeline.add(hook)

    def start(self, session_id: str | None = None, program_label: str = "", user_id: str = "",
              channel: str = "") -> TurnResult:
        """Create a session and run the program until it first waits for the user. Text a session cannot
        keep (a lone surrogate, a NUL) in any argument is an UnkeepableText, and nothing is stored."""
        for what, given in (("the session id", session_id or ""), ("the program label", program_label),
                            ("the user id", user_id), ("the channel", channel)):
            check_text(given, what)
        session_id = session_id or uuid.uuid4().hex[:12]
        with self._session_turn(session_id):
            return self._start_session(session_id, program_label, user_id, channel)

    def _start_session(self, session_id: str, program_label: str, user_id: str, channel: str) -> TurnResult:
        state = SessionState(session_id=session_id, program=program_label, program_digest=self.digest,
                             user_id=user_id, channel=channel)
        ctx = self.context(state)
        ctx.log.emit("session_started", None, program=program_label, entry=self.program.entry)
        state.system[LAST_INPUT_KEY] = self._now().timestamp()
        state.stack.append(new_frame(ctx, self.program.entry))
        ctx.log.emit("agent_started", self.program.entry, by="session")
        return self._finish(ctx)

    def human_completed(self, session_id: str, human: dict) -> TurnResult:
        """The person an escalated session went to hands it back (ABL ESCALATE on_human_complete):
        `human` is their report ({"resolved": true, "resolution_summary": ...}). See runtime/escalation.py."""
        with self._session_turn(session_id):
            return self._human_completed(session_id, human)

    def _human_completed(self, session_id: str, human: dict) -> TurnResult:
        raw = self.store.load(session_id)
        if raw is None:
            raise SessionNotFound(f"no session {session_id!r}")
        state = load_state(raw, self.program.tools)
        state.turn += 1
        ctx = self.context(state)
        escalation.human_completed(ctx, human)
        return self._finish(ctx, drive=False)

    def send(self, session_id: str, text: str, preempt: Callable[[], bool] | None = None) -> TurnResult:
        """Run a turn for the user's message. With `preempt` (the `preemptive` strategy), the turn asks it
        before each agent step and LLM call, until a tool has run, whether a newer message supersedes
        it; if so, the session keeps the message in its history and nothing else of the turn. A message a
        session cannot keep (a lone surrogate, a NUL) is an UnkeepableText before anything is loaded or run."""
        check_text(text)
        with self._session_turn(session_id):
            return self._send(session_id, text, preempt)

    # ---- inactivity ----------------------------------------------------------------

    def inactivity_rules(self, state: SessionState) -> list[InactivityRule]:
        """The timed rules of the agents the session is with (ADL exit/fallback policy text, ABL EXECUTION
        session_timeout), by delay; a delay two agents both set counts once (the innermost agent's)."""
        rules: dict[float, InactivityRule] = {}
        for frame in state.stack:
            agent = self.program.agents.get(frame.agent)
            for rule in inactivity.rules_of(agent) if agent is not None else ():
                rules[rule.after] = rule
        return [rules[after] for after in sorted(rules)]

    def _due(self, state: SessionState, now: float) -> InactivityRule | None:
        since = state.system.get(LAST_INPUT_KEY)
        if not isinstance(since, (int, float)):
            return None
        return inactivity.due(self.inactivity_rules(state), now - since, state.system.get(FIRED_KEY) or [])

    def _timestamp(self, now: float | None = None) -> float:
        """`now` if given, else the engine's clock, in seconds since the epoch."""
        return now if now is not None else self._now().timestamp()

    def idle(self, session_id: str, now: float | None = None) -> TurnResult | None:
        """Run the inactivity rule that is due for the session, if any, as a turn with no user message:
        a reminder, or good-bye and the session's end. None when nothing was due (decided under the
        session's lock, so two timers, in two processes, never run the same rule twice)."""
        with self._session_turn(session_id):
            raw = self.store.load(session_id)
            if raw is None or raw.get("status") != "waiting":
                return None
            try:
                state = load_state(raw, self.program.tools)
            except ValueError:
                return None
            now = self._timestamp(now)
            rule = self._due(state, now)
            if rule is None:
                return None
            state.turn += 1
            idle_for = now - state.system[LAST_INPUT_KEY]
            state.system[FIRED_KEY] = [*(state.system.get(FIRED_KEY) or []), rule.after]
            ctx = self.context(state)
            ctx.log.emit("inactivity", None, after=rule.after, action=rule.action, idle=round(idle_for, 3))
            active = next((f.agent for f in reversed(state.stack) if f.graph == "main"), None)
            ctx.say(active, inactivity.said(rule))
            if rule.action == "end":
                state.ended = True
                ctx.log.emit("session_ended", active, reason=f"no input for {rule.after:g} s")
            return self._finish(ctx, drive=False)

    def _session_turn(self, session_id: str):
        return hold_session(self.store, session_id, self.lock_timeout)

    def _send(self, session_id: str, text: str, preempt: Callable[[], bool] | None = None) -> TurnResult:
        raw = self.store.load(session_id)
        if raw is None:
            raise SessionNotFound(f"no session {session_id!r}")
        try:
            state = load_state(raw, self.program.tools)
        except ValueError as exc:
            raise SessionNotFound(f"session {session_id!r} cannot be continued: {exc}") from exc
        state.turn += 1
        if state.status == "waiting":
            state.status = "active"
        ctx = self.context(state)
        was_over = state.ended or not state.stack
        if state.program_digest != self.digest:
            self._adopt_program(ctx)
        text = text.strip()
        if state.status == "escalated" and state.stack and not state.ended:
            # A person has the conversation: the message is kept for them and nothing else runs.
            escalation.hold(ctx, text)
            return self._finish(ctx, drive=False, held=True)
        state.system[LAST_INPUT_KEY] = self._now().timestamp()  # inactivity rules count from here
        state.system.pop(FIRED_KEY, None)
        incoming = self.pipeline.input_received(ctx, text)
        text = incoming.text.strip()
        state.history.append(HistoryItem(role="user", text=text, turn=state.turn))
        ctx.log.emit("user_message", None, text=text)
        escalation.read_sentiment(ctx, text)  # ABL 8.8 user.sentiment, sentiment_trajectory
        if incoming.blocked is not None:
            # An input hook (a guardrail) stopped the message: no agent sees it.
            ctx.say(incoming.speaker, incoming.blocked)
            return self._finish(ctx, drive=False)
        if state.ended or not state.stack:
            ctx.log.emit("warning", None, message="the conversation has ended; start a new session")
            if was_over:
                ctx.say(None, ENDED_REPLY)
            return self._finish(ctx)
        # The message belongs to the turn: the agent on top of the stack is offered it first.
        ctx.input = TurnInput(text, ctx.log)
        if preempt is None:
            return self._finish(ctx)
        kept = state.model_dump(mode="json")  # the session with the message read and nothing done yet
        heard = len(ctx.log.events)
        ctx.preempt = preempt
        try:
            return self._finish(ctx)
        except TurnPreempted:
            return self._preempted(ctx, kept, heard)

    def _preempted(self, ctx: TurnContext, kept: dict, heard: int) -> TurnResult:
        """Store the session as it was when the superseded turn had read its message (which stays in the
        history, for the next turn to see), and the events up to then with a `turn_preempted`."""
        state = load_state(kept, self.program.tools)
        spent = {k: ctx.state.tokens.get(k, 0) - state.tokens.get(k, 0) for k in ("calls", "prompt", "completion")}
        dropped = ctx.log.truncate(heard)
        ctx.log.emit("turn_preempted", None, dropped_events=dropped,
                     reason="a newer message of the session arrived before this turn had done anything lasting")
        # the turn ends as every turn does (what its LLM calls cost was spent, though nothing else is kept)
        ctx.log.emit("execution.completed", None, messages=0, llm_calls=spent["calls"],
                     prompt_tokens=spent["prompt"], completion_tokens=spent["completion"], status="preempted")
        return self._save(state, ctx, [], preempted=True)

    def _adopt_program(self, ctx: TurnContext) -> None:
        """The program changed since the session's last turn: keep the session where its frames
        still exist in the new program, otherwise start the conversation over (history kept)."""
        state = ctx.state
        state.program_digest = self.digest
        if all(self._frame_fits(f) for f in [*state.stack, *(f for t in state.threads.values() for f in t.frames)]):
            ctx.log.emit("warning", None, message="the program changed since the last turn; continuing")
            return
        ctx.log.emit("warning", None, message="the program changed and the session's position no longer "
                                              "exists in it; the conversation starts over")
        state.stack = [new_frame(ctx, self.program.entry)]
        state.threads = {}
        state.ended = False
        self._drive(ctx)

    def _frame_fits(self, frame: Frame) -> bool:
        agent = self.program.agents.get(frame.agent)
        if agent is None or KIND_OF.get(agent.kind) != frame.kind and frame.graph == "main":
            return False
        graph = agent.setup if frame.graph == "setup" else getattr(agent, "graph", None)
        nodes = graph.nodes if graph is not None else {}
        data = frame.data
        positions = [data.node, data.last_listen, *data.returns] if isinstance(data, FlowData) else []
        return all(p is None or p in nodes for p in positions)

    def load_state(self, session_id: str) -> SessionState | None:
        raw = self.store.load(session_id)
        return load_state(raw, self.program.tools) if raw is not None else None

    # ---- the loop ------------------------------------------------------------------

    def context(self, state: SessionState) -> TurnContext:
        """A turn's context over `state`: what executors, hooks and tests read and write it through."""
        log = EventLog(state.event_seq, state.turn, clock=self.clock, subscribers=self.subscribers)
        ctx = TurnContext(program=self.program, state=state, llm=self.llm, tools=self.tools, log=log,
                          knowledge=self.knowledge, understanding=self.understanding, eval_env=self.eval_env,
                          option_cache=self.option_cache, memory=self.memory, pipeline=self.pipeline,
                          driver=self)
        self.pipeline.context_opened(ctx)  # the rules: lifecycle events drive MEMORY recall and agent HOOKS
        return ctx

    def _finish(self, ctx: TurnContext, drive: bool = True, held: bool = False) -> TurnResult:
        before = dict(ctx.state.tokens)
        active = next((f.agent for f in reversed(ctx.state.stack) if f.graph == "main"), None)
        ctx.log.emit("execution.started", active, agent=active, turn=ctx.state.turn)
        if drive:
            try:
                if not orchestration.before_turn(ctx):  # guardrails, routing first, drafting
                    self._drive(ctx)
            finally:
                orchestration.after_turn(ctx)
        if not held:  # the rules: ON_FAIL actions, every-turn constraints, after_turn hooks
            self.pipeline.after_drive(ctx)
        if not held:
            escalation.after_turn(ctx)  # ESCALATE triggers; every escalation gets its context_for_human
        state = ctx.state
        if ctx.input.is_open and ctx.input.passed:
            ctx.log.emit("step", None, action="the message was handled; nobody else took the rest of it",
                         passed=ctx.input.passed)
        sent = list(ctx.said) if held else ctx.send_output()  # held: the program's own holding words
        ctx.sent = sent
        if not held:
            self.pipeline.turn_end(ctx)
        now_active = next((f.agent for f in reversed(state.stack) if f.graph == "main"), None)
        ctx.log.emit("execution.completed", now_active, messages=len(sent),
                     llm_calls=state.tokens["calls"] - before.get("calls", 0),
                     prompt_tokens=state.tokens["prompt"] - before.get("prompt", 0),
                     completion_tokens=state.tokens["completion"] - before.get("completion", 0),
                     status=state.status)
        bound_history(state)
        return self._save(state, ctx, sent)

    def _save(self, state: SessionState, ctx: TurnContext, sent: list[BotMessage],
              preempted: bool = False) -> TurnResult:
        """Store the session after a turn with the turn's events, in one write; when this thread holds the
        session (hold_session), the write expects the version seen when it was taken."""
        if state.status == "active":
            state.status = "waiting"  # for the user's next message
        state.event_seq = ctx.log.next_seq
        held = _HELD.get()
        expected = {"expected_version": held[1]} if held and held[0] == state.session_id and held[1] is not None else {}
        self.store.save_turn(state.session_id, state.model_dump(mode="json"),
                             [e.model_dump(mode="json") for e in ctx.log.events], **expected)
        active = next((f.agent for f in reversed(state.stack) if f.graph == "main"), None)
        return TurnResult(state.session_id, sent, ctx.log.events, state.ended, active, preempted=preempted)

    def drive_task(self, ctx: TurnContext) -> ChildResult | None:
        """Drive a fan_out task's own stack (its own context, see runtime/fanout.py) with the same loop
        as a turn. The result of the agent that ended last once the stack is empty, or of one that asks
        to escalate (kind `escalate`, left on the stack, the session untouched); None when an agent
        waits for the user (it is left on the stack). No exit policy starts another agent after the
        task's own, and the session never ends here."""
        return self._drive(ctx, task=True)

    def drive_turn(self, ctx: TurnContext) -> None:
        """Drive a context's stack as a turn does (a best-of-n / first-success draft runs on its own copy
        of the session, see runtime/orchestration.py)."""
        self._drive(ctx)

    def child_finished(self, frame: Frame, result: ChildResult, ctx: TurnContext) -> None:
        """Give `frame`'s executor the result of a child that ended or stepped aside."""
        self.executors[frame.kind].child_finished(frame, result, ctx)

    def _drive(self, ctx: TurnContext, task: bool = False) -> ChildResult | None:
        stack = ctx.state.stack
        last: ChildResult | None = None  # task: the result of the agent that ended last
        for _ in range(MAX_TRANSITIONS_PER_TURN):
            if not stack:
                if task:
                    return last
                if not ctx.state.ended:
                    ctx.state.ended = True
                    ctx.log.emit("session_ended", None)
                return
            frame = stack[-1]
            if not task:
                ctx.check_preempted()
            step = self.executors[frame.kind].run(frame, ctx)
            match step:
                case Wait():
                    return
                case Call(frame=child):
                    handoff.start(ctx, child, frame.id, frame.agent)
                    continue
                case Escalate():
                    if task:  # the fan_out's caller decides whether the conversation goes to a person
                        return handoff.result_of(ctx, frame, step)
                    self._escalate(frame, step, ctx)
                    return
                case Transfer():
                    handoff.transfer(ctx, frame, step)
                    continue
                case Yield():
                    if handoff.return_to_parent(ctx, frame, step):  # the agent that handed over takes it back
                        continue
                    thread = handoff.suspend_chain(ctx, frame, step)
                    base = thread.base if thread is not None else frame
                    result = handoff.result_of(ctx, base, step, thread)
                case Done():
                    finishing = self.pipeline.before_done(ctx, frame, step)  # the rules: BEFORE returning results
                    if finishing.verdict == "continue":
                        continue
                    if finishing.verdict == "stop":
                        return
                    step = finishing.outcome
                    stack.pop()
                    frame.status = "done"
                    self._finished(frame, step, ctx)
                    result = handoff.result_of(ctx, frame, step)
                    if handoff.resume_handoff(ctx, frame, result):
                        continue
                case _:
                    raise UnknownStep(step, frame.agent)
            last = result
            if stack:
                self.child_finished(stack[-1], result, ctx)
            if isinstance(step, Done) and frame.graph == "main" and not (task and not stack):
                self._apply_exit(frame, step, ctx)
        if task:
            ctx.log.emit("error", None, where="engine", message=f"{MAX_TRANSITIONS_PER_TURN} agent transitions "
                         "in one fan_out task: agents keep calling each other")
            base = stack[0] if stack else None
            del stack[:]
            return ChildResult(agent=base.agent if base else "", frame_id=base.id if base else "", graph="main",
                               kind="done", status="error", message="the task's agents kept calling each other")
        ctx.log.emit("error", None, where="engine",
                     message=f"{MAX_TRANSITIONS_PER_TURN} agent transitions in one turn: agents keep calling each other")
        ctx.say(None, LOOP_APOLOGY)
        while len(stack) > 1 and stack[-1].kind != "router":
            stack.pop()
        if stack:
            ctx.input.state = "taken"
            stack[-1].waiting = True

    def _escalate(self, frame: Frame, step: Escalate, ctx: TurnContext) -> None:
        """The agent hands the conversation to a person: the session says so and waits."""
        ctx.state.status = "escalated"
        ctx.log.emit("session_escalated", frame.agent, reason=step.reason)
        escalation.escalate(ctx, frame.agent, step.reason)  # context_for_human, `escalated` event
        if ctx.input.available_to(frame) or ctx.input.is_open:
            ctx.input.state = "taken"
        frame.waiting = True

    def _finished(self, frame: Frame, outcome: Done, ctx: TurnContext) -> None:
        if frame.graph == "setup":
            return
        ctx.set_status(frame.agent, outcome.status, outcome.message)
        ctx.log.emit("agent_finished", frame.agent, status=outcome.status, message=outcome.message)
        if outcome.status == "success":
            self._drop_interrupted(frame.agent, ctx)

    def _drop_interrupted(self, agent: str, ctx: TurnContext) -> None:
        """A task completed: an interrupted run of the same agent is not brought back later."""
        for thread in [t for t in ctx.state.threads.values() if t.base.agent == agent and t.reason != "handoff"]:
            del ctx.state.threads[thread.id]
            owner = next((f.agent for f in ctx.state.stack if f.id == thread.owner), None)
            ctx.log.emit("agent_dropped", agent, by=owner,
                         reason="the same task was completed since it was interrupted")

    def _apply_exit(self, frame: Frame, outcome: Done, ctx: TurnContext) -> None:
        agent = self.program.agents[frame.agent]
        policy = agent.exit
        if outcome.ends_conversation:
            self._end_conversation(frame, outcome, ctx)
            return
        if policy is None or policy.kind == "default" or outcome.status != "success":
            return
        if policy.kind == "agent" and policy.value in self.program.agents:
            ctx.log.emit("step", frame.agent, action="exit policy", agent=policy.value)
            parent = ctx.state.stack[-1].id if ctx.state.stack else None
            handoff.start(ctx, new_frame(ctx, policy.value), parent, f"exit policy of {frame.agent}")

    @staticmethod
    def _end_conversation(frame: Frame, outcome: Done, ctx: TurnContext) -> None:
        """The user ended the conversation (a goodbye its exit policy recognised): the agents below the
        one that said goodbye end with it, no interrupted task waits, and the session is over."""
        stack = ctx.state.stack
        ended = [f.agent for f in reversed(stack)]
        for below in stack:
            below.status = "done"
        del stack[:]
        ctx.state.threads.clear()
        ctx.state.ended = True
        ctx.log.emit("session_ended", frame.agent, reason=outcome.message or "the user ended the conversation",
                     **({"ended_agents": ended} if ended else {}))
