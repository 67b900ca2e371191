"""GUARDRAILS at run time (abl-specification 3.9): content checks at the input, output, tool_input,
tool_output and handoff points, and their actions.

A guardrail fires when its CEL `check` (a violation predicate over `content`, `input`, `output`,
`tool_input`, `tool_output`), one of its `patterns` or its `llm_check` says so; `llm_check` asks the
configured model a yes/no question (the prompt plan `GuardrailJudge_<agent>`; with no model the check is
skipped, and the `guardrail_check` event says so). The actions: block (the message is replaced, the tool
does not run), warn / log (a warning event), redact and fix (what the check looks for becomes
[REDACTED]), filter (the sentences it fires on are removed), reask (a model's reply is written again
once with the guardrail's feedback, `GuardrailReask_<agent>`; anything else, or a reply that still
fails, is blocked) and escalate.

Authored patterns run under a time limit (`regex` with a timeout): a pattern that is invalid, or that
backtracks for longer than PATTERN_TIMEOUT seconds, is an `error` event and does not fire; so is a CEL
check that fails to evaluate.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import regex

from frontdesk.ir.behaviour import Guardrail
from frontdesk.ir.expr import Ref
from frontdesk.ir.models import HandoffNode, ReasoningAgent
from frontdesk.llm.base import LLMError
from frontdesk.runtime.pipeline import BotMessage
from frontdesk.runtime.prompts import guardrail_judge_request, guardrail_reask_request
from frontdesk.runtime.tools import ToolResult

from ._base import (
    BLOCKED,
    REDACTED,
    as_text,
    evaluate,
    guardrails_of,
    rules_in_play,
    rules_of,
)
from .templates import message, render_text

if TYPE_CHECKING:  # pragma: no cover
    from frontdesk.runtime.context import TurnContext
    from frontdesk.runtime.pipeline import IncomingMessage, Outgoing, PendingHandoff, PendingToolCall

PATTERN_TIMEOUT = 0.25  # seconds one authored pattern may take on one text
REPAIRS = ("redact", "filter", "fix")
SOFT = ("warn", "log")
_PII = [
    r"[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}",  # e-mail addresses
    r"\b(?:\d[ -]?){13,19}\b",  # card numbers
    r"\b\d{3}-\d{2}-\d{4}\b",  # US social security numbers
    r"\+?\d[\d ().-]{7,}\d",  # phone numbers
]
_URL = r"(?i)\b(?:https?://|www\.)[^\s<>\"']+"
_EMAIL = r"[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}"
_PATTERN_IN_CHECK = regex.compile(r"matches_pattern\([^,]+,\s*['\"](.+?)['\"]\s*\)")
_SENTENCE_END = regex.compile(r"(?<=[.!?])\s+|\n+")
_YES = regex.compile(r"^\W*(yes|true|y|violat|fires?)\b", regex.IGNORECASE)


class PatternProblem(Exception):
    """An authored pattern that is not a valid regular expression, or took too long (SlowPattern)."""


class SlowPattern(PatternProblem):
    """A pattern that backtracked for longer than PATTERN_TIMEOUT."""


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> regex.Pattern:
    try:
        return regex.compile(pattern)
    except (regex.error, TypeError, ValueError, RecursionError) as exc:
        raise PatternProblem(f"invalid regular expression {pattern!r}: {exc}") from None


def search(pattern: str, text: str) -> bool:
    """Whether `pattern` is found in `text`, within PATTERN_TIMEOUT; PatternProblem when it cannot tell."""
    try:
        return _compiled(pattern).search(text, timeout=PATTERN_TIMEOUT) is not None
    except TimeoutError:
        raise SlowPattern(f"the regular expression {pattern!r} took more than {PATTERN_TIMEOUT}s "
                          f"on a text of {len(text)} characters") from None


def substitute(pattern: str, text: str) -> str:
    try:
        return _compiled(pattern).sub(REDACTED, text, timeout=PATTERN_TIMEOUT)
    except TimeoutError:
        raise SlowPattern(f"the regular expression {pattern!r} took more than {PATTERN_TIMEOUT}s") from None


# ---- does it fire -----------------------------------------------------------------------------------------


def fires(ctx: TurnContext, agent: str, guard: Guardrail, variables: dict[str, Any]) -> bool:
    """Whether the guardrail fires: its local check or patterns first, then its llm_check. A part that
    cannot be evaluated is an error event and does not fire."""
    content = as_text(variables.get("content"))
    fired = bool(guard.check) and _check_fires(ctx, agent, guard, variables)
    by = "check" if guard.check else ""
    if not fired and guard.patterns:
        fired = _any_pattern(ctx, agent, guard, guard.patterns, content)
        by = "patterns" if fired or not by else by
    skipped = ""
    if not fired and guard.llm_check:
        judged = judge(ctx, agent, guard, content)
        if judged is None:
            skipped = "no LLM is configured" if ctx.llm is None else "the LLM check failed"
        else:
            fired, by = judged, "llm_check"
    ctx.log.emit("guardrail_check", agent, guardrail=guard.name, fired=fired, kind=guard.kind,
                 action=guard.action, by=by or ("llm_check" if guard.llm_check else "check"),
                 **({"skipped": skipped} if skipped else {}))
    return fired


def _check_fires(ctx: TurnContext, agent: str, guard: Guardrail, variables: dict[str, Any]) -> bool:
    """The CEL check. The patterns it names (`abl.matches_pattern(content, "...")`) are first tried on the
    content under the time limit, so a pattern that backtracks for ever is found before CEL runs it."""
    from frontdesk.expr.cel import CelError, compile_check

    content = as_text(variables.get("content"))
    try:
        for pattern in _PATTERN_IN_CHECK.findall(guard.check or ""):
            search(pattern, content)
        return compile_check(guard.check).fires(variables)
    except (CelError, PatternProblem) as exc:
        ctx.log.emit("error", agent, where=f"guardrail {guard.name}", message=str(exc))
    except Exception as exc:  # noqa: BLE001 - an authored check must never break the turn
        ctx.log.emit("error", agent, where=f"guardrail {guard.name}", message=f"{type(exc).__name__}: {exc}")
    return False


def _any_pattern(ctx: TurnContext, agent: str, guard: Guardrail, patterns: list[str], text: str) -> bool:
    for pattern in patterns:
        try:
            if search(pattern, text):
                return True
        except PatternProblem as exc:
            ctx.log.emit("error", agent, where=f"guardrail {guard.name}", message=str(exc))
    return False


def judge(ctx: TurnContext, agent: str, guard: Guardrail, content: str) -> bool | None:
    """Ask the model the guardrail's yes/no question about the content; None when it cannot."""
    if ctx.llm is None:
        return None
    request = guardrail_judge_request(agent, guard.kind, guard.llm_check or "", content)
    try:
        response = ctx.complete(request, agent)
    except LLMError as exc:
        ctx.log.emit("error", agent, where=f"guardrail {guard.name}", message=str(exc))
        return None
    return bool(_YES.match(response.content or ""))


