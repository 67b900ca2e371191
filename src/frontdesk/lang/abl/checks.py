"""Checks across an agent's sections: tool parameter types against GATHER fields, types ABL does not
know, and constraints that read a field nothing sets."""

from __future__ import annotations

import re

from frontdesk.diagnostics import Span
from frontdesk.ir.behaviour import AgentRules
from frontdesk.ir.walk import refs_in

from . import codes
from .context import SESSION, SectionContext

BUILTIN_TYPES = {"string", "number", "boolean", "date", "datetime", "array", "object", "email", "phone",
                 "attachment", "any", "file", "null"}
# GATHER types whose values are text to a tool
TEXT_LIKE = {"string", "date", "datetime", "email", "phone"}
SYSTEM_NAMES = {"input", "user_id", "session_id", "channel", "turn", "now", "language", "current_agent",
                "conversation_history", "user", "session", "context", "result", "env", "config", "system"}
_WORD = re.compile(r"[A-Za-z_]\w*")


def param_types(source: str) -> list[tuple[str, str, int]]:
    """(parameter, type as written, 0-based position of the type) of a signature's parameters."""
    start = source.find("(")
    if start < 0:
        return []
    out, depth, i, current_start = [], 0, start + 1, start + 1
    segments: list[tuple[int, int]] = []
    while i < len(source):
        ch = source[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                segments.append((current_start, i))
                break
            depth -= 1
        elif ch == "," and depth == 0:
            segments.append((current_start, i))
            current_start = i + 1
        i += 1
    for a, b in segments:
        part = source[a:b]
        name, colon, rest = part.partition(":")
        if not colon:
            continue
        type_text = rest.split("=", 1)[0].strip()
        offset = a + len(name) + 1 + (len(rest) - len(rest.lstrip()))
        out.append((name.strip().rstrip("?"), type_text, offset))
    return out


def check_signature_types(source: str, at: Span, ctx: SectionContext, gather: dict[str, str]) -> None:
    """Unknown lowercase types (ABL017) and parameter types that contradict a GATHER field (ABL024)."""
    for name, type_text, offset in param_types(source):
        base = type_text.rstrip("[]?").strip()
        where = Span(file=at.file, line=at.line, column=at.column + offset)
        generic = _GENERIC.fullmatch(base)
        if generic is not None and generic.group(1) in GENERIC_TYPES:  # array<string>, map<string, number>
            base = next((t for t in _WORD.findall(generic.group(2)) if t[0].islower() and t not in BUILTIN_TYPES),
                        "array")
        if base and base[0].islower() and not base.startswith("{") and base not in BUILTIN_TYPES:
            from frontdesk.diagnostics import did_you_mean

            guess = did_you_mean(base, sorted(BUILTIN_TYPES))
            ctx.error(codes.UNKNOWN_TYPE, f"'{base}' is not a type", where,
                      f"did you mean {guess}?" if guess else f"use one of {', '.join(sorted(BUILTIN_TYPES))} "
                      "or a named type (PascalCase)")
            continue
        field_type = gather.get(name)
        if field_type is None or type_text.endswith("[]") or not base.islower():
            continue
        if _kind(base) != _kind(field_type):
            ctx.error(codes.TYPE_MISMATCH, f"parameter {name} of type {base} contradicts the GATHER field {name} "
                      f"of type {field_type}", where,
                      f"make both {field_type}, or rename one of them")


def _kind(type_name: str) -> str:
    return "string" if type_name in TEXT_LIKE else type_name


_GENERIC = re.compile(r"([A-Za-z_]\w*)\s*<(.*)>")
GENERIC_TYPES = {"array", "list", "map", "object", "set"}
# what JSON type a GATHER field's value has when it is passed to a tool
_JSON_OF_FIELD = {"boolean": "boolean", "number": "number", "integer": "integer", "currency": "number",
                  **{t: "string" for t in TEXT_LIKE}}


def check_call_types(program, bag) -> None:
    """A CALL that passes a GATHER field to a tool parameter of another kind (a boolean field to a number
    parameter) is ABL024, where the call is written (core concepts: type mismatches are compile errors)."""
    from frontdesk.ir.expr import Ref
    from frontdesk.ir.models import FlowAgent, InvokeNode

    for agent in program.agents.values():
        if not isinstance(agent, FlowAgent):
            continue
        fields = {f.name: f.type for f in agent.rules.gather}
        for node in agent.graph.nodes.values():
            tool = program.tools.get(node.target) if isinstance(node, InvokeNode) and node.target_kind == "tool" \
                else None
            if tool is None:
                continue
            params = {p.name: p.type for p in tool.params}
            for arg in node.args:
                value = arg.value
                if not isinstance(value, Ref) or value.space != "var" or getattr(value, "path", None):
                    continue
                given, wanted = _JSON_OF_FIELD.get(fields.get(value.name, "")), params.get(arg.name)
                if given is None or wanted not in ("string", "number", "integer", "boolean") or given == wanted \
                        or {given, wanted} <= {"number", "integer"}:
                    continue
                bag.error(codes.TYPE_MISMATCH, f"{tool.name}'s parameter {arg.name} is a {wanted}, but the GATHER "
                          f"field {value.name} passed to it is a {fields[value.name]}", node.span,
                          f"pass a {wanted} (gather {value.name} as a {wanted}, or convert it), or change the "
                          "parameter's type")


def check_unset_fields(rules: AgentRules, ctx: SectionContext, source_lines: list[str]) -> None:
    """A constraint that reads a session variable nothing sets can never pass (ABL023)."""
    known = set(ctx.fields) | {f.name for f in rules.gather} | {v.name for v in rules.memory.session}
    known |= {p.path.split(".")[0] for p in rules.memory.persistent}
    known |= ctx.tools | ctx.names.tools | SYSTEM_NAMES
    for constraint in rules.constraints:
        for ref in [*refs_in(constraint.condition), *refs_in(constraint.when)]:
            if ref.space != "var" or ref.scope != SESSION or ref.name in known or ref.name.startswith("last_"):
                continue
            ctx.error(codes.UNSET_FIELD, f"the constraint reads {ref.name}, which nothing sets",
                      name_span(constraint.span, ref.name, ctx.file, source_lines),
                      f"gather it (GATHER: {ref.name}:), set it (SET: {ref.name} = ...), or declare it in MEMORY")
            known.add(ref.name)  # once per name


def name_span(span: Span | None, name: str, file: str, lines: list[str]) -> Span | None:
    """Where `name` is written, on the span's line or the two after it (else the span itself)."""
    if span is None:
        return None
    for number in range(span.line, min(span.line + 3, len(lines) + 1)):
        text = lines[number - 1]
        for match in _WORD.finditer(text):
            if match.group(0) == name:
                return Span(file=file, line=number, column=match.start() + 1)
    return span
