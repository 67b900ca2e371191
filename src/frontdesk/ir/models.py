"""The intermediate representation shared by every front end and the runtime.

Front ends (ADL today, ABL next) lower source programs to these models; the runtime
interprets them and nothing else. Everything here is plain, typed, JSON-serialisable
data: names instead of object references, node ids instead of pointers.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import Field, PrivateAttr, model_validator

from frontdesk.diagnostics import Span
from frontdesk.ir.behaviour import ActionElement, AgentRules

IR_VERSION = "4"


# ---------------------------------------------------------------------------
# Expressions: already parsed and name-resolved, so the runtime never parses text.
# The nodes live in frontdesk.ir.expr and are re-exported here.
# ---------------------------------------------------------------------------

from frontdesk.ir.expr import (  # noqa: F401
    Arith,
    BoolOp,
    Call,
    ClaimsCondition,
    Compare,
    Condition,
    Each,
    EachKind,
    EachPart,
    Expr,
    ExprCondition,
    ExprPart,
    Get,
    IfPart,
    Implies,
    IRModel,
    IsSet,
    ListLit,
    Lit,
    Local,
    Neg,
    Not,
    ObjEntry,
    ObjLit,
    Ref,
    RefSpace,
    Template,
    TemplatePart,
    TextPart,
)

# ---------------------------------------------------------------------------
# Step graph: flow agents (ADL) and FLOW sections (ABL) lower to this.
# ---------------------------------------------------------------------------


class NodeBase(IRModel):
    id: str
    span: Span | None = None
    next: str | None = None  # the node that follows; None ends the current subflow


class SayNode(NodeBase):
    kind: Literal["say"] = "say"
    text: Template
    actions: list[ActionElement] = Field(default_factory=list)  # buttons, choices, inputs shown with it
    variants: dict[str, Template] = Field(default_factory=dict)  # channel -> the text said on it instead
    # a question a GATHER asks (ABL): the field it asks for, "" for a step's "anything else?" question
    # (COMPLETE_WHEN); None: not such a question
    asks: str | None = None


class ListenNode(NodeBase):
    """Wait for the user's next message.

    What the answer is read for, filled by the front end (ADL: from the steps that follow; ABL:
    from GATHER): `classifies`, the id of the branch whose `the user claims` cases the answer
    decides; `extracts`, the flow's own arguments the answer may give."""

    kind: Literal["listen"] = "listen"
    classifies: str | None = None
    extracts: list[str] = Field(default_factory=list)
    # how values are read from the answer: by a model, by patterns (e-mail, phone, number, yes/no,
    # date, a fixed list), or patterns first and a model for the rest; with no model, patterns
    strategy: Literal["llm", "pattern", "hybrid"] = "llm"
    # ABL: gathered fields a later message may correct here ("actually 4 guests", CORRECTIONS: true)
    corrects: list[str] = Field(default_factory=list)
    # ABL: where the flow goes when a field's validation retries run out (the step's ON_FAIL)
    on_invalid: str | None = None
    # ABL: the named step it belongs to (where a correction of a field it reads goes back to)
    step: str | None = None


class Assignment(IRModel):
    target: Ref
    value: Expr


class AssignNode(NodeBase):
    kind: Literal["assign"] = "assign"
    assignments: list[Assignment]


class ArgValue(IRModel):
    name: str
    value: Expr


class InvokeNode(NodeBase):
    """Call an agent, a tool, or a subflow of the same agent (which returns here)."""

    kind: Literal["invoke"] = "invoke"
    target: str
    target_kind: Literal["agent", "tool", "subflow"]
    args: list[ArgValue] = Field(default_factory=list)
    # the results record the call's status, message and values go to; None: the target's name
    result: str | None = None
    bind: Ref | None = None  # where the call's whole result value is also kept (ABL CALL ... AS x)
    # the step says what a failed call leads to (ABL ON_FAIL under the CALL): the agent's general error
    # handling (ON_ERROR) does not take the failure
    handles_failure: bool = False


class BranchCase(IRModel):
    condition: Condition
    target: str  # first node of the `then` block
    span: Span | None = None


class BranchNode(NodeBase):
    """An if / else-if chain. With no case true, go to `otherwise` (the else block) or `next`."""

    kind: Literal["branch"] = "branch"
    cases: list[BranchCase]
    otherwise: str | None = None
    # ABL GATHER: the field whose being settled this check tests (a behaviour profile may make it
    # required or optional); None: any other branch
    settles: str | None = None


