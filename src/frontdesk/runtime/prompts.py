"""Assembly of every LLM request the runtime makes (routing, understanding, reasoning, fallback).

Keeping all prompt text here means one place decides what a model sees; the ACDL
descriptions of Frontdesk's own calls are generated from these same functions.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from frontdesk.ir.models import Agent, KnowledgeAgent, ReasoningAgent, RouterAgent, ToolDef
from frontdesk.llm.base import ChatMessage, LLMRequest, ToolSchema
from frontdesk.runtime.promptplan import (
    Each,
    Fixed,
    Maybe,
    Message,
    PromptPlan,
    Turns,
    Value,
)
from frontdesk.runtime.state import HistoryItem

if TYPE_CHECKING:
    from frontdesk.runtime.retrieval.index import Passage

NONE_CHOICE = "none"
ROUTE_TOOL = "route"
UNDERSTAND_TOOL = "understand"
SET_ARGS_TOOL = "set_args"
FINISH_TOOL = "finish"
HAND_BACK_TOOL = "hand_back"
REST_FIELD = "rest"  # finish: what the message asks beyond the task (an agent outside a router)
NEXT_FIELD = "next"  # finish: the agent beside it that the rest of the message is for
TO_FIELD = "to"  # hand_back: the agent beside it that the message is for
DELEGATE_PREFIX = "delegate_to_"  # + agent: call an agent and get its result (ABL DELEGATE)
TRANSFER_PREFIX = "transfer_to_"  # + agent: hand the conversation over (ABL HANDOFF)
ESCALATE_TOOL = "escalate_to_human"  # hand the conversation to a person (ABL ESCALATE)
# ABL's system tools (abl-core-concepts "System Tools"), by the names the spec gives them. An ABL agent is
# offered `complete`, `escalate` and `fan_out`; `handoff` and `delegate` (with an `agent` argument) are
# accepted as other names of its transfer_to_<agent> and delegate_to_<agent> tools.
COMPLETE_TOOL = "complete"  # = finish
ABL_ESCALATE_TOOL = "escalate"  # = escalate_to_human
HANDOFF_TOOL = "handoff"  # {agent} = transfer_to_<agent>
DELEGATE_TOOL = "delegate"  # {agent, input} = delegate_to_<agent>
FAN_OUT_TOOL = "fan_out"  # {tasks: [{agent, input}]}: several delegations, results together
SUMMARY_PURPOSE = "summarize"


# A routing or understanding decision is about the latest message: the messages just before it (the
# question it answers) are what it needs, not the whole conversation.
DECISION_WINDOW = 6


def decision_window(window: int) -> int:
    """How many recent messages a route or understand call shows (the program's window, at most 6)."""
    return min(window, DECISION_WINDOW) if window else DECISION_WINDOW


def history_messages(history: list[HistoryItem], window: int) -> list[ChatMessage]:
    out = []
    for item in history[-window:] if window else history:
        role = "user" if item.role == "user" else "assistant"
        out.append(ChatMessage(role=role, content=item.text))
    return out


def _transcript_line(item: HistoryItem) -> str:
    who = "User" if item.role == "user" else f"Bot ({item.agent})" if item.agent else "Bot"
    return f"{who}: {item.text}"


def conversation_message(history: list[HistoryItem], window: int) -> Message:
    """The recent conversation as one user message: a header and a line per message."""
    recent = history[-window:] if window else history
    lines = Each("m", "sys.recent_messages", [Value("sys.transcript_line", "", "[m]")],
                 [[Value("sys.transcript_line", _transcript_line(item), "[m]")] for item in recent])
    return Message("user", [Fixed("CONVERSATION_HEADER", "Conversation:"), lines,
                            Maybe("sys.recent_messages == none", [Fixed("NO_MESSAGES_YET", "(no messages yet)")],
                                  present=not recent, parts=[Fixed("NO_MESSAGES_YET", "(no messages yet)")])])


def _agent_line(agent: Agent, router: Agent | None = None) -> Value:
    """One candidate as the router's model sees it: its description, and when the router says to route
    to it (ABL HANDOFF WHEN) where it says so."""
    text = f"- {agent.name}: {agent.description or '(no description)'}"
    member = router.member(agent.name) if isinstance(router, RouterAgent) else None
    if member is not None and member.description:
        text += f" (route here when: {member.description})"
    return Value("sys.agent_description", text, "[agent]")


def route_plan(router: Agent, candidates: list[Agent], history: list[HistoryItem], window: int) -> PromptPlan:
    """Choose the member agent that should handle the user's latest message."""
    instructions = (getattr(router, "instructions", None) or "").strip()
    system = Message("system", [
        Fixed("ROUTER_ROLE", "You are the dispatcher of a customer-service assistant. Pick the one agent that "
                             "should handle the user's latest message, judging by the agents' descriptions and "
                             "the conversation."),
        Fixed("AGENTS_HEADER", "Agents:"),
        Each("agent", "sys.candidate_agents", [Value("sys.agent_description", "", "[agent]")], [[_agent_line(a, router)] for a in candidates]),
        Fixed("NONE_OPTION", f'If no agent fits the message, choose "{NONE_CHOICE}". Answer by calling {ROUTE_TOOL}.'),
        Maybe("sys.router.prompt", [Fixed("SELECTION_POLICY_HEADER", "Selection policy:"), Value("sys.router.prompt", "")],
              present=bool(instructions),
              parts=[Fixed("SELECTION_POLICY_HEADER", "Selection policy:"), Value("sys.router.prompt", instructions)]),
    ])
    return PromptPlan(f"Route_{router.name}", "[@T]", [system, conversation_message(history, window)],
                      comment=f"{router.name} picks the agent for the user's message (tool: {ROUTE_TOOL})")


ALSO_FIELD = "also"  # route: a second request in the same message, for another agent after the first


def with_note(request: LLMRequest, note: str) -> LLMRequest:
    """The same request once more, with a system note after its messages (why it is asked again)."""
    return request.model_copy(update={"messages": [*request.messages, ChatMessage(role="system", content=note)]})


def rechecked(request: LLMRequest, choice: str) -> LLMRequest:
    """The same decision asked once more, when a local check doubts the model's `choice` (runtime
    context.embedding_doubts): the model reads the message again, with no hint of what the check prefers."""
    return with_note(request, f'Your answer "{choice}" looks unlikely for this message. Read the '
                              "user's latest message again and answer once more.")


def _also(names: list[str]) -> dict[str, Any]:
    """The route tool's `also`: the agent for a second request the message makes ("How fast is shipping,
    and could you suggest a mystery?"), run after the first agent in the same turn."""
    if len(names) < 2:
        return {}
    return {ALSO_FIELD: {"type": "string", "enum": names + [NONE_CHOICE],
                         "description": "the agent for a second request in the same message, if any"}}


def route_request(router: Agent, candidates: list[Agent], history: list[HistoryItem], window: int) -> LLMRequest:
    names = [a.name for a in candidates]
    tool = ToolSchema(
        name=ROUTE_TOOL,
        description="Hand the user's latest message to an agent.",
        parameters={
            "type": "object",
            "properties": {"agent": {"type": "string", "enum": names + [NONE_CHOICE]}, **_also(names)},
            "required": ["agent"],
        },
    )
    plan = route_plan(router, candidates, history, decision_window(window))
    return _request("route", plan, tools=[tool], tool_choice=ROUTE_TOOL)


def understand_plan(agent: Agent, choices: list[tuple[str, list[str]]], switches: list[Agent],
                    extract: list[str], history: list[HistoryItem], window: int, guards: list[Agent] = ()) -> PromptPlan:
    about = f" ({agent.description})." if agent.description else "."
    asks_choice = bool(choices or switches)
    case_line = lambda key, examples: Value(
        "sys.claims_examples", f"- {key}: the user says something like " + "; ".join(f'"{e}"' for e in examples),
        "[case]")
    switch_line = lambda a: Value(
        "sys.agent_description", f"- switch:{a.name}: the user asks for something else: {a.description}", "[agent]")
    question = Fixed("CHOICE_QUESTION", "Which option matches the user's latest message?")
    none_option = Fixed("NONE_OPTION", f"- {NONE_CHOICE}: none of the above")
    choice_shape = [
        question,
        Each("case", "sys.claims_cases", [Value("sys.claims_examples", "", "[case]",
                                                 comment="- 1: the user says something like \"…\"")]),
        Each("agent", "sys.switch_agents", [Value("sys.agent_description", "", "[agent]",
                                                   comment="- switch:<agent>: the user asks for something else")]),
        none_option,
    ]
    choice_parts = [
        question,
        Each("case", "sys.claims_cases", [], [[case_line(k, e)] for k, e in choices]),
        Each("agent", "sys.switch_agents", [], [[switch_line(a)] for a in switches]),
        none_option,
    ]
    extract_intro = "Fill in the values the user gave for these arguments (leave out any the user did not give):"
    also_line = Fixed("ALSO_OPTION", "If the message answers with an option above and also asks for another "
                                     "agent's task, name that agent in `also`.")
    system = Message("system", [
        Fixed("UNDERSTAND_ROLE", f'You read the user\'s latest message for the "{agent.name}" step of a conversation'),
        Value("sys.agent.description", about),
        Maybe("sys.claims_cases", choice_shape, present=asks_choice, parts=choice_parts),
        Maybe("sys.switch_agents", [also_line], present=bool(switches), parts=[also_line]),
        Maybe("sys.args_to_extract", [Fixed("EXTRACT_INSTRUCTIONS", extract_intro), Value("sys.args_to_extract", "")],
              present=bool(extract),
              parts=[Fixed("EXTRACT_INSTRUCTIONS", extract_intro), Value("sys.args_to_extract", ", ".join(extract))]),
        # the router's input guardrails, folded into this call when nothing checked the message yet
        Maybe("sys.guardrail_agents", [Fixed("MERGED_GUARD_OPTION", ""), _guard_rules([])],
              present=bool(guards),
              parts=[Fixed("MERGED_GUARD_OPTION", f'If the message breaks one of these rules, choose "{BLOCKED_CHOICE}" '
                                                  f"and give a short, polite {REPLY_FIELD} for the user:"),
                     _guard_rules(list(guards))]),
        Fixed("ANSWER_WITH_TOOL", f"Answer by calling {UNDERSTAND_TOOL}."),
    ])
    return PromptPlan(f"Understand_{agent.name}", "[@T]", [system, conversation_message(history, window)],
                      comment=f"{agent.name}: which `the user claims` case holds, a topic switch, and argument "
                              f"values, in one call (tool: {UNDERSTAND_TOOL})")


def understand_request(
    agent: Agent,
    choices: list[tuple[str, list[str]]],
    switches: list[Agent],
    extract: list[str],
    history: list[HistoryItem],
    window: int,
    guards: list[Agent] = (),
) -> LLMRequest:
    """Decide, in one call, which `the user claims` case holds, whether the user switched
    topic, and the values of the arguments the flow is about to read (and, with `guards`, whether the
    message breaks the router's input guardrails)."""
    props: dict[str, Any] = {}
    required = []
    if choices or switches:
        enum = [k for k, _ in choices] + [f"switch:{s.name}" for s in switches] + [NONE_CHOICE]
        if guards:
            enum.append(BLOCKED_CHOICE)
            props[REPLY_FIELD] = {"type": "string"}
        props["choice"] = {"type": "string", "enum": enum}
        required.append("choice")
    if switches:
        props["also"] = {"type": "string", "enum": [s.name for s in switches] + [NONE_CHOICE]}
    if extract:
        props["args"] = {"type": "object", "properties": {name: {} for name in extract}}
    tool = ToolSchema(
        name=UNDERSTAND_TOOL,
        description="Report what the user's latest message means.",
        parameters={"type": "object", "properties": props, "required": required},
    )
    plan = understand_plan(agent, choices, switches, extract, history, decision_window(window),
                           guards if (choices or switches) else ())
    return _request("understand", plan, tools=[tool], tool_choice=UNDERSTAND_TOOL)


@dataclass
class AgentContext:
    """What an ABL agent's system prompt shows besides its transcript (abl-core-concepts "How Agents
    Execute": GOAL, PERSONA, LIMITATIONS, INSTRUCTIONS, the active behaviour profiles, the data gathered
    and still needed, and the session memory it may read). Built per step by the reasoning executor."""

    goal: str = ""
    persona: str = ""
    limitations: list[str] = field(default_factory=list)
    instructions: str = ""
    profiles: list[tuple[str, str]] = field(default_factory=list)  # (name, instructions) by priority
    known: list[tuple[str, Any]] = field(default_factory=list)  # gathered fields and their values
    needed: list[tuple[str, str, str]] = field(default_factory=list)  # (field, type, prompt) still unset
    memory: list[tuple[str, Any]] = field(default_factory=list)  # session / persistent values it may read
    hidden_tools: list[str] = field(default_factory=list)  # TOOLS_HIDE of the active profiles
    added_tools: list[str] = field(default_factory=list)  # TOOLS_ADD of the active profiles
    fields: list[Any] = field(default_factory=list)  # the GatherFields it collects (typed set_args)
    can_fan_out: bool = False


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str) if value is not None else "(unknown)"


