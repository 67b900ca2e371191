"""Runtime overhead benchmark (issue 12): the time a turn spends in Frontdesk itself, with a model
that answers instantly, for flow, reasoning and routing turns; compile time and memory of a program
of 1,000 agents; the memory an idle stored session takes.

- **Turns.** Three small generated ADL programs, each turn of a kind doing the same work every time:
  `flow` (a flow agent: the user's answer, a Python tool call, an expression condition, two bot
  messages; no model call), `reasoning` (an `llm agent`: a model call that calls a Python tool, the
  tool, a second model call that replies) and `routing` (an ensemble of four members with nobody
  active: a `route` call picks one, a one-step flow member answers and finishes). The model is
  `InstantModel` (answers from the request alone, in microseconds; no embedding model: the engine
  gets `understanding=None`). Each turn is timed with `time.perf_counter` around `Engine.send`, which
  includes loading and storing the session (the store write is part of the turn), for
  `MemorySessionStore` and `SqliteSessionStore`. `--sessions` sessions of `--turns` turns each are
  timed after a warm-up session; the model's own time is measured inside it and reported as a share.
- **Compile.** A generated ADL program of `--agents` agents (an entry flow, an ensemble over the
  rest: flow agents with a question, a `the user claims` chain and a tool call, one in ten an `llm
  agent` with a tool), loaded with `frontdesk.lang.load_program` in a fresh Python process:
  wall time, then `Engine` construction, and memory (tracemalloc peak, in a separate load; RSS growth
  and peak from /proc/self/status).
- **Idle sessions.** `--idle` sessions of realistic programs left waiting after a few turns:
  examples/hotel_booking (ABL flow, no model; 3 turns: mid-booking) and examples/bookstore (ADL
  ensemble; 2 turns with the happy path's scripted model answers: a recommendation with its
  transcript, then idle at the router). Bytes of stored state and events per session (JSON length),
  SQLite file growth per session, and in-process memory per session in `MemorySessionStore`.

Run: .venv/bin/python bench/overhead.py [--sessions 30 --turns 10 --agents 1000 --idle 1000]
     [--json FILE] [--profile | --no-profile] [--only turns,compile,idle] [--no-gc-freeze]
Targets (reported, not asserted): overhead below 2 ms p50 and 10 ms p99 per turn.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import itertools
import json
import os
import pstats
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from frontdesk.lang import load_program
from frontdesk.llm.base import LLMRequest, LLMResponse, ToolCall, Usage
from frontdesk.runtime import prompts
from frontdesk.runtime.engine import Engine
from frontdesk.store.memory import MemorySessionStore
from frontdesk.store.sqlite import SqliteSessionStore

ROOT = Path(__file__).resolve().parent.parent
TARGET_P50_MS = 2.0
TARGET_P99_MS = 10.0
FREEZE = {"on": True}  # gc.freeze() once a measured engine is loaded and warm, as `frontdesk serve` does
KINDS = ("flow", "reasoning", "routing")
STORES = ("memory", "sqlite")


# ---- the model that answers instantly ----------------------------------------------------------------


class InstantModel:
    """An LLM stand-in that answers every request at once, from the request alone, forever:

    - `route`: the members offered, in turn (never `none`), so every routing turn reaches a member;
    - `understand`: `none` (and no argument values);
    - `reason`: after a tool result, a text reply (the agent waits for the user); otherwise a call of
      the first program tool offered (`tool`, e.g. `lookup`) when there is one, else a text reply;
    - anything else (a knowledge answer, a guardrail's yes/no judgement): "no".

    It keeps the number of calls and the seconds spent in it, to tell its share of a turn."""

    name = "instant"
    can_classify = True

    def __init__(self, tool: str = "lookup", tool_args: dict[str, Any] | None = None) -> None:
        self.tool = tool
        self.tool_args = tool_args if tool_args is not None else {"n": 3}
        self.calls = 0
        self.seconds = 0.0
        self._round = itertools.count()

    def complete(self, request: LLMRequest) -> LLMResponse:
        start = time.perf_counter()
        self.calls += 1
        tools = {t.name: t for t in request.tools}
        calls: list[ToolCall] = []
        content: str | None = None
        if prompts.ROUTE_TOOL in tools:
            enum = tools[prompts.ROUTE_TOOL].parameters.get("properties", {}).get("agent", {}).get("enum") or []
            members = [e for e in enum if e != prompts.NONE_CHOICE] or [prompts.NONE_CHOICE]
            calls.append(ToolCall(id=f"call_{self.calls}", name=prompts.ROUTE_TOOL,
                                  arguments={"agent": members[next(self._round) % len(members)]}))
        elif prompts.UNDERSTAND_TOOL in tools:
            calls.append(ToolCall(id=f"call_{self.calls}", name=prompts.UNDERSTAND_TOOL,
                                  arguments={"choice": prompts.NONE_CHOICE}))
        elif request.purpose == "reason":
            last = request.messages[-1] if request.messages else None
            if self.tool in tools and (last is None or last.role != "tool"):
                calls.append(ToolCall(id=f"call_{self.calls}", name=self.tool, arguments=dict(self.tool_args)))
            else:
                content = "Item 3 costs 12.5 EUR. Anything else?"
        else:
            content = "no"
        response = LLMResponse(content=content, tool_calls=calls, model=self.name,
                               usage=Usage(prompt_tokens=100, completion_tokens=10))
        self.seconds += time.perf_counter() - start
        return response


# ---- generated programs ------------------------------------------------------------------------------

TOOLS_PY = '''\
def lookup(n: int) -> dict:
    """Look an item up by its number."""
    return {"name": f"item {n}", "price": 12.5}


def check_stock(item: str) -> dict:
    """Whether an item is in stock."""
    return {"in_stock": True, "count": 3}
'''

FLOW_ADL = """\
main:
  type: flow agent
  description: Takes an item number, looks it up and answers.
  args:
    - total
  steps:
    - set:
        total: 0
    - label: ask
    - bot: "Which item number? (last price ${total})"
    - user
    - call: lookup
      args:
        n: 3
    - if: lookup.price > 10
      then:
        - set:
            total: lookup.price
        - bot: "Item ${lookup.name} costs ${lookup.price} EUR."
        - next: ask
      else:
        - bot: "Item ${lookup.name} is cheap."
        - next: ask

tools:
  - tools.py
"""

REASONING_ADL = """\
main:
  type: flow agent
  description: Entry point.
  steps:
    - bot: "Hello, ask me about items."
    - call: helper

helper:
  type: llm agent
  description: I answer questions about items and their prices.
  args:
    - item
  prompt: |
    You help customers with the items of the shop.
    1. Ask which item they mean.
    2. Call the "lookup" function with its number and tell its price.
    Never invent prices.
  uses:
    - lookup

tools:
  - tools.py
"""

ROUTING_ADL = """\
main:
  type: flow agent
  description: Entry point.
  steps:
    - call: desk

desk:
  type: ensemble agent
  description: Select an agent to respond to the user.
  contains:
    - prices
    - hours
    - returns
    - shipping
  steps:
    - bot: "Hello, how can I help?"

prices:
  type: flow agent
  description: I can tell the price of an item.
  steps:
    - call: lookup
      args:
        n: 3
    - bot: "Item ${lookup.name} costs ${lookup.price} EUR."

hours:
  type: flow agent
  description: I can tell the opening hours.
  steps:
    - bot: "We are open 9 to 5."

returns:
  type: flow agent
  description: I can explain how returns work.
  steps:
    - bot: "You can return any item within 30 days."

shipping:
  type: flow agent
  description: I can tell shipping costs and times.
  steps:
    - bot: "Shipping takes 2 days and costs 4 EUR."

tools:
  - tools.py
"""

PROGRAMS = {"flow": FLOW_ADL, "reasoning": REASONING_ADL, "routing": ROUTING_ADL}
MESSAGES = {"flow": "item 3 please", "reasoning": "what does item 3 cost?", "routing": "I have a question"}


def write_program(folder: Path, agents_yml: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "agents.yml").write_text(agents_yml, encoding="utf-8")
    (folder / "tools.py").write_text(TOOLS_PY, encoding="utf-8")
    return folder


def big_program_yaml(agents: int) -> str:
    """An ADL program of `agents` agents: `main` calls the ensemble `desk`, which contains all others;
    nine in ten are flow agents (a question, a `the user claims` chain, a tool call, an expression
    condition), one in ten an llm agent with a tool."""
    members = max(agents - 2, 1)
    names = [f"agent_{i:04d}" for i in range(1, members + 1)]
    out = ["main:", "  type: flow agent", "  description: Entry point.", "  steps:", "    - call: desk", "",
           "desk:", "  type: ensemble agent", "  description: Select an agent to respond to the user.",
           "  args:", "    - customer", "  contains:"]
    out += [f"    - {name}" for name in names]
    out += ["  steps:", '    - bot: "Hello, how can I help?"', ""]
    for i, name in enumerate(names, start=1):
        topic = f"topic number {i}"
        if i % 10 == 0:
            out += [f"{name}:", "  type: llm agent",
                    f"  description: I answer questions about {topic} and the items that belong to it.",
                    "  args:", f"    - item_{i}",
                    "  prompt: |", f"    You help customers with {topic}.",
                    '    Call the "lookup" function with the item number and tell its price.',
                    "  uses:", "    - lookup", ""]
            continue
        out += [f"{name}:", "  type: flow agent",
                f"  description: I can help with {topic} - orders, questions and changes about it.",
                "  args:", f"    - count_{i}", f"    - note_{i}",
                f'  fallback: "Sorry, I did not understand that ({topic})."',
                "  steps:",
                f'    - bot: "Shall I look up {topic} for you?"',
                "    - user",
                f'    - if: the user claims "Yes", "Please look up {topic}"',
                "      then:",
                "        - call: lookup", "          args:", f"            n: {i}",
                "        - if: lookup.price > 10",
                "          then:",
                "            - set:", f"                count_{i}: lookup.price",
                f'            - bot: "{topic}: ${{lookup.name}} costs ${{lookup.price}} EUR."',
                "          else:",
                f'            - bot: "{topic}: ${{lookup.name}} is cheap."',
                f'    - else if: the user claims "No", "Not {topic}"',
                "      then:",
                f'        - bot: "Fine, nothing about {topic} then."',
                "        - return: success, Nothing to do.", ""]
    out += ["tools:", "  - tools.py", ""]
    return "\n".join(out)


# ---- statistics --------------------------------------------------------------------------------------


def percentile(values: list[float], p: float) -> float:
    """The p-th percentile (0-100) by linear interpolation between closest ranks."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


@dataclass
class TurnStats:
    kind: str
    store: str
    turns: int
    p50_ms: float
    p90_ms: float
    p99_ms: float
    mean_ms: float
    max_ms: float
    model_ms_per_turn: float
    model_share: float  # of the mean turn
    llm_calls_per_turn: float
    events_per_turn: float
    state_bytes: int  # the last session's stored state, JSON
    meets_target: bool


def summarize(kind: str, store: str, times: list[float], model_s: float, calls: int, events: int,
              state_bytes: int) -> TurnStats:
    ms = [t * 1000 for t in times]
    n = len(ms)
    mean = statistics.fmean(ms)
    p50, p99 = percentile(ms, 50), percentile(ms, 99)
    return TurnStats(kind, store, n, round(p50, 3), round(percentile(ms, 90), 3), round(p99, 3), round(mean, 3),
                     round(max(ms), 3), round(model_s * 1000 / n, 4), round(model_s * 1000 / n / mean, 5),
                     round(calls / n, 2), round(events / n, 1), state_bytes,
                     p50 < TARGET_P50_MS and p99 < TARGET_P99_MS)


# ---- turns -------------------------------------------------------------------------------------------


def make_store(kind: str, folder: Path):
    if kind == "memory":
        return MemorySessionStore()
    if kind == "sqlite":
        return SqliteSessionStore(folder / f"sessions-{time.monotonic_ns()}.sqlite3")
    raise ValueError(f"unknown store {kind!r}")


def close_store(store) -> None:
    close = getattr(store, "close", None)
    if callable(close):
        close()


def settle() -> None:
    """What is loaded now (program, engine, modules) leaves the collector's generations, as `frontdesk serve`
    does after start-up: a full collection during a turn would otherwise walk it all (60-80 ms here)."""
    if FREEZE["on"]:
        gc.collect()
        gc.freeze()


def run_sessions(engine: Engine, message: str, sessions: int, turns: int,
                 on_turn: Callable[[float, Any], None] | None = None) -> str:
    """Start `sessions` sessions and send `turns` messages to each; `on_turn(seconds, result)` per turn.
    Returns the last session's id."""
    session_id = ""
    for _ in range(sessions):
        session_id = engine.start(program_label="bench").session_id
        for _ in range(turns):
            start = time.perf_counter()
            result = engine.send(session_id, message)
            elapsed = time.perf_counter() - start
            if on_turn is not None:
                on_turn(elapsed, result)
    return session_id


def measure_turns(kind: str, store_kind: str, folder: Path, sessions: int, turns: int,
                  warmup_sessions: int = 1) -> TurnStats:
    program, _ = load_program(write_program(folder / kind, PROGRAMS[kind]))
    model = InstantModel()
    store = make_store(store_kind, folder)
    try:
        engine = Engine(program, model, store, understanding=None)
        run_sessions(engine, MESSAGES[kind], warmup_sessions, turns)
        settle()
        times: list[float] = []
        events = calls = 0
        model_s = 0.0
        last = ""
        for _ in range(sessions):
            last = engine.start(program_label="bench").session_id  # not timed, nor its model calls
            for _ in range(turns):
                calls_before, model_before = model.calls, model.seconds
                start = time.perf_counter()
                result = engine.send(last, MESSAGES[kind])
                times.append(time.perf_counter() - start)
                calls += model.calls - calls_before
                model_s += model.seconds - model_before
                events += len(result.events)
        state_bytes = len(json.dumps(store.load(last)))
        return summarize(kind, store_kind, times, model_s, calls, events, state_bytes)
    finally:
        close_store(store)


def measure_long(kind: str, store_kind: str, folder: Path, turns: int, tail: int = 50) -> dict[str, Any]:
    """One session of `turns` turns: the time of its first 10 turns and of its last `tail` turns (the
    stored history and transcripts grow until `bound_history` caps them, after about 100 turns)."""
    program, _ = load_program(write_program(folder / f"long-{kind}", PROGRAMS[kind]))
    store = make_store(store_kind, folder)
    try:
        engine = Engine(program, InstantModel(), store, understanding=None)
        run_sessions(engine, MESSAGES[kind], 1, 10)  # warm-up
        settle()
        times: list[float] = []
        last = run_sessions(engine, MESSAGES[kind], 1, turns, lambda seconds, _result: times.append(seconds))
        first = [t * 1000 for t in times[:10]]
        late = [t * 1000 for t in times[-tail:]]
        return {"kind": kind, "store": store_kind, "turns": turns, "first10_p50_ms": round(percentile(first, 50), 3),
                "last_p50_ms": round(percentile(late, 50), 3), "last_p99_ms": round(percentile(late, 99), 3),
                "last_turns": len(late), "state_bytes_at_end": len(json.dumps(store.load(last)))}
    finally:
        close_store(store)


def check_kind(kind: str, folder: Path) -> list[str]:
    """What one turn of a kind did (events), to make sure the benchmark measures what it says."""
    program, _ = load_program(write_program(folder / kind, PROGRAMS[kind]))
    engine = Engine(program, InstantModel(), MemorySessionStore(), understanding=None)
    session_id = engine.start().session_id
    engine.send(session_id, MESSAGES[kind])
    return [e.type for e in engine.send(session_id, MESSAGES[kind]).events]


# ---- profile -----------------------------------------------------------------------------------------

_WRAPPERS = ("bench/overhead.py", "contextlib.py", "{built-in method builtins.exec}")


def profile_kind(kind: str, folder: Path, sessions: int, turns: int, top: int = 10) -> dict[str, Any]:
    """cProfile over `sessions` x `turns` turns of a kind (memory store): the top functions by cumulative
    and by own time, in ms per turn."""
    program, _ = load_program(write_program(folder / f"profile-{kind}", PROGRAMS[kind]))
    engine = Engine(program, InstantModel(), MemorySessionStore(), understanding=None)
    run_sessions(engine, MESSAGES[kind], 1, turns)
    profiler = cProfile.Profile()
    profiler.enable()
    run_sessions(engine, MESSAGES[kind], sessions, turns)
    profiler.disable()
    n = sessions * turns
    stats = pstats.Stats(profiler)
    rows = []
    for (filename, line, function), (_cc, ncalls, tottime, cumtime, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        where = _short_path(filename)
        rows.append({"function": f"{where}:{line}({function})" if line else function, "calls_per_turn": ncalls / n,
                     "cum_ms_per_turn": cumtime * 1000 / n, "own_ms_per_turn": tottime * 1000 / n})
    total = sum(r["own_ms_per_turn"] for r in rows)
    skip = ("engine.py:215(send)", "engine.py:281(_send)", "engine.py:379(_finish)", "engine.py:428(_drive)")
    by_cum = [r for r in sorted(rows, key=lambda r: -r["cum_ms_per_turn"])
              if not any(w in r["function"] for w in _WRAPPERS) and not r["function"].endswith(skip)
              and "run_sessions" not in r["function"] and "disable" not in r["function"]]
    by_own = sorted(rows, key=lambda r: -r["own_ms_per_turn"])
    rnd = lambda r: {k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()}  # noqa: E731
    return {"kind": kind, "turns": n, "profiled_ms_per_turn": round(total, 3),
            "top_cumulative": [rnd(r) for r in by_cum[:top]], "top_own": [rnd(r) for r in by_own[:top]]}


def _short_path(filename: str) -> str:
    for marker in ("/src/frontdesk/", "/site-packages/", "/lib/python3"):
        if marker in filename:
            tail = filename.split(marker, 1)[1]
            return ("frontdesk/" + tail) if marker == "/src/frontdesk/" else tail.split("/", 1)[-1] if marker == "/lib/python3" else tail
    return filename


# ---- compile -----------------------------------------------------------------------------------------


def _rss_kb() -> tuple[int, int]:
    """(VmRSS, VmHWM) of this process in KiB, from /proc/self/status (0, 0 where there is none)."""
    rss = hwm = 0
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1])
    except OSError:
        import resource

        hwm = rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss, hwm


