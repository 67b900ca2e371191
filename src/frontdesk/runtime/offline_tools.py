"""An LLM agent's tools with no model that can reason (issue: decisions offline come from what can make them).

With only the local models, the sentence-embedding model chooses the tool a message clearly asks for (the
message against each tool's description, name, parameters and the agent's own sentences that name it; a
floor and a margin, so an unclear message chooses none), and typed parsing fills its arguments from the
message only: a value a parameter lists that the message names, a number or a date the project's readers
find (runtime/extract.py), a free text the message marks clearly (quoted, "genre: romance", "by Ursula Le
Guin", or the answer to the question the agent asked for it). Nothing is invented: a required argument the
message does not give is asked for. A tool that changes something (declared `side_effects`, one the user
must confirm, or, undeclared, one whose name says it changes something) is never chosen here; an agent
whose prompt names one follows that prompt as a form instead (runtime/offline_form.py), and runs it
only after the user said yes to a summary. The result is
said plainly, as the tool gave it. The small local generator never chooses a tool or fills a value.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from frontdesk.nlu.base import Option, Thresholds
from frontdesk.runtime import extract
from frontdesk.runtime.state import Frame
from frontdesk.runtime.steps import Outcome
from frontdesk.runtime.tools.effects import _CHANGING, changes_something  # noqa: F401 - changes_something: used here

if TYPE_CHECKING:  # pragma: no cover - runtime.context imports the rules, which import policies (and this)
    from frontdesk.runtime.context import TurnContext

# A tool is chosen when its score reaches TOOL_FLOOR and beats the next tool's by TOOL_MARGIN (the routing
# score: embeddings and keywords). On the bookstore's recommender "can you recommend a fantasy book?" scores
# 0.67 (next 0.42), "what are your bestsellers" 0.82; "I'd like the first one" 0.29, "hello" 0.08, and "I want
# to order a book" leads by 0.01 only.
TOOL_FLOOR = 0.40
TOOL_MARGIN = 0.10
# A message naming a value a tool's parameter lists chooses that tool from this score ("Mystery, please." 0.36).
NAMED_FLOOR = 0.25
# A message giving the name a tool's only required parameters ask for (a book's title) chooses it from this score
# ("I want to buy The Lantern Room Murders." 0.18 for query_book_genre).
NAME_FLOOR = 0.15
# A message's noun stands for a tool's ("novel" for "books") at this similarity (all-MiniLM-L6-v2: novel/books
# 0.63, novel/book 0.77; paperback/books about 0.5).
KIND_NOUN = 0.60
PENDING = "_offline_tool"  # frame.locals: the tool waiting for an argument the agent asked for
# capitalised words that name a day or a month, not a person or a thing ("on the 1st of December")
_CALENDAR = {"january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
             "november", "december", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
             "christmas", "easter"}
_ASKING = {"please", "call", "contact", "pay", "email", "message", "text", "find", "show", "check", "tell", "ask",
           "get", "give", "recommend", "try", "use"}
_QUOTED = re.compile(r"\"([^\"]{1,80})\"|“([^”]{1,80})”|(?<![\w])'([^']{1,80})'(?![\w])")
_BY_NAME = re.compile(r"\bby\s+((?:[A-Z][\w'.-]*)(?:\s+(?:[A-Z][\w'.-]*|de|van|von|le|la|du)){0,3})")


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


def has_value(value: Any) -> bool:
    """Whether a held value counts as given: not None, not blank, not an empty list or object."""
    return value is not None and not (isinstance(value, str) and not value.strip()) and value not in ([], {})


def held_args(ctx: TurnContext, agent, tdef, given: dict[str, Any]) -> dict[str, Any]:
    """The parameters of `tdef` the message does not give that the agent's own arguments hold, by the same
    name (the username the session knows): values the session has, not read from the message."""
    values = ctx.values(agent.name)
    out = {}
    for param in tdef.params:
        if param.name in given:
            continue
        value = values.get(param.name)
        if has_value(value):
            out[param.name] = value
    return out


def first_step_tool(ctx: TurnContext, agent, tools: list) -> str | None:
    """The tool the agent's prompt says to call first ("1. ... Call "action_ask_account" with the username
    to show the user their accounts"), when it changes nothing and every required argument is held by the
    agent already: what the agent does first when it starts on a message that asks for no tool clearly."""
    prompt = getattr(agent, "instructions", "") or ""
    by_name = {t.name: t for t in tools}
    first = None
    for match in re.finditer(r"[A-Za-z_][\w]*", prompt):
        if match.group(0) in agent.tools:
            first = match.group(0)
            break
    tdef = by_name.get(first) if first else None  # the first tool it names, if it may run offline
    if tdef is None:
        return None
    held = held_args(ctx, agent, tdef, {})
    return tdef.name if all(p.name in held for p in tdef.params if p.required) else None


def next_step_tool(ctx: TurnContext, agent, ran: str, tools: list):
    """The tool the agent's prompt names next after `ran` (a later step), when it changes nothing and the
    agent now holds every argument it needs (what `ran` returned); None otherwise."""
    prompt = getattr(agent, "instructions", "") or ""
    names = [m.group(0) for m in re.finditer(r"[A-Za-z_]\w*", prompt) if m.group(0) in agent.tools]
    later = [n for n in names[names.index(ran) + 1:] if n != ran] if ran in names else []
    by_name = {t.name: t for t in tools}
    tdef = by_name.get(later[0]) if later else None
    if tdef is None:
        return None
    held = held_args(ctx, agent, tdef, {})
    return tdef if all(p.name in held for p in tdef.params if p.required) else None


def named_choice(ctx: TurnContext, agent, text: str, tools: list, scores: dict) -> str | None:
    """With no tool clear by meaning alone, the one tool within reach (NAMED_FLOOR) for which the message
    names a value one of its parameters lists, or the kind it is about ("Mystery, please." for the tool
    whose genre lists "mystery"; "do you have history books too?" for the one about books of a genre);
    None when no tool or several do."""
    named = []
    for tdef in tools:
        if scores.get(tdef.name, 0.0) < NAME_FLOOR:
            continue
        required = [p for p in tdef.params if p.required]
        if scores.get(tdef.name, 0.0) >= NAME_FLOOR and required and all(_names_a_name(p) for p in required) and \
                all(p.name in ground_args(ctx, agent, tdef, text) for p in required):
            named.append(tdef.name)  # "I loved Dune.": the tool of a book's name, the name given
            continue
        if scores.get(tdef.name, 0.0) < NAMED_FLOOR:
            continue
        for param in tdef.params:
            options, closed = listed_values(ctx, agent, param)
            if not options:
                continue
            if named_value(text, options) is not None or \
                    (not closed and _names_kinds(param, options) and kind_named(ctx, agent, tdef, text)):
                named.append(tdef.name)
                break
    return named[0] if len(named) == 1 else None


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
    if len(quoted) >= 2 or (quoted and re.search(r"\b(?:e\.g\.|for example|such as)", param.description or "")):
        return quoted, False  # one example said as one ("e.g. "savings"") is an example too
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


# Words that say which of a kind without naming one ("any good books", "other books"): never a value.
_NOT_A_KIND = {"a", "an", "the", "any", "some", "other", "another", "more", "few", "many", "several", "good",
               "great", "nice", "new", "newer", "old", "older", "best", "better", "top", "similar", "same",
               "different", "cheap", "cheaper", "interesting", "popular", "recent", "latest", "used", "short",
               "long", "big", "small", "favourite", "favorite", "this", "that", "these", "those", "your", "my",
               "our", "their", "his", "her", "its", "all", "no", "what", "which", "whose", "such", "few", "own",
               "one", "two", "three", "couple", "lot", "lots", "kind", "type", "sort", "kinds", "types", "sorts",
               "of", "for", "to", "in", "on", "with", "and", "or", "me", "you", "us", "them", "it", "some",
               "like", "love", "loved", "want", "need", "have", "got", "get", "buy", "order", "add", "recommend",
               "suggest", "please", "too", "also", "really", "very", "just", "only", "still", "again", "fun",
               "light", "easy", "classic", "famous", "bestselling", "selling", "cool", "awesome", "amazing"}


def _heads(ctx: TurnContext, agent, tdef) -> list[str]:
    """The nouns a tool and its agent are about, in their descriptions' words ("books" of "Find the best-selling
    books of a genre")."""
    words = re.findall(r"[a-z]+", f"{tdef.description} {getattr(agent, 'description', '')}".lower())
    return sorted({w for w in words if len(w) > 3 and w not in _NOT_A_KIND})