def _summary_part(summary: str) -> Maybe:
    header = Fixed("SUMMARY_HEADER", "Summary of the earlier conversation (older messages were compacted):")
    return Maybe("sys.conversation_summary", [header, Value("sys.conversation_summary", "")],
                 present=bool(summary), parts=[header, Value("sys.conversation_summary", summary)])


def _listing(cond: str, header: Fixed, path: str, idx: str, lines: list[str], comment: str = "") -> Maybe:
    return Maybe(cond, [header, Each(idx.strip("[]"), cond, [Value(path, "", idx, comment=comment)])],
                 present=bool(lines),
                 parts=[header, Each(idx.strip("[]"), cond, [], [[Value(path, line, idx)] for line in lines])])


def _abl_system(agent: ReasoningAgent, about: AgentContext, summary: str, taken: bool = False) -> Message:
    goal = f"Goal: {about.goal}" if about.goal else ""
    needed_text = (f"Still needed (ask for them naturally, several in one question is fine; whenever the user "
                   f"gives values, record all of them in one {SET_ARGS_TOOL} call):")
    return Message("system", [
        Maybe("sys.agent.goal", [Value("sys.agent.goal", "", comment="GOAL")], present=bool(goal),
              parts=[Value("sys.agent.goal", goal)]),
        Maybe("sys.agent.persona", [Value("sys.agent.persona", "", comment="PERSONA")], present=bool(about.persona),
              parts=[Value("sys.agent.persona", about.persona)]),
        _listing("sys.agent.limitations", Fixed("LIMITATIONS_HEADER", "Limitations:"), "sys.limitation", "[l]",
                 [f"- {x}" for x in about.limitations], "LIMITATIONS, one per line"),
        Maybe("sys.agent.instructions", [Value("sys.agent.instructions", "", comment="INSTRUCTIONS (and the step's)")],
              present=bool(about.instructions), parts=[Value("sys.agent.instructions", about.instructions)]),
        _listing("sys.active_profiles", Fixed("PROFILES_HEADER", "Active behaviour profiles (follow them):"),
                 "sys.profile_instructions", "[p]", [f"- {n}: {t}" for n, t in about.profiles],
                 "BEHAVIOR_PROFILES whose WHEN holds, highest priority first"),
        _listing("sys.known_fields", Fixed("KNOWN_FIELDS_HEADER", "Already known:"), "sys.field_value", "[f]",
                 [f"- {n}: {_shown(v)}" for n, v in about.known], "a gathered field and its value"),
        _listing("sys.needed_fields", Fixed("NEEDED_FIELDS_HEADER", needed_text), "sys.field_prompt", "[f]",
                 [f"- {n} ({t}): {p}" if p else f"- {n} ({t})" for n, t, p in about.needed],
                 "a required field still unset, its type and its GATHER prompt"),
        _listing("sys.session_memory", Fixed("MEMORY_HEADER", "Memory you may read:"), "sys.memory_value", "[v]",
                 [f"- {n}: {_shown(v)}" for n, v in about.memory], "MEMORY session variables and persistent paths"),
        _summary_part(summary),
        Fixed("ABL_REASONING_RULES", f"When the goal is reached, call {COMPLETE_TOOL}."),
        _hand_back_rule(f"If the user wants something outside your task, call {HAND_BACK_TOOL}.", taken),
        Fixed("REPLY_RULE", "Otherwise reply to the user."),
    ])


