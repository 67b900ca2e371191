"""The flow executor: runs a step graph node by node, waiting at `user` steps."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from frontdesk.expr import EvalError, is_true
from frontdesk.ir.models import (
    AssignNode,
    BranchNode,
    ClaimsCondition,
    EscalateNode,
    ExprCondition,
    FlowAgent,
    HandoffNode,
    InvokeNode,
    JumpNode,
    ListenNode,
    ReturnNode,
    SayNode,
    StepGraph,
)
from frontdesk.llm.base import LLMError
from frontdesk.nlu.base import Option
from frontdesk.nlu.matcher import polarity
from frontdesk.runtime import prompts
from frontdesk.runtime.context import ChildResult, Outcome, TurnContext
from frontdesk.runtime.events import register_event_type
from frontdesk.runtime.options import claims_options
from frontdesk.runtime.policies import (
    answers_yes_no,
    apply_fallback,
    few_words,
    new_frame,
    setup_frame,
    switch_candidates,
)
from frontdesk.runtime.state import Frame

MAX_STEPS_PER_RUN = 500
register_event_type("flow_transition", "a flow entered one of its named steps", ("step",))
register_event_type("gather_extraction", "values read from the user's message for the fields asked for",
                    ("fields", "by"))
SHORT_ANSWER_WORDS = 4


def graph_of(ctx: TurnContext, frame: Frame) -> StepGraph | None:
    agent = ctx.program.agents[frame.agent]
    if frame.graph == "setup":
        return agent.setup
    return agent.graph if isinstance(agent, FlowAgent) else None


class FlowExecutor:
    def run(self, frame: Frame, ctx: TurnContext) -> Outcome:
        graph = graph_of(ctx, frame)
        if graph is None:
            return Outcome.done()
        if not frame.started:
            frame.started = True
            frame.data.node = graph.entry
            agent = ctx.program.agents[frame.agent]
            if frame.graph == "main" and agent.setup is not None:
                return Outcome.call(setup_frame(ctx, agent))  # its start steps first (ABL ON_START)
        if frame.reask:
            self._ask_again(frame, ctx, graph)
        for _ in range(MAX_STEPS_PER_RUN):
            if frame.data.node is None:
                if frame.data.returns:
                    self._end_subflow(frame, ctx, "success", "")
                    continue
                return self._pass_on_rest(frame, ctx, Outcome.done())
            node = graph.nodes[frame.data.node]
            if node.id in graph.labels.values() and frame.data.step != node.id:
                ctx.log.emit("flow_transition", frame.agent, step=node.id, previous=frame.data.step)
                frame.data.step = node.id
            outcome = self._step(node, frame, ctx, graph)
            if outcome is not None:
                return self._pass_on_rest(frame, ctx, outcome)
        ctx.log.emit("error", frame.agent, where="flow",
                     message=f"the flow ran {MAX_STEPS_PER_RUN} steps without waiting for the user; "
                             "is there a loop without a `user` step or `tries`?")
        return Outcome.done("error", "flow step limit reached")

    @staticmethod
    def _pass_on_rest(frame: Frame, ctx: TurnContext, outcome: Outcome) -> Outcome:
        """The message this flow answered with also asks for another member's task (`also` of the
        understand call): once the flow has done what the answer leads to, that agent gets the message
        in the same turn, and a flow that still has questions steps aside until it is done."""
        inp = ctx.input
        if inp.also is None or not inp.taken_by(frame) or outcome.kind not in ("wait", "done"):
            return outcome
        inp.give_back(frame, f"the message also asks for {inp.also}", used=True)
        if outcome.kind == "done":
            return outcome
        frame.waiting = True
        return Outcome.switch(inp.also)

    def child_finished(self, frame: Frame, child: ChildResult, ctx: TurnContext) -> None:
        if child.setup:
            return  # its start steps ran: the flow begins at its entry
        graph = graph_of(ctx, frame)
        node = graph.nodes.get(frame.data.node) if graph and frame.data.node else None
        if isinstance(node, InvokeNode) and node.target == child.agent:
            frame.data.node = node.next
            frame.waiting = False  # its next question is a new one: the message before it is no answer
        elif isinstance(node, ListenNode):
            frame.waiting = False  # after a fallback agent: listen again

    # ---- steps ---------------------------------------------------------------------

    def _step(self, node, frame: Frame, ctx: TurnContext, graph: StepGraph) -> Outcome | None:
        agent = frame.agent
        if isinstance(node, SayNode):
            text = node.variants.get(ctx.state.channel, node.text) if node.variants else node.text
            ctx.say(agent, ctx.render(text, agent, frame), frame)
            frame.data.last_say = node.id
            frame.data.node = node.next
        elif isinstance(node, ListenNode):
            return self._listen(node, frame, ctx, graph)
        elif isinstance(node, AssignNode):
            for a in node.assignments:
                ctx.assign(a.target, self._eval(a.value, frame, ctx), agent, frame)
            frame.data.node = node.next
        elif isinstance(node, InvokeNode):
            return self._invoke(node, frame, ctx, graph)
        elif isinstance(node, BranchNode):
            return self._branch(node, frame, ctx, graph)
        elif isinstance(node, JumpNode):
            return self._jump(node, frame, ctx)
        elif isinstance(node, ReturnNode):
            message = ctx.render(node.message, agent, frame) if node.message is not None else ""
            if frame.data.returns:
                self._end_subflow(frame, ctx, node.status, message)
            else:
                return Outcome.done(node.status, message)
        elif isinstance(node, HandoffNode):
            return self._handoff(node, frame, ctx)
        elif isinstance(node, EscalateNode):
            if node.message is not None:
                ctx.say(agent, ctx.render(node.message, agent, frame), frame)
            frame.data.node = node.next
            ctx.log.emit("step", agent, action="escalate", reason=node.reason, priority=node.priority)
            return Outcome.escalate(node.reason)
        return None

    def _handoff(self, node: HandoffNode, frame: Frame, ctx: TurnContext) -> Outcome:
        """Give the conversation to another agent, passing values; with `resume`, come back at `next`."""
        args = {a.name: self._eval(a.value, frame, ctx) for a in node.args}
        for name, value in args.items():
            ctx.write(node.target, name, value, frame.agent, why=f"passed by {frame.agent}'s handoff")
        summary = ctx.render(node.summary, frame.agent, frame) if node.summary is not None else ""
        ctx.log.emit("step", frame.agent, action="handoff", agent=node.target, resume=node.resume,
                     **({"summary": summary} if summary else {}))
        frame.data.node = node.next
        child = new_frame(ctx, node.target)
        if ctx.input.taken_by(frame) or ctx.input.offered_to(frame):
            ctx.input.offer(child, frame.agent)
        return Outcome.transfer(child, resume=node.resume, message=summary)

    @staticmethod
    def _ask_again(frame: Frame, ctx: TurnContext, graph: StepGraph) -> None:
        """Resumed after another agent: say the question it waits on again, with today's values."""
        frame.reask = False
        node = graph.nodes.get(frame.data.last_say) if frame.data.last_say else None
        if node is None and frame.data.last_listen:  # a frame stored before `last_say` was kept
            node = next((n for n in graph.nodes.values() if isinstance(n, SayNode) and n.next == frame.data.last_listen),
                        None)
        if isinstance(node, SayNode) and frame.waiting:
            ctx.say(frame.agent, ctx.render(node.text, frame.agent, frame), frame)
        elif frame.last_prompt:
            ctx.say(frame.agent, frame.last_prompt, frame)

    def _eval(self, expr, frame: Frame, ctx: TurnContext) -> Any:
        try:
            return ctx.eval(expr, frame.agent, frame)
        except EvalError as exc:
            ctx.log.emit("warning", frame.agent, where=frame.data.node, message=str(exc))
            return None

    def _end_subflow(self, frame: Frame, ctx: TurnContext, status: str, message: str) -> None:
        key = frame.data.subflow_calls.pop() if frame.data.subflow_calls else None
        if key:
            ctx.set_status(key, status, message)
        frame.data.node = frame.data.returns.pop()

    def _listen(self, node: ListenNode, frame: Frame, ctx: TurnContext, graph: StepGraph) -> Outcome | None:
        frame.data.last_listen = node.id
        if not frame.waiting and node.id in frame.data.extracted:
            self._reject_earlier_answer(node, frame, ctx)
        inp = ctx.input
        if inp.available_to(frame) and frame.waiting:
            # The user's answer to the question this step asked.
            inp.take(frame, "answer")
            tentative = False
        elif inp.offered_to(frame):
            # The message that started (or brought back) this agent: it is the answer only if it
            # already says what this step asks; otherwise the agent asks and waits.
            tentative = True
        else:
            frame.waiting = True
            return Outcome.wait()
        frame.data.decisions.clear()
        frame.data.decided_by.clear()
        outcome, answered = self._understand(node, frame, ctx, graph, tentative)
        if tentative and not answered:
            ctx.log.emit("step", frame.agent, action="the message that started the agent does not answer "
                                                   "its question; waiting", node=node.id)
            frame.data.decisions.clear()
            frame.data.decided_by.clear()
            frame.waiting = True
            return Outcome.wait()
        if tentative:
            inp.take(frame, "answer given before the question")
        frame.waiting = False
        if outcome is not None:
            return outcome
        frame.data.node = node.next
        return None

    def _understand(self, node: ListenNode, frame: Frame, ctx: TurnContext, graph: StepGraph,
                    tentative: bool = False) -> tuple[Outcome | None, bool]:
        """At most one LLM call, only when needed: the claims choice ahead (unless embeddings
        decided it), a topic switch, and arguments the flow is about to read.

        Returns the outcome (a topic switch) and whether the message answered the step: a claims
        case chosen, or a value given. A `tentative` message (the one that started the agent) is
        only read for an answer: no topic switch, no guess."""
        branch = graph.nodes.get(node.classifies) if node.classifies else None
        branch = branch if isinstance(branch, BranchNode) else None
        values = ctx.values(frame.agent)
        extract = [n for n in node.extracts if values.get(n) is None]
        by_pattern: dict[str, Any] = {}
        if extract and (node.strategy != "llm" or not ctx.llm_classifies):
            by_pattern = self._extract_by_pattern(extract, frame, ctx)
            extract = [] if node.strategy == "pattern" else [n for n in extract if n not in by_pattern]
        if branch is None and not extract:
            return None, (not tentative) or bool(by_pattern)
        switches = switch_candidates(ctx, frame) if branch and not tentative else []
        choice = self._choose_by_embedding(branch, switches, frame, ctx, tentative) if branch else None
        ask_choice = branch is not None and choice is None and (ctx.llm_classifies or not tentative)
        extracted: dict[str, Any] = {}
        call: dict[str, Any] = {}
        if (ask_choice or extract) and (ctx.llm is not None or not tentative):
            agent = ctx.program.agents[frame.agent]
            request = prompts.understand_request(
                agent, claims_choices(branch) if ask_choice else [], switches if ask_choice else [], extract,
                ctx.state.history, ctx.program.settings.history_window)
            try:
                response = ctx.complete(request, frame.agent)
                call = response.tool_calls[0].arguments if response.tool_calls else {}
            except LLMError as exc:
                ctx.log.emit("error", frame.agent, where="understand", message=str(exc))
                call = {}
            extracted = self._apply_extracted(call.get("args"), extract, frame, ctx)
            if ask_choice:
                choice = str(call.get("choice", prompts.NONE_CHOICE))
                frame.data.decided_by[branch.id] = "llm"
        if branch is None:
            return None, bool(extracted) or bool(by_pattern)
        choice = choice or prompts.NONE_CHOICE
        if choice.startswith("switch:") and choice[7:] in {s.name for s in switches}:
            frame.waiting = True  # resume here, at the question, after the other agent
            ctx.input.give_back(frame, f"the user turned to {choice[7:]}")
            ctx.log.emit("route_decided", frame.agent, agent=choice[7:], by=f"understand ({frame.data.decided_by[branch.id]})",
                         reason="the user changed topic")
            return Outcome.switch(choice[7:]), True
        cases = {k for k, _ in claims_choices(branch)}
        frame.data.decisions[branch.id] = choice if choice in cases else prompts.NONE_CHOICE
        also = str(call.get("also") or "") if ask_choice else ""
        if also in {s.name for s in switches} and also != frame.agent:
            ctx.input.also = also
            ctx.log.emit("step", frame.agent, action="the message also asks for another agent", agent=also)
        return None, choice in cases

    def _extract_by_pattern(self, names: list[str], frame: Frame, ctx: TurnContext) -> dict[str, Any]:
        """Values the message gives that patterns can read (e-mail, phone, number, yes/no, date, one of
        a field's options), written like extracted ones."""
        from frontdesk.runtime.extract import PATTERN_TYPES, extract_values

        agent = ctx.program.agents[frame.agent]
        types = {a.name: a.type for a in agent.args if a.name in names}
        rules = agent.rules
        options = {f.name: f.options for f in rules.gather if f.name in names and f.options} if rules else {}
        patterns = {f.name: v.rule for f in (rules.gather if rules else []) if f.name in names
                    for v in f.validations if v.kind == "pattern" and v.rule}
        fields = {n: t for n, t in types.items() if t in PATTERN_TYPES or n in options or n in patterns}
        if not fields:
            return {}
        message = ctx.input.text or ctx.last_user_message()
        found = extract_values(message, fields, ctx.eval_env.clock(), options, patterns)
        if found:
            ctx.log.emit("step", frame.agent, action="values read by pattern", args=found)
        return self._apply_extracted(found, names, frame, ctx, by_pattern=True)

    def _reject_earlier_answer(self, node: ListenNode, frame: Frame, ctx: TurnContext) -> None:
        """The flow came back to a question it already asked: the values read from the earlier
        answer were not good enough. They are cleared and never taken from the user again."""
        for name, value in frame.data.extracted.pop(node.id).items():
            if ctx.values(frame.agent).get(name) == value:
                ctx.write(frame.agent, name, None, frame.agent, why="asked again: the flow did not accept it")
            rejected = frame.data.rejected.setdefault(name, [])
            if value not in rejected:
                rejected.append(value)

    def _apply_extracted(self, args, extract: list[str], frame: Frame, ctx: TurnContext,
                         by_pattern: bool = False) -> dict[str, Any]:
        if not extract or not isinstance(args, dict):
            return {}
        got = {k: v for k, v in args.items() if k in extract and v not in (None, "")}
        refused = {k: v for k, v in got.items() if v in frame.data.rejected.get(k, [])}
        got = {k: v for k, v in got.items() if k not in refused}
        for name, value in got.items():
            ctx.write(frame.agent, name, value, frame.agent, why="extracted from the user's message")
        ctx.log.emit("args_extracted", frame.agent, args=got,
                     **({"refused": refused, "why": "the flow rejected these values before"} if refused else {}))
        agent_rules = ctx.program.agents[frame.agent].rules
        if agent_rules is not None and got:  # the same, named as ABL traces name it
            ctx.log.emit("gather_extraction", frame.agent, fields=got, by="pattern" if by_pattern else "llm")
        if got and frame.data.last_listen:
            frame.data.extracted.setdefault(frame.data.last_listen, {}).update(got)
        return got

    def _choose_by_embedding(self, branch: BranchNode, switches, frame: Frame, ctx: TurnContext,
                             tentative: bool = False) -> str | None:
        """The claims choice when the embedding model can take it; None when an LLM must decide.

        With no LLM to ask, an unsure decision is "none" (the fallback asks the user again), never
        a guess; a message that merely started the agent is matched only when the model is sure,
        with or without an LLM."""
        message = ctx.input.text or ctx.last_user_message()
        if (polarity(message) and len(message.split()) <= SHORT_ANSWER_WORDS) or \
                (ctx.llm_classifies and answers_yes_no(message)) or few_words(message):
            # "no thanks" (or "No, I don't need a new card" when an LLM can read the rest, or a bare
            # number) answers the question; it is not a change of topic
            switches = []
        options = claims_options(branch) + [
            Option(f"switch:{o.key}", o.examples) for o in ctx.agent_options([a.name for a in switches])]
        decision = ctx.embed_decide(message, options, "claims", frame.agent)
        if decision is None:
            return None
        if decision.sure and decision.choice is None and ctx.llm_classifies and not tentative:
            # unlike every example is not the same as none of the cases: the LLM reads it
            decision = replace(decision, sure=False)
        if decision.sure or not ctx.llm_classifies or tentative:
            # A message that started the agent was a request for its task; it answers the question
            # the agent has not asked yet only when the model is sure of it (no LLM call for that).
            choice = decision.choice if decision.sure else None
            by = "embedding" if decision.sure else (
                "embedding (unsure about the message that started the agent: not an answer)" if tentative
                else "embedding (unsure, no LLM to ask: none)")
            frame.data.decided_by[branch.id] = by
            ctx.log.emit("step", frame.agent, action="claims decided by embedding", node=branch.id,
                         choice=choice or prompts.NONE_CHOICE, sure=decision.sure, best=decision.best,
                         score=round(decision.score, 3), margin=round(decision.margin, 3))
            return choice or prompts.NONE_CHOICE
        ctx.log.emit("step", frame.agent, action="embedding unsure, asking the LLM", node=branch.id,
                     best=decision.best, score=round(decision.score, 3), margin=round(decision.margin, 3))
        return None

    def _invoke(self, node: InvokeNode, frame: Frame, ctx: TurnContext, graph: StepGraph) -> Outcome | None:
        args = {a.name: self._eval(a.value, frame, ctx) for a in node.args}
        if node.target_kind == "tool":
            escalated = ctx.state.status == "escalated"
            result = ctx.call_tool(node.target, args, frame.agent, frame)
            if ctx.state.status == "escalated" and not escalated:
                frame.data.node = node.next  # an error handler handed the conversation to a person
                return Outcome.escalate(f"{node.target} failed")
            if node.result and node.result != node.target:
                ctx.state.results[node.result] = ctx.result_of(node.target).model_copy(deep=True)
            if node.bind is not None:
                ctx.assign(node.bind, result.value if result.value is not None else dict(result.args),
                           frame.agent, frame, why=f"result of {node.target}")
            frame.data.node = node.next
            return None
        if node.target_kind == "subflow":
            frame.data.returns.append(node.next)
            key = node.result or node.target
            frame.data.subflow_calls.append(key)
            ctx.clear_status(key)
            frame.data.node = graph.subflows.get(node.target)
            return None
        for name, value in args.items():
            ctx.write(node.target, name, value, frame.agent, why=f"argument of call from {frame.agent}")
        child = new_frame(ctx, node.target)
        if ctx.input.offered_to(frame):
            # The message that started this agent, not yet used: the agent it calls first may use it.
            ctx.input.offer(child, frame.agent)
        return Outcome.call(child)

    def _branch(self, node: BranchNode, frame: Frame, ctx: TurnContext, graph: StepGraph) -> Outcome | None:
        decision = frame.data.decisions.pop(node.id, None)
        by = frame.data.decided_by.pop(node.id, "llm")
        has_claims = any(isinstance(c.condition, ClaimsCondition) for c in node.cases)
        if has_claims and decision is None:
            decision = self._choose_by_embedding(node, [], frame, ctx)
            by = frame.data.decided_by.pop(node.id, "llm")
            if decision is None:
                decision = self._decide_claims(node, frame, ctx)
        for index, case in enumerate(node.cases, start=1):
            cond = case.condition
            if isinstance(cond, ExprCondition):
                value = self._eval(cond.expr, frame, ctx)
                result = is_true(value)
                ctx.log.emit("condition_evaluated", frame.agent, node=node.id, condition=cond.source,
                             result=result, by="expression")
            else:
                result = decision == str(index)
                ctx.log.emit("condition_evaluated", frame.agent, node=node.id, condition=cond.source,
                             result=result, by=by, choice=decision)
            if result:
                frame.data.fallbacks = 0
                frame.data.node = case.target
                return None
        if node.otherwise is not None:
            frame.data.node = node.otherwise
            return None
        if has_claims and frame.data.last_listen:
            return apply_fallback(ctx, frame, reason="no condition matched the user's message")
        frame.data.node = node.next
        return None

    def _decide_claims(self, node: BranchNode, frame: Frame, ctx: TurnContext) -> str:
        agent = ctx.program.agents[frame.agent]
        request = prompts.understand_request(agent, claims_choices(node), [], [], ctx.state.history,
                                             ctx.program.settings.history_window)
        try:
            response = ctx.complete(request, frame.agent)
        except LLMError as exc:
            ctx.log.emit("error", frame.agent, where="condition", message=str(exc))
            return prompts.NONE_CHOICE
        call = response.tool_calls[0].arguments if response.tool_calls else {}
        return str(call.get("choice", prompts.NONE_CHOICE))

    def _jump(self, node: JumpNode, frame: Frame, ctx: TurnContext) -> Outcome | None:
        taken = frame.data.tries.get(node.id, 0)
        if node.tries is not None and taken >= node.tries:
            ctx.log.emit("tries_exhausted", frame.agent, node=node.id, target=node.target_name, tries=node.tries)
            frame.data.node = node.next
            if node.next is None and not frame.data.returns:
                return apply_fallback(ctx, frame, reason=f"gave up after {node.tries} tries", final=True)
            return None
        frame.data.tries[node.id] = taken + 1
        ctx.log.emit("jump", frame.agent, node=node.id, target=node.target_name, taken=taken + 1)
        frame.data.node = node.target
        return None


# ---- static helpers over the step graph ---------------------------------------------


def claims_choices(branch: BranchNode) -> list[tuple[str, list[str]]]:
    return [
        (str(i), case.condition.examples)
        for i, case in enumerate(branch.cases, start=1)
        if isinstance(case.condition, ClaimsCondition)
    ]
