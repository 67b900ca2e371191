"""Remote agents: an agent served by another service holds the conversation (ABL HANDOFF `remote:`).

Each turn the remote agent holds is one call of its endpoint tool (an HTTP binding: POST to the
service's url with its auth header), so the call is traced, bounded and stubbable like any tool's,
and a failure is a tool error result, never an exception. The request (docs/runtime.md, "Remote
agents"):

    {"agent": "Number_Porting_Service", "conversation": "<session>:<frame>", "message": "..." | null,
     "context": {"from": "Support", "values": {...}, "summary": "...", "history": [{"role", "content"}]}}

`context` goes with the first request only; `message` is the user's message (null when the agent
takes over with no message of the turn for it). The answer:

    {"messages": ["...", ...] | "reply": "...", "ended": false, "values": {...}}

`messages` (strings, or objects with `text`) are said to the user as the remote agent's; `ended`
true ends it (status `success`, or the answer's `status`), handing back `values` (read by the
HANDOFF's ON_RETURN map when it was made with RETURN: true). A failed call, or an answer that is not
such an object, ends the remote agent with status `error`: the user is told it cannot be reached and
the conversation goes back to whoever holds it below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from frontdesk.ir.models import RemoteAgent
from frontdesk.runtime.events import register_event_type
from frontdesk.runtime.state import Frame, RemoteData
from frontdesk.runtime.steps import Outcome

if TYPE_CHECKING:  # pragma: no cover
    from frontdesk.runtime.context import TurnContext

register_event_type("remote_turn", "a remote agent's service answered a turn", ("agent", "messages", "ended"))

UNREACHABLE = "Sorry, {agent} cannot be reached right now. Please try again later."


class RemoteExecutor:
    def run(self, frame: Frame, ctx: TurnContext) -> Outcome:
        agent: RemoteAgent = ctx.program.agents[frame.agent]  # type: ignore[assignment]
        data: RemoteData = frame.data  # type: ignore[assignment]
        first = not frame.started
        message = None
        if ctx.input.available_to(frame):
            message = ctx.input.take(frame, "remote agent")
        elif not first:
            frame.waiting = True
            return Outcome.wait()
        frame.started = True
        request: dict[str, Any] = {"agent": agent.name, "conversation": f"{ctx.state.session_id}:{frame.id}",
                                   "message": message}
        if first:
            context = dict(data.context) or {"from": None, "passed": [], "summary": "", "history": []}
            values = ctx.values(agent.name)
            context["values"] = {k: values.get(k) for k in context.pop("passed", []) if values.get(k) is not None}
            request["context"] = context
        result = ctx.call_tool(agent.endpoint, request, agent.name, frame)
        if result.status != "success" or result.error:
            return self._unreachable(agent, frame, ctx, result.error or result.message or "the service failed")
        answer = result.value
        if not isinstance(answer, dict):
            return self._unreachable(agent, frame, ctx, "the service's answer is not a JSON object")
        said = answer.get("messages", answer.get("reply", answer.get("message")))
        texts = [said] if isinstance(said, str) else \
            [m.get("text", "") if isinstance(m, dict) else str(m) for m in said or [] if m is not None]
        for text in texts:
            if str(text).strip():
                ctx.say(agent.name, str(text), frame)
        ended = bool(answer.get("ended") or answer.get("done"))
        ctx.log.emit("remote_turn", agent.name, agent=agent.name, messages=len(texts), ended=ended)
        if not ended:
            frame.waiting = True
            return Outcome.wait()
        values = answer.get("values") if isinstance(answer.get("values"), dict) else {}
        for name, value in values.items():
            ctx.write(agent.name, str(name), value, agent.name, why=f"handed back by {agent.name}'s service")
        status = answer.get("status") if answer.get("status") in ("success", "error") else "success"
        return Outcome.done(status, f"{agent.name}'s service ended the conversation", value=dict(values))

    @staticmethod
    def _unreachable(agent: RemoteAgent, frame: Frame, ctx: TurnContext, why: str) -> Outcome:
        ctx.log.emit("error", agent.name, where="remote agent", message=why)
        ctx.say(agent.name, UNREACHABLE.format(agent=agent.name.replace("_", " ")), frame)
        return Outcome.done("error", f"{agent.name} could not be reached: {why}")

    def child_finished(self, frame: Frame, child, ctx: TurnContext) -> None:
        pass