def _hand_back_rule(text: str, taken: bool) -> Maybe:
    """When to give the message back; not said once the agent has acted on the message in this turn (it
    called one of its tools for it: the message is its), when hand_back is not offered either."""
    rule = Fixed("HAND_BACK_RULE", text)
    return Maybe("not sys.message_taken", [rule], present=not taken, parts=[rule])


def message_taken(messages: list[ChatMessage]) -> bool:
    """Whether the agent has acted on the user's latest message: since it, it called a tool of its own (not
    one of the built-in ones that record, end or give back). The message is then its own: `hand_back` is
    not offered (issue 29: about 60 tokens on each later step of the turn; `finish` still names who takes
    what the message asks beyond the task)."""
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=None)
    if last_user is None:
        return False
    builtin = {SET_ARGS_TOOL, FINISH_TOOL, COMPLETE_TOOL, HAND_BACK_TOOL}
    return any(c.name not in builtin for m in messages[last_user + 1:] for c in m.tool_calls)


QUOTED_MIN_CHARS = 40  # a value this long that a tool result holds word for word is not shown twice


def _tool_results(messages: list[ChatMessage]) -> list[tuple[str, str]]:
    """(tool name, result text) of each tool result in the transcript."""
    names = {c.id: c.name for m in messages for c in m.tool_calls if c.id}
    return [(names.get(m.tool_call_id or "", "tool"), m.content or "") for m in messages
            if m.role == "tool" and m.content]


def _quoted_from(value: Any, results: list[tuple[str, str]]) -> str | None:
    """The tool whose result in the transcript holds `value` (a long text) word for word, if any."""
    if not isinstance(value, str) or len(value) < QUOTED_MIN_CHARS:
        return None
    return next((name for name, text in reversed(results) if value in text), None)


