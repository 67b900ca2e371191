"""ABL FLOW sections lowered to the shared step graph.

Each step becomes a chain of nodes whose first node's id is the step's name, so THEN, GOTO and the
step sequence (`a -> b -> c`, `steps:`) are jumps to step names. Within a step the order is: SET,
CLEAR, TRANSFORM, CALL (with ON_SUCCESS / ON_FAIL / ON_RESULT), PRESENT, GATHER / COLLECT (ask
for each missing field, listen, check again), RESPOND, ON_INPUT (listen, then the first IF that
holds), DELEGATE / HANDOFF / ESCALATE, then THEN (the next step in the sequence when absent,
COMPLETE at the end). A step with REASONING: true runs a reasoning agent made for it (its
INSTRUCTIONS, the agent's tools and fields), which the flow calls. DIGRESSIONS, global_digressions
and SUB_INTENTS become natural-language branches after each listen of their step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from frontdesk.ir.behaviour import AgentRules, GatherField
from frontdesk.ir.expr import (
    Call,
    ClaimsCondition,
    Condition,
    Each,
    Expr,
    ExprCondition,
    IsSet,
    Lit,
    Local,
    ObjEntry,
    ObjLit,
    Ref,
    memory_ref,
)
from frontdesk.ir.models import (
    ArgValue,
    Assignment,
    AssignNode,
    BranchCase,
    BranchNode,
    Delegation,
    EscalateNode,
    Handoff,
    HandoffNode,
    InvokeNode,
    JumpNode,
    ListenNode,
    ReasoningAgent,
    ReturnNode,
    SayNode,
    StepGraph,
)

from . import codes
from .context import SESSION, SectionContext
from .keywords import STEP_KEYS
from .lineparts import split_list
from .outline import Node

COMPLETE = "COMPLETE"
COMPLETE_NODE = "__complete"
# step keys with no node of their own yet: their values are kept in the agent's rules.metadata["steps"]
_KEPT_AS_DATA = ("STRATEGY", "CORRECTIONS", "VOICE", "ACTIONS", "DESCRIPTION", "TOOLS", "TEMPLATE", "RICH_CONTENT",
                 "BUTTONS", "INSTRUCTIONS", "REASONING")
_CALL = re.compile(r"^\s*(?P<name>[A-Za-z_]\w*)\s*(\((?P<args>.*)\))?\s*$", re.DOTALL)
_TRANSFORM = re.compile(r"^\s*(?P<src>.+?)\s+AS\s+(?P<var>[A-Za-z_]\w*)\s+INTO\s+(?P<dst>[A-Za-z_]\w*)\s*$",
                        re.IGNORECASE)
_ASSIGN = re.compile(r"^\s*(?P<name>[A-Za-z_][\w.]*)\s*=(?!=)\s*(?P<value>.+)$", re.DOTALL)


@dataclass
class _FlowBuilder:
    ctx: SectionContext
    rules: AgentRules
    instructions: str
    tools: list[str]
    delegates: list[Delegation]
    handoffs: list[Handoff]
    nodes: dict = field(default_factory=dict)
    steps: dict[str, Node] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    extra_agents: list = field(default_factory=list)
    digressions: list[Node] = field(default_factory=list)
    params: dict[str, list[str]] = field(default_factory=dict)  # tool -> its parameter names, in order
    reported: set = field(default_factory=set)  # unknown step names already reported (name, line, column)
    corrects: list[str] = field(default_factory=list)  # fields of steps with CORRECTIONS: true
    exits: dict[str, str] = field(default_factory=dict)  # step -> where it goes on after it
    counter: int = 0

    def new_id(self, step: str, what: str) -> str:
        self.counter += 1
        return f"{step}.{what}{self.counter}"

    def add(self, node):
        self.nodes[node.id] = node
        return node.id

    # -- targets ----------------------------------------------------------------------------------

    def target(self, name: str, node: Node) -> str | None:
        name = name.strip()
        if name.upper() == COMPLETE:
            return COMPLETE_NODE
        if name in self.steps:
            return name
        from frontdesk.diagnostics import did_you_mean

        guess = did_you_mean(name, list(self.steps))
        where = node.value_span() if isinstance(node, Node) and node.key else node
        key = (name, getattr(where, "line", 0), getattr(where, "column", 0))
        if key not in self.reported:
            self.reported.add(key)
            self.ctx.error(codes.UNKNOWN_STEP, f"no step named {name}", where,
                           f"did you mean {guess}?" if guess else f"the steps are: {', '.join(self.steps)}")
        return None


def compile_flow(section: Node, ctx: SectionContext, rules: AgentRules, instructions: str, tools: list[str],
                 delegates: list[Delegation], handoffs: list[Handoff], params: dict[str, list[str]] | None = None):
    """The StepGraph of a FLOW section, and the reasoning agents its REASONING steps run."""
    b = _FlowBuilder(ctx, rules, instructions, tools, delegates, handoffs, params=dict(params or {}))
    sequences: list[Node] = []
    for child in section.children:
        if child.key is None and child.value and "->" in child.value:
            sequences.append(child)
        elif child.key is not None and child.key.lower() in ("steps", "sequence"):
            sequences.append(child)
        elif child.key is not None and child.key.lower() == "global_digressions":
            b.digressions += child.items()
        elif child.key is not None:
            if child.key in b.steps:
                ctx.error(codes.DUPLICATE_NAME, f"step {child.key} is defined twice", child)
                continue
            b.steps[child.key] = child
        else:
            ctx.error(codes.SYNTAX, f"'{child.value}' is not a step", child,
                      "write a step as name: with its keys, or a sequence as a -> b -> c")
    order: list[str] = []
    for seq in sequences:
        for name, where in _sequence_names(seq, ctx):
            if name and name not in order:
                if name not in b.steps and name.upper() != COMPLETE:
                    b.target(name, where)
                    continue
                if name.upper() != COMPLETE:
                    order.append(name)
    for item in b.digressions:  # a global digression's GOTO must name a step
        goto = Node(key=None, value=None, span=item.span, children=item.children).get("GOTO")
        if goto is not None:
            b.target(goto.text, goto)
    b.order = order + [s for s in b.steps if s not in order]
    if not b.order:
        ctx.error(codes.MISSING_KEY, "FLOW has no step", section, "write at least one step: name: with RESPOND:, ...")
        return StepGraph(entry=None), []
    b.add(ReturnNode(id=COMPLETE_NODE, status="success"))
    for index, name in enumerate(b.order):
        after = b.order[index + 1] if index + 1 < len(b.order) else COMPLETE_NODE
        _compile_step(b, name, b.steps[name], after)
    if b.corrects:  # a gathered value may be corrected at any later question of the flow
        for n in b.nodes.values():
            if isinstance(n, ListenNode):
                n.corrects = list(b.corrects)
    _said_errors_are_messages(b)
    graph = StepGraph(entry=b.order[0], nodes=b.nodes, labels={name: name for name in b.order},
                      complete=COMPLETE_NODE)
    from .sections.gather import profile_fields

    profile_fields(rules, ctx)  # GATHER_OVERRIDES, now that every field of the flow is known
    graph.exits = _skippable(b, section)
    return graph, b.extra_agents


def _skippable(b: _FlowBuilder, section: Node) -> dict[str, str]:
    """FLOW_MODIFICATIONS skip of the agent's behaviour profiles: where each step they may skip goes on."""
    out: dict[str, str] = {}
    for profile in b.rules.profiles:
        mods = {str(k).lower(): v for k, v in (profile.flow_modifications or {}).items()}
        skip = mods.get("skip") or []
        for name in skip if isinstance(skip, list) else [skip]:
            name = str(name).strip()
            if name in b.exits:
                out[name] = b.exits[name]
            else:
                b.ctx.warning(codes.IGNORED, f"profile {profile.name} skips {name}, which is not a step of "
                              f"{b.ctx.agent}'s FLOW; it is ignored", section)
        for key in ("override", "insert_before"):
            if mods.get(key):
                b.ctx.warning(codes.IGNORED, f"FLOW_MODIFICATIONS {key} of profile {profile.name} is not "
                              "supported yet and has no effect", section)
    return out


