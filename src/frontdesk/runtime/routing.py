"""The router executor: ADL ensembles and ABL supervisors choosing who handles a message.

ABL supervisors add to an ensemble: HANDOFF WHEN words and ROUTING INTENT(...) words as phrases of the
local understanding model (`with_handoff_phrases`, runtime/handoff.py), ROUTING DEFAULT, the
pre-classification pipeline of abl-specification 3.15 (its settings: runtime/preclassify.py), RETURN:
false members whose interrupted run is dropped, CONTEXT pass / summary / history for the member taking
over, ON_RETURN maps, `handoff.completed` and the supervisor's COMPLETE rules. The routing call itself
(shared with the strategies that route before the agents run) is in runtime/orchestration.py; handing a
member over, and `__return_to_parent__` for members with RETURN: true, in runtime/handoff.py.

An ensemble's start steps that end at `user` hand the message they read on to the members; an ensemble
with an exit policy (`exit: default`) ends the conversation when the user says goodbye (`_exit`).
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from frontdesk.ir.expr import ExprCondition
from frontdesk.ir.models import KnowledgeAgent, Ref, RouterAgent, RouterMember
from frontdesk.llm.base import LLMError, LLMRequest, LLMResponse
from frontdesk.nlu.base import Option, Thresholds
from frontdesk.nlu.matcher import first_term_positions, keyword_scores, polarity
from frontdesk.runtime import orchestration, prompts
from frontdesk.runtime.context import ChildResult, Outcome, TurnContext
from frontdesk.runtime.escalation import check_triggers
from frontdesk.runtime.events import register_event_type
from frontdesk.runtime.handoff import handoff_returned, receiver_context, resume_thread
from frontdesk.runtime.orchestration import (
    EXIT_CHOICE,
    ROUTE_APOLOGY,
    describe_agent,
    has_exit,
    LAST_MEMBER,
    llm_route,
    route_request,
    routed,
)
from frontdesk.runtime.policies import (
    DROPS_TASK,
    few_words,
    new_frame,
    policy_words,
    setup_frame,
    switch_candidates,
)
from frontdesk.runtime.preclassify import PipelineConfig
from frontdesk.runtime.rules.templates import message
from frontdesk.runtime.state import Frame, RouterData
from frontdesk.runtime.steps import Done

register_event_type("handoff_match", "a router handed the conversation to a member it started", ("target",))
register_event_type("pre_classification", "a supervisor's pre-classification pipeline (ABL 3.15) read the message",
                    ("mode", "intent", "confidence", "threshold", "by", "short_circuit", "reason", "kept"))
# the parts of a message that may each make a request: its sentences, and a clause after ", and" / "; and"
CLAUSES = re.compile(r"(?<=[.?!])\s+|[,;]\s*(?:and|but|also|plus)\s+", re.IGNORECASE)
CLAUSE_WORDS = 4  # a part this long at least can be a request of its own ("could you suggest a mystery?")
CLAUSE_FLOOR = 0.15  # a part whose best agent scores less reads as nobody's
# A member suspended longer ago than this (in user turns) is not resumed unasked: the router offers it.
STALE_AFTER_TURNS = 3
ANYTHING_ELSE = "Is there anything else I can help you with?"
ANYTHING_ELSE_MESSAGE = "anything_else"  # the MESSAGES entry that words it (ABL 3.5.3)
ASKED = "\0asked"  # _choose asked the user a clarifying question instead of choosing
CLARIFY_FLOOR = 0.2  # an agent this far from the message is not offered in a clarifying question
# With no LLM to ask, an unsure routing decision is still taken when the message is this close to
# the best agent's examples and ahead of the runner-up by this much (on bench/understanding's
# labelled messages: 5 of the 97 unsure route decisions, all 5 right; with the keyword score of
# issue 7, 3 of the 74 left unsure, all 3 right; see its README).
LIKELY_SCORE = 0.70
LIKELY_MARGIN = 0.04
WORDS_MARGIN = 0.05  # with no model at all, the member whose words lead the message by this much takes it
GOODBYE = "Goodbye!"  # what an exit policy says to a user who ends the conversation (MICA's exit agent's words)
ENDED_BY_USER = "the user ended the conversation"
# With no model to judge, a message is a goodbye when it is made only of closing words ("thanks, bye",
# "that's all, goodbye", "no, that's all for today") or the embedding model puts it this close to
# GOODBYES (English only; deliberately strict: "no thanks" alone declines an offer, it does not leave).
FAREWELL = re.compile(r"\b(?:good\s*-?\s*bye|bye(?:\s*-?\s*bye)?|see\s+(?:you|ya)|farewell|take\s+care|good\s*night|"
                      r"have\s+a\s+(?:nice|good|great|lovely)\s+(?:day|evening|night|weekend|one)|"
                      r"that'?s\s+(?:all|it|everything)|that\s+is\s+(?:all|it|everything)|"
                      r"i'?m\s+(?:done|all\s+set)|i\s+am\s+(?:done|all\s+set)|nothing\s+(?:else|more))\b")
CLOSING_WORDS = frozenset("thanks thank you so much very a lot ok okay great perfect cool alright fine all right no "
                          "nope for now today then that cheers again really the your help and i need needed wanted "
                          "was it oh well bye".split())
GOODBYES = ("bye", "goodbye", "thanks, bye", "that's all, goodbye", "that's all I needed, thank you",
            "I'm done, thanks", "see you later", "have a nice day", "no thanks, that's everything", "nothing else, bye")
GOODBYE_SCORE = 0.8


# A message that asks for something to be done ("I want to send some money", "I need to block a card"), not a
# question: of a knowledge agent and an agent that acts, both close to it, it is for the one that acts.
REQUEST_TO_ACT = re.compile(r"^\W*(?:(?:ok(?:ay)?|so|hi|hello|well),?\s+)?(?:i\s+(?:want|need|would\s+like|'d\s+like|d\s+like|wish)"
                            r"|i'd\s+like|please\s+\w+|help\s+me)\b", re.IGNORECASE)


def _likeliest_two(scores: dict[str, float]) -> list[str]:
    """The two members the embedding model scores highest, of those close enough to the message to ask about."""
    ranked = sorted(scores.items(), key=lambda kv: kv[1], reverse=True)
    return [name for name, score in ranked[:2] if score >= CLARIFY_FLOOR]


def _to_the_doer(ctx: TurnContext, router: RouterAgent, doer: str, scores: dict[str, float]) -> str:
    ctx.log.emit("route_decided", router.name, agent=doer, by="embedding (a request to act: the agent that acts)",
                 score=round(scores.get(doer, 0.0), 3))
    return doer


def _task_over_knowledge(ctx: TurnContext, text: str, top: list[str], questions: bool = True) -> str | None:
    """Of two likeliest agents that are a knowledge agent and one that acts: the one that acts for a
    request to act (not a question), and (`questions`, with no LLM) the knowledge agent for a general
    question (nothing of the user's in it); None otherwise (the user, or the LLM, is asked which)."""
    if len(top) != 2:
        return None
    agents = [ctx.program.agents.get(n) for n in top]
    knowing = [a for a in agents if isinstance(a, KnowledgeAgent)]
    acting = [a for a in agents if a is not None and not isinstance(a, (KnowledgeAgent, RouterAgent))]
    if len(knowing) != 1 or len(acting) != 1:
        return None
    if "?" not in text and REQUEST_TO_ACT.match(text):
        return acting[0].name
    if questions and text.rstrip().endswith("?") and not re.search(r"\b(?:i|i'm|i'd|i've|me|my|mine)\b", text.lower()):
        # "What is an authorised payee?": a general question, about nothing of the user's, is the knowledge agent's
        return knowing[0].name
    return None


class RouterExecutor:
    def run(self, frame: Frame, ctx: TurnContext) -> Outcome:
        router: RouterAgent = ctx.program.agents[frame.agent]  # type: ignore[assignment]
        data: RouterData = frame.data  # type: ignore[assignment]
        if not frame.started:
            frame.started = True
            if router.setup is not None:
                return Outcome.call(setup_frame(ctx, router))
        if not ctx.input.is_open and not self._second_request(router, frame, ctx):
            return self._after_message(frame, ctx)
        frame.waiting = False
        chosen = data.decisions.pop("route", None) or ctx.input.also
        if chosen is not None and chosen == ctx.input.also:
            ctx.log.emit("route_decided", router.name, agent=chosen, by="the agent that read the message",
                         reason="the message also asks for this")
        ctx.input.also = None
        if chosen != EXIT_CHOICE and (chosen in ctx.input.passed or chosen not in {m.agent for m in router.members}):
            chosen = None
        if chosen != EXIT_CHOICE and self._goodbye_offline(router, ctx):
            # no model to judge: a goodbye ends the conversation, after the member sure to answer it (an FAQ
            # entry that says goodbye) has had it
            ctx.orchestration["goodbye"] = router.name
            chosen = chosen or self._answers_goodbye(router, frame, ctx) or EXIT_CHOICE
        chosen = chosen or self._by_condition(router, frame, ctx) or self._choose(router, frame, ctx)
        if chosen == EXIT_CHOICE:
            return self._exit(router, frame, ctx)
        if chosen == orchestration.BLOCKED:  # a guardrail stopped the message; the user was told
            # a task the message had taken the user away from (a topic switch read before the check) is
            # where the conversation stays: back on the stack, waiting, without asking again
            back = next((t for t in reversed(ctx.threads_of(data.suspended)) if t.suspended_at == ctx.state.turn), None)
            if back is None:
                return Outcome.wait()
            data.suspended.remove(back.id)
            return Outcome.call(resume_thread(ctx, back.id))
        if chosen == ASKED:
            ctx.input.state = "taken"
            frame.waiting = True
            return Outcome.wait()
        if chosen is None and self._default_applies(router, ctx):
            chosen = router.default
            ctx.log.emit("route_decided", router.name, agent=chosen, by="DEFAULT",
                         reason="no routing rule fits the message")
        if chosen is None:
            if ctx.input.passed and (ctx.said or ctx.input.used):
                # An agent finished on this message (and answered it); nobody else wants the rest.
                ctx.input.state = "taken"
                return self._after_message(frame, ctx)
            return self._fallback(router, frame, ctx)
        data.decisions[LAST_MEMBER] = chosen  # autonomous: the agent that reads the next message first
        suspended = ctx.threads_of(data.suspended)
        paused = next((t for t in reversed(suspended) if chosen in t.agents()), None)
        if paused is not None:
            # The user came back to an interrupted task: it takes the message where it stopped.
            data.suspended.remove(paused.id)
            top = resume_thread(ctx, paused.id)
            ctx.log.emit("agent_resumed", top.agent, by=frame.agent, thread=paused.id)
            ctx.input.offer(top, frame.agent)
            return Outcome.call(top)
        ctx.log.emit("handoff_match", router.name, target=chosen)
        if router.policy.tracks_completion:
            ctx.state.system["handoff.completed"] = False
        return Outcome.call(self._activate(router, chosen, ctx))

    def child_finished(self, frame: Frame, child: ChildResult, ctx: TurnContext) -> None:
        data: RouterData = frame.data  # type: ignore[assignment]
        router: RouterAgent = ctx.program.agents[frame.agent]  # type: ignore[assignment]
        member = member_of(router, child.agent)
        if child.setup and child.kind == "done" and ctx.input.state == "taken" and ctx.input.holder == child.frame_id \
                and not any(m.by == router.name for m in ctx.said):
            # Its start steps ended at a `user` step (`steps: [user]`): they run first, then the members
            # handle the message they read (ADL paper B.5), in the same turn.
            ctx.input.hand_on(child.frame_id, router.name, "the start steps read the message for the members")
            return
        if not child.setup and child.kind == "done" and member is not None and child.graph == "main" \
                and router.policy.tracks_completion:  # handoff.completed, ON_RETURN, COMPLETE (ABL supervisors)
            self._member_done(router, frame, member, child, ctx)
            return
        if child.setup or child.kind != "yield" or child.thread is None:
            return
        # RETURN: false: the member's work ends when it gives the conversation back; nothing waits. And
        # "Never mind the card, it was in my pocket. How fast is a transfer?": the user gave up the task as
        # they turned away from it, so it does not come back once the other agent is done.
        ends = ("RETURN: false: its thread ends" if member is not None and not member.resume
                else "the user dropped the task" if DROPS_TASK.match(ctx.input.text or "") else None)
        if ends is not None:
            ctx.drop_thread(child.thread)
            ctx.log.emit("agent_dropped", child.agent, by=frame.agent, reason=ends, thread=child.thread)
            if child.reason == "switch" and child.target:
                data.decisions["route"] = child.target
            return
        # The member keeps its place: it resumes once the agent the user turned to is done. A newer
        # interruption of the same member replaces the older one.
        for older in ctx.threads_of(data.suspended):
            if older.base.agent == child.agent:
                ctx.drop_thread(older.id)
        data.suspended = [t for t in data.suspended if ctx.thread(t) is not None] + [child.thread]
        ctx.log.emit("agent_suspended", child.agent, by=frame.agent, reason=child.reason,
                     switch_to=child.target, thread=child.thread)
        if child.reason == "switch" and child.target:
            data.decisions["route"] = child.target

    # ---- internals -----------------------------------------------------------------

    @staticmethod
    def _second_request(router: RouterAgent, frame: Frame, ctx: TurnContext) -> bool:
        """"How fast is expedited shipping, and could you point me to a whodunit?": the routing model named
        an agent for the second request (`also`); once the first agent is done with the message, in the
        same turn, the message goes to it, unless it has acted on the message already (a flow called it)."""
        pending = frame.data.decisions.pop(orchestration.ALSO_AFTER, None)  # type: ignore[union-attr]
        turn, _, also = (pending or "").partition(":")
        if not also or turn != str(ctx.state.turn) or ctx.input.text is None or ctx.input.state == "none" \
                or also in ctx.input.passed or member_of(router, also) is None:
            return False
        acted = {"agent_started", "agent_resumed", "bot_message", "tool_call"}
        if any(e.type in acted and e.agent == also for e in ctx.log.events):
            return False
        ctx.input.state, ctx.input.holder, ctx.input.used = "open", None, True
        ctx.input.also = also
        return True

    def _candidates(self, router: RouterAgent, frame: Frame, ctx: TurnContext):
        return [ctx.program.agents[m.agent] for m in router.members
                if m.agent in ctx.program.agents and m.agent not in ctx.input.passed]

    def _choose(self, router: RouterAgent, frame: Frame, ctx: TurnContext) -> str | None:
        if ctx.orchestration.get("decided"):
            # a draft's member (or the chosen draft's) gave the message back, or no draft answered it: the
            # strategy decided already, nobody else is asked
            return None
        candidates = self._candidates(router, frame, ctx)
        if not candidates:
            ctx.log.emit("route_decided", router.name, agent=None, by="none left",
                         reason="every member handed the message back")
            return None
        strategy = orchestration.strategy_of(router, ctx)
        if strategy != "adaptive":
            return self._choose_by(strategy, router, frame, ctx, candidates)
        dropping = self._dropped_task(frame, ctx, {c.name for c in candidates})
        if dropping is not None:
            return dropping
        if len(candidates) == 1 and not ctx.input.passed and not (has_exit(router) and ctx.llm_classifies):
            # (with an exit policy the model may judge the message a goodbye: one member is still a choice)
            ctx.log.emit("route_decided", router.name, agent=candidates[0].name, by="only member")
            return candidates[0].name
        pipeline = PipelineConfig.of(router, ctx.program)
        if pipeline.enabled:
            picked, candidates, answered = self._pre_classify(router, candidates, pipeline, ctx)
            if picked is not None:
                return picked
            if answered is not None:  # parallel mode: the routing call was made at the same time
                return routed(router, frame, ctx, answered, {c.name for c in candidates})
        names = [c.name for c in candidates]
        decision = ctx.route_decide(ctx.input.text or "", names, router.name)
        if decision is None and not ctx.llm_classifies:
            return self._by_words(router, ctx, names)
        asked = frame.data.decisions.pop("clarify", None)
        if decision is not None and not decision.sure and not ctx.llm_classifies:
            doer = None if asked else _task_over_knowledge(ctx, ctx.input.text or "", _likeliest_two(decision.scores))
            if doer is not None:
                # "I need to block a card", close to the knowledge agent's card passages and to the card flow:
                # a request to act is for the agent that acts, however the likeliest two are ordered
                return _to_the_doer(ctx, router, doer, decision.scores)
            if not asked and decision.choice is not None and decision.score >= LIKELY_SCORE \
                    and decision.margin >= LIKELY_MARGIN:
                ctx.log.emit("route_decided", router.name, agent=decision.choice, by="embedding (likely, no LLM)",
                             score=round(decision.score, 3), margin=round(decision.margin, 3))
                return decision.choice
            return self._clarify(router, frame, ctx, decision, asked.split("|") if asked else None)
        if decision is not None and decision.sure and decision.choice is None and ctx.llm_classifies:
            # "Nothing fits" from the embedding model means the message is unlike every example
            # ("I'll take it", what an agent left of its message): the LLM is asked rather than the
            # user being told no one can help.
            decision = replace(decision, sure=False)
        if decision is not None and decision.sure and ctx.llm_classifies \
                and self._clause_for_another(router, ctx, names, decision.choice):
            # "How fast is expedited shipping, and could you point me to a decent whodunit?": a part of the
            # message reads as another agent's: the LLM routes it and names the second request (`also`)
            decision = replace(decision, sure=False)
        if decision is not None and not decision.sure and ctx.llm_classifies and not asked \
                and (ctx.orchestration.get("guarded") is True or not orchestration.guard_agents(router, ctx)):
            # with an LLM too, a request to act ("I want to make a transfer.", "Please block my card.") between
            # a knowledge agent and one that acts is for the agent that acts, as offline, when it asks for no
            # second thing and no guardrail waits for the call (issue 29: 5 of 6 routing calls on intent shift)
            doer = _task_over_knowledge(ctx, ctx.input.text or "", _likeliest_two(decision.scores), questions=False)
            if doer is not None and not self._clause_for_another(router, ctx, names, doer):
                return _to_the_doer(ctx, router, doer, decision.scores)
        if decision is not None and decision.sure:
            ctx.log.emit("route_decided", router.name, agent=decision.choice, by="embedding",
                         score=round(decision.score, 3), margin=round(decision.margin, 3))
            return decision.choice
        if decision is not None:
            ctx.log.emit("step", router.name, action="embedding unsure, asking the LLM", best=decision.best,
                         score=round(decision.score, 3), margin=round(decision.margin, 3))
        chosen = llm_route(router, frame, ctx, candidates)
        if chosen in names and ctx.embedding_doubts("route", router.name, chosen) is not None:
            # the embedding model reads the message as another agent's by far: the LLM is asked once more
            chosen = llm_route(router, frame, ctx, candidates, recheck=chosen)
        return chosen

    @staticmethod
    def _clause_for_another(router: RouterAgent, ctx: TurnContext, names: list[str], chosen: str | None) -> bool:
        """Whether a part of the message (a sentence, or a clause after ", and") reads, to the embedding model,
        as another agent's than `chosen` (its best, however unsure): then the message may make two requests,
        and the LLM is asked (one call, on such messages only)."""
        parts = [p for p in CLAUSES.split(ctx.input.text or "") if len(p.split()) >= CLAUSE_WORDS]
        if len(parts) < 2:
            return False
        for part in parts:
            decision = ctx.route_decide(part, names, f"{router.name}:clause")
            if decision is not None and decision.best not in (None, chosen) \
                    and decision.scores.get(decision.best, 0.0) >= CLAUSE_FLOOR:
                ctx.log.emit("step", router.name, action="a part of the message reads as another agent's",
                             part=part, agent=decision.best, score=round(decision.score, 3))
                return True
        return False

    @staticmethod
    def _by_words(router: RouterAgent, ctx: TurnContext, names: list[str]) -> str | None:
        """No embedding model and no model to ask: the member whose words (INTENT keywords, WHEN, its
        goal and examples) the message uses most, when one leads; else None (DEFAULT, or the fallback)."""
        options = ctx.agent_options(names)
        scores = keyword_scores(ctx.input.text or "", options)
        first = first_term_positions(ctx.input.text or "", options)
        # the higher score; on equal scores, the member whose word comes first in the message ("renew a book")
        ranked = sorted(scores, key=lambda name: (-scores[name], first.get(name, 10**6)))
        best = ranked[0] if ranked else None
        runner_up = ranked[1] if len(ranked) > 1 else None
        margin = scores[best] - (scores[runner_up] if runner_up else 0.0) if best else 0.0
        earlier = runner_up is not None and margin == 0 and first.get(best, 10**6) < first.get(runner_up, 10**6)
        if best is None or scores[best] <= 0 or (runner_up is not None and margin < WORDS_MARGIN and not earlier):
            ctx.log.emit("step", router.name, action="no member's words lead (no model to ask)",
                         scores={k: round(scores[k], 3) for k in ranked[:3]})
            return None
        ctx.log.emit("route_decided", router.name, agent=best, by="keywords (no model)", score=round(scores[best], 3),
                     margin=round(margin, 3), **({"tie": "its word comes first"} if earlier else {}))
        return best

    @staticmethod
    def _dropped_task(frame: Frame, ctx: TurnContext, names: set[str]) -> str | None:
        """"Never mind the books. Is the live chat open?" while a task waits: the interrupted agent reads
        it first (it ends its task and names the agent the rest is for), so it does not come back unasked."""
        if not ctx.llm_classifies or not DROPS_TASK.match(ctx.input.text or ""):
            return None
        waiting = ctx.threads_of(frame.data.suspended)  # type: ignore[union-attr]
        agent = waiting[-1].base.agent if waiting else None
        if agent not in names:
            return None
        ctx.log.emit("route_decided", frame.agent, agent=agent, by="the interrupted task",
                     reason="the message drops the task that waits: its agent ends it first")
        return agent

    def _choose_by(self, strategy: str, router: RouterAgent, frame: Frame, ctx: TurnContext,
                   candidates) -> str | None:
        """The member for a message that reached the router itself, under one of the ADL paper's
        strategies (runtime/orchestration.py): no local model decides a route."""
        if strategy in orchestration.DRAFTING:
            return None  # drafting happened before the agents ran; a message left over is not re-drafted
        last = frame.data.decisions.get(LAST_MEMBER)  # type: ignore[union-attr]
        if strategy == "autonomous" and last in {c.name for c in candidates} \
                and ctx.program.agents[last].kind in ("knowledge", "reasoning"):
            # the agent that answered last reads the message and names its successor if it is not its
            ctx.log.emit("route_decided", router.name, agent=last, by="autonomous",
                         reason="the agent that answered last reads the message first")
            ctx.orchestration["autonomous"] = last
            return last
        return llm_route(router, frame, ctx, candidates)

    @staticmethod
    def _by_condition(router: RouterAgent, frame: Frame, ctx: TurnContext) -> str | None:
        """A member whose WHEN is an expression that holds (`channel == "voice"`), in the order written:
        routed there without any model."""
        for member in router.members:
            if not isinstance(member.condition, ExprCondition) or member.agent in ctx.input.passed \
                    or member.agent not in ctx.program.agents:
                continue
            holds = ctx.holds(member.condition, router.name, frame, where="routing WHEN")
            if holds is None:
                continue
            ctx.log.emit("condition_evaluated", router.name, condition=member.condition.source, result=holds,
                         by="expression")
            if holds:
                ctx.log.emit("route_decided", router.name, agent=member.agent, by="WHEN condition",
                             condition=member.condition.source)
                return member.agent
        return None

    def _pre_classify(self, router: RouterAgent, candidates, pipeline: PipelineConfig, ctx: TurnContext):
        """ABL 3.15: a fast classifier reads the message before the routing call. Sure enough (one
        intent, confidence at the threshold, no veto keyword): the member is chosen and the routing
        call is never made (sequential) or its answer is not used (parallel). Otherwise the routing
        call sees only the `maxTools` likeliest members (sequential), or its answer, made at the same
        time as the classifier's, decides (parallel). Offline the local understanding model is the
        classifier (a decision sure by the program's thresholds counts as confident: its scores are
        similarities, not probabilities); with an LLM and no local model, a small classify call is.
        Returns the member chosen (or None), the candidates left, and the parallel routing call's answer."""
        text = ctx.input.text or ""
        names = [c.name for c in candidates]
        intent, confidence, scores, by = None, 0.0, {}, "none"
        sure = False
        answered: LLMResponse | LLMError | None = None
        decision = ctx.route_decide(text, names, router.name)
        if decision is not None:
            by, scores = "embedding", dict(decision.scores)
            intent, confidence = decision.choice, round(decision.score, 3)
            sure = decision.sure and intent is not None
        elif ctx.llm_classifies:
            by = "llm"
            classify = prompts.classify_request(router, candidates, text, pipeline.model)
            if pipeline.mode == "parallel":
                # the classifier and the routing call at the same time (abl-specification 3.15)
                response, answered = complete_together(
                    ctx, router.name, [classify, route_request(router, candidates, ctx)])
            else:
                try:
                    response = ctx.complete(classify, router.name)
                except LLMError as exc:
                    response = exc
            if isinstance(response, LLMError):
                ctx.log.emit("error", router.name, where="pre-classification", message=str(response))
            else:
                args = response.tool_calls[0].arguments if response.tool_calls else {}
                intent = args.get("intent") if args.get("intent") in names else None
                try:
                    confidence = max(0.0, min(1.0, float(args.get("confidence", 0.0))))
                except (TypeError, ValueError):
                    confidence = 0.0
                if intent is not None:
                    scores = {n: (confidence if n == intent else 0.0) for n in names}
            sure = intent is not None and confidence >= pipeline.threshold
        vetoed = pipeline.vetoed_by(text)
        short = pipeline.short_circuit and sure and not vetoed
        if not pipeline.short_circuit:
            reason = "short-circuit is off"
        elif intent is None:
            reason = "no single intent"
        elif not sure:
            reason = (f"confidence {confidence} below {pipeline.threshold}" if by == "llm"
                      else "the local model is not sure")
        elif vetoed:
            reason = "keyword veto: " + ", ".join(vetoed)
        else:
            reason = "single intent, confident, no veto keyword"
        kept = names
        if not short and answered is None and pipeline.tool_filter and len(names) > pipeline.max_tools:
            ranked = sorted(names, key=lambda n: scores.get(n, 0.0), reverse=True)
            kept = [n for n in names if n in set(ranked[:pipeline.max_tools])]
        ctx.log.emit("pre_classification", router.name, mode=pipeline.mode, intent=intent, confidence=confidence,
                     threshold=pipeline.threshold, by=by, short_circuit=short, reason=reason, kept=kept,
                     model=(pipeline.model or "the configured chat model") if by == "llm"
                     else "local understanding model", model_from=pipeline.model_from,
                     concurrent=answered is not None)
        if short:
            if pipeline.mode == "parallel" and ctx.llm_classifies and answered is None:
                # Parallel mode with the local model as the classifier: the main call is paid for anyway.
                try:
                    ctx.complete(route_request(router, candidates, ctx), router.name)
                except LLMError as exc:
                    ctx.log.emit("error", router.name, where="routing (parallel)", message=str(exc))
            elif isinstance(answered, LLMError):
                ctx.log.emit("error", router.name, where="routing (parallel)", message=str(answered))
            ctx.log.emit("route_decided", router.name, agent=intent, by=f"pre-classification ({by})",
                         confidence=confidence)
            return intent, candidates, None
        return None, [c for c in candidates if c.name in kept], answered

    def _clarify(self, router: RouterAgent, frame: Frame, ctx: TurnContext, decision,
                 asked: list[str] | None) -> str | None:
        """No LLM to settle an unsure choice: ask the user which of the two likeliest agents they
        mean, and read their answer against just those two on the next message."""
        text = ctx.input.text or ""
        if asked:
            words = set(re.findall(r"[a-z0-9]+", text.lower()))
            pick = None
            if words & {"first", "1", "former"} or (polarity(text) > 0 and len(words) <= 3):
                pick = asked[0]
            elif words & {"second", "2", "latter"}:
                pick = asked[1]
            elif decision.best in asked:
                pick = decision.best
            if pick is not None:
                ctx.state.system.pop("_disambiguation_intents", None)
                ctx.log.emit("route_decided", router.name, agent=pick, by="embedding, after a clarifying question",
                             score=round(decision.score, 3))
                return pick
        top = _likeliest_two(decision.scores)
        # (with no question asked yet, _choose looked for the agent that acts already)
        doer = _task_over_knowledge(ctx, text, top) if asked else None
        if doer is not None:
            return _to_the_doer(ctx, router, doer, decision.scores)
        if len(top) == 1 and isinstance(ctx.program.agents.get(top[0]), KnowledgeAgent) and not asked:
            # "Do you deliver to Alaska?": the one member near enough to ask about is a knowledge agent: it
            # answers from its sources or says it has nothing (and the message comes back), where a choice of
            # one would be no question and "nobody can help" would be wrong
            ctx.log.emit("route_decided", router.name, agent=top[0], by="embedding (unsure; the only member "
                         "near enough is a knowledge agent, which answers only from its sources)",
                         score=round(decision.score, 3))
            return top[0]
        if len(top) < 2:
            ctx.log.emit("route_decided", router.name, agent=None, by="embedding (unsure, no LLM to ask)",
                         score=round(decision.score, 3))
            return None
        frame.data.decisions["clarify"] = "|".join(top)
        if router.policy.system_variables:  # 8.8: the intents the user is asked to choose between
            ctx.state.system["_disambiguation_intents"] = list(top)
        lines = [f"- {describe_agent(ctx.program.agents[n])}" for n in top]
        ctx.log.emit("step", router.name, action="clarifying question", candidates=top,
                     scores=[round(decision.scores[n], 3) for n in top])
        ctx.say(router.name, "Just to be sure I understand: which of these do you need?\n" + "\n".join(lines), frame)
        return ASKED

    def _activate(self, router: RouterAgent, member: str, ctx: TurnContext) -> Frame:
        spec = next(m for m in router.members if m.agent == member)
        for b in spec.bindings:
            if not b.two_way:  # two-way bindings are aliases: nothing to copy
                value = ctx.read(Ref(scope=router.name, name=b.router_arg), router.name)
                if value is not None:
                    ctx.write(member, b.member_arg, value, router.name, why=f"bound to {router.name}.{b.router_arg}")
        passed = self._pass_values(router, spec, ctx)
        child = new_frame(ctx, member, offer_input_by=router.name)
        if spec.handoff is not None:
            receiver_context(ctx, router.name, spec.handoff, child, passed)
        return child

    @staticmethod
    def _pass_values(router: RouterAgent, spec: RouterMember, ctx: TurnContext) -> list[str]:
        """CONTEXT.pass: the supervisor's values (its own, else the session's) copied to the member."""
        passed = []
        for path in spec.passes:
            name = path.split(".")[-1]
            value = ctx.read(Ref(scope=router.name, name=name), router.name)
            if value is None:
                value = ctx.read(Ref(scope="session", name=name), router.name)
            if value is not None:
                ctx.write(spec.agent, name, value, router.name, why=f"CONTEXT.pass of {router.name}")
                passed.append(name)
        return passed

    def _member_done(self, router: RouterAgent, frame: Frame, member: RouterMember, child: ChildResult,
                     ctx: TurnContext) -> None:
        """A member ended: `handoff.completed` becomes true and its ON_RETURN map is read into the
        supervisor's values; the supervisor's COMPLETE rules are looked at once the message is dealt with."""
        ctx.log.emit("thread_return", child.agent, thread=child.frame_id, reason="completed", to=router.name)
        handoff_returned(ctx, router.name, member.handoff, child)
        frame.data.decisions["completed"] = child.agent  # type: ignore[union-attr]
        frame.data.decisions["completed_status"] = child.status  # type: ignore[union-attr]

    def _job_done(self, frame: Frame, completed: str, status: str, ctx: TurnContext) -> Outcome | None:
        """A member ended and nothing waits: is the supervisor's job done (abl-semantics, "A member that
        completes under a supervisor")? With COMPLETE rules, when one holds; with none, when the member
        it routed the request to ended with success. Done, the supervisor ends (the session with it when
        it is the entry agent); otherwise it waits for the next request."""
        router: RouterAgent = ctx.program.agents[frame.agent]  # type: ignore[assignment]
        if router.rules.complete:
            if not self._complete_rules(frame, ctx):
                return None
            reason = "a COMPLETE condition holds"
        elif status == "success":
            reason = f"{completed} completed the request"
        else:
            return None
        ctx.log.emit("step", router.name, action="job done", reason=reason)
        return Done(status="success", message=reason)

    def _complete_rules(self, frame: Frame, ctx: TurnContext) -> bool:
        """The supervisor's COMPLETE rules (`handoff.completed == true`): the first that holds says its words
        (and the supervisor's job is done)."""
        router: RouterAgent = ctx.program.agents[frame.agent]  # type: ignore[assignment]
        rules = router.rules
        if not rules.complete:
            return False

        for rule in rules.complete:
            if not ctx.holds(rule.when, router.name, frame, where="completion", failure="error"):
                continue
            asked = bool(ctx.said) and ctx.said[-1].text.rstrip().endswith("?")
            ctx.log.emit("step", router.name, action="complete", condition=rule.when.source,
                         silent=asked or rule.action.respond is None)
            if rule.action.respond is not None and not asked:  # a member that ended on a question asked it
                ctx.say(router.name, ctx.render(rule.action.respond, router.name, frame), frame)
            return True
        return False

    @staticmethod
    def _default_applies(router: RouterAgent, ctx: TurnContext) -> bool:
        """ROUTING DEFAULT takes a message no rule fits (not one an agent already had, nor after an apology)."""
        if router.default is None or router.default not in ctx.program.agents or ctx.input.passed:
            return False
        return not (ctx.said and ctx.said[-1].text == ROUTE_APOLOGY)

    def _after_message(self, frame: Frame, ctx: TurnContext) -> Outcome:
        """The user's message is dealt with: go back to an interrupted task, or wait."""
        completed = frame.data.decisions.pop("completed", None)  # a member ended this turn
        status = frame.data.decisions.pop("completed_status", "success")
        if ctx.orchestration.get("goodbye") == frame.agent and ctx.input.text is not None:
            # a member answered the user's goodbye: nothing interrupted comes back after it
            return self._exit(ctx.program.agents[frame.agent], frame, ctx)  # type: ignore[arg-type]
        if ctx.threads_of(frame.data.suspended):
            resumed = self._resume(frame, ctx)
            if resumed is not None:
                return resumed  # the interrupted task goes on: the supervisor is not done
        if completed is not None and ctx.program.agents[frame.agent].policy.tracks_completion:
            if check_triggers(ctx):  # an ESCALATE trigger holds now: a person, not "anything else?"
                frame.waiting = True
                return Outcome.wait()
            done = self._job_done(frame, completed, status, ctx)
            if done is not None:
                return done
            if not (ctx.said and ctx.said[-1].text.rstrip().endswith("?")):
                # its job goes on: the next request is the user's (unless the member ended on a question)
                ctx.say(frame.agent, message(ctx, frame.agent, ANYTHING_ELSE_MESSAGE, ANYTHING_ELSE), frame)
        if ctx.input.text is not None and not ctx.said:
            # An agent finished on the message without a word: the user still gets an answer.
            ctx.say(frame.agent, ANYTHING_ELSE, frame)
        frame.waiting = True
        return Outcome.wait()

    def _resume(self, frame: Frame, ctx: TurnContext) -> Outcome | None:
        """Bring back the most recently interrupted task, unless it is stale: then offer it once."""
        data: RouterData = frame.data  # type: ignore[assignment]
        data.suspended = [t for t in data.suspended if ctx.thread(t) is not None]
        child = ctx.threads_of(data.suspended)[-1]
        if ctx.state.turn - child.suspended_at > STALE_AFTER_TURNS:
            if not child.offered:
                child.offered = True
                name = child.base.agent
                agent = ctx.program.agents.get(name)
                what = (agent.description.strip().rstrip(".") if agent and agent.description.strip()
                        else name.replace("_", " "))
                ctx.log.emit("step", frame.agent, action="offer an interrupted task", agent=name,
                             waited_turns=ctx.state.turn - child.suspended_at)
                ctx.say(frame.agent, f"We can get back to what we left earlier whenever you like ({what}).", frame)
            return None
        data.suspended.pop()
        top = resume_thread(ctx, child.id)
        ctx.log.emit("agent_resumed", top.agent, by=frame.agent, thread=child.id)
        top.reask = True  # it asks its question again (with the values of now) when it runs
        return Outcome.call(top)

    @staticmethod
    def _goodbye_offline(router: RouterAgent, ctx: TurnContext) -> bool:
        """With no model that judges (none, or only the small local one), whether the message ends the
        conversation, for a router with an exit policy: by its words, else by the embedding model."""
        if not has_exit(router) or ctx.llm_classifies or ctx.orchestration.get("goodbye"):
            return False
        return says_goodbye(ctx, router.name, ctx.input.text or "")

    def _answers_goodbye(self, router: RouterAgent, frame: Frame, ctx: TurnContext) -> str | None:
        """The member the embedding model is sure the goodbye is for (an FAQ entry "Thanks, bye"), if any."""
        names = [c.name for c in self._candidates(router, frame, ctx)]
        decision = ctx.route_decide(ctx.input.text or "", names, router.name) \
            if names else None
        if decision is None or not decision.sure or decision.choice is None:
            return None
        ctx.log.emit("route_decided", router.name, agent=decision.choice, by="embedding",
                     reason="a goodbye this member answers; the conversation ends after it",
                     score=round(decision.score, 3))
        return decision.choice

    def _exit(self, router: RouterAgent, frame: Frame, ctx: TurnContext) -> Outcome:
        """The user ended the conversation: the tasks that wait are dropped, the exit policy says goodbye
        (unless an agent already answered the message) and the session ends."""
        data: RouterData = frame.data  # type: ignore[assignment]
        for thread in ctx.threads_of(data.suspended):
            ctx.drop_thread(thread.id)
            ctx.log.emit("agent_dropped", thread.base.agent, by=router.name, reason=ENDED_BY_USER, thread=thread.id)
        data.suspended = []
        if ctx.input.is_open:
            ctx.input.state = "taken"
        ctx.log.emit("step", router.name, action="exit policy", policy=router.exit.shown() if router.exit else None,
                     reason=ENDED_BY_USER)
        if not ctx.said:
            ctx.say(router.name, policy_words(ctx, router.name, router.exit, "exit")
                    if router.exit is not None and router.exit.kind == "text" else exit_words(router), frame)
        return Done(status="success", message=ENDED_BY_USER, ends_conversation=True)

    def _fallback(self, router: RouterAgent, frame: Frame, ctx: TurnContext) -> Outcome:
        policy = router.fallback
        ctx.log.emit("fallback", router.name, reason="no agent fits the message",
                     policy=policy.shown() if policy else None)
        if policy is not None and policy.kind == "agent" and policy.value in ctx.program.agents \
                and policy.value not in ctx.input.passed:
            return Outcome.call(new_frame(ctx, policy.value, offer_input_by=f"fallback policy of {router.name}"))
        ctx.input.state = "taken"
        if ctx.said and ctx.said[-1].text == ROUTE_APOLOGY:
            frame.waiting = True
            return Outcome.wait()
        if ctx.input.passed and ctx.said:
            # what was for the agents that took it got its answer; the rest is for nobody
            ctx.say(router.name, ANYTHING_ELSE, frame)
            frame.waiting = True
            return Outcome.wait()
        if policy is None or policy.kind == "default":
            # what the assistant can do: every member's, also those that had the message and gave it back
            members = [ctx.program.agents[m.agent] for m in router.members if m.agent in ctx.program.agents]
            helps = "; ".join(a.description.strip().rstrip(".") for a in members if a.description.strip())
            message = "Sorry, I can't help with that." + (f" I can help with: {helps}." if helps else "")
        else:
            message = policy_words(ctx, router.name, policy, "fallback")
        ctx.say(router.name, message, frame)
        if ctx.threads_of(frame.data.suspended):  # type: ignore[union-attr]
            # a task the message interrupted comes back, asking its question again: the user is where they were
            resumed = self._resume(frame, ctx)
            if resumed is not None:
                return resumed
        frame.waiting = True
        return Outcome.wait()


def member_of(router: RouterAgent | None, name: str) -> RouterMember | None:
    if router is None:
        return None
    return router.member(name)


def exit_words(router: RouterAgent) -> str:
    """What the exit policy says: a text policy's quoted sentence when it has one, else "Goodbye!"."""
    policy = router.exit
    quoted = re.search(r'"([^"]+)"|“([^”]+)”', policy.value) if policy is not None and policy.kind == "text" else None
    return (quoted.group(1) or quoted.group(2)) if quoted else GOODBYE


def typed_goodbye(text: str) -> bool:
    """Whether the message is made only of closing words and names a way of leaving ("thanks, bye")."""
    lowered = text.lower().replace("’", "'")
    if "?" in lowered or not FAREWELL.search(lowered):
        return False
    return all(word in CLOSING_WORDS for word in re.findall(r"[a-z']+", FAREWELL.sub(" ", lowered)))


def says_goodbye(ctx: TurnContext, agent: str, text: str) -> bool:
    """Whether a message ends the conversation, judged without a model: its words, else the embedding
    model sure it is like GOODBYES (never the small local generator)."""
    if not text.strip() or "?" in text:
        return False
    if typed_goodbye(text):
        ctx.log.emit("step", agent, action="the user ends the conversation", by="closing words")
        return True
    if ctx.understanding is None:
        return False
    try:
        decision = ctx.understanding.decide(text, [Option(EXIT_CHOICE, GOODBYES)], "route",
                                            Thresholds(accept=GOODBYE_SCORE, margin=0.0, reject=GOODBYE_SCORE))
    except Exception as exc:  # noqa: BLE001 - a broken local model must not end the conversation
        ctx.log.emit("error", agent, where="goodbye by embedding", message=f"{type(exc).__name__}: {exc}")
        return False
    if decision.sure and decision.choice == EXIT_CHOICE:
        ctx.log.emit("step", agent, action="the user ends the conversation", by="embedding",
                     score=round(decision.score, 3))
        return True
    return False


# ---- ABL 3.15: the supervisor's pre-classification pipeline (its settings: runtime/preclassify.py) ---------


CLASSIFY_TOOL = prompts.CLASSIFY_TOOL
CLASSIFY_MAX_TOKENS = prompts.CLASSIFY_MAX_TOKENS


class _Answered:
    """Stands in for the provider while answers of calls already made are recorded (ctx.complete)."""

    def __init__(self, llm, answers: dict[int, LLMResponse | LLMError]) -> None:
        self.name = llm.name
        self.can_classify = getattr(llm, "can_classify", True)
        self._answers = answers

    def complete(self, request: LLMRequest) -> LLMResponse:
        answer = self._answers[id(request)]
        if isinstance(answer, LLMError):
            raise answer
        return answer


def complete_together(ctx: TurnContext, agent: str, requests: list[LLMRequest]) -> list[LLMResponse | LLMError]:
    """Make several model calls at the same time (a thread each) and record them in the order given.
    A provider whose answers depend on the order of the calls (`ordered`, the scripted one) gets them one
    after the other. A failed call is its LLMError in the list."""
    llm = ctx.llm
    answers: dict[int, LLMResponse | LLMError] = {}

    def ask(request: LLMRequest) -> LLMResponse | LLMError:
        try:
            return llm.complete(request)  # type: ignore[union-attr]
        except LLMError as exc:
            return exc

    def in_order() -> list[LLMResponse | LLMError]:
        # through ctx.complete, so each call is recorded (llm_call event, usage) in the order given
        out: list[LLMResponse | LLMError] = []
        for request in requests:
            try:
                out.append(ctx.complete(request, agent))
            except LLMError as exc:
                out.append(exc)
        return out

    if llm is None or getattr(llm, "ordered", False) or len(requests) < 2:
        return in_order()
    with ThreadPoolExecutor(max_workers=len(requests), thread_name_prefix="frontdesk-llm") as pool:
        futures = [pool.submit(ask, request) for request in requests]
        for request, future in zip(requests, futures):
            answers[id(request)] = future.result()
    ctx.llm = _Answered(llm, answers)  # the answers are in hand: recording them calls nothing again
    try:
        return in_order()
    finally:
        ctx.llm = llm


def digression_by_llm(ctx: TurnContext, frame: Frame, text: str) -> str | None:
    """An ABL flow under a supervisor asked for a field and the message gave none by pattern: with no
    local understanding model, one `understand` call says whether the user turned to another member
    (`switch:<agent>`) or not (`none`). No call for a message of fewer than two words ("100", "ok")."""
    others = switch_candidates(ctx, frame)
    if not others or not ctx.llm_classifies or not text or few_words(text):
        return None
    request = prompts.understand_request(ctx.program.agents[frame.agent], [], others, [], ctx.state.history,
                                         ctx.program.settings.history_window)
    call = ctx.call_args(request, frame.agent, "digression")
    if call is None:
        return None
    choice = str(call.get("choice") or "")
    target = choice[len("switch:"):] if choice.startswith("switch:") else None
    if target not in {a.name for a in others}:
        ctx.log.emit("step", frame.agent, action="no digression: the LLM read the message as for this agent",
                     choice=choice or prompts.NONE_CHOICE)
        return None
    ctx.log.emit("route_decided", frame.agent, agent=target, by="understand (llm)", reason="the user changed topic")
    return target
