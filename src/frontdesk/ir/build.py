"""Building IR programs in Python, without any source language: for runtime tests that must hold for
every front end, and for front ends that lower to the same shapes.

    from frontdesk.ir import build as b

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

from frontdesk.expr import parse_condition, parse_expression, parse_template
from frontdesk.ir.models import (
    ArgBinding,
    ArgDef,
    ArgValue,
    AssignNode,
    Assignment,
    BranchCase,
    BranchNode,
    FaqEntry,
    FlowAgent,
    InvokeNode,
    JumpNode,
    KnowledgeAgent,
    ListenNode,
    Policy,
    Program,
    ReasoningAgent,
    Ref,
    ReturnNode,
    RouterAgent,
    RouterMember,
    SayNode,
    StepGraph,
    ToolDef,
)

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
class Return:
    status: Literal["success", "error"] = "success"
    message: str = ""


Step = Union[Say, Listen, Set, Call, Branch, Label, Goto, Return]


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
            return self.add(ReturnNode(id=nid, next=None, status=step.status, message=step.message))
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
              setup: list[Step] | None = None) -> ReasoningAgent:
    return ReasoningAgent(name=name, description=description, args=_args(args), instructions=instructions,
                          tools=list(tools), setup=graph(name, setup) if setup else None)


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


def program(*agents, entry: str = "main", tools: list[ToolDef] | None = None, root: str = "",
            language: Literal["adl", "abl"] = "adl") -> Program:
    """A program of `agents`, with what each `user` step reads its answer for filled in."""
    from frontdesk.analysis.listen import annotate_listens

    built = Program(language=language, entry=entry, agents={a.name: a for a in agents},
                    tools={t.name: t for t in tools or []})
    built.root = root
    annotate_listens(built)
    return built