def _profile_required(rules: AgentRules) -> set[str]:
    """Fields a behaviour profile makes required (GATHER_OVERRIDES field_overrides: required: true)."""
    out: set[str] = set()
    for profile in rules.profiles:
        fields = {str(k).lower(): v for k, v in (profile.gather_overrides or {}).items()}.get("field_overrides")
        for name, data in fields.items() if isinstance(fields, dict) else []:
            if isinstance(data, dict) and any(str(k).lower() == "required" and v is True for k, v in data.items()):
                out.add(str(name))
    return out


_TEMPLATE_REF = re.compile(r"^\s*TEMPLATE\(\s*([A-Za-z_]\w*)\s*\)\s*$")


def _say(b: _FlowBuilder, step: str, what: str, node: Node) -> SayNode:
    """A RESPOND or PRESENT: its text, or a named template with its channel variants (TEMPLATE(x))."""
    ctx = b.ctx
    ref = _TEMPLATE_REF.match(node.text) if not node.quoted else None
    actions = _action_elements(node, ctx)
    if ref is None:
        return SayNode(id=b.new_id(step, what), text=ctx.template(node.text, node), actions=actions)
    definition = b.rules.templates.get(ref.group(1))
    if definition is None:
        from frontdesk.diagnostics import did_you_mean

        guess = did_you_mean(ref.group(1), list(b.rules.templates))
        ctx.error(codes.BAD_VALUE, f"no template named {ref.group(1)}", node.value_span(),
                  f"did you mean {guess}?" if guess else "define it under TEMPLATES:")
        return SayNode(id=b.new_id(step, what), text=ctx.template(node.text, node), actions=actions)
    return SayNode(id=b.new_id(step, what), text=definition.default, variants=dict(definition.channels),
                   actions=actions)


