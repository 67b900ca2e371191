"""An LLM agent's tools with no model that can reason (issue: decisions offline come from what can make them).

With only the local models, the sentence-embedding model chooses the tool a message clearly asks for (the
message against each tool's description, name, parameters and the agent's own sentences that name it; a
floor and a margin, so an unclear message chooses none), and typed parsing fills its arguments from the
message only: a value a parameter lists that the message names, a number or a date the project's readers
find (runtime/extract.py), a free text the message marks clearly (quoted, "genre: romance", "by Ursula Le
Guin", or the answer to the question the agent asked for it). Nothing is invented: a required argument the
message does not give is asked for. A tool that changes something (declared `side_effects`, one the user
must confirm, or, undeclared, one whose name says it changes something) never runs offline. The result is
said plainly, as the tool gave it. The small local generator never chooses a tool or fills a value.
"""

from __future__ import annotations

import re
from typing import Any

from frontdesk.nlu.base import Option, Thresholds
from frontdesk.runtime import extract
from frontdesk.runtime.context import Outcome, TurnContext
from frontdesk.runtime.state import Frame

# A tool is chosen when its score reaches TOOL_FLOOR and beats the next tool's by TOOL_MARGIN (the routing
# score: embeddings and keywords). On the bookstore's recommender "can you recommend a fantasy book?" scores
# 0.67 (next 0.42), "what are your bestsellers" 0.82; "I'd like the first one" 0.29, "hello" 0.08, and "I want
# to order a book" leads by 0.01 only.
TOOL_FLOOR = 0.40
TOOL_MARGIN = 0.10
PENDING = "_offline_tool"  # frame.locals: the tool waiting for an argument the agent asked for
# Undeclared (ADL tools declare nothing): a tool whose name starts with one of these changes something.
_CHANGING = {"add", "append", "assign", "block", "book", "buy", "cancel", "change", "charge", "close", "create",
             "delete", "deposit", "disable", "enable", "escalate", "file", "freeze", "insert", "issue", "lock",
             "make", "modify", "open", "pay", "place", "post", "purchase", "put", "record", "refund",
             "register", "remove", "renew", "replace", "reserve", "reset", "save", "schedule", "send", "set",
             "submit", "transfer", "unblock", "unlock", "update", "upsert", "withdraw", "write"}
_QUOTED = re.compile(r"\"([^\"]{1,80})\"|“([^”]{1,80})”|(?<![\w])'([^']{1,80})'(?![\w])")
_BY_NAME = re.compile(r"\bby\s+((?:[A-Z][\w'.-]*)(?:\s+(?:[A-Z][\w'.-]*|de|van|von|le|la|du)){0,3})")


def changes_something(tdef) -> bool:
    """Whether running the tool may change something (then it never runs without a model and a person)."""
    conf = tdef.confirmation
    if conf is not None:
        return bool(conf.side_effects) or conf.require == "always"
    first = re.split(r"[_\W]+", tdef.name.lower().strip("_"))[0] if tdef.name else ""
    return first in _CHANGING


def usable_tools(ctx: TurnContext, agent, hidden=()) -> list:
    """The agent's tools that may run offline: declared, not hidden, changing nothing."""
    out = []
    for name in agent.tools:
        tdef = ctx.program.tools.get(name)
        if tdef is not None and name not in hidden and not changes_something(tdef):
            out.append(tdef)
    return out


def _words(name: str) -> str:
    return " ".join(w for w in re.split(r"[_\W]+", name) if w)


def tool_option(agent, tdef) -> Option:
    """The phrases a tool is chosen by: its description, its name in words, its parameters' descriptions,
    and the agent's own instruction sentences that name it (with the name in words)."""
    examples = [tdef.description.strip(), _words(tdef.name)]
    examples += [p.description.strip() for p in tdef.params if p.description.strip()]
    prompt = getattr(agent, "instructions", "") or ""
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", prompt):
        if tdef.name in sentence:
            examples.append(sentence.replace('"', "").replace(tdef.name, _words(tdef.name)).strip(" -0123456789."))
    return Option(key=tdef.name, examples=tuple(e for e in examples if e))


