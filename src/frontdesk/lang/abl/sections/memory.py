"""Compiler of MEMORY: session variables, persistent paths, remember triggers (STORE ... -> path) and recall rules at lifecycle events."""

from __future__ import annotations

import re

from frontdesk.diagnostics import did_you_mean
from frontdesk.ir.behaviour import (
    AgentRules,
    MemoryStore,
    PersistentPath,
    RecallRule,
    RememberRule,
    SessionVariable,
)
from frontdesk.ir.expr import MEMORY_ROOTS

from .. import codes
from ..context import SectionContext
from ..lineparts import top_level
from ..outline import Node
from ._common import (
    NAME,
    PATH,
    condition,
    expression,
    flatten,
    key,
    names_with_offsets,
    node_condition,
    span_at,
)
from .gather import check_variable_name

RESETS = ("per_session", "per_activation", "per_step", "never")
SCOPES = ("user", "project", "execution_tree")
ACCESSES = ("read", "write", "readwrite")
RECALL_ACTIONS = ("inject_context", "load_memory", "prompt_llm")
# persistent roots and the scope each stands for (abl-specification 3.7.2)
ROOT_SCOPES = MEMORY_ROOTS
# legacy recall event names and their canonical events (abl-specification 8.10)
LEGACY_EVENTS = {
    "start": "session:start", "session_start": "session:start",
    "end": "session:end", "session_end": "session:end",
    "agent_enter": "agent:*:after",
}
_ID = r"[A-Za-z_][A-Za-z0-9_]*"
CANONICAL_EVENT = re.compile(
    rf"session:(?:start|end)|agent:(?:\*|{_ID}):(?:before|after)|tool:(?:\*|{_ID}):after"
    rf"|entity:{_ID}:extracted|step:(?:enter|exit):{_ID}")
CANONICAL_FORMS = ("session:start, session:end, agent:<name>:before, agent:<name>:after, tool:<name>:after, "
                   "entity:<field>:extracted, step:enter:<step>, step:exit:<step>")


def compile_memory(node: Node, ctx: SectionContext, rules: AgentRules) -> None:
    """MEMORY's session, persistent, remember and recall parts into `rules.memory`; fills
    `ctx.memory_paths` (persistent paths) and `ctx.fields` (session variables)."""
    parts: dict[str, Node] = {}
    for child in node.children:
        word = key(child)
        if child.key is None or child.item:
            ctx.error(codes.WRONG_SHAPE, "MEMORY holds session:, persistent:, remember: and recall:", child)
        elif word in ("SESSION", "PERSISTENT", "REMEMBER", "RECALL"):
            if word in parts:
                ctx.error(codes.DUPLICATE_SECTION, f"MEMORY has {child.key} twice", child)
                continue
            parts[word] = child
        else:
            ctx.unknown_key(child, ["session", "persistent", "remember", "recall"], "MEMORY")
    if "SESSION" in parts:
        _session(parts["SESSION"], ctx, rules)
    if "PERSISTENT" in parts:
        _persistent(parts["PERSISTENT"], ctx, rules)
    if "REMEMBER" in parts:
        _remember(parts["REMEMBER"], ctx, rules)
    if "RECALL" in parts:
        _recall(parts["RECALL"], ctx, rules)


# ---- session ----------------------------------------------------------------------------------------


def _session(node: Node, ctx: SectionContext, rules: AgentRules) -> None:
    seen = {v.name for v in rules.memory.session}

    def add(name: str, where: Node, props: list[Node], initial_node: Node | None = None) -> None:
        if not NAME.fullmatch(name):
            ctx.error(codes.BAD_NAME, f"'{name}' is not a variable name", where, "a name is letters, digits and _")
            return
        if name in seen:
            ctx.error(codes.DUPLICATE_NAME, f"session declares {name} twice", where)
            return
        check_variable_name(name, where, ctx)
        variable = SessionVariable(name=name)
        if initial_node is not None and initial_node.value is not None:
            variable.initial = ctx.data(initial_node)
        for prop in props:
            word = key(prop)
            if word == "INITIAL":
                variable.initial = ctx.data(prop)
            elif word == "RESET":
                variable.reset = ctx.choice(prop, RESETS, "per_session")  # type: ignore[assignment]
            elif word == "DESCRIPTION":
                continue
            elif prop.key is None or prop.item:
                ctx.error(codes.WRONG_SHAPE, f"the session variable {name} holds '{prop.text}'", prop,
                          "write INITIAL: <value> and RESET: <when> under it")
            else:
                ctx.unknown_key(prop, ["INITIAL", "RESET"], "a session variable")
        seen.add(name)
        rules.memory.session.append(variable)
        ctx.fields.add(name)

    if node.value is not None and not node.children:
        for name, _at in names_with_offsets(node.text):
            add(name, node, [])
    for child in node.children:
        if child.item:
            if not child.children:
                continue
            first = child.children[0]
            if first.key is None:
                add(first.text.strip(), first, flatten(child))
            else:
                add(first.key, first, flatten(child), first)
        elif child.key is not None:
            add(child.key, child, child.children, child)
        else:
            for name, _at in names_with_offsets(child.text):
                add(name, child, [])


