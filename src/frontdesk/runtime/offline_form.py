"""An LLM agent that changes something, with no model that can reason: its prompt read as a form.

An ADL llm agent whose tools include one that changes something ("action_process_immediate_payment") is a
task the user completes in steps: the prompt names its arguments and its tools in the order it works through
them ("2. Call "action_ask_account_from" ... fill "account_from" ... 3. Ask for the payee's name (payee_name).
Call "action_check_payee_existence" ..."). Offline, the agent follows that order without judging anything:

- the arguments it gathers are its own arguments the prompt names that a tool takes or a step's condition
  tests (`If timing is "now"`), asked for one at a time in the order the prompt first names them;
- a value is read from the user's message only by the typed readers of runtime/offline_tools.py (a listed
  value, a number, a date, a name in capitals, the short answer to the question asked), or as the item a
  tool listed that the message names ("my Everyday Current account" for the account whose number the
  prompt says to fill); nothing is invented, and a value the user corrects ("make it 50 pounds") is read again;
- a tool that changes nothing runs as soon as every argument it needs is held; when it fails its message is
  said and the value given for it is asked for again (a payee that is not on the list);
- a tool that changes something runs only after every argument the prompt names before it is held, the
  conditions of its step hold, and the user has said yes to a summary of what it will do; a no cancels it.

The agent then completes with the tool's result said as the tool gave it. None of this needs the small
generative model; it never fills a value or chooses a tool.
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from frontdesk.nlu.matcher import polarity
from frontdesk.runtime import extract
from frontdesk.runtime.offline_tools import (
    _kind,
    _names_a_name,
    _words,
    changes_something,
    ground_args,
    has_value,
    held_args,
    listed_values,
    proper_name,
    question_for,
    render_result,
    say,
    tool_question,
    what_i_can_do,
)
from frontdesk.runtime.state import Frame
from frontdesk.runtime.steps import Outcome

if TYPE_CHECKING:  # pragma: no cover
    from frontdesk.runtime.context import TurnContext

FORM = "_offline_form"  # frame.locals: {"asking": field, "confirm": {"tool", "args"}, "ran": {tool: args}}
_STEP = re.compile(r"^\s*(?:\d+[a-z]?[.)]|[-*]\s)", re.MULTILINE)
_CONDITION = re.compile(r"\bif\s+\"?([A-Za-z_]\w*)\"?\s+is\s+\"([^\"]+)\"", re.IGNORECASE)
# "Actually, make it 50 pounds", "change the amount to 30": a value given again corrects the one held
_CORRECTS = re.compile(r"\b(?:actually|make\s+it|change|instead|rather|correction|i\s+meant|sorry)\b", re.IGNORECASE)
_GENERIC = {"account", "accounts", "card", "cards", "the", "my", "your", "and", "for", "from", "with"}


def applies(ctx: TurnContext, agent) -> bool:
    """Whether the agent is run as a form offline: one of its tools changes something and its prompt names it."""
    prompt = getattr(agent, "instructions", "") or ""
    return any(name in prompt and name in ctx.program.tools and changes_something(ctx.program.tools[name])
               for name in agent.tools)


def _first(prompt: str, name: str) -> int:
    found = re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", prompt)
    return found.start() if found else -1


def plan(ctx: TurnContext, agent) -> list:
    """The agent's tools in the order its prompt first names them."""
    prompt = getattr(agent, "instructions", "") or ""
    named = [(_first(prompt, n), ctx.program.tools[n]) for n in agent.tools if n in ctx.program.tools]
    return [t for at, t in sorted(named, key=lambda p: p[0]) if at >= 0]


def _block(prompt: str, at: int) -> str:
    """The step of the prompt (a numbered line with the lines under it) that holds position `at`."""
    starts = [m.start() for m in _STEP.finditer(prompt) if re.match(r"\s*\d", prompt[m.start():])]
    begin = max([s for s in starts if s <= at], default=0)
    end = min([s for s in starts if s > at], default=len(prompt))
    return prompt[begin:end]


def conditions(agent, tdef) -> dict[str, str]:
    """The `If <argument> is "<value>"` tests of the step that first names the tool."""
    prompt = getattr(agent, "instructions", "") or ""
    at = _first(prompt, tdef.name)
    if at < 0:
        return {}
    names = set(agent.arg_names())
    return {m.group(1): m.group(2) for m in _CONDITION.finditer(_block(prompt, at)) if m.group(1) in names}


