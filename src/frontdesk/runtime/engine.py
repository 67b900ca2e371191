"""The turn engine: loads a session, delivers a user message, drives the agents, stores the result."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field
from typing import Callable

from frontdesk.ir.models import Program, RouterAgent
from frontdesk.llm.base import LLM
from frontdesk.nlu.base import Understanding
from frontdesk.runtime.answering import KnowledgeCache, KnowledgeExecutor
from frontdesk.runtime.context import BotMessage, Outcome, TurnContext, TurnInput
from frontdesk.runtime.events import Event, EventLog
from frontdesk.runtime.flow import FlowExecutor
from frontdesk.runtime.policies import KIND_OF, new_frame
from frontdesk.runtime.reasoning import ReasoningExecutor
from frontdesk.runtime.routing import RouterExecutor
from frontdesk.runtime.state import Frame, HistoryItem, SessionState, bound_history, load_state
from frontdesk.runtime.tools import PythonToolRunner, ToolRunner
from frontdesk.store.base import SessionStore
from frontdesk.store.longterm import DictMemoryStore, MemoryStore

MAX_TRANSITIONS_PER_TURN = 1000
LOOP_APOLOGY = "Sorry, I got stuck. Let's start over: how can I help you?"


class SessionNotFound(LookupError):
    """No session by that id, or one this version of Frontdesk cannot read."""


@dataclass
class TurnResult:
    session_id: str
    messages: list[BotMessage] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    ended: bool = False
    active_agent: str | None = None


def program_digest(program: Program) -> str:
    return hashlib.sha256(program.model_dump_json().encode()).hexdigest()[:16]


def binding_aliases(program: Program) -> dict[tuple[str, str], tuple[str, str]]:
    """Two-way (`ref`) bindings make a member's argument another name for the router's."""
    aliases: dict[tuple[str, str], tuple[str, str]] = {}
    for agent in program.agents.values():
        if isinstance(agent, RouterAgent):
            for member in agent.members:
                for b in member.bindings:
                    if b.two_way:
                        aliases.setdefault((member.agent, b.member_arg), (agent.name, b.router_arg))
    return aliases


def number_frames(state: SessionState) -> None:
    """Give frames stored before frames had ids one, so the turn's message can be offered to them."""
    def visit(frame: Frame) -> None:
        if not frame.id:
            frame.id = f"f{state.next_frame}"
            state.next_frame += 1
        for child in [*frame.suspended, *frame.called]:
            visit(child)

    for frame in state.stack:
        visit(frame)


