"""Handing a session to a person (ABL ESCALATE, abl-specification 3.11).

Every escalation, whatever started it (an `escalate` step, the reasoning tool, an ON_FAIL or ON_ERROR
action, a trigger below), leaves the same record: the session's status becomes `escalated`, the
`context_for_human` package the agent declares is built from the session (transcript, gathered values,
tool results, failure counts) and kept in the session (`system["escalation"]`), and an `escalated`
event carries it into the trace. Triggers (`ESCALATE: triggers: - WHEN ... REASON ... PRIORITY`) are
checked after the agents ran, on the agents of the stack from the top down; the first that holds fires.
"""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any

from frontdesk.ir.behaviour import AgentRules
from frontdesk.ir.expr import Ref
from frontdesk.runtime.context import TurnContext
from frontdesk.runtime.events import register_event_type
from frontdesk.runtime.rules import message
from frontdesk.runtime.state import HistoryItem

register_event_type("escalated", "the session went to a person, with the context prepared for them",
                    ("agent", "reason", "priority", "context_for_human"))

TRANSCRIPT_ITEMS = {"conversation_transcript", "conversation_history", "transcript", "history"}
PRIORITIES = ("low", "medium", "high", "critical")


def check_triggers(ctx: TurnContext) -> bool:
    """Fire the first ESCALATE trigger that holds (agents on the stack, top first) and did not hold at the
    last check: a condition that stays true (after a person dealt with it) does not escalate again until
    it has been false. True when one fired."""
    if ctx.state.status == "escalated":
        return False
    held_before = set(ctx.state.system.get("escalation_held") or [])
    held: list[str] = []
    fired = None

    seen: set[str] = set()
    for frame in reversed(ctx.state.stack):
        if frame.graph != "main" or frame.agent in seen:
            continue
        seen.add(frame.agent)
        agent = ctx.program.agents.get(frame.agent)
        for trigger in agent.rules.escalation if agent is not None else []:
            if not ctx.holds(trigger.when, frame.agent, frame, where="ESCALATE trigger"):
                continue
            key = f"{frame.agent}: {trigger.when.source}"
            held.append(key)
            if fired is None and key not in held_before:
                fired = (frame, trigger)
    if held or held_before:
        ctx.state.system["escalation_held"] = held
    if fired is None:
        return False
    frame, trigger = fired
    ctx.log.emit("step", frame.agent, action="escalation trigger", condition=trigger.when.source,
                 priority=trigger.priority)
    if trigger.respond is not None:
        ctx.say(frame.agent, ctx.render(trigger.respond, frame.agent, frame), frame)
    escalate(ctx, frame.agent, trigger.reason or trigger.when.source, trigger.priority)
    frame.waiting = True
    return True


def escalate(ctx: TurnContext, agent: str | None, reason: str, priority: str = "") -> dict[str, Any]:
    """Mark the session escalated and record the package for the person taking over."""
    priority = priority if priority in PRIORITIES else _declared_priority(ctx, agent, reason)
    package = context_for_human(ctx, agent)
    record = {"agent": agent, "reason": reason, "priority": priority, "turn": ctx.state.turn,
              "context_for_human": package}
    ctx.state.status = "escalated"
    ctx.state.system["escalation"] = record
    ctx.state.system["escalate.completed"] = False
    ctx.log.emit("escalated", agent, agent=agent, reason=reason, priority=priority, context_for_human=package)
    return record


def _declared(ctx: TurnContext, agent: str | None) -> AgentRules:
    """The rules the agent declares (empty for no agent)."""
    found = ctx.program.agents.get(agent or "")
    return found.rules if found is not None else AgentRules()


def _declared_priority(ctx: TurnContext, agent: str | None, reason: str) -> str:
    for trigger in _declared(ctx, agent).escalation:
        if trigger.reason and trigger.reason == reason:
            return trigger.priority
    return "medium"