# ---- what it does -------------------------------------------------------------------------------------


def acted(ctx: TurnContext, agent: str, guard: Guardrail, action: str, **data: Any) -> None:
    ctx.log.emit("guardrail_action", agent, guardrail=guard.name, action=action, kind=guard.kind, **data)


def guard_message(ctx: TurnContext, agent: str, guard: Guardrail) -> str:
    """The guardrail's message, else the agent's `guardrail_blocked` message, else the default."""
    if guard.message is not None:
        text = render_text(ctx, guard.message, agent)
        if text:
            return text
    return message(ctx, agent, "guardrail_blocked", BLOCKED)


def apply(ctx: TurnContext, agent: str, guard: Guardrail) -> str | None:
    """What a fired guardrail does to a message: the reply that replaces it, or None (warn, log)."""
    if guard.action in SOFT:
        ctx.log.emit("warning", agent, where=f"guardrail {guard.name}", message=guard_message(ctx, agent, guard))
        acted(ctx, agent, guard, guard.action)
        return None
    if guard.action == "escalate":
        ctx.state.status = "escalated"
        ctx.log.emit("session_escalated", agent, reason=f"guardrail {guard.name}")
    acted(ctx, agent, guard, guard.action if guard.action != "reask" else "block")
    return guard_message(ctx, agent, guard)


def reask(ctx: TurnContext, agent: str, guard: Guardrail, draft) -> bool:
    """A model's reply that fired the guardrail is written again once, with the guardrail's feedback;
    True when the new reply passes (it replaces the draft)."""
    by_model = isinstance(ctx.program.agents.get(getattr(draft, "by", None) or draft.agent or ""), ReasoningAgent)
    if not by_model or ctx.llm is None:
        return False
    feedback = guard_message(ctx, agent, guard) if guard.message is not None else (guard.llm_check or guard.check or "")
    request = guardrail_reask_request(agent, feedback, ctx.last_user_message() or "", draft.text)
    try:
        text = (ctx.complete(request, agent).content or "").strip()
    except LLMError as exc:
        ctx.log.emit("error", agent, where=f"guardrail {guard.name}", message=str(exc))
        return False
    if not text or fires(ctx, agent, guard, output_variables(guard, text)):
        return False
    acted(ctx, agent, guard, "reask", before=draft.text, after=text)
    draft.text = text
    return True


