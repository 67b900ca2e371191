"""Compilers of CONSTRAINTS, COMPLETE and ON_ERROR, and the reader of the actions they take (ON_FAIL, THEN, RESPOND, ESCALATE, ...)."""

from __future__ import annotations

import re

from frontdesk.diagnostics import Span, did_you_mean
from frontdesk.ir.behaviour import (
    Action,
    AgentRules,
    CompletionRule,
    Constraint,
    ErrorHandler,
)
from frontdesk.ir.expr import Condition, Expr, Template

from .. import codes
from ..context import SectionContext
from ..lineparts import split_top, top_level
from ..outline import Node
from ._common import (
    NAME,
    condition,
    expression,
    find_word,
    flatten,
    key,
    names_with_offsets,
    node_condition,
    span_at,
    template_ref,
    unquote,
    value_of,
)
from .gather import check_variable_name
from .memory import parse_store

CONSTRAINT_KINDS = ("REQUIRE", "WARN", "LIMIT", "RESTRICT")
PRIORITIES = ("low", "medium", "high", "critical")
# the error types of ON_ERROR (abl-specification 3.13); a tool's name is one too
ERROR_TYPES = ("tool_timeout", "tool_error", "invalid_input", "validation_error", "api_error", "unknown_error",
               "default", "timeout", "llm_error")
DIRECTIVES = ("RESPOND", "TEMPLATE", "COLLECT", "RETRY", "MAX_RETRIES", "GOTO", "THEN", "SET", "CLEAR", "STORE",
              "HANDOFF", "DELEGATE", "ESCALATE", "REASON", "PRIORITY", "BLOCK", "LOG", "ASK_USER")
INLINE_WORDS = ("ESCALATE", "HANDOFF", "DELEGATE", "BLOCK", "RETRY", "CONTINUE", "COMPLETE", "GOTO", "ASK_USER")
_SET_LINE = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*=(?!=)\s*(.*)", re.DOTALL)
_LEAD_WORD = re.compile(r"([A-Za-z_]+)\b\s*(.*)", re.DOTALL)
_ESCALATE_REST = re.compile(r"(?:with\s+)?(?:REASON\s*:\s*)?(.*)", re.IGNORECASE | re.DOTALL)
_PRIORITY = re.compile(r"PRIORITY\s*:\s*(\w+)", re.IGNORECASE)


# ---- actions ----------------------------------------------------------------------------------------


def parse_action(source: Node | str, ctx: SectionContext) -> Action:
    """An action as ON_FAIL (and THEN, ON_ERROR, COMPLETE, hooks) write it: a text template (quoted or a
    `|` block), `TEMPLATE(name)`, `ESCALATE`, `ESCALATE "reason"`, `ESCALATE with REASON: "..."`,
    `HANDOFF <agent>`, `DELEGATE -> <agent>`, `BLOCK`, `RETRY`, `CONTINUE`, `COMPLETE`, `GOTO <step>`,
    `ASK_USER {a, b}`, or a block of directives (RESPOND, COLLECT, RETRY, GOTO, THEN, SET, CLEAR, STORE,
    HANDOFF, DELEGATE, ESCALATE, BLOCK, LOG, ...)."""
    action = Action()
    if isinstance(source, str):
        _inline(source, None, 0, action, ctx)
        return action
    node = source
    if node.value is not None and node.text.strip():
        if node.quoted or node.block:
            action.respond = ctx.template(node.text, node)
        else:
            _inline(node.text, node, 0, action, ctx)
    elif node.value is not None and node.quoted:
        action.respond = Template(source="", parts=[])
    if node.children:
        apply_directives(node.children, action, ctx)
    return action