def fields(ctx: TurnContext, agent, tools: list) -> list:
    """The arguments the agent gathers, in the order its prompt first names them, each as a parameter:
    the parameter of a tool that takes it, or (a step's condition only) one whose listed values are the
    quoted values the prompt compares it with."""
    prompt = getattr(agent, "instructions", "") or ""
    params: dict[str, Any] = {}
    for tdef in tools:
        for param in tdef.params:
            params.setdefault(param.name, param)
    tested: dict[str, list[str]] = {}
    for tdef in tools:
        for name, value in conditions(agent, tdef).items():
            tested.setdefault(name, []).append(value)
    out = []
    for name in agent.arg_names():
        if _first(prompt, name) < 0:
            continue
        if name in params:
            out.append((_first(prompt, name), params[name]))
        elif name in tested:
            examples = ", ".join(f'"{v}"' for v in tested[name])
            out.append((_first(prompt, name), SimpleNamespace(
                name=name, type="string", required=True, enum=None,
                description=f"e.g. {examples} or another {_words(name)}")))
    return [p for _, p in sorted(out, key=lambda pair: pair[0])]


def _listed_items(ctx: TurnContext, tools: list) -> list[dict]:
    """The items (with a name) the agent's tools listed in the session: the accounts of action_ask_account_from."""
    items = []
    for tdef in tools:
        record = ctx.state.results.get(tdef.name)
        if record is None or record.status != "success":
            continue
        for value in (record.values or {}).values():
            if isinstance(value, list) and value and all(isinstance(v, dict) and isinstance(v.get("name"), str)
                                                         for v in value):
                items.extend(value)
    return items


def _item_named(text: str, items: list[dict]) -> dict | None:
    """The one listed item the message names by a word of its name ("current" for "Everyday Current")."""
    said = set(re.findall(r"[a-z]+", text.lower()))
    hits = [item for item in items
            if {w for w in re.findall(r"[a-z]+", item["name"].lower()) if len(w) > 3 and w not in _GENERIC} & said]
    return hits[0] if len(hits) == 1 else None


def _item_value(agent, field: str, item: dict) -> Any:
    """What of a listed item fills `field`: the key the prompt's sentence about the field names ("fill
    "account_from" with its account number"), else the item's name."""
    prompt = getattr(agent, "instructions", "") or ""
    sentences = [s for s in re.split(r"(?<=[.!?])\s+|\n+", prompt) if re.search(rf"\b{re.escape(field)}\b", s)]
    for key, value in item.items():
        if key == "name" or not isinstance(value, (str, int, float)):
            continue
        words = _words(key).lower()
        if any(words in s.lower() for s in sentences):
            return value
    return item["name"]


def read(ctx: TurnContext, agent, frame: Frame, text: str, gathered: list, tools: list, asking: str | None
         ) -> dict[str, Any]:
    """The values the message gives for the agent's fields (see the module's docstring)."""
    values = ctx.values(agent.name)
    corrects = bool(_CORRECTS.search(text))
    open_ = [p for p in gathered if p.name == asking or not has_value(values.get(p.name)) or corrects]
    if not open_ or extract.no_answer(text):
        return {}
    form = SimpleNamespace(name=agent.name, params=open_, description=getattr(agent, "description", "") or "")
    found = ground_args(ctx, agent, form, text, asked=asking)
    items = _listed_items(ctx, tools)
    for param in open_:
        # a field not asked for takes only what a typed reader is sure of: a value it lists, named; a number,
        # a date, an address; a name in capitals for a name ("send money to Olivia Grant") unless it names an
        # item a tool listed for another field ("my Everyday Current account"); never a word before a noun
        # ("current" of "current account")
        if param.name == asking or param.name not in found:
            continue
        options, _ = listed_values(ctx, agent, param)
        typed = _kind(param) in ("number", "integer", "date", "datetime", "email", "phone", "identifier")
        named = _names_a_name(param) and found[param.name] == proper_name(text) and \
            _item_named(str(found[param.name]), items) is None
        if not (typed or named or (options and found[param.name] in options)):
            found.pop(param.name)
        elif any(str(found[param.name]) == str(v) for k, v in found.items() if k != param.name and
                 (k == asking or [p.name for p in open_].index(k) < [p.name for p in open_].index(param.name))):
            found.pop(param.name)  # one thing said fills one field: the one asked for, else the first
    asked = next((p for p in open_ if p.name == asking), None)
    if asked is not None and asking not in found and getattr(asked, "type", "string") in ("string", "", None) and \
            not listed_values(ctx, agent, asked)[1]:
        # the answer to the question asked, in the user's words ("Rent"); not a message that gives another
        # field ("200 pounds" to the payee's question) or says yes or no
        answer = extract.short_answer(text)
        if answer and not found and not polarity(text):
            found[asking] = answer
    for name, value in list(found.items()):
        param = next(p for p in open_ if p.name == name)
        found[name] = _as_described(param, value)
    if asking in found and found[asking] == extract.short_answer(text) and \
            (polarity(text) or any(k != asking for k in found)):
        # the whole answer is no free text for the field asked when it says yes or no ("Yes." is no payee's
        # name) or gives another field ("On 15/12/2026." to "when?" is the payment date, not the timing)
        found.pop(asking)
    for param in open_:
        if param.name in found and not _fits(param, found[param.name]):
            ctx.log.emit("value_refused", agent.name, values={
                param.name: f"{found[param.name]!r} is not of the shape the argument's description or name says"})
            found.pop(param.name)
    item = _item_named(text, items) if items and asking else None
    if item is not None and asking in {p.name for p in open_} and not listed_values(
            ctx, agent, next(p for p in open_ if p.name == asking))[0]:
        found[asking] = _item_value(agent, asking, item)  # the listed item the answer names
        frame.locals.setdefault(FORM, {}).setdefault("shown", {})[asking] = item["name"]
    return {k: v for k, v in found.items() if has_value(v)}


