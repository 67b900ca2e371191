"""The two model roles of an evaluation besides the bot: the simulated user and the judge.

Both talk to any `frontdesk.llm` provider (an OpenAI-compatible endpoint, or a scripted model in tests).

The simulated user is offered two tools: `finish(reason, goals_met)` ends the conversation, `say(text)`
sends a message; a plain text answer is the message too. A model without tools may end with a line
`FINISHED: reason`. An empty or unusable answer is asked for once more, then the run stops with an error.

The judge must call `verdict(verdict, reason)`; an answer in text that holds the same JSON object is
accepted too. Anything else is an `error` verdict with what went wrong, never an exception.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from typing import Any

from frontdesk.llm.base import (
    LLM,
    ChatMessage,
    LLMError,
    LLMRequest,
    LLMResponse,
    ScriptError,
    ToolSchema,
)
from frontdesk.textutil import clip

FINISH_TOOL = ToolSchema(
    name="finish",
    description="End the conversation: your goals are met, or it is clear they cannot be met here.",
    parameters={
        "type": "object",
        "properties": {
            "reason": {"type": "string", "description": "Why you are ending the conversation, in one sentence."},
            "goals_met": {"type": "boolean", "description": "true when every goal was met."},
        },
        "required": ["reason", "goals_met"],
    },
)
SAY_TOOL = ToolSchema(
    name="say",
    description="Send your next message to the assistant.",
    parameters={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
)
VERDICT_TOOL = ToolSchema(
    name="verdict",
    description="Give your verdict on the criterion.",
    parameters={
        "type": "object",
        "properties": {
            "verdict": {"type": "string", "enum": ["pass", "fail"]},
            "reason": {"type": "string", "description": "Why, citing what was said or done."},
        },
        "required": ["verdict", "reason"],
    },
)

USER_PROMPT = """You are role-playing a customer who is chatting with a customer-service assistant, to test it.

Who you are:
{persona}

What you want from this conversation:
{goals}

How to play:
- Write only your own next message to the assistant: short, natural, in the first person, as this customer would.
- Stay in character. Never say you are an AI, a test or a simulation, and never write the assistant's part.
- Pursue your goals one after another; answer the assistant's questions with details that fit who you are.
- When every goal is met, or the assistant has clearly refused or cannot help after you asked again, call the
  `finish` tool with the reason and whether your goals were met. Do not keep chatting after that.
- If you cannot call tools, write a line `FINISHED: <reason>` instead of a message."""

JUDGE_PROMPT = """You are a strict, fair evaluator of customer-service conversations between a customer and a chatbot.
Decide whether the conversation below meets this criterion:

CRITERION: {criterion}

