"""Frames for newly started agents, and the fallback and exit policies all executors share."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from frontdesk.ir.expr import Ref
from frontdesk.ir.models import Agent, Policy
from frontdesk.runtime.shortlist import shortlist
from frontdesk.runtime.state import FlowData, Frame
from frontdesk.runtime.steps import Done, Outcome

if TYPE_CHECKING:  # pragma: no cover
    from frontdesk.runtime.context import TurnContext

KIND_OF = {"flow": "flow", "reasoning": "reasoning", "knowledge": "knowledge", "router": "router",
           "remote": "remote"}
DEFAULT_FALLBACK = "Sorry, I didn't understand that. Could you rephrase it?"


def new_frame(ctx: TurnContext, agent_name: str, offer_input_by: str | None = None) -> Frame:
    """A frame for an agent about to start; with `offer_input_by`, the turn's message is offered to it."""
    agent = ctx.program.agents[agent_name]
    ctx.clear_status(agent_name)
    _initial_values(ctx, agent)
    frame = Frame(id=ctx.new_frame_id(), agent=agent_name, kind=KIND_OF[agent.kind])
    if offer_input_by is not None:
        ctx.input.offer(frame, offer_input_by)
    return frame


def _initial_values(ctx: TurnContext, agent: Agent) -> None:
    """Session variables an agent declares with an INITIAL value: set once per session, or again at
    every activation (RESET: per_activation)."""
    for var in agent.rules.memory.session:
        if var.initial is None:
            continue
        ref = Ref(scope="session", name=var.name)
        if var.reset == "per_activation" or ctx.read(ref, agent.name) is None:
            ctx.assign(ref, var.initial, agent.name, why=f"INITIAL ({var.reset})")


def setup_frame(ctx: TurnContext, agent: Agent) -> Frame:
    return Frame(id=ctx.new_frame_id(), agent=agent.name, kind="flow", graph="setup")


# ---- fallback and exit texts ---------------------------------------------------------------------------
#
# A text policy is either the words to say ("Sorry, I didn't understand that.") or a strategy for a model
# (the ADL paper: "Provide a fallback message: ... If the fallback occurs three times consecutively,
# terminate the conversation."). Words are said as written. A strategy is followed: with a model that can
# write, the model writes the message from it; with none, the message is built from it by the rules
# below (docs/adl-semantics.md), and the instruction itself is never said.

DEFAULT_EXIT = "Goodbye!"
# said on the fallback that ends the conversation, when no model writes it
FALLBACK_ENDING = "Sorry, I still couldn't understand. Let's end the conversation here. Goodbye!"
_VERBS = (r"say|tell|give|provide|reply|respond|answer|apologi[sz]e|ask|inform|let|explain|offer|suggest|remind|"
          r"output|generate|write|return|use|direct|redirect|guide|thank|greet|end|terminate|close|transfer|"
          r"escalate|acknowledge|express|notify|invite|encourage|clarify|prompt|mention|state|repeat|confirm|"
          r"send|show|politely|kindly|always|if|when|whenever|once|after")
# (a verb addressed to the user, "Please tell me your order number", is words to say)
_INSTRUCTION = re.compile(r"^\W*(?:please\s+)?(?:" + _VERBS + r")\b(?!\s+(?:me|us)\b)|\bthe\s+(?:user|customer)\b",
                          re.IGNORECASE)
_QUOTED = re.compile(r'"([^"]+)"|“([^”]+)”')
# "Give a fallback message: I'm sorry, ..." / "Say: we are closed."
_AFTER_COLON = re.compile(r"^\W*(?:please\s+)?(?:" + _VERBS + r")\b[^:.]{0,60}:\s*(?P<words>.+)$",
                          re.IGNORECASE | re.DOTALL)
# "Say that you can ...", "Tell the user that ...", "Let the customer know that ..."
_SAY_THAT = re.compile(r"^\W*(?:please\s+)?(?:politely\s+)?(?:say|tell\s+(?:the\s+(?:user|customer)|them)|explain|"
                       r"reply|respond|answer|mention|state|let\s+the\s+(?:user|customer)\s+know|"
                       r"inform\s+the\s+(?:user|customer))(?:\s+(?:to\s+(?:the\s+)?(?:user|customer)|politely))?"
                       r"\s+that\s+(?P<clause>.+)$", re.IGNORECASE | re.DOTALL)
