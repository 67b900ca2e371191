"""The flow executor: runs a step graph node by node, waiting at `user` steps."""

from __future__ import annotations

import re
from datetime import date, timedelta
from dataclasses import replace
from typing import Any

from frontdesk.expr import EvalError, is_true
from frontdesk.ir.expr import Call, Compare, ListLit, Lit, Ref
from frontdesk.ir.models import (
    ArgValue,
    AssignNode,
    BranchNode,
    ClaimsCondition,
    EscalateNode,
    ExprCondition,
    FlowAgent,
    Handoff,
    HandoffNode,
    InvokeNode,
    JumpNode,
    ListenNode,
    ReturnNode,
    SayNode,
    StepGraph,
)
from frontdesk.ir.walk import nodes_in, refs_in
from frontdesk.llm.base import ChatMessage, LLMRequest, ToolSchema
from frontdesk.nlu.base import Option
from frontdesk.nlu.matcher import polarity
from frontdesk.nlu.terms import bm25_tokenize
from frontdesk.runtime import orchestration, prompts
from frontdesk.runtime.context import ChildResult, Outcome, TurnContext
from frontdesk.runtime.events import register_event_type
from frontdesk.runtime.grounding import keep_grounded
from frontdesk.runtime.extract import (
    no_answer,
    PATTERN_TYPES,
    check_value,
    extract_values,
    kind_of_name,
    listed_values,
    named_fields,
    named_option,
    says_correction,
    short_answer,
    spans,
    stay_days,
    _by_regex,
    describes_done,
    numbers_for,
    value_named,
)
from frontdesk.runtime.handoff import keep_passed, receiver_context
from frontdesk.runtime.options import claims_options
from frontdesk.runtime.policies import (
    answers_yes_no,
    apply_fallback,
    clear_topic_switch,
    few_words,
    new_frame,
    policy_words,
    setup_frame,
    switch_candidates,
)
from frontdesk.runtime.routing import digression_by_llm
from frontdesk.runtime.rules import active_profiles, effective_profile, rule_moves, step_checkpoint
from frontdesk.runtime.state import GATHERED_BEFORE, Frame
from frontdesk.runtime.steps import Done

MAX_STEPS_PER_RUN = 500
register_event_type("flow_transition", "a flow entered one of its named steps", ("step",))
register_event_type("gather_extraction", "values read from the user's message for the fields asked for",
                    ("fields", "by"))
register_event_type("gather_correction", "the user corrected a value gathered before; fields that depend on it "
                    "were cleared to be asked again", ("fields", "invalidated"))
register_event_type("args_read", "one user message read for the flow's arguments: the values it gave, how "
                    "each was read, and the arguments it gave nothing for", ("args", "by", "unread", "message"))
register_event_type("gather_validation", "a gathered value failed its validation and was cleared", ("field", "kind"))
SHORT_ANSWER_WORDS = 4
HANDOFFS_FIRED = "handoffs_fired"  # frame.locals: the agents a HANDOFF WHEN handed over to in this activation
# text fields whose value is the user's own words, taken whole (up to FREE_TEXT_WORDS) with no model to read them
_FREE_TEXT = re.compile(r"(?:^|_)(description|details?|reason|notes?|comments?|message|issue|problem|summary|"
                        r"explanation|feedback|complaint|request|address|instructions|symptoms?|what_happened)(?:_|$)")
FREE_TEXT_WORDS = 60
# what a typed GATHER field expects, said when nothing in the answer can be read as one
_TYPE_EXPECTED = {
    "date": "I need a date, for example tomorrow or March 15.",
    "datetime": "I need a date and a time, for example tomorrow at 3 pm.",
    "number": "I need a number, for example 2.",
    "integer": "I need a whole number, for example 2.",
    "email": "I need an e-mail address, like name@example.com.",
    "phone": "I need a phone number, like +1 555 123 4567.",
    "boolean": "Please answer yes or no.",
}
_SMALL_TALK = {"hi", "hello", "hey", "hiya", "good", "morning", "afternoon", "evening", "thanks", "thank", "you",
               "ok", "okay", "cheers", "bye", "goodbye", "there"}
_QUESTION_WORDS = {"what", "whats", "where", "when", "why", "who", "how", "which", "can", "could", "would", "do",
                   "does", "is", "are", "will", "should"}
DEFAULT_VALIDATION_RETRIES = 3
FLOW_LIMIT_HANDLERS = ("max_flow_iterations", "flow_error", "default", "unknown_error")
# what a model writes for a value the user did not give
_NO_VALUE = {"", "none", "null", "unknown", "n/a", "na", "not given", "not provided", "not mentioned"}


def graph_of(ctx: TurnContext, frame: Frame) -> StepGraph | None:
    agent = ctx.program.agents[frame.agent]
    if frame.graph == "setup":
        return agent.setup
    return agent.graph if isinstance(agent, FlowAgent) else None


# a message that opens with a bare yes or no, and a question that asks for one
_BARE_YES_NO = re.compile(r"(?i)^\W*(?:yes|yeah|yep|yup|no|nope|nah)\b")
_YES_NO_QUESTION = re.compile(r"(?i)^\W*(?:\w+[,.!]\s+)?(?:would|do|does|did|is|are|was|were|can|could|shall|should|"
                              r"will|have|has|may|want|need)\b")
# a question that asks for something (not a yes-or-no one, which may well answer: "Could it be Tuesday?")
_WH_QUESTION = re.compile(r"(?i)^\W*(?:\w+[,.!]\s+)?(?:what|whats|what's|where|when|why|who|how|which)\b")


def _contradicts(message: str, choice: str, options) -> bool:
    """Whether a message that says yes or no ("No, only that book") chose a case whose examples say the
    opposite (every example with a yes or no in it)."""
    said = polarity(message)
    option = next((o for o in options if o.key == choice), None)
    if not said or option is None:
        return False
    signs = {polarity(example) for example in option.examples} - {0}
    return signs == {-said}


# A yes or no of at most this many words, no question in it, answers a claims question offline by its sign.
POLARITY_ANSWER_WORDS = 8
# "That's everything, thanks." to "anything else?": a no, said as a closing
_CLOSING_WORDS = r"(?:(?:that'?s|that is|it'?s)\s+(?:all|everything|it)|nothing\s+else)"
_CLOSING = re.compile(rf"^{_CLOSING_WORDS}\b", re.IGNORECASE)


# A reply that is nothing but a yes or no, or a no said as a closing: "No.", "Yes please.", "No thanks,
# that's all.", "No, that's everything I need.", "That's it, thanks." Nothing in it for a model to read.
_PLAIN_ANSWER = re.compile(
    r"^\W*(?:(?:yes|yeah|yep|no|nope|nah)(?:\s+(?:thanks|thank you|please))?\W*"
    r"|(?:(?:no|nope|nah)(?:\s+(?:thanks|thank you))?[\s,.!-]+)?"
    + _CLOSING_WORDS
    + r"(?:\s+(?:i\s+(?:want|need)|for\s+(?:now|today|me)))?(?:[\s,.!-]+(?:thanks|thank you))?\W*)$",
    re.IGNORECASE)


def _answers_by_polarity(message: str, options) -> str | None:
    """The one case whose examples say the message's yes or no (every example with a yes or no in it
    saying the same), or "none" when every case says the opposite ("No thanks." at "Would you like a new
    card?" whose one case is "Yes, send me a new card"); None when the message says neither, asks
    something, is long, or no single case fits."""
    said = polarity(message) or (-1 if _CLOSING.match(message.strip()) else 0)
    if not said or "?" in message or len(message.split()) > POLARITY_ANSWER_WORDS:
        return None
    signs = [{polarity(example) for example in o.examples} - {0} for o in options]
    fitting = [o.key for o, sign in zip(options, signs) if sign == {said}]
    if not fitting and signs and all(sign == {-said} for sign in signs):
        return prompts.NONE_CHOICE
    return fitting[0] if len(fitting) == 1 else None


# A no whose other words add nothing for a model to read: no number, nothing asked beside it ("No, only that
# book.", "No, I don't need a new card."; not "No, but block my other card too"). (_answers_by_polarity,
# which reads it, takes no question and no long reply.)
_ADDS_SOMETHING = re.compile(r"\d|\b(?:but|and|also|too|as well|instead|actually|rather|though|except|plus)\b",
                             re.IGNORECASE)


def _bare_no(message: str) -> bool:
    return polarity(message) < 0 and not _ADDS_SOMETHING.search(message)


def _names_no_case(message: str, cases) -> bool:
    """Whether the words a message shares with the cases' examples are only words every case has ("Please
    block my card." between "My debit card" and "My credit card"): it names nothing that tells them
    apart. A message with no word in common with any case may say one in other words: not this."""
    if len(cases) < 2:
        return False
    said, *examples = (set(terms) for terms in bm25_tokenize([message] + [" ".join(o.examples) for o in cases]))
    shared = [said & words for words in examples]
    every_case = set.intersection(*examples)
    return any(shared) and all(words <= every_case for words in shared)


