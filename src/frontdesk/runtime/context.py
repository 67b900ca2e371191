"""The turn context: what executors may read and change during one turn, and how."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from frontdesk.expr import evaluate, render_template
from frontdesk.ir.models import Expr, FlowAgent, Program, Ref, Template
from frontdesk.llm.base import LLM, LLMError, LLMRequest, LLMResponse
from frontdesk.nlu.base import Decision, Option, Thresholds, Understanding
from frontdesk.runtime.events import EventLog
from frontdesk.runtime.state import Frame, HistoryItem, SessionState
from frontdesk.runtime.tools import ToolResult, ToolRunner

STATUS_KEY = "__status"
MESSAGE_KEY = "__message"
PSEUDO_ARGS = ("success", "error", "status", "message")

NO_LLM_MESSAGE = (
    "no LLM is configured: set FRONTDESK_LLM_BASE_URL (and FRONTDESK_LLM_API_KEY, FRONTDESK_LLM_MODEL) "
    "for an OpenAI-compatible endpoint, or replay a script with --script"
)


@dataclass
class Outcome:
    """What an executor's run left the frame in."""

    kind: Literal["wait", "done", "push", "hand_back", "switch"]
    status: str = "success"
    message: str = ""
    frame: Frame | None = None  # for push
    target: str | None = None  # for switch

    @staticmethod
    def wait() -> "Outcome":
        return Outcome("wait")

    @staticmethod
    def done(status: str = "success", message: str = "") -> "Outcome":
        return Outcome("done", status=status, message=message)

    @staticmethod
    def push(frame: Frame) -> "Outcome":
        return Outcome("push", frame=frame)


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

    def _emit(self, type_: str, agent: str, **data: Any) -> None:
        if self._log is not None:
            self._log.emit(type_, agent, **data)


@dataclass
class BotMessage:
    agent: str | None
    text: str