def _same_noun(word: str, heads: list[str]) -> bool:
    return any(word == h or word.rstrip("s") == h.rstrip("s") for h in heads)


def _names_kinds(param, options: list[str]) -> bool:
    """Whether a parameter's examples are kinds in words ("mystery", "savings"), not numbers, dates or codes."""
    return _kind(param) is None and all(re.fullmatch(r"[A-Za-z][A-Za-z '-]*", str(o)) for o in options)


def kind_named(ctx: TurnContext, agent, tdef, text: str) -> str | None:
    """For a parameter that names a kind of what the tool is about (its description's examples an open list:
    "e.g. "mystery", "fantasy" ..."), the kind the message names in the user's own word right before that
    noun: "romance" in "a romance novel", "history" in "history books". The noun is one of the tool's or
    its agent's descriptions ("books"), or a word the embedding model finds close to one ("novel"); a word
    that only says which ("any", "good", "other") or one of the descriptions' own words is never a kind.
    None when the message names none, or more than one."""
    heads = _heads(ctx, agent, tdef)
    own = set(re.findall(r"[a-z]+", f"{tdef.description} {getattr(agent, 'description', '')}".lower()))
    pairs = [(m.group(1), m.group(2)) for m in
             re.finditer(r"(?<![\w'-])([a-z][a-z-]*)(?=\s+([a-z]+)\b)", text.lower())]
    pairs = [(mod, head) for mod, head in pairs
             if mod not in _NOT_A_KIND and mod not in own and len(mod) > 2 and head not in _NOT_A_KIND]
    if not pairs:
        return None
    found = [mod for mod, head in pairs if _same_noun(head, heads)]
    if not found and ctx.understanding is not None:
        others = sorted({head for _, head in pairs if not _same_noun(head, heads)})
        try:
            vectors = ctx.understanding.embedder.encode([*others, *heads])
        except Exception:  # noqa: BLE001 - no model: only the descriptions' own nouns count
            vectors = None
        if vectors is not None:
            close = {w for i, w in enumerate(others)
                     if max(float(vectors[i] @ vectors[len(others) + j]) for j in range(len(heads))) >= KIND_NOUN}
            found = [mod for mod, head in pairs if head in close]
    found = list(dict.fromkeys(found))
    return found[0] if len(found) == 1 else None


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
            if value is None and not closed and _names_kinds(param, options):
                value = kind_named(ctx, agent, tdef, text)
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
        if value is None and _names_a_name(param):
            value = proper_name(text)
        if value is None and param.name == asked:
            value = extract.short_answer(text)
        if value is not None and str(value).strip():
            found[param.name] = str(value).strip()
    if len(quoted) == 1:  # one quoted text is one value: it fills one free-text parameter, not several
        holders = [n for n, v in found.items() if v == quoted[0]]
        for extra in holders[1:]:
            found.pop(extra)
    return found