Base your verdict only on the transcript (the bot's messages and the tool calls it made). Answer by calling the
`verdict` tool with "pass" or "fail" and a one- or two-sentence reason that cites the transcript. If you cannot
call tools, answer with only the JSON object {{"verdict": "pass" or "fail", "reason": "..."}}."""

_FINISH_LINE = re.compile(r"^\s*\**FINISHED\**\s*(?::\s*(?P<reason>.*))?$", re.IGNORECASE | re.MULTILINE)
_SPEAKER = re.compile(r"^\s*(?:customer|user|me|you)\s*:\s*", re.IGNORECASE)
_PASS = ("pass", "passed", "yes", "true", "met", "ok", "success")
_FAIL = ("fail", "failed", "no", "false", "not met", "failure")


class SimulatedUserError(Exception):
    """The simulated user's model gave no usable answer (after one more try), or its script ran out."""


@dataclass
class UserTurn:
    """What the simulated user does next: send `text`, or finish (with `reason` and `goals_met`)."""

    text: str | None = None
    finished: bool = False
    reason: str = ""
    goals_met: bool = True


@dataclass
class JudgeVerdict:
    verdict: str  # pass | fail | error
    reason: str


class CountingLLM:
    """An LLM that counts the calls and tokens of one role in one run."""

    def __init__(self, llm: LLM) -> None:
        self.llm = llm
        self.name = getattr(llm, "name", "llm")
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self._lock = threading.Lock()

    def complete(self, request: LLMRequest) -> LLMResponse:
        response = self.llm.complete(request)
        with self._lock:
            self.calls += 1
            self.prompt_tokens += response.usage.prompt_tokens
            self.completion_tokens += response.usage.completion_tokens
        return response

    def usage(self) -> dict[str, int]:
        return {"calls": self.calls, "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}


# ---- the simulated user ---------------------------------------------------------------------------


def user_messages(persona: str, goals: list[str], transcript: list[dict[str, Any]]) -> list[ChatMessage]:
    """The simulated user's prompt: its persona and goals, then the conversation so far with the roles
    turned round (the bot's messages are the `user` side, the simulated user's own are `assistant`)."""
    system = USER_PROMPT.format(persona=persona.strip(), goals="\n".join(f"- {g}" for g in goals))
    messages = [ChatMessage(role="system", content=system)]
    pending: list[str] = []  # the bot's lines since the simulated user last spoke

    def bot_side() -> None:
        if pending:
            text = "\n".join(pending)
        elif messages[-1].role == "system":
            text = "(the assistant waits for your first message)"
        else:
            text = "(the assistant said nothing)"
        messages.append(ChatMessage(role="user", content=text))
        pending.clear()

    for item in transcript:
        if item["role"] == "bot":
            pending.append(item["text"])
        elif item["role"] == "user":
            bot_side()
            messages.append(ChatMessage(role="assistant", content=item["text"]))
    bot_side()
    return messages


def next_user_turn(llm: LLM, persona: str, goals: list[str], transcript: list[dict[str, Any]],
                   temperature: float | None = 0.7) -> UserTurn:
    """Ask the simulated user for its next message (or its decision to finish)."""
    request = LLMRequest(purpose="other", messages=user_messages(persona, goals, transcript),
                         tools=[SAY_TOOL, FINISH_TOOL], tool_choice="auto", temperature=temperature,
                         plan="SimulatedUser")
    problem = ""
    for _ in range(2):  # one more try after an unusable answer
        try:
            response = llm.complete(request)
        except ScriptError as exc:
            raise SimulatedUserError(f"the simulated user's script: {exc}") from None
        except LLMError as exc:
            raise SimulatedUserError(f"the simulated user's model failed: {exc}") from None
        turn, problem = read_user_answer(response)
        if turn is not None:
            return turn
    raise SimulatedUserError(f"the simulated user's model gave no usable answer twice: {problem}")


def read_user_answer(response: LLMResponse) -> tuple[UserTurn | None, str]:
    """The simulated user's decision in a model answer, or None and what was wrong with it."""
    for call in response.tool_calls:
        if call.name == "finish":
            met = call.arguments.get("goals_met", True)
            if isinstance(met, str):
                met = met.strip().lower() not in ("false", "no", "0")
            return UserTurn(finished=True, reason=str(call.arguments.get("reason") or "").strip(),
                            goals_met=bool(met)), ""
    for call in response.tool_calls:
        text = call.arguments.get("text") or call.arguments.get("message")
        if isinstance(text, str) and text.strip():
            return UserTurn(text=_clean_message(text)), ""
    content = (response.content or "").strip()
    finish = _FINISH_LINE.search(content)
    if finish:
        before = content[:finish.start()].strip()
        return UserTurn(finished=True, reason=(finish.group("reason") or "").strip() or before), ""
    if content:
        text = _clean_message(content)
        if text:
            return UserTurn(text=text), ""
    if response.tool_calls:
        names = ", ".join(c.name for c in response.tool_calls)
        return None, f"it called {names} without a message"
    return None, "it answered with no text"


def _clean_message(text: str) -> str:
    """A message as the customer would send it: without a leading 'Customer:' and surrounding quotes."""
    text = _SPEAKER.sub("", text.strip(), count=1).strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    return text


# ---- the judge ------------------------------------------------------------------------------------


def judge_messages(criterion: str, transcript_text: str, persona: str, goals: list[str]) -> list[ChatMessage]:
    context = (f"The customer's persona: {persona.strip()}\nThe customer's goals:\n"
               + "\n".join(f"- {g}" for g in goals))
    return [
        ChatMessage(role="system", content=JUDGE_PROMPT.format(criterion=criterion.strip())),
        ChatMessage(role="user", content=f"{context}\n\nTRANSCRIPT:\n{transcript_text}\n\nCRITERION: "
                                         f"{criterion.strip()}\nYour verdict?"),
    ]


def judge(llm: LLM, criterion: str, transcript_text: str, persona: str, goals: list[str]) -> JudgeVerdict:
    """Ask the judge whether the conversation meets `criterion`; an unusable answer is an `error` verdict."""
    request = LLMRequest(purpose="other", messages=judge_messages(criterion, transcript_text, persona, goals),
                         tools=[VERDICT_TOOL], tool_choice="verdict", temperature=0.0, plan="Judge")
    try:
        response = llm.complete(request)
    except ScriptError as exc:
        return JudgeVerdict("error", f"the judge's script: {exc}")
    except LLMError as exc:
        return JudgeVerdict("error", f"the judge's model failed: {exc}")
    return read_verdict(response)


def read_verdict(response: LLMResponse) -> JudgeVerdict:
    """The verdict in a judge's answer: a `verdict` tool call, or a JSON object in its text."""
    found: Any = None
    for call in response.tool_calls:
        if call.name == "verdict" or "verdict" in call.arguments:
            found = call.arguments
            break
    if found is None and response.content:
        found = _json_object(response.content)
    if not isinstance(found, dict):
        shown = (response.content or "").strip() or (
            ", ".join(c.name for c in response.tool_calls) and f"a call of {', '.join(c.name for c in response.tool_calls)}")
        return JudgeVerdict("error", f"the judge's answer has no verdict: {clip(shown or 'an empty answer', 160)}")
    raw = found.get("verdict", found.get("passed", found.get("pass")))
    verdict = _verdict_word(raw)
    if verdict is None:
        return JudgeVerdict("error", f"the judge's verdict {clip(json.dumps(raw, default=str), 160)} is neither pass nor fail")
    reason = found.get("reason")
    reason = reason.strip() if isinstance(reason, str) and reason.strip() else "(the judge gave no reason)"
    return JudgeVerdict(verdict, reason)


def _verdict_word(raw: Any) -> str | None:
    if isinstance(raw, bool):
        return "pass" if raw else "fail"
    if isinstance(raw, str):
        word = raw.strip().strip(".!").lower()
        if word in _PASS:
            return "pass"
        if word in _FAIL:
            return "fail"
    return None


def _json_object(text: str) -> Any:
    """The first JSON object in a text (inside a ``` fence or not), or None."""
    text = text.strip()
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    if fenced:
        text = fenced.group(1).strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    start = text.find("{")
    while start >= 0:
        try:
            value, _ = json.JSONDecoder().raw_decode(text[start:])
            return value
        except ValueError:
            start = text.find("{", start + 1)
    return None