def reasoning_plan(agent: ReasoningAgent, values: dict[str, Any], messages: list[ChatMessage],
                   about: AgentContext | None = None, summary: str = "") -> PromptPlan:
    """One step of the tool-calling loop. `about` (ABL agents) gives the system prompt its sections;
    without it (ADL agents) the agent's prompt and its arguments make it. `summary` stands for older
    messages that were compacted out of the transcript."""
    results = _tool_results(messages)
    taken = message_taken(messages)
    unknown = [k for k, v in values.items() if v is None]  # one line for them all: "- not known yet: a, b"
    args_header = f"Arguments you keep track of (record a value as soon as you learn it by calling {SET_ARGS_TOOL}):"

    def arg_line(k, v):
        shown = json.dumps(v, default=str) if v is not None else "(unknown)"
        source = _quoted_from(v, results)
        if source is not None:  # a tool's result holds it word for word: the model reads it there
            shown = f"(as in the {source} result above)"
        return Value("sys.arg_value", f"- {k}: {shown}", "[arg]")

    if about is not None:
        system = _abl_system(agent, about, summary, taken)
    else:
        system = Message("system", [
            Value("sys.agent.prompt", agent.instructions.strip(), comment="the agent's prompt"),
            Maybe("sys.agent.args", [Fixed("ARGS_HEADER", args_header),
                                     Each("arg", "sys.agent.args", [Value("sys.arg_value", "", "[arg]")]),
                                     Maybe("sys.unknown_args", [Value("sys.unknown_args", "",
                                                                      comment="the arguments without a value")])],
                  present=bool(values),
                  parts=[Fixed("ARGS_HEADER", args_header),
                         Each("arg", "sys.agent.args", [], [[arg_line(k, v)] for k, v in values.items()
                                                            if v is not None]),
                         Maybe("sys.unknown_args", [], present=bool(unknown),
                               parts=[Value("sys.unknown_args", f"- not known yet: {', '.join(unknown)}")])]),
            _summary_part(summary),
            Fixed("REASONING_RULES", f"Task complete: call {FINISH_TOOL}."),
            _hand_back_rule(f"The user wants something outside your task: call {HAND_BACK_TOOL}.", taken),
            Fixed("REPLY_RULE", "Otherwise reply to the user."),
        ])
    shape = [
        Message("user", [Value("env.user_message", "", "[m]")]),
        Message("assistant", [Value("resp.agent_message", "", "[m]", comment="a reply or tool calls")]),
        Message("tool", [Value("sys.tool_result", "", "[m]")]),
    ]
    element = {"user": ("env.user_message", "[m]"), "assistant": ("resp.agent_message", "[m]"),
               "tool": ("sys.tool_result", "[m]"), "system": ("sys.note", "[m]")}
    real = []
    for m in messages:
        path, idx = element[m.role]
        real.append(Message(m.role, [Value(path, m.content or "", idx)], tool_calls=m.tool_calls,
                            tool_call_id=m.tool_call_id, name=m.name))
    turns = Turns("m", "sys.agent_transcript", shape, real)
    return PromptPlan(f"Reason_{agent.name}", "[@T.I]", [system, turns],
                      comment=f"{agent.name}: one step of the tool-calling loop (the transcript holds the "
                              "conversation so far, the agent's tool calls and their results)")


def summary_plan(agent: Agent, transcript: str) -> PromptPlan:
    """Context compaction: older messages of an agent's transcript summarised in a few lines."""
    system = Message("system", [Fixed("SUMMARY_ROLE", (
        "Summarise this part of a customer-service conversation in a few short lines for the assistant that "
        "continues it: what the user wants, the facts and values given (names, numbers, dates, references), "
        "what tools returned and what was promised or decided. Leave out greetings and small talk."))])
    user = Message("user", [Value("sys.compacted_messages", transcript, "[@T]",
                                  comment="the older messages, one line each")])
    return PromptPlan(f"Summarize_{agent.name}", "[@T]", [system, user],
                      comment=f"{agent.name}: context compaction, older messages summarised (no tools)")


def summary_request(agent: Agent, transcript: str) -> LLMRequest:
    return _request(SUMMARY_PURPOSE, summary_plan(agent, transcript))


# ---- a fallback or exit policy written as a strategy (ADL `fallback:` / `exit:` text) ----------------------

POLICY_TOOL = "policy_message"  # {policy, message}: what the agent says, following its policy's text
POLICY_KINDS = ("fallback", "exit")


def policy_plan(agent: Agent, kind: str, text: str, history: list[HistoryItem], window: int,
                last: bool = False) -> PromptPlan:
    """The words an agent says when its fallback (it could not handle the message) or exit (it is done)
    policy applies, written by the model from the policy's text, a strategy rather than the words."""
    situation = ("The agent could not handle the user's latest message." if kind == "fallback"
                 else "The conversation with the agent is ending.")
    system = Message("system", [
        Fixed("POLICY_ROLE", (
            f'You write the next message of "{agent.name}", an agent of a customer-service assistant, to the '
            "user. Follow the agent's policy below: it says what to do, it is not the words to say. Write only "
            f"the message for the user, in the conversation's language, and answer by calling {POLICY_TOOL}.")),
        Value("sys.policy.situation", situation, "[@T]", comment="fallback: not understood; exit: ending"),
        Value("sys.policy.text", f"Policy: {text}", "[@T]", comment="the agent's fallback or exit text"),
        Maybe("sys.policy.last", [Fixed("POLICY_LAST", "This is the last message: the conversation ends after "
                                                       "it, so close it politely.")],
              present=last, parts=[Fixed("POLICY_LAST", "This is the last message: the conversation ends after "
                                                        "it, so close it politely.")]),
    ])
    return PromptPlan(f"Policy_{agent.name}", "[@T]", [system, conversation_message(history, window)],
                      comment=f"{agent.name}: the message its {kind} policy asks for (tool: {POLICY_TOOL})")


def policy_request(agent: Agent, kind: str, text: str, history: list[HistoryItem], window: int,
                   last: bool = False) -> LLMRequest:
    tool = ToolSchema(
        name=POLICY_TOOL,
        description="Say this message to the user.",
        parameters={
            "type": "object",
            "properties": {"policy": {"type": "string", "enum": [kind]},
                           "message": {"type": "string", "description": "the message for the user"}},
            "required": ["policy", "message"],
        },
    )
    plan = policy_plan(agent, kind, text, history, decision_window(window), last)
    return _request("fallback", plan, tools=[tool], tool_choice=POLICY_TOOL)