# ---- persistent -------------------------------------------------------------------------------------


def _persistent(node: Node, ctx: SectionContext, rules: AgentRules) -> None:
    found: dict[str, PersistentPath] = {p.path: p for p in rules.memory.persistent}

    def add(path: str, where: Node, scope_node: Node | None = None, access: str = "readwrite") -> None:
        if not PATH.fullmatch(path) or "*" in path:
            ctx.error(codes.BAD_NAME, f"'{path}' is not a memory path", where,
                      "write <namespace>.<field>, e.g. user.preferences")
            return
        root = path.split(".", 1)[0]
        scope = ROOT_SCOPES.get(root, "user")
        if scope_node is not None:
            chosen = ctx.choice(scope_node, SCOPES)
            if chosen is not None:
                if root in ROOT_SCOPES and chosen != ROOT_SCOPES[root]:
                    ctx.error(codes.BAD_VALUE, f"{path} is a {ROOT_SCOPES[root]} path; its SCOPE cannot be {chosen}",
                              scope_node.value_span(), f"write SCOPE: {ROOT_SCOPES[root]}, or move the path")
                else:
                    scope = chosen
        if path in found:
            ctx.error(codes.DUPLICATE_NAME, f"persistent declares {path} twice", where)
            return
        entry = PersistentPath(path=path, scope=scope, access=access)  # type: ignore[arg-type]
        found[path] = entry
        rules.memory.persistent.append(entry)
        ctx.memory_paths.add(path)

    reads: dict[str, Node] = {}
    writes: dict[str, Node] = {}
    if node.value is not None and not node.children:
        for path, _at in names_with_offsets(node.text):
            add(path, node)
    for child in node.children:
        word = key(child)
        if child.item:
            if not child.children:
                continue
            first = child.children[0]
            if first.key is None:
                add(first.text.strip(), first)
                for extra in flatten(child):
                    ctx.error(codes.WRONG_SHAPE, "a plain persistent path holds nothing; write - PATH: with SCOPE and "
                              "ACCESS to give them", extra)
                continue
            props = [first, *flatten(child)]
            by_key: dict[str, Node] = {}
            for prop in props:
                if key(prop) in ("PATH", "SCOPE", "ACCESS", "DESCRIPTION"):
                    by_key[key(prop)] = prop
                elif prop.key is None or prop.item:
                    ctx.error(codes.WRONG_SHAPE, f"a persistent path holds '{prop.text}'", prop)
                else:
                    ctx.unknown_key(prop, ["PATH", "SCOPE", "ACCESS"], "a persistent path")
            path_node = by_key.get("PATH")
            if path_node is None or not ctx.text(path_node):
                ctx.error(codes.MISSING_KEY, "a persistent entry needs PATH", first, "write - PATH: user.<field>")
                continue
            access = ctx.choice(by_key.get("ACCESS"), ACCESSES, "readwrite") or "readwrite"
            add(ctx.text(path_node), path_node, by_key.get("SCOPE"), access)
        elif word in ("READS", "WRITES"):
            target = reads if word == "READS" else writes
            for path in ctx.names_list(child):
                target.setdefault(str(path), child)
        elif child.key is None:
            add(child.text.strip(), child)
        else:
            ctx.unknown_key(child, ["READS", "WRITES"], "persistent")
    for path, where in reads.items():
        add(path, where, access="readwrite" if path in writes else "read")
    for path, where in writes.items():
        if path not in reads:
            add(path, where, access="write")


