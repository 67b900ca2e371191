"""Compiler of the sections ABL parses for compatibility and keeps as data (NLU, INTENTS, MULTI_INTENT, TESTS, ...), with light shape checks."""

from __future__ import annotations

from frontdesk.ir.behaviour import AgentRules

from .. import codes
from ..context import SectionContext
from ..outline import Node

MULTI_INTENT_KEYS = ("strategy", "max_intents", "confidence_threshold", "enabled")


def compile_metadata(name: str, node: Node, ctx: SectionContext, rules: AgentRules) -> None:
    """Keep section `name` as plain data in `rules.metadata[name]`, after checking its shape."""
    section = name.upper()
    if section == "MULTI_INTENT":
        _multi_intent(node, ctx)
    elif section == "TESTS":
        _tests(node, ctx)
    elif section in ("NLU", "INTENTS") and node.value is not None and node.text.strip() and not node.children:
        ctx.error(codes.WRONG_SHAPE, f"{section} holds entries under it, not a value", node.value_span())
    rules.metadata[section] = ctx.data(node)


def _multi_intent(node: Node, ctx: SectionContext) -> None:
    for child in node.children:
        word = (child.key or "").lower()
        if child.key is None or child.item:
            ctx.error(codes.WRONG_SHAPE, f"MULTI_INTENT holds '{child.text}'", child, "write <setting>: <value>")
        elif word == "strategy":
            if not child.text.strip() or child.children:
                ctx.error(codes.WRONG_SHAPE, "strategy is a name, e.g. primary_queue", child)
        elif word == "max_intents":
            value = ctx.number(child)
            if value is not None and (isinstance(value, float) or value < 1):
                ctx.error(codes.BAD_VALUE, "max_intents is a whole number of 1 or more", child.value_span())
        elif word == "confidence_threshold":
            value = ctx.number(child)
            if value is not None and not 0 <= value <= 1:
                ctx.error(codes.BAD_VALUE, "confidence_threshold is between 0 and 1", child.value_span())
        elif word == "enabled":
            ctx.boolean(child)
        else:
            ctx.unknown_key(child, list(MULTI_INTENT_KEYS), "MULTI_INTENT")


def _tests(node: Node, ctx: SectionContext) -> None:
    for child in node.children:
        if not child.item:
            ctx.error(codes.WRONG_SHAPE, "TESTS is a list of - name: ... cases", child)
        elif not any(c.key is not None for c in child.children):
            ctx.error(codes.WRONG_SHAPE, "a test case holds name:, input: and expectations", child)