def _names_a_name(param) -> bool:
    """A parameter that is a name or a title the user says (book_name, payee_name), not the user's own."""
    words = [w for w in re.split(r"[_\W]+", param.name.lower()) if w]
    return bool(param.required and {"name", "title"} & set(words) and not {"user", "username", "login"} & set(words))


_NAME_WORD = r"(?:[A-Z][\w'’-]*)"
_NAME = re.compile(rf"(?<![\w'’]){_NAME_WORD}(?:\s+(?:of|the|and|de|van|von|in|on|a)?\s*{_NAME_WORD})*")


def proper_name(text: str) -> str | None:
    """The one name the message gives in capitals, away from the start of a sentence ("Dune" in "I loved Dune.",
    "Olivia Grant" in "send money to Olivia Grant"); None when it gives none or several."""
    found = []
    for match in _NAME.finditer(text):
        before = text[:match.start()].rstrip()
        name = match.group(0).strip()
        if not before or before[-1] in ".!?:;\"“":
            # at a sentence's start the first word is capitalised anyway: after a verb that asks for
            # something done ("Remove Olivia Grant from my payees"), the rest is the name
            words = name.split()
            if len(words) < 3 or words[0].lower() not in _CHANGING | _ASKING:
                continue
            before, name = "", " ".join(words[1:])
        if name in ("I", "I'm", "I'd", "I've", "I'll") or name.lower() in _CALENDAR or \
                re.search(r"\b(?:not|instead\s+of|rather\s+than)\s*$", before, re.IGNORECASE):
            continue  # "I meant Northgate Energy, not Olivia": a name said no to is not the one meant
        found.append(name)
    found = list(dict.fromkeys(found))
    return found[0] if len(found) == 1 else None


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
        return f"Which {label} would you like? (For example {listed}.)"
    if param.description.strip():
        return f"What {label} should I use? ({param.description.strip().rstrip('.')}.)"
    return f"What {label} should I use?"


