"""The router executor: ADL ensembles (and later ABL supervisors) choosing who handles a message."""

from __future__ import annotations

from frontdesk.ir.models import RouterAgent
from frontdesk.llm.base import LLMError
from frontdesk.runtime import prompts
from frontdesk.runtime.context import Outcome, TurnContext
from frontdesk.runtime.policies import new_frame, policy_message, setup_frame
from frontdesk.runtime.state import Frame

MAX_SUSPENDED = 4
ROUTE_APOLOGY = "Sorry, I'm having trouble right now. Could you say that again in a moment?"


class RouterExecutor:
    def run(self, frame: Frame, ctx: TurnContext) -> Outcome:
        router: RouterAgent = ctx.program.agents[frame.agent]  # type: ignore[assignment]
        if not frame.started:
            frame.started = True
            if router.setup is not None:
                return Outcome.push(setup_frame(router))
        if frame.pending_input is None:
            if frame.suspended:
                return self._resume(frame, ctx)
            frame.waiting = True
            return Outcome.wait()
        text = frame.pending_input
        frame.pending_input = None
        frame.waiting = False
        chosen = frame.decisions.pop("route", None) or self._choose(router, frame, ctx)
        if chosen is None:
            return self._fallback(router, frame, ctx, text)
        frame.excluded = []
        paused = next((f for f in frame.suspended if f.agent == chosen), None)
        if paused is not None:
            # The user came back to an interrupted task: it takes the message where it stopped.
            frame.suspended.remove(paused)
            paused.pending_input = text
            ctx.log.emit("agent_resumed", chosen, by=frame.agent)
            return Outcome.push(paused)
        return Outcome.push(self._activate(router, chosen, text, ctx))

    def child_finished(self, frame: Frame, child: Frame, outcome: Outcome, ctx: TurnContext) -> None:
        if child.graph == "setup":
            return
        frame.active_member = None
        if outcome.kind in ("hand_back", "switch"):
            # The member keeps its place: it resumes once the agent the user turned to is done.
            child.waiting = True
            frame.suspended = [f for f in frame.suspended if f.agent != child.agent][-(MAX_SUSPENDED - 1):]
            frame.suspended.append(child)
            ctx.log.emit("agent_suspended", child.agent, by=frame.agent, reason=outcome.kind,
                         switch_to=outcome.target)
            if outcome.kind == "hand_back":
                frame.excluded.append(child.agent)
            elif outcome.target:
                frame.decisions["route"] = outcome.target
            frame.pending_input = ctx.last_user_message()
        else:
            frame.excluded = []

    # ---- internals -----------------------------------------------------------------

    def _candidates(self, router: RouterAgent, frame: Frame, ctx: TurnContext):
        return [ctx.program.agents[m.agent] for m in router.members
                if m.agent in ctx.program.agents and m.agent not in frame.excluded]

    def _choose(self, router: RouterAgent, frame: Frame, ctx: TurnContext) -> str | None:
        candidates = self._candidates(router, frame, ctx)
        if not candidates:
            ctx.log.emit("route_decided", router.name, agent=None, by="none left",
                         reason="every member handed the message back")
            return None
        if len(candidates) == 1 and not frame.excluded:
            ctx.log.emit("route_decided", router.name, agent=candidates[0].name, by="only member")
            return candidates[0].name
        names = [c.name for c in candidates]
        decision = ctx.embed_decide(ctx.last_user_message(), ctx.agent_options(names), "route", router.name)
        if decision is not None and (decision.sure or not ctx.llm_classifies):
            ctx.log.emit("route_decided", router.name, agent=decision.choice,
                         by="embedding" if decision.sure else "embedding (unsure, no LLM to ask)",
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

    def _activate(self, router: RouterAgent, member: str, text: str, ctx: TurnContext) -> Frame:
        spec = next(m for m in router.members if m.agent == member)
        for b in spec.bindings:
            if not b.two_way:  # two-way bindings are aliases: nothing to copy
                value = ctx.state.records.get(router.name, {}).get(b.router_arg)
                if value is not None:
                    ctx.write(member, b.member_arg, value, router.name, why=f"bound to {router.name}.{b.router_arg}")
        return new_frame(ctx, member, pending_input=text)

    def _resume(self, frame: Frame, ctx: TurnContext) -> Outcome:
        child = frame.suspended.pop()
        ctx.log.emit("agent_resumed", child.agent, by=frame.agent)
        if child.last_prompt:
            ctx.say(child.agent, child.last_prompt, child)
        return Outcome.push(child)

    def _fallback(self, router: RouterAgent, frame: Frame, ctx: TurnContext, text: str) -> Outcome:
        policy = router.fallback
        ctx.log.emit("fallback", router.name, reason="no agent fits the message",
                     policy=policy.model_dump() if policy else None)
        if policy is not None and policy.kind == "agent" and policy.value in ctx.program.agents:
            return Outcome.push(new_frame(ctx, policy.value, pending_input=text))
        if ctx.said and ctx.said[-1].text == ROUTE_APOLOGY:
            frame.waiting = True
            return Outcome.wait()
        if policy is None or policy.kind == "default":
            helps = "; ".join(a.description.strip().rstrip(".") for a in self._candidates(router, frame, ctx)
                              if a.description.strip())
            message = "Sorry, I can't help with that." + (f" I can help with: {helps}." if helps else "")
        else:
            message = policy_message(policy)
        ctx.say(router.name, message, frame)
        frame.excluded = []
        frame.waiting = True
        return Outcome.wait()