class FlowExecutor:
    def __init__(self) -> None:
        # (session id, frame id) -> why its next step transition happens (set and used in the same turn)
        self._reasons: dict[tuple[str, str], str] = {}
        # (session id, frame id) -> the GATHER question not yet said: the message that started the agent
        # is read first (set and used in the same turn)
        self._deferred: dict[tuple[str, str], str] = {}
        # (session id, frame id) -> the turn whose message was read for the flow's arguments: a message is
        # read once, also when the flow comes back to a question in the same turn
        self._args_read: dict[tuple[str, str], int] = {}

    def run(self, frame: Frame, ctx: TurnContext) -> Outcome:
        outcome = self._run(frame, ctx)
        if frame.graph == "main" and (outcome.kind == "done" or (outcome.kind == "transfer" and not outcome.resume)):
            remember_gathered(frame, ctx)  # the activation ended: its answers belong to it
        return outcome

    def _run(self, frame: Frame, ctx: TurnContext) -> Outcome:
        graph = graph_of(ctx, frame)
        if graph is None:
            return Outcome.done()
        if not frame.started:
            frame.started = True
            frame.data.node = graph.entry
            agent = ctx.program.agents[frame.agent]
            if frame.graph == "main":
                forget_gathered(frame, ctx)  # an ABL agent started again gathers afresh
            if frame.graph == "main" and agent.setup is not None:
                return Outcome.call(setup_frame(ctx, agent))  # its start steps first (ABL ON_START)
        if frame.reask:
            self._ask_again(frame, ctx, graph)
        for _ in range(MAX_STEPS_PER_RUN):
            at_step = frame.data.node in (None, graph.complete) or frame.data.node in graph.labels.values()
            due = self._handoff_due(frame, ctx) if at_step else None  # between two steps
            if due is not None:
                return self._pass_on_rest(frame, ctx, due)
            if frame.data.node is None:
                if frame.data.returns:
                    self._end_subflow(frame, ctx, "success", "")
                    continue
                return self._pass_on_rest(frame, ctx, Outcome.done())
            node = graph.nodes[frame.data.node]
            if node.id in graph.labels.values():
                if graph.exits and self._skipped(node.id, frame, ctx, graph):
                    continue
                if step_checkpoint(frame, ctx, node.id):  # CONSTRAINTS at the step boundary (runtime/rules)
                    continue
                stopped = self._enter_step(node.id, frame, ctx)
                if stopped is not None:
                    return stopped
            outcome = self._step(node, frame, ctx, graph)
            if outcome is not None:
                return self._pass_on_rest(frame, ctx, outcome)
        ctx.log.emit("error", frame.agent, where="flow",
                     message=f"the flow ran {MAX_STEPS_PER_RUN} steps without waiting for the user; "
                             "is there a loop without a `user` step or `tries`?")
        return Outcome.done("error", "flow step limit reached")

    def _handoff_due(self, frame: Frame, ctx: TurnContext) -> Outcome | None:
        """A HANDOFF the agent declares with a WHEN written as an expression (`wants_redelivery == true`)
        hands the conversation over as soon as the WHEN holds, between two steps, once per activation;
        with RETURN: true the flow comes back where it was."""
        if frame.graph != "main":
            return None
        fired = frame.locals.setdefault(HANDOFFS_FIRED, [])
        for declared in getattr(ctx.program.agents[frame.agent], "handoffs", []):
            if declared.condition is None or declared.agent in fired or declared.agent not in ctx.program.agents:
                continue
            if not ctx.holds(declared.condition, frame.agent, frame, where="HANDOFF WHEN"):
                continue
            fired.append(declared.agent)
            ctx.log.emit("condition_evaluated", frame.agent, condition=declared.condition.source, result=True,
                         by="expression", why="HANDOFF WHEN")
            node = HandoffNode(id=f"{frame.data.node or 'end'}.handoff_when", target=declared.agent,
                               resume=declared.resume, summary=declared.summary, history=declared.history,
                               args=[ArgValue(name=p.split(".")[-1], value=Ref(scope="session", name=p.split(".")[-1]))
                                     for p in declared.passes],
                               next=frame.data.node)
            return self._handoff(node, frame, ctx)
        return None

    def _enter_step(self, step: str, frame: Frame, ctx: TurnContext) -> Outcome | None:
        """The flow enters a named step: a `flow_transition` (with why, when it is not the step's
        sequence) and, when the agent's policy sets a `step_limit` (ABL max_flow_iterations, 7.11), one
        more of the session's transitions; past the limit the agent stops with an error event and its
        ON_ERROR reply, or a fallback."""
        reason = self._reasons.pop((ctx.state.session_id, frame.id), None)
        agent = ctx.program.agents[frame.agent]
        rules, policy = agent.rules, agent.policy
        if frame.data.step != step or reason:
            ctx.log.emit("flow_transition", frame.agent, step=step, previous=frame.data.step,
                         **({"reason": reason} if reason else {}))
            if policy.checks_answers and frame.data.step != step:
                ctx.state.system.pop("_validation_retries", None)  # counts are per step (8.8)
            frame.data.step = step
        limit = policy.step_limit
        if limit is None:
            return None
        count = int(ctx.state.system.get("_flow_iterations", 0)) + 1
        ctx.state.system["_flow_iterations"] = count
        if count <= limit:
            return None
        ctx.state.system["_flow_iterations"] = 0  # reported once; a new start gets a new budget
        ctx.log.emit("error", frame.agent, where="flow", kind="max_flow_iterations", step=step, limit=limit,
                     message=f"the flow made more than {limit} step transitions in this session "
                             "(EXECUTION max_flow_iterations); it was stopped")
        handler = next((h for name in FLOW_LIMIT_HANDLERS for h in rules.on_error if h.on == name), None)
        if handler is not None and handler.action.respond is not None:
            ctx.say(frame.agent, ctx.render(handler.action.respond, frame.agent, frame), frame)
        else:
            ctx.say(frame.agent, "Sorry, I got stuck going round in circles and can't go on with this request.",
                    frame)
        if handler is not None and handler.action.escalate:
            return Outcome.escalate(handler.action.escalate_reason or "max_flow_iterations")
        return Outcome.done("error", "max_flow_iterations reached")

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
            listen = graph.nodes.get(node.next) if node.next else None
            if node.asks is not None and isinstance(listen, ListenNode) and listen.extracts and not frame.waiting \
                    and ctx.input.offered_to(frame):
                # a GATHER question, and the message that started the agent is still unread: it may
                # already give the field ("I want to pay 100 EUR"), so it is read before the question
                # is asked; the question is said only if it does not (see _listen)
                self._deferred[(ctx.state.session_id, frame.id)] = node.id
                frame.data.node = node.next
                return None
            if frame.data.last_say == node.id and node.asks is not None \
                    and ctx.program.agents[agent].policy.system_variables:
                # a GATHER question asked again (8.8 _clarification_count)
                ctx.state.system["_clarification_count"] = int(ctx.state.system.get("_clarification_count", 0)) + 1
            text = node.variants.get(ctx.state.channel, node.text) if node.variants else node.text
            said = self._profile_prompt(node, frame, ctx)
            ctx.say(agent, said if said is not None else ctx.render(text, agent, frame), frame,
                    actions=self._actions(node))
            frame.data.last_say = node.id
            frame.data.tool_spoke = False
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
        target = ctx.program.agents.get(node.target)
        passed = []
        for name, value in args.items():
            if value is None:
                continue
            # a name the agent taking over does not declare goes where its policy keeps such names
            # (ABL: the session's namespace)
            declares = target is not None and name in target.arg_names()
            shared = target.policy.unbound_scope if target is not None and not declares else None
            scope = shared or node.target
            ctx.write(scope, name, value, frame.agent, why=f"CONTEXT pass of {frame.agent}'s handoff")
            passed.append(name)
        summary = ctx.render(node.summary, frame.agent, frame) if node.summary is not None else ""
        ctx.log.emit("step", frame.agent, action="handoff", agent=node.target, resume=node.resume,
                     **({"summary": summary} if summary else {}))
        frame.data.node = node.next
        child = new_frame(ctx, node.target)
        if ctx.program.agents[frame.agent].policy.handoff_context:  # CONTEXT: what the agent taking over sees
            receiver_context(ctx, frame.agent, Handoff(agent=node.target, resume=node.resume,
                                                       passes=list(args), summary=node.summary,
                                                       history=node.history), child, passed)
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
        if frame.data.tool_spoke and frame.last_prompt and frame.waiting:
            # a tool the flow called asked the question it waits on (it listed the cards to choose from):
            # its last line is said again, not the step said before the call
            ctx.say(frame.agent, frame.last_prompt, frame)
        elif isinstance(node, SayNode) and frame.waiting:
            said = FlowExecutor._profile_prompt(node, frame, ctx)
            ctx.say(frame.agent, said if said is not None else ctx.render(node.text, frame.agent, frame), frame,
                    actions=FlowExecutor._actions(node))
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
        deferred = self._deferred.pop((ctx.state.session_id, frame.id), None)
        outcome = self._listen_to(node, frame, ctx, graph)
        if deferred is not None and outcome is not None and outcome.kind == "wait" and frame.waiting \
                and frame.data.node == node.id:
            # the message that started the agent did not give the field: now the question is asked
            ask = graph.nodes[deferred]
            said = self._profile_prompt(ask, frame, ctx)
            text = ask.variants.get(ctx.state.channel, ask.text) if ask.variants else ask.text
            ctx.say(frame.agent, said if said is not None else ctx.render(text, frame.agent, frame), frame)
            frame.data.last_say = ask.id
        elif deferred is not None:
            ctx.log.emit("step", frame.agent, action="question not asked: the message that started the agent "
                                                   "answers it", node=deferred)
        return outcome

    def _listen_to(self, node: ListenNode, frame: Frame, ctx: TurnContext, graph: StepGraph) -> Outcome | None:
        frame.data.last_listen = node.id
        policy = ctx.program.agents[frame.agent].policy
        if not frame.waiting and node.id in frame.data.extracted:
            if policy.reask == "reject":
                self._reject_earlier_answer(node, frame, ctx)
            else:  # a GATHER asks again for what is missing; validation rejects values, not re-asking
                frame.data.extracted.pop(node.id)
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
        if node.corrects and not tentative and policy.corrections and not self._own_case_takes(node, frame, ctx, graph):
            corrected, outcome = self._correct(node, frame, ctx, graph)
            if corrected:
                frame.waiting = False
                return outcome
        before = ctx.values(frame.agent) if policy.checks_answers else {}
        outcome, answered = self._understand(node, frame, ctx, graph, tentative)
        if policy.checks_answers:
            new = {k: v for k, v in ctx.values(frame.agent).items() if v is not None and before.get(k) is None}
            gave_up = self._validate(new, node, frame, ctx)
            self._note_gathered(frame, ctx)
            if gave_up is not None:
                if tentative:
                    inp.take(frame, "answer given before the question")
                frame.waiting = False
                return gave_up if isinstance(gave_up, Outcome) else None
        if not tentative and outcome is None and node.classifies is None and node.extracts \
                and all(ctx.values(frame.agent).get(n) is None for n in node.extracts) and policy.digressions:
            # A question the message gave nothing for (a GATHER field): the user may have turned
            # to another member of the supervisor (a digression); the thread waits and resumes here.
            target = clear_topic_switch(ctx, frame, inp.text or "")
            if target is None and ctx.understanding is None:  # no local model: the LLM reads it, if any
                target = digression_by_llm(ctx, frame, inp.text or "")
            if target is not None:
                frame.waiting = True
                inp.give_back(frame, f"the user turned to {target}")
                return Outcome.switch(target)
        if not tentative and outcome is None and policy.digressions and not node.extracts \
                and self._dispatch_unmatched(node, frame, ctx, graph):
            # An ON_INPUT question (a yes/no confirmation) whose cases the message matches none of: the
            # user may have turned to another member of the supervisor ("what's my balance?" at "Shall
            # I go ahead?"); the thread waits and resumes here, asking again. Plain answers, and any
            # message an ON_INPUT case matches, stay with the flow.
            target = clear_topic_switch(ctx, frame, inp.text or "")
            if target is None and ctx.understanding is None:
                target = digression_by_llm(ctx, frame, inp.text or "")
            if target is not None:
                frame.waiting = True
                inp.give_back(frame, f"the user turned to {target}")
                return Outcome.switch(target)
        if not tentative and outcome is None and node.extracts and policy.digressions \
                and all(ctx.values(frame.agent).get(n) is None for n in node.extracts):
            # a code only another member's field takes ("it's FB10001" at "Which island?"): the user
            # turned to that member; the thread waits and resumes here
            target = self._code_for_another(frame, ctx, inp.text or "")
            if target is not None:
                frame.waiting = True
                inp.give_back(frame, f"the user turned to {target}")
                ctx.log.emit("route_decided", frame.agent, agent=target, by="a code only its field takes",
                             reason="the user changed topic instead of answering")
                return Outcome.switch(target)
        if not tentative and outcome is None and policy.checks_answers and node.extracts and not new:
            gave_up = self._unreadable_answer(node, frame, ctx)
            if gave_up is not None:
                frame.waiting = False
                return gave_up if isinstance(gave_up, Outcome) else None
        if tentative and not answered:
            ctx.log.emit("step", frame.agent, action="the message that started the agent does not answer "
                                                   "its question; waiting", node=node.id)
            frame.data.decisions.clear()
            frame.data.decided_by.clear()
            frame.waiting = True
            return Outcome.wait()
        if tentative:
            inp.take(frame, "answer given before the question")
        # a guardrail blocked the message (Outcome.wait): the step still waits for its answer
        frame.waiting = outcome is not None and outcome.kind == "wait"
        if outcome is not None:
            return outcome
        frame.data.node = node.next
        return None

    def _dispatch_unmatched(self, node: ListenNode, frame: Frame, ctx: TurnContext, graph: StepGraph) -> bool:
        """Whether the ON_INPUT dispatcher after this listen step matches none of its IF cases for the
        message (only its ELSE, or nothing, would run), read purely on the state as it is; False when
        the step has no such dispatcher or one of its intents (a DIGRESSION, a SUB_INTENT) took the
        message."""
        if node.classifies is not None:
            if frame.data.decisions.get(node.classifies) not in (None, prompts.NONE_CHOICE):
                return False
            digress = graph.nodes.get(node.classifies)
            following = digress.otherwise if isinstance(digress, BranchNode) else None
        else:
            following = node.next
        seen = 0
        while following is not None and seen < 5:  # past the no-op joins to the dispatcher
            current = graph.nodes.get(following)
            if isinstance(current, AssignNode) and not current.assignments:
                following, seen = current.next, seen + 1
                continue
            break
        branch = graph.nodes.get(following) if following is not None else None
        if not isinstance(branch, BranchNode) or not branch.cases or \
                not all(isinstance(c.condition, ExprCondition) for c in branch.cases):
            return False
        return not any(is_true(self._eval(c.condition.expr, frame, ctx)) for c in branch.cases)

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
        policy = ctx.program.agents[frame.agent].policy
        offline = policy.offline_understanding
        # the flow's other arguments this message may give (MICA reads them all from every message)
        others = self._args_not_asked(node, frame, ctx, graph) if policy.args_from_messages else []
        read_before = self._args_read.get((ctx.state.session_id, frame.id)) == ctx.state.turn
        # a message that tells of something the user already did ("I booked it last week, it's the one to
        # Mull"), given back by the agent whose question it did not answer, describes that existing thing:
        # the agent it now starts takes no values from it (docs/runtime.md, "Grounded values")
        described = describes_done(ctx.input.text or "")
        if tentative and described and ctx.input.passed:
            extract, others = [], []
        if policy.args_from_messages:
            if len(self._args_read) > 10000:  # frames long gone
                self._args_read.clear()
            self._args_read[(ctx.state.session_id, frame.id)] = ctx.state.turn
            if read_before:
                others = []  # this message was read for them already
        # an intent (ABL DIGRESSIONS, SUB_INTENTS) the message names in so many words
        choice = self._choose_by_words(branch, frame, ctx) if branch and offline and not tentative else None
        if extract and (node.strategy != "llm" or not ctx.llm_classifies):
            by_pattern = self._extract_by_pattern(extract, frame, ctx)
            if by_pattern and policy.checks_answers and not policy.args_from_messages:
                self._volunteered(node, frame, ctx)
            # (no model able to read it: none, or a small local one that would invent, `llm_classifies`)
            if not by_pattern and not tentative and choice is None and (node.strategy == "pattern" or ctx.llm is None
                                                                          or not ctx.llm_classifies):
                by_pattern = self._whole_answer(extract, frame, ctx)
            extract = [] if node.strategy == "pattern" else [n for n in extract if n not in by_pattern]
        read: dict[str, Any] = {}
        if policy.args_from_messages and not ctx.llm_classifies and (extract or others) and not read_before:
            # no model that can read them: the values the message gives by kind, listed value or name
            read = self._read_args(extract + others, node, frame, ctx, answer=not tentative)
            by_pattern = {**by_pattern, **read}
            extract, others = [n for n in extract if n not in by_pattern], []
        # the step's question was answered: a value it asks for was given (other arguments do not count).
        # A value read so from the message that started the agent after it asked its question is kept,
        # but the question still waits for its answer (as MICA: the message is read, the `user` step waits)
        asked_first = tentative and frame.data.last_say is not None
        gave = any(n in node.extracts and not (asked_first and n in read) for n in by_pattern)
        own = list(extract)  # the step's own arguments still to read
        if node.extracts or branch is None or branch.otherwise is None:
            # (a claims step with no `else:` reads them too: an answer that gives one is no fallback)
            # the model reads the other arguments in the call that reads the step's own, or in a call of
            # their own; a call that only decides the step's claims case asks only that (the IR's listen)
            extract += [n for n in others if n not in extract]
        if branch is None and not extract:
            return None, (not tentative) or gave
        switches = switch_candidates(ctx, frame) if branch and not tentative else []
        # ADL: the program's entry flow with an exit policy ends the conversation when the user does
        entry_exit = not tentative and not gave and policy.args_from_messages and ctx.state.stack[:1] == [frame] \
            and ctx.program.agents[frame.agent].exit is not None and (branch is not None or bool(node.extracts))
        if entry_exit and self._typed_goodbye(branch, ctx):
            return self._user_ends(frame, ctx, "a goodbye in so many words"), True
        if branch is None and not tentative and not gave and policy.args_from_messages and node.extracts:
            # ADL: the answer to a plain `user` step may be no answer at all but another topic or a goodbye
            # (MICA's extraction reads `quit` from every message; the paper's flow "deactivates itself")
            leaving = self._leaves_flow(frame, ctx)
            if leaving is not None:
                return leaving, True
            if ctx.llm_classifies:
                switches = switch_candidates(ctx, frame)
                router = ctx.started_by_router(frame)
                if switches and router is not None:
                    # the model may also say the user is leaving: the ensemble then judges the goodbye
                    switches = orchestration.with_exit(router, switches)
        if entry_exit and ctx.llm_classifies:  # the model may say the user is leaving
            switches = switches + [orchestration.exit_option()]
        if branch and choice is None:
            members = [a for a in switches if a.name != orchestration.EXIT_CHOICE]  # agents of the program
            choice = self._choose_by_embedding(branch, members, frame, ctx, tentative)
            if choice is not None and not own and extract and not tentative and policy.args_from_messages \
                    and ctx.llm_classifies:
                # the case was decided without a model and the step reads no value of its own: no model call
                # of its own looks for other arguments the reply might volunteer ("My debit card." at "which
                # card?" found none); each is asked at its own step (issue 29). (Reading them by kind instead
                # took "28th, after" for a payment day from "The 28th, after I get paid.")
                ctx.log.emit("step", frame.agent, action="no call for values the reply might volunteer",
                             node=node.id, choice=choice, unread=extract)
                extract = []
        ask_choice = (branch is not None or bool(switches)) and choice is None and (ctx.llm_classifies or not tentative) \
            and not (tentative and ctx.input.used)
        if offline and (not ctx.llm_classifies or (node.strategy == "pattern" and node.extracts)):
            # a flow with no model able to judge (none, or the small local one, which would invent
            # values), or a GATHER with STRATEGY: pattern ("no LLM calls"), reads what patterns and
            # words can
            if ask_choice and branch is not None:
                choice = prompts.NONE_CHOICE
                frame.data.decided_by[branch.id] = "words (no LLM: none)"
            ask_choice, extract = False, []
        extracted: dict[str, Any] = {}
        call: dict[str, Any] = {}
        if (ask_choice or extract) and (ctx.llm is not None or not tentative):
            agent = ctx.program.agents[frame.agent]
            guards = orchestration.unchecked_guards(ctx) if ask_choice and switches else []
            request = prompts.understand_request(
                agent, claims_choices(branch) if ask_choice and branch else [], switches if ask_choice else [], extract,
                ctx.state.history, ctx.program.settings.history_window, guards)
            call = ctx.call_args(request, frame.agent, "understand") or {}
            if ask_choice and branch is not None \
                    and ctx.embedding_doubts("claims", frame.agent, str(call.get("choice"))) is not None:
                # the embedding model reads the message as another case by far: the LLM is asked once more
                call = ctx.call_args(prompts.rechecked(request, str(call.get("choice"))), frame.agent,
                                     "understand") or call
            if guards and orchestration.merged_verdict(ctx, frame, call, "choice", "merged into the understand call"):
                return Outcome.wait(), True  # the flow keeps waiting at its question
            answer = call.get("args")
            if policy.args_from_messages:
                answer = self._checked(answer, extract, frame, ctx)
            extracted = self._apply_extracted(answer, extract, frame, ctx)
            if policy.args_from_messages and extract and ctx.llm is not None:
                self._note_args_read(extracted, {n: "model" for n in extract}, extract, frame, ctx)
            gave = gave or any(n in node.extracts for n in extracted)
            if ask_choice:
                choice = str(call.get("choice", prompts.NONE_CHOICE))
                if branch is not None:
                    frame.data.decided_by[branch.id] = "llm"
        if branch is not None and policy.args_from_messages and (read or extracted):
            # the values this message gave (by patterns or by the model): an answer even if no case holds
            frame.data.decided_by[f"{branch.id}:gave"] = ",".join(sorted({*read, *extracted}))
        if branch is None:
            target = choice[7:] if choice and choice.startswith("switch:") else None
            if target == orchestration.EXIT_CHOICE and not gave and entry_exit:
                return self._user_ends(frame, ctx, "understand (llm)"), True
            if target == orchestration.EXIT_CHOICE and not gave:
                ctx.input.give_back(frame, "the user is leaving")
                ctx.log.emit("step", frame.agent, action="the user left the flow", by="understand (llm)")
                return Outcome.hand_back("the user is leaving"), True
            if target in {s.name for s in switches} and not gave:
                # the message gave no answer and is for another member: the flow waits at its question
                frame.waiting = True
                ctx.input.give_back(frame, f"the user turned to {target}")
                ctx.log.emit("route_decided", frame.agent, agent=target, by="understand (llm)",
                             reason="the user changed topic instead of answering")
                return Outcome.switch(target), True
            return None, gave
        choice = choice or prompts.NONE_CHOICE
        if entry_exit and choice == f"switch:{orchestration.EXIT_CHOICE}":
            return self._user_ends(frame, ctx, f"understand ({frame.data.decided_by[branch.id]})"), True
        if choice.startswith("switch:") and choice[7:] in {s.name for s in switches}:
            if described:
                # the message describes something already done and turns to another agent: what it
                # said is about that thing, not this flow's answer
                self._withdraw({**by_pattern, **read, **extracted}, frame, ctx)
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

    @staticmethod
    def _code_for_another(frame: Frame, ctx: TurnContext, text: str) -> str | None:
        """An answer that gives nothing its question asks but a code (a value with a digit) that only one
        other member of the supervisor gathers, by a field whose anchored validation pattern takes it
        ("it's FB10001" at "Which island?", where Booking_Changes' booking_code is ^FB\\d{5}$): the user
        turned to that member. None when this agent's own fields take it too, or no one or several do."""
        def takes(agent) -> bool:
            for field in ctx.program.rules_for(agent.name).gather:
                for check in field.validations:
                    rule = check.rule or ""
                    if check.kind == "pattern" and rule.startswith("^") and rule.endswith("$"):
                        found = _by_regex(text, rule)
                        if found is not None and re.search(r"\d", found):
                            return True
            return False

        own = ctx.program.agents[frame.agent]
        if not re.search(r"\d", text) or takes(own):
            return None
        # every member, not a shortlist: "exactly one other member takes it" must hold among all of them
        others = [a.name for a in switch_candidates(ctx, frame, every=True) if takes(a)]
        return others[0] if len(others) == 1 else None

    def _volunteered(self, node: ListenNode, frame: Frame, ctx: TurnContext) -> dict[str, Any]:
        """A GATHER answer that gives what its question asks and goes on to give the agent's later fields
        ("It's POL-CD654321, another car crashed into mine yesterday": the policy number, and the date and
        the kind of incident asked next): those typed values (a date, a number, a listed value or one of
        its synonyms, a validation pattern's match; not a yes/no, not a free text) are read as well, and
        their questions are not asked. A message that answers nothing of its question gives no such
        values: a description of something else is no answer for fields it was not asked about."""
        values = ctx.values(frame.agent)
        agent = ctx.program.agents[frame.agent]
        later = [n for n, f in self._fields(frame, ctx).items() if n not in node.extracts and values.get(n) is None
                 and f.type != "boolean" and not f.infer]
        if not later:
            return {}
        found = self._pattern_values(later, frame, ctx, ctx.input.text or ctx.last_user_message())
        kinds = {a.name: a.type for a in agent.args}
        found = {n: v for n, v in found.items() if kinds.get(n) != "boolean" and not isinstance(v, bool)}
        if found:
            ctx.log.emit("step", frame.agent, action="later fields the answer also gave", args=found)
        return self._apply_extracted(found, later, frame, ctx, by_pattern=True)

    @staticmethod
    def _withdraw(values: dict[str, Any], frame: Frame, ctx: TurnContext) -> None:
        """Unset the values this message wrote for the flow (they were not its answer after all)."""
        for name, value in values.items():
            if ctx.values(frame.agent).get(name) == value:
                ctx.write(frame.agent, name, None, frame.agent,
                          why="withdrawn: the message describes something already done and turns to another agent")
        frame.data.extracted.pop(frame.data.last_listen, None)

    @staticmethod
    def _typed_goodbye(branch: BranchNode | None, ctx: TurnContext) -> bool:
        """The message is a goodbye in so many words ("thanks, bye") and no claims case of the step
        names it (a case "Bye" is the step's own answer)."""
        from frontdesk.runtime.routing import typed_goodbye

        text = ctx.input.text or ""
        if not typed_goodbye(text):
            return False
        def words(said: str) -> list[str]:
            return re.findall(r"[a-z0-9']+", said.lower())

        examples = [e for _, found in (claims_choices(branch) if branch is not None else []) for e in found]
        return not any(words(str(e)) == words(text) for e in examples)

    @staticmethod
    def _user_ends(frame: Frame, ctx: TurnContext, by: str) -> Outcome:
        """The user ends the conversation at a question of the program's entry flow, which has an exit
        policy: its exit message is said (a text is followed as a strategy, see policy_words) and the
        session ends, as an ensemble's exit does."""
        from frontdesk.runtime.routing import ENDED_BY_USER

        agent = ctx.program.agents[frame.agent]
        ctx.input.state = "taken"
        ctx.log.emit("step", frame.agent, action="exit policy", policy=agent.exit.shown(), by=by,
                     reason=ENDED_BY_USER)
        ctx.say(frame.agent, policy_words(ctx, frame.agent, agent.exit, "exit"), frame)
        return Done(status="success", message=ENDED_BY_USER, ends_conversation=True)

    @staticmethod
    def _leaves_flow(frame: Frame, ctx: TurnContext) -> Outcome | None:
        """A goodbye typed at a plain `user` step of a member of an ensemble that can end the conversation
        (it has an exit policy): the message goes back to the ensemble, which says goodbye and ends the
        session; the flow is left (MICA: the extraction reads `quit`, the flow fails, the ensemble's
        routing answers `[Exit]`). None otherwise."""
        router = ctx.started_by_router(frame)
        if router is None or router.exit is None or not FlowExecutor._typed_goodbye(None, ctx):
            return None
        ctx.input.give_back(frame, "the user said goodbye")
        ctx.log.emit("step", frame.agent, action="the user left the flow with a goodbye", message=ctx.input.text)
        return Outcome.hand_back("the user said goodbye")

    @staticmethod
    def _pattern_values(names: list[str], frame: Frame, ctx: TurnContext, message: str) -> dict[str, Any]:
        """Values of `names` the message gives that patterns can read (e-mail, phone, number, yes/no,
        date, one of a field's options, a field's validation pattern); nothing is written."""
        agent = ctx.program.agents[frame.agent]
        gathered = FlowExecutor._fields(frame, ctx)
        types = {a.name: gathered[a.name].type if a.name in gathered else a.type for a in agent.args if a.name in names}
        choices = {f.name: _choices(f, agent) for f in gathered.values() if f.name in names}
        options = {n: c[0] for n, c in choices.items() if c[0]}
        synonyms = {n: c[1] for n, c in choices.items() if c[1]}
        patterns = {f.name: v.rule for f in gathered.values() if f.name in names
                    for v in f.validations if v.kind == "pattern" and v.rule}
        fields = {n: types[n] for n in names if n in types and (types[n] in PATTERN_TYPES or n in options
                                                                 or n in patterns)}
        if not fields:
            return {}
        found = extract_values(message, fields, ctx.eval_env.clock(), options, patterns, synonyms)
        return FlowExecutor._stay_end(found, [n for n in names if types.get(n) == "date"], frame, ctx, message)

    @staticmethod
    def _stay_end(found: dict[str, Any], dates: list[str], frame: Frame, ctx: TurnContext,
                  message: str) -> dict[str, Any]:
        """"from tomorrow for 2 nights": a start date with a length of stay gives the end date. With two
        date fields asked in order (check-in, check-out), the second is the first plus the nights, days
        or weeks the message says (read only when the message gives no second date itself)."""
        if len(dates) < 2 or found.get(dates[1]) is not None:
            return found
        days = stay_days(message)
        start = found.get(dates[0]) or ctx.values(frame.agent).get(dates[0])
        if not days or not isinstance(start, str):
            return found
        try:
            begin = date.fromisoformat(start[:10])
        except ValueError:
            return found
        return {**found, dates[1]: (begin + timedelta(days=days)).isoformat()}

    @staticmethod
    def _args_not_asked(node: ListenNode, frame: Frame, ctx: TurnContext, graph: StepGraph) -> list[str]:
        """The agent's arguments, not yet set, that this step's question does not ask for and that the
        flow does not compute itself (a `set` step other than a claims case's literal, a call's bound
        result): values the user may give at any message."""
        values = ctx.values(frame.agent)
        # (a tool's returned value is not counted: every tool is taken to return any argument of its
        # caller, which would leave nothing to read in a flow that calls one; a value it has set is
        # set, and is not asked for)
        own: set[str] = set()
        # a literal a claims case records first (`then: [set: {book_title: "all"}]`) is one way to fill
        # the argument: the user may give the value too; any other `set:` is the flow's own value
        case_sets = {case.target for other in graph.nodes.values() if isinstance(other, BranchNode)
                     for case in other.cases if isinstance(case.condition, ClaimsCondition)}
        for other in graph.nodes.values():
            if isinstance(other, AssignNode):
                own.update(a.target.name for a in other.assignments if a.target.scope == frame.agent
                           and not (other.id in case_sets and isinstance(a.value, Lit)))
            elif isinstance(other, InvokeNode) and other.bind is not None and other.bind.scope == frame.agent:
                own.add(other.bind.name)
        return [a.name for a in ctx.program.agents[frame.agent].args
                if a.name not in node.extracts and a.name not in own and values.get(a.name) is None]

    def _read_args(self, names: list[str], node: ListenNode, frame: Frame, ctx: TurnContext,
                   answer: bool = True) -> dict[str, Any]:
        """With no model to read it, the values of `names` the message gives, written like extracted
        ones: by the kind the argument's name says (a phone number, an e-mail address, a day, a number, a
        code with a digit), as one of the values listed for it (compared with in a condition, listed in
        its description, or listed by the question this step answers), after its name ("genre=mystery",
        "my name is Marta"). Nothing is guessed, and a free text is not taken whole ("Marta Ruiz" as
        a name), except for an argument that asks for the user's own words (a reason, a description):
        the whole `answer` to a question that asks only for it, or one clause beside a value read from
        its own clause. An argument the message does not give this way stays unset."""
        agent = ctx.program.agents[frame.agent]
        message = ctx.input.text or ctx.last_user_message()
        typed = {a.name for a in agent.args if a.type in PATTERN_TYPES} | set(self._fields(frame, ctx))
        asked = [n for n in node.extracts if n in names]
        question = self._question_of(node, frame, ctx)
        now = ctx.eval_env.clock()
        found: dict[str, Any] = {}
        how: dict[str, str] = {}
        taken: dict[str, int] = {}
        listed: dict[str, list[str]] = {}
        for name in names:
            if name in typed:
                continue  # a typed field: read by its type (_extract_by_pattern)
            listed[name] = _listed_values(name, agent, graph_of(ctx, frame), question if asked == [name] else "")
            value, way = (named_option(message, listed[name]), "listed value") if listed[name] else (None, "")
            kind = kind_of_name(name)
            if value is None and kind is not None:
                # a number counts what the argument counts ("2 other kids" is no age): numbers_for
                given = numbers_for(message, name, now) if kind == "number" else spans(message, kind, now)
                if taken.get(kind, 0) < len(given):  # two of a kind take the values in the message's order
                    value, way = given[taken.get(kind, 0)], kind
                    taken[kind] = taken.get(kind, 0) + 1
            if value is None:
                value, way = value_named(message, name), "named"
            if value is None and answer and asked == [name] and question and kind is None and _FREE_TEXT.search(name) \
                    and not no_answer(message) and len(message.split()) <= FREE_TEXT_WORDS \
                    and not self._typed_goodbye(None, ctx):
                # the question it asked (not one the message came before) asks only for the user's own
                # words (a reason, a description): all of them; a goodbye is none
                value, way = message.strip(), "own words"
            if value is not None:
                found[name], how[name] = value, way
        for name in names:
            if name not in found and name not in typed and name not in asked and _FREE_TEXT.search(name) \
                    and kind_of_name(name) is None and not listed.get(name):
                rest = _clause_beside(message, [v for v in found.values() if isinstance(v, str)])
                if rest is not None:
                    found[name], how[name] = rest, "own words beside an answer"
                break  # one clause gives at most one free text
        got = self._apply_extracted(found, names, frame, ctx, by_pattern=True)
        self._note_args_read(got, how, [n for n in names if n not in typed], frame, ctx)
        return got

    @staticmethod
    def _note_args_read(got: dict[str, Any], how: dict[str, str], names: list[str], frame: Frame,
                        ctx: TurnContext) -> None:
        """The trace of one message read for the flow's arguments: what was read, how, from which message
        (its turn and text), and which arguments it gave nothing for."""
        if not names:
            return
        ctx.log.emit("args_read", frame.agent, args=got, by={n: how[n] for n in got if n in how},
                     unread=[n for n in names if n not in got], turn=ctx.state.turn,
                     message=ctx.input.text or ctx.last_user_message())

    @staticmethod
    def _checked(answer: Any, names: list[str], frame: Frame, ctx: TurnContext) -> dict[str, Any]:
        """A model's values for the flow's arguments, checked: only the arguments asked for, no empty or
        "unknown" values, no nested objects, and a value for an argument whose name says its kind (a
        phone number, an e-mail address, a day, a number) must read as one. What is refused is traced."""
        if not isinstance(answer, dict):
            return {}
        agent = ctx.program.agents[frame.agent]
        typed = {a.name for a in agent.args if a.type in PATTERN_TYPES}
        kept: dict[str, Any] = {}
        refused: dict[str, Any] = {}
        for name, value in answer.items():
            if name not in names or value is None or (isinstance(value, str) and value.strip().lower() in _NO_VALUE):
                continue
            kind = None if name in typed else kind_of_name(name)
            nested = isinstance(value, dict) or (isinstance(value, list) and any(isinstance(v, (dict, list))
                                                                                  for v in value))
            unreadable = (kind in ("phone", "email", "date") and not spans(str(value), kind)) or \
                (kind == "number" and not isinstance(value, (int, float)) and not spans(str(value), "number"))
            if nested or unreadable:
                refused[name] = value
                continue
            kept[name] = value.strip() if isinstance(value, str) else value
        if refused:
            ctx.log.emit("step", frame.agent, action="values the model gave refused", args=refused,
                         why="not of the kind the argument's name says, or not a plain value")
        return kept

    @staticmethod
    def _question_of(node: ListenNode, frame: Frame, ctx: TurnContext) -> str:
        """The words of the question this `user` step answers (the flow's last said step, right before it)."""
        graph = graph_of(ctx, frame)
        said = graph.nodes.get(frame.data.last_say) if graph is not None and frame.data.last_say else None
        if not isinstance(said, SayNode) or said.next != node.id:
            return ""
        return ctx.render(said.text, frame.agent, frame)

    def _extract_by_pattern(self, names: list[str], frame: Frame, ctx: TurnContext) -> dict[str, Any]:
        """Values the message gives that patterns can read, written like extracted ones."""
        message = ctx.input.text or ctx.last_user_message()
        found = self._pattern_values(names, frame, ctx, message)
        if found:
            ctx.log.emit("step", frame.agent, action="values read by pattern", args=found)
        return self._apply_extracted(found, names, frame, ctx, by_pattern=True)

    # ---- ABL GATHER: corrections, validation, system variables --------------------------

    @staticmethod
    def _own_case_takes(node: ListenNode, frame: Frame, ctx: TurnContext, graph: StepGraph) -> bool:
        """The current step's own ON_INPUT has a case written over the message (`input matches /.../`,
        `input.contains(...)`) that holds: the message is that step's input, not a correction of an
        earlier step's field (CORRECTIONS is a property of the step that gathers, 3.14.2)."""
        branch = graph.nodes.get(node.next) if node.next else None
        if not isinstance(branch, BranchNode):
            return False
        for case in branch.cases:
            cond = case.condition
            if not isinstance(cond, ExprCondition) or any(c.fn in ("SAYS_YES", "SAYS_NO") for c in nodes_in(cond.expr, Call)):
                continue  # a yes/no case: "no, make it December 11" is a correction all the same
            if any(r.name == "input" for r in refs_in(cond.expr)) \
                    and ctx.holds(cond, frame.agent, frame, where="ON_INPUT") is True:
                return True
        return False

    def _correct(self, node: ListenNode, frame: Frame, ctx: TurnContext,
                 graph: StepGraph) -> tuple[bool, Outcome | None]:
        """CORRECTIONS: the message changes a value gathered before ("actually 4 guests", "no, make it
        Friday"). Worded as a correction, it is read for the fields already set (by patterns, then by
        the model for `llm` / `hybrid` when one is configured); changed values are written, the fields
        that depend on them (depends_on) cleared, and the flow goes back to the step that gathers
        them (which asks for what is now missing and goes on from there), or shows the current step again. Returns whether it was a correction,
        and the outcome."""
        message = ctx.input.text or ""
        if not says_correction(message):
            return False, None
        values = ctx.values(frame.agent)
        given = [n for n in node.corrects if values.get(n) is not None]
        if not given:
            return False, None
        rules = ctx.program.agents[frame.agent].rules
        fields = self._fields(frame, ctx)
        named = named_fields(message, given)
        # a yes/no field is corrected only when the message names it ("no" answers the question)
        candidates = named or [n for n in given if fields.get(n) is None or fields[n].type != "boolean"]
        found = self._pattern_values(candidates, frame, ctx, message)
        by = "pattern"
        # the model reads a correction only for fields whose GATHER lets it (llm, hybrid)
        by_model = [n for n in candidates if next((x.strategy for x in graph.nodes.values() if isinstance(x, ListenNode)
                                                   and n in x.extracts), node.strategy) != "pattern"]
        if not found and ctx.llm is not None and by_model:
            candidates = by_model
            agent = ctx.program.agents[frame.agent]
            request = prompts.understand_request(agent, [], [], candidates, ctx.state.history,
                                                 ctx.program.settings.history_window)
            call = ctx.call_args(request, frame.agent, "correction") or {}
            args = call.get("args") if isinstance(call.get("args"), dict) else {}
            found = {k: v for k, v in args.items() if k in candidates and v not in (None, "")}
            by = "llm"
        changed = {n: v for n, v in found.items() if v != values.get(n)}
        if found and not changed and not node.extracts:
            # "actually 3 guests" when it is 3 already: the value stands; the step is shown again
            ctx.log.emit("gather_correction", frame.agent, by=by, invalidated=[],
                         fields={n: {"from": values.get(n), "to": v} for n, v in found.items()}, unchanged=True)
            if frame.data.step is not None:
                self._reasons[(ctx.state.session_id, frame.id)] = "correction"
                frame.data.node = frame.data.step
                return True, None
        if not changed:
            return False, None
        invalidated: list[str] = []
        for name, value in changed.items():
            ctx.write(frame.agent, name, value, frame.agent, why="corrected by the user")
        queue = list(changed)
        while queue:  # fields that depend on a corrected one, and on those, are asked again
            name = queue.pop(0)
            for f in rules.gather:
                if name in f.depends_on and f.name not in changed and f.name not in invalidated:
                    invalidated.append(f.name)
                    queue.append(f.name)
                    ctx.write(frame.agent, f.name, None, frame.agent, why=f"depends on {name}, which was corrected")
        ctx.log.emit("gather_correction", frame.agent, by=by, invalidated=invalidated,
                     fields={n: {"from": values.get(n), "to": v} for n, v in changed.items()})
        gave_up = self._validate(changed, node, frame, ctx)
        self._note_gathered(frame, ctx)
        if isinstance(gave_up, Outcome):
            return True, gave_up
        if gave_up:
            return True, None
        if node.extracts:  # a GATHER question: check the fields again, asking for what is missing
            frame.data.node = node.next
            return True, None
        # back to the step that gathers it: what follows from it (a search, a price) runs again
        target = next((self._step_gathering(n, graph) for n in [*invalidated, *changed]
                       if self._step_gathering(n, graph)), None)
        target = target or frame.data.step
        if target is None:
            frame.data.node = node.next
            return True, None
        self._reasons[(ctx.state.session_id, frame.id)] = "correction"
        frame.data.node = target
        return True, None

    @staticmethod
    def _step_gathering(name: str, graph: StepGraph) -> str | None:
        """The FLOW step whose GATHER asks for the field (the step its listen node belongs to)."""
        for node in graph.nodes.values():
            if isinstance(node, ListenNode) and name in node.extracts and node.step in graph.labels:
                return node.step
        return None

    @staticmethod
    def _asked(frame: Frame, graph: StepGraph | None) -> str | None:
        """The GATHER field the question the flow said last asks for (None: not such a question)."""
        node = graph.nodes.get(frame.data.last_say) if graph is not None and frame.data.last_say else None
        return node.asks if isinstance(node, SayNode) else None

    @staticmethod
    def _fields(frame: Frame, ctx: TurnContext) -> dict[str, Any]:
        """The agent's GATHER fields by name, as the active behaviour profiles have them
        (GATHER_OVERRIDES field_overrides)."""
        rules = ctx.program.agents[frame.agent].rules
        fields = {f.name: f for f in rules.gather}
        if rules.profiles:
            overridden: set[str] = set()
            for profile in active_profiles(frame.agent, ctx):  # highest priority first: it wins a conflict
                for name, field in profile.gather_fields.items():
                    if name in fields and name not in overridden:
                        fields[name] = field
                        overridden.add(name)
        return fields

    @staticmethod
    def _gather_style(frame: Frame, ctx: TurnContext, key: str) -> str:
        """A GATHER_OVERRIDES setting of the active profiles (validation_style, confirmation), "" for none."""
        if not ctx.program.agents[frame.agent].rules.profiles:
            return ""
        overrides = {str(k).lower(): v for k, v in effective_profile(frame.agent, ctx)["gather_overrides"].items()}
        return str(overrides.get(key) or "").lower()

    @staticmethod
    def _actions(node: SayNode) -> list[dict]:
        """The buttons, choices and input fields said with a RESPOND (ABL ACTIONS), for the client to
        show: each as its IR fields, with what picking it sends (`send`: the button's value, else its id)."""
        shown = []
        for element in node.actions:
            item = element.model_dump(mode="json", exclude={"span"}, exclude_defaults=True)
            item["kind"], item["id"] = element.kind, element.id
            if element.kind == "button":
                item["send"] = str(element.value) if element.value is not None else element.id
            shown.append(item)
        return shown

    @staticmethod
    def _profile_prompt(node: SayNode, frame: Frame, ctx: TurnContext) -> str | None:
        """A GATHER question as the active profile with the highest priority words it (field_overrides prompt)."""
        if not node.asks or not ctx.program.agents[frame.agent].rules.profiles:
            return None
        for profile in active_profiles(frame.agent, ctx):
            template = profile.gather_prompts.get(node.asks)
            if template is not None:
                return ctx.render(template, frame.agent, frame)
        return None

    @staticmethod
    def _skipped(step: str, frame: Frame, ctx: TurnContext, graph: StepGraph) -> bool:
        """FLOW_MODIFICATIONS skip: an active profile skips the step; the flow goes on where the step would."""
        if step not in graph.exits or not ctx.program.agents[frame.agent].rules.profiles:
            return False
        for profile in active_profiles(frame.agent, ctx):
            mods = {str(k).lower(): v for k, v in (profile.flow_modifications or {}).items()}
            skip = mods.get("skip") or []
            if step in (skip if isinstance(skip, list) else [skip]):
                ctx.log.emit("step", frame.agent, action="step skipped by a behaviour profile", step=step,
                             profile=profile.name, to=graph.exits[step])
                frame.data.node = graph.exits[step]
                return True
        return False

    def _settled_by_profile(self, node: BranchNode, frame: Frame, ctx: TurnContext) -> bool | None:
        """Whether a GATHER field is settled when an active profile changes whether it is required (None: the
        profile changes nothing, the compiled check decides)."""
        rules = ctx.program.agents[frame.agent].rules
        if not rules.profiles or not node.cases or node.settles is None:
            return None
        base = next((f for f in rules.gather if f.name == node.settles), None)
        if base is None:
            return None
        field = self._fields(frame, ctx).get(base.name)
        if field is None or field is base or field.required == base.required:
            return None
        if not field.required:
            return True  # optional while the profile is active: never asked for
        return ctx.values(frame.agent).get(base.name) is not None

    def _unreadable_answer(self, node: ListenNode, frame: Frame, ctx: TurnContext) -> Outcome | bool | None:
        """The user answered the GATHER question, but nothing in the answer can be read as the field: no
        match of its `pattern` validation ("my policy is 12345"), no date, number, e-mail, phone number
        or yes/no for a typed field ("dunno", "lots"). When the message is an attempt at answering (short,
        with a digit, or naming the field; not a question, not one of the step's intents), the user is
        told what is expected (the validation's error, or a sentence from the type) and the failure counts
        in `_validation_retries` like any failed validation, giving up past `max_retries`. Anything else
        (a digression, another topic) is left to the flow as before."""

        asked = self._asked(frame, graph_of(ctx, frame))
        if not asked or asked not in node.extracts:
            return None
        field = self._fields(frame, ctx).get(asked)
        if field is None or ctx.values(frame.agent).get(field.name) is not None:
            return None
        pattern = next((v for v in field.validations if v.kind == "pattern"), None)
        expected = _TYPE_EXPECTED.get(field.type)
        allowed = _choices(field, ctx.program.agents[frame.agent])[0]
        if allowed and pattern is None:  # an options field answered with none of them ("Berlin")
            expected = f"Please choose one of: {_or_list(allowed)}."
        if pattern is None and expected is None:
            return None  # a text field: whatever the user says may be the value
        if self._gather_style(frame, ctx, "validation_style") == "lenient":
            return None  # a lenient profile asks again without finding fault
        if node.classifies is not None and frame.data.decisions.get(node.classifies) not in (None, prompts.NONE_CHOICE):
            return None  # one of the step's intents (a DIGRESSION, a SUB_INTENT) took the message
        text = (ctx.input.text or "").strip()
        words = re.findall(r"[^\W\d_]+", text)
        question = text.endswith("?") or bool(words) and words[0].lower() in _QUESTION_WORDS
        small_talk = bool(words) and all(w.lower() in _SMALL_TALK for w in words) and not re.search(r"\d", text)
        attempt = bool(text) and not question and not small_talk and (
            len(words) <= SHORT_ANSWER_WORDS or bool(re.search(r"\d", text)) or bool(named_fields(text, [field.name])))
        if not attempt:
            return None
        check = pattern or next((v for v in field.validations if v.kind == "enum"), None) if allowed else pattern
        check = check or next((v for v in field.validations if v.error), None)
        error = (check.error if check is not None else "") or str(field.extra.get("retry_prompt") or "")
        if not error:
            error = expected or f"That doesn't look like a valid {field.name.replace('_', ' ')}."
        limit = check.max_retries if check is not None and check.max_retries is not None else DEFAULT_VALIDATION_RETRIES
        kind = "pattern" if pattern is not None else "options" if allowed else "type"
        rule = pattern.rule if pattern is not None else ", ".join(allowed) if allowed else field.type
        return self._failed(field.name, kind, rule, None, limit, error, node, frame, ctx,
                            reason="none of the field's options" if kind == "options" and pattern is None
                            else "nothing in the answer can be read as the field")

    def _failed(self, name: str, kind: str, rule: str, value: Any, limit: int, error: str, node: ListenNode,
                frame: Frame, ctx: TurnContext, **why: Any) -> Outcome | bool | None:
        """A gathered answer failed: counted in `_validation_retries`; past `limit` the step's ON_FAIL
        (True: the flow goes on there) or the agent's validation error handling (an Outcome); before it,
        the user is told `error` and the question is asked again (None)."""
        retries = dict(ctx.state.system.get("_validation_retries") or {})
        retries[name] = int(retries.get(name, 0)) + 1
        ctx.state.system["_validation_retries"] = retries
        ctx.log.emit("gather_validation", frame.agent, field=name, kind=kind, rule=rule, value=value,
                     retries=retries[name], max_retries=limit, **why)
        if retries[name] > limit:
            ctx.log.emit("step", frame.agent, action="validation retries exhausted", field=name)
            reason = f"{name} failed validation {retries[name]} times"
            if node.on_invalid is not None:
                frame.data.node = node.on_invalid
                self._reasons[(ctx.state.session_id, frame.id)] = reason
                return True  # the flow goes on at the step's ON_FAIL
            return self._validation_error(frame, ctx, reason)
        ctx.say(frame.agent, error, frame)
        return None

    def _validate(self, new: dict[str, Any], node: ListenNode, frame: Frame,
                  ctx: TurnContext) -> Outcome | bool | None:
        """Typed validation of values just gathered (pattern, range, enum, custom, llm). A value that
        fails is cleared, the user is told why and asked again; `_validation_retries` counts failures per
        field, and past the check's `max_retries` (3 by default) the step's ON_FAIL runs, or else the
        agent gives up with its fallback. Returns the outcome of giving up, True when the flow goes
        on at ON_FAIL, None when nothing gave up."""
        fields = self._fields(frame, ctx)
        for name, value in new.items():
            field = fields.get(name)
            if field is None or not field.validations:
                continue
            for check in field.validations:
                ok, kept = self._check(check, field, value, frame, ctx)
                if not ok and self._gather_style(frame, ctx, "validation_style") == "lenient":
                    ctx.log.emit("gather_validation", frame.agent, field=name, kind=check.kind, rule=check.rule,
                                 value=value, lenient=True, kept=True)
                    continue  # a lenient profile keeps the value; the trace says it failed
                if ok:
                    if kept != value:
                        ctx.write(frame.agent, name, kept, frame.agent, why=f"as {check.kind} validation keeps it")
                        value = kept
                    continue
                ctx.write(frame.agent, name, None, frame.agent, why=f"failed its {check.kind} validation")
                limit = check.max_retries if check.max_retries is not None else DEFAULT_VALIDATION_RETRIES
                text = check.error or str(field.extra.get("retry_prompt") or "") or \
                    f"That doesn't look like a valid {name.replace('_', ' ')}."
                gave_up = self._failed(name, check.kind, check.rule, value, limit, text, node, frame, ctx)
                if gave_up is not None:
                    return gave_up
                break
        return None

    @staticmethod
    def _validation_error(frame: Frame, ctx: TurnContext, why: str) -> Outcome | bool:
        """Validation retries ran out and the step has no ON_FAIL: the agent's ON_ERROR
        `validation_error` (or `default`) handler says its words and escalates or goes to its step;
        with none, the fallback policy ends the agent."""
        rules = ctx.program.agents[frame.agent].rules
        handler = next((h for name in ("validation_error", "default") for h in rules.on_error if h.on == name), None)
        if handler is None:
            return apply_fallback(ctx, frame, reason=why, final=True)
        action = handler.action
        ctx.log.emit("step", frame.agent, action="error handled", handler=handler.on, reason=why)
        if action.respond is not None:
            ctx.say(frame.agent, ctx.render(action.respond, frame.agent, frame), frame)
        if action.escalate:
            return Outcome.escalate(action.escalate_reason or why)
        graph = graph_of(ctx, frame)
        if action.goto and graph is not None:
            target = graph.complete if action.goto.upper() == "COMPLETE" else action.goto
            if target in graph.nodes:
                frame.data.node = target
                return True
        return Outcome.done("error", why)

    def _check(self, check, field, value: Any, frame: Frame, ctx: TurnContext) -> tuple[bool, Any]:
        if check.kind in ("pattern", "range", "enum"):
            return check_value(check.kind, check.rule, value, field.options)
        if check.kind == "custom":
            tool = check.rule.strip()
            if tool in ctx.program.tools:  # a tool that judges the value: success and not valid: false
                result = ctx.call_tool(tool, {field.name: value}, frame.agent, frame)
                valid = result.args.get("valid", result.value if isinstance(result.value, bool) else True)
                return result.status == "success" and not result.error and bool(valid), value
            if check.expr is None:
                return True, value
            return is_true(self._eval(check.expr, frame, ctx)), value
        return self._llm_valid(check, field, value, frame, ctx), value

    def _llm_valid(self, check, field, value: Any, frame: Frame, ctx: TurnContext) -> bool:
        """An `llm` validation: the model judges the value by the rule's words. With no model, or when
        the call fails, the value is kept (the trace says it was not checked)."""
        if not ctx.llm_classifies:
            ctx.log.emit("step", frame.agent, action="llm validation not checked: no model able to judge",
                         field=field.name)
            return True
        tool = ToolSchema(name="validate", description="Say whether the value meets the rule.",
                          parameters={"type": "object", "required": ["valid"],
                                      "properties": {"valid": {"type": "boolean"}, "reason": {"type": "string"}}})
        request = LLMRequest(purpose="other", tools=[tool], tool_choice="validate", messages=[
            ChatMessage(role="system", content=f"Check a value the user gave for '{field.name}'. Rule: {check.rule}"),
            ChatMessage(role="user", content=str(value))])
        call = ctx.call_args(request, frame.agent, "validation")
        return True if call is None else bool(call.get("valid", True))

    def _note_gathered(self, frame: Frame, ctx: TurnContext) -> None:
        """8.8 all_fields_gathered: every GATHER field that must be asked for (required, or active
        progressive / when) has a value."""
        values = ctx.values(frame.agent)
        done = True
        for f in self._fields(frame, ctx).values():
            if not f.required or values.get(f.name) is not None:
                continue
            if f.activation == "progressive" and not all(values.get(d) not in (None, False) for d in f.depends_on):
                continue
            if f.activation == "when" and isinstance(f.when, ExprCondition) and \
                    not is_true(self._eval(f.when.expr, frame, ctx)):
                continue
            done = False
            break
        ctx.state.system["all_fields_gathered"] = done

    def _match_groups(self, expr, frame: Frame, ctx: TurnContext) -> dict[str, Any] | None:
        """The capture groups of the first `matches` test in the condition that matches: match.0 (the
        whole match), match.1, ..., and named groups (8.8)."""
        for call in _matches_calls(expr):
            subject = self._eval(call.args[0], frame, ctx)
            pattern = self._eval(call.args[1], frame, ctx)
            if subject is None or pattern is None:
                continue
            try:
                found = re.search(str(pattern), str(subject))
            except re.error:
                continue
            if found is None:
                continue
            groups: dict[str, Any] = {"0": found.group(0)}
            for i, g in enumerate(found.groups(), start=1):
                groups[str(i)] = g
            groups.update(found.groupdict())
            return groups
        return None

    @staticmethod
    def _choose_by_words(branch: BranchNode, frame: Frame, ctx: TurnContext) -> str | None:
        """An ABL intent (a DIGRESSION or SUB_INTENT) whose words the message all uses ("help",
        "change dates" in "can I change the dates?"), with no model."""
        words = set(re.findall(r"[a-z0-9]+", (ctx.input.text or "").lower()))
        small = {"a", "an", "the", "to", "of", "for", "my", "me", "i"}
        for key, examples in claims_choices(branch):
            for example in examples:
                needed = {w for w in re.findall(r"[a-z0-9]+", example.lower()) if w not in small}
                if needed and needed <= words:
                    frame.data.decided_by[branch.id] = "words"
                    ctx.log.emit("step", frame.agent, action="intent matched by its words", node=branch.id,
                                 choice=key, intent=example)
                    return key
        return None

    def _whole_answer(self, names: list[str], frame: Frame, ctx: TurnContext) -> dict[str, Any]:
        """With no model to read it, a short answer to an ABL GATHER question for a text field (no options,
        no pattern) is the value: "Paris", "to Lisbon please" -> Lisbon."""
        asked = self._asked(frame, graph_of(ctx, frame))
        if not asked or asked not in names:
            return {}
        field = self._fields(frame, ctx).get(asked)
        if field is None or field.type != "string" or _choices(field, ctx.program.agents[frame.agent])[0] or \
                any(v.kind == "pattern" for v in field.validations):
            return {}
        said = (ctx.input.text or "").strip()
        if no_answer(said):
            return {}  # a question, a refusal or a shrug is no value ("I'd rather not say")
        text = short_answer(said)
        if text is None and _FREE_TEXT.search(field.name) and len(said.split()) <= FREE_TEXT_WORDS:
            text = said  # a field that asks for the user's own words ("Briefly, what was damaged?"): all of them
        if text is None:
            return {}
        return self._apply_extracted({field.name: text}, names, frame, ctx, by_pattern=True)

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
        if not by_pattern and got:
            got = self._grounded(got, frame, ctx)
        refused = {k: v for k, v in got.items() if v in frame.data.rejected.get(k, [])}
        got = {k: v for k, v in got.items() if k not in refused}
        for name, value in got.items():
            ctx.write(frame.agent, name, value, frame.agent, why="extracted from the user's message")
        ctx.log.emit("args_extracted", frame.agent, args=got,
                     **({"refused": refused, "why": "the flow rejected these values before"} if refused else {}))
        if ctx.program.agents[frame.agent].policy.gather_events and got:  # the same, named as ABL traces name it
            ctx.log.emit("gather_extraction", frame.agent, fields=got, by="pattern" if by_pattern else "llm")
        if got and frame.data.last_listen:
            frame.data.extracted.setdefault(frame.data.last_listen, {}).update(got)
        agent = ctx.program.agents[frame.agent]
        if agent.policy.system_variables:  # 8.8 _pending_inferences: what the model inferred for an INFER field
            fields = self._fields(frame, ctx)
            pending = dict(ctx.state.system.get("_pending_inferences") or {})
            for name, value in got.items():
                field = fields.get(name)
                if field is not None and field.infer and not by_pattern:
                    pending[name] = value  # read by the model, not written by the user in so many words
                else:
                    pending.pop(name, None)  # the user gave it: nothing left to confirm
            if pending != (ctx.state.system.get("_pending_inferences") or {}):
                ctx.state.system["_pending_inferences"] = pending
        return got

    def _grounded(self, values: dict[str, Any], frame: Frame, ctx: TurnContext) -> dict[str, Any]:
        """The model's values that what the user said holds (runtime/grounding.py); an INFER field's
        value is the model's reading by design (it waits in _pending_inferences)."""
        agent = ctx.program.agents[frame.agent]
        kinds: dict[str, str | None] = {a.name: (a.type if a.type in PATTERN_TYPES else kind_of_name(a.name))
                                        for a in agent.args}
        options: dict[str, list[str]] = {}
        synonyms: dict[str, dict[str, list[str]]] = {}
        exempt = set()
        for name, f in self._fields(frame, ctx).items():
            kinds[name] = f.type if f.type in PATTERN_TYPES else kinds.get(name)
            options[name], synonyms[name] = _choices(f, agent)
            if f.infer:
                exempt.add(name)
        return keep_grounded(ctx, frame.agent, values, kinds, options, synonyms, exempt, where="flow")

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
        if ctx.understanding is None:
            return None
        cases = claims_options(branch)
        options = cases + [
            Option(f"switch:{o.key}", o.examples) for o in ctx.agent_options([a.name for a in switches])]
        decision = ctx.embed_decide(message, options, "claims", frame.agent)
        if decision is None:
            return None
        if decision.sure and decision.choice is None and ctx.llm_classifies and not tentative:
            # unlike every example is not the same as none of the cases: the LLM reads it
            decision = replace(decision, sure=False)
        if decision.sure and decision.choice is not None and _contradicts(message, decision.choice, options):
            # "No, only that book" is close to "Do you have other types of books?" but says no to a case
            # whose examples say yes ("Yeah"): not sure, whatever the similarity
            ctx.log.emit("step", frame.agent, action="embedding choice contradicts the answer's yes or no",
                         node=branch.id, choice=decision.choice)
            decision = replace(decision, sure=False)
        if decision.sure and decision.choice is not None and not decision.choice.startswith("switch:") \
                and ctx.llm_classifies and _WH_QUESTION.match(message) and message.rstrip().endswith("?") \
                and not any(e.rstrip().endswith("?") for o in options if o.key == decision.choice for e in o.examples):
            # "How much do you charge for a booster jab?" at "What kind of visit?" names a case ("Booster
            # jabs") but asks something: the LLM reads whether it answers or turns to another agent
            ctx.log.emit("step", frame.agent, action="embedding choice is a question: the LLM reads it",
                         node=branch.id, choice=decision.choice)
            decision = replace(decision, sure=False)
        if (not decision.sure or decision.choice is None) and not tentative \
                and (not ctx.llm_classifies or _PLAIN_ANSWER.match(message)
                     or (_bare_no(message) and not (decision.best or "").startswith("switch:"))):
            # (with an LLM, only a reply that is nothing but a yes or no, a no said as a closing, or a no whose
            # other words ask nothing and are closest to a case of this step: the LLM would read nothing else
            # in it; issue 29: such replies made 8 of 20 understand calls on intent shift, 12 of 30 on
            # orchestration)
            answered = _answers_by_polarity(message, cases)
            if answered is not None:
                # with no LLM, a short plain yes or no ("No, that's all I want.") takes the one case whose
                # examples say the same, however close its wording is to theirs
                frame.data.decided_by[branch.id] = "yes or no"
                ctx.log.emit("step", frame.agent, action="claims decided by the answer's yes or no", node=branch.id,
                             choice=answered, best=decision.best, score=round(decision.score, 3))
                return answered
        if not decision.sure and not ctx.llm_classifies and not tentative and message.rstrip().endswith("?") \
                and (decision.best or "").startswith("switch:") and not answers_yes_no(message):
            # with no LLM, a question that no case is sure of and that is closest to another agent is for
            # that agent ("Actually, what's the balance of my savings account first?" at "the reason for
            # blocking?"): never the step's `else` (which may act: block the card for "other")
            frame.data.decided_by[branch.id] = "embedding (a question, closest to another agent)"
            ctx.log.emit("step", frame.agent, action="claims decided by embedding", node=branch.id,
                         choice=decision.best, sure=False, best=decision.best, score=round(decision.score, 3),
                         margin=round(decision.margin, 3), reason="a question closest to another agent")
            return decision.best
        if tentative and not decision.sure and ctx.llm_classifies and _names_no_case(message, cases):
            # "I need to block a card." started the agent and shares with "My debit card" and "My credit card"
            # only the word they share: it cannot answer which, and no model call is needed to see it
            ctx.log.emit("step", frame.agent, action="the message that started the agent names no case",
                         node=branch.id, best=decision.best, score=round(decision.score, 3))
            frame.data.decided_by[branch.id] = "its words (the message that started the agent names no case)"
            return prompts.NONE_CHOICE
        if decision.sure or not ctx.llm_classifies or (tentative and (decision.best is None or ctx.input.used)):
            # A message that started the agent was a request for its task; it answers the question the
            # agent has not asked yet when the embedding model is sure of it, or, when it leans to a case
            # without being sure ("Renew everything I've got out" between "All of them" and "Only the ones
            # due soon"), when the LLM says so, as it would with no embedding model; but a message another
            # agent finished its task on ("Emberwild sounds good, please order it": the book is chosen) is
            # no answer to a question this agent has not asked yet ("Anything else?") unless it is sure.
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
            result = ctx.call_tool(node.target, args, frame.agent, frame, handles_failure=node.handles_failure)
            if result.bot:
                frame.data.tool_spoke = True  # "Select the card you require assistance with: ..." asks the question
            if result.failure is not None and result.failure.kind == "awaiting_confirmation":
                frame.waiting = True  # the user was asked to approve it: this CALL runs again with the answer
                return Outcome.wait()
            if ctx.state.status == "escalated" and not escalated:
                frame.data.node = node.next  # an error handler handed the conversation to a person
                return Outcome.escalate(f"{node.target} failed")
            if result.status == "error" and rule_moves(ctx, frame.agent):
                # a BEFORE-calling constraint refused the call and its ON_FAIL moves the flow (GOTO,
                # COLLECT, RETRY, HANDOFF): the flow stops here and the rule takes it on after the agents ran,
                # instead of the step going on as if the tool had failed
                frame.data.node = node.next
                return Outcome.wait()
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
        keep_passed(ctx, node.target, args)
        child = new_frame(ctx, node.target)
        if ctx.input.offered_to(frame):
            # The message that started this agent, not yet used: the agent it calls first may use it.
            ctx.input.offer(child, frame.agent)
        return Outcome.call(child)

    def _branch(self, node: BranchNode, frame: Frame, ctx: TurnContext, graph: StepGraph) -> Outcome | None:
        settled = self._settled_by_profile(node, frame, ctx)
        if settled is not None:
            frame.data.node = node.cases[0].target if settled else node.otherwise
            ctx.log.emit("condition_evaluated", frame.agent, node=node.id, condition=node.cases[0].condition.source,
                         result=settled, by="behaviour profile (GATHER_OVERRIDES required)")
            return None
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
                # Pure: conditions read the state as it is and change nothing; the first that holds
                # wins, and only then are its effects applied (the `match` groups, then its block).
                value = self._eval(cond.expr, frame, ctx)
                result = is_true(value)
                ctx.log.emit("condition_evaluated", frame.agent, node=node.id, condition=cond.source,
                             result=result, by="expression")
                if result and ctx.program.agents[frame.agent].policy.system_variables:
                    groups = self._match_groups(cond.expr, frame, ctx)
                    if groups is not None:
                        ctx.state.system["match"] = groups
            else:
                result = decision == str(index)
                ctx.log.emit("condition_evaluated", frame.agent, node=node.id, condition=cond.source,
                             result=result, by=by, choice=decision)
            if result:
                frame.data.fallbacks = 0
                frame.data.node = case.target
                return None
        if node.otherwise is not None and has_claims and frame.data.last_listen \
                and self._answer_of_another_kind(node, frame, ctx):
            # "No, I don't need a new card." at "Please tell us the reason for blocking your card.": a bare
            # yes or no to a question that asks for no yes or no is no answer of the step's: its `else` (which
            # may act: block the card for "other") is not taken; the question is asked again
            ctx.log.emit("step", frame.agent, action="a yes or no is no answer to this question: asked again",
                         node=node.id)
            return apply_fallback(ctx, frame, reason="the message answers a yes-or-no question this step did not ask")
        if node.otherwise is not None:
            frame.data.node = node.otherwise
            return None
        gave = frame.data.decided_by.pop(f"{node.id}:gave", None)
        if has_claims and frame.data.last_listen and gave:
            # no case, but the message gave the flow values ("The Hobbit" for book_title): an answer
            ctx.log.emit("step", frame.agent, action="no case matched; the message gave values, the flow goes on",
                         args=gave.split(","))
        elif has_claims and frame.data.last_listen:
            return apply_fallback(ctx, frame, reason="no condition matched the user's message")
        frame.data.node = node.next
        return None

    @staticmethod
    def _answer_of_another_kind(node: BranchNode, frame: Frame, ctx: TurnContext) -> bool:
        """Whether the message the step read opens with a bare yes or no while neither the question said last
        is a yes-or-no question nor any case's examples open with one."""
        message = ctx.input.text if ctx.input.text is not None else ctx.last_user_message()
        if not _BARE_YES_NO.match(message or ""):
            return False
        examples = [e for _, examples in claims_choices(node) for e in examples]
        if any(_BARE_YES_NO.match(e) for e in examples):
            return False
        question = (frame.last_prompt or "").strip()
        if re.search(r"(?i)\byes\s*(?:/|or)\s*no\b", question):
            return False  # "(yes/no)"
        sentences = re.split(r"(?<=[.!?])\s+", question) if question else []
        return not any(s.endswith("?") and _YES_NO_QUESTION.match(s) for s in sentences)

    def _decide_claims(self, node: BranchNode, frame: Frame, ctx: TurnContext) -> str:
        agent = ctx.program.agents[frame.agent]
        request = prompts.understand_request(agent, claims_choices(node), [], [], ctx.state.history,
                                             ctx.program.settings.history_window)
        call = ctx.call_args(request, frame.agent, "condition")
        return prompts.NONE_CHOICE if call is None else str(call.get("choice", prompts.NONE_CHOICE))

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