# ---- what the agent hands back: an item its tools listed that the user takes ---------------------------

LISTED = "_offline_listed"  # frame.locals: the items (texts) the agent's tools listed offline, newest last
OFFERED = "_offline_offered"  # frame.locals: the one item the agent's last words offered ("Would you like X?")
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
# "order it", "I'll take that one", "add this one": a message that takes the thing offered without naming it
_TAKES_IT = re.compile(r"\b(?:order|take|add|buy|get|have|want|like|reserve|choose|pick)\s+(?:it|that|this|that\s+one|"
                       r"this\s+one|the\s+first(?:\s+one)?)\b", re.IGNORECASE)


def keep_listed(frame: Frame, result) -> list[str]:
    """Keeps the items a tool listed (an argument update that is a list of short texts: the titles of
    find_bestsellers), so the user can take one by name; returns the tool's list, in its own order."""
    if not result.ok:
        return []
    listed = frame.locals.setdefault(LISTED, [])
    items: list[str] = []
    for value in (result.args or {}).values():
        if isinstance(value, list) and value and all(isinstance(v, str) and 0 < len(v) <= 80 for v in value):
            listed.extend(v for v in value if v not in listed)
            items.extend(v for v in value if v not in items)
    return items


def offer(agent, frame: Frame, items: list[str]) -> str:
    """Offline, the agent that hands an item back (its prompt sets one before it completes) offers the first
    item its tool listed, the tool's own top (a ranked list: best sellers first), as a model following "recommend
    one ... then ask if they would like to order it" would: the words to add, and the offer kept for the
    answer ("yes, order it" takes it). No offer when nothing was listed or the agent hands nothing back."""
    if not items or not handed_back_args(agent):
        return ""
    frame.locals[OFFERED] = items[0]
    return f"Would you like {items[0]}?"


def _assents(text: str) -> bool:
    """Whether the message says yes to what was offered ("Sounds great, yes please", "please order it")."""
    from frontdesk.nlu.matcher import polarity

    words = re.findall(r"[a-z']+", text.lower())
    return polarity(text) > 0 or any(polarity(w) > 0 for w in words[:3]) or bool(_TAKES_IT.search(text))


def handed_back_args(agent) -> list[tuple[str, bool]]:
    """The agent's arguments its prompt says to set before it completes ("append the exact title ... to the
    argument "book_wanted" ..., and then complete this agent"), each with whether it is a list to add to."""
    prompt = getattr(agent, "instructions", "") or ""
    out = []
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", prompt):
        if not re.search(r"\b(?:complete|finish)\b", sentence, re.IGNORECASE):
            continue
        for name in agent.arg_names():
            if re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", sentence):
                out.append((name, bool(re.search(r"\b(?:append|add|list)\b", sentence, re.IGNORECASE))))
    return out


def _names(text: str, item: str) -> bool:
    lowered = " ".join(re.findall(r"[\w']+", text.lower()))
    words = " ".join(re.findall(r"[\w']+", item.lower()))
    short = " ".join(re.findall(r"[\w']+", _ARTICLE.sub("", item).lower()))
    return any(w and re.search(rf"(?<![\w']){re.escape(w)}(?![\w'])", lowered)
               for w in {words, short} if len(w) >= 3)