def repair(ctx: TurnContext, agent: str, guard: Guardrail, text: str, variables: dict[str, Any]) -> str:
    """redact / fix: what the check looks for replaced by [REDACTED]; filter: the violating parts removed
    (the sentences a pattern or the check fires on)."""
    if not text:
        return text
    patterns = []
    for pattern in patterns_of(guard):  # an invalid one is left out (and said)
        try:
            _compiled(pattern)
            patterns.append(pattern)
        except PatternProblem as exc:
            ctx.log.emit("error", agent, where=f"guardrail {guard.name}", message=str(exc))
    try:
        if guard.action != "filter":
            for pattern in patterns:
                text = substitute(pattern, text)
            return text
        kept = []
        for sentence in [p for p in _SENTENCE_END.split(text) if p.strip()]:
            found = any(search(p, sentence) for p in patterns)
            if not found and guard.check:
                found = _check_fires(ctx, agent, guard, {**variables, "content": sentence, "input": sentence,
                                                         "output": sentence})
            if not found:
                kept.append(sentence)
        return " ".join(k.strip() for k in kept).strip()
    except SlowPattern as exc:  # what to keep cannot be told apart: nothing of the text is kept
        ctx.log.emit("error", agent, where=f"guardrail {guard.name}", message=str(exc))
        return REDACTED


def repair_value(ctx: TurnContext, agent: str, guard: Guardrail, value: Any, variables: dict[str, Any]) -> Any:
    """`repair` of every text inside a value (a tool's result)."""
    if isinstance(value, str):
        return repair(ctx, agent, guard, value, variables)
    if isinstance(value, dict):
        return {k: repair_value(ctx, agent, guard, v, variables) for k, v in value.items()}
    if isinstance(value, list):
        return [repair_value(ctx, agent, guard, v, variables) for v in value]
    return value


def patterns_of(guard: Guardrail) -> list[str]:
    """What a guardrail looks for, as regular expressions: personal data, URLs, e-mails, and the patterns
    its check and `patterns` name."""
    check = guard.check or ""
    patterns: list[str] = []
    if "contains_pii" in check or not check:
        patterns += _PII
    if "contains_email" in check:
        patterns.append(_EMAIL)
    if "contains_url" in check:
        patterns.append(_URL)
    return patterns + [*_PATTERN_IN_CHECK.findall(check), *guard.patterns]


# ---- the points -----------------------------------------------------------------------------------------


def at_input(ctx: TurnContext, message_in: IncomingMessage) -> None:
    """Input guardrails: before any agent or tool sees the message, it is repaired, or blocked."""
    for agent, rules in rules_in_play(ctx):
        for guard in guardrails_of(rules, "input"):
            variables = {"content": message_in.text, "input": message_in.text}
            if not fires(ctx, agent, guard, variables):
                continue
            if guard.action in REPAIRS:
                message_in.text = repair(ctx, agent, guard, message_in.text, variables)
                acted(ctx, agent, guard, guard.action)
                continue
            reply = apply(ctx, agent, guard)
            if reply is not None:
                message_in.block(reply, agent)
                return


def at_tool_input(ctx: TurnContext, agent: str, rules, call: PendingToolCall) -> bool:
    """tool_input guardrails of one agent; True when the call was answered (the tool does not run)."""
    for guard in guardrails_of(rules, "tool_input"):
        variables = {"tool_input": call.args, "content": as_text(call.args), "tool": call.tool}
        if not fires(ctx, agent, guard, variables):
            continue
        if guard.action in REPAIRS:
            call.args = {k: repair(ctx, agent, guard, v, variables) if isinstance(v, str) else v
                         for k, v in call.args.items()}
            acted(ctx, agent, guard, guard.action)
        elif guard.action in SOFT:
            apply(ctx, agent, guard)
        else:  # block, escalate, reask: the tool does not run
            apply(ctx, agent, guard)
            call.answer(ToolResult(status="error", message=guard_message(ctx, agent, guard)))
            return True
    return False