def _choices(field, agent) -> tuple[list[str], dict[str, list[str]]]:
    """The values a GATHER field allows (its options, or its ENTITY_REF enum's VALUES) and the phrases
    that stand for them (the entity's SYNONYMS)."""
    entity = None
    if field.entity:
        entity = next((e for e in agent.rules.entities if e.name == field.entity and e.type == "enum"), None)
    if entity is not None:
        return list(field.options or entity.values), dict(entity.synonyms)
    return list(field.options), {}


def _clause_beside(message: str, given: list[str]) -> str | None:
    """"It's ML-1001, my son is ill": a message that gives a value in a clause of its own and goes on, in
    one more clause of at least three words that asks and declines nothing, gives that clause as a
    free-text argument (a reason, a description). None when no value was read from a clause of its own,
    or there is no such one other clause."""
    if not given:
        return None
    clauses = [c.strip() for c in re.split(r"[,;]|\.\s|\s+-\s+", message) if c.strip(" .!")]
    rest = [c for c in clauses if not any(str(v).lower() in c.lower() for v in given)]
    if len(clauses) < 2 or len(rest) != 1 or len(rest) == len(clauses):
        return None
    words = re.findall(r"[\w']+", rest[0].lower())
    if len(words) < 3 or no_answer(rest[0]) or set(words) <= _SMALL_TALK | {"please", "that's", "all", "it"}:
        return None
    return rest[0].strip(" .!")