def taken_item(ctx: TurnContext, agent, frame: Frame, text: str) -> tuple[str, Any] | None:
    """(argument, its new value) when the message takes an item the agent's tools listed (see hand_back)."""
    listed = list(frame.locals.get(LISTED) or [])
    for tool in agent.tools:  # what its tools listed last in the session (an earlier activation of it)
        record = ctx.state.results.get(tool)
        if record is not None and record.status == "success":
            for value in (record.values or {}).values():
                if isinstance(value, list) and all(isinstance(v, str) and 0 < len(v) <= 80 for v in value):
                    listed.extend(v for v in value if v not in listed)
    targets = handed_back_args(agent)
    if not listed or not targets or "?" in text:
        return None
    wish = re.sub(r"\b(?:i'd|i\s+would|we'd|we\s+would|would|i)\s+(?:really\s+)?like\b", " ", text.lower())
    if re.search(r"\b(?:no|not|don't|dont|never|nothing|like|similar|than|other|besides|except|instead)\b", wish):
        return None  # said no to, or named as a likeness ("something like Emberwild"), not taken
    named = [item for item in listed if _names(text, item)]
    named = [item for item in named if not any(item != other and _names(other, item) for other in named)]
    offered = frame.locals.get(OFFERED)
    if not named and offered in listed and _assents(text):
        named = [offered]  # "yes, order it" to "Would you like Letters to Larkspur?"
    if not named:
        return None
    name, is_list = targets[0]
    current = ctx.values(agent.name).get(name)
    if is_list or isinstance(current, list):
        kept = list(current) if isinstance(current, list) else ([current] if current else [])
        return name, kept + [item for item in named if item not in kept]
    return (name, named[0]) if len(named) == 1 else None


def _hand_on(ctx: TurnContext, agent, frame: Frame) -> None:
    """Started by a router (no flow called it to come back to), the agent hands the message on to the one
    member bound to the same router argument as it (what it took is for that one: the order that places
    the book chosen), as a model that finishes names the agent the message is for next."""
    below = ctx.router_below(frame)
    if below is None or len(below[1]) != 1:
        return
    router = below[0]
    takers = [m.agent for m in router.members
              if m.agent != agent.name and router.share_arguments(agent.name, m.agent)]
    if len(takers) == 1 and takers[0] not in ctx.input.passed:
        ctx.input.give_back(frame, "the agent finished its task", used=True)
        ctx.input.also = takers[0]
        ctx.log.emit("step", agent.name, action="the message is for another agent", agent=takers[0])


def _callers_message(ctx: TurnContext, frame: Frame) -> str:
    """The message of this turn when a flow called the agent on it just now (the flow read it as an answer:
    "Yeah, also add The Glass Orbit." to "anything else?"): the agent, which has said nothing yet, may take
    the item it names, as a model reading the conversation would."""
    below = ctx.router_below(frame)
    if below is None or len(below[1]) < 2 or frame.said_since_start or ctx.input.text is None:
        return ""
    return ctx.input.text


def hand_back(ctx: TurnContext, agent, frame: Frame, text: str) -> Outcome | None:
    """Offline, the user takes an item the agent's tools listed by naming it ("I'll take The Glass Orbit",
    "Add Rivers of Empire please"): the item is set in the argument the agent's prompt says to set before it
    completes (added to it when the prompt calls it a list), and the agent completes, so what comes next
    (an order flow) goes on. The value is the user's own words and the tool's listing, both; a question or a
    message that says no takes nothing. None when nothing is taken."""
    taken = taken_item(ctx, agent, frame, text)
    if taken is None:
        return None
    name, value = taken
    ctx.log.emit("reasoning_offline", agent.name, action="take", arg=name, value=value)
    ctx.write(agent.name, name, value, agent.name, why="extracted from the user's message: named from what the agent's tools listed")
    _hand_on(ctx, agent, frame)
    frame.waiting = False
    return Outcome.done("success", "the user took what the agent offered", value=ctx.values(agent.name))


# ---- what is said -------------------------------------------------------------------------------------


def say(ctx: TurnContext, agent, frame: Frame, words: str) -> None:
    """Say `words` as the agent offline, and keep them in its transcript (ctx.say keeps them as its last prompt)."""
    ctx.say(agent.name, words, frame)
    frame.data.messages.append({"role": "assistant", "content": words})