def _action_elements(respond: Node, ctx: SectionContext) -> list:
    """RESPOND's ACTIONS: the buttons, choices and inputs shown with the message."""
    actions = respond.get("ACTIONS")
    if actions is None:
        return []
    from .sections.execution import parse_action_elements

    return parse_action_elements(actions, ctx)


def _sequence_names(seq: Node, ctx: SectionContext):
    """(name, where) of each step a sequence names: `a -> b -> c`, or `steps:` as a list."""
    from frontdesk.diagnostics import Span

    if seq.key is None:
        at = seq.value_span()
        offset = 0
        for part in (seq.value or "").split("->"):
            lead = len(part) - len(part.lstrip())
            yield part.strip(), Span(file=at.file, line=at.line, column=at.column + offset + lead)
            offset += len(part) + 2
        return
    if seq.value:
        for name in ctx.names_list(seq):
            yield name, seq.value_span()
    for item in seq.items():
        for child in item.children:
            if child.key is None and child.value:
                yield child.value.strip(), child.value_span()


def _compile_step(b: _FlowBuilder, name: str, node: Node, after: str) -> None:
    ctx = b.ctx
    props: dict[str, Node] = {}
    for child in node.children:
        if child.key is None:
            ctx.error(codes.SYNTAX, f"'{child.value}' is not a step property", child,
                      f"a step takes keys such as {', '.join(STEP_KEYS[:6])}")
            continue
        key = child.key.upper()
        if key not in STEP_KEYS:
            ctx.unknown_key(child, list(STEP_KEYS), f"step {name}")
            continue
        if ctx.fmt == "abl" and child.key != key:
            ctx.error(codes.KEYWORD_CASE, f"'{child.key}' must be written in capitals in an .abl file", child,
                      f"write {key}:")
        props[key] = child
    if "ACTIONS" in props:  # 3.13.5: ACTIONS belong to the RESPOND they are shown with
        ctx.warning(codes.IGNORED, "ACTIONS beside RESPOND show nothing: buttons belong to the message they "
                    "are shown with", props["ACTIONS"], "indent ACTIONS: under the step's RESPOND:")
    kept = {k.lower(): ctx.data(v) for k, v in props.items() if k in _KEPT_AS_DATA}
    if kept:  # what the runtime of ABL steps will read (issue 10): kept as written
        b.rules.metadata.setdefault("steps", {})[name] = kept
    exit_node = props.get("THEN") or props.get("GOTO")
    exit_id = after if exit_node is None else (b.target(exit_node.text, exit_node) or after)
    b.exits[name] = exit_id
    chain: list = []  # nodes of the step in order; the last one's next is exit_id

    def link(nodes: list) -> None:
        chain.extend(nodes)

    # the step's actions in the order they are written (a SET after a CALL reads its result)
    tool = None
    gathered = False
    for key in props:
        node_ = props[key]
        if key == "SET":
            link(_set(b, node_, name))
        elif key == "CLEAR":
            link(_clear(b, node_, name))
        elif key == "TRANSFORM":
            link(_transform(b, node_, name))
        elif key == "CALL":
            tool = _call_name(node_)
            link(_call(b, node_, props, name))
        elif key == "REASONING" and ctx.boolean(node_):
            link([_reasoning_step(b, name, props)])
        elif key == "PRESENT":
            link([_say(b, name, "present", node_)])
        elif key in ("GATHER", "COLLECT") and not gathered:
            gathered = True
            fields = _step_fields(b, props, name)
            if fields:
                on_invalid = None
                if "ON_FAIL" in props and "CALL" not in props:  # the step's ON_FAIL: validation gave up
                    on_invalid = _block(b, name, props["ON_FAIL"], exit_id)
                if ctx.boolean(props.get("CORRECTIONS")):
                    b.corrects += [f.name for f in fields if f.name not in b.corrects]
                link(_gather(b, name, fields, props, on_invalid))
        elif key == "RESPOND":
            link([_say(b, name, "respond", node_)])
        elif key == "DELEGATE":  # a delegate returns: what is written after it reads its result
            link(_transfer(b, name, key, node_))
    # a step that gathers listens at its questions (with its digressions); another one listens here
    if "ON_INPUT" in props or (("SUB_INTENTS" in props or "DIGRESSIONS" in props) and not gathered):
        link(_on_input(b, name, props))
    for key in ("HANDOFF", "ESCALATE"):
        if key in props:
            link(_transfer(b, name, key, props[key]))
    chain.insert(0, _noop(name))  # the step's entry carries its name
    for i, n in enumerate(chain):
        ends = isinstance(n, ReturnNode) or (isinstance(n, HandoffNode) and not n.resume)
        if n.next is None and not ends:
            n.next = chain[i + 1].id if i + 1 < len(chain) else exit_id
    for n in chain:
        b.add(n)
    if tool is not None:
        _bind_result_refs(chain, tool, b)


_TYPE_HINTS = {"date": " (a date, e.g. 2026-12-01)", "datetime": " (a date and time)", "number": " (a number)",
               "integer": " (a whole number)", "boolean": " (yes or no)", "email": " (an e-mail address)",
               "phone": " (a phone number)", "currency": " (an amount)"}


