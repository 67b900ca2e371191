"""The reasoning executor: an LLM agent in a tool-calling loop that fills its arguments."""

from __future__ import annotations

import json
from typing import Any

from frontdesk.ir.models import ReasoningAgent
from frontdesk.llm.base import ChatMessage, LLMError, ToolCall
from frontdesk.runtime import prompts
from frontdesk.runtime.context import ChildResult, Outcome, TurnContext
from frontdesk.runtime.policies import (
    clear_topic_switch,
    new_frame,
    setup_frame,
    switch_candidates,
)
from frontdesk.runtime.state import Frame, ReasoningData

APOLOGY = "Sorry, something went wrong on my side. Let's try that again in a moment."
UNASKED_TOOL = "error: the user has not asked for anything yet; greet them and ask how you can help"
IDLE_FINISH = ("error: nothing of your task is done yet, so it cannot be finished; reply to the user, call one of "
               "your tools, or call hand_back if the message is not for you")
TRANSCRIPT_LIMIT = 60  # messages of its own transcript an LLM agent sees at most


def recent(messages: list[dict], limit: int) -> list[dict]:
    """The last `limit` messages, starting at a user message so no tool result loses its call."""
    if len(messages) <= limit:
        return messages
    tail = messages[-limit:]
    start = next((i for i, m in enumerate(tail) if m.get("role") == "user"), len(tail))
    return tail[start:] or messages[-1:]