def _without_repeated_descriptions(parameters: dict[str, Any], seen: set[tuple[str, str]]) -> dict[str, Any]:
    """A tool's parameters with the description of a parameter left out when an earlier tool of the
    same request described the same parameter in the same words (`username` in every banking tool)."""
    props = parameters.get("properties")
    if not isinstance(props, dict):
        return parameters
    kept = {}
    for name, schema in props.items():
        text = schema.get("description") if isinstance(schema, dict) else None
        if isinstance(text, str) and (name, text) in seen:
            schema = {k: v for k, v in schema.items() if k != "description"}
        elif isinstance(text, str):
            seen.add((name, text))
        kept[name] = schema
    return {**parameters, "properties": kept}


# How a GATHER field's type is offered to the model in set_args (the runtime checks the value again).
FIELD_SCHEMA: dict[str, dict[str, Any]] = {
    "string": {"type": "string"}, "number": {"type": "number"}, "integer": {"type": "integer"},
    "boolean": {"type": "boolean"}, "date": {"type": "string", "description": "a date, YYYY-MM-DD"},
    "datetime": {"type": "string", "description": "date and time, YYYY-MM-DDTHH:MM"},
    "email": {"type": "string", "description": "an e-mail address"},
    "phone": {"type": "string", "description": "a phone number"},
}


def field_schema(gather_field: Any) -> dict[str, Any]:
    """The JSON schema set_args offers for one GATHER field: its type, its options, its prompt."""
    schema = dict(FIELD_SCHEMA.get(gather_field.type, {}))
    if gather_field.options:
        schema["enum"] = list(gather_field.options)
    if gather_field.prompt and "description" not in schema:
        schema["description"] = gather_field.prompt
    return schema


def _returns_text(returns: dict[str, Any]) -> str:
    """`Returns: covered (boolean), deductible (number).` from a tool's return schema ("" when it says nothing)."""
    props = returns.get("properties") if isinstance(returns, dict) else None
    if isinstance(props, dict) and props:
        fields = ", ".join(f"{k} ({v.get('type', 'any')})" if isinstance(v, dict) else k for k, v in props.items())
        return f"Returns: {fields}."
    if isinstance(returns, dict) and returns.get("type") == "array":
        return "Returns: a list."
    return ""


def reasoning_tools(agent: ReasoningAgent, tools: dict[str, ToolDef], others: list[str] = (),
                    about: AgentContext | None = None, taken: bool = False) -> list[ToolSchema]:
    """The agent's tools and the built-in ones. `others` are the agents beside it under its router:
    `finish` and `hand_back` then name the one the user's message (or what is left of it) is for,
    so the router hands it on without a routing call of its own. `about` (ABL agents): the system
    tools get the spec's names (`complete`, `escalate`, `fan_out`), set_args is typed by the GATHER
    fields, and tools the active behaviour profiles hide are left out."""
    out = []
    seen: set[tuple[str, str]] = set()
    hidden = set(about.hidden_tools) if about is not None else set()
    for name in agent.tools:
        tdef = tools.get(name)
        if tdef is not None and name not in hidden:
            about_tool = tdef.description
            if about is not None and _returns_text(tdef.returns):  # ABL: what the signature says it returns
                about_tool = (about_tool.rstrip(".") + ". " if about_tool else "") + _returns_text(tdef.returns)
            out.append(ToolSchema(name=name, description=about_tool,
                                  parameters=_without_repeated_descriptions(tdef.json_schema(), seen)))
    for name in about.added_tools if about is not None else []:  # TOOLS_ADD of an active profile
        tdef = tools.get(name)
        if tdef is not None and name not in hidden and name not in agent.tools:
            out.append(ToolSchema(name=name, description=tdef.description,
                                  parameters=_without_repeated_descriptions(tdef.json_schema(), seen)))
    for d in agent.delegates:
        out.append(ToolSchema(
            name=DELEGATE_PREFIX + d.agent,
            description=(d.purpose or f"Ask {d.agent} and get its answer.")
            + (f" Returns: {', '.join(f'{k} ({v})' for k, v in d.returns.items())}." if d.returns else ""),
            parameters={"type": "object", "properties": {name: {} for name in d.inputs}},
        ))
    if about is not None and about.can_fan_out and agent.delegates:
        out.append(ToolSchema(
            name=FAN_OUT_TOOL,
            description="Run several of your delegations at once; their results come back together. A task "
                        "that needed something from the user comes back as needs_input with its question: "
                        "ask the user yourself.",
            parameters={"type": "object", "required": ["tasks"], "properties": {"tasks": {
                "type": "array", "items": {"type": "object", "required": ["agent"], "properties": {
                    "agent": {"enum": [d.agent for d in agent.delegates]}, "input": {"type": "object"}}}}}},
        ))
    for h in agent.handoffs:
        out.append(ToolSchema(
            name=TRANSFER_PREFIX + h.agent,
            description=(h.purpose or f"Hand the conversation to {h.agent}.")
            + (" You get it back when they are done." if h.resume else ""),
            parameters={"type": "object", "properties": {}},
        ))
    if agent.can_escalate:
        reason = {"reason": {"type": "string"}}
        if about is not None:
            out.append(ToolSchema(name=ABL_ESCALATE_TOOL, description="Hand the conversation to a human colleague.",
                                  parameters={"type": "object", "properties": {
                                      **reason, "priority": {"enum": ["low", "medium", "high", "critical"]}}}))
        else:
            out.append(ToolSchema(name=ESCALATE_TOOL, description="Hand the conversation to a human colleague.",
                                  parameters={"type": "object", "properties": reason}))
    if agent.args:
        typed = {f.name: f for f in about.fields} if about is not None else {}
        out.append(ToolSchema(
            name=SET_ARGS_TOOL,
            description="Record the values the user gave (several at once)." if typed else "Record argument values.",
            parameters={"type": "object", "properties": {
                a.name: field_schema(typed[a.name]) if a.name in typed else {} for a in agent.args}},
        ))
    finish: dict[str, Any] = {"status": {"enum": ["success", "error"]}, "message": {"type": "string"}}
    if others:
        finish[NEXT_FIELD] = {"enum": [*others, NONE_CHOICE]}
        finish_about = (f"End your task. {NEXT_FIELD}: the agent for what the user's last message asks beyond it "
                        f"(\"{NONE_CHOICE}\" if nothing).")
    else:
        finish[REST_FIELD] = {"type": "string"}
        finish_about = f"End your task. {REST_FIELD}: what the user's last message asks beyond it (\"\" if nothing)."
    out.append(ToolSchema(name=COMPLETE_TOOL if about is not None else FINISH_TOOL, description=finish_about,
                          parameters={"type": "object", "properties": finish}))
    if taken:  # the agent acted on the message already (message_taken): it is not given back
        return out
    out.append(ToolSchema(
        name=HAND_BACK_TOOL,
        description="The user wants something outside your task" + (
            f"; {TO_FIELD}: whose task it is (one of {COMPLETE_TOOL if about is not None else FINISH_TOOL}'s "
            f"{NEXT_FIELD} agents)." if others else "."),
        parameters={"type": "object", "properties": {TO_FIELD: {"type": "string"}} if others else {}},
    ))
    return out