# "Ask the user to rephrase", "Apologize and ask the customer to try again"
_ASK_TO = re.compile(r"^\W*(?:please\s+)?(?P<sorry>apologi[sz]e\s*(?:,|and)\s*)?(?:politely\s+)?ask\s+"
                     r"(?:the\s+(?:user|customer)|them)\s+to\s+(?P<what>[^.]+)", re.IGNORECASE)
# a sentence that tells what to do, not what to say ("If fallback three times consecutively, then ...")
_STRATEGY = re.compile(r"^\W*(?:if|when|whenever|once|after|otherwise|then)\b|\bterminate\b|\bconsecutive|"
                       r"\bthe\s+(?:user|customer)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_TIMES = {"once": 1, "twice": 2, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
          "eight": 8, "nine": 9, "ten": 10}
_ENDS_AFTER = re.compile(r"\b(?P<n>\d+|one|two|three|four|five|six|seven|eight|nine|ten)\s+times\b|\b(?P<w>once|twice)\b",
                         re.IGNORECASE)
_ENDS_WORDS = re.compile(r"\b(?:terminate|end|close|stop|finish)s?\b[^.]{0,30}\b(?:conversation|session|chat|"
                         r"dialog(?:ue)?)\b", re.IGNORECASE)


def is_instruction(text: str) -> bool:
    """Whether a policy text tells what to do (a strategy) rather than being the words to say."""
    return bool(_INSTRUCTION.search(text or ""))


def _you_to_me(clause: str) -> str:
    """A clause about the bot written to the model ("you can book a repair"), as the bot says it."""
    swaps = ((r"\byou are\b", "I am"), (r"\byou're\b", "I'm"), (r"\byourself\b", "myself"), (r"\byour\b", "my"),
             (r"^you\b", "I"), (r"\b(and|or|but|that|so|because) you\b", r"\1 I"),
             (r"\bthe (?:user|customer)'s\b", "your"), (r"\bthe (?:user|customer)\b", "you"))
    for pattern, replacement in swaps:
        clause = re.sub(pattern, replacement, clause, flags=re.IGNORECASE)
    return clause


def _sentence(text: str) -> str:
    text = " ".join(text.split()).strip()
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


def _words_only(text: str) -> str:
    """The sentences of a text that are words to say, up to the first that states a strategy."""
    kept = []
    for sentence in _SENTENCE.split(text.strip()):
        if _STRATEGY.search(sentence):
            break
        kept.append(sentence)
    return " ".join(kept).strip()


def policy_message(policy: Policy | None, kind: str = "fallback") -> str:
    """What a text policy says with no model to write it: its quoted sentence; else the text itself when it
    is the words to say; else the words an instruction gives ("Give a fallback message: I'm sorry, ..."),
    "Say that you can X" as "I can X.", "Ask the user to X" as "Could you X?"; else the standard sentence
    (never the instruction itself). `kind` is "fallback" or "exit"."""
    default = DEFAULT_EXIT if kind == "exit" else DEFAULT_FALLBACK
    if policy is None or policy.kind != "text" or not policy.value.strip():
        return default
    text = policy.value.strip()
    quoted = _QUOTED.search(text)
    if quoted:
        return quoted.group(1) or quoted.group(2)
    if not is_instruction(text):
        return text
    found = _AFTER_COLON.match(text)
    if found and _words_only(found["words"]):
        return _sentence(_words_only(found["words"]))
    found = _SAY_THAT.match(text)
    if found and _words_only(found["clause"]):
        return _sentence(_you_to_me(_words_only(found["clause"])))
    found = _ASK_TO.match(text)
    if found:
        what = re.sub(r"\btheir\b", "your", re.sub(r"\bthem(?:selves)?\b", "you", found["what"].strip()))
        question = "Could you " + what.rstrip("?!. ") + "?"
        return ("Sorry. " if found["sorry"] else "") + question
    return default


def ends_after(policy: Policy | None) -> int | None:
    """The fallbacks in a row after which a text policy ends the conversation ("If the fallback occurs three
    times consecutively, terminate the conversation"), or None when it says no such thing."""
    if policy is None or policy.kind != "text":
        return None
    for sentence in re.split(r"(?<=[.;!])\s+|\n+", policy.value):
        count = _ENDS_AFTER.search(sentence)
        if count and _ENDS_WORDS.search(sentence):
            word = (count["n"] or count["w"]).lower()
            return int(word) if word.isdigit() else _TIMES[word]
    return None


def needs_model(policy: Policy | None) -> bool:
    """Whether the words of a policy are written by a model when one can write: a text that is a strategy
    and quotes no words to say (the last fallback before the conversation ends is written by it too)."""
    return policy is not None and policy.kind == "text" and is_instruction(policy.value) \
        and (not _QUOTED.search(policy.value) or ends_after(policy) is not None)