def tool_question(result) -> str | None:
    """The question a tool put to the user itself (its last `bot` line, when it ends with "?"), or None."""
    lines = [str(b) for b in (result.bot if isinstance(result.bot, list) else [result.bot]) if b]
    return lines[-1] if lines and lines[-1].rstrip().endswith("?") else None



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
    if not tools or ctx.understanding is None:
        frame.locals.pop(PENDING, None)
        return None
    # a flow that called the agent on this turn's message just now read it as an answer ("Yeah, do you have
    # history books too?" to "anything else?"): the agent reads it too, as a model reading the conversation would
    text = text or _callers_message(ctx, frame)
    if not text.strip():
        frame.locals.pop(PENDING, None)
        return None
    by_name = {t.name: t for t in tools}
    taken = hand_back(ctx, agent, frame, text)
    frame.locals.pop(OFFERED, None)  # an offer is answered by the message right after it, or not at all
    if taken is not None:
        frame.locals.pop(PENDING, None)
        return taken
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
        if chosen is None:
            chosen = named_choice(ctx, agent, text, every, scores)
            if chosen is not None:
                score = scores.get(chosen, score)
        if chosen is not None and chosen not in by_name:  # it changes something: never run offline
            ctx.log.emit("reasoning_offline", agent.name, action="not run", tool=chosen, score=score,
                         reason="the tool changes something")
            what = what_i_can_do([ctx.program.tools[chosen]]) or _words(chosen)
            words = no_tool or f"I can't {what} here: {why}. " + (
                f"What I can do here is {what_i_can_do(tools)}." if what_i_can_do(tools) else "")
            words = words.strip()
            say(ctx, agent, frame, words)
            frame.waiting = True
            return Outcome.wait()
        if chosen is None and not frame.said_since_start:
            chosen = first_step_tool(ctx, agent, tools)
            if chosen is not None:
                ctx.log.emit("reasoning_offline", agent.name, action="first step", tool=chosen, best=best,
                             score=score, margin=lead)
                score = scores.get(chosen, score)
        if chosen is None:
            ctx.log.emit("reasoning_offline", agent.name, action="no tool", best=best, score=score, margin=lead,
                         scores=scores)
            words = no_tool or cannot_do(tools, why)
            say(ctx, agent, frame, words)
            frame.waiting = True
            return Outcome.wait()
        tdef = by_name[chosen]
        args = ground_args(ctx, agent, tdef, text)
    args = {**held_args(ctx, agent, tdef, args), **args}
    missing = [p for p in tdef.params if p.required and p.name not in args]
    if missing:
        param = missing[0]
        frame.locals[PENDING] = {"tool": tdef.name, "args": args, "asking": param.name, "score": score}
        ctx.log.emit("reasoning_offline", agent.name, action="ask", tool=tdef.name, field=param.name, args=args,
                     score=score)
        words = question_for(ctx, agent, tdef, param)
        say(ctx, agent, frame, words)
        frame.waiting = True
        return Outcome.wait()
    ctx.log.emit("reasoning_offline", agent.name, action="tool", tool=tdef.name, args=args, score=score)
    result = ctx.call_tool(tdef.name, args, agent.name, frame)
    items = keep_listed(frame, result)
    following = next_step_tool(ctx, agent, tdef.name, tools) if result.ok else None
    if following is not None:
        # the prompt's next step ("Using the genre, call find_bestsellers") with what the first tool gave
        if not result.bot:
            words = render_result(result)
            say(ctx, agent, frame, words)
        tdef, args = following, held_args(ctx, agent, following, {})
        ctx.log.emit("reasoning_offline", agent.name, action="tool", tool=tdef.name, args=args, score=None,
                     reason="the prompt's next step")
        result = ctx.call_tool(tdef.name, args, agent.name, frame)
        items = keep_listed(frame, result)
        if result.ok and not result.bot:
            taken = taken_item(ctx, agent, frame, text)
            if taken is not None:
                # "I want to buy The Lantern Room Murders.": the book looked up is listed, and taken
                return hand_back(ctx, agent, frame, text)
    if not result.bot:  # what the tool said to the user itself is said already
        words = "\n".join(w for w in (render_result(result), offer(agent, frame, items)) if w)
        say(ctx, agent, frame, words)
    if result.ok and not handed_back_args(agent) and tool_question(result) is None:
        # it did what the message asked and asks nothing more (the balance said, the payees listed): its
        # task is done, as a model would finish, so it does not come back unasked after another agent's task
        ctx.log.emit("reasoning_offline", agent.name, action="done", tool=tdef.name)
        frame.waiting = False
        return Outcome.done("success", render_result(result), value=ctx.values(agent.name))
    frame.waiting = True
    return Outcome.wait()