def apply_directives(nodes: list[Node], action: Action, ctx: SectionContext) -> None:
    """Add what a block of directives says to `action` (in the order written)."""
    for node in nodes:
        word = key(node)
        if node.item:
            ctx.error(codes.WRONG_SHAPE, "an action holds directives (RESPOND:, THEN:, ...), not list items", node)
        elif node.key is None:
            _inline(node.text, node, 1 if node.quoted else 0, action, ctx, quoted=node.quoted)
        elif word == "RESPOND":
            _respond(node, action, ctx)
        elif word == "TEMPLATE":
            action.template = ctx.text(node) or None
        elif word == "COLLECT":
            action.collect += ctx.names_list(node)
        elif word == "RETRY":
            _retry(node, action, ctx)
        elif word == "MAX_RETRIES":
            count = ctx.number(node)
            if count is not None:
                action.max_retries = int(count)
        elif word == "GOTO":
            action.goto = _step_name(node, ctx)
        elif word == "THEN":
            _then(node, action, ctx)
        elif word == "SET":
            action.set += parse_set(node, ctx)
        elif word == "CLEAR":
            action.clear += ctx.names_list(node)
        elif word == "STORE":
            store = parse_store(node, ctx)
            if store is not None:
                action.store.append(store)
        elif word in ("HANDOFF", "DELEGATE"):
            target = _agent(ctx.text(node), node, ctx, word)
            if word == "HANDOFF":
                action.handoff = target
            else:
                action.delegate = target
        elif word == "ESCALATE":
            _escalate_entry(node, action, ctx)
        elif word == "REASON":
            action.escalate_reason = ctx.text(node)
        elif word == "PRIORITY":
            action.escalate_priority = ctx.choice(node, PRIORITIES, "") or ""  # type: ignore[assignment]
        elif word == "BLOCK":
            action.block = ctx.boolean(node, True)
        elif word == "LOG":  # {a, b}, [a, b], - a items, or (.agent.yaml) a mapping of the names
            action.log += [n for n, _ in names_with_offsets(node.text)] if node.value else ctx.names_list(node)
            action.log += [c.key for c in node.entries() if c.key and c.value is None and not c.children]
        elif word == "ASK_USER":
            action.ask_user += ctx.names_list(node)
        else:
            ctx.unknown_key(node, list(DIRECTIVES), "an action")


def _respond(node: Node, action: Action, ctx: SectionContext) -> None:
    text = node.text
    name = None if node.quoted or node.block else template_ref(text)
    if name is not None:
        action.template = name
    else:
        action.respond = ctx.template(text, node)


def _retry(node: Node, action: Action, ctx: SectionContext) -> None:
    word = ctx.text(node).lower()
    if word in ("true", "yes", "false", "no"):
        action.retry = word in ("true", "yes")
        return
    count = ctx.number(node)
    if count is None:
        return
    if count < 0 or count != int(count):
        ctx.error(codes.BAD_VALUE, "RETRY is true, false or a number of retries", node.value_span())
        return
    action.retry = count > 0
    action.max_retries = int(count)


def _step_name(node: Node, ctx: SectionContext) -> str | None:
    name = ctx.text(node)
    if name.upper() == "COMPLETE":
        return "COMPLETE"
    if not NAME.fullmatch(name):
        ctx.error(codes.BAD_NAME, f"'{name}' is not a step name", node.value_span())
        return None
    return name


def _then(node: Node, action: Action, ctx: SectionContext) -> None:
    """THEN: continue | retry | COMPLETE | <step> | an inline action (ESCALATE ..., DELEGATE -> X, ...)."""
    text = ctx.text(node)
    word = text.lower()
    if word == "continue":
        return
    if word == "retry":
        action.retry = True
        return
    if word == "complete":
        action.goto = "COMPLETE"
        return
    lead = _LEAD_WORD.fullmatch(text)
    if lead and lead.group(1).upper() in INLINE_WORDS and (lead.group(1).isupper() or ctx.fmt == "yaml"):
        _inline(text, node, 1 if node.quoted else 0, action, ctx)
        return
    if NAME.fullmatch(text):
        action.goto = text
        return
    ctx.error(codes.BAD_VALUE, f"THEN: '{text}' is neither a step nor an action", node.value_span(),
              "write THEN: <step>, continue, retry, COMPLETE, ESCALATE, or DELEGATE -> <agent>")