def policy_words(ctx: TurnContext, agent_name: str, policy: Policy | None, kind: str = "fallback",
                 last: bool = False) -> str:
    """What an agent says when its fallback or exit policy applies. A text that is a strategy is given to the
    model, which writes the message (`last`: the conversation ends after it), unless it quotes the words to
    say; with no model that can write, or when the call fails, the message is built from the text by rules
    (`policy_message`)."""
    offline = FALLBACK_ENDING if last and kind == "fallback" else policy_message(policy, kind)
    if policy is None or policy.kind != "text" or not is_instruction(policy.value) or not ctx.llm_classifies:
        return offline
    if _QUOTED.search(policy.value) and not last:
        return offline  # the text gives the very words: they are said, as written
    from frontdesk.runtime import prompts

    request = prompts.policy_request(ctx.program.agents[agent_name], kind, policy.value, ctx.state.history,
                                     ctx.program.settings.history_window, last)
    answer = ctx.call_args(request, agent_name, f"{kind} policy")
    words = str((answer or {}).get("message") or "").strip()
    return words if words and words != policy.value.strip() else offline


def apply_fallback(ctx: TurnContext, frame: Frame, reason: str, final: bool = False) -> Outcome:
    """The agent could not handle the user's message: follow its fallback policy.

    A text policy is said (or followed, when it is a strategy: `policy_words`) and the agent asks again; an
    agent policy hands the message to that agent. After too many consecutive fallbacks (the number the
    text gives when it says to end the conversation, else `max_consecutive_fallbacks`), or when `final`,
    the agent ends with an error; when the text says so, the conversation ends with it.
    """
    agent = ctx.program.agents[frame.agent]
    policy = agent.fallback
    data: FlowData = frame.data  # type: ignore[assignment]
    data.fallbacks += 1
    ends = ends_after(policy)
    limit = ends or ctx.program.settings.max_consecutive_fallbacks
    ctx.log.emit("fallback", frame.agent, reason=reason, policy=policy.shown() if policy else None,
                 count=data.fallbacks)
    hands_over = policy is not None and policy.kind == "agent" and policy.value in ctx.program.agents
    if final or data.fallbacks >= limit:
        ending = ends is not None and not final and data.fallbacks >= ends
        if not hands_over:
            ctx.say(frame.agent, policy_words(ctx, frame.agent, policy, "fallback", last=ending))
        if ending:
            ctx.log.emit("step", frame.agent, action="the fallback policy ends the conversation",
                         count=data.fallbacks)
            return Done(status="error", message=f"{data.fallbacks} fallbacks in a row: the conversation ends",
                        ends_conversation=True)
        return Outcome.done("error", reason if final else f"{data.fallbacks} fallbacks in a row")
    if hands_over:
        data.node = data.last_listen
        return Outcome.call(new_frame(ctx, policy.value, offer_input_by=f"fallback policy of {frame.agent}"))
    ctx.say(frame.agent, policy_words(ctx, frame.agent, policy, "fallback"))
    # Back at the `user` step: the next message is the user's answer to the fallback.
    data.node = data.last_listen
    frame.waiting = True
    return Outcome.wait()


# How far the agent the user turns to must lead the active one before it takes over unasked.
SWITCH_LEAD = 0.25
# With no LLM to ask, a switch the embedding model is not sure of is still taken when the other
# agent leads the active one by this much (an explicit request for another agent's task).
OFFLINE_SWITCH_LEAD = 0.15
YES_NO_WORDS = 3  # a yes/no word this early in the message makes it an answer to the agent's question


def answers_yes_no(message: str) -> bool:
    """Whether the message opens with a yes or a no ("yes please, add it too", "sounds great, yes")."""
    from frontdesk.nlu.matcher import polarity

    if polarity(message):
        return True
    words = message.lower().replace(",", " ").split()
    return any(polarity(w) > 0 or w in ("no", "nope", "nah") for w in words[:YES_NO_WORDS])


def few_words(message: str) -> bool:
    """A message with fewer than two words of letters ("12345678", "OK") carries too little for an
    embedding to say it changes the subject: it is an answer to the question asked."""
    return len(re.findall(r"[^\W\d_]{2,}", message)) < 2


def shares_data(router, agent: str, other: str) -> bool:
    """Whether two members of a router are bound to the same router argument: the first hands its
    result to the second (a book chosen for an order), so it must finish before the other starts."""
    return router.share_arguments(agent, other)


