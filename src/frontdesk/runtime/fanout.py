"""fan_out (ABL system tool: "execute multiple sub-tasks in parallel"): several delegations of a
reasoning agent, run at the same time, each in isolation, and merged back in task order.

A turn is single-threaded: one TurnContext, one stack, one event log. A fan_out task therefore never
touches them while it runs. Each task gets its own context:

- a deep copy of the session state, taken when the fan_out starts (every task sees the same one),
  whose stack holds only the delegate's frame;
- its own event log (numbered from 0; no subscriber sees it live) and its own buffer of drafts;
- persistent memory behind an overlay: it reads the shared store, its writes are kept aside;
- the turn's message as the calling agent holds it (taken: the delegate does not answer it).

It runs to completion within the turn with the engine's own driving loop (`Engine.drive_task`) and
the normal executors, tools and model. An agent of the task that waits for the user does not wait:
the task's result is `needs_input` with the question it asked, for the calling model to ask itself.
An agent that asks to escalate gives `escalate` with its reason (the session is not escalated from a
task). A task that raises gives `error` with the message, never a traceback.

The tasks run in a thread pool (at most MAX_WORKERS at once) unless the model provider answers in the
order it is asked (`ordered`, the scripted provider): then one after another, in task order, with the
same isolation. Either way, once all are done they are merged in task order: each task's events are
appended to the turn's log (renumbered), its changed variables, results and system variables written
into the session (a later task's value stands where two tasks wrote different ones; the conflict is
in `fan_out.completed`), its memory writes applied, its model calls and tokens counted, and what its
agents said sent to the user (when the task ended; a question of a `needs_input` task is only in its
result).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from frontdesk.ir.models import ReasoningAgent
from frontdesk.llm.base import ScriptError, ToolCall
from frontdesk.runtime import handoff, prompts
from frontdesk.runtime.context import BotMessage, ChildResult, TurnContext, TurnInput
from frontdesk.runtime.events import EventLog, register_event_type
from frontdesk.runtime.policies import new_frame
from frontdesk.runtime.state import Frame, ResultRecord, SessionState
from frontdesk.store.longterm import encode_value

register_event_type("fan_out.started", "a reasoning agent started several delegations at once", ("tasks",))
register_event_type("fan_out.completed", "the delegations of a fan_out ended; their results go back together",
                    ("results",))

MAX_WORKERS = 4  # tasks of one fan_out running at the same time, at most
# frame ids of task i start at next_frame + i * FRAME_STRIDE, so no two tasks' frames share an id (a
# task makes fewer: the engine stops a task after MAX_TRANSITIONS_PER_TURN transitions)
FRAME_STRIDE = 2000
PARALLEL_WHY = ("each task runs on its own copy of the session, stack and event log; they are merged in task "
                "order when all are done")
ORDERED_WHY = ("the model provider answers in the order it is asked (a script): the tasks run one after "
               "another, in the order given, each on its own copy of the session as in parallel mode")
NO_ENGINE_WHY = "no engine drives this turn"
WAITING_QUESTION = "(the task waits for the user's answer)"

_DELETED = object()


def delegation_result(ctx: TurnContext, caller: str, child: ChildResult) -> dict[str, Any]:
    """What a delegation answers the model that asked for it: the agent's status and message, and its
    values (only the fields its DELEGATE declares as RETURNS when it returned some of them)."""
    result: dict[str, Any] = {"status": child.status if child.kind == "done" else "not finished",
                              "message": child.message}
    if child.value:
        result["values"] = child.value
        declared = next((d.returns for d in getattr(ctx.program.agents.get(caller), "delegates", [])
                         if d.agent == child.agent), None)
        if declared and any(k in child.value for k in declared):  # DELEGATE RETURNS: the declared fields
            result["values"] = {k: child.value.get(k) for k in declared}
    return result


def keep_returns(ctx: TurnContext, caller: str, child: ChildResult) -> None:
    """An agent `caller` delegated to ended: the fields its DELEGATE declares as RETURNS become the
    caller's values (ABL 3.10: it continues with the result), where its expressions read a bare name:
    its own field, else the session (a constraint's `REQUIRE upgrade_available == true`)."""
    agent = ctx.program.agents.get(caller)
    declared = next((d.returns for d in getattr(agent, "delegates", []) if d.agent == child.agent), None)
    if not declared or not child.value or child.kind != "done":
        return
    own = set(agent.arg_names()) if agent is not None else set()
    for name in declared:
        if child.value.get(name) is not None:
            ctx.write(caller if name in own else "session", name, child.value[name], caller,
                      why=f"returned by {child.agent} (DELEGATE RETURNS)")


def parse_tasks(call: ToolCall, agent: ReasoningAgent, ctx: TurnContext) -> tuple[list[dict], list[dict]]:
    """The tasks of a fan_out call ({agent, input}) that name one of the agent's delegations, and an
    error result for each one that does not."""
    delegations = {d.agent: d for d in agent.delegates}
    tasks, refused = [], []
    raw = call.arguments.get("tasks")
    for task in raw if isinstance(raw, list) else []:
        name = task.get("agent") if isinstance(task, dict) else None
        if name not in delegations or name not in ctx.program.agents:
            refused.append({"agent": str(name), "status": "error",
                            "message": f"{name} is not an agent {agent.name} delegates to"})
            continue
        given = task.get("input")
        tasks.append({"agent": name, "input": given if isinstance(given, dict) else {}})
    return tasks, refused


# ---- one task ------------------------------------------------------------------------------------


class TaskMemory:
    """Persistent memory as a task sees it: the shared store, with the task's own writes on top. The
    writes reach the store when the fan_out merges, in task order."""

    def __init__(self, shared: Any) -> None:
        self.shared = shared
        self.writes: dict[tuple[str, str, str], Any] = {}  # (scope, owner, path) -> value or _DELETED

    def get(self, scope, owner: str, path: str) -> Any | None:
        key = (scope, owner, path)
        if key in self.writes:
            value = self.writes[key]
            return None if value is _DELETED else copy.deepcopy(value)
        return self.shared.get(scope, owner, path)

    def put(self, scope, owner: str, path: str, value: Any) -> None:
        self.writes[(scope, owner, path)] = json.loads(encode_value(scope, owner, path, value))

    def delete(self, scope, owner: str, path: str) -> None:
        self.writes[(scope, owner, path)] = _DELETED

    def items(self, scope, owner: str, prefix: str = "") -> dict[str, Any]:
        found = dict(self.shared.items(scope, owner, prefix))
        stem = prefix.rstrip(".")
        for (s, o, path), value in self.writes.items():
            if s != scope or o != owner or (prefix and path != stem and not path.startswith(stem + ".")):
                continue
            if value is _DELETED:
                found.pop(path, None)
            else:
                found[path] = copy.deepcopy(value)
        return dict(sorted(found.items()))

    def apply(self) -> None:
        for (scope, owner, path), value in self.writes.items():
            if value is _DELETED:
                self.shared.delete(scope, owner, path)
            else:
                self.shared.put(scope, owner, path, value)


@dataclass
class TaskRun:
    """One task of a fan_out: what it was asked, the context it ran on, and how it ended."""

    index: int
    agent: str
    input: dict[str, Any]
    ctx: TurnContext
    memory: TaskMemory | None
    result: dict[str, Any] = field(default_factory=dict)
    duration_ms: float = 0.0
    merge: bool = False  # its state changes go into the session (it ran to an end without raising)
    deliver: bool = False  # what its agents said goes to the user


def task_context(ctx: TurnContext, base: SessionState, index: int) -> tuple[TurnContext, TaskMemory | None]:
    """A context of the task's own: a copy of the session, an empty stack, its own log and drafts."""
    state = base.model_copy(deep=True)
    state.stack, state.threads = [], {}  # only the delegate's frame will be on it; no thread to resume
    state.next_frame = base.next_frame + index * FRAME_STRIDE
    log = EventLog(0, ctx.log.turn, clock=ctx.log.clock)
    given = ctx.input
    task_input = TurnInput(given.text, log)
    # the calling agent's hold on the message carries over, quietly: the delegate does not answer it
    task_input.state, task_input.holder = given.state, given.holder
    task_input.passed, task_input.used, task_input.also = list(given.passed), given.used, None
    memory = TaskMemory(ctx.memory) if ctx.memory is not None else None
    task = dataclasses.replace(ctx, state=state, log=log, said=[], input=task_input, memory=memory, task=True)
    # the rules: lifecycle events of the task's agents drive their MEMORY recall and HOOKS
    task.pipeline.context_opened(task)
    return task, memory


def run_task(run: TaskRun, caller: ReasoningAgent, caller_frame: Frame) -> None:
    """Run one task to its end on its own context; never raises (but for a script that went off its
    script, which is a test's bug)."""
    ctx = run.ctx
    started = time.perf_counter()
    try:
        delegation = next(d for d in caller.delegates if d.agent == run.agent)
        for arg, value in run.input.items():
            if arg in delegation.inputs:
                ctx.write(delegation.agent, arg, value, caller.name, why=f"input of {caller.name}'s fan_out")
        ctx.log.emit("step", caller.name, action="delegate", agent=run.agent, via=prompts.FAN_OUT_TOOL,
                     task=run.index)
        frame = new_frame(ctx, run.agent)
        handoff.start(ctx, frame, caller_frame.id, caller.name)
        ended = handoff.driver(ctx).drive_task(ctx)
        run.result, run.merge, run.deliver = outcome_of(ctx, caller.name, ended)
    except ScriptError:
        raise
    except Exception as exc:  # noqa: BLE001 - a failing task is its error result, never a traceback
        message = f"{type(exc).__name__}: {exc}"
        ctx.log.emit("error", run.agent, where="fan_out task", message=message, task=run.index)
        run.result, run.merge, run.deliver = {"status": "error", "message": message}, False, False
    run.duration_ms = round((time.perf_counter() - started) * 1000, 1)


def outcome_of(ctx: TurnContext, caller: str, ended: ChildResult | None) -> tuple[dict[str, Any], bool, bool]:
    """The task's result for the model, whether its state is merged, and whether its words are sent."""
    escalated = ctx.state.status == "escalated" or (ended is not None and ended.kind == "escalate")
    if escalated:
        reason = ended.reason if ended is not None and ended.kind == "escalate" else next(
            (e.data.get("reason", "") for e in reversed(ctx.log.events) if e.type == "session_escalated"), "")
        return {"status": "escalate", "reason": reason or "the agent asked for a person"}, True, False
    if ctx.state.stack:  # an agent of the task waits for the user: the caller asks instead
        top = ctx.state.stack[-1]
        words = [m.text for m in ctx.said]
        question = words[-1] if words else (top.last_prompt or WAITING_QUESTION)
        result = {"status": "needs_input", "question": question, "waiting": top.agent}
        if len(words) > 1:
            result["said"] = words[:-1]
        return result, True, False
    if ended is None:
        return {"status": "error", "message": "the task ended without a result"}, False, False
    result = delegation_result(ctx, caller, ended)
    if ctx.said:
        result["said"] = [m.text for m in ctx.said]
    return result, True, True


# ---- the fan_out ---------------------------------------------------------------------------------


def parallel_mode(ctx: TurnContext) -> tuple[bool, str]:
    """Whether the tasks run at the same time, and why (or why not)."""
    if ctx.driver is None:
        return False, NO_ENGINE_WHY
    if getattr(ctx.llm, "ordered", False):
        return False, ORDERED_WHY
    return True, PARALLEL_WHY


def fan_out(ctx: TurnContext, agent: ReasoningAgent, frame: Frame, tasks: list[dict],
            done: list[dict] | None = None) -> list[dict]:
    """Run `tasks` ({agent, input}) of `agent`'s fan_out and merge them into the turn: the results, in
    the order: `done` (already known, e.g. refused tasks) then the tasks in order."""
    results = list(done or [])
    parallel, why = parallel_mode(ctx)
    ctx.log.emit("fan_out.started", agent.name, tasks=[t["agent"] for t in tasks],
                 mode="parallel" if parallel else "sequential", why=why,
                 **({"workers": min(len(tasks), MAX_WORKERS)} if parallel and tasks else {}))
    if ctx.driver is None:
        results += [{"agent": t["agent"], "status": "error", "message": NO_ENGINE_WHY} for t in tasks]
        ctx.log.emit("fan_out.completed", agent.name, results=results, tasks=[], conflicts=[], duration_ms=0.0)
        return results
    started = time.perf_counter()
    base = ctx.state.model_copy(deep=True)  # what every task starts from
    runs = []
    for index, task in enumerate(tasks):
        task_ctx, memory = task_context(ctx, base, index)
        runs.append(TaskRun(index=index, agent=task["agent"], input=task["input"], ctx=task_ctx, memory=memory))
    if parallel and len(runs) > 1:
        with ThreadPoolExecutor(max_workers=min(len(runs), MAX_WORKERS),
                                thread_name_prefix="frontdesk-fan-out") as pool:
            futures = [pool.submit(run_task, run, agent, frame) for run in runs]
            for future in futures:
                future.result()  # run_task catches all but a ScriptError, which is re-raised here
    else:
        for run in runs:
            run_task(run, agent, frame)
    conflicts = merge(ctx, base, runs)
    results += [{"agent": run.agent, **run.result} for run in runs]
    ctx.log.emit("fan_out.completed", agent.name, results=results,
                 tasks=[{"agent": run.agent, "status": run.result.get("status"), "duration_ms": run.duration_ms}
                        for run in runs],
                 conflicts=conflicts, duration_ms=round((time.perf_counter() - started) * 1000, 1))
    return results


# ---- merging, in task order ----------------------------------------------------------------------


def changes(base: SessionState, after: SessionState) -> dict[tuple[str, ...], Any]:
    """What a task changed in the session: variables, result records and system variables (_DELETED
    for one it removed)."""
    out: dict[tuple[str, ...], Any] = {}
    for scope in sorted(set(base.variables) | set(after.variables)):
        old, new = base.variables.get(scope, {}), after.variables.get(scope, {})
        for name in sorted(set(old) | set(new)):
            if name not in new:
                out[("variables", scope, name)] = _DELETED
            elif name not in old or old[name] != new[name]:
                out[("variables", scope, name)] = new[name]
    for scope in sorted(set(base.results) | set(after.results)):
        old_record, new_record = base.results.get(scope), after.results.get(scope)
        if new_record is None:
            out[("results", scope)] = _DELETED
        elif old_record is None or old_record.model_dump() != new_record.model_dump():
            out[("results", scope)] = new_record
    for name in sorted(set(base.system) | set(after.system)):
        if name not in after.system:
            out[("system", name)] = _DELETED
        elif name not in base.system or base.system[name] != after.system[name]:
            out[("system", name)] = after.system[name]
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, ResultRecord) and isinstance(b, ResultRecord):
        return a.model_dump() == b.model_dump()
    return a is b or (a is not _DELETED and b is not _DELETED and a == b)