class JumpNode(NodeBase):
    """`next:` to a label or subflow. After `tries` jumps, control falls through to `next`."""

    kind: Literal["jump"] = "jump"
    target: str  # node id
    target_name: str  # the label or subflow name as written
    tries: int | None = None


class ReturnNode(NodeBase):
    kind: Literal["return"] = "return"
    status: Literal["success", "error"]
    message: Template | None = None  # the caller reads it as `agent.message`; may hold `${...}`


class HandoffNode(NodeBase):
    """Hand the conversation to another agent (ABL HANDOFF). With `resume` (RETURN: true) this agent
    is suspended, its data and transcript kept, and comes back at `next` when that agent ends;
    without, this agent ends here."""

    kind: Literal["handoff"] = "handoff"
    target: str
    resume: bool = False
    args: list[ArgValue] = Field(default_factory=list)  # values passed (CONTEXT.pass)
    summary: Template | None = None  # said to the agent taking over (CONTEXT.summary)
    history: str = "none"  # what a reasoning agent taking over sees: none, summary_only, full, last_n:N


class EscalateNode(NodeBase):
    """Hand the conversation to a person (ABL ESCALATE): the session's status becomes escalated."""

    kind: Literal["escalate"] = "escalate"
    reason: str = ""
    priority: Literal["low", "medium", "high", "critical"] = "medium"
    message: Template | None = None  # said to the user


StepNode = Annotated[
    Union[SayNode, ListenNode, AssignNode, InvokeNode, BranchNode, JumpNode, ReturnNode, HandoffNode,
          EscalateNode],
    Field(discriminator="kind"),
]


class StepGraph(IRModel):
    entry: str | None
    nodes: dict[str, StepNode] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)  # label name -> node id
    subflows: dict[str, str | None] = Field(default_factory=dict)  # subflow name -> entry node id
    exits: dict[str, str] = Field(default_factory=dict)  # step -> where it goes on (steps a profile may skip)
    complete: str | None = None  # the node an action's GOTO COMPLETE goes to (ABL: the flow's successful end)


# ---------------------------------------------------------------------------
# Agents
# ---------------------------------------------------------------------------


class ArgDef(IRModel):
    name: str
    description: str = ""
    type: str = "any"
    # the session variable this argument is another name for (ADL `ref` bindings to a router's
    # argument; ABL GATHER fields kept in shared session memory); None: its own, `agent.name`
    bound_to: Ref | None = None
    span: Span | None = None


class ToolOutput(IRModel):
    """A value a tool returns that its caller keeps: the result's `field` is written to `target`
    when the call succeeds."""

    field: str
    target: Ref


class InactivityRule(IRModel):
    """What to do when the user has said nothing for `after` seconds (read from a policy's text, or ABL's
    EXECUTION session_timeout): remind them, or say good-bye and end the session."""

    after: float
    action: Literal["remind", "end"]
    text: str = ""  # what is said; empty: the runtime's default words


class Policy(IRModel):
    """A fallback or exit policy: another agent, a natural-language text, or the runtime default."""

    kind: Literal["agent", "text", "default"]
    value: str = ""
    # the timed rules a text policy states ("if there is no input for 30 seconds, remind the user")
    inactivity: list[InactivityRule] = Field(default_factory=list)

    def shown(self) -> dict:
        """The policy as a trace shows it: kind and value, and its timed rules when it has any."""
        shown = {"kind": self.kind, "value": self.value}
        if self.inactivity:
            shown["inactivity"] = [r.model_dump() for r in self.inactivity]
        return shown