# ---- remember ---------------------------------------------------------------------------------------


def parse_store(node: Node, ctx: SectionContext, rules: AgentRules | None = None) -> MemoryStore | None:
    """`STORE: <value> -> <path>`: the value (a name, an expression or `{a, b: c}`) and the persistent
    path it is written to. With `rules`, a write to a path declared read-only is an error."""
    text = node.text
    offset = 1 if node.quoted else 0
    arrow = _last_arrow(text)
    if arrow < 0:
        ctx.error(codes.WRONG_SHAPE, "STORE is written <value> -> <memory path>", node,
                  "e.g. STORE: {destination, price} -> user.past_bookings")
        return None
    value_text, target = text[:arrow].strip(), text[arrow + 2:].strip()
    at = offset + len(text[:arrow]) - len(text[:arrow].lstrip())
    target_at = offset + arrow + 2 + len(text[arrow + 2:]) - len(text[arrow + 2:].lstrip())
    if not value_text:
        ctx.error(codes.MISSING_KEY, "STORE has no value before ->", span_at(node, offset))
        return None
    if not PATH.fullmatch(target) or "*" in target:
        ctx.error(codes.BAD_NAME, f"'{target}' is not a memory path", span_at(node, target_at),
                  "write <namespace>.<field>, e.g. user.past_bookings")
        return None
    if rules is not None:
        declared = next((p for p in rules.memory.persistent if p.path == target), None)
        if declared is not None and declared.access == "read":
            ctx.error(codes.BAD_VALUE, f"{target} is declared read-only (ACCESS: read)", span_at(node, target_at),
                      "declare it with ACCESS: readwrite to store to it")
    if target.split(".", 1)[0] in ROOT_SCOPES:
        ctx.memory_paths.add(target)
    return MemoryStore(value=expression(ctx, value_text, node, at), target=target)


def _last_arrow(text: str) -> int:
    """Where the last `->` outside quotes and brackets starts; -1 when there is none."""
    return max((i for i, ch in top_level(text) if ch == "-" and text[i + 1:i + 2] == ">"), default=-1)


def _remember(node: Node, ctx: SectionContext, rules: AgentRules) -> None:
    for child in node.children:
        if not child.item:
            ctx.error(codes.WRONG_SHAPE, "remember holds - WHEN: <condition> items with STORE: under them", child)
            continue
        when = None
        store: MemoryStore | None = None
        store_seen = False
        parts = [child.children[0], *flatten(child)] if child.children else []
        for part in parts:
            word = key(part)
            if word == "WHEN":
                when = node_condition(ctx, part)
            elif part.key is None and re.match(r"WHEN\s", part.text, re.IGNORECASE):
                text = part.text[4:]
                lead = len(text) - len(text.lstrip())
                when = condition(ctx, text.strip(), part, 4 + lead)
            elif word == "STORE":
                store_seen = True
                store = parse_store(part, ctx, rules)
            elif part.key is None or part.item:
                ctx.error(codes.WRONG_SHAPE, f"a remember trigger holds '{part.text}'", part,
                          "write - WHEN: <condition> and STORE: <value> -> <path>")
            else:
                ctx.unknown_key(part, ["WHEN", "STORE"], "a remember trigger")
        if when is None:
            ctx.error(codes.MISSING_KEY, "a remember trigger needs WHEN", child, "write - WHEN: <condition>")
            continue
        if store is None:
            if not store_seen:
                ctx.error(codes.MISSING_KEY, "a remember trigger needs STORE", child,
                          "write STORE: <value> -> <memory path>")
            continue
        rules.memory.remember.append(RememberRule(when=when, value=store.value, target=store.target, span=child.span))


# ---- recall -----------------------------------------------------------------------------------------