def unprompted_question(field: GatherField) -> str:
    """The question for a GATHER field that has no PROMPT: from its DESCRIPTION, else its name, with what
    kind of answer it takes ("Please tell me the read on (a date, e.g. 2026-12-01)."), never a guessed
    "What is your ...?" that may not be English."""
    about = str(field.extra.get("description") or "").strip().rstrip(".?")
    what = about[0].lower() + about[1:] if about else f"the {field.name.replace('_', ' ')}"
    if field.options:
        listed = ", ".join(field.options[:-1]) + f" or {field.options[-1]}" if len(field.options) > 1 else field.options[0]
        return f"Please tell me {what}: {listed}."
    return f"Please tell me {what}{_TYPE_HINTS.get(field.type, '')}."


def _said_errors_are_messages(b: _FlowBuilder) -> None:
    """`{{result.error}}` (or `{{<tool>.error}}`) in a RESPOND says why the call failed (3.14.6:
    "Sorry, the booking failed: {{result.error}}"): the failure's message, empty after a success.
    In conditions `.error` stays the yes/no of a failed call."""
    from frontdesk.ir.walk import refs_in

    for n in b.nodes.values():
        if isinstance(n, SayNode):
            for ref in refs_in([n.text, *n.variants.values()]):
                if ref.space == "result" and ref.name == "error":
                    ref.name = "message"


def _bind_result_refs(chain: list, tool: str, b: _FlowBuilder) -> None:
    """`result.x` in a step with a CALL reads what that call returned."""
    from frontdesk.ir.walk import refs_in

    for n in [*chain, *b.nodes.values()]:
        for ref in refs_in(n):
            if ref.space == "result" and ref.scope == "result":
                ref.scope = tool


# ---- the pieces of a step ----------------------------------------------------------------------------


def _set(b: _FlowBuilder, node: Node, step: str) -> list:
    lines = [(node.text, node)] if node.value else []
    lines += [(c.value or "", c) for c in node.children if c.key is None]
    lines += [(f"{c.key} = {c.text}", c) for c in node.children if c.key is not None]
    assignments = []
    for text, where in lines:
        match = _ASSIGN.match(text)
        if not match:
            b.ctx.error(codes.BAD_EXPRESSION, f"a SET line is name = value, not '{text}'", where,
                        "for example SET: total = price * nights")
            continue
        target = match.group("name")
        _check_name(b, target, where)
        b.ctx.fields.add(target)
        value = b.ctx.expression(match.group("value"), where, offset=match.start("value"))
        assignments.append(Assignment(target=_target_ref(target), value=value))
    return [AssignNode(id=b.new_id(step, "set"), assignments=assignments)] if assignments else []


def _target_ref(name: str) -> Ref:
    """Where a SET writes: persistent memory for a path (`user.preferences`), else a session variable."""
    return memory_ref(name) or Ref(scope=SESSION, name=name)


def _check_name(b: _FlowBuilder, name: str, node: Node) -> None:
    from .sections.gather import check_variable_name

    check_variable_name(name, node, b.ctx)


def _clear(b: _FlowBuilder, node: Node, step: str) -> list:
    names = b.ctx.names_list(node)
    return [AssignNode(id=b.new_id(step, "clear"),
                       assignments=[Assignment(target=Ref(scope=SESSION, name=n), value=Lit(value=None))
                                    for n in names])] if names else []


def _transform(b: _FlowBuilder, node: Node, step: str) -> list:
    ctx = b.ctx
    match = _TRANSFORM.match(node.text)
    if not match:
        ctx.error(codes.BAD_EXPRESSION, "TRANSFORM is written source AS item INTO target", node,
                  "for example TRANSFORM: result.items AS item INTO cheap_items")
        return []
    var = match.group("var")
    expr: Expr = ctx.expression(match.group("src"), node, offset=match.start("src"))
    filter_node = node.get("FILTER")
    if filter_node is not None:
        expr = Each(kind="filter", source=expr, var=var, body=_local_expr(ctx, filter_node.text, filter_node, var))
    map_node = node.get("MAP")
    if map_node is not None:
        entries = [ObjEntry(key=c.key, value=_local_expr(ctx, c.text, c, var)) for c in map_node.entries()]
        expr = Each(kind="map", source=expr, var=var, body=ObjLit(entries=entries))
    sort_node = node.get("SORT_BY")
    if sort_node is not None:
        words = sort_node.text.split()
        descending = len(words) > 1 and words[-1].upper() == "DESC"
        key = words[0] if words else ""
        body = _local_expr(ctx, key if "." in key or map_node is None else f"{var}.{key}", sort_node, var)
        expr = Each(kind="sort_by", source=expr, var=var, body=body, descending=descending)
    limit_node = node.get("LIMIT")
    if limit_node is not None:
        expr = Call(fn="LIMIT", args=[expr, ctx.expression(limit_node.text, limit_node)])
    target = match.group("dst")
    ctx.fields.add(target)
    return [AssignNode(id=b.new_id(step, "transform"),
                       assignments=[Assignment(target=Ref(scope=SESSION, name=target), value=expr)])]