class DialoguePolicy(IRModel):
    """How an agent's dialogue behaves where languages differ: what its flow does with the answers to
    its questions, how it hands the conversation over and back, where the names it does not declare
    live, what its reasoning model is shown, and which of its rules ride the turn pipeline. The runtime
    reads these and never which language a program came from.

    Each front end fills it (ABL: lang/abl/conventions.py; ADL: lang/adl/conventions.py). The defaults
    are what a program built directly in the IR gets: the runtime's plain behaviour, with no
    conventions added (no GATHER validation or corrections, no digressions, no step limit, a handoff
    that shows the conversation as it is, names kept in the agent's own variables). ADL adds none of
    these, so its front end keeps the defaults; ABL turns them on (docs/abl-semantics.md).
    """

    # a flow back at a question it asked: "reject" refuses the earlier answer's values, "missing" asks what is missing
    reask: Literal["reject", "missing"] = "reject"
    # a later message may correct a value gathered before (the listen step's `corrects`: "actually 4 guests")
    corrections: bool = False
    # answers are checked by their GATHER validations, unreadable ones told what is expected, all_fields_gathered kept
    checks_answers: bool = False
    # an answer giving nothing its question asks (or no ON_INPUT case) may turn to another member; the flow resumes
    digressions: bool = False
    # with no model (or a pattern-only question), a flow reads what words and patterns can and calls no model
    offline_understanding: bool = False
    # the runtime keeps its system variables (ABL 8.8): match, _clarification_count, user.sentiment, trajectory
    system_variables: bool = False
    # started again, the agent asks afresh for the GATHER values its last activation ended with
    fresh_activation: bool = False
    # step transitions a session may make before the flow is stopped (ABL max_flow_iterations); None: no limit
    step_limit: int | None = None
    # where a name the agent does not declare lives: None, its own variables; else that scope (ABL: "session")
    unbound_scope: str | None = None
    # its handoffs' CONTEXT (summary, history) decides what the agent taking over sees; False: the conversation
    handoff_context: bool = False
    # an agent it hands the conversation to with RETURN: true may give it back (`__return_to_parent__`)
    offers_return: bool = False
    # one it handed over to ending sets handoff.completed and hands back ON_RETURN values (then COMPLETE rules)
    tracks_completion: bool = False
    # a reasoning model sees "instructions" (its text, finish) or "sections" (goal, fields, memory, complete; offline)
    prompt: Literal["instructions", "sections"] = "instructions"
    # its declared rules (constraints, guardrails, hooks, memory recall) ride the turn pipeline (the rules hook)
    rules_hook: bool = False
    # traces also name values read from an answer as GATHER events (`gather_extraction`)
    gather_events: bool = False
    # every message a flow reads may give any argument it declares and has not got, not only those its next
    # steps read (MICA); with no model they are read by kind, listed values and name (docs/adl-semantics.md)
    args_from_messages: bool = True


class AgentBase(IRModel):
    name: str
    description: str = ""
    args: list[ArgDef] = Field(default_factory=list)
    fallback: Policy | None = None
    exit: Policy | None = None
    setup: StepGraph | None = None  # steps run when the agent starts (llm / ensemble `steps`)
    # per tool it calls: which values of a successful result the agent keeps, and where
    tool_outputs: dict[str, list[ToolOutput]] = Field(default_factory=dict)
    # what it declares besides its steps (ABL GATHER, MEMORY, CONSTRAINTS, ...): ir/behaviour.py; empty
    # when it declares nothing
    rules: AgentRules = Field(default_factory=AgentRules)
    # how its dialogue behaves where languages differ, filled by the front end
    policy: DialoguePolicy = Field(default_factory=DialoguePolicy)
    span: Span | None = None

    def arg_names(self) -> list[str]:
        return [a.name for a in self.args]


class FaqEntry(IRModel):
    q: str
    a: str
    span: Span | None = None


class KnowledgeSource(IRModel):
    location: str  # as written in the program
    kind: Literal["file", "directory", "url"]
    path: str | None = None  # resolved path relative to the program root, when found
    span: Span | None = None


class KnowledgeAgent(AgentBase):
    kind: Literal["knowledge"] = "knowledge"
    sources: list[KnowledgeSource] = Field(default_factory=list)
    faq: list[FaqEntry] = Field(default_factory=list)


class Delegation(IRModel):
    """An agent a reasoning agent may call like a tool and get the result of (ABL DELEGATE): it pauses,
    the other agent runs with `inputs`, and the loop goes on with what it returned."""

    agent: str
    purpose: str = ""
    inputs: list[str] = Field(default_factory=list)  # arguments of `agent` the model fills
    # INPUT as written: argument -> the caller's value it takes (`{vehicle_class, days: rental_days}`);
    # what a flow's DELEGATE step passes
    given: dict[str, Expr] = Field(default_factory=dict)
    returns: dict[str, str] = Field(default_factory=dict)  # field -> type the result is expected to have
    span: Span | None = None