def compile_child(folder: str) -> dict[str, Any]:
    """Load the program in `folder` (in this fresh process): time, RSS, Engine construction, then
    tracemalloc's peak over a second load."""
    gc.collect()
    rss0, _hwm0 = _rss_kb()
    start = time.perf_counter()
    program, diagnostics = load_program(folder)
    load_s = time.perf_counter() - start
    gc.collect()
    rss1, hwm1 = _rss_kb()
    start = time.perf_counter()
    engine = Engine(program, InstantModel(), MemorySessionStore(), understanding=None)
    engine_s = time.perf_counter() - start
    start = time.perf_counter()
    first = engine.start()
    engine.send(first.session_id, "Please look up topic number 7")
    first_turns_s = time.perf_counter() - start
    warm = []  # routing turns over the ensemble of every other agent, warm: new session, first message
    for _ in range(5):
        session_id = engine.start().session_id
        start = time.perf_counter()
        engine.send(session_id, "Please look up topic number 7")
        warm.append(time.perf_counter() - start)
    errors = [d for d in diagnostics if getattr(d, "severity", "") == "error"]
    agents = len(program.agents)
    ir_bytes = len(program.model_dump_json())
    del engine, program
    gc.collect()
    tracemalloc.start()
    start = time.perf_counter()
    program2, _ = load_program(folder)
    traced_load_s = time.perf_counter() - start
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del program2
    return {"agents": agents, "diagnostics": len(diagnostics), "errors": len(errors), "load_s": round(load_s, 3),
            "engine_s": round(engine_s, 3), "start_and_first_turn_s": round(first_turns_s, 3),
            "routing_turn_warm_ms": round(statistics.median(warm) * 1000, 1),
            "rss_growth_mb": round((rss1 - rss0) / 1024, 1), "rss_peak_mb": round(hwm1 / 1024, 1),
            "rss_before_mb": round(rss0 / 1024, 1),
            "tracemalloc_peak_mb": round(peak / 2**20, 1), "tracemalloc_retained_mb": round(current / 2**20, 1),
            "traced_load_s": round(traced_load_s, 3), "ir_json_kb": round(ir_bytes / 1024, 1)}