def at_tool_output(ctx: TurnContext, call: PendingToolCall, result: ToolResult) -> ToolResult | None:
    """tool_output guardrails: the result repaired, or replaced by an error; None when it stands."""
    for agent, rules in rules_in_play(ctx):
        for guard in guardrails_of(rules, "tool_output"):
            value = result.value if result.value is not None else result.args
            variables = {"tool_output": value, "content": result.message or as_text(value), "tool": call.tool}
            if not fires(ctx, agent, guard, variables):
                continue
            if guard.action in SOFT:
                apply(ctx, agent, guard)
            elif guard.action in REPAIRS:
                acted(ctx, agent, guard, guard.action)
                fixed = repair_value(ctx, agent, guard, {"message": result.message, "bot": result.bot,
                                                         "args": result.args}, variables)
                return ToolResult(status=result.status, message=fixed["message"], bot=fixed["bot"], args=fixed["args"])
            else:
                apply(ctx, agent, guard)
                return ToolResult(status="error", message=guard_message(ctx, agent, guard))
    return None


def output_variables(guard: Guardrail, text: str) -> dict[str, Any]:
    """What an output check reads: the bot's text as `content` and `output`, and, for a `kind: both`
    guardrail written over `input`, as `input` too (the same check on what comes in and goes out)."""
    return {"content": text, "output": text, **({"input": text} if guard.extra.get("both") else {})}


def at_output(ctx: TurnContext, agent: str, rules, out: Outgoing) -> bool:
    """Output guardrails of one agent on the drafts; True when they were all replaced (stop checking)."""
    for guard in guardrails_of(rules, "output"):
        for draft in list(out.messages):
            if draft not in out.messages:
                continue
            variables = output_variables(guard, draft.text)
            if not fires(ctx, agent, guard, variables):
                continue
            if guard.action in REPAIRS:
                draft.text = repair(ctx, agent, guard, draft.text, variables)
                acted(ctx, agent, guard, guard.action)
                if not draft.text.strip():
                    out.messages.remove(draft)
            elif guard.action in SOFT:
                apply(ctx, agent, guard)
            elif guard.action == "reask" and reask(ctx, agent, guard, draft):
                continue
            else:
                apply(ctx, agent, guard)
                out.messages[:] = [BotMessage(agent, guard_message(ctx, agent, guard))]
                return True
    return False


def handoff_allowed(handoff: PendingHandoff, ctx: TurnContext) -> bool:
    """handoff guardrails of the agent handing over, on what it passes (summary and values)."""
    frame = handoff.source
    rules = rules_of(ctx, frame.agent)
    target = handoff.frame.agent
    passed = handoff_context(ctx, frame.agent, target)
    content = " ".join(x for x in [handoff.message, as_text(passed) if passed else ""] if x)
    for guard in guardrails_of(rules, "handoff"):
        variables = {"content": content, "handoff": {"to": target, "summary": handoff.message, "context": passed},
                     "target": target}
        if not fires(ctx, frame.agent, guard, variables):
            continue
        if guard.action in SOFT:
            apply(ctx, frame.agent, guard)
            continue
        if guard.action in REPAIRS:
            handoff.message = repair(ctx, frame.agent, guard, handoff.message, variables)
            acted(ctx, frame.agent, guard, guard.action)
            continue
        reply = apply(ctx, frame.agent, guard)
        if reply:
            ctx.say(frame.agent, reply)
        ctx.log.emit("step", frame.agent, action="the handoff was stopped by a guardrail", agent=target)
        frame.waiting = True
        return False
    return True


def handoff_context(ctx: TurnContext, agent: str, target: str) -> dict[str, Any]:
    """The values an agent passes with a handoff to `target` (CONTEXT.pass of its flow's handoff steps,
    or of its HANDOFF declarations), as they are now."""
    declaring = ctx.program.agents.get(agent)
    names: list[str] = []
    values: dict[str, Any] = {}
    graph = getattr(declaring, "graph", None)
    for node in graph.nodes.values() if graph is not None else []:
        if isinstance(node, HandoffNode) and node.target == target:
            for arg in node.args:
                values[arg.name] = evaluate(ctx, agent, arg.value)
    for handoff in getattr(declaring, "handoffs", None) or []:
        if handoff.agent == target:
            names += handoff.passes
    for name in names:
        values.setdefault(name, ctx.read(Ref(scope=agent, name=name), agent))
    values.update(ctx.state.variables.get(target, {}))
    if not values:  # nothing passed by name: the target sees the session's shared variables
        values = dict(ctx.state.variables.get("session", {}))
    return {k: v for k, v in values.items() if v is not None}