class Handoff(IRModel):
    """An agent a reasoning agent may hand the conversation to (ABL HANDOFF), as a tool the model calls."""

    agent: str
    purpose: str = ""
    resume: bool = False  # RETURN: true: come back to this agent when the other ends
    passes: list[str] = Field(default_factory=list)  # this agent's arguments copied to the other's
    when: str = ""  # when to hand off, as written (a condition, or words for the model)
    # the WHEN when it is an expression (`wants_redelivery == true`): a flow hands off as soon as it holds
    condition: Condition | None = None
    summary: Template | None = None  # told to the agent taking over (CONTEXT.summary)
    history: str = "none"  # how much conversation it sees: none, summary_only, full, last_n:N
    on_return: dict[str, Expr] = Field(default_factory=dict)  # values it hands back (ON_RETURN map)
    extra: dict[str, Any] = Field(default_factory=dict)  # async, remote, ON_RETURN action, ... as written
    span: Span | None = None


class ReasoningAgent(AgentBase):
    kind: Literal["reasoning"] = "reasoning"
    instructions: str
    tools: list[str] = Field(default_factory=list)
    delegates: list[Delegation] = Field(default_factory=list)
    handoffs: list[Handoff] = Field(default_factory=list)
    can_escalate: bool = False  # the model may hand the conversation to a person
    max_iterations: int = 8  # model calls a run of its loop may make (ABL: EXECUTION max_iterations, 10)
    # the speaker the user sees for what it says, when not its own name (ABL: a FLOW step's
    # reasoning agent `<Agent>__<step>` speaks as `<Agent>`); the trace keeps `name`
    shown_as: str | None = None
    # the agent whose flow step it runs (ABL REASONING: true steps): it acts under that agent's rules
    # (ON_ERROR, MESSAGES, GATHER, profiles); None: its own
    owner: str | None = None


class FlowAgent(AgentBase):
    kind: Literal["flow"] = "flow"
    graph: StepGraph
    # the agents its handoff steps may give the conversation to, as declared (ABL HANDOFF): what a step
    # passes, and the ON_RETURN map read when one it handed over to with RETURN: true ends
    handoffs: list[Handoff] = Field(default_factory=list)


class ArgBinding(IRModel):
    """Member argument bound to a router argument; `two_way` (ADL `ref`) writes changes back."""

    member_arg: str
    router_arg: str
    two_way: bool = False


class RouterMember(IRModel):
    agent: str
    bindings: list[ArgBinding] = Field(default_factory=list)
    # when to route here, in words (ABL HANDOFF WHEN), and words that say it (ABL INTENT(...))
    description: str = ""
    examples: list[str] = Field(default_factory=list)
    resume: bool = True  # an interrupted run of it comes back (ABL RETURN: true)
    passes: list[str] = Field(default_factory=list)  # values handed over (ABL CONTEXT.pass)
    # the supervisor's HANDOFF entry for it: CONTEXT history / summary, ON_RETURN map (ABL 3.10)
    handoff: Handoff | None = None
    # a WHEN written as an expression (`channel == "voice"`): routed here, before any model, when it holds
    condition: Condition | None = None
    span: Span | None = None


# How a router can orchestrate its members (runtime/orchestration.py): the five methods of the ADL paper
# (section 4) and Frontdesk's own default, `adaptive`.
ORCHESTRATION_STRATEGIES = ("adaptive", "proactive", "merging", "autonomous", "first-success", "best-of-n")
DEFAULT_ORCHESTRATION = "adaptive"


class RouterAgent(AgentBase):
    kind: Literal["router"] = "router"
    members: list[RouterMember]
    instructions: str | None = None
    default: str | None = None  # the member a message no rule fits goes to (ABL ROUTING DEFAULT)
    # how the router orchestrates its members (runtime/orchestration.py: adaptive, proactive, merging,
    # autonomous, first-success, best-of-n); None: the program's, else the runtime's default
    strategy: str | None = None
    # LLM agents that check each user message before a member handles it (input guardrails of the ADL
    # paper, section 2): each answers allowed or blocked, with the reply to give when blocked
    guardrails: list[str] = Field(default_factory=list)
    _by_agent: tuple[int, dict[str, RouterMember]] | None = PrivateAttr(default=None)

    def share_arguments(self, agent: str, other: str) -> bool:
        """Whether two members are bound to the same router argument: the first hands its result to the
        second (a book chosen for an order)."""
        bound: dict[str, set[str]] = {m.agent: {b.router_arg for b in m.bindings} for m in self.members}
        return bool(bound.get(agent, set()) & bound.get(other, set()))

    def member(self, agent: str) -> RouterMember | None:
        """The member entry of `agent` (the first, if listed twice), from an index built once (again if
        members were added or removed since)."""
        if self._by_agent is None or self._by_agent[0] != len(self.members):
            index: dict[str, RouterMember] = {}
            for m in self.members:
                index.setdefault(m.agent, m)
            self._by_agent = (len(self.members), index)
        return self._by_agent[1].get(agent)


