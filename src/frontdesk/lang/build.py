"""Building IR programs in Python, without any source language: for runtime tests that must hold for
every front end, and for front ends that lower to the same shapes. It sits with the front ends, not in
`frontdesk.ir`: it parses ADL's condition and template text and applies ADL's conventions.

    from frontdesk.lang import build as b

    program = b.program(
        b.flow("main", [b.call("desk")]),
        b.router("desk", ["advisor", "faq"], setup=[b.say("Hello, how can I help?")]),
        b.reasoning("advisor", "Recommend a product.", description="Recommends a product."),
        b.knowledge("faq", description="Answers delivery questions.",
                    faq=[("How long does delivery take?", "Two days.")]),
    )

Conditions and values are written as in ADL (`the user claims "Yes"`, `size == "large"`); messages
may hold `${arg}` references. Node ids are `n1`, `n2`, ... in the order the steps are built.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Union

from frontdesk.analysis.listen import annotate_listens
from frontdesk.expr import parse_condition, parse_expression, parse_template
from frontdesk.ir.models import (
    ArgBinding,
    ArgDef,
    ArgValue,
    Assignment,
    AssignNode,
    BranchCase,
    BranchNode,
    Delegation,
    EscalateNode,
    FaqEntry,
    FlowAgent,
    HandoffNode,
    HttpBinding,
    InvokeNode,
    JumpNode,
    KnowledgeAgent,
    ListenNode,
    Policy,
    Program,
    PythonBinding,
    ReasoningAgent,
    Ref,
    ReturnNode,
    RouterAgent,
    RouterMember,
    SayNode,
    StepGraph,
    StubAnswer,
    StubBinding,
    ToolDef,
    ToolParam,
)
from frontdesk.ir.models import Handoff as IRHandoff
from frontdesk.lang.adl.conventions import apply_adl_conventions

# ---- steps ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Say:
    text: str


@dataclass(frozen=True)
class Listen:
    pass


@dataclass(frozen=True)
class Set:
    values: tuple[tuple[str, str], ...]  # (argument, expression)


@dataclass(frozen=True)
class Call:
    target: str
    kind: Literal["agent", "tool", "subflow"]
    args: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Branch:
    cases: tuple[tuple[str, tuple["Step", ...]], ...]
    otherwise: tuple["Step", ...] | None = None


@dataclass(frozen=True)
class Label:
    name: str


@dataclass(frozen=True)
class Goto:
    label: str
    tries: int | None = None


@dataclass(frozen=True)
class Handoff:
    target: str
    resume: bool = False
    args: tuple[tuple[str, str], ...] = ()
    summary: str | None = None


@dataclass(frozen=True)
class Escalate:
    reason: str = ""
    message: str | None = None


@dataclass(frozen=True)
class Return:
    status: Literal["success", "error"] = "success"
    message: str = ""


Step = Union[Say, Listen, Set, Call, Branch, Label, Goto, Return, Handoff, Escalate]


def say(text: str) -> Say:
    return Say(text)


def listen() -> Listen:
    return Listen()


def set_(**values: str) -> Set:
    """`set_(size='"large"', count="count + 1")`: each value is an expression."""
    return Set(tuple(values.items()))


def call(target: str, kind: Literal["agent", "tool", "subflow"] = "agent", **args: str) -> Call:
    return Call(target, kind, tuple(args.items()))


def claims(*examples: str) -> str:
    """The condition text `the user claims "A", "B"`."""
    return "the user claims " + ", ".join('"' + e.replace('"', "'") + '"' for e in examples)


def branch(*cases: tuple[str, list[Step]], otherwise: list[Step] | None = None) -> Branch:
    """`branch((claims("Yes"), [...]), ("size > 2", [...]), otherwise=[...])`."""
    return Branch(tuple((cond, tuple(steps)) for cond, steps in cases),
                  tuple(otherwise) if otherwise is not None else None)


def label(name: str) -> Label:
    return Label(name)


def goto(name: str, tries: int | None = None) -> Goto:
    return Goto(name, tries)


def handoff(target: str, resume: bool = False, summary: str | None = None, **args: str) -> Handoff:
    """Hand the conversation to `target`; with `resume`, come back here when it ends (ABL RETURN: true)."""
    return Handoff(target, resume, tuple(args.items()), summary)


def escalate(reason: str = "", message: str | None = None) -> Escalate:
    return Escalate(reason, message)


def ret(status: Literal["success", "error"] = "success", message: str = "") -> Return:
    return Return(status, message)


# ---- graphs -----------------------------------------------------------------------------------


@dataclass
class _GraphBuilder:
    agent: str
    nodes: dict = field(default_factory=dict)
    labels: dict[str, str | None] = field(default_factory=dict)
    jumps: list[JumpNode] = field(default_factory=list)

    def new_id(self) -> str:
        return f"n{len(self.nodes) + 1}"

    def block(self, steps, cont: str | None) -> str | None:
        first = cont
        for step in reversed(list(steps)):
            first = self.step(step, first)
        return first

    def add(self, node):
        self.nodes[node.id] = node
        return node.id

    def step(self, step: Step, cont: str | None) -> str | None:
        nid = self.new_id()
        if isinstance(step, Say):
            return self.add(SayNode(id=nid, next=cont, text=parse_template(step.text, self.agent)))
        if isinstance(step, Listen):
            return self.add(ListenNode(id=nid, next=cont))
        if isinstance(step, Set):
            assignments = [Assignment(target=Ref(scope=self.agent, name=name),
                                      value=parse_expression(value, self.agent)) for name, value in step.values]
            return self.add(AssignNode(id=nid, next=cont, assignments=assignments))
        if isinstance(step, Call):
            args = [ArgValue(name=name, value=parse_expression(value, self.agent)) for name, value in step.args]
            return self.add(InvokeNode(id=nid, next=cont, target=step.target, target_kind=step.kind, args=args))
        if isinstance(step, Branch):
            self.nodes[nid] = None  # keep the id while the blocks inside are built
            cases = [BranchCase(condition=parse_condition(cond, self.agent), target=self.block(steps, cont) or "")
                     for cond, steps in step.cases]
            otherwise = self.block(step.otherwise, cont) if step.otherwise is not None else None
            self.nodes[nid] = BranchNode(id=nid, next=cont, cases=cases, otherwise=otherwise)
            return nid
        if isinstance(step, Label):
            self.labels[step.name] = cont
            return cont
        if isinstance(step, Goto):
            jump = JumpNode(id=nid, next=cont, target="", target_name=step.label, tries=step.tries)
            self.jumps.append(jump)
            return self.add(jump)
        if isinstance(step, Return):
            message = parse_template(step.message, self.agent) if step.message else None
            return self.add(ReturnNode(id=nid, next=None, status=step.status, message=message))
        if isinstance(step, Handoff):
            args = [ArgValue(name=name, value=parse_expression(value, self.agent)) for name, value in step.args]
            summary = parse_template(step.summary, self.agent) if step.summary is not None else None
            return self.add(HandoffNode(id=nid, next=cont if step.resume else None, target=step.target,
                                        resume=step.resume, args=args, summary=summary))
        if isinstance(step, Escalate):
            message = parse_template(step.message, self.agent) if step.message is not None else None
            return self.add(EscalateNode(id=nid, next=cont, reason=step.reason, message=message))
        raise TypeError(f"not a step: {step!r}")


def graph(agent: str, steps: list[Step], subflows: dict[str, list[Step]] | None = None) -> StepGraph:
    """The step graph of `steps` (and of named subflows, which `call(name, "subflow")` enters)."""
    builder = _GraphBuilder(agent)
    entry = builder.block(steps, None)
    entries = {name: builder.block(body, None) for name, body in (subflows or {}).items()}
    for jump in builder.jumps:
        target = builder.labels.get(jump.target_name)
        if target is None and jump.target_name in entries:
            target = entries[jump.target_name]
        if target is None:
            raise ValueError(f"{agent}: no label or subflow named {jump.target_name!r}")
        jump.target = target
    labels = {name: node for name, node in builder.labels.items() if node is not None}
    return StepGraph(entry=entry, nodes=builder.nodes, labels=labels, subflows=entries)


# ---- agents and programs ----------------------------------------------------------------------


def _args(names) -> list[ArgDef]:
    return [ArgDef(name=n) for n in names]


def _policy(value: str | None) -> Policy | None:
    if value is None:
        return None
    return Policy(kind="agent", value=value[1:]) if value.startswith("@") else Policy(kind="text", value=value)


def flow(name: str, steps: list[Step], *, description: str = "", args=(), subflows=None,
         fallback: str | None = None) -> FlowAgent:
    """A flow agent; `fallback` is a sentence, or `@agent` to hand the message to that agent."""
    return FlowAgent(name=name, description=description, args=_args(args), graph=graph(name, steps, subflows),
                     fallback=_policy(fallback))


def reasoning(name: str, instructions: str, *, description: str = "", args=(), tools=(),
              setup: list[Step] | None = None, delegates=(), handoffs=(), can_escalate: bool = False
              ) -> ReasoningAgent:
    """An LLM agent. `delegates`: agents it may call and get a result from, as `name` or
    `(name, [inputs])`; `handoffs`: agents it may hand the conversation to, as `name` (for good) or
    `(name, True)` (it comes back when that agent ends)."""
    return ReasoningAgent(
        name=name, description=description, args=_args(args), instructions=instructions, tools=list(tools),
        setup=graph(name, setup) if setup else None, can_escalate=can_escalate,
        delegates=[Delegation(agent=d, inputs=[]) if isinstance(d, str) else Delegation(agent=d[0], inputs=list(d[1]))
                   for d in delegates],
        handoffs=[IRHandoff(agent=h) if isinstance(h, str) else IRHandoff(agent=h[0], resume=bool(h[1]))
                  for h in handoffs])


def knowledge(name: str, *, description: str = "", faq=()) -> KnowledgeAgent:
    return KnowledgeAgent(name=name, description=description, faq=[FaqEntry(q=q, a=a) for q, a in faq])


def router(name: str, members: list[str], *, description: str = "", args=(), setup: list[Step] | None = None,
           bindings: dict[str, dict[str, str]] | None = None, fallback: str | None = None) -> RouterAgent:
    """A router over `members`; `bindings={"checkout": {"items": "item"}}` binds a member's argument
    to the router's (two-way, as ADL's `ref`)."""
    bound = bindings or {}
    return RouterAgent(
        name=name, description=description, args=_args(args), fallback=_policy(fallback),
        setup=graph(name, setup) if setup else None,
        members=[RouterMember(agent=m, bindings=[ArgBinding(member_arg=a, router_arg=r, two_way=True)
                                                 for a, r in bound.get(m, {}).items()]) for m in members])


def tool(name: str, *params: str, description: str = "", returns: dict | None = None,
         python: str | None = None, function: str | None = None, http: dict | HttpBinding | None = None,
         answers: list[dict] | None = None, convention: Literal["adl", "value"] | None = None) -> ToolDef:
    """A tool. Parameters are written `"code"` (a string), `"count: integer"`, `"note?: string"`
    (optional). What answers a call: `python="shop.py"` (its function `function`, by default named
    like the tool; read in ADL's convention unless `convention` says otherwise), `http={"url": ...,
    "method": "POST", ...}` (HttpBinding's fields), or else a stub with `answers` (StubAnswer's
    fields: `{"value": ...}`, `{"when": {...}, "value": ...}`, `{"error": "..."}`)."""
    binding: PythonBinding | HttpBinding | StubBinding
    if python is not None:
        binding = PythonBinding(module=python, function=function or name)
    elif http is not None:
        binding = http if isinstance(http, HttpBinding) else HttpBinding(**http)
    else:
        binding = StubBinding(answers=[StubAnswer(**a) for a in answers or []])
    return ToolDef(name=name, description=description, params=[_tool_param(p) for p in params],
                   returns=returns or {}, binding=binding,
                   convention=convention or ("adl" if python is not None else "value"))


def _tool_param(text: str) -> ToolParam:
    name, _, kind = text.partition(":")
    name = name.strip()
    return ToolParam(name=name.rstrip("?"), type=kind.strip() or "string", required=not name.endswith("?"))


def program(*agents, entry: str = "main", tools: list[ToolDef] | None = None, root: str = "",
            language: Literal["adl", "abl"] = "adl") -> Program:
    """A program of `agents`, with what each `user` step reads its answer for filled in."""
    built = Program(language=language, entry=entry, agents={a.name: a for a in agents},
                    tools={t.name: t for t in tools or []})
    built.root = root
    if language == "adl":  # conditions and messages are written as in ADL: so are its conventions
        apply_adl_conventions(built)
    annotate_listens(built)
    return built