def choose_tool(ctx: TurnContext, agent, text: str, tools: list):
    """(tool name or None, its score, its lead over the next, every tool's score); None when no embedding model."""
    understanding = ctx.understanding
    if understanding is None or not tools or not text.strip():
        return None
    options = [tool_option(agent, t) for t in tools]
    try:
        decision = understanding.decide(text, options, "route",
                                        Thresholds(accept=TOOL_FLOOR, margin=TOOL_MARGIN, reject=TOOL_FLOOR))
    except Exception as exc:  # a broken local model must not end the conversation
        ctx.log.emit("error", agent.name, where="tool choice by embedding", message=f"{type(exc).__name__}: {exc}")
        return None
    scores = {k: round(float(v), 3) for k, v in decision.scores.items()}
    best = decision.best or decision.choice
    score = scores.get(best, 0.0) if best else 0.0
    ranked = sorted(scores.values(), reverse=True)
    lead = round(ranked[0] - (ranked[1] if len(ranked) > 1 else 0.0), 3) if ranked else 0.0
    chosen = best if best and score >= TOOL_FLOOR and lead >= TOOL_MARGIN else None
    return chosen, best, score, lead, scores


# ---- arguments: only what the message gives ------------------------------------------------------------


def listed_values(ctx: TurnContext, agent, param) -> tuple[list[str], bool]:
    """The values a parameter lists and whether the list is closed: its enum, a GATHER field of its name's
    options (closed), or the quoted examples of its description ("e.g. "mystery", "fantasy" or ...": open)."""
    enum = getattr(param, "enum", None) or []
    if enum:
        return [str(v) for v in enum], True
    try:
        rules = ctx.program.rules_for(agent.name)
        field = next((f for f in rules.gather if f.name == param.name), None)
    except Exception:  # noqa: BLE001 - an agent with no rules
        field = None
    if field is not None and getattr(field, "options", None):
        return [str(o) for o in field.options], True
    quoted = [next(g for g in m.groups() if g) for m in _QUOTED.finditer(param.description or "")]
    if len(quoted) >= 2:
        return quoted, False
    return [], False


def _variants(word: str) -> str:
    """A word as a pattern that also matches its simple plural (mystery: mysteries, book: books)."""
    w = re.escape(word)
    if word.endswith("y") and len(word) > 2:
        return rf"(?:{w}|{re.escape(word[:-1])}ies)"
    if word.endswith("f") and len(word) > 2:  # scarf: scarves
        return rf"(?:{w}s?|{re.escape(word[:-1])}ves)"
    if word.endswith("fe") and len(word) > 3:  # knife: knives
        return rf"(?:{w}s?|{re.escape(word[:-2])}ves)"
    if word.endswith(("s", "x", "ch", "sh")):
        return rf"{w}(?:es)?"
    return rf"{w}s?"


def named_value(text: str, options: list[str]) -> str | None:
    """The one listed value the message names (case-insensitive, whole words, simple plurals); None when it
    names none, or more than one and it does not say no to all but one."""
    lowered = text.lower()
    hits = []
    for option in options:
        words = str(option).lower().split()
        if not words:
            continue
        pattern = r"\s+".join([re.escape(w) for w in words[:-1]] + [_variants(words[-1])])
        found = re.search(rf"(?<!\w){pattern}(?!\w)", lowered)
        if found:
            hits.append((option, found.start()))
    if len(hits) > 1:  # "not fantasy, science fiction": an option said no to is not the one meant
        kept = [(o, at) for o, at in hits
                if not re.search(rf"\b(?:not|no|instead\s+of|rather\s+than)\s+(?:the\s+|a\s+|an\s+)?$", lowered[:at])]
        hits = kept or hits
    return hits[0][0] if len(hits) == 1 else None


def _kind(param) -> str | None:
    if param.type in extract.PATTERN_TYPES:
        return param.type
    return extract.kind_of_name(param.name)