_DATE_FORMATS = {"DD/MM/YYYY": "{d}/{m}/{y}", "MM/DD/YYYY": "{m}/{d}/{y}", "DD.MM.YYYY": "{d}.{m}.{y}",
                 "DD-MM-YYYY": "{d}-{m}-{y}"}


def _as_described(param, value: Any) -> Any:
    """A day read (ISO, 2026-12-15) written as the parameter's description says ("as DD/MM/YYYY")."""
    iso = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", str(value)) if isinstance(value, str) else None
    if iso is None:
        return value
    described = (getattr(param, "description", "") or "").upper()
    for written, shape in _DATE_FORMATS.items():
        if written in described:
            return shape.format(y=iso.group(1), m=iso.group(2), d=iso.group(3))
    return value


_ROLE_WORDS = {"my", "your", "his", "her", "our", "their", "its", "the", "a", "an", "for", "to", "from", "with",
               "some", "this", "that", "it", "it's", "he", "she", "they", "him", "them", "someone"}


def _fits(param, value: Any) -> bool:
    """Whether a value has the shape its parameter says: as many digits as "8-digit" says; a name that is
    a name, not a role ("for my new landlord", "my sister")."""
    digits = re.search(r"\b(\d+)[- ]digits?\b", getattr(param, "description", "") or "")
    if digits and re.fullmatch(r"[\d\s-]+", str(value)) and len(re.sub(r"\D", "", str(value))) != int(digits.group(1)):
        return False
    if _names_a_name(param) and isinstance(value, str):
        words = re.findall(r"[a-z']+", value.lower())
        if not words or words[0] in _ROLE_WORDS or {"my", "your", "his", "her", "our", "their"} & set(words):
            return False
    return True


def _due(ctx: TurnContext, agent, tdef, values: dict) -> dict[str, Any] | None:
    """The tool's arguments when every one it needs is held and its step's conditions hold; else None."""
    for name, wanted in conditions(agent, tdef).items():
        if str(values.get(name, "")).strip().lower() != wanted.strip().lower():
            return None
    args = held_args(ctx, agent, tdef, {})
    if not all(p.name in args for p in tdef.params if p.required):
        return None
    return args


def _before(agent, gathered: list, tdef, tools: list) -> list:
    """The fields the prompt names before the tool that it needs: a tool's argument, or what its own step
    tests; a field only another step tests (`If timing is "now"` for the immediate payment) is not needed
    for a tool in another step (the scheduled payment, once its date is given)."""
    prompt = getattr(agent, "instructions", "") or ""
    at = _first(prompt, tdef.name)
    taken = {p.name for t in tools for p in t.params} | set(conditions(agent, tdef))
    return [p for p in gathered if 0 <= _first(prompt, p.name) < at and p.name in taken]


def _summary(agent, tdef, args: dict, state: dict) -> str:
    """What the change will do, with the values the user gave (an item by its name, not its number)."""
    what = what_i_can_do([tdef]) or _words(tdef.name)
    shown = state.get("shown") or {}
    given = [f"{_words(k)}: {shown.get(k, v)}" for k, v in args.items() if k in state.get("given", ())]
    return f"To confirm, I will {what}" + (f" ({'; '.join(given)})" if given else "") + ". Shall I go ahead?"