def _or_list(values: list[str]) -> str:
    return values[0] if len(values) == 1 else ", ".join(values[:-1]) + " or " + values[-1]


def _listed_values(name: str, agent, graph: StepGraph | None, question: str) -> list[str]:
    """The values listed for an argument: the texts a condition compares it with (`bike_type == "road"`,
    `size in ["S", "M"]`), a list in its description, and a list in the question asked for it."""
    out: list[str] = []

    def add(value) -> None:
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and item.strip() and item not in out:
                out.append(item)

    def compared(expr) -> None:
        for value in nodes_in(expr, Compare):
            if value.cmp not in ("==", "!=", "in", "not in"):
                continue
            for mine, other in ((value.left, value.right), (value.right, value.left)):
                if isinstance(mine, Ref) and mine.space == "var" and mine.scope == agent.name and mine.name == name:
                    if isinstance(other, Lit):
                        add(other.value)
                    elif isinstance(other, ListLit):
                        add([i.value for i in other.items if isinstance(i, Lit)])

    if graph is not None:
        for node in graph.nodes.values():
            if isinstance(node, BranchNode):
                for case in node.cases:
                    if isinstance(case.condition, ExprCondition):
                        compared(case.condition.expr)
    described = next((a.description for a in agent.args if a.name == name), "")
    add(listed_values(described) if described else [])
    add(listed_values(question) if question else [])
    return out