def _apply(state: SessionState, key: tuple[str, ...], value: Any) -> None:
    if key[0] == "variables":
        scope, name = key[1], key[2]
        if value is _DELETED:
            state.variables.get(scope, {}).pop(name, None)
        else:
            state.variables.setdefault(scope, {})[name] = copy.deepcopy(value)
    elif key[0] == "results":
        if value is _DELETED:
            state.results.pop(key[1], None)
        else:
            state.results[key[1]] = value.model_copy(deep=True)
    elif value is _DELETED:
        state.system.pop(key[1], None)
    else:
        state.system[key[1]] = copy.deepcopy(value)


def _shown(value: Any) -> Any:
    if value is _DELETED:
        return "(removed)"
    if isinstance(value, ResultRecord):
        return value.model_dump()
    return value


def merge(ctx: TurnContext, base: SessionState, runs: list[TaskRun]) -> list[dict[str, Any]]:
    """Bring the tasks into the turn, in task order; the conflicts (a name two tasks set differently:
    the later task's value stands)."""
    state = ctx.state
    written: dict[tuple[str, ...], tuple[int, Any]] = {}
    conflicts: dict[tuple[str, ...], dict[str, Any]] = {}
    memory_written: dict[tuple[str, str, str], tuple[int, Any]] = {}
    notify = list(ctx.driver.subscribers) if ctx.driver is not None else []
    for run in runs:
        task_state = run.ctx.state
        ctx.log.adopt(run.ctx.log.events, notify=notify)
        for key in ("prompt", "completion", "calls"):  # model calls are counted whatever became of the task
            state.tokens[key] = state.tokens.get(key, 0) + task_state.tokens.get(key, 0) - base.tokens.get(key, 0)
        state.next_frame = max(state.next_frame, task_state.next_frame)
        if not run.merge:
            continue
        for key, value in changes(base, task_state).items():
            earlier = written.get(key)
            if earlier is not None and not _same(earlier[1], value):
                entry = conflicts.setdefault(key, {"name": ".".join(key), "values": [
                    {"task": earlier[0], "agent": runs[earlier[0]].agent, "value": _shown(earlier[1])}]})
                entry["values"].append({"task": run.index, "agent": run.agent, "value": _shown(value)})
                entry["kept"] = run.index
            written[key] = (run.index, value)
            _apply(state, key, value)
        if run.memory is not None:
            for key, value in run.memory.writes.items():
                earlier = memory_written.get(key)
                if earlier is not None and not _same(earlier[1], value):
                    name = "memory." + ".".join(key)
                    entry = conflicts.setdefault(key, {"name": name, "values": [
                        {"task": earlier[0], "agent": runs[earlier[0]].agent, "value": _shown(earlier[1])}]})
                    entry["values"].append({"task": run.index, "agent": run.agent, "value": _shown(value)})
                    entry["kept"] = run.index
                memory_written[key] = (run.index, value)
            run.memory.apply()
        if run.deliver:
            for message in run.ctx.said:
                item = message.item
                if item is not None:
                    state.history.append(item)
                ctx.said.append(BotMessage(message.agent, message.text, item, by=message.by))
    return list(conflicts.values())