def measure_compile(agents: int, folder: Path, repeat: int = 1) -> dict[str, Any]:
    target = folder / f"big_{agents}"
    write_program(target, big_program_yaml(agents))
    runs = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, __file__, "--compile-child", str(target)], capture_output=True,
                             text=True, check=False, env={**os.environ, "PYTHONHASHSEED": "0"})
        if out.returncode != 0:
            raise RuntimeError(f"the compile run failed:\n{out.stderr[-3000:]}")
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    best = min(runs, key=lambda r: r["load_s"])
    best["load_s_all"] = [r["load_s"] for r in runs]
    best["yaml_kb"] = round((target / "agents.yml").stat().st_size / 1024, 1)
    return best


# ---- idle sessions -----------------------------------------------------------------------------------


@dataclass
class IdleProgram:
    name: str
    path: Path
    user: list[str]
    script: list[dict] | None = None  # scripted model answers for those turns (None: no model)
    today: str | None = None


def idle_programs() -> list[IdleProgram]:
    from frontdesk.testing import load_conversation

    bookstore = load_conversation(ROOT / "examples/bookstore/conversations/happy_path.yml")
    return [
        IdleProgram("hotel_booking (ABL flow, 3 turns)", ROOT / "examples/hotel_booking",
                    ["Hi, I'd like to book a hotel", "Lisbon", "tomorrow"], None, "2026-11-22"),
        IdleProgram("bookstore (ADL ensemble, 2 turns)", ROOT / "examples/bookstore",
                    [str(u) for u in bookstore["user"][:2]], bookstore["llm"][:5]),
    ]