class RemoteAgent(AgentBase):
    """An agent served by another service (ABL HANDOFF with `remote:`, 3.10). While it holds the
    conversation, each turn is one request to `endpoint`, a tool of the program with an HTTP binding
    (the service's url and its auth header): the first carries the CONTEXT handed over, every one the
    user's message; the service's answer says what to tell the user, whether the remote agent is done,
    and the values it hands back (docs/runtime.md, "Remote agents")."""

    kind: Literal["remote"] = "remote"
    endpoint: str


Agent = Annotated[
    Union[KnowledgeAgent, ReasoningAgent, FlowAgent, RouterAgent, RemoteAgent], Field(discriminator="kind")
]


# ---------------------------------------------------------------------------
# Tools and the program
# ---------------------------------------------------------------------------


class ToolParam(IRModel):
    name: str
    type: str = "string"  # JSON-schema type
    required: bool = True
    default: Any = None
    description: str = ""


class PythonBinding(IRModel):
    """A function in one of the program's Python files (ADL's tools)."""

    kind: Literal["python"] = "python"
    module: str  # python file, relative to the program root
    function: str


_SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "x-api-key", "api-key", "apikey"})


def is_secret_header(name: str) -> bool:
    """Whether a request header carries a credential (its value must come from the environment)."""
    low = name.strip().lower()
    return low in _SECRET_HEADERS or low.endswith(("-token", "-secret", "-key", "_token", "_secret", "_key"))


class HttpBinding(IRModel):
    """An HTTP endpoint (ABL's tool library: `.tools.abl`).

    `url`, the `headers` values, the `query` values and the strings inside `body` are templates:
    `{param}` (or `{{param}}`) is the call's argument `param`, `{env.NAME}` (or `{{env.NAME}}`) the
    environment variable NAME, read when the tool is called; other braces are kept as written. An
    argument put into the url is percent-encoded; a string that is one hole alone takes the value
    with its JSON type (`"{count}"` sends the number). A credential header (Authorization, X-API-Key,
    ...) must take its secret from the environment, so the IR and the traces never hold it, and
    results and error texts never show it.

    `query` None: for GET and DELETE, the arguments the url does not use. `body` None: for POST,
    PUT and PATCH, the arguments neither the url nor the query uses, as a JSON object. Only the
    tool's declared parameters go out so (any argument when it declares none), and an argument
    with no value (None) is left out. The response is the tool's value: JSON data when its content
    type is JSON, else its text (None when empty); a status of 300 or more (redirects are not
    followed) is an `http_status` error.
    """

    kind: Literal["http"] = "http"
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "GET"
    url: str
    headers: dict[str, str] = Field(default_factory=dict)
    query: dict[str, str] | None = None
    body: Any = None
    body_format: Literal["json", "form"] = "json"
    timeout: float | None = None  # seconds; None: the program's `tools:` limit for the tool
    max_response_bytes: int = 1_000_000  # a longer response is a `too_large` error

    @model_validator(mode="after")
    def _no_literal_secrets(self) -> "HttpBinding":
        for name, value in self.headers.items():
            if is_secret_header(name) and not any(mark in value for mark in ("{env.", "{{env.", "{{ env.")):
                example = "Bearer {env.API_TOKEN}" if name.strip().lower() == "authorization" else "{env.API_KEY}"
                raise ValueError(f"header {name} holds a credential: take it from the environment, "
                                 f"e.g. {name}: \"{example}\"")
        return self


class StubAnswer(IRModel):
    """One answer of a stub: given when every argument in `when` has the value written there
    (an empty `when` matches every call). `error` makes the call fail with that text."""

    when: dict[str, Any] = Field(default_factory=dict)
    value: Any = None
    error: str | None = None