def _local_expr(ctx: SectionContext, text: str, node: Node, var: str) -> Expr:
    from frontdesk.expr import ExprSyntaxError, parse_expression

    try:
        return parse_expression(text, ctx.agent, **ctx._dialect(), locals=[var])
    except ExprSyntaxError as exc:
        ctx._bad_expression(exc, node, 0)
        return Local(name=var)


def _call_name(node: Node) -> str | None:
    match = _CALL.match(node.text)
    return match.group("name") if match else None


def _call(b: _FlowBuilder, node: Node, props: dict[str, Node], step: str) -> list:
    ctx = b.ctx
    match = _CALL.match(node.text)
    if not match:
        ctx.error(codes.BAD_EXPRESSION, f"CALL names a tool, as tool(arg, ...) or tool with WITH:, not '{node.text}'",
                  node)
        return []
    tool = match.group("name")
    if tool not in b.tools and tool not in ctx.names.tools:
        from frontdesk.diagnostics import did_you_mean

        guess = did_you_mean(tool, b.tools)
        ctx.error(codes.UNKNOWN_TOOL, f"CALL of {tool}, which the agent does not declare", node.value_span(),
                  f"did you mean {guess}?" if guess else "declare it under TOOLS: with its signature")
    params = _tool_params(b, tool)
    args: list[ArgValue] = []
    raw = (match.group("args") or "").strip()
    if raw:
        for index, part in enumerate(split_list(raw)):
            name, value = (part.split("=", 1) if re.match(r"^\s*[A-Za-z_]\w*\s*=(?!=)", part) else (None, part))
            pname = name.strip() if name else (params[index] if index < len(params) else f"arg{index + 1}")
            args.append(ArgValue(name=pname, value=ctx.expression(value.strip(), node)))
    with_node = node.get("WITH") or props.get("WITH") or node.get("CALL_WITH") or props.get("CALL_WITH")
    for entry in with_node.entries() if with_node is not None else []:
        args.append(ArgValue(name=entry.key, value=ctx.value(entry)))
    as_node = node.get("AS") or props.get("AS")
    bind = None
    if as_node is not None and as_node.text:
        bind = Ref(scope=SESSION, name=as_node.text)
        ctx.fields.add(as_node.text)
    invoke = InvokeNode(id=b.new_id(step, "call"), target=tool, target_kind="tool", args=args, result=tool, bind=bind,
                        span=node.span)
    out: list = [invoke]
    success, fail, on_result = props.get("ON_SUCCESS"), props.get("ON_FAIL"), props.get("ON_RESULT")
    # an ON_FAIL that answers the user itself is the nearer handler: the agent's ON_ERROR only retries;
    # one that only moves the flow (THEN: COMPLETE) leaves the words to ON_ERROR
    invoke.handles_failure = fail is not None and any((c.key or "").upper() in ("RESPOND", "ESCALATE", "HANDOFF")
                                                      for c in fail.children)
    if success is not None or fail is not None:
        cases = []
        otherwise = None
        join = b.new_id(step, "join")
        if success is not None:
            cases.append(BranchCase(condition=ExprCondition(source=f"{tool}.success",
                                                            expr=Ref(space="result", scope=tool, name="success")),
                                    target=_block(b, step, success, join)))
        elif fail is not None:  # ON_FAIL alone: a call that succeeded goes on past it
            cases.append(BranchCase(condition=ExprCondition(source=f"{tool}.success",
                                                            expr=Ref(space="result", scope=tool, name="success")),
                                    target=join))
        if fail is not None:
            otherwise = _block(b, step, fail, join)
        branch = BranchNode(id=b.new_id(step, "result"), cases=cases, otherwise=otherwise)
        out += [branch, _noop(join)]
    if on_result is not None:
        out += _branches(b, step, on_result)
    return out


def _tool_params(b: _FlowBuilder, tool: str) -> list[str]:
    return b.params.get(tool, [])


def _noop(node_id: str) -> AssignNode:
    """A node that does nothing and goes on: a step's entry, or where branches join again."""
    return AssignNode(id=node_id, assignments=[])


def _block(b: _FlowBuilder, step: str, node: Node, join: str) -> str:
    """The nodes of an ON_SUCCESS / ON_FAIL / branch block; returns its first node's id."""
    nodes = _actions(b, step, node)
    then = node.get("THEN") or node.get("GOTO")
    exit_id = b.target(then.text, then) if then is not None else join
    exit_id = exit_id or join
    if not nodes:
        return exit_id
    for i, n in enumerate(nodes):
        if n.next is None and not isinstance(n, ReturnNode):
            n.next = nodes[i + 1].id if i + 1 < len(nodes) else exit_id
        b.add(n)
    return nodes[0].id