@dataclass
class TurnContext:
    program: Program
    state: SessionState
    llm: LLM | None
    tools: ToolRunner
    log: EventLog
    aliases: dict[tuple[str, str], tuple[str, str]]
    knowledge: Any  # KnowledgeCache
    understanding: Understanding | None = None
    option_cache: dict = field(default_factory=dict)  # per engine: options mined from the program
    memory: Any = None  # frontdesk.store.longterm.MemoryStore: what agents remember beyond the session
    said: list[BotMessage] = field(default_factory=list)
    input: TurnInput = field(default_factory=lambda: TurnInput(None))

    def new_frame_id(self) -> str:
        fid = f"f{self.state.next_frame}"
        self.state.next_frame += 1
        return fid

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
        """Agents as options to decide between (mined once per engine, see runtime/options.py)."""
        from frontdesk.runtime.options import route_options

        key = tuple(names)
        if key not in self.option_cache:
            root = Path(self.program.root) if self.program.root else None
            self.option_cache[key] = route_options(self.program, names, root)
        return self.option_cache[key]

    def embed_decide(self, message: str, options: list[Option], task: str, agent: str | None) -> Decision | None:
        """An embedding decision, or None when there is no understanding model or it failed."""
        if self.understanding is None or not options or not message:
            return None
        try:
            return self.understanding.decide(message, options, task, self.thresholds(task))
        except Exception as exc:  # a broken local model must not end the conversation
            self.log.emit("error", agent, where=f"{task} by embedding", message=f"{type(exc).__name__}: {exc}")
            return None

    # ---- records -------------------------------------------------------------------

    def _slot(self, scope: str, name: str) -> tuple[str, str]:
        seen = 0
        key = (scope, name)
        while key in self.aliases and seen < 8:
            key = self.aliases[key]
            seen += 1
        return key

    def record_key(self, scope: str, agent: str | None) -> str:
        """Records of a subflow are kept per agent: `agent/subflow`."""
        if agent and scope not in self.program.agents:
            owner = self.program.agents.get(agent)
            if isinstance(owner, FlowAgent) and scope in owner.graph.subflows:
                return f"{agent}/{scope}"
        return scope

    def read(self, ref: Ref, agent: str | None = None) -> Any:
        scope = self.record_key(ref.scope, agent)
        if ref.name in PSEUDO_ARGS:
            rec = self.state.records.get(scope, {})
            status = rec.get(STATUS_KEY)
            if ref.name == "success":
                return status == "success"
            if ref.name == "error":
                return status == "error"
            if ref.name == "message":
                return rec.get("message", rec.get(MESSAGE_KEY))
            if ref.name == "status":
                return rec["status"] if "status" in rec else status
        scope, name = self._slot(scope, ref.name)
        return self.state.records.get(scope, {}).get(name)

    def write(self, scope: str, name: str, value: Any, agent: str | None = None, why: str = "") -> None:
        scope, name = self._slot(self.record_key(scope, agent), name)
        rec = self.state.records.setdefault(scope, {})
        if rec.get(name) != value or name not in rec:
            rec[name] = value
            self.log.emit("arg_set", agent, scope=scope, name=name, value=value, why=why)

    def set_status(self, scope: str, status: str, message: str = "") -> None:
        rec = self.state.records.setdefault(scope, {})
        rec[STATUS_KEY] = status
        rec[MESSAGE_KEY] = message

    def clear_status(self, scope: str) -> None:
        rec = self.state.records.setdefault(scope, {})
        rec.pop(STATUS_KEY, None)
        rec.pop(MESSAGE_KEY, None)

    def values(self, agent: str) -> dict[str, Any]:
        a = self.program.agents[agent]
        return {name: self.read(Ref(scope=agent, name=name), agent) for name in a.arg_names()}

    def eval(self, expr: Expr, agent: str) -> Any:
        return evaluate(expr, lambda ref: self.read(ref, agent))

    def render(self, template: Template, agent: str) -> str:
        def missing(ref: Ref) -> None:
            self.log.emit("warning", agent, where="bot message",
                          message=f"${{{ref.scope}.{ref.name}}} has no value yet; the message shows a placeholder",
                          template=template.source)

        return render_template(template, lambda ref: self.read(ref, agent), on_missing=missing)

    # ---- conversation --------------------------------------------------------------

    def say(self, agent: str | None, text: str, frame: Frame | None = None) -> None:
        text = text.strip()
        if not text:
            return
        self.said.append(BotMessage(agent, text))
        self.state.history.append(HistoryItem(role="bot", text=text, agent=agent, turn=self.state.turn))
        self.log.emit("bot_message", agent, text=text)
        if frame is not None:
            frame.last_prompt = text
            frame.said_since_start = True

    def last_user_message(self) -> str:
        for item in reversed(self.state.history):
            if item.role == "user":
                return item.text
        return ""

    # ---- side effects --------------------------------------------------------------

    def complete(self, request: LLMRequest, agent: str | None) -> LLMResponse:
        """Make an LLM call, recording it (prompt, answer, tokens) as an event."""
        if self.llm is None:
            self.log.emit("llm_call", agent, purpose=request.purpose, error=NO_LLM_MESSAGE)
            raise LLMError(NO_LLM_MESSAGE)
        prompt = [m.model_dump(exclude_none=True, exclude_defaults=True) for m in request.messages]
        try:
            response = self.llm.complete(request)
        except LLMError as exc:
            self.log.emit("llm_call", agent, purpose=request.purpose, provider=self.llm.name,
                          messages=prompt, tools=[t.name for t in request.tools], error=str(exc))
            raise
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
        )
        return response

    def call_tool(self, tool: str, args: dict[str, Any], caller: str | None, frame: Frame | None) -> ToolResult:
        self.log.emit("tool_called", caller, tool=tool, args=args)
        result = self.tools.call(tool, args)
        self.log.emit("tool_result", caller, tool=tool, status=result.status, message=result.message,
                      args=result.args, bot=result.bot, error=result.error,
                      **({"truncated": result.truncated} if result.truncated else {}))
        rec = self.state.records.setdefault(tool, {})
        rec.update(result.args)
        self.set_status(tool, result.status, result.message)
        rec["message"] = result.message
        caller_agent = self.program.agents.get(caller) if caller else None
        if caller_agent is not None and result.status == "success" and not result.error:
            # Only a tool that succeeded sets its caller's arguments: a value it rejected is not used.
            own = set(caller_agent.arg_names())
            for name, value in result.args.items():
                if name in own:
                    self.write(caller, name, value, caller, why=f"returned by {tool}")
        for line in result.bot:
            self.say(caller, line, frame)
        if result.error:
            self.log.emit("error", caller, where=f"tool {tool}", message=result.error)
        return result