# A message that begins by dropping what the agent was doing (English only; deliberately simple).
DROPS_TASK = re.compile(r"^\W*(?:(?:oh|ok(?:ay)?|actually|well|hmm+|wait|sorry|um+|right|so)\b[,.!]*\s+)*(?:never\s*mind|forget\s+(?:it|that|about)|scratch\s+that|"
                        r"cancel\s+(?:that|it)|not\s+now|no,?\s+thanks?|no\s+thank\s+you)\b", re.IGNORECASE)


def _takes_offline(ctx: TurnContext, frame: Frame, message: str) -> bool:
    """Whether the active agent, working without a model that reasons, takes an item its tools listed that
    the message names (runtime/offline_tools.py taken_item)."""
    from frontdesk.runtime import offline_tools

    agent = ctx.program.agents.get(frame.agent)
    if agent is None or not getattr(agent, "tools", None):
        return False
    try:
        return offline_tools.taken_item(ctx, agent, frame, message) is not None
    except Exception:  # noqa: BLE001 - a check only
        return False


def clear_topic_switch(ctx: TurnContext, frame: Frame, message: str) -> str | None:
    """Another member of the router that started this agent, when the embedding model is sure
    the message is for it and not for the active agent; None otherwise (the agent handles it)."""
    if ctx.understanding is None:
        return None
    # The router below: the one that started this agent, or the one that started the flow that called
    # it (then caller and callee step aside together, see Engine._suspend_chain).
    below = ctx.router_below(frame)
    if below is None or not frame.said_since_start:
        return None
    router, callers = below
    chain = set(callers)
    if few_words(message):
        ctx.log.emit("step", frame.agent, action="no topic switch: too few words to change the subject")
        return None
    if ctx.llm_classifies and (frame.last_prompt or "").rstrip().endswith("?") and answers_yes_no(message):
        # The agent's model can take the answer and pass on the rest (with no such model, an
        # explicit request for another agent's task is still switched to, below).
        ctx.log.emit("step", frame.agent, action="no topic switch: the message answers the agent's question")
        return None
    if ctx.llm_classifies and DROPS_TASK.match(message):
        # "Never mind the books. Is the live chat open?": the agent ends its task first (its model
        # finishes and names the agent the rest is for), rather than waiting to come back unasked
        ctx.log.emit("step", frame.agent, action="no topic switch: the message drops the agent's task")
        return None
    names = [m.agent for m in router.members if m.agent in ctx.program.agents]
    decision = ctx.route_decide(message, names, frame.agent)
    best = decision.best if decision is not None else None
    if decision is None or best is None or best in chain:
        return None  # the message is for this agent, or for the flow that called it
    lead = decision.scores.get(best, 0.0) - decision.scores.get(frame.agent, 0.0)
    if decision.sure and decision.choice == best and lead >= SWITCH_LEAD:
        by = "embedding"
    elif not ctx.llm_classifies and lead >= OFFLINE_SWITCH_LEAD and decision.scores.get(best, 0.0) >= 0.3:
        by = "embedding (no LLM agent can hand the message on)"
    else:
        return None
    if not ctx.llm_classifies and shares_data(router, frame.agent, best) and _takes_offline(ctx, frame, message):
        # offline, the active agent takes the item it listed that the message names ("Emberwild sounds good,
        # please order it"), finishes and hands it over, rather than the other agent starting without it
        ctx.log.emit("step", frame.agent, action=f"no topic switch: {frame.agent} hands what the user took to {best}",
                     candidate=best)
        return None
    if ctx.llm_classifies and shares_data(router, frame.agent, best):
        # The active agent must finish first and hand its result over: let it decide.
        ctx.log.emit("step", frame.agent, action=f"no topic switch: {frame.agent} hands its result to {best}",
                     candidate=best)
        return None
    ctx.log.emit("route_decided", frame.agent, agent=best, by=by,
                 reason="the user changed topic", score=round(decision.scores.get(best, 0.0), 3),
                 active_score=round(decision.scores.get(frame.agent, 0.0), 3))
    return best


def switch_candidates(ctx: TurnContext, frame: Frame, every: bool = False):
    """Other members of the router this frame was started by: where a topic switch may go (a shortlist of
    them when the router has many, runtime/shortlist.py, unless `every`)."""
    router = ctx.started_by_router(frame)
    if router is None:
        return []
    others = [ctx.program.agents[m.agent] for m in router.members
              if m.agent != frame.agent and m.agent in ctx.program.agents]
    return others if every else shortlist(ctx, others, frame.agent)[0]