def context_for_human(ctx: TurnContext, agent: str | None) -> dict[str, Any]:
    """The agent's `context_for_human` list read against the session. Without one: the transcript, the
    agent's values and the failure counts."""
    declared = _declared(ctx, agent).metadata.get("ESCALATE")
    items = declared.get("context_for_human") if isinstance(declared, dict) else None
    if items is None and isinstance(declared, list):  # ESCALATE as a list of triggers with CONTEXT: [...]
        items = [x for entry in declared if isinstance(entry, dict) for x in _as_list(entry.get("CONTEXT", entry.get("context")))]
    if not items:
        items = ["conversation_transcript", "gathered", "failure_reasons"]
    values = ctx.values(agent) if agent and agent in ctx.program.agents else {}
    package: dict[str, Any] = {}
    for item in _as_list(items):
        if isinstance(item, dict):
            for key, spec in item.items():
                package[str(key)] = _resolve(ctx, agent, values, spec)
        else:
            name = str(item)
            package[name] = _named(ctx, agent, values, name)
    return package


def _as_list(value: Any) -> list:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _named(ctx: TurnContext, agent: str | None, values: dict[str, Any], name: str) -> Any:
    system = ctx.state.system
    if name in TRANSCRIPT_ITEMS:
        return [f"{'User' if h.role == 'user' else h.agent or 'Bot'}: {h.text}" for h in ctx.state.history]
    if name in ("gathered", "extracted_requirements"):
        return {k: v for k, v in values.items() if v is not None}
    if name in ("failure_reasons", "failures"):
        return {k: system.get(k, 0) for k in ("tool_failures", "constraint_failures")}
    if name in ("tool_results", "attempted_actions"):
        return {k: {"status": r.status, "message": r.message} for k, r in ctx.state.results.items()}
    if name in ("active_agent", "current_state"):
        return next((f.agent for f in reversed(ctx.state.stack) if f.graph == "main"), None)
    return _lookup(ctx, agent, values, name)


def _lookup(ctx: TurnContext, agent: str | None, values: dict[str, Any], path: str) -> Any:
    """A value by its dotted name: the agent's values, then session variables, then system variables."""
    head, *rest = path.strip().strip("{}").strip().split(".")
    if head in values:
        value = values[head]
    elif head in ctx.state.system:
        value = ctx.state.system[head]
    else:
        value = next((ns[head] for ns in ctx.state.variables.values() if isinstance(ns, dict) and head in ns), None)
        if value is None and path in ctx.state.system:
            return ctx.state.system[path]
    for part in rest:
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _resolve(ctx: TurnContext, agent: str | None, values: dict[str, Any], spec: Any) -> Any:
    """A package entry as written: `{name}` or `{a, b}` read from the session; a mapping entry by entry;
    text with `{x}` placeholders filled in; other text kept."""
    if isinstance(spec, dict):  # {a, b} in YAML is a mapping of names to nothing: read each name
        return {str(k): _named(ctx, agent, values, str(k)) if v is None else _resolve(ctx, agent, values, v)
                for k, v in spec.items()}
    if isinstance(spec, list):
        return [_resolve(ctx, agent, values, v) for v in spec]
    if not isinstance(spec, str):
        return spec
    text = spec.strip()
    whole = re.fullmatch(r"\{\s*([\w.]+(?:\s*,\s*[\w.]+)*)\s*\}", text)
    if whole:
        names = [n.strip() for n in whole.group(1).split(",")]
        if len(names) == 1:
            return _named(ctx, agent, values, names[0])
        return {n: _named(ctx, agent, values, n) for n in names}
    return re.sub(r"\{\s*([\w.]+)\s*\}", lambda m: str(_lookup(ctx, agent, values, m.group(1))), text)


def after_turn(ctx: TurnContext) -> None:
    """After the agents ran: check the triggers, and give an escalation made elsewhere this turn (an
    ON_FAIL or ON_ERROR action) its record too."""
    if check_triggers(ctx) or ctx.state.status != "escalated":
        return
    record = ctx.state.system.get("escalation")
    if isinstance(record, dict) and record.get("turn") == ctx.state.turn:
        return
    escalated = [e for e in ctx.log.events if e.type == "session_escalated"]
    if escalated:
        escalate(ctx, escalated[-1].agent, str(escalated[-1].data.get("reason", "")))


register_event_type("escalation_holding",
                    "a message came while the session waits for a person: recorded for them, answered with a "
                    "holding reply; no agent, tool or model ran", ("text", "waiting", "reply"))
HOLDING_REPLY = "A member of our team will reply here shortly."
HOLDING_MESSAGE = "escalation_holding"  # the MESSAGES entry that words the holding reply
WAITING_ITEM = "messages_while_waiting"  # where the package keeps what the user said meanwhile


