"""The router executor: ADL ensembles (and later ABL supervisors) choosing who handles a message."""

from __future__ import annotations

import re
from dataclasses import replace

from frontdesk.ir.models import Ref, RouterAgent
from frontdesk.llm.base import LLMError
from frontdesk.nlu.matcher import polarity
from frontdesk.runtime import prompts
from frontdesk.runtime.context import ChildResult, Outcome, TurnContext
from frontdesk.runtime.events import register_event_type
from frontdesk.runtime.policies import new_frame, policy_message, setup_frame
from frontdesk.runtime.state import Frame, RouterData

register_event_type("handoff_match", "a router handed the conversation to a member it started", ("target",))
# A member suspended longer ago than this (in user turns) is not resumed unasked: the router offers it.
STALE_AFTER_TURNS = 3
ROUTE_APOLOGY = "Sorry, I'm having trouble right now. Could you say that again in a moment?"
ANYTHING_ELSE = "Is there anything else I can help you with?"
ASKED = "\0asked"  # _choose asked the user a clarifying question instead of choosing
CLARIFY_FLOOR = 0.2  # an agent this far from the message is not offered in a clarifying question
# With no LLM to ask, an unsure routing decision is still taken when the message is this close to
# the best agent's examples and ahead of the runner-up by this much (on bench/understanding's
# labelled messages: 5 of the 97 unsure route decisions, all 5 right; with the keyword score of
# issue 7, 3 of the 74 left unsure, all 3 right; see its README).
LIKELY_SCORE = 0.70
LIKELY_MARGIN = 0.04


def describe_agent(agent) -> str:
    text = (agent.description or "").strip().rstrip(".")
    return text or agent.name.replace("_", " ")