def _actions(b: _FlowBuilder, step: str, node: Node) -> list:
    ctx = b.ctx
    out: list = []
    for child in node.children:
        key = (child.key or "").upper()
        if key == "SET":
            out += _set(b, child, step)
        elif key == "CLEAR":
            out += _clear(b, child, step)
        elif key == "CALL":
            out += _call(b, child, {}, step)
        elif key == "RESPOND":
            out.append(_say(b, step, "say", child))  # its text, or TEMPLATE(name)
        elif key in ("DELEGATE", "HANDOFF", "ESCALATE"):
            out += _transfer(b, step, key, child)
    return out


def _branches(b: _FlowBuilder, step: str, node: Node) -> list:
    """ON_INPUT / ON_RESULT items: the first IF that holds runs its block; ELSE when none does."""
    join = b.new_id(step, "join")
    cases: list[BranchCase] = []
    otherwise = None
    for item in node.items():
        head = item.children[0] if item.children else None
        body = Node(key=None, value=None, span=item.span, children=item.children[1:])
        if head is not None and head.key is not None and head.key.upper() == "IF":
            condition = b.ctx.condition(head.text, head)
            cases.append(BranchCase(condition=condition, target=_block(b, step, body, join), span=head.span))
        elif head is not None and ((head.key or "").upper() == "ELSE" or (head.value or "").upper() == "ELSE"):
            body.children = ([c for c in head.children] if head.children else []) + body.children
            otherwise = _block(b, step, body, join)
        else:
            b.ctx.error(codes.MISSING_KEY, "a branch starts with IF: condition or ELSE:", item,
                        "write - IF: input == \"yes\" ... or - ELSE: ...")
    branch = BranchNode(id=b.new_id(step, "branch"), cases=cases, otherwise=otherwise)
    return [branch, _noop(join)]


def _on_input(b: _FlowBuilder, step: str, props: dict[str, Node]) -> list:
    out: list = []
    listen = ListenNode(id=b.new_id(step, "listen"))
    out.append(listen)
    out += _digressions(b, step, props, listen)
    if "ON_INPUT" in props:
        out += _branches(b, step, props["ON_INPUT"])
    return out


def _digressions(b: _FlowBuilder, step: str, props: dict[str, Node], listen: ListenNode) -> list:
    sub = props["SUB_INTENTS"].items() if "SUB_INTENTS" in props else []
    items = [*sub, *(props["DIGRESSIONS"].items() if "DIGRESSIONS" in props else []), *b.digressions]
    if not items:
        return []
    join = b.new_id(step, "join")
    cases: list[BranchCase] = []
    for index, item in enumerate(items):
        holder = Node(key=None, value=None, span=item.span, children=item.children)
        intent = holder.get("INTENT")
        if intent is None or not intent.text:
            b.ctx.error(codes.MISSING_KEY, "a digression needs INTENT:", item, 'write - INTENT: "help"')
            continue
        examples = [intent.text.replace("_", " ")]
        condition: Condition = ClaimsCondition(source=f'the user claims "{intent.text}"', examples=examples)
        nodes = _actions(b, step, holder)
        goto = holder.get("GOTO")
        # RESUME: back to the step (re-asking its question) afterwards; the default is true for a
        # SUB_INTENT (it does not leave the step) and false for a digression, which then ends the flow
        resume = b.ctx.boolean(holder.get("RESUME"), default=index < len(sub))
        exit_id = b.target(goto.text, goto) if goto is not None else (step if resume else COMPLETE_NODE)
        exit_id = exit_id or join
        for i, n in enumerate(nodes):
            if n.next is None and not isinstance(n, ReturnNode):
                n.next = nodes[i + 1].id if i + 1 < len(nodes) else exit_id
            b.add(n)
        target = nodes[0].id if nodes else exit_id
        extra = holder.get("CONDITION")
        if extra is not None and extra.text:  # the intent, and this condition besides
            gate = BranchNode(id=b.new_id(step, "condition"), cases=[BranchCase(
                condition=b.ctx.condition(extra.text, extra), target=target)], otherwise=join)
            b.add(gate)
            target = gate.id
        cases.append(BranchCase(condition=condition, target=target, span=item.span))
    branch = BranchNode(id=b.new_id(step, "digress"), cases=cases, otherwise=join)
    listen.classifies = branch.id
    return [branch, _noop(join)]


def _step_fields(b: _FlowBuilder, props: dict[str, Node], step: str) -> list[GatherField]:
    fields: list[GatherField] = []
    gather = props.get("GATHER")
    if gather is not None:
        from .sections.gather import gather_fields

        fields = gather_fields(gather, b.ctx)
    collect = props.get("COLLECT")
    if collect is not None:
        prompt = b.ctx.text(props.get("PROMPT"))
        fields += [GatherField(name=n, prompt=prompt) for n in b.ctx.names_list(collect)]
    declared = {f.name: f for f in b.rules.gather}
    out: list[GatherField] = []
    for f in fields:
        b.ctx.fields.add(f.name)
        if f.name in declared:
            # the agent's GATHER says how to ask for it; the step may only make it optional or re-word it
            base = declared[f.name]
            f = base.model_copy(update={"prompt": f.prompt or base.prompt, "required": f.required and base.required})
        else:
            b.rules.gather.append(f)
            declared[f.name] = f
        out.append(f)
    return out