class StubBinding(IRModel):
    """A tool answered from a table (a tool declared before its implementation exists, or a test
    double): the first answer whose `when` matches; with none, the call is a `not_found` error."""

    kind: Literal["stub"] = "stub"
    answers: list[StubAnswer] = Field(default_factory=list)


class McpServer(IRModel):
    """An MCP server a tool library declares once (`MCP_SERVERS:` in a `.tools.abl`): a `command`
    (with `args`, `env`, `cwd`) started as a subprocess that speaks MCP over stdio, or the `url` of a
    streamable HTTP endpoint (with `headers`). `env` and `headers` values may be `{env.NAME}`
    templates, read when the server is started; a credential header must take its value from the
    environment. `timeout` bounds connecting and each call (None: the program's `tools:` limit)."""

    name: str
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None  # relative to the program root
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    timeout: float | None = None

    @model_validator(mode="after")
    def _one_transport(self) -> "McpServer":
        if bool(self.command) == bool(self.url):
            raise ValueError(f"MCP server {self.name} needs either command: (stdio) or url: (streamable HTTP)")
        for name, value in self.headers.items():
            if is_secret_header(name) and not any(mark in value for mark in ("{env.", "{{env.", "{{ env.")):
                example = "Bearer {env.API_TOKEN}" if name.strip().lower() == "authorization" else "{env.API_KEY}"
                raise ValueError(f"header {name} holds a credential: take it from the environment, "
                                 f"e.g. {name}: \"{example}\"")
        return self


class McpBinding(IRModel):
    """A tool served by an MCP server: the call is the server's tool `tool` (by default named like
    the ABL tool), on one session per server and engine. The result's structured content (else its
    text, read as JSON when it is JSON) is the tool's value; a result flagged as an error is a
    `raised` error result."""

    kind: Literal["mcp"] = "mcp"
    server: McpServer
    tool: str


ToolBinding = Annotated[Union[PythonBinding, HttpBinding, StubBinding, McpBinding], Field(discriminator="kind")]


class ToolAuth(IRModel):
    """What credentials a tool needs (ABL auth_profile, auth_jit, consent, connection)."""

    profile: str = ""  # an auth profile's name, or a `{{config.X}}` reference kept verbatim
    jit: bool = False  # asked for just in time, at the first call
    consent: Literal["preflight", "inline"] | None = None
    connection: Literal["per_user", "shared"] | None = None


class ToolConfirmation(IRModel):
    """Whether the user approves a call before it runs (ABL side_effects, confirm, immutable)."""

    side_effects: bool = False
    require: Literal["always", "never", "when_side_effects"] | None = None
    immutable: list[str] = Field(default_factory=list)  # parameters locked once approved
    message: str = ""  # the question asked (`confirm_message:`), `{{param}}` filled; "" for the default


class ToolDef(IRModel):
    """A tool: its contract (`params`, `returns`) and what answers a call (`binding`).

    `returns` is a JSON schema of the value (`{}`: anything); a "value" tool whose value does not
    fit it gives a `bad_result` error. `convention` says how the returned value is read: "value",
    the value is the result; "adl", ADL's list of `{status, msg}` / `{bot}` / `{arg, value}` items
    (read by the reader the ADL front end registers). `ToolDef(module="shop.py", ...)` is
    shorthand for a Python binding to the function named like the tool, in the ADL convention.
    """

    name: str
    description: str = ""
    params: list[ToolParam] = Field(default_factory=list)
    returns: dict[str, Any] = Field(default_factory=dict)
    binding: ToolBinding = Field(default_factory=StubBinding)
    convention: Literal["adl", "value"] = "value"
    auth: ToolAuth | None = None
    confirmation: ToolConfirmation | None = None
    span: Span | None = None

    @model_validator(mode="before")
    @classmethod
    def _module_shorthand(cls, data: Any) -> Any:
        if isinstance(data, dict) and "module" in data:
            data = dict(data)
            module = data.pop("module")
            if data.get("binding") is not None:
                raise ValueError("give a tool either module or binding, not both")
            data["binding"] = {"kind": "python", "module": module, "function": data.get("name")}
            data.setdefault("convention", "adl")
        return data

    @property
    def module(self) -> str | None:
        """The Python file of a Python-bound tool (None for other bindings)."""
        return self.binding.module if isinstance(self.binding, PythonBinding) else None

    def json_schema(self) -> dict:
        props = {}
        for p in self.params:
            prop: dict[str, Any] = {"type": p.type} if p.type != "any" else {}
            if p.description:
                prop["description"] = p.description
            props[p.name] = prop
        return {
            "type": "object",
            "properties": props,
            "required": [p.name for p in self.params if p.required],
        }