class Engine:
    """Runs conversations of one program. Everything it remembers between turns is in the store."""

    def __init__(self, program: Program, llm: LLM | None, store: SessionStore,
                 tools: ToolRunner | None = None, clock: Callable[[], float] | None = None,
                 fetch_urls: bool = True, listener: Callable[[Event], None] | None = None,
                 understanding: Understanding | None = None, embedder=None, progress: bool = False,
                 memory: MemoryStore | None = None) -> None:
        self.program = program
        self.llm = llm
        self.store = store
        self.tools = tools or PythonToolRunner(program)
        self.clock = clock
        # every event goes to each subscriber as it happens (the CLI's live trace, tests, exporters)
        self.subscribers: list[Callable[[Event], None]] = [listener] if listener else []
        self.understanding = understanding
        # persistent memory (user, project and execution-tree facts); in-process unless one is given
        self.memory: MemoryStore = memory if memory is not None else DictMemoryStore()
        self.option_cache: dict = {}
        self.knowledge = KnowledgeCache(program, fetch_urls=fetch_urls, embedder=embedder, progress=progress)
        self.aliases = binding_aliases(program)
        self.digest = program_digest(program)
        self.executors = {
            "flow": FlowExecutor(),
            "reasoning": ReasoningExecutor(),
            "router": RouterExecutor(),
            "knowledge": KnowledgeExecutor(),
        }

    # ---- public API ----------------------------------------------------------------

    def subscribe(self, subscriber: Callable[[Event], None]) -> None:
        """Hand every event of every later turn to `subscriber` as it happens."""
        self.subscribers.append(subscriber)

    def start(self, session_id: str | None = None, program_label: str = "", user_id: str = "",
              channel: str = "") -> TurnResult:
        """Create a session and run the program until it first waits for the user."""
        session_id = session_id or uuid.uuid4().hex[:12]
        state = SessionState(session_id=session_id, program=program_label, program_digest=self.digest,
                             user_id=user_id, channel=channel)
        ctx = self._context(state)
        ctx.log.emit("session_started", None, program=program_label, entry=self.program.entry)
        state.stack.append(new_frame(ctx, self.program.entry))
        ctx.log.emit("agent_started", self.program.entry, by="session")
        return self._finish(ctx)

    def send(self, session_id: str, text: str) -> TurnResult:
        raw = self.store.load(session_id)
        if raw is None:
            raise SessionNotFound(f"no session {session_id!r}")
        try:
            state = load_state(raw)
        except ValueError as exc:
            raise SessionNotFound(f"session {session_id!r} cannot be continued: {exc}") from exc
        number_frames(state)
        state.turn += 1
        if state.status == "waiting":
            state.status = "active"
        ctx = self._context(state)
        if state.program_digest != self.digest:
            self._adopt_program(ctx)
        text = text.strip()
        state.history.append(HistoryItem(role="user", text=text, turn=state.turn))
        ctx.log.emit("user_message", None, text=text)
        if state.ended or not state.stack:
            ctx.log.emit("warning", None, message="the conversation has ended; start a new session")
            return self._finish(ctx)
        # The message belongs to the turn: the agent on top of the stack is offered it first.
        ctx.input = TurnInput(text, ctx.log)
        return self._finish(ctx)

    def _adopt_program(self, ctx: TurnContext) -> None:
        """The program changed since the session's last turn: keep the session where its frames
        still exist in the new program, otherwise start the conversation over (history kept)."""
        state = ctx.state
        state.program_digest = self.digest
        if all(self._frame_fits(f) for f in state.stack):
            ctx.log.emit("warning", None, message="the program changed since the last turn; continuing")
            return
        ctx.log.emit("warning", None, message="the program changed and the session's position no longer "
                                              "exists in it; the conversation starts over")
        state.stack = [new_frame(ctx, self.program.entry)]
        state.ended = False
        self._drive(ctx)

    def _frame_fits(self, frame: Frame) -> bool:
        agent = self.program.agents.get(frame.agent)
        if agent is None or KIND_OF.get(agent.kind) != frame.kind and frame.graph == "main":
            return False
        graph = agent.setup if frame.graph == "setup" else getattr(agent, "graph", None)
        nodes = graph.nodes if graph is not None else {}
        positions = [frame.node, frame.last_listen, *frame.returns]
        return all(p is None or p in nodes for p in positions) and \
            all(self._frame_fits(f) for f in [*frame.suspended, *frame.called])

    def load_state(self, session_id: str) -> SessionState | None:
        raw = self.store.load(session_id)
        return load_state(raw) if raw is not None else None

    # ---- the loop ------------------------------------------------------------------

    def _context(self, state: SessionState) -> TurnContext:
        log = EventLog(state.event_seq, state.turn, clock=self.clock, subscribers=self.subscribers)
        return TurnContext(program=self.program, state=state, llm=self.llm, tools=self.tools, log=log,
                           aliases=self.aliases, knowledge=self.knowledge, understanding=self.understanding,
                           option_cache=self.option_cache, memory=self.memory)

    def _finish(self, ctx: TurnContext) -> TurnResult:
        self._drive(ctx)
        state = ctx.state
        if ctx.input.is_open and ctx.input.passed:
            ctx.log.emit("step", None, action="the message was handled; nobody else took the rest of it",
                         passed=ctx.input.passed)
        bound_history(state)
        if state.status == "active":
            state.status = "waiting"  # for the user's next message
        state.event_seq = ctx.log.next_seq
        self.store.save_turn(state.session_id, state.model_dump(mode="json"),
                             [e.model_dump(mode="json") for e in ctx.log.events])
        active = next((f.agent for f in reversed(state.stack) if f.graph == "main"), None)
        return TurnResult(state.session_id, ctx.said, ctx.log.events, state.ended, active)

    def _drive(self, ctx: TurnContext) -> None:
        stack = ctx.state.stack
        for _ in range(MAX_TRANSITIONS_PER_TURN):
            if not stack:
                if not ctx.state.ended:
                    ctx.state.ended = True
                    ctx.log.emit("session_ended", None)
                return
            frame = stack[-1]
            outcome = self.executors[frame.kind].run(frame, ctx)
            if outcome.kind == "wait":
                return
            if outcome.kind == "push":
                assert outcome.frame is not None
                stack.append(outcome.frame)
                if outcome.frame.graph == "main" and not outcome.frame.started:
                    ctx.log.emit("agent_started", outcome.frame.agent, by=frame.agent)
                continue
            if outcome.kind in ("hand_back", "switch"):
                frame = self._suspend_chain(frame, ctx)
            else:
                stack.pop()
            self._finished(frame, outcome, ctx)
            if stack:
                parent = stack[-1]
                self.executors[parent.kind].child_finished(parent, frame, outcome, ctx)
                if outcome.kind == "done" and frame.graph == "main":
                    self._apply_exit(frame, outcome, ctx)
        ctx.log.emit("error", None, where="engine",
                     message=f"{MAX_TRANSITIONS_PER_TURN} agent transitions in one turn: agents keep calling each other")
        ctx.say(None, LOOP_APOLOGY)
        while len(stack) > 1 and stack[-1].kind != "router":
            stack.pop()
        if stack:
            ctx.input.state = "taken"
            stack[-1].waiting = True

    def _suspend_chain(self, frame: Frame, ctx: TurnContext) -> Frame:
        """An agent called by another (a flow's `call`) gave the message back: the router below them
        must route it, so the caller and its callees step aside together and come back together.
        Returns the bottom frame of what was taken off the stack, its callees kept in `called`."""
        stack = ctx.state.stack
        frame.waiting = True  # it comes back waiting for the user's next message
        below = max((i for i, f in enumerate(stack[:-1]) if f.kind == "router"), default=None)
        if below is None or below == len(stack) - 2:
            return stack.pop()
        chain = stack[below + 1:]
        del stack[below + 1:]
        base = chain[0]
        base.called = chain[1:]
        ctx.log.emit("step", base.agent, action="steps aside with the agent it called",
                     called=[f.agent for f in base.called])
        return base

    def _finished(self, frame: Frame, outcome: Outcome, ctx: TurnContext) -> None:
        if frame.graph == "setup":
            return
        if outcome.kind == "done":
            ctx.set_status(frame.agent, outcome.status, outcome.message)
            ctx.log.emit("agent_finished", frame.agent, status=outcome.status, message=outcome.message)
            if outcome.status == "success":
                self._drop_interrupted(frame.agent, ctx)
        # hand_back and switch suspend the frame; the router records that

    def _drop_interrupted(self, agent: str, ctx: TurnContext) -> None:
        """A task completed: an interrupted run of the same agent is not brought back later."""
        for holder in ctx.state.stack:
            for paused in [f for f in holder.suspended if f.agent == agent]:
                holder.suspended.remove(paused)
                ctx.log.emit("agent_dropped", agent, by=holder.agent,
                             reason="the same task was completed since it was interrupted")

    def _apply_exit(self, frame: Frame, outcome: Outcome, ctx: TurnContext) -> None:
        agent = self.program.agents[frame.agent]
        policy = agent.exit
        if policy is None or policy.kind == "default" or outcome.status != "success":
            return
        if policy.kind == "agent" and policy.value in self.program.agents:
            ctx.log.emit("step", frame.agent, action="exit policy", agent=policy.value)
            ctx.state.stack.append(new_frame(ctx, policy.value))
            ctx.log.emit("agent_started", policy.value, by=f"exit policy of {frame.agent}")
