"""Compilers of TEMPLATES (named messages with per-channel variants) and MESSAGES (named runtime message texts)."""

from __future__ import annotations

import re

from frontdesk.diagnostics import did_you_mean
from frontdesk.ir.behaviour import AgentRules, TemplateDef
from frontdesk.ir.expr import Template, TextPart

from .. import codes
from ..context import SectionContext
from ..outline import Node
from ._common import NAME, key, template_ref, unquote

CHANNELS = ("MARKDOWN", "HTML", "VOICE_INSTRUCTIONS", "ADAPTIVE_CARD", "SLACK", "WHATSAPP", "AG_UI")
_VOICE_LINE = re.compile(r"VOICE[ \t]+INSTRUCTIONS[ \t]*:[ \t]*(.*)", re.IGNORECASE | re.DOTALL)


def compile_templates(node: Node, ctx: SectionContext, rules: AgentRules) -> None:
    """TEMPLATES into `rules.templates`: each name's DEFAULT text and its channel variants (MARKDOWN,
    HTML, VOICE INSTRUCTIONS, ADAPTIVE_CARD, SLACK, WHATSAPP, AG_UI), parsed as Handlebars."""
    for child in node.children:
        if child.key is None or child.item:
            ctx.error(codes.WRONG_SHAPE, "TEMPLATES holds <name>: with DEFAULT: and channel variants under it", child)
            continue
        name = child.key
        if name in rules.templates:
            ctx.error(codes.DUPLICATE_NAME, f"TEMPLATES declares {name} twice", child)
            continue
        definition = _template(child, ctx)
        if definition is not None:
            rules.templates[name] = definition


def _template(node: Node, ctx: SectionContext) -> TemplateDef | None:
    name = node.key or ""
    default: Template | None = None
    channels: dict[str, Template] = {}
    if node.value is not None and node.text.strip():
        default = ctx.template(node.text, node)  # `name: "text"`: just the default
    for prop in node.children:
        variant = _variant(prop)
        if variant is None:
            ctx.error(codes.WRONG_SHAPE, f"the template {name} holds '{prop.text}'", prop,
                      "write DEFAULT: \"<text>\" and channel variants such as MARKDOWN: under the name")
            continue
        channel, text_node = variant
        if channel == "DEFAULT":
            default = ctx.template(text_node.text, text_node)
        elif channel in CHANNELS:
            channels[channel.lower()] = ctx.template(text_node.text, text_node)
        else:
            guess = did_you_mean(channel, ["DEFAULT", *CHANNELS])
            ctx.error(codes.UNKNOWN_KEY, f"a template has no variant '{prop.key}'", prop,
                      f"did you mean {guess}?" if guess else f"variants: DEFAULT, {', '.join(CHANNELS)}")
    if default is None:
        ctx.error(codes.MISSING_KEY, f"the template {name} has no DEFAULT text", node,
                  "add DEFAULT: \"<plain text>\" (used when no channel variant matches)")
        default = Template(source="", parts=[TextPart(text="")])
    return TemplateDef(name=name, default=default, channels=channels, span=node.span)


def _variant(prop: Node) -> tuple[str, Node] | None:
    """The channel of a template line and a node holding its text (VOICE INSTRUCTIONS, with its
    space, is a bare line to the outline reader)."""
    if prop.item:
        return None
    if prop.key is not None:  # (a YAML key may write VOICE INSTRUCTIONS with its space)
        return re.sub(r"\s+", "_", key(prop).strip()), prop
    found = _VOICE_LINE.fullmatch(prop.text)
    if not found:
        return None
    raw = found.group(1).strip()
    column = prop.value_column + found.start(1)
    if raw in ("|", ">", "|-", ">-") or (not raw and prop.children):
        lines = [c.text if c.key is None else f"{c.key}: {c.text}" for c in prop.children]
        joiner = " " if raw.startswith(">") else "\n"
        return "VOICE_INSTRUCTIONS", Node(key="VOICE_INSTRUCTIONS", value=joiner.join(lines), span=prop.span,
                                          block=True)
    text, quoted = unquote(raw)
    return "VOICE_INSTRUCTIONS", Node(key="VOICE_INSTRUCTIONS", value=text, span=prop.span, quoted=quoted,
                                      value_column=column)


def compile_messages(node: Node, ctx: SectionContext, rules: AgentRules) -> None:
    """MESSAGES into `rules.messages`: name -> text (a template), or `TEMPLATE(name)` of a declared template."""
    for child in node.children:
        if child.key is None or child.item or child.children:
            ctx.error(codes.WRONG_SHAPE, "MESSAGES holds <name>: \"<text>\" entries", child)
            continue
        if not NAME.fullmatch(child.key):
            ctx.error(codes.BAD_NAME, f"'{child.key}' is not a message name", child)
            continue
        if child.key in rules.messages:
            ctx.error(codes.DUPLICATE_NAME, f"MESSAGES declares {child.key} twice", child)
            continue
        text = child.text
        reference = None if child.quoted or child.block else template_ref(text)
        if reference is not None:
            if reference not in rules.templates:
                guess = did_you_mean(reference, sorted(rules.templates))
                ctx.error(codes.BAD_VALUE, f"no template named {reference}", child.value_span(),
                          f"did you mean {guess}?" if guess else "declare it under TEMPLATES:")
            rules.messages[child.key] = f"TEMPLATE({reference})"
            continue
        ctx.template(text, child)  # reports a malformed {{...}}
        rules.messages[child.key] = text
