"""Program-wide names for ADL lowering: agents, their args and subflows, tools; resolving references."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from frontdesk.diagnostics import DiagnosticBag, Span, did_you_mean
from frontdesk.ir.models import Expr, Lit, Ref

from . import codes
from .tools import ToolCatalog
from frontdesk.yamlsource.nodes import YMap, YNode, YScalar, YSeq, to_python

PSEUDO_ARGS = ("status", "message", "success", "error")
NAME_PATTERN = re.compile(r"[^\W\d]\w*\Z")
ARG_PATH_PATTERN = re.compile(r"([^\W\d]\w*)(?:\.([^\W\d]\w*))?\Z")
NO_TOOL_FILES_HINT = "add tools: [file.py] or put the .py file beside the program"


def is_name(text: str) -> bool:
    return bool(NAME_PATTERN.match(text))


def is_phrase_name(text: str) -> bool:
    """An llm agent's argument written in words ("claim number", "User ID"): one line with a letter or digit."""
    return bool(text) and text == text.strip() and text.isprintable() and any(c.isalnum() for c in text)


def reference_form(name: str) -> str:
    """How `${...}` and expressions name an argument: runs of other characters become '_' ("User ID" -> User_ID)."""
    return re.sub(r"\W+", "_", name).strip("_")


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance with adjacent swaps counted as one edit."""
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], previous2[j - 2] + 1)
        previous2, previous = previous, current
    return previous[-1]


def likely_typo_of(name: str, candidates) -> str | None:
    """A candidate `name` is probably a misspelling of (at most 2 edits, and few for short names)."""
    limit = min(2, max(1, len(name) // 4))
    best = min(((edit_distance(name, c), c) for c in candidates if c != name), default=None)
    return best[1] if best is not None and best[0] <= limit else None


@dataclass
class AgentFacts:
    """What other agents may know about an agent before it is lowered."""

    name: str
    node: YMap | None
    key: YScalar
    kind: str | None  # IR kind (knowledge / reasoning / flow / router), None when unknown
    args: list[str] = field(default_factory=list)
    subflows: dict[str, Span] = field(default_factory=dict)


class ProgramScope:
    """Name lookup shared by every agent's lowering, plus reference checking."""

    def __init__(self, agents: dict[str, AgentFacts], catalog: ToolCatalog, bag: DiagnosticBag) -> None:
        self.agents = agents
        self.catalog = catalog
        self.bag = bag
        self.assumed_tools: set[str] = set()  # called or used names that nothing defines

    # -- lookups -------------------------------------------------------------------------

    def is_agent(self, name: str) -> bool:
        return name in self.agents

    def is_tool(self, name: str) -> bool:
        return name in self.catalog.tools or name in self.assumed_tools

    def subflows(self, agent: str) -> dict[str, Span]:
        facts = self.agents.get(agent)
        return facts.subflows if facts else {}

    def args_of(self, agent: str) -> list[str]:
        facts = self.agents.get(agent)
        return facts.args if facts else []

    def written_arg(self, agent: str, name: str) -> str | None:
        """The argument of `agent` that `name` refers to: itself, or an argument written in words
        whose reference form `name` is (only when no other argument claims that form)."""
        args = self.args_of(agent)
        if name in args:
            return name
        matches = [arg for arg in args if not is_name(arg) and reference_form(arg) == name]
        return matches[0] if len(matches) == 1 else None

    def is_scope(self, name: str, agent: str) -> bool:
        return self.is_agent(name) or self.is_tool(name) or name in self.subflows(agent)

    def undefined_is_error(self, name: str, agent: str) -> bool:
        """The tools rule: unknown names are errors when tools exist or the name looks like a typo."""
        if self.catalog.has_files:
            return True
        return likely_typo_of(name, list(self.agents) + list(self.subflows(agent))) is not None

    def report_undefined(self, code: str, what: str, name: str, agent: str, span: Span | None) -> None:
        """Report a name that is neither an agent, a subflow nor a known tool."""
        candidates = list(self.agents) + list(self.subflows(agent)) + list(self.catalog.tools)
        guess = did_you_mean(name, candidates)
        if self.undefined_is_error(name, agent):
            if guess:
                hint = f"did you mean '{guess}'?"
            elif self.catalog.has_files:
                hint = f"define an agent named '{name}' or a function in {', '.join(self.catalog.files)}"
            else:
                hint = f"define an agent named '{name}'"
            self.bag.error(code, f"{what} '{name}' is not defined: no agent, subflow or tool has this name", span, hint)
        else:
            self.bag.warning(code, f"no Python tool file defines {name}", span, NO_TOOL_FILES_HINT)

    # -- values and references -------------------------------------------------------------

    def value_expr(self, node: YNode, agent: str) -> Expr:
        """A `set` value or `call` argument: quoted text is literal; a plain arg path in scope is a Ref."""
        if not isinstance(node, YScalar):
            return Lit(value=to_python(node))
        if node.plain:
            ref = self.arg_path_ref(node.text, agent)
            if ref is not None:
                return ref
        return Lit(value=node.value)

    def arg_path_ref(self, text: str, agent: str) -> Ref | None:
        """`x` (an arg of `agent`) or `a.b` (a an agent, tool or subflow) as a Ref; else None."""
        match = ARG_PATH_PATTERN.match(text.strip())
        if not match:
            return None
        first, second = match.groups()
        if second is None:
            return Ref(scope=agent, name=first) if self.written_arg(agent, first) is not None else None
        return Ref(scope=first, name=second) if self.is_scope(first, agent) else None

    def check_ref(self, ref: Ref, agent: str, span: Span | None) -> None:
        """Report a Ref naming an undefined argument or an unknown agent/tool.

        A reference to an argument written in words by its reference form (`claim_number` for
        "claim number") is rewritten in place to the argument's written name, which is what the
        runtime stores values under.
        """
        if ref.scope == agent or ref.scope in self.subflows(agent):
            owner = agent
        elif self.is_agent(ref.scope):
            owner = ref.scope
        elif self.is_tool(ref.scope):
            return
        else:
            self._report_unknown_scope(ref, agent, span)
            return
        written = self.written_arg(owner, ref.name)
        if written is not None:
            ref.name = written
        else:
            self._check_arg(owner, ref.name, span, own=owner == agent, shown_scope=ref.scope)

    def _check_arg(self, owner: str, name: str, span: Span | None, own: bool, shown_scope: str) -> None:
        args = self.args_of(owner)
        if name in args or name in PSEUDO_ARGS:
            return
        if self.agents[owner].kind is None:  # an agent we could not read: don't pile on
            return
        where = "this agent" if own else f"agent '{owner}'"
        shown = name if own and shown_scope == owner else f"{shown_scope}.{name}"
        same_form = [arg for arg in args if not is_name(arg) and reference_form(arg) == name]
        if len(same_form) > 1:
            self.bag.error(codes.UNDEFINED_ARGUMENT, f"'{shown}' could name any of the arguments "
                           f"{', '.join(repr(a) for a in same_form)} of {where}", span,
                           hint="rename them in args: so that their words joined by '_' differ")
            return
        guess = did_you_mean(name, [a if is_name(a) else reference_form(a) for a in args])
        if guess:
            hint = f"did you mean '{guess}'?"
        else:
            hint = f"add '{name}' to the args: of agent '{owner}'"
            if args:
                hint += f" (its args are: {', '.join(args)})"
        self.bag.error(codes.UNDEFINED_ARGUMENT, f"'{shown}' is not an argument of {where}", span, hint)

    def _report_unknown_scope(self, ref: Ref, agent: str, span: Span | None) -> None:
        candidates = list(self.agents) + list(self.subflows(agent)) + list(self.catalog.tools)
        guess = did_you_mean(ref.scope, candidates)
        message = f"'{ref.scope}.{ref.name}' refers to '{ref.scope}', which is not an agent or tool"
        if self.undefined_is_error(ref.scope, agent):
            hint = f"did you mean '{guess}'?" if guess else "write <agent>.<arg> or <tool>.<value> with a defined name"
            self.bag.error(codes.UNKNOWN_SCOPE, message, span, hint)
        else:
            self.bag.warning(codes.UNKNOWN_SCOPE, message, span, f"if '{ref.scope}' is a Python tool, {NO_TOOL_FILES_HINT}")


def collect_called_names(node: YNode | None) -> list[str]:
    """Every `call:` target and `uses:` entry written anywhere inside an agent's YAML."""
    found: list[str] = []
    stack = [node] if node is not None else []
    while stack:
        current = stack.pop()
        if isinstance(current, YSeq):
            stack.extend(current.items)
        elif isinstance(current, YMap):
            for key, value in current.pairs:
                if key.text == "call" and isinstance(value, YScalar):
                    found.append(value.text.strip())
                elif key.text == "uses" and isinstance(value, YSeq):
                    found.extend(i.text.strip() for i in value.items if isinstance(i, YScalar))
                else:
                    stack.append(value)
    return found
