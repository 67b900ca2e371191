"""TEMPLATES in the variant of the session's channel, an agent's named MESSAGES, and what an action says."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from frontdesk.expr.handlebars import parse_handlebars
from frontdesk.ir.behaviour import Action, TemplateDef
from frontdesk.ir.expr import Template

from ._base import rules_of

if TYPE_CHECKING:  # pragma: no cover
    from frontdesk.runtime.context import TurnContext

# the named runtime messages an agent's MESSAGES section can override (text or TEMPLATE(name))
MESSAGE_NAMES = ("guardrail_blocked", "constraint_blocked", "escalation_notice", "max_iterations", "no_model",
                 "llm_error", "fallback")
# the session's channel -> the template variant used on it (abl-specification 3.13.1)
CHANNEL_VARIANTS = {
    "web": ("markdown", "html"), "sdk": ("markdown",), "markdown": ("markdown",), "email": ("html",),
    "html": ("html",), "teams": ("adaptive_card",), "slack": ("slack",), "whatsapp": ("whatsapp",),
    "ag_ui": ("ag_ui",), "agui": ("ag_ui",),
}
_TEMPLATE_REF = re.compile(r"^\s*TEMPLATE\(\s*([A-Za-z_]\w*)\s*\)\s*$")


def find_template(ctx: TurnContext, name: str, agent: str | None = None) -> TemplateDef | None:
    """The template `name` of the agent, else of any agent of the program."""
    owners = [ctx.program.agents.get(agent)] if agent else []
    owners += list(ctx.program.agents.values())
    for owner in owners:
        if owner is not None and name in owner.rules.templates:
            return owner.rules.templates[name]
    return None


def template_variant(definition: TemplateDef, channel: str) -> Template:
    """The variant of a template for a channel (slack -> SLACK, web -> MARKDOWN, ...), else DEFAULT."""
    channel = (channel or "").lower()
    if channel in definition.channels:
        return definition.channels[channel]
    for variant in CHANNEL_VARIANTS.get(channel, ()):
        if variant in definition.channels:
            return definition.channels[variant]
    return definition.default


def render_named(ctx: TurnContext, name: str, agent: str) -> str:
    """TEMPLATE(name) rendered (Handlebars) in the variant of the session's channel; "" when none."""
    definition = find_template(ctx, name, agent)
    if definition is None:
        ctx.log.emit("warning", agent, where="template", message=f"no template named {name}")
        return ""
    return ctx.render(template_variant(definition, ctx.state.channel), agent)


def render_text(ctx: TurnContext, template: Template | None, agent: str) -> str:
    """A message template, or a `TEMPLATE(name)` written as its text."""
    if template is None:
        return ""
    ref = _TEMPLATE_REF.match(template.source or "")
    if ref is not None:
        return render_named(ctx, ref.group(1), agent)
    return ctx.render(template, agent)


def message(ctx: TurnContext, agent: str, name: str, default: str) -> str:
    """A named runtime message (MESSAGES: name: "text" or TEMPLATE(x)) of the agent, else `default`."""
    text = rules_of(ctx, agent).messages.get(name)
    if not text:
        return default
    ref = _TEMPLATE_REF.match(text)
    if ref is not None:
        return render_named(ctx, ref.group(1), agent) or default
    try:
        return ctx.render(parse_handlebars(text), agent)
    except Exception:  # noqa: BLE001 - checked by the compiler; a bad text is said as written
        return text


def action_text(ctx: TurnContext, agent: str, action: Action) -> str:
    """What an action says: its RESPOND, or its TEMPLATE in the channel's variant."""
    text = render_text(ctx, action.respond, agent) if action.respond is not None else ""
    if not text and action.template:
        text = render_named(ctx, action.template, agent)
    return text
