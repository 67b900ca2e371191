"""The router executor: ADL ensembles (and later ABL supervisors) choosing who handles a message."""

from __future__ import annotations

import re
from dataclasses import replace

from frontdesk.ir.models import RouterAgent
from frontdesk.nlu.matcher import polarity
from frontdesk.llm.base import LLMError
from frontdesk.runtime import prompts
from frontdesk.runtime.context import Outcome, TurnContext
from frontdesk.runtime.policies import new_frame, policy_message, setup_frame
from frontdesk.runtime.state import Frame

MAX_SUSPENDED = 4
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
        if not frame.started:
            frame.started = True
            if router.setup is not None:
                return Outcome.push(setup_frame(ctx, router))
        if not ctx.input.is_open:
            return self._after_message(frame, ctx)
        frame.waiting = False
        chosen = frame.decisions.pop("route", None) or ctx.input.also
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
        paused = next((f for f in reversed(frame.suspended) if chosen in (f.agent, *(c.agent for c in f.called))),
                      None)
        if paused is not None:
            # The user came back to an interrupted task: it takes the message where it stopped.
            frame.suspended.remove(paused)
            paused.offered = False
            top = self._restore(paused, ctx)
            ctx.log.emit("agent_resumed", top.agent, by=frame.agent)
            ctx.input.offer(top, frame.agent)
            return Outcome.push(top)
        return Outcome.push(self._activate(router, chosen, ctx))

    @staticmethod
    def _restore(paused: Frame, ctx: TurnContext) -> Frame:
        """Put a suspended member back with the agents it had called above it; the top one runs."""
        chain = [paused, *paused.called]
        paused.called = []
        ctx.state.stack.extend(chain[:-1])
        return chain[-1]

    def child_finished(self, frame: Frame, child: Frame, outcome: Outcome, ctx: TurnContext) -> None:
        if child.graph == "setup":
            return
        if outcome.kind in ("hand_back", "switch"):
            # The member keeps its place: it resumes once the agent the user turned to is done.
            child.waiting = True
            child.suspended_at = ctx.state.turn
            frame.suspended = [f for f in frame.suspended if f.agent != child.agent][-(MAX_SUSPENDED - 1):]
            frame.suspended.append(child)
            ctx.log.emit("agent_suspended", child.agent, by=frame.agent, reason=outcome.kind,
                         switch_to=outcome.target)
            if outcome.kind == "switch" and outcome.target:
                frame.decisions["route"] = outcome.target

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
        asked = frame.decisions.pop("clarify", None)
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
        frame.decisions["clarify"] = "|".join(top)
        lines = [f"- {describe_agent(ctx.program.agents[n])}" for n in top]
        ctx.log.emit("step", router.name, action="clarifying question", candidates=top,
                     scores=[round(decision.scores[n], 3) for n in top])
        ctx.say(router.name, "Just to be sure I understand: which of these do you need?\n" + "\n".join(lines), frame)
        return ASKED

    def _activate(self, router: RouterAgent, member: str, ctx: TurnContext) -> Frame:
        spec = next(m for m in router.members if m.agent == member)
        for b in spec.bindings:
            if not b.two_way:  # two-way bindings are aliases: nothing to copy
                value = ctx.state.records.get(router.name, {}).get(b.router_arg)
                if value is not None:
                    ctx.write(member, b.member_arg, value, router.name, why=f"bound to {router.name}.{b.router_arg}")
        return new_frame(ctx, member, offer_input_by=router.name)

    def _after_message(self, frame: Frame, ctx: TurnContext) -> Outcome:
        """The user's message is dealt with: go back to an interrupted task, or wait."""
        if frame.suspended:
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
        child = frame.suspended[-1]
        if ctx.state.turn - child.suspended_at > STALE_AFTER_TURNS:
            if not child.offered:
                child.offered = True
                name = child.agent
                agent = ctx.program.agents.get(name)
                what = (agent.description.strip().rstrip(".") if agent and agent.description.strip()
                        else name.replace("_", " "))
                ctx.log.emit("step", frame.agent, action="offer an interrupted task", agent=name,
                             waited_turns=ctx.state.turn - child.suspended_at)
                ctx.say(frame.agent, f"We can get back to what we left earlier whenever you like ({what}).", frame)
            return None
        frame.suspended.pop()
        top = self._restore(child, ctx)
        ctx.log.emit("agent_resumed", top.agent, by=frame.agent)
        if top.last_prompt:
            ctx.say(top.agent, top.last_prompt, top)
        return Outcome.push(top)

    def _fallback(self, router: RouterAgent, frame: Frame, ctx: TurnContext) -> Outcome:
        policy = router.fallback
        ctx.log.emit("fallback", router.name, reason="no agent fits the message",
                     policy=policy.model_dump() if policy else None)
        if policy is not None and policy.kind == "agent" and policy.value in ctx.program.agents \
                and policy.value not in ctx.input.passed:
            return Outcome.push(new_frame(ctx, policy.value, offer_input_by=f"fallback policy of {router.name}"))
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