def _idle_engine(spec: IdleProgram, store) -> Engine:
    from frontdesk.app import knowledge_for
    from frontdesk.testing import clock_for

    program, _ = load_program(spec.path)
    return Engine(program, None, store, understanding=None, knowledge=knowledge_for(program, None),
                  clock=clock_for(spec.today))


def _one_idle_session(engine: Engine, spec: IdleProgram) -> str:
    from frontdesk.llm.scripted import ScriptedProvider

    if spec.script is not None:
        engine.llm = ScriptedProvider(spec.script)  # the happy path's answers, for this session's turns
    session_id = engine.start(program_label="bench").session_id
    for line in spec.user:
        engine.send(session_id, line)
    return session_id


def _sqlite_bytes(path: Path) -> dict[str, int]:
    """Bytes of the database file after a WAL checkpoint, and the JSON text it holds."""
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        state = db.execute("SELECT COALESCE(SUM(LENGTH(state)), 0), COUNT(*) FROM sessions").fetchone()
        events = db.execute("SELECT COALESCE(SUM(LENGTH(event)), 0), COUNT(*) FROM events").fetchone()
    size = path.stat().st_size + (Path(f"{path}-wal").stat().st_size if Path(f"{path}-wal").exists() else 0)
    return {"file": size, "state_text": state[0], "sessions": state[1], "event_text": events[0], "events": events[1]}