def ground_args(ctx: TurnContext, agent, tdef, text: str, asked: str | None = None) -> dict[str, Any]:
    """The arguments of `tdef` the message gives (see the module's docstring); `asked` is the parameter
    the agent asked for, which the whole (short) answer may give."""
    found: dict[str, Any] = {}
    quoted = [next(g for g in m.groups() if g).strip() for m in _QUOTED.finditer(text)]
    for param in tdef.params:
        options, closed = listed_values(ctx, agent, param)
        if options:
            value = named_value(text, options)
            if value is not None:
                found[param.name] = value
                continue
            if closed:
                continue
        kind = _kind(param)
        if param.type == "boolean" and param.name != asked:
            continue  # how to call the tool, not something the user says
        if kind in ("number", "integer"):
            value = _number(ctx, text, param, tdef, asked)
            if value is not None:
                found[param.name] = value
            continue
        if kind in ("date", "datetime", "email", "phone"):
            values = extract.extract_values(text, {param.name: kind}, now=ctx.eval_env.clock())
            if param.name in values:
                found[param.name] = values[param.name]
            continue
        if kind == "identifier":
            spans = extract.spans(text, "identifier")
            if len(spans) == 1:
                found[param.name] = spans[0]
            continue
        if param.type not in ("string", "", None):
            continue  # arrays and objects are never read from a message offline
        value = extract.value_named(text, param.name)
        if value is None and len(quoted) == 1:
            value = quoted[0]
        if value is None and re.search(r"author|writer|artist|composer|director", param.name, re.IGNORECASE):
            by = _BY_NAME.search(text)
            value = by.group(1).strip() if by else None
        if value is None and param.name == asked:
            value = extract.short_answer(text)
        if value is not None and str(value).strip():
            found[param.name] = str(value).strip()
    if len(quoted) == 1:  # one quoted text is one value: it fills one free-text parameter, not several
        holders = [n for n, v in found.items() if v == quoted[0]]
        for extra in holders[1:]:
            found.pop(extra)
    return found


def _number(ctx: TurnContext, text: str, param, tdef, asked: str | None):
    """A number for a numeric parameter: the one the message gives when the parameter is required or was
    asked for; for an optional one, only a number said with what it counts ("5 books", the parameter's or
    the tool's words), so "a book like 1984" sets no count."""
    values = extract.extract_values(text, {param.name: param.type if param.type in ("number", "integer")
                                           else "number"}, now=ctx.eval_env.clock())
    if param.name not in values:
        return None
    if param.required or param.name == asked:
        return values[param.name]
    counted = set(re.findall(r"[a-z]+", f"{param.name} {param.description} {tdef.description}".lower()))
    counted = {w for w in counted if len(w) > 3}
    for match in re.finditer(r"(?<![\w.-])(\d+|" + "|".join(extract.NUMBER_WORDS) + r")\s+([a-z]+)", text.lower()):
        noun = match.group(2)
        if noun in counted or noun.rstrip("s") in counted or noun + "s" in counted:
            said = match.group(1)
            return int(said) if said.isdigit() else extract.NUMBER_WORDS[said]
    return None


def question_for(ctx: TurnContext, agent, tdef, param) -> str:
    """How the agent asks for an argument: its GATHER field's prompt, else a plain question naming it."""
    try:
        field = next((f for f in ctx.program.rules_for(agent.name).gather if f.name == param.name), None)
    except Exception:  # noqa: BLE001
        field = None
    if field is not None and getattr(field, "prompt", ""):
        return field.prompt
    label = _words(param.name).lower()
    options, _ = listed_values(ctx, agent, param)
    if options:
        listed = ", ".join(options[:-1]) + f" or {options[-1]}" if len(options) > 1 else options[0]
        return f"Which {label} would you like? For example {listed}."
    if param.description.strip():
        return f"What {label} should I use? ({param.description.strip().rstrip('.')}.)"
    return f"What {label} should I use?"


# ---- what is said -------------------------------------------------------------------------------------


def render_result(result) -> str:
    """A tool's result said plainly, with no model to phrase it: an ADL tool's message and what it printed,
    or a returned value as "name: value" lines."""
    if result.status != "success" or result.error:
        return (result.message or "Sorry, that did not work just now.").strip()
    if result.message.strip():
        # a tool's short status first ("Found 3 best-selling fantasy books."), then what it listed
        lines = [line.strip() for line in result.message.strip().splitlines() if line.strip()]
        return "\n".join(sorted(lines, key=lambda line: ": " in line))
    return _plain(result.value) or "Done."


def _plain(value: Any, depth: int = 0) -> str:
    if value is None or value == "" or value == [] or value == {}:
        return ""
    if isinstance(value, dict):
        return "; ".join(f"{_words(str(k))}: {_plain(v, depth + 1)}" for k, v in value.items()
                         if _plain(v, depth + 1))
    if isinstance(value, list):
        parts = [_plain(v, depth + 1) for v in value]
        joiner = "\n" if depth == 0 and any(isinstance(v, dict) for v in value) else ", "
        return joiner.join(p for p in parts if p)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def what_i_can_do(tools: list) -> str:
    """The tools' descriptions as what the agent can still do ("find the best-selling books of a genre ...")."""
    said = []
    for t in tools:
        text = re.split(r",?\s+(?:e\.g\.|for example|such as)\s", t.description.strip())[0].strip().rstrip(".")
        if text:
            said.append(text[0].lower() + text[1:])
    if not said:
        return ""
    return said[0] if len(said) == 1 else ", ".join(said[:-1]) + f" or {said[-1]}"