class RouterExecutor:
    def run(self, frame: Frame, ctx: TurnContext) -> Outcome:
        router: RouterAgent = ctx.program.agents[frame.agent]  # type: ignore[assignment]
        data: RouterData = frame.data  # type: ignore[assignment]
        if not frame.started:
            frame.started = True
            if router.setup is not None:
                return Outcome.call(setup_frame(ctx, router))
        if not ctx.input.is_open:
            return self._after_message(frame, ctx)
        frame.waiting = False
        chosen = data.decisions.pop("route", None) or ctx.input.also
        if chosen is not None and chosen == ctx.input.also:
            ctx.log.emit("route_decided", router.name, agent=chosen, by="the agent that read the message",
                         reason="the message also asks for this")
        ctx.input.also = None
        if chosen in ctx.input.passed or chosen not in {m.agent for m in router.members}:
            chosen = None
        chosen = chosen or self._choose(router, frame, ctx)
        if chosen == ASKED:
            ctx.input.state = "taken"
            frame.waiting = True
            return Outcome.wait()
        if chosen is None:
            if ctx.input.passed and (ctx.said or ctx.input.used):
                # An agent finished on this message (and answered it); nobody else wants the rest.
                ctx.input.state = "taken"
                return self._after_message(frame, ctx)
            return self._fallback(router, frame, ctx)
        suspended = ctx.threads_of(data.suspended)
        paused = next((t for t in reversed(suspended) if chosen in t.agents()), None)
        if paused is not None:
            # The user came back to an interrupted task: it takes the message where it stopped.
            data.suspended.remove(paused.id)
            top = ctx.resume_thread(paused.id)
            ctx.log.emit("agent_resumed", top.agent, by=frame.agent, thread=paused.id)
            ctx.input.offer(top, frame.agent)
            return Outcome.call(top)
        ctx.log.emit("handoff_match", router.name, target=chosen)
        return Outcome.call(self._activate(router, chosen, ctx))

    def child_finished(self, frame: Frame, child: ChildResult, ctx: TurnContext) -> None:
        data: RouterData = frame.data  # type: ignore[assignment]
        if child.setup or child.kind != "yield" or child.thread is None:
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

    def _candidates(self, router: RouterAgent, frame: Frame, ctx: TurnContext):
        return [ctx.program.agents[m.agent] for m in router.members
                if m.agent in ctx.program.agents and m.agent not in ctx.input.passed]

    def _choose(self, router: RouterAgent, frame: Frame, ctx: TurnContext) -> str | None:
        candidates = self._candidates(router, frame, ctx)
        if not candidates:
            ctx.log.emit("route_decided", router.name, agent=None, by="none left",
                         reason="every member handed the message back")
            return None
        if len(candidates) == 1 and not ctx.input.passed:
            ctx.log.emit("route_decided", router.name, agent=candidates[0].name, by="only member")
            return candidates[0].name
        names = [c.name for c in candidates]
        decision = ctx.embed_decide(ctx.input.text or "", ctx.agent_options(names), "route", router.name)
        asked = frame.data.decisions.pop("clarify", None)
        if decision is not None and not decision.sure and not ctx.llm_classifies:
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
        if decision is not None and decision.sure:
            ctx.log.emit("route_decided", router.name, agent=decision.choice, by="embedding",
                         score=round(decision.score, 3), margin=round(decision.margin, 3))
            return decision.choice
        if decision is not None:
            ctx.log.emit("step", router.name, action="embedding unsure, asking the LLM", best=decision.best,
                         score=round(decision.score, 3), margin=round(decision.margin, 3))
        request = prompts.route_request(router, candidates, ctx.state.history,
                                        ctx.program.settings.history_window)
        try:
            response = ctx.complete(request, router.name)
        except LLMError as exc:
            ctx.log.emit("error", router.name, where="routing", message=str(exc))
            ctx.say(router.name, ROUTE_APOLOGY, frame)
            return None
        names = {c.name for c in candidates}
        choice = None
        if response.tool_calls:
            choice = response.tool_calls[0].arguments.get("agent")
        elif response.content:
            choice = next((n for n in names if n in response.content), None)
        if choice not in names:
            choice = None
        ctx.log.emit("route_decided", router.name, agent=choice, by="llm")
        return choice

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
                ctx.log.emit("route_decided", router.name, agent=pick, by="embedding, after a clarifying question",
                             score=round(decision.score, 3))
                return pick
        ranked = sorted(decision.scores.items(), key=lambda kv: kv[1], reverse=True)
        top = [name for name, score in ranked[:2] if score >= CLARIFY_FLOOR]
        if len(top) < 2:
            ctx.log.emit("route_decided", router.name, agent=None, by="embedding (unsure, no LLM to ask)",
                         score=round(decision.score, 3))
            return None
        frame.data.decisions["clarify"] = "|".join(top)
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
        return new_frame(ctx, member, offer_input_by=router.name)

    def _after_message(self, frame: Frame, ctx: TurnContext) -> Outcome:
        """The user's message is dealt with: go back to an interrupted task, or wait."""
        if ctx.threads_of(frame.data.suspended):
            resumed = self._resume(frame, ctx)
            if resumed is not None:
                return resumed
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
        top = ctx.resume_thread(child.id)
        ctx.log.emit("agent_resumed", top.agent, by=frame.agent, thread=child.id)
        top.reask = True  # it asks its question again (with the values of now) when it runs
        return Outcome.call(top)

    def _fallback(self, router: RouterAgent, frame: Frame, ctx: TurnContext) -> Outcome:
        policy = router.fallback
        ctx.log.emit("fallback", router.name, reason="no agent fits the message",
                     policy=policy.model_dump() if policy else None)
        if policy is not None and policy.kind == "agent" and policy.value in ctx.program.agents \
                and policy.value not in ctx.input.passed:
            return Outcome.call(new_frame(ctx, policy.value, offer_input_by=f"fallback policy of {router.name}"))
        ctx.input.state = "taken"
        if ctx.said and ctx.said[-1].text == ROUTE_APOLOGY:
            frame.waiting = True
            return Outcome.wait()
        if ctx.input.passed:
            ctx.say(router.name, ANYTHING_ELSE, frame)
            frame.waiting = True
            return Outcome.wait()
        if policy is None or policy.kind == "default":
            helps = "; ".join(a.description.strip().rstrip(".") for a in self._candidates(router, frame, ctx)
                              if a.description.strip())
            message = "Sorry, I can't help with that." + (f" I can help with: {helps}." if helps else "")
        else:
            message = policy_message(policy)
        ctx.say(router.name, message, frame)
        frame.waiting = True
        return Outcome.wait()
