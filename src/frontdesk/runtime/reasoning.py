"""The reasoning executor: an LLM agent in a tool-calling loop that fills its arguments."""

from __future__ import annotations

import json
import re
from typing import Any

from frontdesk.expr import EvalError, evaluate, is_true
from frontdesk.ir.expr import ExprCondition, Ref, memory_ref
from frontdesk.ir.models import ReasoningAgent
from frontdesk.llm.base import ChatMessage, LLMError, LLMResponse, ToolCall
from frontdesk.runtime import extract, fanout, prompts, rules as rules_runtime
from frontdesk.runtime.context import ENDS_ON_QUESTION, ChildResult, Outcome, TurnContext
from frontdesk.runtime.events import register_event_type
from frontdesk.runtime.grounding import keep_grounded, reading_param, user_evidence
from frontdesk.runtime.handoff import receiver_context, return_to_parent_tools
from frontdesk.runtime.policies import (
    DEFAULT_FALLBACK,
    clear_topic_switch,
    new_frame,
    policy_message,
    setup_frame,
    switch_candidates,
)
from frontdesk.runtime.rules import action_text, added_tools, after_error, message
from frontdesk.runtime.state import Frame, ReasoningData
from frontdesk.runtime.tools.confirmation import waiting as confirmation_waiting
from frontdesk.runtime.tools.effects import changes_something

register_event_type("max_iterations_exceeded", "a reasoning agent's loop hit its iteration limit; a fallback "
                    "reply was said", ("limit",))
register_event_type("context_compacted", "older messages of an agent's transcript were summarised so the "
                    "request fits the model's context", ("before_tokens", "after_tokens", "messages", "by"))
register_event_type("reasoning_offline", "with no model that can reason, a reasoning agent asked, read or ran "
                    "what it could by itself, then completed (a COMPLETE condition held, or it declares none) or "
                    "said it cannot finish", ("action",))

APOLOGY = "Sorry, something went wrong on my side. Let's try that again in a moment."
ITERATION_FALLBACK = ("Sorry, I could not work that out just now. Could you tell me again, in other words, what "
                      "you need?")
NO_MODEL_REPLY = "I can't help with that here: no language model is configured for me."
NO_MODEL = "no language model is configured for me"  # why an agent with no model cannot go on
SMALL_MODEL = "the model I run with ({name}) is too small to work this out"  # ... with one that cannot reason
CANNOT_FINISH = "I can't finish this here: {why}."
UNMET_COMPLETE = ("error: your task is not done yet: none of its completion conditions holds ({conditions}). "
                  "Keep working toward your goal with your tools or reply to the user")
MAY_HAND_BACK = ", or call hand_back if the message is not for you"  # unless it acted on it (message_taken)
DEFAULT_CONTEXT_TOKENS = 32000  # the token budget of one reasoning request, unless EXECUTION / config say
NO_SUCH_TOOL = "error: there is no tool named"  # what a call of a tool the agent does not have gets back
MISSED_FINISH = "not done: a call of this answer named no tool, so what it was to do is not done; do it, then finish"
UNASKED_TOOL = "error: the user has not asked for anything yet; greet them and ask how you can help"
IDLE_FINISH = ("error: nothing of your task is done yet, so it cannot be finished; reply to the user, call one of "
               "your tools, or call hand_back if the message is not for you")
# How set_args answers the model (the parts after the first are joined with "; "): what it recorded, and what
# it did not; `settled` leaves a plain record out of later turns' transcripts
RECORDED = "recorded "
NOT_RECORDED = "not recorded"
IGNORED = "unknown arguments ignored"
TRANSCRIPT_LIMIT = 60  # messages of its own transcript an LLM agent sees at most


def recent(messages: list[dict], limit: int) -> list[dict]:
    """The last `limit` messages, starting at a user message so no tool result loses its call."""
    if len(messages) <= limit:
        return messages
    tail = messages[-limit:]
    start = next((i for i, m in enumerate(tail) if m.get("role") == "user"), len(tail))
    return tail[start:] or messages[-1:]


def settled(messages: list[dict]) -> list[dict]:
    """The transcript without what the system lines say already: before the latest user message, a
    `set_args` call that recorded its values with nothing refused or ignored, and its result, are left
    out (the values are listed under the agent's arguments; issue 29: about 30 tokens a turn on the
    intent-shift benchmark). The current turn's calls stay, so the model sees what it just did."""
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    if last_user <= 0:
        return messages
    dropped: set[str] = set()
    results = {m.get("tool_call_id"): str(m.get("content") or "") for m in messages[:last_user]
               if m.get("role") == "tool"}
    for m in messages[:last_user]:
        for call in m.get("tool_calls") or []:
            name = call.get("name")
            answer = results.get(call.get("id"))
            if name == prompts.SET_ARGS_TOOL and answer is not None and answer.startswith(RECORDED) \
                    and not any(p.startswith((NOT_RECORDED, IGNORED)) for p in answer.split("; ")[1:]):
                dropped.add(call.get("id"))
    if not dropped:
        return messages
    out = []
    for i, m in enumerate(messages):
        if i < last_user and m.get("role") == "tool" and m.get("tool_call_id") in dropped:
            continue
        if i < last_user and m.get("tool_calls"):
            calls = [c for c in m["tool_calls"] if c.get("id") not in dropped]
            if not calls and not m.get("content"):
                continue
            if len(calls) != len(m["tool_calls"]):
                m = {**m, "tool_calls": calls}
        out.append(m)
    return out


