"""The intermediate representation shared by every front end and the runtime.

Front ends (ADL today, ABL next) lower source programs to these models; the runtime
interprets them and nothing else. Everything here is plain, typed, JSON-serialisable
data: names instead of object references, node ids instead of pointers.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

from frontdesk.diagnostics import Span

IR_VERSION = "2"


class IRModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ---------------------------------------------------------------------------
# Expressions: already parsed and name-resolved, so the runtime never parses text.
# ---------------------------------------------------------------------------


class Lit(IRModel):
    op: Literal["lit"] = "lit"
    value: Any = None


class Ref(IRModel):
    """A value in a record: `scope` is an agent, tool or subflow name; `name` an argument of it.

    Scope records also answer the pseudo-arguments `status`, `message`, `success` and `error`
    after the agent, tool or subflow has finished.
    """

    op: Literal["ref"] = "ref"
    scope: str
    name: str


class Compare(IRModel):
    op: Literal["cmp"] = "cmp"
    cmp: Literal["==", "!=", "<", ">", "<=", ">=", "in", "not in"]
    left: "Expr"
    right: "Expr"


class BoolOp(IRModel):
    op: Literal["and", "or"]
    items: list["Expr"]


class Not(IRModel):
    op: Literal["not"] = "not"
    item: "Expr"


class Call(IRModel):
    """A call of a built-in function from the evaluator's allow-list (e.g. `re.match`, `len`)."""

    op: Literal["call"] = "call"
    fn: str
    args: list["Expr"] = Field(default_factory=list)


Expr = Annotated[Union[Lit, Ref, Compare, BoolOp, Not, Call], Field(discriminator="op")]


class ExprCondition(IRModel):
    kind: Literal["expr"] = "expr"
    source: str
    expr: Expr


class ClaimsCondition(IRModel):
    """A natural-language condition: the user's last message says one of `examples`."""

    kind: Literal["claims"] = "claims"
    source: str
    examples: list[str]


Condition = Annotated[Union[ExprCondition, ClaimsCondition], Field(discriminator="kind")]


class TextPart(IRModel):
    text: str


class RefPart(IRModel):
    ref: Ref


class Template(IRModel):
    """Text with `${arg}` / `${agent.arg}` holes, split into literal and reference parts."""

    source: str
    parts: list[Union[TextPart, RefPart]] = Field(default_factory=list)


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


class ListenNode(NodeBase):
    """Wait for the user's next message.

    What the answer is read for, filled by the front end (ADL: from the steps that follow; ABL:
    from GATHER): `classifies`, the id of the branch whose `the user claims` cases the answer
    decides; `extracts`, the flow's own arguments the answer may give."""

    kind: Literal["listen"] = "listen"
    classifies: str | None = None
    extracts: list[str] = Field(default_factory=list)


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


class BranchCase(IRModel):
    condition: Condition
    target: str  # first node of the `then` block
    span: Span | None = None


class BranchNode(NodeBase):
    """An if / else-if chain. With no case true, go to `otherwise` (the else block) or `next`."""

    kind: Literal["branch"] = "branch"
    cases: list[BranchCase]
    otherwise: str | None = None


class JumpNode(NodeBase):
    """`next:` to a label or subflow. After `tries` jumps, control falls through to `next`."""

    kind: Literal["jump"] = "jump"
    target: str  # node id
    target_name: str  # the label or subflow name as written
    tries: int | None = None


class ReturnNode(NodeBase):
    kind: Literal["return"] = "return"
    status: Literal["success", "error"]
    message: str = ""


StepNode = Annotated[
    Union[SayNode, ListenNode, AssignNode, InvokeNode, BranchNode, JumpNode, ReturnNode],
    Field(discriminator="kind"),
]


class StepGraph(IRModel):
    entry: str | None
    nodes: dict[str, StepNode] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)  # label name -> node id
    subflows: dict[str, str | None] = Field(default_factory=dict)  # subflow name -> entry node id


# ---------------------------------------------------------------------------
# Agents
# ---------------------------------------------------------------------------


class ArgDef(IRModel):
    name: str
    description: str = ""
    type: str = "any"
    span: Span | None = None


class Policy(IRModel):
    """A fallback or exit policy: another agent, a natural-language text, or the runtime default."""

    kind: Literal["agent", "text", "default"]
    value: str = ""


class AgentBase(IRModel):
    name: str
    description: str = ""
    args: list[ArgDef] = Field(default_factory=list)
    fallback: Policy | None = None
    exit: Policy | None = None
    setup: StepGraph | None = None  # steps run when the agent starts (llm / ensemble `steps`)
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


class ReasoningAgent(AgentBase):
    kind: Literal["reasoning"] = "reasoning"
    instructions: str
    tools: list[str] = Field(default_factory=list)
    max_iterations: int = 8


class FlowAgent(AgentBase):
    kind: Literal["flow"] = "flow"
    graph: StepGraph


class ArgBinding(IRModel):
    """Member argument bound to a router argument; `two_way` (ADL `ref`) writes changes back."""

    member_arg: str
    router_arg: str
    two_way: bool = False


class RouterMember(IRModel):
    agent: str
    bindings: list[ArgBinding] = Field(default_factory=list)
    span: Span | None = None


class RouterAgent(AgentBase):
    kind: Literal["router"] = "router"
    members: list[RouterMember]
    instructions: str | None = None


Agent = Annotated[
    Union[KnowledgeAgent, ReasoningAgent, FlowAgent, RouterAgent], Field(discriminator="kind")
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


class ToolDef(IRModel):
    name: str
    description: str = ""
    params: list[ToolParam] = Field(default_factory=list)
    module: str  # python file, relative to the program root
    span: Span | None = None

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


for _m in (Compare, BoolOp, Not, Call, ExprCondition, Assignment, ArgValue):
    _m.model_rebuild()