def measure_idle(spec: IdleProgram, count: int, folder: Path) -> dict[str, Any]:
    # SQLite: file growth per session, stored JSON per session
    path = folder / f"idle-{time.monotonic_ns()}.sqlite3"
    store = SqliteSessionStore(path)
    engine = _idle_engine(spec, store)
    _one_idle_session(engine, spec)  # warm-up: indexes, caches, the file's first pages
    before = _sqlite_bytes(path)
    start = time.perf_counter()
    ids = [_one_idle_session(engine, spec) for _ in range(count)]
    sqlite_s = time.perf_counter() - start
    after = _sqlite_bytes(path)
    state_lens = [len(json.dumps(store.load(i))) for i in ids[: min(count, 200)]]
    event_lens = [sum(len(json.dumps(e)) for e in store.events(i)) for i in ids[: min(count, 50)]]
    events_per_session = len(store.events(ids[0]))
    close_store(store)
    # MemorySessionStore: Python memory held per session (tracemalloc), and RSS growth
    store = MemorySessionStore()
    engine = _idle_engine(spec, store)
    _one_idle_session(engine, spec)
    gc.collect()
    rss0, _ = _rss_kb()
    tracemalloc.start()
    overhead0 = tracemalloc.get_tracemalloc_memory()
    base, _ = tracemalloc.get_traced_memory()
    start = time.perf_counter()
    for _ in range(count):
        _one_idle_session(engine, spec)
    memory_s = time.perf_counter() - start
    engine.llm = None
    gc.collect()
    held, _ = tracemalloc.get_traced_memory()
    overhead1 = tracemalloc.get_tracemalloc_memory()
    tracemalloc.stop()
    rss1, _ = _rss_kb()
    rss_growth = (rss1 - rss0) * 1024 - (overhead1 - overhead0)  # without tracemalloc's own bookkeeping
    return {
        "program": spec.name, "sessions": count, "turns_per_session": len(spec.user),
        "state_json_bytes": round(statistics.fmean(state_lens)),
        "events_per_session": events_per_session,
        "events_json_bytes": round(statistics.fmean(event_lens)),
        "sqlite_file_bytes_per_session": round((after["file"] - before["file"]) / count),
        "sqlite_text_bytes_per_session": round((after["state_text"] + after["event_text"]
                                                - before["state_text"] - before["event_text"]) / count),
        "memory_store_python_bytes_per_session": round((held - base) / count),
        "memory_store_rss_bytes_per_session": round(rss_growth / count),
        "ms_per_turn_sqlite": round(sqlite_s * 1000 / (count * (len(spec.user) + 1)), 3),
        "ms_per_turn_memory_traced": round(memory_s * 1000 / (count * (len(spec.user) + 1)), 3),
    }