class ReasoningExecutor:
    def run(self, frame: Frame, ctx: TurnContext) -> Outcome:
        agent: ReasoningAgent = ctx.program.agents[frame.agent]  # type: ignore[assignment]
        inp = ctx.input
        if frame.reask:  # resumed after another agent: the question it had asked, again
            frame.reask = False
            if frame.last_prompt and ENDS_ON_QUESTION.search(frame.last_prompt):
                # (an answer it gave is not said twice: of a message of several lines, a list then
                # "Would you like ...?", only the question is)
                lines = [line for line in frame.last_prompt.splitlines() if line.strip()]
                ctx.say(frame.agent, lines[-1] if lines else frame.last_prompt, frame)
        fresh = not frame.started
        if fresh:
            # A new agent sees the conversation's recent messages, the turn's message included where it was
            # said: as many as a decision call sees (issue 29: the older ones were resent with every step)
            frame.started = True
            window = prompts.decision_window(ctx.program.settings.history_window)
            if not frame.data.messages:  # a supervisor's CONTEXT.history may have given it its start
                frame.data.messages = [m.model_dump(exclude_none=True)
                                       for m in prompts.history_messages(ctx.state.history, window)]
            if agent.setup is not None:
                return Outcome.call(setup_frame(ctx, agent))
        if frame.waiting and frame.data.pending and confirmation_waiting(ctx, frame, this_turn=False):
            # A tool call waits for the user's approval: the loop goes on at it, and the call reads
            # this message as the answer (tools/confirmation.py); a message that is no answer follows.
            frame.waiting = False
            frame.data.iterations = 0
            frame.data.answer["confirming"] = True
            return self._loop(agent, frame, ctx)
        new_message = False
        if inp.available_to(frame):
            if inp.is_open and frame.waiting and self._drops_offline(agent, frame, ctx):
                # offline, "Never mind that. Where is your shop?" ends the agent's task here (as a model
                # that reasons hands the message back), rather than leaving it to come back unasked
                from frontdesk.runtime.policies import DROPS_TASK

                text = inp.text or ""
                rest = text[DROPS_TASK.match(text).end():]
                inp.take(frame, "answer")
                # "No thanks, that's all." is all for this agent; "Never mind. Where is your shop?" is not
                inp.give_back(frame, "the user dropped the agent's task",
                              used="?" not in rest and len(re.findall(r"[^\W\d_]+", rest)) <= 3)
                ctx.log.emit("reasoning_offline", agent.name, action="dropped", reason="the user dropped the task")
                frame.waiting = False
                return Outcome.done("success", "the user dropped the task", value=ctx.values(agent.name))
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
        elif ctx.said and not any(item.role == "user" for item in ctx.state.history):
            # The session's opening: its steps have greeted and nobody has said anything to answer
            # yet, so the agent waits for the first message instead of asking its model.
            frame.waiting = True
            return Outcome.wait()
        frame.waiting = False
        if fresh or new_message:  # the loop starts over (not when it goes on after a delegation)
            frame.data.iterations = 0
            frame.data.refused_finish = False
        return self._loop(agent, frame, ctx)

    @staticmethod
    def _drops_offline(agent: ReasoningAgent, frame: Frame, ctx: TurnContext) -> bool:
        """Whether, with no model that reasons, the message opens by dropping the task of the agent, which a
        router started (not a flow that waits for its result) and which has spoken since."""
        from frontdesk.runtime.policies import DROPS_TASK

        if model_reasons(ctx) or not DROPS_TASK.match(ctx.input.text or "") or not frame.said_since_start:
            return False
        below = ctx.router_below(frame)
        return below is not None and len(below[1]) == 1

    def child_finished(self, frame: Frame, child: ChildResult, ctx: TurnContext) -> None:
        """An agent this one delegated to (or handed the conversation to, to come back) ended: its
        result answers the tool call the loop stopped at, and the loop goes on from there."""
        data: ReasoningData = frame.data  # type: ignore[assignment]
        if child.setup:
            return
        frame.waiting = False
        if data.awaiting is None:
            return
        result = fanout.delegation_result(ctx, frame.agent, child)
        fanout.keep_returns(ctx, frame.agent, child)
        if data.awaiting_tool == prompts.FAN_OUT_TOOL and data.fan_out:
            # a task of a fan_out run one after another on the stack (a session stored by an earlier
            # version): its result waits for the others; the call answers with them all
            data.fan_out.setdefault("results", []).append({"agent": child.agent, **result})
            data.awaiting = None
            return
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
        about = agent_context(ctx, agent, frame)
        if not model_reasons(ctx) and not data.pending and (about is not None or agent.tools):
            # No model, or one too small to reason (the local SmolLM2): an ABL agent asks for its
            # fields, reads them by pattern, runs its read-only tools, and completes only when its
            # COMPLETE conditions allow it (else it says it cannot finish here), offline.
            return self._completed(agent, frame, ctx, self._offline(agent, frame, ctx, about))
        limit = iteration_limit(ctx, agent)
        while data.iterations < limit:
            data.iterations += 1
            about = agent_context(ctx, agent, frame)  # what it knows changes as its tools run
            # Before the user has said anything the agent may only talk: no tool runs unasked.
            unasked = not any(m.get("role") == "user" for m in data.messages)
            request = self._request(agent, frame, ctx, about, others, unasked)
            response = self._ask(agent, ctx, request)
            if isinstance(response, LLMError):
                return self._model_failed(agent, frame, ctx, response)
            if not response.tool_calls and not (response.content or "").strip():
                return self._no_reply(agent, frame, ctx)
            data.messages.append(ChatMessage(role="assistant", content=response.content,
                                             tool_calls=response.tool_calls).model_dump(exclude_none=True))
            if not response.tool_calls:
                ctx.say(agent.name, response.content or "", frame)
                frame.waiting = True
                return self._completed(agent, frame, ctx, Outcome.wait())
            calls = [canonical_call(c, agent) for c in response.tool_calls]
            data.pending = [c.model_dump() for c in calls]
            data.answer = {"content": response.content or "", "unasked": unasked,
                           "idle": self._finishes_idle(calls, frame) and not data.refused_finish,
                           "only_set_args": all(c.name == prompts.SET_ARGS_TOOL for c in calls)}
            outcome = self._completed(agent, frame, ctx, self._answer(agent, frame, ctx, others))
            if outcome is not None:
                return outcome
        return self._too_many(agent, frame, ctx, limit, about)

    @staticmethod
    def _ask(agent: ReasoningAgent, ctx: TurnContext, request) -> LLMResponse | LLMError:
        """One model call of the loop, made again as often as the agent's ON_ERROR handler for model
        errors says (RETRY); the last failure when every try failed (each is an `error` event)."""
        handler = model_error_handler(ctx, agent)
        action = handler.action if handler is not None else None
        retries = 0 if action is None else action.max_retries if action.max_retries is not None else int(action.retry)
        failure = LLMError("no call was made")
        for attempt in range(retries + 1):
            if attempt:
                ctx.log.emit("step", agent.name, action="retry after a model error", attempt=attempt,
                             handler=handler.on if handler is not None else None)
            try:
                return ctx.complete(request, agent.name)
            except LLMError as exc:
                ctx.log.emit("error", agent.name, where="reasoning", message=str(exc))
                failure = exc
        return failure

    def _model_failed(self, agent: ReasoningAgent, frame: Frame, ctx: TurnContext, exc: LLMError) -> Outcome:
        """The model call failed (an HTTP error, a timeout, an answer that is no answer, tool arguments that
        are not JSON). The agent's ON_ERROR handler for `llm_error` (else `unknown_error`, `default`) says
        its words and does what follows; else its fallback policy decides (an agent takes the message
        over, a text is said); else it apologises. Then it waits: the user's next message runs the loop
        again (the apology promises a retry), so a flaky model never ends the conversation. In a fan_out
        task, which never waits, it ends with an error for the calling model."""
        if ctx.task:
            ctx.say(agent.name, APOLOGY, frame)
            return Outcome.done("error", f"LLM call failed: {exc}")
        handler = model_error_handler(ctx, agent)
        if handler is None:
            return self._fall_back(agent, frame, ctx, "the model call failed",
                                   named_message(ctx, agent, "llm_error") or policy_text(agent) or APOLOGY)
        action = handler.action
        ctx.log.emit("step", agent.name, action="error handled", handler=handler.on, error="model call failed")
        words = action_text(ctx, agent.name, action)
        if not words and not action.escalate:
            words = named_message(ctx, agent, "llm_error") or APOLOGY
        if words:
            ctx.say(agent.name, words, frame)
        if action.escalate:
            ctx.state.status = "escalated"
            ctx.log.emit("session_escalated", agent.name, reason=action.escalate_reason or "the model kept failing")
        after_error(ctx, agent.name, handler, "llm")  # LOG, SET, ASK_USER, THEN DELEGATE / HANDOFF / GOTO
        frame.waiting = True
        return Outcome.wait()

    def _no_reply(self, agent: ReasoningAgent, frame: Frame, ctx: TurnContext) -> Outcome:
        """The model answered with no words and no tool call: rather than a turn with no message, the
        agent's fallback (ABL MESSAGES `fallback`, or its fallback policy) and it waits for the user."""
        ctx.log.emit("error", agent.name, where="reasoning", message="the model's reply was empty")
        if ctx.task:
            return Outcome.done("error", "the model's reply was empty")
        return self._fall_back(agent, frame, ctx, "the model's reply was empty",
                               named_message(ctx, agent, "fallback") or policy_text(agent) or DEFAULT_FALLBACK)

    @staticmethod
    def _fall_back(agent: ReasoningAgent, frame: Frame, ctx: TurnContext, reason: str, words: str) -> Outcome:
        """The agent cannot answer this time: a fallback policy naming an agent hands the conversation (and
        the message) to it; else the agent says `words`, keeps them in its transcript, and waits for the
        user's next message."""
        data: ReasoningData = frame.data  # type: ignore[assignment]
        data.pending, data.answer = [], {}
        policy = agent.fallback
        ctx.log.emit("fallback", agent.name, reason=reason, policy=policy.shown() if policy else None)
        if policy is not None and policy.kind == "agent" and policy.value in ctx.program.agents \
                and policy.value != agent.name:
            target = new_frame(ctx, policy.value)
            if ctx.input.taken_by(frame):
                ctx.input.offer(target, f"fallback policy of {agent.name}")
            return Outcome.transfer(target, message=f"{reason}; its fallback policy hands over to {policy.value}")
        ctx.say(agent.name, words, frame)
        data.messages.append({"role": "assistant", "content": words})
        frame.waiting = True
        return Outcome.wait()

    def _offline(self, agent: ReasoningAgent, frame: Frame, ctx: TurnContext, about) -> Outcome:
        """An ABL reasoning agent with no model that can reason does what it can by itself: it reads the
        user's message for its fields by pattern (the whole message for the text field it asked for),
        asks for the first field still needed with its GATHER prompt, then runs the read-only tools its
        own INSTRUCTIONS name whose inputs are known. Gathering serves the goal (ABL 3.6, 3.12): it
        completes with success when one of its COMPLETE conditions holds, or when it declares none;
        when it declares some and none holds, it cannot finish here and says so (_cannot_finish).
        With nothing of that to do (an ADL llm agent, `about` None, or an ABL one with no field and no
        tool its instructions name), the tool the message clearly asks for is chosen by the embedding
        model and run with the arguments the message gives, or one it lacks is asked for
        (runtime/offline_tools.py); with none clear, it says what it cannot do here."""
        from frontdesk.runtime import offline_tools

        if about is None:  # an ADL llm agent: no fields, no COMPLETE conditions, only its tools
            from frontdesk.runtime import offline_form

            outcome = None
            if offline_form.applies(ctx, agent):  # a task that changes something: its prompt as a form
                text = (ctx.input.text or "") if ctx.input.taken_by(frame) else ""
                outcome = offline_form.form_turn(ctx, agent, frame, text)
            if outcome is None:
                outcome = offline_tools.offline_tool_turn(ctx, agent, frame, why=offline_reason(ctx))
            if outcome is not None:
                return outcome
            frame.waiting = True
            if not ctx.input.taken_by(frame):
                return Outcome.wait()
            ctx.log.emit("reasoning_offline", agent.name, action="cannot answer")
            ctx.say(agent.name, no_model_reply(ctx), frame)
            return Outcome.wait()
        fields = gather_fields(ctx.program, agent)
        asked = frame.locals.get("_offline_asked")
        if ctx.input.taken_by(frame) and ctx.input.text and fields:
            text = ctx.input.text
            missing = missing_fields(ctx, agent, fields)
            found = extract.extract_values(
                text, {f.name: f.type for f in missing}, now=ctx.eval_env.clock(),
                options={f.name: list(f.options) for f in missing if f.options},
                patterns={f.name: v.rule for f in missing for v in f.validations if v.kind == "pattern"})
            target = fields.get(asked) if asked else None
            if target is not None and target.name not in found and target.type == "string" and \
                    not any(v.kind == "pattern" for v in target.validations) and not extract.no_answer(text):
                found[target.name] = text.strip()  # the answer to the question asked, in the user's words
            held = ctx.values(agent.name)
            for f in fields.values():  # "...and took the TV and a laptop": what was damaged or taken, in their words
                if f.name not in found and held.get(f.name) is None and f.type == "string" and not f.options \
                        and not f.validations \
                        and extract.AFFECTED_FIELD.search(f.name) and not extract.no_answer(text):
                    affected = extract.things_affected(text)
                    if affected is not None:
                        found[f.name] = affected
            if found:
                record_fields(ctx, agent, found, fields, by="pattern")
        missing = missing_fields(ctx, agent, fields)
        if missing:
            f = missing[0]
            frame.locals["_offline_asked"] = f.name
            ctx.log.emit("reasoning_offline", agent.name, action="ask", field=f.name)
            ctx.say(agent.name, f.prompt or f"What is the {f.name.replace('_', ' ')}?", frame)
            frame.waiting = True
            return Outcome.wait()
        own = about.instructions.split("This step (", 1)[-1]
        ran = frame.locals.setdefault("_offline_ran", [])
        for name in agent.tools:
            tdef = ctx.program.tools.get(name)
            if tdef is None or name in ran or name in about.hidden_tools or name not in own:
                continue
            if tdef.confirmation is not None and tdef.confirmation.side_effects:
                continue  # nothing that changes the world runs without someone deciding it
            args = {}
            for param in tdef.params:
                value = ctx.values(agent.name).get(param.name)
                if value is None:
                    value = ctx.read(_field_ref(param.name), agent.name)
                if value is not None:
                    args[param.name] = value
            if any(p.required and p.name not in args for p in tdef.params):
                continue
            ran.append(name)
            ctx.log.emit("reasoning_offline", agent.name, action="tool", tool=name)
            ctx.call_tool(name, args, agent.name, frame)
        if not fields and not ran:
            # nothing it can do by itself (no field to ask for, no tool its instructions name): it says
            # so, and stays for the user rather than ending the conversation
            frame.waiting = True
            if not ctx.input.taken_by(frame):
                return Outcome.wait()  # nobody has asked anything yet
            outcome = offline_tools.offline_tool_turn(ctx, agent, frame, hidden=about.hidden_tools,
                                                      why=offline_reason(ctx),
                                                      no_tool=named_message(ctx, agent, "no_model"))
            if outcome is not None:
                return outcome
            ctx.log.emit("reasoning_offline", agent.name, action="cannot answer")
            ctx.say(agent.name, named_message(ctx, agent, "no_model") or no_model_reply(ctx), frame)
            frame.waiting = True
            return Outcome.wait()
        if completion_conditions(agent) and not complete_holds(agent, frame, ctx):
            return self._cannot_finish(agent, frame, ctx)
        ctx.log.emit("reasoning_offline", agent.name, action="complete")
        outcome = self._completed(agent, frame, ctx, Outcome.wait())
        if outcome is not None and outcome.kind == "done":
            return outcome
        frame.waiting = False
        return Outcome.done("success", "completed without a model", value=ctx.values(agent.name))

    @staticmethod
    def _cannot_finish(agent: ReasoningAgent, frame: Frame, ctx: TurnContext) -> Outcome:
        """Offline, the agent has gathered what it asks for and run what it safely could, and none of its
        COMPLETE conditions holds: what is left (a tool that changes something, a judgement) needs a
        model that can reason. It never reports success: it says plainly that it cannot finish here (its
        MESSAGES `no_model`, else which model is missing), then hands the conversation to a person when
        it declares ESCALATE, else ends with an error (a supervisor takes the conversation back)."""
        why = offline_reason(ctx)
        ctx.log.emit("reasoning_offline", agent.name, action="cannot finish", conditions=completion_conditions(agent))
        ctx.say(agent.name, named_message(ctx, agent, "no_model") or CANNOT_FINISH.format(why=why), frame)
        data: ReasoningData = frame.data  # type: ignore[assignment]
        data.pending, data.answer = [], {}
        if agent.can_escalate:
            frame.waiting = True
            return Outcome.escalate(f"{agent.name} cannot finish its task here: {why}")
        frame.waiting = False
        return Outcome.done("error", f"cannot finish without a model that can reason: {why}; "
                                     "no COMPLETE condition holds", value=ctx.values(agent.name))

    def _request(self, agent: ReasoningAgent, frame: Frame, ctx: TurnContext, about, others: list[str],
                 unasked: bool):
        """The request of one loop step. When it would overflow the model's context (the token budget),
        older messages are summarised first and only the summary and the recent ones are sent."""
        data: ReasoningData = frame.data  # type: ignore[assignment]

        def build():
            sent = data.messages[data.compacted:]
            window = settled(recent(sent, TRANSCRIPT_LIMIT))
            messages = [ChatMessage.model_validate(m) for m in window]
            built = prompts.reasoning_request(agent, ctx.values(agent.name), messages, ctx.program.tools,
                                              talk_only=unasked, others=others, about=about, summary=data.summary)
            if not unasked:  # HANDOFF RETURN: true under a supervisor: __return_to_parent__ (ABL 3.10)
                built.tools.extend(return_to_parent_tools(ctx, frame))
            return built

        request = build()
        budget = context_budget(ctx, agent)
        if rough_tokens(request) <= budget // 2:  # far from the limit: no need to count more closely
            return request
        before = request_tokens(request)
        if before <= budget:
            return request
        # what the system prompt and the tools take is fixed: the transcript may use half of the rest
        transcript = sum(estimate_tokens(str(m.get("content") or "")) + 4 for m in data.messages[data.compacted:])
        room = max(0, budget - max(0, before - transcript))
        cut = compaction_cut(data.messages, data.compacted, room // 2)
        if cut <= data.compacted:
            return request  # nothing older left to fold: the recent messages alone are too long
        folded = data.messages[data.compacted:cut]
        summary, by = summarise(ctx, agent, data.summary, folded)
        data.summary, data.compacted = summary, cut
        request = build()
        ctx.log.emit("context_compacted", agent.name, before_tokens=before, after_tokens=request_tokens(request),
                     messages=len(folded), by=by, budget=budget, kept=len(data.messages) - cut)
        return request

    def _too_many(self, agent: ReasoningAgent, frame: Frame, ctx: TurnContext, limit: int, about) -> Outcome:
        """The loop ran `limit` model calls without an answer for the user: a fallback reply (ABL MESSAGES
        `max_iterations`, an ADL agent's fallback policy, else ITERATION_FALLBACK), and the agent waits for
        the user (spec: the platform intervenes with a fallback response); the conversation goes on. In a
        fan_out task an ADL agent ends with an error instead, for the calling model."""
        data: ReasoningData = frame.data  # type: ignore[assignment]
        data.pending, data.answer = [], {}
        text = named_message(ctx, agent, "max_iterations") or policy_text(agent) or ITERATION_FALLBACK
        ctx.log.emit("max_iterations_exceeded", agent.name, limit=limit, reply=text)
        ctx.log.emit("error", agent.name, where="reasoning", message=f"no answer after {limit} model calls")
        if about is None and ctx.task:
            ctx.say(agent.name, APOLOGY, frame)
            return Outcome.done("error", "iteration limit reached")
        if about is None:
            return self._fall_back(agent, frame, ctx, f"no answer after {limit} model calls", text)
        ctx.say(agent.name, text, frame)
        frame.waiting = True
        return Outcome.wait()

    @staticmethod
    def _completed(agent: ReasoningAgent, frame: Frame, ctx: TurnContext, outcome: Outcome | None) -> Outcome | None:
        """The agent's declared completion (ABL COMPLETE): when one of its conditions holds after a
        step of the loop, it says its words and ends with its return values."""
        rules = agent.rules
        if not rules.complete or (outcome is not None and outcome.kind not in ("wait",)):
            return outcome
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
            if call.name == "__return_to_parent__":  # the supervisor's digression tool: a hand_back
                call = call.model_copy(update={"name": prompts.HAND_BACK_TOOL})
            if answer.get("idle") and call.name == prompts.FINISH_TOOL:
                # The task cannot be complete before the agent has done or said anything: a
                # small model's reflex, or a misread message. The model is told so, once.
                data.refused_finish = True
                ctx.log.emit("step", agent.name, action="finish refused: nothing of the task is done yet")
                data.messages.append({"role": "tool", "tool_call_id": call.id, "name": call.name,
                                      "content": IDLE_FINISH})
                continue
            if call.name == prompts.FINISH_TOOL and not unasked \
                    and str(call.arguments.get("status", "success")) != "error" and completion_conditions(agent) \
                    and not complete_holds(agent, frame, ctx):
                # The agent declares when its task is done (ABL COMPLETE) and none of that holds: it is not
                # done, and the model is told so (it may go on, hand the user back or escalate; the loop's
                # iteration limit bounds a model that keeps trying)
                conditions = "; ".join(completion_conditions(agent))
                ctx.log.emit("step", agent.name, action="complete refused: no COMPLETE condition holds",
                             conditions=conditions)
                taken = prompts.message_taken([ChatMessage.model_validate(m) for m in data.messages])
                data.messages.append({"role": "tool", "tool_call_id": call.id, "name": call.name,
                                      "content": UNMET_COMPLETE.format(conditions=conditions)
                                      + ("" if taken else MAY_HAND_BACK)})
                continue
            if call.name == prompts.FAN_OUT_TOOL and call.name not in agent.tools and not unasked:
                started = self._fan_out(call, agent, frame, ctx)
                if started is not None:
                    return started
                continue
            if not unasked:
                started = self._agent_call(call, agent, frame, ctx)
                if started is not None:
                    return started
            content = UNASKED_TOOL if unasked else self._tool(call, agent, frame, ctx)
            if not unasked and confirmation_waiting(ctx, frame):  # the user was asked to approve it
                data.pending.insert(0, call.model_dump())
                frame.waiting = True
                return Outcome.wait()
            if content.startswith(NO_SUCH_TOOL):
                answer["missed"] = True
            if call.name == prompts.FINISH_TOOL and answer.get("missed"):
                # a call of this answer named no tool: what it meant to do is not done, so the task is not
                # either; the model reads the error and tries again
                ctx.log.emit("step", agent.name, action="finish refused: a call before it named no tool")
                content = MISSED_FINISH
            elif call.name in (prompts.FINISH_TOOL, prompts.HAND_BACK_TOOL):
                answer[call.name] = call.arguments
            data.messages.append({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": content})
        if answer.pop("confirming", False) and ctx.input.available_to(frame):
            # the message was no answer to the confirmation: the model reads it after the results
            data.messages.append({"role": "user", "content": ctx.input.take(frame, "answer")})
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
            if call.arguments.get("priority"):
                ctx.log.emit("step", agent.name, action="escalate", priority=str(call.arguments["priority"]),
                             reason=reason)
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
            if agent.policy.handoff_context:  # CONTEXT: summary and history strategy for the agent taking over
                receiver_context(ctx, agent.name, handoff, child,
                                 [a for a in handoff.passes if values.get(a) is not None])
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

    def _fan_out(self, call: ToolCall, agent: ReasoningAgent, frame: Frame, ctx: TurnContext) -> Outcome | None:
        """fan_out: several delegations in one call, run by runtime/fanout.py: each task on its own copy
        of the session, stack and event log, at the same time (one after another with an ordered
        provider), merged in task order. A task whose agent would ask the user comes back as
        `needs_input` with its question. The call is answered once, with every task's result; the loop
        goes on (None)."""
        data: ReasoningData = frame.data  # type: ignore[assignment]
        stored = data.fan_out if data.fan_out.get("id") == call.id else {}
        if stored:  # a fan_out of an earlier version, run on the stack, came back: the rest run here
            tasks, done = list(stored.get("tasks", [])), list(stored.get("results", []))
        else:
            tasks, done = fanout.parse_tasks(call, agent, ctx)
        results = fanout.fan_out(ctx, agent, frame, tasks, done)
        data.messages.append({"role": "tool", "tool_call_id": call.id, "name": prompts.FAN_OUT_TOOL,
                              "content": json.dumps({"results": results}, ensure_ascii=False, default=str)})
        data.fan_out = {}
        return None

    def _tool(self, call: ToolCall, agent: ReasoningAgent, frame: Frame, ctx: TurnContext) -> str:
        fields = gather_fields(ctx.program, agent) if call.name == prompts.SET_ARGS_TOOL else {}
        if fields:  # ABL GATHER in reasoning mode: values checked against their fields, several at once
            kept, rejected = record_fields(ctx, agent, dict(call.arguments), fields)
            return gather_answer(ctx, agent, kept, rejected, fields)
        if call.name == prompts.SET_ARGS_TOOL:
            known = set(agent.arg_names())
            types = {a.name: a.type for a in agent.args}
            offered = {n: v for n, v in call.arguments.items() if n in known}
            # an agent's own values (what it hands back: the book it recommended) may come from the
            # whole conversation, not only from the user's words
            grounded = keep_grounded(ctx, agent.name, offered,
                                     {n: types.get(n) if types.get(n) in extract.PATTERN_TYPES else
                                      extract.kind_of_name(n) for n in offered}, where="set_args",
                                     evidence=user_evidence(ctx, with_context=True, frame=frame))
            updated = []
            for name, value in call.arguments.items():
                if name in known and name not in grounded:
                    continue
                if name in known:
                    ctx.write(agent.name, name, value, agent.name, why="set by the model")
                    updated.append(name)
            ignored = [n for n in call.arguments if n not in known]
            unsaid = [n for n in offered if n not in grounded]
            return RECORDED + (", ".join(updated) or "nothing") + (
                f"; {IGNORED}: {', '.join(ignored)}" if ignored else "") + (
                f"; {NOT_RECORDED}, the user did not say it (ask them): {', '.join(unsaid)}" if unsaid else "")
        if call.name in (prompts.FINISH_TOOL, prompts.HAND_BACK_TOOL):
            return "ok"
        if (call.name not in agent.tools and not _added_by_profile(ctx, agent, call.name)) \
                or call.name not in ctx.program.tools:
            ctx.log.emit("error", agent.name, where="reasoning",
                         message=f"the model called {call.name}, which {agent.name} does not use")
            return f"{NO_SUCH_TOOL} {call.name}; available: {', '.join(agent.tools) or 'none'}"
        refused: dict[str, str] = {}
        args = self._grounded_args(call.name, dict(call.arguments), agent, ctx, frame, refused)
        values = ctx.values(agent.name)
        blank = []
        for param in ctx.program.tools[call.name].params:
            if param.name in refused:
                continue  # a refused value is never replaced by one the agent held from before
            # Arguments the agent already knows fill parameters the model left out or left blank.
            if _blank(args.get(param.name)) and not _blank(values.get(param.name)):
                args[param.name] = values[param.name]
            elif param.required and _blank(args.get(param.name)):
                blank.append(param.name)
        if refused:
            # The model gave a value the user did not: the tool runs neither without it nor on another.
            ctx.log.emit("error", agent.name, where="reasoning", tool=call.name,
                         message=f"the model called {call.name} with {', '.join(refused)} the user did not give; "
                                 "not run")
            # (the refused value is not repeated: what a tool message says is evidence for the next call)
            return (f"error: {call.name} was not run: {', '.join(refused)} is not what the user said; ask the "
                    "user for it before calling it")
        if blank:
            # A tool never runs on values nobody gave (a model filling in "" for a payee name).
            ctx.log.emit("error", agent.name, where="reasoning", tool=call.name,
                         message=f"the model called {call.name} without {', '.join(blank)}; not run")
            return (f"error: {call.name} was not run: {', '.join(blank)} has no value; ask the user for it "
                    "before calling it")
        result = ctx.call_tool(call.name, args, agent.name, frame)
        return result.for_model(args)


    @staticmethod
    def _grounded_args(tool: str, args: dict[str, Any], agent: ReasoningAgent, ctx: TurnContext,
                       frame: Frame, refused: dict[str, str] | None = None) -> dict[str, Any]:
        """A tool call's arguments that the conversation holds: what the user said, what tools
        returned, values the session has (runtime/grounding.py); a free-text parameter without a
        kind (a query the model words) needs half of its words from there; a boolean is how to call the
        tool, not a value. For a tool that changes nothing, a free-text parameter (not a name or a title)
        also takes the model's reading of the user's words as a category ("romance" for "a love story",
        grounding.category_reading). The others are dropped (and put in `refused`, name: why): the call
        is then not run, and the model is told to ask."""
        tdef = ctx.program.tools[tool]
        params = {p.name: p for p in tdef.params}
        kinds = {n: (p.type if p.type in extract.PATTERN_TYPES else extract.kind_of_name(n)) for n, p in params.items()}
        options = {n: [str(v) for v in (getattr(p, "enum", None) or [])] for n, p in params.items()}
        composed = {n for n, p in params.items() if kinds.get(n) is None and not options.get(n)}
        readings = set() if changes_something(tdef) else {n for n in composed if reading_param(n)}
        evidence = user_evidence(ctx, with_context=True, frame=frame)
        switches = {n for n, p in params.items() if p.type == "boolean"}  # how to call, not what the user said
        kept = keep_grounded(ctx, agent.name, {n: v for n, v in args.items() if n in params}, kinds, options,
                             exempt=switches, where=f"arguments of {tool}", evidence=evidence, composed=composed,
                             readings=readings, refused_out=refused,
                             about=" ".join([tdef.description or "", *(p.description or "" for p in tdef.params)]))
        return {n: v for n, v in args.items() if n not in params or n in kept}


def _added_by_profile(ctx: TurnContext, agent: ReasoningAgent, tool: str) -> bool:
    """Whether an active behaviour profile of the agent adds the tool (TOOLS_ADD)."""
    return tool in added_tools(agent.owner or agent.name, ctx)


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip()) or value in ([], {})


# ---- ABL reasoning: the agent's context, system tools, gathered fields, limits, compaction, offline ----


def model_reasons(ctx: TurnContext) -> bool:
    """Whether an ABL reasoning agent asks its model (the tool-calling loop) rather than working offline.
    A model that classifies does. One that does not classify reasons only when it says it can
    (`can_reason`): the scripted model of a conversation test that scripts answers does, also under
    `embeddings: true` (convtest/runner.py); the local SmolLM2 (too small) and no model at all do not."""
    llm = ctx.llm
    if llm is None:
        return False
    can = getattr(llm, "can_reason", None)
    return ctx.llm_classifies if can is None else bool(can)


def offline_reason(ctx: TurnContext) -> str:
    """Why the agent cannot go on by itself, truthfully: no model is configured, or the one configured
    (named as the chat banner names it) is too small to reason."""
    if ctx.llm is None:
        return NO_MODEL
    return SMALL_MODEL.format(name=getattr(ctx.llm, "name", None) or "a small local model")


def no_model_reply(ctx: TurnContext) -> str:
    """What an agent with nothing it can do by itself says (NO_MODEL_REPLY when no model is configured)."""
    return NO_MODEL_REPLY if ctx.llm is None else f"I can't help with that here: {offline_reason(ctx)}."


def completion_conditions(agent: ReasoningAgent) -> list[str]:
    """The agent's COMPLETE conditions written as expressions (`open_dispute.case_id IS SET`), as written."""
    return [r.when.source for r in agent.rules.complete if isinstance(r.when, ExprCondition)]


def complete_holds(agent: ReasoningAgent, frame: Frame, ctx: TurnContext) -> bool:
    """Whether one of the agent's COMPLETE conditions holds now (one that fails to evaluate does not: an
    `error` event says why, as when the loop checks them)."""
    return any(ctx.holds(rule.when, agent.name, frame, where="completion", failure="error") is True
               for rule in agent.rules.complete)


def named_message(ctx: TurnContext, agent: ReasoningAgent, name: str) -> str | None:
    """The agent's MESSAGES text of that name (ABL: `llm_error`, `fallback`, `max_iterations`), rendered, or
    None; a FLOW step's reasoning agent has its flow agent's (`owner`)."""
    return message(ctx, agent.owner or agent.name, name, "") or None


def policy_text(agent: ReasoningAgent) -> str | None:
    """The sentence of the agent's fallback policy when it is a text (ADL), else None."""
    policy = agent.fallback
    return policy_message(policy) if policy is not None and policy.kind == "text" else None


MODEL_ERROR_TYPES = ("llm_error", "unknown_error", "default")  # the ON_ERROR handlers a failed model call goes to


def model_error_handler(ctx: TurnContext, agent: ReasoningAgent):
    """The ON_ERROR handler (ABL) of the agent, or of the flow whose REASONING step it is, for a failed model
    call: `llm_error`, else `unknown_error`, else `default`; None without one."""
    rules = ctx.program.rules_for(agent.name)
    for name in MODEL_ERROR_TYPES:
        handler = next((h for h in rules.on_error if h.on == name), None)
        if handler is not None:
            return handler
    return None


def active_profiles(ctx: TurnContext, agent: str, rules) -> list:
    """The behaviour profiles of `rules` (those of agent `agent`) whose WHEN holds now, highest
    priority first: the rules runtime's `active_profiles(agent, ctx)`, or, without it, this reading
    of its own (WHEN false, or failing to evaluate, leaves a profile out)."""
    shared = getattr(rules_runtime, "active_profiles", None)
    if callable(shared):
        try:
            return list(shared(agent, ctx))
        except (TypeError, AttributeError):
            pass
    out = []
    for profile in getattr(rules, "profiles", []) or []:
        when = profile.when
        if when is not None:
            if not isinstance(when, ExprCondition):
                continue
            try:
                if not is_true(ctx.eval(when.expr, agent)):
                    continue
            except EvalError:
                continue
        out.append(profile)
    return sorted(out, key=lambda p: -float(p.priority or 0))


def gather_fields(program, agent) -> dict[str, Any]:
    """The GATHER fields a reasoning agent collects, by name (its arguments that are fields of the rules
    it acts under)."""
    rules = program.rules_for(agent.name)
    names = set(agent.arg_names())
    return {f.name: f for f in rules.gather if f.name in names}


def _needs_asking(ctx: TurnContext, agent: str, f) -> bool:
    """Whether a field must have a value before the task is done (required, or an active
    progressive / `when` field)."""
    if f.activation == "optional" or (not f.required and f.activation == "required"):
        return False
    if f.activation == "progressive":
        return all(ctx.read(_field_ref(d), agent) is not None for d in f.depends_on)
    if f.activation == "when":
        if not isinstance(f.when, ExprCondition):
            return False
        try:
            return is_true(ctx.eval(f.when.expr, agent))
        except EvalError:
            return False
    return True


def _field_ref(name: str):
    return Ref(scope="session", name=name)


def missing_fields(ctx: TurnContext, agent, fields: dict[str, Any]) -> list:
    values = ctx.values(agent.name)
    return [f for f in fields.values() if values.get(f.name) is None and _needs_asking(ctx, agent.name, f)]


def note_all_gathered(ctx: TurnContext, agent, fields: dict[str, Any]) -> bool:
    """ABL 8.8 `all_fields_gathered`, for the reasoning agent's fields."""
    done = not missing_fields(ctx, agent, fields)
    system = getattr(ctx.state, "system", None)
    if isinstance(system, dict) and fields:
        system["all_fields_gathered"] = done
    return done


def agent_context(ctx: TurnContext, agent: ReasoningAgent, frame: Frame):
    """What the system prompt of an agent whose policy shows its sections (ABL) has
    (prompts.AgentContext); None when its prompt is its instructions."""
    if agent.policy.prompt != "sections":
        return None
    rules = ctx.program.rules_for(agent.name)
    own = agent.instructions.strip()
    base = [f"Goal: {rules.goal}" if rules.goal else "", rules.persona,
            "Limitations:\n" + "\n".join(f"- {x}" for x in rules.limitations) if rules.limitations else ""]
    for part in (p for p in base if p):  # the front end put GOAL, PERSONA, LIMITATIONS first: shown apart
        if own.startswith(part):
            own = own[len(part):].lstrip()
    profiles = active_profiles(ctx, agent.owner or agent.name, rules)
    fields = gather_fields(ctx.program, agent)
    values = ctx.values(agent.name)
    note_all_gathered(ctx, agent, fields)
    memory = []
    for var in rules.memory.session:
        if var.name not in fields:
            memory.append((var.name, ctx.read(_field_ref(var.name), agent.name)))
    for path in rules.memory.persistent:
        ref = memory_ref(path.path)
        if ref is not None and path.access in ("read", "readwrite"):
            value = ctx.read(ref, agent.name)
            if value is not None:
                memory.append((path.path, value))
    return prompts.AgentContext(
        goal=rules.goal.strip(), persona=rules.persona.strip(), limitations=list(rules.limitations),
        instructions=own, profiles=[(p.name, p.instructions.strip()) for p in profiles if p.instructions.strip()],
        known=[(n, "(given; sensitive, not shown)" if fields[n].sensitive else values.get(n))
               for n in fields if values.get(n) is not None],
        needed=[(f.name, f.type, f.prompt) for f in missing_fields(ctx, agent, fields)],
        memory=memory, hidden_tools=[t for p in profiles for t in p.tools_hide],
        added_tools=[t["name"] for p in profiles for t in p.tools_add if isinstance(t, dict) and "name" in t],
        fields=list(fields.values()), can_fan_out=bool(agent.delegates))


def iteration_limit(ctx: TurnContext, agent: ReasoningAgent) -> int:
    """Model calls a run of the loop may make: the agent's `max_iterations` in the IR (the ABL front
    end writes EXECUTION max_iterations there, 10 when not given, spec 7.11; a FLOW step's reasoning
    agent gets its flow's; ADL agents their own `max_iterations`, 8 by default)."""
    return max(1, int(agent.max_iterations))


def canonical_call(call: ToolCall, agent: ReasoningAgent) -> ToolCall:
    """A call of a system tool by the spec's name (`complete`, `escalate`, `handoff` {agent},
    `delegate` {agent, input}) as the runtime's own (finish, escalate_to_human, transfer_to_<agent>,
    delegate_to_<agent>). A tool the agent declares under that name stays itself."""
    name, args = call.name, dict(call.arguments or {})
    if name in agent.tools:
        return call
    if name == prompts.COMPLETE_TOOL:
        name = prompts.FINISH_TOOL
    elif name == prompts.ABL_ESCALATE_TOOL:
        name = prompts.ESCALATE_TOOL
    elif name in (prompts.HANDOFF_TOOL, prompts.DELEGATE_TOOL):
        target = args.pop("agent", None) or args.pop("to", None)
        inputs = args.pop("input", None)
        if isinstance(inputs, dict):
            args.update(inputs)
        prefix = prompts.TRANSFER_PREFIX if name == prompts.HANDOFF_TOOL else prompts.DELEGATE_PREFIX
        name = prefix + str(target)
    else:
        return call
    return ToolCall(id=call.id, name=name, arguments=args)


# ---- gathered values: checked against the field's type and validation before they are kept ----


def check_field_value(ctx: TurnContext, agent: str, f, value: Any) -> tuple[Any, str | None]:
    """The value to keep for GATHER field `f`, or an error saying why `value` is not one."""

    if _blank(value):
        return None, "no value"
    kind = f.type
    if kind in ("number", "integer"):
        if isinstance(value, bool):
            return None, "not a number"
        if isinstance(value, str):
            raw = value.strip()
            if re.fullmatch(r"-?\d{1,3}(,\d{3})+(\.\d+)?", raw):
                raw = raw.replace(",", "")  # 1,200: thousands, not a decimal comma
            try:
                value = float(raw)
            except ValueError:
                found = extract.extract_values(value, {"v": kind}).get("v")
                if found is None:
                    return None, "not a number"
                value = found
        if not isinstance(value, (int, float)):
            return None, "not a number"
        if kind == "integer" and float(value) != int(value):
            return None, "not a whole number"
        value = int(value) if kind == "integer" or float(value).is_integer() else float(value)
    elif kind == "boolean":
        if not isinstance(value, bool):
            found = extract.extract_values(str(value), {"v": "boolean"}).get("v")
            if found is None:
                return None, "not yes or no"
            value = found
    elif kind in ("date", "datetime"):
        text = str(value).strip()
        iso = re.fullmatch(r"\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2})?)?", text)
        if iso:
            value = text if kind == "datetime" or "T" not in text else text[:10]
        else:
            found = extract.extract_values(text, {"v": kind}, now=ctx.eval_env.clock()).get("v")
            if found is None:
                return None, "not a date"
            value = found
    elif kind == "email":
        if not extract.EMAIL.fullmatch(str(value).strip()):
            return None, "not an e-mail address"
        value = str(value).strip()
    elif kind == "phone":
        found = extract.extract_values(str(value), {"v": "phone"}).get("v")
        if found is None:
            return None, "not a phone number"
        value = found
    elif kind == "string" and not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False, default=str) if isinstance(value, (dict, list)) else str(value)
    if f.options:
        match = next((o for o in f.options if str(o).lower() == str(value).strip().lower()), None)
        if match is None:
            return None, f"not one of {', '.join(map(str, f.options))}"
        value = match
    for rule in f.validations:
        error = _validation_error(ctx, agent, f, rule, value)
        if error is not None:
            return None, error
    return value, None


def _validation_error(ctx: TurnContext, agent: str, f, rule, value: Any) -> str | None:
    said = rule.error or None
    if rule.kind == "pattern":
        try:
            ok = re.search(rule.rule, str(value)) is not None
        except re.error:
            return None
        return None if ok else (said or f"does not match {rule.rule}")
    if rule.kind == "range":
        bounds = re.fullmatch(r"\s*(-?[\d.]+)\s*-\s*(-?[\d.]+)\s*", rule.rule)
        if bounds is None or not isinstance(value, (int, float)):
            return None
        low, high = float(bounds.group(1)), float(bounds.group(2))
        return None if low <= float(value) <= high else (said or f"must be between {bounds.group(1)} and "
                                                                     f"{bounds.group(2)}")
    if rule.kind == "enum":
        allowed = [x.strip().lower() for x in rule.rule.split(",") if x.strip()]
        return None if str(value).strip().lower() in allowed else (said or f"must be one of {rule.rule}")
    if rule.kind == "custom" and rule.expr is not None:
        def lookup(ref):  # the candidate value stands in for the field while it is checked
            if ref.space == "var" and ref.name == f.name:
                return value
            return ctx.read(ref, agent)

        try:
            return None if is_true(evaluate(rule.expr, lookup, env=ctx.eval_env)) else (said or "is not valid")
        except EvalError:
            return None
    return None  # llm: judged by the model that gave the value


def record_fields(ctx: TurnContext, agent: ReasoningAgent, given: dict[str, Any], fields: dict[str, Any],
                  by: str = "llm") -> tuple[dict[str, Any], dict[str, str]]:
    """Check the values given for the agent's GATHER fields and keep the valid ones: what was kept
    and, per field, why a value was not."""
    kept: dict[str, Any] = {}
    rejected: dict[str, str] = {}
    if by == "llm":  # a model's values: only what the user said holds (runtime/grounding.py)
        known = {n: v for n, v in given.items() if n in fields}
        grounded = keep_grounded(ctx, agent.name, known, {n: fields[n].type for n in known},
                                 {n: list(fields[n].options) for n in known},
                                 exempt={n for n in known if fields[n].infer}, where="set_args")
        for name in known:
            if name not in grounded:
                rejected[name] = "the user did not say it; ask them"
        given = {n: v for n, v in given.items() if n not in known or n in grounded}
    for name, value in given.items():
        f = fields.get(name)
        if f is None:
            rejected[name] = "not a field of this agent"
            continue
        checked, error = check_field_value(ctx, agent.name, f, value)
        if error is not None:
            if error != "no value":
                rejected[name] = error
            continue
        kept[name] = checked
        ctx.write(agent.name, name, checked, agent.name, why=f"gathered ({by})")
    if kept or rejected:
        ctx.log.emit("gather_extraction", agent.name, fields=kept, by=by, rejected=rejected)
    return kept, rejected


def gather_answer(ctx: TurnContext, agent: ReasoningAgent, kept: dict[str, Any], rejected: dict[str, str],
                  fields: dict[str, Any]) -> str:
    """What set_args answers the model: what was recorded and refused, and what is still needed."""
    parts = [RECORDED + (", ".join(f"{k}={json.dumps(v, ensure_ascii=False, default=str)}"
                                      for k, v in kept.items()) or "nothing")]
    if rejected:
        parts.append(f"{NOT_RECORDED}: " + "; ".join(f"{k}: {why}" for k, why in rejected.items()))
    missing = missing_fields(ctx, agent, fields)
    note_all_gathered(ctx, agent, fields)
    parts.append("still needed: " + ", ".join(f.name for f in missing) if missing else "all fields gathered")
    return "; ".join(parts)


# ---- context compaction --------------------------------------------------------------------------


def estimate_tokens(text: str) -> int:
    return (len(text) + 3) // 4


def rough_tokens(request) -> int:
    """A quick over-estimate of a request's size in tokens (a character a token for its messages, and
    the JSON of its tools' parameters taken as their printed length)."""
    size = sum(len(m.content or "") + 8 for m in request.messages)
    size += sum(len(c.name) + len(str(c.arguments)) for m in request.messages for c in m.tool_calls or [])
    return size + sum(len(t.name) + len(t.description or "") + len(str(t.parameters)) for t in request.tools)


def request_tokens(request) -> int:
    """A request's size in tokens, estimated (4 characters a token), tools included."""
    size = 0
    for m in request.messages:
        size += estimate_tokens(m.content or "") + 4
        for c in m.tool_calls or []:
            size += estimate_tokens(c.name + json.dumps(c.arguments, default=str))
    for t in request.tools:
        size += estimate_tokens(t.name + (t.description or "") + json.dumps(t.parameters, default=str))
    return size


def context_budget(ctx: TurnContext, agent: ReasoningAgent) -> int:
    """The most tokens one request may hold: EXECUTION `context_tokens` (or `context_window`), else
    `llm: context_tokens` in config.yml, else DEFAULT_CONTEXT_TOKENS."""
    extra = ctx.program.rules_for(agent.name).execution.extra
    for value in (extra.get("context_tokens"), extra.get("context_window"),
                  (ctx.program.settings.llm or {}).get("context_tokens")):
        try:
            if value is not None and int(value) > 0:
                return int(value)
        except (TypeError, ValueError):
            continue
    return DEFAULT_CONTEXT_TOKENS


def compaction_cut(messages: list[dict], start: int, keep_tokens: int) -> int:
    """Where to cut the transcript: the messages from the cut on (recent ones, up to `keep_tokens`,
    starting at a user message so no tool result loses its call) stay as they are; those from
    `start` to the cut are folded into the summary. At least the last user message is kept."""
    size, cut = 0, len(messages)
    for i in range(len(messages) - 1, start - 1, -1):
        size += estimate_tokens(str(messages[i].get("content") or "")) + 4
        if size > keep_tokens:
            break
        cut = i
    user_starts = [i for i in range(start, len(messages)) if messages[i].get("role") == "user"]
    later = [i for i in user_starts if i >= cut]
    if later:
        return later[0]
    return user_starts[-1] if user_starts else start


def _transcript_lines(messages: list[dict]) -> list[str]:
    lines = []
    for m in messages:
        role = m.get("role")
        text = str(m.get("content") or "").strip()
        if role == "assistant" and m.get("tool_calls"):
            calls = ", ".join(f"{c.get('name')}({json.dumps(c.get('arguments'), ensure_ascii=False, default=str)})"
                              for c in m["tool_calls"])
            text = (text + " " if text else "") + f"[called {calls}]"
        who = {"user": "User", "assistant": "Assistant", "tool": f"Tool {m.get('name') or ''}".strip()}.get(role, role)
        if text:
            lines.append(f"{who}: {text}")
    return lines


SUMMARY_CHARS = 2000  # an extractive summary keeps at most this much


def summarise(ctx: TurnContext, agent: ReasoningAgent, earlier: str, messages: list[dict]) -> tuple[str, str]:
    """A summary of `messages` (after the summary of what came before them): by the model when there
    is one, else extractive (what the user said and what the tools returned, shortened)."""
    lines = _transcript_lines(messages)
    if ctx.llm_classifies:
        text = "\n".join(([f"Earlier summary: {earlier}"] if earlier else []) + lines)
        try:
            response = ctx.complete(prompts.summary_request(agent, text), agent.name)
            if response.content and response.content.strip():
                return response.content.strip(), "llm"
        except LLMError as exc:
            ctx.log.emit("error", agent.name, where="context compaction", message=str(exc))
    kept = [ln if len(ln) <= 200 else ln[:199] + "…" for ln in lines
            if ln.startswith(("User:", "Tool")) or ln.startswith("Assistant:") and "[called" in ln]
    text = "\n".join(([earlier] if earlier else []) + kept)
    if len(text) > SUMMARY_CHARS:
        text = "…" + text[-(SUMMARY_CHARS - 1):]
    return text, "extractive"