def _escalate_entry(node: Node, action: Action, ctx: SectionContext) -> None:
    """`ESCALATE: true`, `ESCALATE: "reason"`, `ESCALATE: PRIORITY: high`, or REASON / PRIORITY under it."""
    text = node.text.strip()
    action.escalate = True
    if node.quoted:
        action.escalate_reason = text
    elif text:
        priority = _PRIORITY.fullmatch(text)
        if priority:
            _priority(priority.group(1), span_at(node, priority.start(1)), action, ctx)
        elif text.lower() in ("true", "yes", "false", "no"):
            action.escalate = text.lower() in ("true", "yes")
        else:
            action.escalate_reason = unquote(text)[0]
    for child in node.children:
        if key(child) == "REASON":
            action.escalate_reason = ctx.text(child)
        elif key(child) == "PRIORITY":
            _priority(ctx.text(child), child.value_span(), action, ctx)
        else:
            ctx.unknown_key(child, ["REASON", "PRIORITY"], "ESCALATE") if child.key else ctx.error(
                codes.WRONG_SHAPE, "ESCALATE holds REASON: and PRIORITY:", child)


def _priority(word: str, where: Span, action: Action, ctx: SectionContext) -> None:
    if word.lower() in PRIORITIES:
        action.escalate_priority = word.lower()  # type: ignore[assignment]
    else:
        ctx.error(codes.BAD_VALUE, f"PRIORITY must be one of {', '.join(PRIORITIES)}, not '{word}'", where)


def _inline(text: str, node: Node | None, offset: int, action: Action, ctx: SectionContext,
            quoted: bool = False) -> None:
    """One inline action (see parse_action); any other text is a message template."""
    stripped = text.strip()
    lead_at = offset + len(text) - len(text.lstrip())
    name = None if quoted else template_ref(stripped)
    if name is not None:
        action.template = name
        return
    found = None if quoted else _LEAD_WORD.fullmatch(stripped)
    word = found.group(1) if found else ""
    if found and (word.isupper() or ctx.fmt == "yaml") and word.upper() in INLINE_WORDS:
        rest = found.group(2).strip()
        rest_at = lead_at + found.start(2)
        upper = word.upper()
        if upper == "ESCALATE":
            action.escalate = True
            priority = _PRIORITY.search(rest)
            if priority:
                _priority(priority.group(1), _where(node, rest_at + priority.start(1)), action, ctx)
                rest = rest[:priority.start()].strip()
            reason = _ESCALATE_REST.fullmatch(rest)
            action.escalate_reason = unquote(reason.group(1).strip())[0] if reason else ""
        elif upper in ("HANDOFF", "DELEGATE"):
            target = re.sub(r"^(?:->|TO\s)\s*", "", rest, flags=re.IGNORECASE).strip()
            if not target:
                ctx.error(codes.MISSING_KEY, f"{upper} needs the agent to go to", _where(node, lead_at),
                          f"write {upper} <agent>")
            else:
                agent = _agent(target, node, ctx, upper)
                if upper == "HANDOFF":
                    action.handoff = agent
                else:
                    action.delegate = agent
        elif upper == "BLOCK":
            action.block = True
        elif upper == "RETRY":
            action.retry = True
            if rest.isdigit():
                action.max_retries = int(rest)
        elif upper == "COMPLETE":
            action.goto = "COMPLETE"
        elif upper == "GOTO":
            target = rest.lstrip(":").strip()
            if NAME.fullmatch(target):
                action.goto = target
            else:
                ctx.error(codes.BAD_NAME, f"GOTO needs a step name, not '{target}'", _where(node, rest_at))
        elif upper == "ASK_USER":
            action.ask_user += [n for n, _ in names_with_offsets(rest)]
        if upper in ("BLOCK", "CONTINUE", "COMPLETE") and rest:
            ctx.error(codes.WRONG_SHAPE, f"{upper} takes nothing after it", _where(node, rest_at))
        return
    if found and re.fullmatch(r"[A-Z][A-Z_]+", stripped) and not quoted:
        guess = did_you_mean(stripped, list(INLINE_WORDS))
        # a bare word in capitals is meant as an action, not as words to say ("ON_FAIL: DENY")
        ctx.error(codes.BAD_VALUE, f"unknown action '{stripped}'", _where(node, lead_at),
                  f"did you mean {guess}?" if guess is not None else
                  f"an action is one of {', '.join(sorted(INLINE_WORDS))}; quote it to say it as a message")
        return
    action.respond = ctx.template(text if quoted else stripped, node)


def _where(node: Node | None, offset: int) -> Span | None:
    return span_at(node, offset) if node is not None else None


def _agent(name: str, node: Node | None, ctx: SectionContext, what: str) -> str:
    """An agent named by HANDOFF / DELEGATE (whether the project has it is checked by the compiler,
    which knows every agent)."""
    name = unquote(name)[0].strip()
    if not NAME.fullmatch(name):
        ctx.error(codes.BAD_NAME, f"{what} needs an agent name, not '{name}'", node)
    return name


