"""Assembly of every LLM request the runtime makes (routing, understanding, reasoning, fallback).

Keeping all prompt text here means one place decides what a model sees; the ACDL
descriptions of Frontdesk's own calls are generated from these same functions.
"""

from __future__ import annotations

import json
from typing import Any

from frontdesk.ir.models import Agent, ReasoningAgent, ToolDef
from frontdesk.llm.base import ChatMessage, LLMRequest, ToolSchema
from frontdesk.runtime.state import HistoryItem

NONE_CHOICE = "none"
ROUTE_TOOL = "route"
UNDERSTAND_TOOL = "understand"
SET_ARGS_TOOL = "set_args"
FINISH_TOOL = "finish"
HAND_BACK_TOOL = "hand_back"


def history_messages(history: list[HistoryItem], window: int) -> list[ChatMessage]:
    out = []
    for item in history[-window:] if window else history:
        role = "user" if item.role == "user" else "assistant"
        out.append(ChatMessage(role=role, content=item.text))
    return out


def transcript(history: list[HistoryItem], window: int) -> str:
    lines = []
    for item in history[-window:] if window else history:
        who = "User" if item.role == "user" else f"Bot ({item.agent})" if item.agent else "Bot"
        lines.append(f"{who}: {item.text}")
    return "\n".join(lines) or "(no messages yet)"


def route_request(router: Agent, candidates: list[Agent], history: list[HistoryItem], window: int) -> LLMRequest:
    """Choose the member agent that should handle the user's latest message."""
    names = [a.name for a in candidates]
    listing = "\n".join(f"- {a.name}: {a.description or '(no description)'}" for a in candidates)
    system = (
        "You are the dispatcher of a customer-service assistant. Pick the one agent that should "
        "handle the user's latest message, judging by the agents' descriptions and the conversation.\n"
        f"Agents:\n{listing}\n"
        f"If no agent fits the message, choose \"{NONE_CHOICE}\". Answer by calling {ROUTE_TOOL}."
    )
    instructions = getattr(router, "instructions", None)
    if instructions:
        system += f"\nSelection policy:\n{instructions.strip()}"
    tool = ToolSchema(
        name=ROUTE_TOOL,
        description="Hand the user's latest message to an agent.",
        parameters={
            "type": "object",
            "properties": {"agent": {"type": "string", "enum": names + [NONE_CHOICE]}},
            "required": ["agent"],
        },
    )
    messages = [ChatMessage(role="system", content=system)]
    messages.append(ChatMessage(role="user", content=f"Conversation:\n{transcript(history, window)}"))
    return LLMRequest(purpose="route", messages=messages, tools=[tool], tool_choice=ROUTE_TOOL)


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
    lines = [
        f"You read the user's latest message for the \"{agent.name}\" step of a conversation"
        + (f" ({agent.description})." if agent.description else ".")
    ]
    props: dict[str, Any] = {}
    required = []
    if choices or switches:
        options = []
        for key, examples in choices:
            quoted = "; ".join(f'"{e}"' for e in examples)
            options.append(f"- {key}: the user says something like {quoted}")
        for sw in switches:
            options.append(f"- switch:{sw.name}: the user asks for something else: {sw.description}")
        options.append(f"- {NONE_CHOICE}: none of the above")
        lines.append("Which option matches the user's latest message?\n" + "\n".join(options))
        enum = [k for k, _ in choices] + [f"switch:{s.name}" for s in switches] + [NONE_CHOICE]
        props["choice"] = {"type": "string", "enum": enum}
        required.append("choice")
    if extract:
        lines.append(
            "Fill in the values the user gave for these arguments (leave out any the user did not give): "
            + ", ".join(extract)
        )
        props["args"] = {
            "type": "object",
            "properties": {name: {} for name in extract},
        }
    lines.append(f"Answer by calling {UNDERSTAND_TOOL}.")
    tool = ToolSchema(
        name=UNDERSTAND_TOOL,
        description="Report what the user's latest message means.",
        parameters={"type": "object", "properties": props, "required": required},
    )
    messages = [ChatMessage(role="system", content="\n".join(lines))]
    messages.append(ChatMessage(role="user", content=f"Conversation:\n{transcript(history, window)}"))
    return LLMRequest(purpose="understand", messages=messages, tools=[tool], tool_choice=UNDERSTAND_TOOL)


def reasoning_system_prompt(agent: ReasoningAgent, values: dict[str, Any]) -> str:
    arg_lines = "\n".join(f"- {k}: {json.dumps(v, default=str) if v is not None else '(unknown)'}"
                          for k, v in values.items())
    parts = [agent.instructions.strip()]
    if values:
        parts.append(
            "Arguments you keep track of (record a value as soon as you learn it by calling "
            f"{SET_ARGS_TOOL}):\n{arg_lines}"
        )
    parts.append(
        f"When your task is complete, call {FINISH_TOOL}. If the user asks for something outside "
        f"your task, call {HAND_BACK_TOOL} so another agent can help. Otherwise reply to the user."
    )
    return "\n\n".join(parts)


def reasoning_tools(agent: ReasoningAgent, tools: dict[str, ToolDef]) -> list[ToolSchema]:
    out = []
    for name in agent.tools:
        tdef = tools.get(name)
        if tdef is not None:
            out.append(ToolSchema(name=name, description=tdef.description, parameters=tdef.json_schema()))
    if agent.args:
        out.append(ToolSchema(
            name=SET_ARGS_TOOL,
            description="Record values of your arguments.",
            parameters={"type": "object", "properties": {a.name: {} for a in agent.args}},
        ))
    out.append(ToolSchema(
        name=FINISH_TOOL,
        description="End your task.",
        parameters={
            "type": "object",
            "properties": {
                "status": {"type": "string", "enum": ["success", "error"]},
                "message": {"type": "string"},
            },
        },
    ))
    out.append(ToolSchema(
        name=HAND_BACK_TOOL,
        description="Give the conversation back because the user wants something outside your task.",
        parameters={"type": "object", "properties": {"reason": {"type": "string"}}},
    ))
    return out


def reasoning_request(agent: ReasoningAgent, values: dict[str, Any], messages: list[ChatMessage],
                      tools: dict[str, ToolDef]) -> LLMRequest:
    system = ChatMessage(role="system", content=reasoning_system_prompt(agent, values))
    return LLMRequest(purpose="reason", messages=[system, *messages], tools=reasoning_tools(agent, tools))
