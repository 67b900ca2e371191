"""ADL step lists to a StepGraph: one method per step kind, if/else-if chains, labels and subflows."""

from __future__ import annotations

from dataclasses import dataclass, field

from frontdesk.diagnostics import DiagnosticBag, Span, did_you_mean
from frontdesk.expr import (
    ExprSyntaxError,
    TemplateSyntaxError,
    collect_refs,
    parse_condition,
    parse_template,
    template_refs,
)
from frontdesk.ir.models import (
    ArgValue,
    AssignNode,
    Assignment,
    BranchCase,
    BranchNode,
    Condition,
    ExprCondition,
    InvokeNode,
    JumpNode,
    ListenNode,
    Lit,
    Ref,
    ReturnNode,
    SayNode,
    StepGraph,
    Template,
    TextPart,
)

from . import codes
from .scope import ARG_PATH_PATTERN, ProgramScope, is_name
from frontdesk.yamlsource.nodes import YMap, YNode, YScalar, YSeq, kind_name

STEP_KEYWORDS = ("bot", "user", "set", "label", "next", "call", "if", "else if", "else", "return", "begin")
EXTRA_KEYS: dict[str, tuple[str, ...]] = {
    "call": ("args",),
    "next": ("tries",),
    "if": ("then", "else"),
    "else if": ("then", "else"),
}
RETURN_ALIASES = {"succeed": "success", "succeeded": "success", "successful": "success", "fail": "error", "failure": "error"}
CONDITION_HINT = (
    'conditions look like: the user claims "yes", "sure" | x == "value" | x != None | amount > 0 '
    '| re.match(r"^[0-9]+$", code), combined with and / or / not'
)
FULLWIDTH_MARKERS = {"\uff5c": "|", "\uff1e": ">"}


def inner_span(scalar: YScalar, column: int) -> Span:
    """The span of 1-based `column` inside a scalar's text, when the scalar sits on one line."""
    span = scalar.span
    if span.end_line not in (None, span.line) or scalar.style not in ("", "'", '"'):
        return Span(file=span.file, line=span.line, column=span.column)
    offset = 1 if scalar.quoted else 0
    return Span(file=span.file, line=span.line, column=span.column + offset + max(column, 1) - 1)


def strip_fullwidth_marker(scalar: YScalar, bag: DiagnosticBag) -> str:
    """Text of a scalar; a plain scalar starting with '｜' or '＞' is warned about and the mark dropped."""
    text = scalar.text
    if scalar.plain and text[:1] in FULLWIDTH_MARKERS:
        meant = FULLWIDTH_MARKERS[text[0]]
        bag.warning(
            codes.SUSPICIOUS_CHARACTER,
            f"'{text[0]}' (a full-width character) is not YAML's block marker; the text is read as a plain line",
            Span(file=scalar.span.file, line=scalar.span.line, column=scalar.span.column),
            hint=f"did you mean '{meant}'?",
        )
        return text[1:].strip()
    return text


def is_begin_end_marker(item: YNode) -> bool:
    if isinstance(item, YScalar):
        return item.plain and item.text.strip() in ("begin", "end")
    return isinstance(item, YMap) and bool(item.pairs) and item.pairs[0][0].text == "begin"


def begin_block_names(steps: YNode | None) -> list[YScalar]:
    """The names of `begin: name` blocks in a steps list."""
    if not isinstance(steps, YSeq):
        return []
    found = []
    for item in steps.items:
        if isinstance(item, YMap) and item.pairs and item.pairs[0][0].text == "begin":
            value = item.pairs[0][1]
            if isinstance(value, YScalar) and value.text.strip():
                found.append(value)
    return found


def name_value_pairs(node: YNode | None, bag: DiagnosticBag) -> list[tuple[YScalar, YNode]]:
    """`args:` written as a mapping or as a list of one-key mappings, as (name, value) pairs."""
    if node is None or (isinstance(node, YScalar) and node.plain and node.value is None):
        return []
    if isinstance(node, YMap):
        return list(node.pairs)
    if isinstance(node, YSeq):
        pairs = []
        for item in node.items:
            if isinstance(item, YMap) and len(item.pairs) == 1:
                pairs.append(item.pairs[0])
            else:
                bag.error(codes.WRONG_TYPE, "each args item must be one 'name: value' pair", item.span,
                          hint="write - name: value")
        return pairs
    bag.error(codes.WRONG_TYPE, f"'args' must be a mapping of name: value, found {kind_name(node)}", node.span,
              hint="write args: followed by indented lines like  name: value")
    return []