def parse_set(node: Node, ctx: SectionContext) -> list[tuple[str, Expr]]:
    """`SET: x = <expr>`, or a block of `x = <expr>` lines or `x: <expr>` entries; each target is a
    session variable (added to ctx.fields; ABL104 for reserved names)."""
    out: list[tuple[str, Expr]] = []
    if node.value is not None and node.text.strip() and not node.block:
        out += _set_line(node.text, node, 1 if node.quoted else 0, ctx)
    for child in node.children:
        if child.item:
            for part in child.children:
                out += _set_child(part, ctx)
        else:
            out += _set_child(child, ctx)
    return out


def _set_child(child: Node, ctx: SectionContext) -> list[tuple[str, Expr]]:
    if child.key is None:
        return _set_line(child.text, child, 1 if child.quoted else 0, ctx)
    text = child.text.strip()
    if not text:
        ctx.error(codes.MISSING_KEY, f"SET {child.key} has no value", child, f"write {child.key}: <expression>")
        return []
    return [_assign(child.key, child, ctx, value_of(ctx, child))]


def _set_line(text: str, node: Node, offset: int, ctx: SectionContext) -> list[tuple[str, Expr]]:
    found = _SET_LINE.fullmatch(text)
    if not found:
        ctx.error(codes.WRONG_SHAPE, f"'{text.strip()}' is not an assignment", span_at(node, offset),
                  "write SET: <name> = <expression>")
        return []
    value = found.group(2).strip()
    if not value:
        ctx.error(codes.MISSING_KEY, f"SET {found.group(1)} has no value", span_at(node, offset + found.end(1)))
        return []
    return [_assign(found.group(1), node, ctx, expression(ctx, value, node, offset + found.start(2)))]


def _assign(name: str, node: Node, ctx: SectionContext, value: Expr) -> tuple[str, Expr]:
    check_variable_name(name.split(".", 1)[0], node, ctx)
    ctx.fields.add(name.split(".", 1)[0])
    return name, value


# ---- CONSTRAINTS ------------------------------------------------------------------------------------


def compile_constraints(node: Node, ctx: SectionContext, rules: AgentRules) -> None:
    """CONSTRAINTS into `rules.constraints`: labelled groups flattened in declaration order (or a plain
    list) of `REQUIRE|WARN|LIMIT|RESTRICT <condition> [BEFORE calling <tool> | BEFORE returning results]`
    with an optional WHEN: gate and ON_FAIL: action."""
    for child in node.children:
        if child.item:
            _constraint_item(child, "", ctx, rules)
        elif child.key is None:
            _constraint(child, child.text, 0, [], "", ctx, rules)
        elif key(child) in CONSTRAINT_KINDS and child.value:
            _constraint(child, f"{child.key} {child.text}", -len(child.key or "") - 1, child.children, "", ctx, rules)
        elif child.value is not None and not child.children:
            ctx.error(codes.WRONG_SHAPE, f"the constraint group {child.key} holds no constraints", child,
                      "write the constraints under it as - REQUIRE <condition> items")
        else:
            for sub in child.children:
                if sub.item:
                    _constraint_item(sub, child.key or "", ctx, rules)
                elif sub.key is None:
                    _constraint(sub, sub.text, 0, [], child.key or "", ctx, rules)
                else:
                    ctx.error(codes.WRONG_SHAPE, f"the constraint group {child.key} holds '{sub.key}:'", sub,
                              "write - REQUIRE <condition> with WHEN: and ON_FAIL: under it")


def _constraint_item(item: Node, label: str, ctx: SectionContext, rules: AgentRules) -> None:
    if not item.children:
        return
    first = item.children[0]
    props = flatten(item)
    if first.key is None:
        _constraint(first, first.text, 0, props, label, ctx, rules)
    elif key(first) in CONSTRAINT_KINDS:
        # `- REQUIRE: <condition>`: the text after the key, at its value column
        _constraint(first, f"{first.key} {first.text}", -len(first.key or "") - 1 + (1 if first.quoted else 0),
                    props, label, ctx, rules)
    else:
        ctx.error(codes.WRONG_SHAPE, "a constraint starts with REQUIRE, WARN, LIMIT or RESTRICT", first)


