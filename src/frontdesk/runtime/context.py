"""The turn context: what executors may read and change during one turn, and how."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from frontdesk.expr import EvalError, evaluate, is_true, render_template
from frontdesk.expr.evaluator import EvalEnv
from frontdesk.ir.expr import ExprCondition, memory_path
from frontdesk.ir.models import Expr, Program, Ref, RouterAgent, Template
from frontdesk.llm.base import LLM, LLMError, LLMRequest, LLMResponse, message_record
from frontdesk.nlu.base import Decision, Option, Thresholds, Understanding
from frontdesk.runtime.driver import Driver
from frontdesk.runtime.events import EventLog
from frontdesk.runtime.handoff import with_handoff_phrases
from frontdesk.runtime.options import route_options
from frontdesk.runtime.pipeline import BotMessage, PendingToolCall, Pipeline
from frontdesk.runtime.prompts import BLOCKED_CHOICE, with_note
from frontdesk.runtime.rules import after_error, render_named
from frontdesk.runtime.usertext import keepable
from frontdesk.runtime.state import (
    Frame,
    HistoryItem,
    ResultRecord,
    SessionState,
    Thread,
)
from frontdesk.runtime.steps import ChildResult, Outcome, OutcomeKind
from frontdesk.runtime.tools import ToolResult, ToolRunner
from frontdesk.runtime.tools.confirmation import gate

__all__ = ["BotMessage", "ChildResult", "NO_LLM_MESSAGE", "Outcome", "OutcomeKind", "SpeculationStop",
           "TurnContext", "TurnInput", "TurnPreempted"]

# a message that asks something: it ends on a question mark (before a hint such as "(yes/no)")
ENDS_ON_QUESTION = re.compile(r"\?\W*(\([^()]*\)\W*)?$")

NO_LLM_MESSAGE = (
    "no LLM is configured: set FRONTDESK_LLM_BASE_URL (and FRONTDESK_LLM_API_KEY, FRONTDESK_LLM_MODEL) "
    "for an OpenAI-compatible endpoint, or replay a script with --script"
)


# An LLM's route or claims choice that the embedding model scores this far below its own best (which scores at
# least the floor) is asked for once more (embedding_doubts). Measured on the intent-shift dialogues (in-sample
# and held-out, hybrid, bench/robustness.md): right choices of the ideal model trailed the embedding's best by
# up to 0.50 (three of 33 checks by 0.30 or more), and choices a fault made wrong by 0 to 0.65 (about a third by
# 0.35 or more): the embedding model is often unsure where the LLM is right, so only a wide gap is doubted.
DOUBT_GAP = 0.35
DOUBT_FLOOR = 0.3

# what the OpenAI-compatible client says of a tool call it could not read (llm/openai_compat.py)
UNUSABLE_ANSWER = re.compile(r"not valid JSON|not a JSON object|without a function name")


# a reply that says the agent is about to do something, and does not ("Let me look into that for you."):
# when tools were offered, that is a tool call the model left out
ANNOUNCES_ACTION = re.compile(r"(?i)^\W*(?:ok(?:ay)?[,.!]?\s+|sure[,.!]?\s+|certainly[,.!]?\s+)?(?:let me\b|i'll (?:just )?"
                              r"(?:check|look|find|see|get|pull)\b|i will (?:now )?(?:check|look|find|see|get)\b|"
                              r"one moment\b|just a moment\b|please wait\b|hold on\b)")
_PLAIN_TYPES = {"string", "number", "integer", "boolean"}


def _unusable(request: LLMRequest, response: LLMResponse) -> str | None:
    """Why a model's answer cannot be used as it is: it is empty; or, for an agent's reasoning step, it passes
    a list or an object where a plain value is due, or, with tools offered, only announces an action it did
    not take ("Let me look into that."). None when it is usable. (A tool the request does not offer goes back
    to the model as that tool's error, where the reasoning loop reads it.)"""
    content = (response.content or "").strip()
    if not content and not response.tool_calls:
        return "the answer was empty"
    if request.purpose != "reason":
        return None  # a route or an `understand` answer is read leniently (a name it does not list is none)
    offered = {t.name: t for t in request.tools}
    for call in response.tool_calls:
        tool = offered.get(call.name)
        if tool is None:
            continue  # a tool it does not offer (or a system tool by another name) the reasoning loop reads
        problem = _argument_problem(tool, call.arguments)
        if problem is not None:
            return f"{call.name}: {problem}"
    if offered and not response.tool_calls and not content.endswith("?") and ANNOUNCES_ACTION.match(content) \
            and len(content) < 160:
        return "it said it would do something but called no tool: call the tool now, or ask the user what you need"
    return None


def _argument_problem(tool, arguments: dict[str, Any]) -> str | None:
    """What is wrong with a call's arguments against the tool's schema: a list or an object where a plain
    value is due (top level); None when nothing is. (A missing argument, or a name that `finish` does not
    list, the reasoning loop tells the model of itself.)"""
    properties = (tool.parameters or {}).get("properties") or {}
    for name, value in arguments.items():
        spec = properties.get(name)
        if not isinstance(spec, dict) or value is None:
            continue
        if spec.get("type") in _PLAIN_TYPES and isinstance(value, (list, dict)):
            return f"{name} must be a {spec['type']}, not a {'list' if isinstance(value, list) else 'JSON object'}"
    return None


def _reasked(request: LLMRequest, problem: str) -> LLMRequest:
    """The same request once more, told what was wrong with the last answer."""
    return with_note(request, f"Your last answer could not be used: {problem}. Answer again"
                              + (", calling one of the tools with valid JSON arguments." if request.tools else "."))


class TurnInput:
    """The user's message of one turn. The turn owns it; agents are offered it, take it, or give it back.

    - open: no agent has it; the agent on top of the stack may take it (a flow waiting at a
      `user` step, an LLM agent waiting for a reply), or a router routes it.
    - offered: a router (or a fallback policy) handed it to a frame it started or resumed; that
      frame may take it, or leave it as the message that merely started it.
    - taken: an agent used it as its input.
    An agent that takes it and then finds it is not (only) for it (hand_back, a topic switch, an LLM
    agent finishing its task) gives it back: it is open again and the router routes it in the
    same turn, to an agent that has not had it yet.
    """

    def __init__(self, text: str | None, log: EventLog | None = None) -> None:
        self.text = text
        self.state: Literal["none", "open", "offered", "taken"] = "open" if text is not None else "none"
        self.holder: str | None = None  # frame id of the frame it was offered to or taken by
        self.passed: list[str] = []  # agents that had it and gave it back
        # an agent that gave it back had used it (finished its task on it): if nobody else wants the
        # rest, the message was answered, which is not a fallback
        self.used = False
        # an agent that read the message found it also asks for this member's task: the router
        # hands what is left to it without asking a model again
        self.also: str | None = None
        self._log = log

    @property
    def is_open(self) -> bool:
        return self.state == "open"

    def offered_to(self, frame: Frame) -> bool:
        return self.state == "offered" and self.holder == frame.id

    def available_to(self, frame: Frame) -> bool:
        return self.is_open or self.offered_to(frame)

    def taken_by(self, frame: Frame) -> bool:
        return self.state == "taken" and self.holder == frame.id

    def offer(self, frame: Frame, by: str | None) -> None:
        if self.text is None:
            return
        self.state, self.holder = "offered", frame.id
        self._emit("input_offered", frame.agent, by=by)

    def take(self, frame: Frame, how: str) -> str:
        assert self.text is not None
        self.state, self.holder = "taken", frame.id
        self._emit("input_taken", frame.agent, how=how)
        return self.text

    def give_back(self, frame: Frame, why: str, used: bool = False) -> None:
        """The frame had the message and gives it back, unhandled (`used` False) or not only for it."""
        if self.text is None or self.holder != frame.id:
            return
        self.state, self.holder = "open", None
        self.used = self.used or used
        if frame.agent not in self.passed:
            self.passed.append(frame.agent)
        self._emit("input_given_back", frame.agent, why=why)

    def hand_on(self, frame_id: str, agent: str, why: str) -> None:
        """The frame read the message only to pass it on (a router's start steps ending at `user`): it is
        open again for the router, and the agent does not count as one that had it."""
        if self.text is None or self.holder != frame_id:
            return
        self.state, self.holder = "open", None
        self._emit("input_given_back", agent, why=why)

    def _emit(self, type_: str, agent: str, **data: Any) -> None:
        if self._log is not None:
            self._log.emit(type_, agent, **data)


class TurnPreempted(Exception):
    """A newer message of the session arrived under the `preemptive` strategy: this turn stops unsaved."""


class SpeculationStop(BaseException):
    """A draft (runtime/orchestration.py) reached a tool call: drafting stops before it runs (BaseException,
    so no executor's error handling mistakes it for the tool failing)."""

    def __init__(self, tool: str, args: dict[str, Any], caller: str | None) -> None:
        super().__init__(tool)
        self.tool, self.args, self.caller = tool, args, caller


@dataclass
class TurnContext:
    program: Program
    state: SessionState
    llm: LLM | None
    tools: ToolRunner
    log: EventLog
    knowledge: Any  # KnowledgeCache
    understanding: Understanding | None = None
    option_cache: dict = field(default_factory=dict)  # per engine: options mined from the program
    memory: Any = None  # frontdesk.store.longterm.MemoryStore: what agents remember beyond the session
    pipeline: Pipeline = field(default_factory=Pipeline)
    eval_env: EvalEnv = field(default_factory=EvalEnv)  # clock and randomness of expressions
    said: list[BotMessage] = field(default_factory=list)
    sent: list[BotMessage] = field(default_factory=list)  # what the turn sent, once output_ready has run
    input: TurnInput = field(default_factory=lambda: TurnInput(None))
    # the engine driving this turn (runtime/driver.py): fan_out drives its tasks' stacks with it, a draft
    # its copy of the session, and handoffs (runtime/handoff.py) hand results to executors through it
    driver: Driver | None = None
    # the `preemptive` strategy: asked at safe points (before each agent step and LLM call) whether a
    # newer message supersedes this turn; once a tool has run the turn is kept and finishes
    preempt: Callable[[], bool] | None = None
    tool_ran: bool = False
    # the router's orchestration strategy at work in this turn (runtime/orchestration.py): "speculative" in
    # a best-of-n / first-success candidate's own context, "guarded" once the input guardrails passed, ...
    orchestration: dict = field(default_factory=dict)
    # (task, agent) -> the embedding decision made last in this turn: what an LLM's answer is checked against
    embedded: dict = field(default_factory=dict)
    shortlists: dict = field(default_factory=dict)  # (message, members) -> their scores, this turn (shortlist.py)
    # a fan_out task's own context (runtime/fanout.py): its agents never wait for the user, so an LLM agent
    # whose model fails ends with an error for the calling model rather than waiting for a retry
    task: bool = False

    def new_frame_id(self) -> str:
        fid = f"f{self.state.next_frame}"
        self.state.next_frame += 1
        return fid

    # ---- where a frame stands (the engine's knowledge; executors ask, never read other frames) ----

    def _parent_frame(self, frame: Frame) -> Frame | None:
        return next((f for f in self.state.stack if f.id == frame.parent), None) if frame.parent else None

    def is_top(self, frame: Frame) -> bool:
        return bool(self.state.stack) and self.state.stack[-1] is frame

    def started_by_router(self, frame: Frame) -> RouterAgent | None:
        """The router that started this (topmost) frame directly, if a router did."""
        parent = self._parent_frame(frame) if self.is_top(frame) else None
        if parent is None or parent.kind != "router":
            return None
        router = self.program.agents.get(parent.agent)
        return router if isinstance(router, RouterAgent) else None

    def router_below(self, frame: Frame) -> tuple[RouterAgent, list[str]] | None:
        """The router under this (topmost) frame's chain of callers, and the agents of that chain
        (the member the router started, the agents it called, ..., this one)."""
        if not self.is_top(frame):
            return None
        chain = [frame.agent]
        current = self._parent_frame(frame)
        while current is not None and current.kind != "router":
            chain.append(current.agent)
            current = self._parent_frame(current)
        if current is None:
            return None
        router = self.program.agents.get(current.agent)
        return (router, chain) if isinstance(router, RouterAgent) else None

    # ---- threads: suspended agents (moved between the stack and the table by runtime/handoff.py) ----

    def thread(self, tid: str) -> Thread | None:
        return self.state.threads.get(tid)

    def threads_of(self, tids: list[str]) -> list[Thread]:
        """The threads among `tids` that still exist (one may have been dropped), in that order."""
        return [self.state.threads[t] for t in tids if t in self.state.threads]

    def drop_thread(self, tid: str) -> None:
        self.state.threads.pop(tid, None)

    # ---- decisions -----------------------------------------------------------------

    @property
    def llm_classifies(self) -> bool:
        """Whether an unsure embedding decision should go to the LLM (a small local model cannot classify)."""
        return self.llm is not None and getattr(self.llm, "can_classify", True)

    def thresholds(self, task: str) -> Thresholds | None:
        override = self.program.settings.understanding.get(task)
        if override is None:
            return None
        base = getattr(self.understanding, "thresholds_for", lambda t: Thresholds())(task)
        return replace(base, **{k: v for k, v in override.model_dump().items() if v is not None})

    def agent_options(self, names: list[str]) -> list[Option]:
        """Agents as options to decide between (each agent's mined once per engine, see runtime/options.py)."""
        missing = [n for n in dict.fromkeys(names) if ("agent", n) not in self.option_cache]
        if missing:
            root = Path(self.program.root) if self.program.root else None
            # ABL HANDOFF WHEN words join the phrases each member is routed by
            for option in with_handoff_phrases(self.program, route_options(self.program, missing, root)):
                self.option_cache[("agent", option.key)] = option
        return [self.option_cache[("agent", n)] for n in names]

    def route_decide(self, message: str, names: list[str], agent: str | None) -> Decision | None:
        """embed_decide over agents as options (None at once without an understanding model: no agent's
        phrases are mined for nothing)."""
        if self.understanding is None:
            return None
        return self.embed_decide(message, self.agent_options(names), "route", agent)

    def embed_decide(self, message: str, options: list[Option], task: str, agent: str | None) -> Decision | None:
        """An embedding decision, or None when there is no understanding model or it failed."""
        if self.understanding is None or not options or not message:
            return None
        try:
            decision = self.understanding.decide(message, options, task, self.thresholds(task))
        except Exception as exc:  # a broken local model must not end the conversation
            self.log.emit("error", agent, where=f"{task} by embedding", message=f"{type(exc).__name__}: {exc}")
            return None
        self.embedded[(task, agent)] = decision
        return decision

    def embedding_doubts(self, task: str, agent: str | None, choice: str | None) -> str | None:
        """The option the embedding model prefers by far to an LLM's `choice` for the same message (task
        "route" or "claims"), or None: the embedding's best scores at least DOUBT_FLOOR and `choice` at least
        DOUBT_GAP less. A local check, no call: the caller may ask the LLM once more."""
        decision = self.embedded.get((task, agent))
        if decision is None or choice in (None, "none", BLOCKED_CHOICE) or decision.best is None \
                or choice == decision.best:
            # ("none": the embedding model has no score for no case at all; "blocked", a guardrail's verdict
            # merged into the call, is not one of the options it scores either)
            return None
        best = decision.scores.get(decision.best, 0.0)
        gap = best - decision.scores.get(choice, 0.0)
        self.log.emit("step", agent, action="embedding check of the LLM's choice", choice=choice,
                      best=decision.best, gap=round(gap, 3), score=round(best, 3))
        return decision.best if best >= DOUBT_FLOOR and gap >= DOUBT_GAP else None

    # ---- state: variables, results, system variables, memory ------------------------

    def _slot(self, scope: str, name: str) -> tuple[str, str]:
        """Where an agent's argument lives: its own variable, or the one it is bound to."""
        return self.program.slot_of(scope, name)

    def result_of(self, scope: str) -> ResultRecord:
        return self.state.results.setdefault(scope, ResultRecord())

    def system_value(self, name: str) -> Any:
        state = self.state
        if name == "now":
            return self.eval_env.clock().isoformat()
        if name == "input":  # the user's message of this turn
            return self.input.text if self.input.text is not None else self.last_user_message()
        if name in state.system:  # set by the runtime (ABL 8.8: all_fields_gathered, match, ...)
            return state.system[name]
        return {"turn": state.turn, "session_id": state.session_id, "user_id": state.user_id,
                "channel": state.channel, "status": state.status}.get(name)

    def _memory_owner(self, scope: str) -> str:
        if scope == "user":
            return self.state.user_id
        if scope == "project":
            return self.state.program or "project"
        return self.state.session_id  # execution_tree: this session's tree of agents

    def read(self, ref: Ref, agent: str | None = None, frame: Frame | None = None) -> Any:
        """The value a Ref names, in its space (see ir/expr.py: Ref)."""
        space = ref.space
        if space == "result":
            record = self.state.results.get(ref.scope)
            if record is None:
                return False if ref.name in ("success", "error") else None
            if ref.name == "success":
                return record.status == "success"
            if ref.name == "error":
                return record.status == "error"
            if ref.name == "status":
                return record.values["status"] if "status" in record.values else record.status
            if ref.name == "message":
                return record.message
            if ref.name == "value" and "value" not in record.values and record.status is not None:
                return dict(record.values)  # `last_<tool>_result` as a whole: everything it returned
            return record.values.get(ref.name)
        if space == "system":
            return self.system_value(ref.name)
        if space == "memory":
            if self.memory is None or (ref.scope == "user" and not self.state.user_id):
                return None
            return self.memory.get(ref.scope, self._memory_owner(ref.scope), ref.name)
        if space == "local":
            return frame.locals.get(ref.name) if frame is not None else None
        scope, name = self._slot(ref.scope, ref.name)
        return self.state.variables.get(scope, {}).get(name)

    def write(self, scope: str, name: str, value: Any, agent: str | None = None, why: str = "") -> None:
        """Set a session variable (an agent's argument, or what it is bound to)."""
        scope, name = self._slot(scope, name)
        variables = self.state.variables.setdefault(scope, {})
        if variables.get(name) != value or name not in variables:
            variables[name] = value
            self.log.emit("arg_set", agent, scope=scope, name=name, value=value, why=why)

    def assign(self, target: Ref, value: Any, agent: str | None, frame: Frame | None = None, why: str = "set") -> None:
        """Write `value` where `target` names: a variable, a frame-local value or persistent memory."""
        if target.space == "var":
            self.write(target.scope, target.name, value, agent, why=why)
        elif target.space == "local" and frame is not None:
            frame.locals[target.name] = value
            self.log.emit("arg_set", agent, scope="local", name=target.name, value=value, why=why)
        elif target.space == "memory" and self._read_only(target, agent):
            self.log.emit("warning", agent, where="assignment",
                          message=f"memory {target.scope}.{target.name} is declared read-only (ACCESS: read)")
        elif target.space == "memory" and self.memory is not None and \
                (target.scope != "user" or self.state.user_id):
            self.memory.put(target.scope, self._memory_owner(target.scope), target.name, value)
            self.log.emit("arg_set", agent, scope=f"memory.{target.scope}", name=target.name, value=value, why=why)
        elif target.space == "memory" and target.scope == "user":
            self.log.emit("warning", agent, where="assignment",
                          message=f"user memory {target.scope}.{target.name} is not kept: the session has no "
                                  "user id (the API's POST /v1/sessions takes user_id; frontdesk chat --user)")
        else:
            self.log.emit("warning", agent, where="assignment",
                          message=f"{target.space} value {target.scope}.{target.name} cannot be set here")

    def _read_only(self, target: Ref, agent: str | None) -> bool:
        """Whether the agent declares this persistent path with ACCESS: read."""
        declaring = self.program.agents.get(agent) if agent else None
        if declaring is None:
            return False
        path = memory_path(target)
        return any(p.path == path and p.access == "read" for p in declaring.rules.memory.persistent)

    def set_status(self, scope: str, status: str, message: str = "") -> None:
        record = self.result_of(scope)
        record.status, record.message = status, message

    def clear_status(self, scope: str) -> None:
        record = self.result_of(scope)
        record.status, record.message = None, None

    def values(self, agent: str) -> dict[str, Any]:
        a = self.program.agents[agent]
        return {name: self.read(Ref(scope=agent, name=name), agent) for name in a.arg_names()}

    def eval(self, expr: Expr, agent: str, frame: Frame | None = None) -> Any:
        return evaluate(expr, lambda ref: self.read(ref, agent, frame), env=self.eval_env)

    def holds(self, condition: Any, agent: str, frame: Frame | None = None, where: str = "",
              failure: str = "warning") -> bool | None:
        """Whether an expression condition (an ABL WHEN, trigger or rule) holds now. None when it is
        not an expression (a natural-language condition is decided elsewhere) or when evaluating it
        failed: the failure is a `failure` event naming `where`, and the turn goes on."""
        if not isinstance(condition, ExprCondition):
            return None
        try:
            return is_true(self.eval(condition.expr, agent, frame))
        except EvalError as exc:
            self.log.emit(failure, agent, where=where, message=str(exc))
            return None

    def render(self, template: Template, agent: str, frame: Frame | None = None) -> str:
        def missing(ref: Ref) -> None:
            self.log.emit("warning", agent, where="bot message",
                          message=f"${{{ref.scope}.{ref.name}}} has no value yet; the message shows a placeholder",
                          template=template.source)

        def failed(expr, error) -> None:
            self.log.emit("warning", agent, where="bot message", message=str(error), template=template.source)

        return render_template(template, lambda ref: self.read(ref, agent, frame), on_missing=missing,
                               env=self.eval_env, on_error=failed)

    # ---- conversation --------------------------------------------------------------

    def say(self, agent: str | None, text: str, frame: Frame | None = None, actions: list[dict] | None = None) -> None:
        """Draft a message to the user. It is buffered: the turn sends what the pipeline's
        `output_ready` hooks leave of it (see send_output); agents see it in the history at once."""
        text = text.strip()
        if not text:
            return
        # the user sees the agent's display name (a FLOW step's reasoning agent speaks as the flow's
        # agent); the trace keeps the agent that said it
        speaker = self.speaker(agent)
        item = HistoryItem(role="bot", text=text, agent=speaker, turn=self.state.turn)
        self.said.append(BotMessage(speaker, text, item, by=agent, actions=list(actions or [])))
        self.state.history.append(item)
        self.log.emit("bot_message", agent, text=text, **({"shown_as": speaker} if speaker != agent else {}),
                      **({"actions": list(actions)} if actions else {}))
        if frame is not None:
            frame.last_prompt = text
            frame.said_since_start = True

    def note(self, agent: str | None, text: str) -> None:
        """Draft a remark about where things stand (a WARN rule's message): said once a turn, before the
        question the turn ends on, when it does, so that the question stays the last thing the user reads."""
        text = text.strip()
        if not text or any(m.text == text for m in self.said):
            return
        last = self.said[-1] if self.said else None
        self.say(agent, text)
        if last is not None and ENDS_ON_QUESTION.search(last.text):
            note = self.said.pop()
            self.said.insert(len(self.said) - 1, note)
            history = self.state.history
            history.remove(note.item)
            history.insert(history.index(last.item), note.item)

    def speaker(self, agent: str | None) -> str | None:
        """The name the user sees for what `agent` says (ReasoningAgent.shown_as, else its own)."""
        found = self.program.agents.get(agent) if agent else None
        return getattr(found, "shown_as", None) or agent

    def send_output(self) -> list[BotMessage]:
        """The turn's buffered messages after the `output_ready` hooks; the history keeps what is sent."""
        sent = self.pipeline.output_ready(self, self.said)
        kept = {id(m.item) for m in sent if m.item is not None}
        for message in self.said:
            if message.item is not None and id(message.item) not in kept and message.item in self.state.history:
                self.state.history.remove(message.item)
        for message in sent:
            if message.item is None:
                message.item = HistoryItem(role="bot", text=message.text, agent=message.agent, turn=self.state.turn)
                self.state.history.append(message.item)
            else:
                message.item.text = message.text
        self.said = sent
        return sent

    def last_user_message(self) -> str:
        for item in reversed(self.state.history):
            if item.role == "user":
                return item.text
        return ""

    # ---- side effects --------------------------------------------------------------

    def call_args(self, request: LLMRequest, agent: str | None, where: str) -> dict[str, Any] | None:
        """One model call made to get a tool call back (understand, validate, ...): the first tool call's
        arguments ({} when the model called none), or None when the call failed: an `error` event
        naming `where`, and the caller goes on without it."""
        try:
            response = self.complete(request, agent)
        except LLMError as exc:
            self.log.emit("error", agent, where=where, message=str(exc))
            return None
        return response.tool_calls[0].arguments if response.tool_calls else {}

    def check_preempted(self) -> None:
        """Raise TurnPreempted when a newer message of the session supersedes this turn (see `preempt`)."""
        if self.preempt is not None and not self.tool_ran and self.preempt():
            raise TurnPreempted()

    def complete(self, request: LLMRequest, agent: str | None) -> LLMResponse:
        """Make an LLM call, recording it (prompt, answer, tokens) as an event. An answer that cannot be
        used (empty; a tool call whose arguments are not JSON) is asked for once more, with what was wrong
        with it: one call more, only when the model erred."""
        try:
            response = self._complete_once(request, agent)
        except LLMError as exc:
            if not UNUSABLE_ANSWER.search(str(exc)):
                raise
            return self._complete_once(_reasked(request, str(exc)), agent)
        problem = _unusable(request, response)
        if problem is None:
            return response
        self.log.emit("step", agent, action="the model's answer could not be used: asked again", why=problem)
        return self._complete_once(_reasked(request, problem), agent)

    def _complete_once(self, request: LLMRequest, agent: str | None) -> LLMResponse:
        if self.llm is None:
            self.log.emit("llm_call", agent, purpose=request.purpose, error=NO_LLM_MESSAGE)
            raise LLMError(NO_LLM_MESSAGE)
        self.check_preempted()
        request = self._with_model(request, agent)
        prompt = [message_record(m) for m in request.messages]
        started = time.perf_counter()
        try:
            response = self.llm.complete(request)
        except LLMError as exc:
            self.log.emit("llm_call", agent, purpose=request.purpose, provider=self.llm.name,
                          messages=prompt, tools=[t.name for t in request.tools], error=str(exc),
                          duration_ms=round((time.perf_counter() - started) * 1000, 1))
            raise
        duration_ms = round((time.perf_counter() - started) * 1000, 1)
        response = _keepable_response(response)
        # a best-of-n / first-success draft's call (for traces, and the cost benchmark, which models drafts
        # as concurrent); or one of the chosen draft's answers replayed: no call was made, nothing is counted
        drafted = self.orchestration.get("draft")
        replayed = bool(getattr(self.llm, "replayed", False))
        if not replayed:
            self.state.tokens["prompt"] += response.usage.prompt_tokens
            self.state.tokens["completion"] += response.usage.completion_tokens
            self.state.tokens["calls"] += 1
        self.log.emit(
            "llm_call", agent, purpose=request.purpose, provider=self.llm.name, model=response.model,
            messages=prompt, tools=[t.name for t in request.tools], plan=request.plan,
            structure=request.structure,
            response={"content": response.content,
                      "tool_calls": [c.model_dump() for c in response.tool_calls]},
            prompt_tokens=response.usage.prompt_tokens, completion_tokens=response.usage.completion_tokens,
            duration_ms=duration_ms, **({"draft": drafted} if drafted else {}),
            **({"replayed": True} if replayed else {}),
        )
        self.check_preempted()  # the answer is recorded; nothing has acted on it yet
        return response

    def _with_model(self, request: LLMRequest, agent: str | None) -> LLMRequest:
        """The model a call goes to when the program chooses one per agent or per kind of call (`llm:` →
        `models:` in config.yml, e.g. a cheaper model for knowledge answers and flows' understanding):
        the agent's entry first, then the call's purpose; a request that names its model keeps it."""
        models = (self.program.settings.llm or {}).get("models")
        if request.model or not isinstance(models, dict):
            return request
        chosen = models.get(agent) if agent else None
        chosen = chosen or models.get(request.purpose)
        return request.model_copy(update={"model": str(chosen)}) if chosen else request

    def _error_handler(self, caller: str | None, tool: str, result: ToolResult):
        """The caller's ON_ERROR handler for a failed call: for the tool by name, else by the kind of
        failure (tool_timeout, api_error), else tool_error, else unknown_error."""
        failed = result.status == "error" or result.error
        if not failed or not caller or caller not in self.program.agents:
            return None
        rules = self.program.rules_for(caller)  # a FLOW step's reasoning agent: its flow agent's ON_ERROR
        if not rules.on_error:
            return None
        failure = getattr(result, "failure", None)
        kind = getattr(failure, "kind", "")
        wanted = [tool, "tool_timeout" if kind == "timeout" else "",
                  "api_error" if kind in ("http_status", "connection") else "", "tool_error", "unknown_error", "default"]
        for name in wanted:
            handler = next((h for h in rules.on_error if h.on == name), None)
            if name and handler is not None:
                return handler
        return None

    def _render_error(self, template: Template, caller: str, frame: Frame | None, tool: str,
                      result: ToolResult) -> str:
        """An ON_ERROR handler's words: `{{<tool>.message}}` reads the recorded result, and `{{tool.message}}`
        (`tool.name`, `tool.status`, `tool.error`) the call that failed, unless the agent has a value
        named `tool` of its own."""
        agent = self.program.agents.get(caller)
        if agent is not None and "tool" in agent.arg_names():
            return self.render(template, caller, frame)
        failed = {"name": tool, "message": result.message, "status": result.status, "error": result.error}

        def read(ref: Ref) -> Any:
            if ref.space == "var" and ref.name == "tool":
                return failed
            return self.read(ref, caller, frame)

        def missing(ref: Ref) -> None:
            self.log.emit("warning", caller, where="bot message",
                          message=f"${{{ref.scope}.{ref.name}}} has no value yet; the message shows a placeholder",
                          template=template.source)

        def broken(expr, error) -> None:
            self.log.emit("warning", caller, where="bot message", message=str(error), template=template.source)

        return render_template(template, read, on_missing=missing, env=self.eval_env, on_error=broken)

    def _handle_tool_error(self, handler, tool: str, args: dict[str, Any], caller: str | None,
                           frame: Frame | None, result: ToolResult, retry_only: bool = False) -> ToolResult:
        """ON_ERROR: retry as often as it says, then say its words and do what follows (escalate, ...);
        with `retry_only` (the calling step has its own ON_FAIL) only the retries."""
        action = handler.action
        retries = action.max_retries if action.max_retries is not None else (1 if action.retry else 0)
        for attempt in range(1, retries + 1):
            self.log.emit("step", caller, action="retry after a tool error", tool=tool, attempt=attempt,
                          handler=handler.on)
            result = self._run_tool(tool, args, caller, attempt=attempt)
            self._record_result(tool, result)
            self._count_failure(result)
            if result.status != "error" and not result.error:
                return result
        if retry_only:
            self.log.emit("step", caller, action="error left to the step's ON_FAIL", handler=handler.on, tool=tool)
            return result
        self.log.emit("step", caller, action="error handled", handler=handler.on, tool=tool)
        if action.respond is not None and caller:
            self.say(caller, self._render_error(action.respond, caller, frame, tool, result), frame)
        elif action.template and caller:  # RESPOND: TEMPLATE(name), in the channel's variant
            self.say(caller, render_named(self, action.template, caller), frame)
        if action.escalate:
            self.state.status = "escalated"
            self.log.emit("session_escalated", caller, reason=action.escalate_reason or f"{tool} kept failing")
        after_error(self, caller, handler, tool)  # LOG, SET, THEN DELEGATE / HANDOFF / GOTO / ASK_USER
        return result

    def _run_tool(self, tool: str, args: dict[str, Any], caller: str | None, pending: PendingToolCall | None = None,
                  attempt: int | None = None) -> ToolResult:
        """One run of a tool (or the answer a hook gave instead), framed by `tool_call` and `tool_result`
        events; both carry `duration_ms`, the time the binding took (`tool_call`'s is filled in when the
        call returns: a live subscriber sees the event before the tool runs, the stored trace has it)."""
        extra = {"attempt": attempt} if attempt is not None else {}
        started = time.perf_counter()
        if pending is not None and pending.result is not None:
            extra["answered_by"] = "rule"  # a constraint, a hook or a declined confirmation: the tool never ran
        called = self.log.emit("tool_call", caller, tool=tool, args=args, **extra)
        if pending is not None and pending.result is not None:
            result = pending.result
        elif (limit := self._tool_time_limit(caller)) is not None:
            result = self.tools.call(tool, args, timeout=limit)
        else:
            result = self.tools.call(tool, args)
        duration_ms = round((time.perf_counter() - started) * 1000, 1)
        called.data["duration_ms"] = duration_ms
        if pending is not None:
            result = self.pipeline.after_tool(self, pending, result)
        self.log.emit("tool_result", caller, tool=tool, status=result.status, message=result.message,
                      args=result.args, bot=result.bot, error=result.error, duration_ms=duration_ms, **extra,
                      **({"truncated": result.truncated} if result.truncated else {}))
        return result

    def _tool_time_limit(self, caller: str | None) -> float | None:
        """The calling ABL agent's EXECUTION timeouts.tool_timeout_ms, in seconds (a REASONING step's agent
        takes its flow agent's), or None: the program's `tools:` settings decide."""
        if not caller or caller not in self.program.agents:
            return None
        return self.program.rules_for(caller).execution.tool_timeout

    def _count_failure(self, result: ToolResult) -> None:
        """ABL 8.8 `tool_failures`: failed runs of tools in a row (a retry is a run), whoever called them
        (flow, reasoning loop, hook); a run that succeeds sets it back to 0. A call a hook, a rule or the
        user's refusal answered instead of the tool does not count."""
        failed = result.status == "error" or bool(result.error)
        system = self.state.system
        system["tool_failures"] = int(system.get("tool_failures") or 0) + 1 if failed else 0

    def _record_result(self, tool: str, result: ToolResult) -> None:
        """What `<tool>.status`, `<tool>.message` and `last_<tool>_result` read."""
        record = self.result_of(tool)
        record.values = dict(result.args)  # the latest call's result, nothing left over from an earlier one
        record.status, record.message = result.status, result.message

    def call_tool(self, tool: str, args: dict[str, Any], caller: str | None, frame: Frame | None,
                  handles_failure: bool = False) -> ToolResult:
        pending = PendingToolCall(tool, dict(args), caller)
        self.pipeline.before_tool(self, pending)
        args = pending.args
        if pending.result is None:  # ABL `confirm:`: the user approves the call first (tools/confirmation.py)
            approval = gate(self, tool, args, caller, frame)
            if approval.waits:  # the question was asked: nothing ran, the executor waits at the call
                return approval.result
            args, pending.args = approval.args, approval.args
            pending.result = approval.result  # declined: an error result, never retried by ON_ERROR
        ran = pending.result is None  # not answered by a hook, a rule or a declined confirmation
        if ran and self.orchestration.get("speculative"):
            # a best-of-n / first-success draft stops before anything lasting: the chosen one runs for real
            raise SpeculationStop(tool, dict(args), caller)
        if ran:
            self.check_preempted()
            self.tool_ran = True  # what a tool did is kept: the turn can no longer be superseded
        result = self._run_tool(tool, args, caller, pending=pending)
        # recorded before ON_ERROR acts, so its RESPOND can say {{tool.message}} (retries record theirs)
        self._record_result(tool, result)
        if ran:
            self._count_failure(result)
        handler = self._error_handler(caller, tool, result) if ran else None
        if handler is not None:
            # a step that says what its failure leads to (ON_FAIL) takes the failure: the agent's ON_ERROR
            # only retries the call as it says
            result = self._handle_tool_error(handler, tool, args, caller, frame, result, retry_only=handles_failure)
            self._record_result(tool, result)
        caller_agent = self.program.agents.get(caller) if caller else None
        if caller_agent is not None and result.status == "success" and not result.error:
            # Only a tool that succeeded sets what its caller keeps of it: a value it rejected is not used.
            for output in caller_agent.tool_outputs.get(tool, []):
                if output.field in result.args:
                    self.assign(output.target, result.args[output.field], caller, frame, why=f"returned by {tool}")
        for line in result.bot:
            self.say(caller, line, frame)
        if result.error:
            self.log.emit("error", caller, where=f"tool {tool}", message=result.error)
        return result


def _keepable_response(response: LLMResponse) -> LLMResponse:
    """The model's answer with its text made keepable (usertext.keepable): a lone surrogate or a NUL that
    a model wrote (a JSON "\\ud800" escape) must not reach a bot message, a tool or the store."""
    content = keepable(response.content)
    calls = [c.model_copy(update={"name": keepable(c.name), "arguments": keepable(c.arguments)})
             for c in response.tool_calls]
    if content == response.content and calls == response.tool_calls:
        return response
    return response.model_copy(update={"content": content, "tool_calls": calls})
