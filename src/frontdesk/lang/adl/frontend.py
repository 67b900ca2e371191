"""ADL lowering: a parsed agents.yml (located YAML nodes) to the IR Program, with diagnostics."""

from __future__ import annotations

import os
from pathlib import Path

from frontdesk.diagnostics import DiagnosticBag, Span, did_you_mean
from frontdesk.ir.models import (
    ORCHESTRATION_STRATEGIES,
    ArgBinding,
    ArgDef,
    FaqEntry,
    FlowAgent,
    KnowledgeAgent,
    KnowledgeSource,
    Policy,
    Program,
    ProgramSettings,
    ReasoningAgent,
    RouterAgent,
    RouterMember,
    StepGraph,
)

from . import codes
from .policy_text import read_policy
from .scope import AgentFacts, ProgramScope, collect_called_names, is_name, is_phrase_name, reference_form
from .steps import StepLowering, begin_block_names, inner_span, name_value_pairs, strip_fullwidth_marker
from .tools import ToolCatalog
from frontdesk.yamlsource.nodes import YMap, YNode, YScalar, YSeq, kind_name

AGENT_TYPES = {
    "kb agent": "knowledge",
    "llm agent": "reasoning",
    "flow agent": "flow",
    "ensemble agent": "router",
}
HEADER_KEYS = ("type", "description", "args", "fallback", "exit")
KIND_KEYS = {
    "knowledge": ("sources", "file", "faq"),
    "reasoning": ("prompt", "uses", "steps", "max_iterations"),
    "flow": ("steps",),
    "router": ("contains", "prompt", "steps", "strategy", "guardrails"),
}
ALL_BODY_KEYS = ("sources", "file", "faq", "prompt", "uses", "steps", "max_iterations", "contains", "strategy",
                 "guardrails")
KB_FORBIDDEN = ("steps", "contains", "prompt", "uses")
URL_PREFIXES = ("http://", "https://", "www.")


def normalise_type(text: str) -> str:
    return " ".join(text.replace("_", " ").replace("-", " ").lower().split())


def agent_kind(node: YMap) -> str | None:
    type_node = node.get("type")
    if isinstance(type_node, YScalar):
        return AGENT_TYPES.get(normalise_type(type_node.text))
    return None


def keyed_subflows(node: YMap, kind: str | None) -> list[tuple[YScalar, YNode]]:
    """Keys of a flow agent that are not agent keys and hold a list: its named subflows."""
    if kind != "flow":
        return []
    return [
        (key, value)
        for key, value in node.pairs
        if key.text not in HEADER_KEYS + ALL_BODY_KEYS and isinstance(value, YSeq)
    ]