def _constraint(node: Node, text: str, base: int, props: list[Node], label: str, ctx: SectionContext,
                rules: AgentRules) -> None:
    """One rule; `base` is where `text` starts relative to the node's value column."""
    found = _LEAD_WORD.fullmatch(text.strip())
    word = found.group(1).upper() if found else ""
    if word not in CONSTRAINT_KINDS:
        guess = did_you_mean(word, list(CONSTRAINT_KINDS)) if word else None
        ctx.error(codes.BAD_VALUE, "a constraint starts with REQUIRE, WARN, LIMIT or RESTRICT", span_at(node, max(base, 0)),
                  f"did you mean {guess}?" if guess else None)
        return
    assert found is not None
    rest = found.group(2)
    rest_at = base + found.start(2)
    checkpoint, tool = "turn", None
    before = find_word(rest, "BEFORE")
    cond_text = rest
    if before >= 0:
        cond_text = rest[:before]
        checkpoint, tool = _checkpoint(rest[before + len("BEFORE"):].strip(), span_at(node, rest_at + before), ctx)
    cond_text = cond_text.rstrip()
    if not cond_text.strip():
        ctx.error(codes.MISSING_KEY, f"{word} needs a condition", span_at(node, max(base, 0)))
        return
    lead = len(cond_text) - len(cond_text.lstrip())
    constraint = Constraint(kind=word.lower(), condition=condition(ctx, cond_text.strip(), node, rest_at + lead),  # type: ignore[arg-type]
                            checkpoint=checkpoint, tool=tool, label=label, source=text.strip(),  # type: ignore[arg-type]
                            span=node.span)
    for prop in props:
        part = key(prop)
        if part == "WHEN":
            constraint.when = node_condition(ctx, prop)
        elif part == "BEFORE":  # the .agent.yaml form: before: "calling <tool>" beside the condition
            checkpoint, tool = _checkpoint(ctx.text(prop), prop.value_span(), ctx)
            constraint.checkpoint, constraint.tool = checkpoint, tool  # type: ignore[assignment]
        elif part == "ON_FAIL":
            constraint.on_fail = parse_action(prop, ctx)
            if constraint.on_fail.clear:
                where = next((c for c in prop.children if key(c) == "CLEAR"), prop)
                ctx.warning(codes.IGNORED, "CLEAR is not an ON_FAIL directive of a constraint; it is ignored", where,
                            "go to a flow step that CLEARs the values (GOTO: <step>)")
                constraint.on_fail.clear = []
        elif prop.key is None or prop.item:
            ctx.error(codes.WRONG_SHAPE, f"a constraint holds '{prop.text}'", prop,
                      "write WHEN: <condition> and ON_FAIL: <action> under the rule")
        else:
            ctx.unknown_key(prop, ["WHEN", "ON_FAIL", "BEFORE"], "a constraint")
    rules.constraints.append(constraint)


def _checkpoint(target: str, where: Span, ctx: SectionContext) -> tuple[str, str | None]:
    """The checkpoint of `BEFORE <target>`: calling <tool>, returning results, or (ABL105) none."""
    calling = re.fullmatch(r"calling\s+([A-Za-z_][A-Za-z0-9_]*)", target, re.IGNORECASE)
    if calling:  # whether the agent declares the tool is checked by the compiler
        return "before_tool", calling.group(1)
    if re.fullmatch(r"returning\s+results", target, re.IGNORECASE):
        return "before_results", None
    ctx.warning(codes.NON_STRUCTURAL_BEFORE, f"'BEFORE {target}' is not a checkpoint; it has no effect", where,
                "use BEFORE calling <tool>, BEFORE returning results, or a WHEN: gate")
    return "turn", None


# ---- COMPLETE ---------------------------------------------------------------------------------------