class ThresholdSettings(IRModel):
    """Overrides of the understanding thresholds (see frontdesk.nlu.base.Thresholds); None keeps the default."""

    accept: float | None = None
    margin: float | None = None
    reject: float | None = None


class ToolLimits(IRModel):
    """Bounds on one tool call; in `ToolSettings.per_tool`, None keeps the program's value."""

    timeout: float | None = None  # seconds a call may take before it is an error result
    output_chars: int | None = None  # printed output kept; the rest is cut with a marker
    result_chars: int | None = None  # each text of the result (message, a line said, a value) kept


class ToolSettings(IRModel):
    """What a tool call may cost and push into a session (`tools:` in config.yml)."""

    timeout: float = 30.0
    output_chars: int = 20_000
    result_chars: int = 20_000
    per_tool: dict[str, ToolLimits] = Field(default_factory=dict)

    def limits_for(self, tool: str) -> ToolLimits:
        """The bounds of one tool: its own settings where it has them, else the program's."""
        own = self.per_tool.get(tool) or ToolLimits()
        return ToolLimits(
            timeout=own.timeout if own.timeout is not None else self.timeout,
            output_chars=own.output_chars if own.output_chars is not None else self.output_chars,
            result_chars=own.result_chars if own.result_chars is not None else self.result_chars,
        )


class ProgramSettings(IRModel):
    """Per-program runtime settings (from `config.yml` beside an ADL program)."""

    max_consecutive_fallbacks: int = 3
    history_window: int = 20
    llm: dict[str, Any] = Field(default_factory=dict)
    # Per decision kind ("route", "claims"): when an embedding decision is sure enough to skip the LLM.
    understanding: dict[Literal["route", "claims"], ThresholdSettings] = Field(default_factory=dict)
    tools: ToolSettings = Field(default_factory=ToolSettings)
    # Project defaults of ABL supervisors' pre-classification pipeline (abl-specification 3.15), under an
    # agent's own EXECUTION.pipeline and over the system defaults.
    pipeline: dict[str, Any] = Field(default_factory=dict)
    # the orchestration strategy of routers that name none (`orchestration:` in config.yml)
    orchestration: str | None = None


class Program(IRModel):
    ir_version: str = IR_VERSION
    language: Literal["adl", "abl"]
    sources: list[str] = Field(default_factory=list)  # source files, relative to the root
    entry: str = "main"
    agents: dict[str, Agent] = Field(default_factory=dict)
    tools: dict[str, ToolDef] = Field(default_factory=dict)
    settings: ProgramSettings = Field(default_factory=ProgramSettings)
    root: str = Field(default="", exclude=True)  # folder the relative paths start from

    def agent(self, name: str):
        return self.agents[name]

    def rules_for(self, name: str) -> AgentRules:
        """The rules agent `name` acts under: its own, or those of the agent whose flow step it runs
        (`ReasoningAgent.owner`)."""
        agent = self.agents[name]
        owner = self.agents.get(getattr(agent, "owner", None) or "")
        return owner.rules if owner is not None else agent.rules

    def slot_of(self, scope: str | None, name: str) -> tuple[str, str]:
        """Where agent `scope`'s argument `name` lives in the session's variables: its own variable, or the
        one it is bound to (an ADL `ref` to a router's argument, an ABL field in shared session memory).

        With no scope (a bare name no agent declares): where the entry agent keeps names it does not
        declare (its policy's `unbound_scope`: ABL's shared `session`), else the entry agent's own."""
        if scope is None:
            entry = self.agents.get(self.entry)
            shared = entry.policy.unbound_scope if entry is not None else None
            return (shared, name) if shared else (self.entry, name)
        agent = self.agents.get(scope)
        if agent is not None:
            arg = next((a for a in agent.args if a.name == name), None)
            if arg is not None and arg.bound_to is not None:
                return arg.bound_to.scope, arg.bound_to.name
            if arg is None and agent.policy.unbound_scope:  # ABL: a name it does not declare is the session's
                return agent.policy.unbound_scope, name
        return scope, name


for _m in (ExprCondition, Assignment, ArgValue):
    _m.model_rebuild()