def reasoning_request(agent: ReasoningAgent, values: dict[str, Any], messages: list[ChatMessage],
                      tools: dict[str, ToolDef], talk_only: bool = False, others: list[str] = (),
                      about: AgentContext | None = None, summary: str = "") -> LLMRequest:
    """One step of an LLM agent; `talk_only` (no user message yet) offers it no tools at all."""
    offered = [] if talk_only else reasoning_tools(agent, tools, others, about, message_taken(messages))
    return _request("reason", reasoning_plan(agent, values, messages, about, summary), tools=offered)


def kb_answer_plan(agent: Agent, question: str, passages_text: str, earlier: list[ChatMessage],
                   no_answer: str, others: list[Agent] = ()) -> PromptPlan:
    about = f" {agent.description.strip()}" if agent.description.strip() else ""
    system = Message("system", [
        Fixed("KB_ROLE", f'You are the knowledge-base assistant "{agent.name}".'),
        Value("sys.agent.description", about.strip()),
        Fixed("GROUNDING_RULES",
              "Answer the user's latest question using ONLY the numbered passages below. Do not use any other "
              "knowledge, do not guess, and cite nothing that is not in the passages. If the passages do not "
              f"contain the answer, reply with exactly {no_answer} and nothing else.\nAnswer briefly and "
              "directly, in the language of the question, as a customer-service reply. Do not mention the "
              "passages or their numbers; name a source only if the user asks where the information comes from."),
        # `autonomous`: the knowledge agent that answered last reads the next message and names its successor
        Maybe("sys.other_agents", [Fixed("PASS_ON_RULE", ""), Each("agent", "sys.other_agents",
                                                                  [Value("sys.agent_description", "", "[agent]")])],
              present=bool(others),
              parts=[Fixed("PASS_ON_RULE", f"If the message is not a question for you but a request for one of these "
                                           f"agents, call {PASS_TOOL} with its name instead of answering:"),
                     Each("agent", "sys.other_agents", [Value("sys.agent_description", "", "[agent]")],
                          [[_agent_line(a)] for a in others])]),
        Fixed("PASSAGES_HEADER", "\nPassages:"),
        Value("sys.retrieved_passages", passages_text, "[@T]",
              comment="the best chunks for the question, numbered, with their sources"),
    ])
    shape = [Message("user", [Value("env.user_message", "", "[m]")]),
             Message("assistant", [Value("resp.bot_message", "", "[m]")])]
    real = [Message(m.role, [Value("env.user_message" if m.role == "user" else "resp.bot_message",
                                   m.content or "", "[m]")]) for m in earlier]
    question_msg = Message("user", [Value("env.user_message", question, "[@T]")])
    return PromptPlan(f"Answer_{agent.name}", "[@T]",
                      [system, Turns("m", "sys.recent_messages", shape, real), question_msg],
                      comment=f"{agent.name}: a grounded answer from retrieved passages")


# The marker a knowledge answer replies with when the passages do not hold the answer.
NO_ANSWER = "NO_ANSWER"


def _compact(text: str) -> str:
    lines = (" ".join(line.split()) for line in text.split("\n"))
    return "\n".join(line for line in lines if line)


def render_passages(passages: list[Passage]) -> str:
    """Numbered passages with their source names, as the model sees them."""
    if not passages:
        return "(no passages)"
    blocks = []
    for number, passage in enumerate(passages, start=1):
        heading = f"[{number}] source: {passage.source}"
        if passage.title and passage.title != passage.source:
            heading += f" ({passage.title})"
        blocks.append(f"{heading}\n{_compact(passage.text)}")
    return "\n\n".join(blocks)


def build_answer_request(
    question: str,
    passages: list[Passage],
    history: list[ChatMessage],
    agent: KnowledgeAgent,
    history_limit: int = 6,
    others: list[Agent] = (),
) -> LLMRequest:
    """The `kb_answer` request: answer `question` only from `passages`, or reply exactly NO_ANSWER."""
    earlier = [
        ChatMessage(role=m.role, content=m.content)
        for m in history
        if m.role in ("user", "assistant") and m.content and m.content.strip()
    ]
    if earlier and earlier[-1].role == "user" and earlier[-1].content.strip() == question.strip():
        earlier.pop()  # the caller already put the question into the history
    earlier = earlier[-history_limit:] if history_limit > 0 else []
    plan = kb_answer_plan(agent, question, render_passages(passages), earlier, NO_ANSWER, others)
    tools = [ToolSchema(name=PASS_TOOL, description="Give the message to the agent it is for.",
                        parameters={"type": "object", "properties": {"agent": {
                            "type": "string", "enum": [a.name for a in others]}}, "required": ["agent"]})] if others else []
    return LLMRequest(purpose="kb_answer", messages=plan.render(), temperature=0.0, plan=plan.name,
                      structure=plan.structure(), tools=tools)


def is_no_answer(reply: str | None) -> bool:
    """True when a model reply is (or contains) the NO_ANSWER sentinel, or is empty."""
    if reply is None or not reply.strip():
        return True
    return re.search(r"\bNO[_ ]ANSWER\b", reply) is not None