def compile_complete(node: Node, ctx: SectionContext, rules: AgentRules) -> None:
    """COMPLETE into `rules.complete`: `- WHEN: <condition>` items with RESPOND, STORE, RETURN(S)
    and other directives."""
    for child in node.children:
        if not child.item:
            ctx.error(codes.WRONG_SHAPE, "COMPLETE holds - WHEN: <condition> items", child)
            continue
        if not child.children:
            continue
        when: Condition | None = None
        returns: dict[str, Expr] = {}
        directives: list[Node] = []
        for part in [child.children[0], *flatten(child)]:
            word = key(part)
            if word == "WHEN":
                when = node_condition(ctx, part)
            elif part.key is None and not part.item and when is None and part is child.children[0]:
                text = part.text
                lead = re.match(r"WHEN\s+", text, re.IGNORECASE)
                at = lead.end() if lead else 0
                when = condition(ctx, text[at:].strip(), part, at + (1 if part.quoted else 0))
            elif word in ("RETURN", "RETURNS"):
                returns.update(_returns(part, ctx))
            else:
                directives.append(part)
        if when is None:
            ctx.error(codes.MISSING_KEY, "a COMPLETE rule needs WHEN", child, "write - WHEN: <condition>")
            continue
        action = Action()
        apply_directives(directives, action, ctx)
        rules.complete.append(CompletionRule(when=when, action=action, returns=returns, span=child.span))


def _returns(node: Node, ctx: SectionContext) -> dict[str, Expr]:
    """`RETURN: {a, b: <expr>}`, `RETURN: [a, b]`, `RETURN: a`, or `name: <expr>` entries under it."""
    out: dict[str, Expr] = {}
    text = node.text.strip()
    if text and not node.quoted:
        offset = node.text.index(text[0])
        inner, inner_at = text, offset
        if text[0] + text[-1] in ("{}", "[]"):
            inner, inner_at = text[1:-1], offset + 1
        for part, at in split_top(inner):
            colon = _top_colon(part)
            if colon < 0:
                if not NAME.fullmatch(part):
                    ctx.error(codes.WRONG_SHAPE, f"'{part}' is not a name to return", span_at(node, inner_at + at),
                              "write RETURN: {name, other: <expression>}")
                    continue
                out[part] = expression(ctx, part, node, inner_at + at)
                continue
            name, value = part[:colon].strip(), part[colon + 1:]
            value_at = inner_at + at + colon + 1 + len(value) - len(value.lstrip())
            if not NAME.fullmatch(name) or not value.strip():
                ctx.error(codes.WRONG_SHAPE, f"'{part}' is not <name>: <expression>", span_at(node, inner_at + at))
                continue
            out[name] = expression(ctx, value.strip(), node, value_at)
    elif text:
        ctx.error(codes.WRONG_SHAPE, "RETURN lists the values the agent returns: {name, other: <expression>}", node)
    for child in node.children:
        if child.key is None or child.item:
            ctx.error(codes.WRONG_SHAPE, "RETURN holds <name>: <expression> entries", child)
        elif not child.text.strip():
            out[child.key] = expression(ctx, child.key, child, 0)
        else:
            out[child.key] = value_of(ctx, child)
    return out


def _top_colon(text: str) -> int:
    """Where the first `:` outside quotes and brackets is; -1 when there is none."""
    return next((i for i, ch in top_level(text) if ch == ":"), -1)


# ---- ON_ERROR ---------------------------------------------------------------------------------------


def compile_on_error(node: Node, ctx: SectionContext, rules: AgentRules) -> None:
    """ON_ERROR into `rules.on_error`: `<error_type>:` (tool_timeout, tool_error, invalid_input,
    validation_error, api_error, unknown_error, default, or a tool's name) with RESPOND, RETRY <count>,
    THEN (ESCALATE with REASON: "...", DELEGATE -> <agent>, CONTINUE, ASK_USER {...}, <step>), LOG and
    ESCALATE: PRIORITY: <level> under it, or an inline action; or `- ON: <error_type>` items with WHEN."""
    seen: dict[tuple[str, str], Node] = {}
    if node.value is not None and node.text.strip() and not node.children:
        handler = ErrorHandler(action=parse_action(node, ctx), span=node.span)
        rules.on_error.append(handler)
        return
    for child in node.children:
        if child.item:
            handler = _error_item(child, ctx)
        elif child.key is None:
            ctx.error(codes.WRONG_SHAPE, "ON_ERROR holds <error_type>: entries with the action under them", child)
            continue
        else:
            on = _error_type(child, ctx)
            if on is None:
                continue
            when_node = child.get("WHEN")
            action = Action()
            if child.value is not None and child.text.strip():
                action = parse_action(Node(key=child.key, value=child.value, span=child.span, quoted=child.quoted,
                                           block=child.block, value_column=child.value_column), ctx)
            apply_directives([c for c in child.children if c is not when_node], action, ctx)
            handler = ErrorHandler(on=on, action=action, span=child.span,
                                   when=node_condition(ctx, when_node) if when_node is not None else None)
        if handler is None:
            continue
        ident = (handler.on, handler.when.source if handler.when else "")
        if ident in seen:
            ctx.error(codes.DUPLICATE_NAME, f"ON_ERROR handles {handler.on} twice", child,
                      f"the first is on line {seen[ident].span.line}")
            continue
        seen[ident] = child
        rules.on_error.append(handler)