def claims_choices(branch: BranchNode) -> list[tuple[str, list[str]]]:
    return [
        (str(i), case.condition.examples)
        for i, case in enumerate(branch.cases, start=1)
        if isinstance(case.condition, ClaimsCondition)
    ]


def _matches_calls(expr) -> list:
    """The `matches` tests (MATCHES calls) in an expression, in reading order."""
    return [call for call in nodes_in(expr, Call) if call.fn == "MATCHES" and len(call.args) == 2]


# ---- GATHER answers belong to one activation (ABL) ---------------------------------------------



def _kept_names(ctx: TurnContext) -> set[str]:
    """Names the program keeps on purpose across activations: MEMORY session variables (INITIAL/RESET
    decide their lifetime) and the values an ON_RETURN map hands back to a supervisor."""
    kept: set[str] = set()
    for agent in ctx.program.agents.values():
        kept.update(v.name for v in agent.rules.memory.session)
        for handoff in [*getattr(agent, "handoffs", []), *(m.handoff for m in getattr(agent, "members", [])
                                                            if getattr(m, "handoff", None) is not None)]:
            kept.update(handoff.on_return)
    return kept


def remember_gathered(frame: Frame, ctx: TurnContext) -> None:
    """A flow agent's activation ended: when its policy says an activation's answers are its own (ABL
    `fresh_activation`), note the GATHER values it ended with, so that starting the agent again asks for
    them afresh (ADL agents keep their arguments across activations: MICA)."""
    agent = ctx.program.agents.get(frame.agent)
    if not isinstance(agent, FlowAgent) or not agent.policy.fresh_activation or not agent.rules.gather:
        return
    kept = _kept_names(ctx)
    values = ctx.values(frame.agent)
    ended = {f.name: values.get(f.name) for f in agent.rules.gather
             if f.name not in kept and values.get(f.name) is not None}
    store = dict(ctx.state.system.get(GATHERED_BEFORE) or {})
    store[frame.agent] = ended
    ctx.state.system[GATHERED_BEFORE] = store


def forget_gathered(frame: Frame, ctx: TurnContext) -> None:
    """An ABL flow agent starts again after an earlier activation ended: the GATHER values that one left
    (unchanged since) are cleared, so the user is asked again instead of the old answers being reused
    silently. Values passed to this activation (CONTEXT pass, call arguments) and MEMORY session
    variables stay."""
    store = dict(ctx.state.system.get(GATHERED_BEFORE) or {})
    ended = store.pop(frame.agent, None)
    if ended is None:
        return
    ctx.state.system[GATHERED_BEFORE] = store
    values = ctx.values(frame.agent)
    cleared = [name for name, old in ended.items() if values.get(name) == old]
    for name in cleared:
        ctx.write(frame.agent, name, None, frame.agent, why="gathered in an earlier activation: asked afresh")
    if cleared:
        ctx.log.emit("step", frame.agent, action="fields of an earlier activation cleared", fields=cleared)
