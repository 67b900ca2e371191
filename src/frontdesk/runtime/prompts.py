"""Assembly of every LLM request the runtime makes (routing, understanding, reasoning, fallback).

Keeping all prompt text here means one place decides what a model sees; the ACDL
descriptions of Frontdesk's own calls are generated from these same functions.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from frontdesk.ir.models import Agent, KnowledgeAgent, ReasoningAgent, ToolDef
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
    member = next((m for m in getattr(router, "members", []) if m.agent == agent.name), None)
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


def route_request(router: Agent, candidates: list[Agent], history: list[HistoryItem], window: int) -> LLMRequest:
    names = [a.name for a in candidates]
    tool = ToolSchema(
        name=ROUTE_TOOL,
        description="Hand the user's latest message to an agent.",
        parameters={
            "type": "object",
            "properties": {"agent": {"type": "string", "enum": names + [NONE_CHOICE]}},
            "required": ["agent"],
        },
    )
    plan = route_plan(router, candidates, history, decision_window(window))
    return _request("route", plan, tools=[tool], tool_choice=ROUTE_TOOL)


def understand_plan(agent: Agent, choices: list[tuple[str, list[str]]], switches: list[Agent],
                    extract: list[str], history: list[HistoryItem], window: int) -> PromptPlan:
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
) -> LLMRequest:
    """Decide, in one call, which `the user claims` case holds, whether the user switched
    topic, and the values of the arguments the flow is about to read."""
    props: dict[str, Any] = {}
    required = []
    if choices or switches:
        enum = [k for k, _ in choices] + [f"switch:{s.name}" for s in switches] + [NONE_CHOICE]
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
    plan = understand_plan(agent, choices, switches, extract, history, decision_window(window))
    return _request("understand", plan, tools=[tool], tool_choice=UNDERSTAND_TOOL)


def reasoning_plan(agent: ReasoningAgent, values: dict[str, Any], messages: list[ChatMessage]) -> PromptPlan:
    def arg_line(k, v):
        shown = json.dumps(v, default=str) if v is not None else "(unknown)"
        return Value("sys.arg_value", f"- {k}: {shown}", "[arg]")

    system = Message("system", [
        Value("sys.agent.prompt", agent.instructions.strip(), comment="the agent's prompt"),
        Maybe("sys.agent.args", [Fixed("ARGS_HEADER", "Arguments you keep track of (record a value as soon as "
                                                       f"you learn it by calling {SET_ARGS_TOOL}):"),
                                 Each("arg", "sys.agent.args", [Value("sys.arg_value", "", "[arg]")])],
              present=bool(values),
              parts=[Fixed("ARGS_HEADER", "Arguments you keep track of (record a value as soon as you learn it "
                                          f"by calling {SET_ARGS_TOOL}):"),
                     Each("arg", "sys.agent.args", [], [[arg_line(k, v)] for k, v in values.items()])]),
        Fixed("REASONING_RULES", f"Task complete: call {FINISH_TOOL}. The user wants something outside your task: "
                                 f"call {HAND_BACK_TOOL}. Otherwise reply to the user."),
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


def reasoning_tools(agent: ReasoningAgent, tools: dict[str, ToolDef], others: list[str] = ()) -> list[ToolSchema]:
    """The agent's tools and the built-in ones. `others` are the agents beside it under its router:
    `finish` and `hand_back` then name the one the user's message (or what is left of it) is for,
    so the router hands it on without a routing call of its own."""
    out = []
    seen: set[tuple[str, str]] = set()
    for name in agent.tools:
        tdef = tools.get(name)
        if tdef is not None:
            out.append(ToolSchema(name=name, description=tdef.description,
                                  parameters=_without_repeated_descriptions(tdef.json_schema(), seen)))
    for d in agent.delegates:
        out.append(ToolSchema(
            name=DELEGATE_PREFIX + d.agent,
            description=(d.purpose or f"Ask {d.agent} and get its answer.")
            + (f" Returns: {', '.join(f'{k} ({v})' for k, v in d.returns.items())}." if d.returns else ""),
            parameters={"type": "object", "properties": {name: {} for name in d.inputs}},
        ))
    for h in agent.handoffs:
        out.append(ToolSchema(
            name=TRANSFER_PREFIX + h.agent,
            description=(h.purpose or f"Hand the conversation to {h.agent}.")
            + (" You get it back when they are done." if h.resume else ""),
            parameters={"type": "object", "properties": {}},
        ))
    if agent.can_escalate:
        out.append(ToolSchema(name=ESCALATE_TOOL, description="Hand the conversation to a human colleague.",
                              parameters={"type": "object", "properties": {"reason": {"type": "string"}}}))
    if agent.args:
        out.append(ToolSchema(
            name=SET_ARGS_TOOL,
            description="Record argument values.",
            parameters={"type": "object", "properties": {a.name: {} for a in agent.args}},
        ))
    finish: dict[str, Any] = {"status": {"enum": ["success", "error"]}, "message": {"type": "string"}}
    if others:
        finish[NEXT_FIELD] = {"enum": [*others, NONE_CHOICE]}
        finish_about = (f"End your task. {NEXT_FIELD}: the agent for what the user's last message asks beyond it "
                        f"(\"{NONE_CHOICE}\" if nothing).")
    else:
        finish[REST_FIELD] = {"type": "string"}
        finish_about = f"End your task. {REST_FIELD}: what the user's last message asks beyond it (\"\" if nothing)."
    out.append(ToolSchema(name=FINISH_TOOL, description=finish_about,
                          parameters={"type": "object", "properties": finish}))
    out.append(ToolSchema(
        name=HAND_BACK_TOOL,
        description="The user wants something outside your task" + (
            f"; {TO_FIELD}: whose task it is (one of finish's {NEXT_FIELD} agents)." if others else "."),
        parameters={"type": "object", "properties": {TO_FIELD: {"type": "string"}} if others else {}},
    ))
    return out


def reasoning_request(agent: ReasoningAgent, values: dict[str, Any], messages: list[ChatMessage],
                      tools: dict[str, ToolDef], talk_only: bool = False, others: list[str] = ()) -> LLMRequest:
    """One step of an LLM agent; `talk_only` (no user message yet) offers it no tools at all."""
    offered = [] if talk_only else reasoning_tools(agent, tools, others)
    return _request("reason", reasoning_plan(agent, values, messages), tools=offered)


def kb_answer_plan(agent: Agent, question: str, passages_text: str, earlier: list[ChatMessage],
                   no_answer: str) -> PromptPlan:
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
    plan = kb_answer_plan(agent, question, render_passages(passages), earlier, NO_ANSWER)
    return LLMRequest(purpose="kb_answer", messages=plan.render(), temperature=0.0, plan=plan.name,
                      structure=plan.structure())


def is_no_answer(reply: str | None) -> bool:
    """True when a model reply is (or contains) the NO_ANSWER sentinel, or is empty."""
    if reply is None or not reply.strip():
        return True
    return re.search(r"\bNO[_ ]ANSWER\b", reply) is not None


def _request(purpose, plan: PromptPlan, **kw) -> LLMRequest:
    return LLMRequest(purpose=purpose, messages=plan.render(), plan=plan.name, structure=plan.structure(), **kw)