def normalize_event(text: str, where: Node, ctx: SectionContext, legacy_key: bool = False) -> str | None:
    """The canonical recall event of `text` (ABL108 for a legacy name, ABL026 for an unknown one)."""
    name = text.strip()
    lowered = name.lower()
    if legacy_key or lowered in LEGACY_EVENTS:
        canonical = LEGACY_EVENTS.get(lowered)
        written = f"ON_{name.upper()}:" if legacy_key else name
        if canonical is None:
            ctx.warning(codes.DEPRECATED, f"{written} is a deprecated recall event with no canonical equivalent", where,
                        f"write ON: <event>, one of {CANONICAL_FORMS}")
            return lowered
        ctx.warning(codes.DEPRECATED, f"{written} is deprecated; it is read as ON: {canonical}",
                    where if legacy_key else where.value_span(),
                    f"write ON: {canonical}")
        return canonical
    if CANONICAL_EVENT.fullmatch(name):
        parts = name.split(":")
        if parts[0] == "tool" and parts[1] != "*":
            known = ctx.tools | ctx.names.tools
            if known and parts[1] not in known:
                guess = did_you_mean(parts[1], sorted(known))
                ctx.error(codes.UNKNOWN_TOOL, f"the recall event names the tool {parts[1]}, which is not declared",
                          where.value_span(), f"did you mean {guess}?" if guess else None)
        if parts[0] == "agent" and parts[1] != "*" and ctx.names.agents and parts[1] not in ctx.names.agents:
            ctx.error(codes.UNKNOWN_AGENT, f"the recall event names {parts[1]}, which is not an agent of the project",
                      where.value_span())
        return name
    ctx.error(codes.BAD_VALUE, f"'{name}' is not a recall event", where.value_span(), f"events: {CANONICAL_FORMS}")
    return None


def _recall(node: Node, ctx: SectionContext, rules: AgentRules) -> None:
    for child in node.children:
        if child.item:
            parts = [child.children[0], *flatten(child)] if child.children else []
        elif child.key is not None and key(child).startswith("ON_"):
            parts = [child]
        else:
            ctx.error(codes.WRONG_SHAPE, "recall holds - ON: <event> items with ACTION: under them", child)
            continue
        rule = _recall_rule(child, parts, ctx)
        if rule is not None:
            rules.memory.recall.append(rule)


def _recall_rule(item: Node, parts: list[Node], ctx: SectionContext) -> RecallRule | None:
    event: str | None = None
    action_node: Node | None = None
    paths: list[tuple[str, Node]] = []
    rule = RecallRule(on="", span=item.span)
    failed = False
    for part in parts:
        word = key(part)
        if word == "ON":
            event = normalize_event(ctx.text(part), part, ctx)
            failed = failed or event is None
        elif word.startswith("ON_") and part.key is not None:
            event = normalize_event(part.key[3:], part, ctx, legacy_key=True)
            if part.value:
                rule.instruction = ctx.text(part)
        elif word == "ACTION":
            action_node = part
        elif word in ("PATHS", "RETRIEVE"):
            paths += [(str(p), part) for p in ctx.names_list(part)]
        elif word == "INSTRUCTION":
            rule.instruction = ctx.text(part)
        elif word == "DOMAIN":
            rule.domain = ctx.text(part)
        elif part.key is None or part.item:
            ctx.error(codes.WRONG_SHAPE, f"a recall rule holds '{part.text}'", part)
        else:
            ctx.unknown_key(part, ["ON", "ACTION", "PATHS", "INSTRUCTION", "DOMAIN"], "a recall rule")
    if event is None:
        if not failed:
            ctx.error(codes.MISSING_KEY, "a recall rule needs ON: <event>", item, "e.g. ON: session:start")
        return None
    rule.on = event
    for path, where in paths:
        if not PATH.fullmatch(path) or "*" in path:
            ctx.error(codes.BAD_NAME, f"'{path}' is not a memory path", where)
        else:
            rule.paths.append(path)
    if action_node is not None:
        rule.action = ctx.choice(action_node, RECALL_ACTIONS, "inject_context")  # type: ignore[assignment]
    elif rule.instruction and not rule.paths and not rule.domain:
        rule.action = "prompt_llm"
    if rule.action == "prompt_llm" and not rule.instruction:
        ctx.error(codes.MISSING_KEY, "ACTION: prompt_llm needs INSTRUCTION", action_node or item,
                  "add INSTRUCTION: \"<what the model should do with the memory>\"")
    elif rule.action != "prompt_llm" and not rule.paths and not rule.domain:
        ctx.error(codes.MISSING_KEY, f"ACTION: {rule.action} needs PATHS or DOMAIN", action_node or item,
                  "add PATHS: [user.<field>] or DOMAIN: \"<name>\"")
    return rule