class ReasoningExecutor:
    def run(self, frame: Frame, ctx: TurnContext) -> Outcome:
        agent: ReasoningAgent = ctx.program.agents[frame.agent]  # type: ignore[assignment]
        inp = ctx.input
        if frame.reask:  # resumed after another agent: its last words again
            frame.reask = False
            if frame.last_prompt:
                ctx.say(frame.agent, frame.last_prompt, frame)
        fresh = not frame.started
        if fresh:
            # A new agent sees the conversation so far, the turn's message included where it was said.
            frame.started = True
            window = ctx.program.settings.history_window
            frame.data.messages = [m.model_dump(exclude_none=True)
                                   for m in prompts.history_messages(ctx.state.history, window)]
            if agent.setup is not None:
                return Outcome.call(setup_frame(ctx, agent))
        new_message = False
        if inp.available_to(frame):
            if inp.is_open and frame.waiting:
                target = clear_topic_switch(ctx, frame, inp.text or "")
                if target is not None:
                    inp.take(frame, "answer")
                    inp.give_back(frame, f"the user turned to {target}")
                    frame.waiting = True
                    return Outcome.switch(target)
            text = inp.take(frame, "answer" if frame.waiting else "start")
            if not fresh:
                frame.data.messages.append({"role": "user", "content": text})
            new_message = True
        elif frame.waiting:
            return Outcome.wait()
        frame.waiting = False
        if fresh or new_message:  # the loop starts over (not when it goes on after a delegation)
            frame.data.iterations = 0
            frame.data.refused_finish = False
        return self._loop(agent, frame, ctx)

    def child_finished(self, frame: Frame, child: ChildResult, ctx: TurnContext) -> None:
        """An agent this one delegated to (or handed the conversation to, to come back) ended: its
        result answers the tool call the loop stopped at, and the loop goes on from there."""
        data: ReasoningData = frame.data  # type: ignore[assignment]
        if child.setup:
            return
        frame.waiting = False
        if data.awaiting is None:
            return
        result = {"status": child.status if child.kind == "done" else "not finished", "message": child.message}
        if child.value:
            result["values"] = child.value
        data.messages.append({"role": "tool", "tool_call_id": data.awaiting, "name": data.awaiting_tool,
                              "content": json.dumps(result, ensure_ascii=False, default=str)})
        data.awaiting = None

    def _loop(self, agent: ReasoningAgent, frame: Frame, ctx: TurnContext) -> Outcome:
        """Ask the model, run the tools it calls, until it speaks, finishes or hands the message back.
        The loop can stop at a delegation (another agent runs) and go on where it stopped."""
        data: ReasoningData = frame.data  # type: ignore[assignment]
        others = [a.name for a in switch_candidates(ctx, frame)]
        if data.pending or data.answer:
            outcome = self._completed(agent, frame, ctx, self._answer(agent, frame, ctx, others))
            if outcome is not None:
                return outcome
        while data.iterations < agent.max_iterations:
            data.iterations += 1
            messages = [ChatMessage.model_validate(m) for m in recent(data.messages, TRANSCRIPT_LIMIT)]
            # Before the user has said anything the agent may only talk: no tool runs unasked.
            unasked = not any(m.get("role") == "user" for m in data.messages)
            request = prompts.reasoning_request(agent, ctx.values(agent.name), messages, ctx.program.tools,
                                                talk_only=unasked, others=others)
            try:
                response = ctx.complete(request, agent.name)
            except LLMError as exc:
                ctx.log.emit("error", agent.name, where="reasoning", message=str(exc))
                ctx.say(agent.name, APOLOGY, frame)
                return Outcome.done("error", f"LLM call failed: {exc}")
            data.messages.append(ChatMessage(role="assistant", content=response.content,
                                             tool_calls=response.tool_calls).model_dump(exclude_none=True))
            if not response.tool_calls:
                ctx.say(agent.name, response.content or "", frame)
                frame.waiting = True
                return self._completed(agent, frame, ctx, Outcome.wait())
            data.pending = [c.model_dump() for c in response.tool_calls]
            data.answer = {"content": response.content or "", "unasked": unasked,
                           "idle": self._finishes_idle(response.tool_calls, frame) and not data.refused_finish,
                           "only_set_args": all(c.name == prompts.SET_ARGS_TOOL for c in response.tool_calls)}
            outcome = self._completed(agent, frame, ctx, self._answer(agent, frame, ctx, others))
            if outcome is not None:
                return outcome
        ctx.log.emit("error", agent.name, where="reasoning",
                     message=f"no answer after {agent.max_iterations} model calls")
        ctx.say(agent.name, APOLOGY, frame)
        return Outcome.done("error", "iteration limit reached")

    @staticmethod
    def _completed(agent: ReasoningAgent, frame: Frame, ctx: TurnContext, outcome: Outcome | None) -> Outcome | None:
        """The agent's declared completion (ABL COMPLETE): when one of its conditions holds after a
        step of the loop, it says its words and ends with its return values."""
        rules = agent.rules
        if rules is None or not rules.complete or (outcome is not None and outcome.kind not in ("wait",)):
            return outcome
        from frontdesk.expr import EvalError, is_true
        from frontdesk.ir.expr import ExprCondition

        for rule in rules.complete:
            if not isinstance(rule.when, ExprCondition):
                continue
            try:
                if not is_true(ctx.eval(rule.when.expr, agent.name, frame)):
                    continue
                value = {name: ctx.eval(expr, agent.name, frame) for name, expr in rule.returns.items()}
            except EvalError as exc:
                ctx.log.emit("error", agent.name, where="completion", message=str(exc))
                continue
            ctx.log.emit("step", agent.name, action="complete", condition=rule.when.source)
            text = rule.action.respond
            if text is None and rule.action.template and rule.action.template in rules.templates:
                named = rules.templates[rule.action.template]  # RESPOND: TEMPLATE(name), by channel
                text = named.channels.get(ctx.state.channel, named.default)
            if text is not None:
                ctx.say(agent.name, ctx.render(text, agent.name, frame), frame)
            frame.waiting = False
            return Outcome.done("success", "completed", value=value or None)
        return outcome

    def _answer(self, agent: ReasoningAgent, frame: Frame, ctx: TurnContext, others: list[str]) -> Outcome | None:
        """Run the tool calls of the model's answer (or those left when a delegation paused it), then
        act on it. None: ask the model again."""
        data: ReasoningData = frame.data  # type: ignore[assignment]
        answer = data.answer
        unasked = bool(answer.get("unasked"))
        while data.pending:
            call = ToolCall.model_validate(data.pending.pop(0))
            if answer.get("idle") and call.name == prompts.FINISH_TOOL:
                # The task cannot be complete before the agent has done or said anything: a
                # small model's reflex, or a misread message. The model is told so, once.
                data.refused_finish = True
                ctx.log.emit("step", agent.name, action="finish refused: nothing of the task is done yet")
                data.messages.append({"role": "tool", "tool_call_id": call.id, "name": call.name,
                                      "content": IDLE_FINISH})
                continue
            if not unasked:
                started = self._agent_call(call, agent, frame, ctx)
                if started is not None:
                    return started
            content = UNASKED_TOOL if unasked else self._tool(call, agent, frame, ctx)
            if call.name in (prompts.FINISH_TOOL, prompts.HAND_BACK_TOOL):
                answer[call.name] = call.arguments
            data.messages.append({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": content})
        data.answer = {}
        if answer.get("content"):
            ctx.say(agent.name, answer["content"], frame)
        if unasked:
            if not answer.get("content"):
                return None  # the tools were refused: ask the model again, now for words
            frame.waiting = True
            return Outcome.wait()
        hand_back = answer.get(prompts.HAND_BACK_TOOL)
        finish = answer.get(prompts.FINISH_TOOL)
        if hand_back is not None:
            ctx.input.give_back(frame, "the agent handed the message back")
            self._hand_on(hand_back.get(prompts.TO_FIELD), others, agent, ctx)
            return Outcome.hand_back(str(hand_back.get("reason", "")))
        if finish is not None:
            status = "error" if str(finish.get("status", "success")) == "error" else "success"
            if status == "success" and self._more_asked(finish, others):
                # The message that completed the task may ask for more (the model said so, or did not
                # say): the router gets to see it.
                ctx.input.give_back(frame, "the agent finished its task", used=True)
                self._hand_on(finish.get(prompts.NEXT_FIELD), others, agent, ctx)
            return Outcome.done(status, str(finish.get("message", "")), value=ctx.values(agent.name))
        if answer.get("content") and answer.get("only_set_args"):
            # The model noted what it learnt and spoke to the user: its turn is over.
            frame.waiting = True
            return Outcome.wait()
        return None

    def _agent_call(self, call: ToolCall, agent: ReasoningAgent, frame: Frame, ctx: TurnContext) -> Outcome | None:
        """A call that starts another agent: a delegation (its result comes back as the tool's answer),
        a handoff, or an escalation to a person. None for any other tool."""
        data: ReasoningData = frame.data  # type: ignore[assignment]
        name = call.name
        if name == prompts.ESCALATE_TOOL and agent.can_escalate:
            reason = str(call.arguments.get("reason", ""))
            data.messages.append({"role": "tool", "tool_call_id": call.id, "name": name,
                                  "content": "a human colleague takes over"})
            data.pending, data.answer = [], {}
            frame.waiting = True
            return Outcome.escalate(reason)
        if name.startswith(prompts.DELEGATE_PREFIX):
            delegation = next((d for d in agent.delegates if d.agent == name[len(prompts.DELEGATE_PREFIX):]), None)
            if delegation is None or delegation.agent not in ctx.program.agents:
                return None
            for arg, value in call.arguments.items():
                if arg in delegation.inputs:
                    ctx.write(delegation.agent, arg, value, agent.name, why=f"input of {agent.name}'s delegation")
            data.awaiting, data.awaiting_tool = call.id, name
            ctx.log.emit("step", agent.name, action="delegate", agent=delegation.agent)
            return Outcome.call(new_frame(ctx, delegation.agent))
        if name.startswith(prompts.TRANSFER_PREFIX):
            handoff = next((h for h in agent.handoffs if h.agent == name[len(prompts.TRANSFER_PREFIX):]), None)
            if handoff is None or handoff.agent not in ctx.program.agents:
                return None
            values = ctx.values(agent.name)
            for arg in handoff.passes:
                if values.get(arg) is not None:
                    ctx.write(handoff.agent, arg, values[arg], agent.name, why=f"passed by {agent.name}'s handoff")
            ctx.log.emit("step", agent.name, action="handoff", agent=handoff.agent, resume=handoff.resume)
            if handoff.resume:
                data.awaiting, data.awaiting_tool = call.id, name
            else:
                data.messages.append({"role": "tool", "tool_call_id": call.id, "name": name,
                                      "content": f"{handoff.agent} takes over"})
                data.pending, data.answer = [], {}
            child = new_frame(ctx, handoff.agent)
            if ctx.input.taken_by(frame):
                ctx.input.offer(child, agent.name)
            return Outcome.transfer(child, resume=handoff.resume)
        return None

    @staticmethod
    def _finishes_idle(calls: list[ToolCall], frame: Frame) -> bool:
        """A successful `finish` as the agent's first act: no other tool call in the answer, and the
        agent has neither spoken nor called a tool since it started."""
        finish = next((c for c in calls if c.name == prompts.FINISH_TOOL), None)
        if finish is None or str(finish.arguments.get("status", "success")) == "error":
            return False
        if any(c.name != prompts.FINISH_TOOL for c in calls) or frame.said_since_start:
            return False
        # the transcript it started with holds only the conversation's words: a tool message is its own
        return not any(m.get("role") == "tool" for m in frame.data.messages)

    @staticmethod
    def _more_asked(finish: dict[str, Any], others: list[str]) -> bool:
        """Whether the message that finished the task asks for more: `next` names an agent (or
        `rest` has words); when the model said neither, the router is asked to be safe."""
        named = finish.get(prompts.NEXT_FIELD)
        if others and named is not None:
            return str(named) != prompts.NONE_CHOICE
        rest = finish.get(prompts.REST_FIELD)
        return rest is None or bool(str(rest).strip())

    @staticmethod
    def _hand_on(named: Any, others: list[str], agent: ReasoningAgent, ctx: TurnContext) -> None:
        """The model named the agent beside it that the message is for: the router hands it there
        without a routing call of its own (an unknown name is ignored and the router decides)."""
        if isinstance(named, str) and named in others and named not in ctx.input.passed:
            ctx.input.also = named
            ctx.log.emit("step", agent.name, action="the message is for another agent", agent=named)

    def _tool(self, call: ToolCall, agent: ReasoningAgent, frame: Frame, ctx: TurnContext) -> str:
        if call.name == prompts.SET_ARGS_TOOL:
            known = set(agent.arg_names())
            updated = []
            for name, value in call.arguments.items():
                if name in known:
                    ctx.write(agent.name, name, value, agent.name, why="set by the model")
                    updated.append(name)
            ignored = [n for n in call.arguments if n not in known]
            return "recorded " + (", ".join(updated) or "nothing") + (
                f"; unknown arguments ignored: {', '.join(ignored)}" if ignored else "")
        if call.name in (prompts.FINISH_TOOL, prompts.HAND_BACK_TOOL):
            return "ok"
        if call.name not in agent.tools or call.name not in ctx.program.tools:
            ctx.log.emit("error", agent.name, where="reasoning",
                         message=f"the model called {call.name}, which {agent.name} does not use")
            return f"error: there is no tool named {call.name}; available: {', '.join(agent.tools) or 'none'}"
        args = dict(call.arguments)
        values = ctx.values(agent.name)
        blank = []
        for param in ctx.program.tools[call.name].params:
            # Arguments the agent already knows fill parameters the model left out or left blank.
            if _blank(args.get(param.name)) and not _blank(values.get(param.name)):
                args[param.name] = values[param.name]
            elif param.required and _blank(args.get(param.name)):
                blank.append(param.name)
        if blank:
            # A tool never runs on values nobody gave (a model filling in "" for a payee name).
            ctx.log.emit("error", agent.name, where="reasoning", tool=call.name,
                         message=f"the model called {call.name} without {', '.join(blank)}; not run")
            return (f"error: {call.name} was not run: {', '.join(blank)} has no value; ask the user for it "
                    "before calling it")
        result = ctx.call_tool(call.name, args, agent.name, frame)
        return result.for_model(args)


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip()) or value in ([], {})