def _request(purpose, plan: PromptPlan, **kw) -> LLMRequest:
    return LLMRequest(purpose=purpose, messages=plan.render(), plan=plan.name, structure=plan.structure(), **kw)



# ---- guardrail calls (ABL GUARDRAILS: llm_check and the reask action) -----------------------------------

GUARDRAIL_PURPOSE = "other"


def guardrail_judge_plan(agent: str, kind: str, question: str, content: str) -> PromptPlan:
    """An `llm_check` guardrail: the model answers the guardrail's yes/no question about a text."""
    system = Message("system", [
        Fixed("GUARDRAIL_JUDGE_ROLE", (
            "You are a content safety judge for a customer-service assistant. Read the text below (the "
            "user's input, the assistant's reply, a tool's input or output, or what a handoff passes on) "
            "and answer the question about it with one word, yes or no.")),
        Value("sys.guardrail.kind", f"The text is: {kind}.", "[@T]", comment="which point the guardrail guards"),
        Value("sys.guardrail.llm_check", f"Question: {question}", "[@T]",
              comment="the guardrail's llm_check question"),
    ])
    user = Message("user", [Value("sys.guardrail.content", content, "[@T]", comment="the text checked")])
    return PromptPlan(f"GuardrailJudge_{agent}", "[@T]", [system, user],
                      comment=f"{agent}: an llm_check guardrail asks the model a yes/no question (no tools)")


def guardrail_judge_request(agent: str, kind: str, question: str, content: str) -> LLMRequest:
    return _request(GUARDRAIL_PURPOSE, guardrail_judge_plan(agent, kind, question, content), max_tokens=5)


def guardrail_reask_plan(agent: str, feedback: str, user_message: str, draft: str) -> PromptPlan:
    """The `reask` action of an output guardrail: a model's reply written again once, with feedback."""
    system = Message("system", [
        Fixed("GUARDRAIL_REASK_ROLE",
              "Rewrite the assistant's reply to the customer so that it no longer has this problem:"),
        Value("sys.guardrail.feedback", feedback, "[@T]", comment="the guardrail's message, else its check"),
        Fixed("GUARDRAIL_REASK_RULES", "Keep what it says otherwise. Answer with the new reply only."),
    ])
    user = Message("user", [
        Fixed("CUSTOMER_LABEL", "Customer:"),
        Value("env.user_message", user_message, "[@T]"),
        Fixed("REPLY_LABEL", "Reply:"),
        Value("resp.bot_message", draft, "[@T]", comment="the reply the guardrail fired on"),
    ])
    return PromptPlan(f"GuardrailReask_{agent}", "[@T]", [system, user],
                      comment=f"{agent}: an output guardrail with action reask has a model's reply rewritten "
                              "(no tools)")


def guardrail_reask_request(agent: str, feedback: str, user_message: str, draft: str) -> LLMRequest:
    return _request(GUARDRAIL_PURPOSE, guardrail_reask_plan(agent, feedback, user_message, draft))


# ---- ABL 3.15: the supervisor's pre-classification call ------------------------------------------------

CLASSIFY_TOOL = "classify_intent"
CLASSIFY_MAX_TOKENS = 300  # abl-specification 3.15: "fast model, 300 tokens max, 10s timeout"
CLASSIFY_TIMEOUT = 10.0


def classify_plan(router: Agent, candidates: list[Agent], text: str) -> PromptPlan:
    """A supervisor's fast classifier: which one member the latest message is for, and how sure."""
    about = f"{router.name}" + (f" ({router.description.strip()})" if (router.description or "").strip() else "")
    system = Message("system", [
        Fixed("CLASSIFY_ROLE", "You classify the intent of a customer's message for"),
        Value("sys.router.description", about, comment="the supervisor's name and GOAL"),
        Fixed("AGENTS_HEADER", "Agents:"),
        Each("agent", "sys.candidate_agents", [Value("sys.agent_description", "", "[agent]")],
             [[_agent_line(a, router)] for a in candidates]),
        Fixed("CLASSIFY_INSTRUCTIONS", f"Call {CLASSIFY_TOOL} with the one agent the message is for (or "
                                       f"{NONE_CHOICE}) and your confidence from 0 to 1; give a low confidence "
                                       "when the message asks for several things."),
    ])
    user = Message("user", [Value("env.user_message", text, "[@T]")])
    return PromptPlan(f"Classify_{router.name}", "[@T]", [system, user],
                      comment=f"{router.name}: pre-classification (ABL 3.15), the message alone, at most "
                              f"{CLASSIFY_MAX_TOKENS} tokens (tool: {CLASSIFY_TOOL})")


def classify_request(router: Agent, candidates: list[Agent], text: str, model: str | None = None) -> LLMRequest:
    names = [a.name for a in candidates]
    tool = ToolSchema(name=CLASSIFY_TOOL, description="The intent of the user's latest message.",
                      parameters={"type": "object", "properties": {
                          "intent": {"type": "string", "enum": [*names, NONE_CHOICE]},
                          "confidence": {"type": "number"}}, "required": ["intent", "confidence"]})
    return _request("route", classify_plan(router, candidates, text), tools=[tool], tool_choice=CLASSIFY_TOOL,
                    max_tokens=CLASSIFY_MAX_TOKENS, model=model or None, timeout=CLASSIFY_TIMEOUT)


# ---- orchestration strategies (runtime/orchestration.py) ---------------------------------------------

GUARD_TOOL = "guardrail"  # {allowed, reply}: an input guardrail agent's verdict on the latest message
BLOCKED_CHOICE = "blocked"  # route: the message breaks the guardrail merged into the routing call
REPLY_FIELD = "reply"  # guardrail / route: what to tell the user when the message is blocked
JUDGE_TOOL = "judge"  # {satisfactory}: first-success asks whether a member's reply will do
SELECT_TOOL = "select"  # {agent}: best-of-n picks the best of the members' replies
PASS_TOOL = "pass_to"  # {agent}: an autonomous knowledge agent names the agent a message is for
ORCHESTRATION_PURPOSE = "route"
# a guardrail judges the latest message, with just enough before it to read a short answer
GUARD_WINDOW = 2


def _guard_rules(guards: list[Agent]) -> Each:
    return Each("guard", "sys.guardrail_agents", [Value("sys.guardrail.prompt", "", "[guard]")],
                [[Value("sys.guardrail.prompt", f"- {(g.instructions or g.description or g.name).strip()}",
                        "[guard]")] for g in guards])