def cannot_do(tools: list, why: str) -> str:
    """The honest reply when no tool fits the message: why, and what the agent can still do here."""
    can = what_i_can_do(tools)
    text = f"I can't work that out here: {why}."
    return f"{text} What I can do here is {can}." if can else text


def offline_tool_turn(ctx: TurnContext, agent, frame: Frame, *, hidden=(), why: str,
                      no_tool: str | None = None) -> Outcome | None:
    """One offline turn of an agent with tools: the tool the message asks for, run with the arguments it
    gives, or the question for one it does not, or (no tool clear) `no_tool` / what it cannot do. None when
    there is nothing to read (no message taken, no embedding model, no tool that may run)."""
    text = (ctx.input.text or "") if ctx.input.taken_by(frame) else ""
    tools = usable_tools(ctx, agent, hidden)
    # the choice is made among all its tools: a message that asks for one that changes something is
    # told so, rather than answered with another tool
    every = [ctx.program.tools[n] for n in agent.tools if n in ctx.program.tools and n not in hidden]
    if not text.strip() or not tools or ctx.understanding is None:
        frame.locals.pop(PENDING, None)
        return None
    by_name = {t.name: t for t in tools}
    pending = frame.locals.pop(PENDING, None)
    tdef = args = None
    score = None
    if isinstance(pending, dict) and pending.get("tool") in by_name:
        tdef = by_name[pending["tool"]]
        given = ground_args(ctx, agent, tdef, text, asked=pending.get("asking"))
        if pending.get("asking") in given:  # the answer to the question asked
            args = {**pending.get("args", {}), **given}
            score = pending.get("score")
        else:
            tdef = None  # not an answer: the message is read afresh
    if tdef is None:
        choice = choose_tool(ctx, agent, text, every)
        if choice is None:
            return None
        chosen, best, score, lead, scores = choice
        if chosen is not None and chosen not in by_name:  # it changes something: never run offline
            ctx.log.emit("reasoning_offline", agent.name, action="not run", tool=chosen, score=score,
                         reason="the tool changes something")
            what = what_i_can_do([ctx.program.tools[chosen]]) or _words(chosen)
            words = no_tool or f"I can't {what} here: {why}. " + (
                f"What I can do here is {what_i_can_do(tools)}." if what_i_can_do(tools) else "")
            words = words.strip()
            ctx.say(agent.name, words, frame)
            frame.data.messages.append({"role": "assistant", "content": words})
            frame.waiting = True
            return Outcome.wait()
        if chosen is None:
            ctx.log.emit("reasoning_offline", agent.name, action="no tool", best=best, score=score, margin=lead,
                         scores=scores)
            words = no_tool or cannot_do(tools, why)
            ctx.say(agent.name, words, frame)
            frame.data.messages.append({"role": "assistant", "content": words})
            frame.waiting = True
            return Outcome.wait()
        tdef = by_name[chosen]
        args = ground_args(ctx, agent, tdef, text)
    missing = [p for p in tdef.params if p.required and p.name not in args]
    if missing:
        param = missing[0]
        frame.locals[PENDING] = {"tool": tdef.name, "args": args, "asking": param.name, "score": score}
        ctx.log.emit("reasoning_offline", agent.name, action="ask", tool=tdef.name, field=param.name, args=args,
                     score=score)
        words = question_for(ctx, agent, tdef, param)
        ctx.say(agent.name, words, frame)
        frame.data.messages.append({"role": "assistant", "content": words})
        frame.last_prompt = words
        frame.waiting = True
        return Outcome.wait()
    ctx.log.emit("reasoning_offline", agent.name, action="tool", tool=tdef.name, args=args, score=score)
    result = ctx.call_tool(tdef.name, args, agent.name, frame)
    if not result.bot:  # what the tool said to the user itself is said already
        words = render_result(result)
        ctx.say(agent.name, words, frame)
        frame.data.messages.append({"role": "assistant", "content": words})
    frame.waiting = True
    return Outcome.wait()