def _gather(b: _FlowBuilder, step: str, fields: list[GatherField], props: dict[str, Node],
            on_invalid: str | None = None) -> list:
    """For each field to ask for that is not settled: ask for it, listen (any of the step's fields may be
    given), and check all of them again; then fill defaults and go on. A field is settled when it is
    set, or when it is not active: `progressive` until its depends_on fields are given (and not false),
    `when` while its condition does not hold; `optional` fields are never asked for. COMPLETE_WHEN,
    when given, ends the step as soon as it holds, whatever is still missing."""
    ctx = b.ctx
    gather = props.get("GATHER")
    prompt_node = props.get("PROMPT") or (gather.get("PROMPT") if gather is not None else None)
    strategy = (gather.get("STRATEGY") if gather is not None else None) or props.get("STRATEGY")
    strategy_name = ctx.choice(strategy, ("llm", "pattern", "hybrid"), default="llm") if strategy is not None else "llm"
    step_prompt = ctx.text(prompt_node)
    names = [f.name for f in fields]
    by_profile = _profile_required(b.rules)  # optional here, required while a profile says so
    required = [f for f in fields if f.required]
    asked = [f for f in fields if f.required or f.name in by_profile] if required else fields
    gathered = _noop(b.new_id(step, "gathered"))
    complete_when = props.get("COMPLETE_WHEN")
    done = ctx.condition(complete_when.text, complete_when) if complete_when is not None else None
    out: list = []
    if done is not None:
        out.append(BranchNode(id=b.new_id(step, "complete_when"), cases=[BranchCase(condition=done,
                                                                                    target=gathered.id)]))
    agains: list[JumpNode] = []

    def question(text: str, where, field: str) -> tuple[SayNode, ListenNode, JumpNode]:
        ask = SayNode(id=b.new_id(step, text), text=ctx.template(where[0], where[1]), asks=field)
        listen = ListenNode(id=b.new_id(step, "listen"), extracts=names, strategy=strategy_name,
                            on_invalid=on_invalid, step=step)
        again = JumpNode(id=b.new_id(step, "again"), target="", target_name=step)
        ask.next, listen.next = listen.id, again.id
        escapes = _digressions(b, step, props, listen)
        if escapes:  # the user may turn away while asked for a field
            branch, join = escapes
            listen.next, join.next = branch.id, again.id
            b.add(branch)
            b.add(join)
        for n in (ask, listen, again):
            b.add(n)
        agains.append(again)
        return ask, listen, again

    for f in asked:
        ask, _, _ = question(f"ask_{f.name}_", (f.prompt or step_prompt or unprompted_question(f), prompt_node), f.name)
        condition = ExprCondition(source=_settled_source(f), expr=_settled(f))
        if required and not f.required:  # asked only while a profile requires it (the runtime checks)
            condition = ExprCondition(source=f"{f.name} is optional unless a profile requires it", expr=Lit(value=True))
        out.append(BranchNode(id=b.new_id(step, f"has_{f.name}_"), cases=[BranchCase(condition=condition, target="")],
                              otherwise=ask.id, settles=f.name))
    if done is not None:
        ask, _, _ = question("ask_more_", (step_prompt or "Is there anything else you can tell me?", prompt_node), "")
        out.append(BranchNode(id=b.new_id(step, "complete_when"), cases=[BranchCase(condition=done, target="")],
                              otherwise=ask.id))
    for again in agains:  # after an answer, everything is checked again (a correction may undo a field)
        again.target = out[0].id
    defaults = [Assignment(target=Ref(scope=SESSION, name=f.name),
                           value=Call(fn="COALESCE", args=[Ref(scope=SESSION, name=f.name), Lit(value=f.default)]))
                for f in fields if f.default is not None]
    if defaults:
        out.append(AssignNode(id=b.new_id(step, "defaults"), assignments=defaults))
        if done is not None:  # COMPLETE_WHEN holding early still fills the defaults
            out[0].cases[0].target = out[-1].id
    out.append(gathered)
    for i, n in enumerate(out[:-1]):  # a check that holds goes on to the next node
        if isinstance(n, BranchNode) and n.cases[0].target == "":
            n.cases[0].target = out[i + 1].id
    return out


def _settled(f: GatherField) -> Expr:
    """`f IS SET`, or the field is not active (progressive without its depends_on, `when` not holding)."""
    from frontdesk.ir.expr import BoolOp, Compare, Not

    has = IsSet(item=Ref(scope=SESSION, name=f.name))
    if f.activation == "progressive" and f.depends_on:
        ready = BoolOp(op="and", items=[
            BoolOp(op="and", items=[IsSet(item=Ref(scope=SESSION, name=d)),
                                    Compare(cmp="!=", left=Ref(scope=SESSION, name=d), right=Lit(value=False))])
            for d in f.depends_on])
        return BoolOp(op="or", items=[has, Not(item=ready)])
    if f.activation == "when" and isinstance(f.when, ExprCondition):
        return BoolOp(op="or", items=[has, Not(item=f.when.expr)])
    return has