@dataclass
class Unit:
    """One entry of a step list after grouping: a label, a single step, or an if/else-if/else chain."""

    index: int
    kind: str  # "label", "branch", or a step keyword
    item: YNode
    cases: list[tuple[YMap, int, str]] = field(default_factory=list)  # (mapping, list index, 'if'/'else if')
    otherwise: tuple[YNode | None, int] | None = None
    id: str = ""
    next: str | None = None
    followed: bool = False  # another step (not a label) follows it in the same step list


@dataclass
class _Block:
    name: YScalar | None
    span: Span
    items: list[tuple[int, YNode]] = field(default_factory=list)


class StepLowering:
    """Lowers one agent's steps (and subflows) into a StepGraph."""

    def __init__(self, agent: str, scope: ProgramScope, bag: DiagnosticBag) -> None:
        self.agent = agent
        self.scope = scope
        self.bag = bag
        self.nodes: dict = {}
        self.labels: dict[str, str] = {}
        self.label_spans: dict[str, Span] = {}
        self.subflows: dict[str, str | None] = {}
        self.jumps: list[tuple[JumpNode, YScalar]] = []
        self.current: str | None = None  # the subflow being lowered (None: the agent's first steps)

    # -- graph level -------------------------------------------------------------------------

    def lower(self, steps: YNode | None, steps_key: YScalar | None, keyed_subflows: list[tuple[YScalar, YNode]]) -> StepGraph:
        entry = self.lower_steps(steps, steps_key) if steps_key is not None else None
        for key, value in keyed_subflows:
            items = self.step_items(value, key.text, key.span)
            self.current = key.text
            self.subflows[key.text] = self.block(items, key.text, None)
        self.current = None
        self.resolve_jumps()
        return StepGraph(entry=entry, nodes=self.nodes, labels=self.labels, subflows=self.subflows)

    def lower_steps(self, steps: YNode | None, key: YScalar) -> str | None:
        items = self.step_items(steps, "steps", key.span)
        if isinstance(steps, YSeq) and any(is_begin_end_marker(i) for _, i in items):
            return self.lower_begin_end_blocks(items)
        return self.block(items, "steps", None)

    def step_items(self, node: YNode | None, what: str, key_span: Span) -> list[tuple[int, YNode]]:
        """A list of steps with their indices; reports a missing, empty or non-list value."""
        if node is None or (isinstance(node, YScalar) and node.plain and node.value is None):
            self.bag.error(codes.EMPTY_STEPS, f"'{what}' has no steps", key_span, hint="add at least one step, e.g. - bot: Hello")
            return []
        if not isinstance(node, YSeq):
            self.bag.error(codes.WRONG_TYPE, f"'{what}' must be a list of steps, found {kind_name(node)}", node.span,
                           hint="write each step on its own line starting with '- '")
            return []
        if not node.items:
            self.bag.error(codes.EMPTY_STEPS, f"'{what}' has no steps", node.span, hint="add at least one step, e.g. - bot: Hello")
        return list(enumerate(node.items))

    def lower_begin_end_blocks(self, items: list[tuple[int, YNode]]) -> str | None:
        entry = None
        for number, block in enumerate(self.split_begin_end(items)):
            if not block.items:
                self.bag.error(codes.EMPTY_STEPS, "this begin/end block has no steps", block.span,
                               hint="add steps between begin and end, or remove the block")
            self.current = block.name.text.strip() if block.name is not None else None
            first = self.block(block.items, "steps", None)
            self.current = None
            if number == 0:
                entry = first
            if block.name is not None:
                self.subflows[block.name.text.strip()] = first
        return entry

    def split_begin_end(self, items: list[tuple[int, YNode]]) -> list[_Block]:
        blocks: list[_Block] = []
        current: _Block | None = None
        for index, item in items:
            if isinstance(item, YMap) and item.pairs and item.pairs[0][0].text == "begin":
                current = self._open_block(current, blocks, item)
            elif isinstance(item, YScalar) and item.plain and item.text.strip() == "begin":
                current = self._open_block(current, blocks, item)
            elif isinstance(item, YScalar) and item.plain and item.text.strip() == "end":
                if current is None:
                    self.bag.error(codes.BEGIN_END, "'end' without a matching 'begin'", item.span, hint="remove it or add - begin before the block")
                else:
                    blocks.append(current)
                    current = None
            elif current is None:
                self.bag.error(codes.BEGIN_END, "this step is outside any begin/end block", item.span,
                               hint="when steps use begin/end, every step must sit between a begin and its end")
            else:
                current.items.append((index, item))
        if current is not None:
            self.bag.error(codes.BEGIN_END, "'begin' without a matching 'end'", current.span, hint="add - end after the block's last step")
            blocks.append(current)
        return blocks

    def _open_block(self, current: _Block | None, blocks: list[_Block], item: YNode) -> _Block:
        if current is not None:
            self.bag.error(codes.BEGIN_END, "'begin' inside an open block", item.span, hint="close the previous block with - end first")
            blocks.append(current)
        name = None
        if isinstance(item, YMap):
            extra = [k for k in item.keys if k != "begin"]
            for key in extra:
                self.unknown_key(item.keys[key], "begin", ())
            value = item.pairs[0][1]
            if isinstance(value, YScalar) and value.text.strip():
                name = value
            else:
                self.bag.error(codes.WRONG_TYPE, "'begin:' needs a subflow name", item.span, hint="write - begin: my_subflow (or a bare - begin)")
        return _Block(name, item.span)

    def resolve_jumps(self) -> None:
        for node, name_node in self.jumps:
            name = node.target_name
            if name in self.labels:
                node.target = self.labels[name]
            elif name in self.subflows:
                node.target = self.subflows[name] or ""
            else:
                self.report_undefined_jump(name, name_node)

    def report_undefined_jump(self, name: str, name_node: YScalar) -> None:
        places = list(self.labels) + list(self.subflows)
        guess = did_you_mean(name, places)
        if guess:
            hint = f"did you mean '{guess}'?"
        elif self.scope.is_agent(name):
            hint = f"'{name}' is an agent; use call: {name} to run it"
        elif places:
            hint = f"labels and subflows of this agent: {', '.join(places)}"
        else:
            hint = "mark the place with - label: <name> or define a subflow"
        self.bag.error(codes.UNDEFINED_JUMP, f"next: '{name}' is not a label or subflow of this agent", name_node.span, hint)

    # -- blocks -----------------------------------------------------------------------------

    def block(self, items: list[tuple[int, YNode]], prefix: str, cont: str | None) -> str | None:
        """Lower a list of steps whose end continues at `cont`; returns the id of the first node to run."""
        units = self.group(items)
        first = self.link(units, prefix, cont)
        for unit in units:
            if unit.kind == "branch":
                self.branch(unit, prefix)
            elif unit.kind != "label":
                node = getattr(self, "step_" + unit.kind)(unit)
                if node is None:  # reported; keep a placeholder so links into it stay valid
                    self.noop(unit.id, unit.item.span, unit.next)
                else:
                    self.nodes[unit.id] = node
        return first

    def link(self, units: list[Unit], prefix: str, cont: str | None) -> str | None:
        """Give each unit its node id and successor; point labels at the node that follows them."""
        follow = cont
        later: Unit | None = None
        for unit in reversed(units):
            unit.followed = later is not None and later.kind != "label"
            later = unit
            if unit.kind == "label":
                if follow is None:
                    follow = self.noop(f"{prefix}.{unit.index}", unit.item.span, None)
                self.labels[self.label_name(unit)] = follow
            else:
                unit.id = f"{prefix}.{unit.index}"
                unit.next = follow
                follow = unit.id
        return follow

    def noop(self, node_id: str, span: Span | None, next_id: str | None) -> str:
        """A node that does nothing (an empty assignment): a landing place for labels at a block's end."""
        self.nodes[node_id] = AssignNode(id=node_id, span=span, assignments=[], next=next_id)
        return node_id

    def group(self, items: list[tuple[int, YNode]]) -> list[Unit]:
        units: list[Unit] = []
        chain: Unit | None = None
        for index, item in items:
            keyword = self.keyword_of(item)
            if keyword in ("else if", "else"):
                chain = self.extend_chain(chain, item, index, keyword)
                continue
            chain = None
            if keyword is None:
                continue
            unit = Unit(index, keyword, item)
            if keyword == "if":
                unit.kind = "branch"
                unit.cases.append((item, index, "if"))
                chain = self.close_chain_with_else(unit, item, index)
            elif keyword == "label" and not self.register_label(item):
                continue
            units.append(unit)
        return units

    def extend_chain(self, chain: Unit | None, item: YMap, index: int, keyword: str) -> Unit | None:
        if chain is None:
            self.bag.error(codes.ELSE_WITHOUT_IF, f"'{keyword}' without a preceding 'if'", item.span,
                           hint="put it right after an - if: step (or after an - else if: without else:)")
            return None
        if keyword == "else":
            chain.otherwise = (item.get("else"), index)
            return None
        chain.cases.append((item, index, "else if"))
        return self.close_chain_with_else(chain, item, index)

    @staticmethod
    def close_chain_with_else(chain: Unit, item: YMap, index: int) -> Unit | None:
        if "else" in item:
            chain.otherwise = (item.get("else"), index)
            return None
        return chain

    def keyword_of(self, item: YNode) -> str | None:
        """The step's keyword after checking its shape; None (reported) when it is not a valid step."""
        if isinstance(item, YScalar):
            return self.scalar_keyword(item)
        if isinstance(item, YSeq) or not item.pairs:
            self.bag.error(codes.WRONG_TYPE, f"a step must be a keyword or a mapping, found {kind_name(item)}", item.span,
                           hint="for example - user, - bot: Hello, - call: agent_name")
            return None
        primaries = [k for k in item.key_names() if k in STEP_KEYWORDS]
        if not primaries:
            first = item.pairs[0][0]
            hint_extra = " (then:/else: belong to an if: step)" if first.text in ("then",) else ""
            self.unknown_key(first, "step", STEP_KEYWORDS, hint_extra)
            return None
        keyword = primaries[0]
        allowed = EXTRA_KEYS.get(keyword, ())
        for key in item.key_names():
            if key == keyword:
                continue
            if key == "tries" and keyword != "next":
                self.misplaced_tries(item.keys[key], keyword)
            elif key in STEP_KEYWORDS and key not in allowed:
                self.bag.error(codes.UNKNOWN_KEY, f"'{key}' is a separate step; this step already is '{keyword}'", item.keys[key].span,
                               hint=f"put it in its own list item: - {key}: ...")
            elif key not in allowed:
                self.unknown_key(item.keys[key], f"'{keyword}' step", (keyword,) + allowed)
        if keyword == "begin":
            self.bag.error(codes.BEGIN_END, "begin/end blocks may only appear directly in an agent's steps", item.span,
                           hint="move the block to the agent's steps: list")
            return None
        if keyword == "user" and not (isinstance(item.get("user"), YScalar) and item.get("user").value is None):
            self.bag.error(codes.WRONG_TYPE, "'user' takes no value", item.span, hint="write - user")
            return None
        return keyword

    def scalar_keyword(self, item: YScalar) -> str | None:
        text = item.text.strip()
        if text == "user":
            return "user"
        if text in ("begin", "end"):
            self.bag.error(codes.BEGIN_END, f"'{text}' may only appear directly in an agent's steps", item.span,
                           hint="move the block to the agent's steps: list")
        elif not text:
            self.bag.error(codes.WRONG_TYPE, "empty step", item.span, hint="remove the '-' or write a step")
        elif text in STEP_KEYWORDS or text.rstrip(":") in STEP_KEYWORDS:
            self.bag.error(codes.MISSING_KEY, f"'{text.rstrip(':')}' needs a value", item.span,
                           hint=f"write - {text.rstrip(':')}: <value>")
        else:
            guess = did_you_mean(text, STEP_KEYWORDS)
            hint = f"did you mean '{guess}'?" if guess else "steps are: " + ", ".join(STEP_KEYWORDS)
            self.bag.error(codes.UNKNOWN_KEY, f"unknown step '{text}'", item.span, hint)
        return None

    def misplaced_tries(self, key: YScalar, keyword: str) -> None:
        """`tries:` under a step other than `next:`. Under `call:` (MICA programs write it there) it is
        warned about and ignored; elsewhere it is an unknown key. Both hints say what to write instead."""
        meaning = f"'tries' has no effect on a '{keyword}' step: it limits how many times a 'next:' jump is taken"
        if keyword == "call":
            self.bag.warning(codes.IGNORED_TRIES, meaning + "; the call runs once each time the flow reaches it",
                             key.span, hint="to retry the call, put - label: try_again before it and, where it failed, "
                                            "- next: try_again with tries: 3 under it")
        else:
            self.bag.error(codes.UNKNOWN_KEY, f"'tries' is not a key of a '{keyword}' step: it limits how many times "
                                            "a 'next:' jump is taken",
                           key.span, hint=f"to repeat it, put - label: again before it and - next: again with "
                                          f"tries: 3 after it; valid keys here: {', '.join((keyword,) + EXTRA_KEYS.get(keyword, ()))}")

    def unknown_key(self, key: YScalar, where: str, valid: tuple[str, ...], extra: str = "") -> None:
        guess = did_you_mean(key.text, valid)
        hint = (f"did you mean '{guess}'? " if guess else "") + "valid keys: " + ", ".join(valid) + extra
        self.bag.error(codes.UNKNOWN_KEY, f"unknown key '{key.text}' in {where}", key.span, hint)

    # -- labels ------------------------------------------------------------------------------

    def label_name(self, unit: Unit) -> str:
        return unit.item.get("label").text.strip()

    def register_label(self, item: YMap) -> bool:
        value = item.get("label")
        if not isinstance(value, YScalar) or not is_name(value.text.strip()):
            self.bag.error(codes.INVALID_NAME, "a label needs a name made of letters, digits and '_'", (value or item).span,
                           hint="for example - label: ask_again")
            return False
        name = value.text.strip()
        if name in self.label_spans:
            first = self.label_spans[name]
            self.bag.error(codes.DUPLICATE_LABEL, f"label '{name}' is already defined at line {first.line}", value.span,
                           hint="labels must be unique within an agent; rename one")
            return False
        if name in self.scope.subflows(self.agent):
            self.bag.error(codes.NAME_CLASH, f"label '{name}' has the same name as a subflow", value.span,
                           hint="labels and subflows share one namespace; rename the label")
            return False
        self.label_spans[name] = value.span
        return True

    # -- single steps --------------------------------------------------------------------------

    def step_user(self, unit: Unit) -> ListenNode:
        return ListenNode(id=unit.id, span=unit.item.span, next=unit.next)

    def step_bot(self, unit: Unit) -> SayNode | None:
        value = self.required_text(unit.item, "bot")
        if value is None:
            return None
        template = self.template(value)
        return SayNode(id=unit.id, span=unit.item.span, next=unit.next, text=template)

    def step_set(self, unit: Unit) -> AssignNode | None:
        value = unit.item.get("set")
        if not isinstance(value, YMap) or not value.pairs:
            self.bag.error(codes.WRONG_TYPE, f"'set' needs a mapping of argument: value, found {kind_name(value)}",
                           (value or unit.item).span, hint="write set: followed by indented lines like  name: value")
            return None
        assignments = []
        for key, item in value.pairs:
            target = self.set_target(key)
            expr = self.scope.value_expr(item, self.agent)
            if isinstance(expr, Ref):
                self.scope.check_ref(expr, self.agent, item.span)
            if target is not None:
                assignments.append(Assignment(target=target, value=expr))
        return AssignNode(id=unit.id, span=unit.item.span, next=unit.next, assignments=assignments)

    def set_target(self, key: YScalar) -> Ref | None:
        match = ARG_PATH_PATTERN.match(key.text.strip())
        if not match:
            self.bag.error(codes.INVALID_NAME, f"'{key.text}' is not an argument name", key.span,
                           hint="write name or agent_name.name")
            return None
        first, second = match.groups()
        ref = Ref(scope=self.agent, name=first) if second is None else Ref(scope=first, name=second)
        self.scope.check_ref(ref, self.agent, key.span)
        return ref

    def step_next(self, unit: Unit) -> JumpNode | InvokeNode | None:
        value = self.required_text(unit.item, "next")
        if value is None:
            return None
        tries = self.tries(unit.item.get("tries"))
        name = value.text.strip()
        if self.comes_back(unit, name, tries):
            # `next: subflow` with steps after it (the flow-agent guide's `next: get_discount` then
            # `if: get_discount.success`): the subflow runs and control comes back, as with `call:`
            return InvokeNode(id=unit.id, span=unit.item.span, next=unit.next, target=name, target_kind="subflow")
        node = JumpNode(id=unit.id, span=unit.item.span, target="", target_name=name, tries=tries,
                        next=unit.next if tries is not None else None)
        self.jumps.append((node, value))
        return node

    def comes_back(self, unit: Unit, name: str, tries: int | None) -> bool:
        """Whether a `next:` runs a subflow and comes back: it names a subflow (not the one it is in), has
        no `tries:` and another step follows it in its list (steps a jump would never reach)."""
        return (tries is None and "tries" not in unit.item and unit.followed and name != self.current
                and name in self.scope.subflows(self.agent))

    def tries(self, node: YNode | None) -> int | None:
        if node is None:
            return None
        number = node.value if isinstance(node, YScalar) else None
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            self.bag.error(codes.WRONG_TYPE, "'tries' must be a positive whole number", node.span,
                           hint="for example tries: 3 (leave it out for unlimited jumps)")
            return None
        return number

    def step_call(self, unit: Unit) -> InvokeNode | None:
        value = self.required_text(unit.item, "call")
        if value is None:
            return None
        name = value.text.strip()
        kind = self.call_kind(name, value.span)
        args = [self.call_arg(key, item) for key, item in name_value_pairs(unit.item.get("args"), self.bag)]
        self.check_call_args(name, kind, args, unit.item.span)
        return InvokeNode(id=unit.id, span=unit.item.span, next=unit.next, target=name, target_kind=kind,
                          args=[a for a, _ in args])

    def call_kind(self, name: str, span: Span) -> str:
        if name in self.scope.subflows(self.agent):
            return "subflow"
        if self.scope.is_agent(name):
            return "agent"
        if name not in self.scope.catalog.tools:
            self.scope.report_undefined(codes.UNDEFINED_CALL, "call target", name, self.agent, span)
        return "tool"

    def call_arg(self, key: YScalar, item: YNode) -> tuple[ArgValue, YScalar]:
        expr = self.scope.value_expr(item, self.agent)
        if isinstance(expr, Ref):
            self.scope.check_ref(expr, self.agent, item.span)
        return ArgValue(name=key.text.strip(), value=expr), key

    def check_call_args(self, name: str, kind: str, args: list[tuple[ArgValue, YScalar]], span: Span) -> None:
        if kind == "subflow":
            for arg, key in args:
                self.scope.check_ref(Ref(scope=self.agent, name=arg.name), self.agent, key.span)
        elif kind == "agent":
            for arg, key in args:
                ref = Ref(scope=name, name=arg.name)
                self.scope.check_ref(ref, self.agent, key.span)
                arg.name = ref.name  # claim_number passes the callee's "claim number"
        elif name in self.scope.catalog.tools:
            self.check_tool_args(name, args, span)

    def check_tool_args(self, name: str, args: list[tuple[ArgValue, YScalar]], span: Span) -> None:
        tool = self.scope.catalog.tools[name]
        params = [p.name for p in tool.params]
        given = {a.name for a, _ in args}
        if name not in self.scope.catalog.open_params:
            for arg, key in args:
                if arg.name not in params:
                    guess = did_you_mean(arg.name, params)
                    hint = f"did you mean '{guess}'?" if guess else f"{name}() takes: {', '.join(params) or 'no parameters'}"
                    self.bag.error(codes.UNKNOWN_TOOL_PARAM, f"tool '{name}' has no parameter '{arg.name}'", key.span, hint)
        caller_args = self.scope.args_of(self.agent)
        for param in tool.params:
            if param.required and param.name not in given and param.name not in caller_args:
                self.bag.warning(codes.MISSING_TOOL_PARAM, f"call of '{name}' gives no value for its required parameter '{param.name}'",
                                 span, hint=f"add args: {{{param.name}: ...}} or an argument '{param.name}' to this agent")

    def step_return(self, unit: Unit) -> ReturnNode | None:
        value = self.required_text(unit.item, "return")
        if value is None:
            return None
        status, _, message = value.text.partition(",")
        status = status.strip().lower()
        if status in RETURN_ALIASES:
            meant = RETURN_ALIASES[status]
            self.bag.warning(codes.STATUS_ALIAS, f"return status '{status}' is read as '{meant}'", value.span,
                             hint=f"write return: {meant}, <message>")
            status = meant
        if status not in ("success", "error"):
            guess = did_you_mean(status, ("success", "error"))
            hint = (f"did you mean '{guess}'? " if guess else "") + "write return: success, <message> or return: error, <message>"
            self.bag.error(codes.BAD_RETURN, f"return status must be 'success' or 'error', not '{status}'", value.span, hint)
            return None
        return ReturnNode(id=unit.id, span=unit.item.span, next=None, status=status,
                          message=self.return_message(message.strip(), value))

    def return_message(self, text: str, value: YScalar) -> Template | None:
        if not text:
            return None
        try:
            template = parse_template(text, self.agent)
        except TemplateSyntaxError as exc:
            self.bag.error(codes.BAD_TEMPLATE, f"bad ${{...}} in the return message: {exc.message}", value.span,
                           getattr(exc, "hint", None) or "write ${name} or ${agent.name}")
            return Template(source=text, parts=[TextPart(text=text)])
        for ref in template_refs(template):
            self.scope.check_ref(ref, self.agent, value.span)
        return template

    def required_text(self, item: YMap, keyword: str) -> YScalar | None:
        value = item.get(keyword)
        if value is None or (isinstance(value, YScalar) and value.plain and value.value is None) or (
            isinstance(value, YScalar) and not value.text.strip()
        ):
            self.bag.error(codes.MISSING_KEY, f"'{keyword}' needs a value", item.span, hint=f"write - {keyword}: <value>")
            return None
        if not isinstance(value, YScalar):
            self.bag.error(codes.WRONG_TYPE, f"'{keyword}' needs a single value, found {kind_name(value)}", value.span,
                           hint="quote text that contains ': ', '- ' or '#'")
            return None
        return value

    # -- conditions and templates ----------------------------------------------------------------

    def template(self, value: YScalar) -> Template:
        text = strip_fullwidth_marker(value, self.bag)
        try:
            template = parse_template(text, self.agent)
        except TemplateSyntaxError as exc:
            self.bag.error(codes.BAD_TEMPLATE, f"bad ${{...}} in text: {exc.message}", inner_span(value, exc.column),
                           getattr(exc, "hint", None) or "write ${name} or ${agent.name}")
            return Template(source=text, parts=[])
        for ref in template_refs(template):
            self.scope.check_ref(ref, self.agent, value.span)
        return template

    def condition(self, node: YNode | None, owner: YMap, keyword: str) -> Condition:
        placeholder = ExprCondition(source="", expr=Lit(value=False))
        if node is None or (isinstance(node, YScalar) and not node.text.strip()):
            self.bag.error(codes.MISSING_KEY, f"'{keyword}' needs a condition", owner.span,
                           hint='for example - if: the user claims "Yes" or - if: amount > 0')
            return placeholder
        if not isinstance(node, YScalar):
            self.bag.error(codes.WRONG_TYPE, f"a condition must be text, found {kind_name(node)}", node.span,
                           hint="quote the condition if it contains ': '")
            return placeholder
        try:
            condition = parse_condition(node.text, self.agent)
        except ExprSyntaxError as exc:
            self.bag.error(codes.BAD_CONDITION, f"bad condition: {exc.message}", inner_span(node, exc.column),
                           getattr(exc, "hint", None) or CONDITION_HINT)
            return placeholder
        if isinstance(condition, ExprCondition):
            for ref in collect_refs(condition.expr):
                self.scope.check_ref(ref, self.agent, node.span)
        return condition

    # -- if / else if / else -----------------------------------------------------------------------

    def branch(self, unit: Unit, prefix: str) -> None:
        self.noop(unit.id, unit.item.span, unit.next)  # keeps the branch before its blocks in node order
        cases = []
        for item, index, keyword in unit.cases:
            condition = self.condition(item.get(keyword), item, keyword)
            then_prefix = f"{prefix}.{index}.then"
            then_node = item.get("then")
            if then_node is None:
                self.bag.error(codes.MISSING_KEY, f"'{keyword}' needs a 'then:' list of steps", item.span,
                               hint="add then: with the steps to run when the condition holds")
                items = []
            else:
                items = self.step_items(then_node, "then", item.keys["then"].span)
            target = self.block(items, then_prefix, unit.next) or self.noop(then_prefix, item.span, None)
            cases.append(BranchCase(condition=condition, target=target, span=self.condition_span(item, keyword)))
        otherwise = None
        if unit.otherwise is not None:
            else_node, index = unit.otherwise
            items = self.step_items(else_node, "else", else_node.span if else_node else unit.item.span)
            otherwise = self.block(items, f"{prefix}.{index}.else", unit.next)
        self.nodes[unit.id] = BranchNode(id=unit.id, span=unit.item.span, next=unit.next, cases=cases, otherwise=otherwise)

    @staticmethod
    def condition_span(item: YMap, keyword: str) -> Span:
        value = item.get(keyword)
        return value.span if value is not None else item.span