def form_turn(ctx: TurnContext, agent, frame: Frame, text: str) -> Outcome | None:
    """One offline turn of the agent as a form (see the module's docstring); None when there is nothing
    it can do (no argument to ask for and no tool due)."""
    tools = plan(ctx, agent)
    gathered = fields(ctx, agent, tools)
    state = frame.locals.setdefault(FORM, {"asking": None, "confirm": None, "ran": {}})
    confirm, state["confirm"] = state.get("confirm"), None
    new = read(ctx, agent, frame, text, gathered, tools, state.get("asking")) if text.strip() else {}
    if confirm is not None and not new:
        answer = polarity(text)
        if answer > 0:
            tdef = ctx.program.tools[confirm["tool"]]
            ctx.log.emit("reasoning_offline", agent.name, action="tool", tool=tdef.name, args=confirm["args"],
                         reason="the user said yes to what it will do")
            result = ctx.call_tool(tdef.name, confirm["args"], agent.name, frame)
            if not result.bot:
                say(ctx, agent, frame, render_result(result))
            frame.waiting = False
            frame.locals.pop(FORM, None)
            return Outcome.done("success" if result.ok else "error", render_result(result),
                                value=ctx.values(agent.name))
        if answer < 0:
            ctx.log.emit("reasoning_offline", agent.name, action="cancelled", tool=confirm["tool"])
            say(ctx, agent, frame, "Okay, I have not done it.")
            frame.waiting = False
            frame.locals.pop(FORM, None)
            return Outcome.done("success", "the user said no", value=ctx.values(agent.name))
        state["confirm"] = confirm  # neither: asked again below
    for name, value in new.items():
        ctx.write(agent.name, name, value, agent.name, why="extracted from the user's message (read offline, the prompt as a form)")
    if new:
        ctx.log.emit("reasoning_offline", agent.name, action="read", args=new)
        state["given"] = sorted(set(state.get("given", [])) | set(new))
    values = ctx.values(agent.name)
    ran = state.setdefault("ran", {})
    for tdef in tools:  # the tools that change nothing, as soon as what they need is held
        if changes_something(tdef):
            continue
        args = _due(ctx, agent, tdef, values)
        key = json.dumps(args, sort_keys=True, default=str) if args is not None else None
        if args is None or ran.get(tdef.name) == key:
            continue
        ran[tdef.name] = key
        ctx.log.emit("reasoning_offline", agent.name, action="tool", tool=tdef.name, args=args,
                     reason="what it needs is held")
        result = ctx.call_tool(tdef.name, args, agent.name, frame)
        if not result.ok:
            say(ctx, agent, frame, render_result(result))
            again = [p.name for p in tdef.params if p.name in new]
            if not again:
                frame.waiting = False
                frame.locals.pop(FORM, None)
                return Outcome.done("error", render_result(result), value=ctx.values(agent.name))
            for name in again:
                ctx.write(agent.name, name, None, agent.name, why="the tool refused it")
            ran.pop(tdef.name, None)
            state["confirm"] = None
            break
        asked = tool_question(result)
        if asked is not None:
            # the tool asked the user (the accounts to pay from): the answer is for the next field it lacks
            values = ctx.values(agent.name)
            state["asking"] = next((p.name for p in gathered if not has_value(values.get(p.name))), None)
            item = _item_named(text, _listed_items(ctx, tools)) if text.strip() and state["asking"] else None
            if item is not None:
                # the message gave it already ("... from my current account"): the item it names fills it
                name = state["asking"]
                ctx.write(agent.name, name, _item_value(agent, name, item), agent.name,
                          why="extracted from the user's message (read offline, the prompt as a form)")
                state.setdefault("shown", {})[name] = item["name"]
                state["given"] = sorted(set(state.get("given", [])) | {name})
                state["asking"] = None
                values = ctx.values(agent.name)
                continue
            frame.last_prompt = asked
            frame.waiting = True
            return Outcome.wait()
        if not result.bot and result.message.strip():
            say(ctx, agent, frame, render_result(result))
        values = ctx.values(agent.name)
    values = ctx.values(agent.name)
    for tdef in tools:  # a change, once all the prompt names before it is held: the user says yes first
        if not changes_something(tdef) or any(not has_value(values.get(p.name)) for p in _before(agent, gathered, tdef, tools)):
            continue
        args = _due(ctx, agent, tdef, values)
        if args is None:
            continue
        state["confirm"] = {"tool": tdef.name, "args": args}
        state["asking"] = None
        ctx.log.emit("reasoning_offline", agent.name, action="confirm", tool=tdef.name, args=args)
        say(ctx, agent, frame, _summary(agent, tdef, args, state))
        frame.waiting = True
        return Outcome.wait()
    # what the tools still open need: a tool whose step tests a value the user gave otherwise needs nothing
    live = [t for t in tools if all(not has_value(values.get(n)) or str(values.get(n)).strip().lower() == v.lower()
                                    for n, v in conditions(agent, t).items())]
    needed = {p.name for t in live for p in t.params if p.required} | {n for t in live for n in conditions(agent, t)} | \
        {p.name for t in live if changes_something(t) for p in _before(agent, gathered, t, tools)}
    for param in gathered:  # the next argument it lacks, asked for
        if param.name in needed and not has_value(values.get(param.name)):
            state["asking"] = param.name
            ctx.log.emit("reasoning_offline", agent.name, action="ask", field=param.name)
            form = SimpleNamespace(name=agent.name, params=gathered, description=getattr(agent, "description", ""))
            say(ctx, agent, frame, question_for(ctx, agent, form, param))
            frame.waiting = True
            return Outcome.wait()
    return None