def _settled_source(f: GatherField) -> str:
    if f.activation == "progressive" and f.depends_on:
        return f"{f.name} IS SET OR NOT ({' AND '.join(f.depends_on)} given)"
    if f.activation == "when" and isinstance(f.when, ExprCondition):
        return f"{f.name} IS SET OR NOT ({f.when.source})"
    return f"{f.name} IS SET"


def _reasoning_step(b: _FlowBuilder, step: str, props: dict[str, Node]) -> InvokeNode:
    ctx = b.ctx
    name = f"{ctx.agent}__{step}"
    extra = ctx.text(props.get("INSTRUCTIONS")) or ctx.text(props.get("GOAL"))
    instructions = "\n\n".join(x for x in (b.instructions, f"This step ({step}): {extra}" if extra else "") if x)
    from frontdesk.ir.models import ArgDef

    args = [ArgDef(name=f.name, description=f.prompt, type=f.type, bound_to=Ref(scope=SESSION, name=f.name))
            for f in b.rules.gather]
    agent = ReasoningAgent(name=name, description=f"{ctx.agent}: step {step}", instructions=instructions,
                           args=args, tools=list(b.tools), delegates=list(b.delegates), handoffs=list(b.handoffs),
                           span=props["REASONING"].span)
    b.extra_agents.append(agent)
    return InvokeNode(id=b.new_id(step, "reason"), target=name, target_kind="agent")


def _transfer(b: _FlowBuilder, step: str, key: str, node: Node) -> list:
    ctx = b.ctx
    if key == "ESCALATE":
        reason = ctx.text(node.get("REASON")) if node.children else ctx.text(node)
        return [EscalateNode(id=b.new_id(step, "escalate"), reason=reason)]
    target = node.text or ctx.text(node.get("TO")) or ctx.text(node.get("AGENT"))
    if target not in ctx.names.agents:
        from frontdesk.diagnostics import did_you_mean

        guess = did_you_mean(target, sorted(ctx.names.agents))
        ctx.error(codes.UNKNOWN_AGENT, f"{key} names {target}, which is not an agent of the project",
                  node.value_span() if node.value else node, f"did you mean {guess}?" if guess else None)
        return []
    if key == "DELEGATE":  # the values passed: the step's WITH / INPUT, else the agent's DELEGATE entry's INPUT
        written = node.get("WITH") or node.get("INPUT") if node.children else None
        declared = next((d for d in b.delegates if d.agent == target), None)
        given = ctx.delegate_inputs(written) if written is not None else dict(declared.given) if declared else {}
        return [InvokeNode(id=b.new_id(step, "delegate"), target=target, target_kind="agent",
                           args=[ArgValue(name=k, value=v) for k, v in given.items()], span=node.span)]
    declared = next((h for h in b.handoffs if h.agent == target), None)  # the agent's HANDOFF entry to it
    resume = ctx.boolean(node.get("RETURN"), default=declared.resume if declared is not None else False)
    handoff = HandoffNode(id=b.new_id(step, "handoff"), target=target, resume=resume)
    context = node.get("CONTEXT") if node.children else None
    if context is not None:
        _handoff_context(b, handoff, context)
    elif declared is not None:  # `HANDOFF: Payment` takes the CONTEXT of the agent's HANDOFF entry to it
        handoff.args = [ArgValue(name=p, value=Ref(scope=SESSION, name=p)) for p in declared.passes]
        handoff.summary, handoff.history = declared.summary, declared.history
    return [handoff]


def _handoff_context(b: _FlowBuilder, handoff: HandoffNode, context: Node) -> None:
    """A step's HANDOFF CONTEXT: `pass` (names or paths: `book_hotel.amount` passes `amount`), `summary`
    (a template for the agent taking over) and `history` (none, summary_only, full, {last_n: N})."""
    ctx = b.ctx
    passes = context.get("pass") or context.get("PASS")
    seen: set[str] = set()
    for path in ctx.names_list(passes) if passes is not None else []:
        name = path.split(".")[-1]
        if name in seen:
            ctx.error(codes.DUPLICATE_NAME, f"CONTEXT pass names {name} twice", passes)
            continue
        seen.add(name)
        handoff.args.append(ArgValue(name=name, value=ctx.expression(path, passes)))
    summary = context.get("summary") or context.get("SUMMARY")
    if summary is not None:
        handoff.summary = ctx.template(summary.text, summary)
        handoff.history = "summary_only"  # a summary written is passed, unless history says none
    history = context.get("history") or context.get("HISTORY")
    if history is not None:
        data = ctx.data(history)
        if isinstance(data, dict) and "last_n" in data:
            handoff.history = f"last_n:{data['last_n']}"
        elif str(data or "none") in ("none", "summary_only", "full"):
            handoff.history = str(data or "none")
        else:
            ctx.error(codes.BAD_VALUE, f"history is none, summary_only, full or {{last_n: N}}, not '{history.text}'",
                      history.value_span() if history.value else history)