def guard_plan(guard: Agent, history: list[HistoryItem]) -> PromptPlan:
    """An input guardrail agent reads the user's latest message before any member does."""
    system = Message("system", [
        Fixed("GUARD_ROLE", f'You are the input guardrail "{guard.name}" of a customer-service assistant. '
                            "Check the user's latest message against your rule before any agent sees it. Call "
                            f"{GUARD_TOOL} with allowed true when it may go on; with allowed false and a short, "
                            "polite reply for the user when it breaks the rule."),
        Fixed("GUARD_RULE_HEADER", "Rule:"),
        Value("sys.guardrail.prompt", (getattr(guard, "instructions", None) or guard.description or "").strip()),
    ])
    return PromptPlan(f"Guard_{guard.name}", "[@T]", [system, conversation_message(history, GUARD_WINDOW)],
                      comment=f"{guard.name}: an input guardrail checks the message (tool: {GUARD_TOOL})")


def guard_request(guard: Agent, history: list[HistoryItem]) -> LLMRequest:
    tool = ToolSchema(name=GUARD_TOOL, description="Whether the user's latest message may go on to the agents.",
                      parameters={"type": "object", "properties": {
                          "allowed": {"type": "boolean"}, REPLY_FIELD: {"type": "string"}}, "required": ["allowed"]})
    return _request(ORCHESTRATION_PURPOSE, guard_plan(guard, history), tools=[tool], tool_choice=GUARD_TOOL)


def merged_route_plan(router: Agent, candidates: list[Agent], guards: list[Agent], history: list[HistoryItem],
                      window: int) -> PromptPlan:
    """`merging`: the routing call with the router's guardrails folded into it (one call instead of two)."""
    plan = route_plan(router, candidates, history, window)
    system = plan.blocks[0]
    system.parts += [
        Fixed("MERGED_GUARD_HEADER", f'Before choosing, check the message against these rules; if it breaks one, '
                                     f'choose "{BLOCKED_CHOICE}" and give a short, polite {REPLY_FIELD} for the user:'),
        _guard_rules(guards),
    ]
    plan.name = f"RouteGuarded_{router.name}"
    plan.comment += f"; guardrails merged in: {', '.join(g.name for g in guards)}"
    return plan


def merged_route_request(router: Agent, candidates: list[Agent], guards: list[Agent], history: list[HistoryItem],
                         window: int) -> LLMRequest:
    names = [a.name for a in candidates]
    tool = ToolSchema(name=ROUTE_TOOL, description="Hand the user's latest message to an agent, or block it.",
                      parameters={"type": "object", "properties": {
                          "agent": {"type": "string", "enum": names + [NONE_CHOICE, BLOCKED_CHOICE]},
                          **_also(names), REPLY_FIELD: {"type": "string"}}, "required": ["agent"]})
    plan = merged_route_plan(router, candidates, guards, history, decision_window(window))
    return _request("route", plan, tools=[tool], tool_choice=ROUTE_TOOL)


def judge_plan(router: Agent, agent: str, reply: str, history: list[HistoryItem]) -> PromptPlan:
    """`first-success`: after a member drafted its reply, is it a satisfactory answer to the message?"""
    system = Message("system", [
        Fixed("JUDGE_ROLE", f'You review a draft reply of the agent "{agent}" of a customer-service assistant. '
                            f"Call {JUDGE_TOOL} with satisfactory true when it deals with the user's latest "
                            "message (answers it, or rightly asks what the task needs next), false when the message "
                            "is for another kind of agent or the draft does not help."),
    ])
    user = Message("user", [
        Fixed("DRAFT_HEADER", "Draft reply:"),
        Value("resp.draft_reply", reply, "[@T]", comment="what the member would say (and the tool it would call)"),
    ])
    plan = PromptPlan(f"Judge_{router.name}", "[@T]",
                      [system, conversation_message(history, GUARD_WINDOW), user],
                      comment=f"{router.name}: first-success judges a member's draft (tool: {JUDGE_TOOL})")
    return plan


def judge_request(router: Agent, agent: str, reply: str, history: list[HistoryItem]) -> LLMRequest:
    tool = ToolSchema(name=JUDGE_TOOL, description="Whether the draft reply will do.",
                      parameters={"type": "object", "properties": {"satisfactory": {"type": "boolean"}},
                                  "required": ["satisfactory"]})
    return _request(ORCHESTRATION_PURPOSE, judge_plan(router, agent, reply, history), tools=[tool],
                    tool_choice=JUDGE_TOOL)


def select_plan(router: Agent, drafts: list[tuple[str, str]], history: list[HistoryItem]) -> PromptPlan:
    """`best-of-n`: every member drafted a reply at the same time; the best one is chosen."""
    system = Message("system", [
        Fixed("SELECT_ROLE", "Agents of a customer-service assistant each drafted a reply to the user's latest "
                             f'message. Call {SELECT_TOOL} with the agent whose draft serves the user best, or '
                             f'"{NONE_CHOICE}" when none does.'),
    ])
    user = Message("user", [
        Fixed("DRAFTS_HEADER", "Drafts:"),
        Each("draft", "resp.draft_replies", [Value("resp.draft_reply", "", "[draft]")],
             [[Value("resp.draft_reply", f'- "{name}": {text}', "[draft]")] for name, text in drafts]),
    ])
    return PromptPlan(f"Select_{router.name}", "[@T]",
                      [system, conversation_message(history, GUARD_WINDOW), user],
                      comment=f"{router.name}: best-of-n selects among the members' drafts (tool: {SELECT_TOOL})")


def select_request(router: Agent, drafts: list[tuple[str, str]], history: list[HistoryItem]) -> LLMRequest:
    tool = ToolSchema(name=SELECT_TOOL, description="The agent whose draft is best.",
                      parameters={"type": "object", "properties": {"agent": {
                          "type": "string", "enum": [name for name, _ in drafts] + [NONE_CHOICE]}},
                          "required": ["agent"]})
    return _request(ORCHESTRATION_PURPOSE, select_plan(router, drafts, history), tools=[tool],
                    tool_choice=SELECT_TOOL)