class AdlLowering:
    """Lowers the top-level mapping of an ADL program; one method per agent kind."""

    def __init__(self, document: YMap, root: Path, shown_file: str, catalog: ToolCatalog, bag: DiagnosticBag) -> None:
        self.document = document
        self.root = root
        self.file = shown_file
        self.bag = bag
        self.catalog = catalog
        self.scope = ProgramScope(self.prescan(), catalog, bag)
        self.scope.assumed_tools = self.assumed_tools()

    # -- before lowering: every agent's name, kind, args and subflows ------------------------------

    def agent_pairs(self) -> list[tuple[YScalar, YNode]]:
        return [(k, v) for k, v in self.document.pairs if k.text != "tools"]

    def prescan(self) -> dict[str, AgentFacts]:
        facts: dict[str, AgentFacts] = {}
        for key, node in self.agent_pairs():
            name = key.text
            if not isinstance(node, YMap):
                facts[name] = AgentFacts(name, None, key, None)
                continue
            kind = agent_kind(node)
            facts[name] = AgentFacts(name, node, key, kind, self.arg_names(node.get("args")))
        for fact in facts.values():
            if fact.node is not None:
                fact.subflows = self.subflow_names(fact, facts)
        return facts

    @staticmethod
    def arg_names(node: YNode | None) -> list[str]:
        names: list[str] = []
        if isinstance(node, YSeq):
            for item in node.items:
                if isinstance(item, YScalar):
                    names.append(item.text.strip())
                elif isinstance(item, YMap) and len(item.pairs) == 1:
                    names.append(item.pairs[0][0].text.strip())
        return names

    def subflow_names(self, fact: AgentFacts, agents: dict[str, AgentFacts]) -> dict[str, Span]:
        found: dict[str, Span] = {}
        named = [k for k, _ in keyed_subflows(fact.node, fact.kind)] + begin_block_names(fact.node.get("steps"))
        for name_node in named:
            name = name_node.text.strip()
            if not is_name(name):
                self.bag.error(codes.INVALID_NAME, f"'{name}' is not a valid subflow name", name_node.span,
                               hint="use letters, digits and '_'")
            elif name in found:
                self.bag.error(codes.NAME_CLASH, f"subflow '{name}' is defined twice", name_node.span,
                               hint="rename one of the subflows")
            elif name in agents:
                self.bag.error(codes.NAME_CLASH, f"subflow '{name}' has the same name as an agent", name_node.span,
                               hint="call: would be ambiguous; rename the subflow")
            else:
                found[name] = name_node.span
        return found

    def assumed_tools(self) -> set[str]:
        """Called or used names nothing defines: treated as tools so `x.result` references resolve."""
        assumed = set()
        for key, node in self.agent_pairs():
            subflows = self.scope.subflows(key.text)
            for name in collect_called_names(node):
                if not self.scope.is_agent(name) and name not in subflows and name not in self.catalog.tools:
                    assumed.add(name)
        return assumed

    # -- program ------------------------------------------------------------------------------

    def lower(self) -> Program:
        agents = {}
        for key, node in self.agent_pairs():
            agent = self.lower_agent(key, node)
            if agent is not None:
                agents[key.text] = agent
        self.check_main()
        return Program(language="adl", agents=agents, tools=self.catalog.tools, settings=ProgramSettings())

    def check_main(self) -> None:
        if "main" in self.scope.agents:
            return
        names = list(self.scope.agents)
        guess = did_you_mean("main", names)
        hint = f"did you mean '{guess}'? " if guess else ""
        hint += "add an agent named main (the entry point), e.g. main: {type: flow agent, steps: [call: <agent>]}"
        if names:
            hint += f"; agents: {', '.join(names)}"
        self.bag.error(codes.MISSING_MAIN, "the program has no 'main' agent", Span(file=self.file, line=1, column=1), hint)

    def lower_agent(self, key: YScalar, node: YNode):
        name = key.text
        if not is_name(name):
            self.bag.error(codes.INVALID_NAME, f"'{name}' is not a valid agent name", key.span,
                           hint="use letters, digits and '_' (it is used in references like name.arg)")
        if not isinstance(node, YMap):
            self.bag.error(codes.WRONG_TYPE, f"agent '{name}' must be a mapping, found {kind_name(node)}", node.span,
                           hint="write the agent's keys (type:, description:, ...) indented under its name")
            return None
        kind = self.agent_type(name, key, node)
        if kind is None:
            return None
        self.check_agent_keys(name, node, kind)
        header = self.header(name, key, node, kind)
        return getattr(self, f"lower_{kind}")(name, node, header)

    def agent_type(self, name: str, key: YScalar, node: YMap) -> str | None:
        type_node = node.get("type")
        if type_node is None:
            self.bag.error(codes.MISSING_KEY, f"agent '{name}' has no 'type'", key.span,
                           hint="add type: kb agent | llm agent | flow agent | ensemble agent")
            return None
        if not isinstance(type_node, YScalar):
            self.bag.error(codes.WRONG_TYPE, f"'type' must be text, found {kind_name(type_node)}", type_node.span,
                           hint="type: kb agent | llm agent | flow agent | ensemble agent")
            return None
        kind = AGENT_TYPES.get(normalise_type(type_node.text))
        if kind is None:
            guess = did_you_mean(normalise_type(type_node.text), AGENT_TYPES)
            hint = (f"did you mean '{guess}'? " if guess else "") + "types: " + ", ".join(AGENT_TYPES)
            self.bag.error(codes.UNKNOWN_TYPE, f"unknown agent type '{type_node.text}'", type_node.span, hint)
        return kind

    def check_agent_keys(self, name: str, node: YMap, kind: str) -> None:
        valid = HEADER_KEYS + KIND_KEYS[kind]
        subflow_keys = {k.text for k, _ in keyed_subflows(node, kind)}
        for key, _ in node.pairs:
            if key.text in valid or key.text in subflow_keys:
                continue
            if kind == "knowledge" and key.text in KB_FORBIDDEN:
                self.bag.error(codes.KB_NOT_ATOMIC, f"kb agents are atomic: '{key.text}' is not allowed in kb agent '{name}'",
                               key.span, hint="kb agents only take sources:, file: and faq:; use an llm or flow agent to call others")
            elif key.text in ALL_BODY_KEYS:
                owners = [t for t, k in AGENT_TYPES.items() if key.text in KIND_KEYS[k]]
                self.bag.error(codes.UNKNOWN_KEY, f"'{key.text}' is not a key of a {self.type_text(kind)}", key.span,
                               hint=f"'{key.text}' belongs to: {', '.join(owners)}; valid keys here: {', '.join(valid)}")
            else:
                guess = did_you_mean(key.text, valid)
                hint = (f"did you mean '{guess}'? " if guess else "") + "valid keys: " + ", ".join(valid)
                if kind == "flow":
                    hint += " (or a subflow: a key holding a list of steps)"
                self.bag.error(codes.UNKNOWN_KEY, f"unknown key '{key.text}' in agent '{name}'", key.span, hint)

    @staticmethod
    def type_text(kind: str) -> str:
        return next(t for t, k in AGENT_TYPES.items() if k == kind)

    # -- the header every agent has ---------------------------------------------------------------

    def header(self, name: str, key: YScalar, node: YMap, kind: str) -> dict:
        return {
            "name": name,
            "description": self.description(name, key, node),
            "args": self.args(node.get("args"), name, kind),
            "fallback": self.policy(node.get("fallback"), "fallback"),
            "exit": self.policy(node.get("exit"), "exit"),
            "span": key.span,
        }

    def description(self, name: str, key: YScalar, node: YMap) -> str:
        value = node.get("description")
        if value is None:
            if name != "main":
                self.bag.warning(codes.MISSING_DESCRIPTION, f"agent '{name}' has no description", key.span,
                                 hint="add description: <what this agent does>; ensembles use it to pick an agent")
            return ""
        return self.text(value, "description") or ""

    def text(self, value: YNode, what: str) -> str | None:
        if isinstance(value, YScalar):
            if value.plain and value.value is None:
                return ""
            return strip_fullwidth_marker(value, self.bag)
        self.bag.error(codes.WRONG_TYPE, f"'{what}' must be text, found {kind_name(value)}", value.span,
                       hint="quote text that contains ': ' or start a block with |")
        return None

    def args(self, node: YNode | None, agent: str, kind: str) -> list[ArgDef]:
        if node is None or (isinstance(node, YScalar) and node.plain and node.value is None):
            return []
        if not isinstance(node, YSeq):
            self.bag.error(codes.WRONG_TYPE, f"'args' must be a list of names, found {kind_name(node)}", node.span,
                           hint="write each argument on its own line: - name")
            return []
        result: list[ArgDef] = []
        for item in node.items:
            arg = self.arg(item, kind)
            if arg is None:
                continue
            if any(a.name == arg.name for a in result):
                self.bag.error(codes.DUPLICATE_ARG, f"argument '{arg.name}' is listed twice", item.span,
                               hint="remove the duplicate line")
                continue
            result.append(arg)
        self.check_phrase_args(agent, result)
        return result

    def check_phrase_args(self, agent: str, args: list[ArgDef]) -> None:
        """Warn about llm-agent arguments written in words that `${...}` and expressions cannot name.

        "claim number" is referenced as claim_number; that fails when the reference form is not a
        name ("2nd address" -> 2nd_address) or when another argument has, or is referenced by, the
        same form.
        """
        for arg in args:
            if is_name(arg.name):
                continue
            form = reference_form(arg.name)
            rivals = [other.name for other in args if other is not arg
                      and (other.name == form or (not is_name(other.name) and reference_form(other.name) == form))]
            if is_name(form) and not rivals:
                continue
            if rivals:
                why = f"'{form}' would also name {', '.join(repr(r) for r in rivals)}"
                hint = "to reference it, rename one of them so their words joined by '_' differ"
            else:
                why = "its words joined by '_' do not make a name usable in ${...} or conditions"
                hint = "to reference it, start it with a letter (e.g. 'claim number' is referenced as claim_number)"
            self.bag.warning(codes.UNREFERENCEABLE_ARG,
                             f"argument '{arg.name}' of '{agent}' can only be filled by the model, not referenced: {why}",
                             arg.span, hint=hint)

    def arg(self, item: YNode, kind: str) -> ArgDef | None:
        description = ""
        if isinstance(item, YMap) and len(item.pairs) == 1:
            name_node, value = item.pairs[0]
            if isinstance(value, YScalar) and value.value is not None:
                description = value.text
        elif isinstance(item, YScalar):
            name_node = item
        else:
            self.bag.error(codes.WRONG_TYPE, f"an argument must be a name (or name: description), found {kind_name(item)}",
                           item.span, hint="write - name or - name: what it holds")
            return None
        name = name_node.text.strip()
        if kind == "reasoning" and is_phrase_name(name):
            # An llm agent's arguments are things to collect, described in words ("claim number"):
            # the model fills them by name, and references use their reference form (claim_number).
            return ArgDef(name=name, description=description, span=item.span)
        if not is_name(name):
            form = reference_form(name)
            hint = f"write '{form}'" if is_name(form) and form != name else "use letters, digits and '_'"
            if kind in ("flow", "router"):
                hint += " (flow and ensemble arguments are referenced by name; only llm agents' arguments may be written in words)"
            self.bag.error(codes.INVALID_NAME, f"'{name}' is not a valid argument name", name_node.span, hint=hint)
            return None
        return ArgDef(name=name, description=description, span=item.span)

    def policy(self, node: YNode | None, what: str) -> Policy | None:
        if node is None:
            return None
        text = self.text(node, what)
        if not text:
            return None
        stripped = text.strip()
        if self.scope.is_agent(stripped):
            return Policy(kind="agent", value=stripped)
        if stripped == "default":
            return Policy(kind="default")
        if is_name(stripped):
            guess = did_you_mean(stripped, list(self.scope.agents))
            if guess:
                self.bag.warning(codes.POLICY_TYPO, f"{what} '{stripped}' is not an agent, so it is read as an instruction",
                                 node.span, hint=f"did you mean '{guess}'?")
        return Policy(kind="text", value=text, inactivity=read_policy(text))

    # -- kb agents ---------------------------------------------------------------------------------

    def lower_knowledge(self, name: str, node: YMap, header: dict) -> KnowledgeAgent:
        sources = self.sources(node.get("sources"))
        file_node = node.get("file")
        if file_node is not None:
            if isinstance(file_node, YScalar) and file_node.text.strip():
                sources.append(self.source(file_node))
            else:
                self.bag.error(codes.WRONG_TYPE, f"'file' must be a path or URL, found {kind_name(file_node)}",
                               file_node.span, hint="write file: docs/policy.pdf")
        faq = self.faq(node.get("faq"))
        if not sources and not faq and "sources" not in node and "faq" not in node:
            self.bag.warning(codes.EMPTY_KB, f"kb agent '{name}' has no sources and no faq", header["span"],
                             hint="add sources: (files, folders or URLs) or faq: (q/a pairs)")
        return KnowledgeAgent(**header, sources=sources, faq=faq)

    def sources(self, node: YNode | None) -> list[KnowledgeSource]:
        if node is None or (isinstance(node, YScalar) and node.plain and node.value is None):
            return []
        if not isinstance(node, YSeq):
            self.bag.error(codes.WRONG_TYPE, f"'sources' must be a list, found {kind_name(node)}", node.span,
                           hint="write each file, folder or URL on its own line: - docs/policy.pdf")
            return []
        result = []
        for item in node.items:
            if isinstance(item, YScalar) and item.text.strip():
                result.append(self.source(item))
            else:
                self.bag.error(codes.WRONG_TYPE, f"a source must be a path or URL, found {kind_name(item)}", item.span,
                               hint="write - docs/policy.pdf or - https://example.com/help")
        return result

    def source(self, item: YScalar) -> KnowledgeSource:
        location = item.text.strip()
        if location.lower().startswith(URL_PREFIXES):
            return KnowledgeSource(location=location, kind="url", span=item.span)
        found = resolve_source_path(location, self.root)
        if found is None:
            self.bag.warning(codes.KB_SOURCE_NOT_FOUND, f"knowledge source '{location}' was not found", item.span,
                             hint=f"paths are relative to the program folder {self.root}; check the spelling or add the file")
            kind = "file" if Path(location).suffix else "directory"
            return KnowledgeSource(location=location, kind=kind, path=None, span=item.span)
        kind = "directory" if (self.root / found).is_dir() else "file"
        return KnowledgeSource(location=location, kind=kind, path=found, span=item.span)

    def faq(self, node: YNode | None) -> list[FaqEntry]:
        if node is None or (isinstance(node, YScalar) and node.plain and node.value is None):
            return []
        if not isinstance(node, YSeq):
            self.bag.error(codes.WRONG_TYPE, f"'faq' must be a list of q/a pairs, found {kind_name(node)}", node.span,
                           hint="write - q: <question> with a: <answer> on the next line")
            return []
        return [entry for entry in (self.faq_entry(item) for item in node.items) if entry is not None]

    def faq_entry(self, item: YNode) -> FaqEntry | None:
        if not isinstance(item, YMap):
            self.bag.error(codes.WRONG_TYPE, f"a faq item must be a mapping with q: and a:, found {kind_name(item)}", item.span,
                           hint="write - q: <question> with a: <answer> on the next line")
            return None
        for key in item.keys.values():
            if key.text not in ("q", "a"):
                guess = did_you_mean(key.text, ("q", "a"))
                self.bag.error(codes.UNKNOWN_KEY, f"unknown key '{key.text}' in a faq item", key.span,
                               hint=(f"did you mean '{guess}'? " if guess else "") + "valid keys: q, a")
        texts = {}
        for part in ("q", "a"):
            value = item.get(part)
            if value is None:
                self.bag.error(codes.MISSING_KEY, f"faq item has no '{part}'", item.span, hint="each faq item needs q: and a:")
                return None
            texts[part] = self.text(value, part)
        if texts["q"] is None or texts["a"] is None:
            return None
        return FaqEntry(q=texts["q"], a=texts["a"], span=item.span)

    # -- llm agents ----------------------------------------------------------------------------------

    def lower_reasoning(self, name: str, node: YMap, header: dict) -> ReasoningAgent:
        prompt = node.get("prompt")
        instructions = ""
        if prompt is None:
            self.bag.error(codes.MISSING_KEY, f"llm agent '{name}' has no 'prompt'", header["span"],
                           hint="add prompt: | followed by the agent's instructions")
        else:
            instructions = self.text(prompt, "prompt") or ""
        extra = {}
        if "max_iterations" in node:
            iterations = self.positive_int(node.get("max_iterations"), "max_iterations")
            if iterations is not None:
                extra["max_iterations"] = iterations
        return ReasoningAgent(**header, instructions=instructions, tools=self.uses(name, node.get("uses")),
                              setup=self.setup(name, node), **extra)

    def uses(self, agent: str, node: YNode | None) -> list[str]:
        if node is None or (isinstance(node, YScalar) and node.plain and node.value is None):
            return []
        if not isinstance(node, YSeq):
            self.bag.error(codes.WRONG_TYPE, f"'uses' must be a list of tool names, found {kind_name(node)}", node.span,
                           hint="write each tool on its own line: - tool_name")
            return []
        tools = []
        for item in node.items:
            if not isinstance(item, YScalar) or not item.text.strip():
                self.bag.error(codes.WRONG_TYPE, f"a uses entry must be a tool name, found {kind_name(item)}", item.span,
                               hint="write - tool_name")
                continue
            tool = item.text.strip()
            if self.scope.is_agent(tool) and tool not in self.catalog.tools:
                self.bag.error(codes.UNKNOWN_TOOL, f"'{tool}' is an agent, not a tool", item.span,
                               hint="uses: lists Python functions; let an ensemble route to agents, or call: it from a flow")
            elif tool not in self.catalog.tools:
                self.scope.report_undefined(codes.UNKNOWN_TOOL, "tool", tool, agent, item.span)
            tools.append(tool)
        return tools

    def positive_int(self, node: YNode | None, what: str) -> int | None:
        number = node.value if isinstance(node, YScalar) else None
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            self.bag.error(codes.WRONG_TYPE, f"'{what}' must be a positive whole number", node.span if node else None,
                           hint=f"for example {what}: 8")
            return None
        return number

    def setup(self, name: str, node: YMap) -> StepGraph | None:
        if "steps" not in node:
            return None
        return StepLowering(name, self.scope, self.bag).lower(node.get("steps"), node.keys["steps"], [])

    # -- flow agents -----------------------------------------------------------------------------------

    def lower_flow(self, name: str, node: YMap, header: dict) -> FlowAgent:
        subflows = keyed_subflows(node, "flow")
        steps_key = node.keys.get("steps")
        if steps_key is None:
            guess = did_you_mean("steps", [k.text for k, _ in subflows])
            hint = f"'{guess}' looks like a misspelt steps:" if guess else "add steps: with the agent's steps"
            self.bag.error(codes.MISSING_KEY, f"flow agent '{name}' has no 'steps'", header["span"], hint)
        graph = StepLowering(name, self.scope, self.bag).lower(node.get("steps"), steps_key, subflows)
        return FlowAgent(**header, graph=graph)

    # -- ensemble agents ---------------------------------------------------------------------------------

    def lower_router(self, name: str, node: YMap, header: dict) -> RouterAgent:
        contains = node.get("contains")
        members: list[RouterMember] = []
        if contains is None:
            self.bag.error(codes.MISSING_KEY, f"ensemble agent '{name}' has no 'contains'", header["span"],
                           hint="add contains: with the agents it chooses between")
        elif not isinstance(contains, YSeq) or not contains.items:
            self.bag.error(codes.WRONG_TYPE, f"'contains' must be a list of agent names, found {kind_name(contains)}",
                           contains.span, hint="write each agent on its own line: - agent_name")
        else:
            members = self.members(name, contains)
        prompt = node.get("prompt")
        instructions = self.text(prompt, "prompt") if prompt is not None else None
        return RouterAgent(**header, members=members, instructions=instructions, setup=self.setup(name, node),
                           strategy=self.strategy(node.get("strategy")),
                           guardrails=self.guardrails(name, node.get("guardrails"), members))

    def strategy(self, node: YNode | None) -> str | None:
        """`strategy:` of an ensemble: how it orchestrates its members (ORCHESTRATION_STRATEGIES)."""
        if node is None:
            return None
        text = node.text.strip().lower() if isinstance(node, YScalar) else ""
        if text in ORCHESTRATION_STRATEGIES:
            return text
        guess = did_you_mean(text, list(ORCHESTRATION_STRATEGIES)) if text else None
        self.bag.error(codes.BAD_STRATEGY, f"unknown orchestration strategy '{text or kind_name(node)}'", node.span,
                       hint=(f"did you mean '{guess}'? " if guess else "") + "strategies: "
                       + ", ".join(ORCHESTRATION_STRATEGIES))
        return None

    def guardrails(self, router: str, node: YNode | None, members: list[RouterMember]) -> list[str]:
        """`guardrails:` of an ensemble: the llm agents that check each user message first."""
        if node is None:
            return []
        items = node.items if isinstance(node, YSeq) else [node]
        out: list[str] = []
        for item in items:
            name = item.text.strip() if isinstance(item, YScalar) else ""
            agent = self.document.get(name) if name else None
            kind = agent_kind(agent) if isinstance(agent, YMap) else None
            if not name or not self.scope.is_agent(name):
                guess = did_you_mean(name, list(self.scope.agents)) if name else None
                self.bag.error(codes.BAD_GUARDRAIL, f"guardrail '{name or kind_name(item)}' is not an agent", item.span,
                               hint=f"did you mean '{guess}'?" if guess else "name an llm agent that checks messages")
            elif kind != "reasoning":
                self.bag.error(codes.BAD_GUARDRAIL, f"guardrail '{name}' must be an llm agent", item.span,
                               hint="write the check as the prompt of an llm agent and name that agent here")
            elif any(m.agent == name for m in members) or name == router:
                self.bag.error(codes.BAD_GUARDRAIL, f"'{name}' cannot be both a member and a guardrail of '{router}'",
                               item.span, hint="remove it from contains: or from guardrails:")
            elif name not in out:
                out.append(name)
        return out

    def members(self, router: str, contains: YSeq) -> list[RouterMember]:
        members: list[RouterMember] = []
        listed: set[str] = set()
        for item in contains.items:
            member = self.member(router, item)
            if member is None:
                continue
            if member.agent in listed:
                self.bag.warning(codes.DUPLICATE_MEMBER, f"agent '{member.agent}' is listed twice in contains", item.span,
                                 hint="remove the duplicate (merge their args: if both have some)")
                continue
            listed.add(member.agent)
            members.append(member)
        return members

    def member(self, router: str, item: YNode) -> RouterMember | None:
        if isinstance(item, YScalar) and item.text.strip():
            name_node, options = item, None
        elif isinstance(item, YMap) and len(item.pairs) == 1:
            name_node, options = item.pairs[0]
        else:
            self.bag.error(codes.WRONG_TYPE, "a contains item must be an agent name or 'name: {args: ...}'", item.span,
                           hint="write - agent_name, or - agent_name: with args: under it")
            return None
        name = name_node.text.strip()
        if not self.scope.is_agent(name):
            guess = did_you_mean(name, list(self.scope.agents))
            hint = f"did you mean '{guess}'?" if guess else f"agents: {', '.join(self.scope.agents)}"
            self.bag.error(codes.UNDEFINED_MEMBER, f"ensemble member '{name}' is not an agent", name_node.span, hint)
            return None
        if name == router:
            self.bag.error(codes.UNDEFINED_MEMBER, f"ensemble '{router}' cannot contain itself", name_node.span,
                           hint="list the agents it chooses between")
            return None
        return RouterMember(agent=name, bindings=self.bindings(router, name, options), span=item.span)

    def bindings(self, router: str, member: str, options: YNode | None) -> list[ArgBinding]:
        if options is None or (isinstance(options, YScalar) and options.plain and options.value is None):
            return []
        if not isinstance(options, YMap):
            self.bag.error(codes.WRONG_TYPE, f"member options must be a mapping with args:, found {kind_name(options)}",
                           options.span, hint="write args: with member_arg: ensemble_arg lines under it")
            return []
        for key in options.keys.values():
            if key.text != "args":
                guess = did_you_mean(key.text, ("args",))
                self.bag.error(codes.UNKNOWN_KEY, f"unknown key '{key.text}' in contains item '{member}'", key.span,
                               hint=(f"did you mean '{guess}'? " if guess else "") + "valid keys: args")
        pairs = name_value_pairs(options.get("args"), self.bag)
        return [b for b in (self.binding(router, member, k, v) for k, v in pairs) if b is not None]

    def binding(self, router: str, member: str, key: YScalar, value: YNode) -> ArgBinding | None:
        if not isinstance(value, YScalar) or not value.text.strip():
            self.bag.error(codes.WRONG_TYPE, "a binding must name an argument of the ensemble (optionally 'ref name')",
                           value.span, hint="write member_arg: ensemble_arg or member_arg: ref ensemble_arg")
            return None
        words = value.text.split()
        two_way = len(words) == 2 and words[0] == "ref"
        router_arg = words[-1] if two_way or len(words) == 1 else value.text.strip()
        ok = True
        router_span = inner_span(value, value.text.find(router_arg) + 1)
        resolved = []
        for owner, arg, span in ((member, key.text.strip(), key.span), (router, router_arg, router_span)):
            written = self.scope.written_arg(owner, arg)
            resolved.append(written)
            if written is None:
                ok = False
                args = self.scope.args_of(owner)
                guess = did_you_mean(arg, args)
                hint = f"did you mean '{guess}'?" if guess else f"add '{arg}' to the args: of '{owner}'"
                self.bag.error(codes.UNDEFINED_ARGUMENT, f"'{arg}' is not an argument of agent '{owner}'", span, hint)
        return ArgBinding(member_arg=resolved[0], router_arg=resolved[1], two_way=two_way) if ok else None


def resolve_source_path(location: str, root: Path) -> str | None:
    """Find a KB path: beside the program, then inside it after dropping leading folders, then from the cwd.

    MICA programs write paths relative to MICA's repository (`./examples/retail_banking/docs` inside
    retail_banking/ means `docs/`). Places inside the program folder win over the current directory,
    so a program never picks up a same-named folder from wherever Frontdesk happens to run.
    Returns the path relative to `root` (POSIX separators), or None when nothing exists; a path that
    leads outside `root` is then an error unless the operator grants its folder (FD060, frontdesk.access).
    """
    written = Path(os.path.expanduser(location))
    if written.is_absolute():
        candidates = [written]
    else:
        parts = [p for p in written.parts if p not in (".", "")]
        candidates = [root / written] + [root.joinpath(*parts[k:]) for k in range(1, len(parts))]
        candidates.append(Path.cwd() / written)
    for candidate in candidates:
        try:
            if candidate.exists():
                return Path(os.path.relpath(candidate.resolve(), root.resolve())).as_posix()
        except (OSError, ValueError):
            continue
    return None