# ---- report ------------------------------------------------------------------------------------------


def table(rows: list[list[Any]], header: list[str]) -> str:
    cells = [[str(c) for c in header]] + [[f"{c:.3f}" if isinstance(c, float) else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
             for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def turns_table(stats: list[TurnStats]) -> str:
    rows = [[s.kind, s.store, s.turns, s.p50_ms, s.p90_ms, s.p99_ms, s.mean_ms, s.max_ms, s.model_ms_per_turn,
             f"{s.model_share * 100:.2f}%", s.llm_calls_per_turn, s.events_per_turn, s.state_bytes,
             "yes" if s.meets_target else "NO"] for s in stats]
    return table(rows, ["kind", "store", "turns", "p50 ms", "p90 ms", "p99 ms", "mean ms", "max ms", "model ms",
                        "model %", "llm/turn", "events", "state B", f"<{TARGET_P50_MS:g}/{TARGET_P99_MS:g} ms"])


def long_table(rows: list[dict[str, Any]]) -> str:
    return table([[r["kind"], r["store"], r["turns"], r["first10_p50_ms"], r["last_p50_ms"], r["last_p99_ms"],
                   r["state_bytes_at_end"]] for r in rows],
                 ["kind", "store", "turns", "p50 turns 1-10", f"p50 last {rows[0]['last_turns'] if rows else 0}",
                  "p99 last", "state B at end"])


def compile_table(c: dict[str, Any]) -> str:
    rows = [["agents", c["agents"]], ["agents.yml KB", c["yaml_kb"]], ["IR JSON KB", c["ir_json_kb"]],
            ["diagnostics (errors)", f"{c['diagnostics']} ({c['errors']})"],
            ["load_program s (best of runs)", c["load_s"]], ["load_program s, all runs", c["load_s_all"]],
            ["Engine(...) s", c["engine_s"]], ["start + first turn s", c["start_and_first_turn_s"]],
            ["routing turn over all members, warm ms (median of 5)", c["routing_turn_warm_ms"]],
            ["RSS before load MB (imports)", c["rss_before_mb"]], ["RSS growth over load MB", c["rss_growth_mb"]],
            ["RSS peak (VmHWM) MB", c["rss_peak_mb"]], ["tracemalloc peak during load MB", c["tracemalloc_peak_mb"]],
            ["tracemalloc retained (IR) MB", c["tracemalloc_retained_mb"]]]
    return table(rows, ["compile", "value"])


def idle_table(rows: list[dict[str, Any]]) -> str:
    keys = [("sessions", "sessions"), ("turns_per_session", "turns each"), ("state_json_bytes", "state JSON B"),
            ("events_per_session", "events"), ("events_json_bytes", "events JSON B"),
            ("sqlite_text_bytes_per_session", "SQLite text B/session"),
            ("sqlite_file_bytes_per_session", "SQLite file B/session"),
            ("memory_store_python_bytes_per_session", "memory store B/session (tracemalloc)"),
            ("memory_store_rss_bytes_per_session", "memory store RSS B/session"),
            ("ms_per_turn_sqlite", "ms/turn (sqlite)")]
    out = [[label] + [r[key] for r in rows] for key, label in keys]
    return table(out, ["idle session"] + [r["program"] for r in rows])


def profile_text(profile: dict[str, Any]) -> str:
    lines = [f"profile of {profile['kind']} turns ({profile['turns']} turns, memory store, "
             f"{profile['profiled_ms_per_turn']} ms/turn under cProfile)"]
    lines.append(table([[r["function"], round(r["cum_ms_per_turn"], 3), round(r["calls_per_turn"], 1)]
                        for r in profile["top_cumulative"]], ["top cumulative", "ms/turn", "calls/turn"]))
    lines.append(table([[r["function"], round(r["own_ms_per_turn"], 3), round(r["calls_per_turn"], 1)]
                        for r in profile["top_own"]], ["top own time", "ms/turn", "calls/turn"]))
    return "\n".join(lines)


def machine() -> dict[str, Any]:
    try:
        load = os.getloadavg()
    except OSError:
        load = (0.0, 0.0, 0.0)
    return {"python": sys.version.split()[0], "cpus": os.cpu_count(), "loadavg": [round(x, 2) for x in load],
            "platform": sys.platform}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=30, help="timed sessions per kind and store (30)")
    parser.add_argument("--turns", type=int, default=10, help="timed turns per session (10)")
    parser.add_argument("--long-turns", type=int, default=150, help="turns of one long session per kind (150; 0: skip)")
    parser.add_argument("--agents", type=int, default=1000, help="agents of the generated program (1000)")
    parser.add_argument("--compile-repeat", type=int, default=2, help="fresh-process loads of it (2)")
    parser.add_argument("--idle", type=int, default=1000, help="idle sessions per realistic program (1000)")
    parser.add_argument("--only", default="turns,compile,idle", help="parts to run: turns,compile,idle")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--stores", default=",".join(STORES))
    profile = parser.add_mutually_exclusive_group()
    profile.add_argument("--profile", action="store_true", help="profile every kind, even within target")
    profile.add_argument("--no-profile", action="store_true", help="never profile")
    parser.add_argument("--profile-sessions", type=int, default=10)
    parser.add_argument("--gc-freeze", action=argparse.BooleanOptionalAction, default=True,
                        help="gc.freeze() after start-up, before measuring, as `frontdesk serve` does after loading "
                             "(default; --no-gc-freeze measures without it)")
    parser.add_argument("--json", metavar="FILE", help="write the numbers as JSON")
    parser.add_argument("--compile-child", metavar="DIR", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.compile_child:
        print(json.dumps(compile_child(args.compile_child)))
        return {}
    parts = set(args.only.split(","))
    kinds = [k for k in args.kinds.split(",") if k]
    stores = [s for s in args.stores.split(",") if s]
    report: dict[str, Any] = {"machine": machine(), "targets_ms": {"p50": TARGET_P50_MS, "p99": TARGET_P99_MS},
                              "settings": {"sessions": args.sessions, "turns": args.turns, "long_turns": args.long_turns,
                                           "agents": args.agents,
                                           "idle": args.idle}}
    report["settings"]["gc_freeze"] = FREEZE["on"] = args.gc_freeze
    began = time.perf_counter()
    print(f"machine: {report['machine']}")
    with tempfile.TemporaryDirectory(prefix="frontdesk-overhead-") as tmp:
        folder = Path(tmp)
        os.environ.setdefault("FRONTDESK_EXAMPLE_DB_DIR", str(folder / "example-data"))
        if "turns" in parts:
            report["turn_events"] = {k: check_kind(k, folder / "check") for k in kinds}
            stats = [measure_turns(k, s, folder, args.sessions, args.turns) for s in stores for k in kinds]
            report["turns"] = [asdict(s) for s in stats]
            print(f"\nper-turn overhead ({args.sessions} sessions x {args.turns} turns after a warm-up session; "
                  "instant model; store write included)")
            print(turns_table(stats))
            if args.long_turns > 0:
                report["long_sessions"] = [measure_long(k, s, folder, args.long_turns) for s in stores for k in kinds]
                print(f"\none long session per kind ({args.long_turns} turns): the state grows until history "
                      "and transcripts are capped")
                print(long_table(report["long_sessions"]))
            over = sorted({s.kind for s in stats if not s.meets_target})
            wanted = [] if args.no_profile else (kinds if args.profile else over)
            report["profiles"] = [profile_kind(k, folder, args.profile_sessions, args.turns) for k in wanted]
            for p in report["profiles"]:
                print()
                print(profile_text(p))
        if "compile" in parts:
            report["compile"] = measure_compile(args.agents, folder, args.compile_repeat)
            print(f"\ncompile: generated ADL program of {args.agents} agents (fresh process per load)")
            print(compile_table(report["compile"]))
        if "idle" in parts and args.idle > 0:
            report["idle"] = [measure_idle(spec, args.idle, folder) for spec in idle_programs()]
            print("\nmemory per stored idle session")
            print(idle_table(report["idle"]))
    report["seconds"] = round(time.perf_counter() - began, 1)
    print(f"\ntotal {report['seconds']} s")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return report


if __name__ == "__main__":
    main()