def hold(ctx: TurnContext, text: str) -> None:
    """A message while the session is escalated (until the person hands it back, `human_completed`): it
    goes into the conversation and into the `context_for_human` package (`messages_while_waiting`), and
    the user gets a holding reply, the escalating agent's `MESSAGES: escalation_holding` (or that of an
    agent on the stack, or the entry agent's), else HOLDING_REPLY. No agent, tool, hook or model runs."""
    state = ctx.state
    state.history.append(HistoryItem(role="user", text=text, turn=state.turn))
    ctx.log.emit("user_message", None, text=text)
    record = state.system.get("escalation")
    if not isinstance(record, dict):  # escalated without a record (an older session): make one
        record = {"agent": None, "reason": "", "priority": "medium", "turn": state.turn, "context_for_human": {}}
        state.system["escalation"] = record
    package = record.setdefault("context_for_human", {})
    if not isinstance(package, dict):
        package = record["context_for_human"] = {"context": package}
    waiting = package.setdefault(WAITING_ITEM, [])
    waiting.append({"turn": state.turn, "text": text})
    agent, reply = holding_reply(ctx, record.get("agent"))
    ctx.log.emit("escalation_holding", agent, text=text, waiting=len(waiting), reply=reply)
    ctx.say(agent, reply)


def holding_reply(ctx: TurnContext, escalated_by: str | None) -> tuple[str | None, str]:
    """Who says the holding reply and its words (MESSAGES: escalation_holding, else the default)."""
    names = [escalated_by, *(f.agent for f in reversed(ctx.state.stack)), ctx.program.entry]
    for name in dict.fromkeys(n for n in names if n):
        if _declared(ctx, name).messages.get(HOLDING_MESSAGE):
            return name, message(ctx, name, HOLDING_MESSAGE, HOLDING_REPLY)
    speaker = escalated_by if escalated_by in ctx.program.agents else None
    return speaker, HOLDING_REPLY


register_event_type("human_completed", "the person the session was escalated to finished (on_human_complete)",
                    ("outcome", "action"))


def human_completed(ctx: TurnContext, human: dict[str, Any]) -> str:
    """The person handed the session back (ABL 3.11.3): `human` holds what they report (resolved,
    resolution_summary, handed_back, instructions, ...). `escalate.completed` becomes true, the session
    is active again, and the escalating agent's first on_human_complete rule that holds runs: its words
    are said; COMPLETE: true ends that agent (the supervisor below takes the next message); CONTINUE
    gives the agent the person's instructions and it goes on. Returns what was done."""
    record = ctx.state.system.get("escalation")
    agent = record.get("agent") if isinstance(record, dict) else None
    ctx.state.system["escalate.completed"] = True
    ctx.state.system["human"] = dict(human)
    if ctx.state.status == "escalated":
        ctx.state.status = "active"
    _reset_failure_counts(ctx, owner_name=agent)
    owner = agent if agent in ctx.program.agents else None
    if owner is not None:
        ctx.assign(Ref(scope="session", name="human"), dict(human), owner, why="the person's report")
    frame = next((f for f in reversed(ctx.state.stack) if f.agent == owner and f.graph == "main"), None)
    action = "none"
    for rule in _declared(ctx, owner).after_human:
        if not ctx.holds(rule.when, owner, frame, where="on_human_complete"):
            continue
        if rule.action.respond is not None:
            ctx.say(owner, ctx.render(rule.action.respond, owner, frame), frame)
        extra = rule.action.extra
        if extra.get("complete") and frame is not None:
            action = "complete"
            _end_agent(ctx, frame)
        elif extra.get("continue"):
            action = "continue"
            note = str(human.get("instructions") or extra["continue"])
            if frame is not None and frame.kind == "reasoning":
                frame.data.messages.append({"role": "system",  # type: ignore[union-attr]
                                            "content": f"A human colleague handed the conversation back: {note}"})
        else:
            action = "respond"
        ctx.log.emit("human_completed", owner, outcome=dict(human), action=action, condition=rule.when.source)
        return action
    ctx.log.emit("human_completed", owner, outcome=dict(human), action=action)
    return action


RESET_AFTER_HUMAN = ("constraint_failures", "tool_failures")