def _error_type(node: Node, ctx: SectionContext, name: str | None = None) -> str | None:
    word = (name if name is not None else node.key or "").strip()
    if word.lower() in ERROR_TYPES:
        return word.lower()
    if word in ctx.tools or word in ctx.names.tools:
        return word
    guess = did_you_mean(word.lower(), list(ERROR_TYPES))
    ctx.error(codes.BAD_VALUE, f"'{word}' is not an error type or a tool of this agent",
              node.value_span() if name is not None else node,
              f"did you mean {guess}?" if guess else f"error types: {', '.join(ERROR_TYPES)}, or a tool's name")
    return None


def _error_item(item: Node, ctx: SectionContext) -> ErrorHandler | None:
    parts = [item.children[0], *flatten(item)] if item.children else []
    on: str | None = "default"
    when: Condition | None = None
    directives = []
    for part in parts:
        word = key(part)
        if word in ("ON", "ERROR", "TYPE"):
            on = _error_type(part, ctx, ctx.text(part))
            if on is None:
                return None
        elif word == "WHEN":
            when = node_condition(ctx, part)
        else:
            directives.append(part)
    action = Action()
    apply_directives(directives, action, ctx)
    return ErrorHandler(on=on or "default", when=when, action=action, span=item.span)



def profile_constraint(entry, ctx: SectionContext, where: Node | None) -> Constraint | None:
    """A constraint of a behaviour profile, from its data: `{value: "REQUIRE <condition> [BEFORE ...]",
    when: ..., on_fail: ...}` (or `{REQUIRE: "<condition>", ...}`)."""
    if isinstance(entry, str):
        entry = {"value": entry}
    if not isinstance(entry, dict):
        ctx.error(codes.WRONG_SHAPE, "a profile constraint is - REQUIRE <condition> with ON_FAIL: under it", where)
        return None
    entry = {str(k).lower(): v for k, v in entry.items()}
    text = str(entry.get("value") or "")
    for kind in CONSTRAINT_KINDS:
        if kind.lower() in entry:
            text = f"{kind} {entry[kind.lower()]}"
    found = _LEAD_WORD.fullmatch(text.strip())
    if not found or found.group(1).upper() not in CONSTRAINT_KINDS:
        ctx.error(codes.BAD_VALUE, "a constraint starts with REQUIRE, WARN, LIMIT or RESTRICT", where)
        return None
    rest, checkpoint, tool = found.group(2), "turn", None
    before = find_word(rest, "BEFORE")
    if before >= 0:
        checkpoint, tool = _checkpoint(rest[before + len("BEFORE"):].strip(), where.span if where else None, ctx)
        rest = rest[:before]
    constraint = Constraint(kind=found.group(1).lower(), condition=condition(ctx, rest.strip(), where),  # type: ignore[arg-type]
                            checkpoint=checkpoint, tool=tool, source=text.strip(),  # type: ignore[arg-type]
                            span=where.span if where is not None else None)
    if entry.get("when") not in (None, ""):
        constraint.when = condition(ctx, str(entry["when"]), where)
    on_fail = entry.get("on_fail")
    if isinstance(on_fail, str):
        constraint.on_fail = parse_action(on_fail, ctx)
    elif isinstance(on_fail, dict):
        action = constraint.on_fail
        for word, value in on_fail.items():
            parse = parse_action(f"{str(word).upper()} {value}" if str(word).upper() in INLINE_WORDS
                                 else str(value), ctx)
            for name, got in parse.model_dump(exclude_defaults=True).items():
                setattr(action, name, getattr(parse, name))
            del got
    return constraint