def _reset_failure_counts(ctx: TurnContext, owner_name: str | None) -> None:
    """The failures that led to the escalation were the person's to deal with: `constraint_failures` and
    `tool_failures` (8.8) start again from 0 (the package for the person keeps what they were), so a rule
    such as `LIMIT constraint_failures < 3` or a trigger `tool_failures > 3` does not send the session
    straight back to a person at the next message."""
    system = ctx.state.system
    for name in RESET_AFTER_HUMAN:
        if system.get(name):
            system[name] = 0
            ctx.log.emit("arg_set", owner_name, scope="system", name=name, value=0, why="handed back by a person")


def _end_agent(ctx: TurnContext, frame) -> None:
    """COMPLETE: true after the person: the agent (and what it called) leaves the stack; a supervisor
    below it takes the next message. The entry agent stays: it is the conversation's home."""
    stack = ctx.state.stack
    if frame not in stack or stack.index(frame) == 0:
        return
    index = stack.index(frame)
    for done in stack[index:]:
        done.status = "done"
        ctx.set_status(done.agent, "success", "resolved by a person")
        ctx.log.emit("agent_finished", done.agent, status="success", by="a person")
    del stack[index:]
    if stack:
        stack[-1].waiting = True


# ---- 8.8 user.sentiment and sentiment_trajectory, read without a model --------------------------------

_SENTIMENT_WORDS: dict[str, tuple[str, ...]] = {
    "frustrated": ("frustrat", "ridiculous", "useless", "fed up", "waste of time", "unacceptable", "annoying",
                   "annoyed", "again and again", "third time", "still not", "still no", "how many times",
                   "sick of", "had enough", "not working again"),
    "very_negative": ("hate", "awful", "terrible", "worst", "disgusting", "furious", "horrible", "scam",
                      "lawyer", "lawsuit"),
    "negative": ("bad", "not happy", "unhappy", "disappointed", "problem", "wrong", "upset", "broken",
                 "doesn't work", "does not work", "angry", "poor"),
    "very_positive": ("amazing", "excellent", "fantastic", "wonderful", "brilliant", "outstanding"),
    "positive": ("thanks", "thank you", "great", "perfect", "good", "love", "awesome", "nice", "helpful"),
}
_SENTIMENT_SCORE = {"very_negative": -2, "frustrated": -2, "negative": -1, "neutral": 0, "positive": 1,
                    "very_positive": 2}
TRAJECTORY_WINDOW = 3  # user messages the trajectory looks at


def sentiment_of(text: str) -> str:
    """One of 8.8's legal values, from words and shouting: the strongest reading wins, frustration first."""
    lowered = " " + re.sub(r"\s+", " ", text.lower()) + " "
    shouting = sum(1 for w in re.findall(r"[A-Za-z]{3,}", text) if w.isupper()) >= 2 or "!!" in text
    found = {label for label, words in _SENTIMENT_WORDS.items()
             if any(re.search(rf"(?<![a-z]){re.escape(w)}", lowered) for w in words)}
    negated = re.search(r"\b(not|no|never|n't)\s+(very\s+)?(good|great|helpful|nice|perfect)\b", lowered)
    if negated:
        found.discard("positive")
        found.add("negative")
    if "frustrated" in found or (shouting and found & {"negative", "very_negative"}):
        return "frustrated"
    for label in ("very_negative", "negative", "very_positive", "positive"):
        if label in found:
            return label
    return "neutral"


def trajectory_of(scores: list[int]) -> str:
    if len(scores) < 2:
        return "stable"
    steps = [b - a for a, b in pairwise(scores)]
    if any(s > 0 for s in steps) and any(s < 0 for s in steps):
        return "volatile"
    if sum(steps) < 0:
        return "declining"
    if sum(steps) > 0:
        return "improving"
    return "stable"


def read_sentiment(ctx: TurnContext, text: str) -> None:
    """Set `user.sentiment` and `sentiment_trajectory` (ABL 8.8) from the user's message, when an agent's
    policy keeps the system variables (conditions and ESCALATE triggers read them); else the session's
    state is left as it was."""
    if not text or not any(a.policy.system_variables for a in ctx.program.agents.values()):
        return
    label = sentiment_of(text)
    scores = [int(s) for s in ctx.state.system.get("_sentiment_scores") or []][-(TRAJECTORY_WINDOW - 1):]
    scores.append(_SENTIMENT_SCORE[label])
    ctx.state.system["_sentiment_scores"] = scores
    ctx.state.system["user.sentiment"] = label
    ctx.state.system["sentiment_trajectory"] = trajectory_of(scores)
