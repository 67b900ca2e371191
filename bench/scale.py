"""Benchmark: what a turn costs as the program, the session and the knowledge base grow (issue 29).

Three measurements, each printed as a table; Frontdesk and, where MICA is installed
(`bash ../shared/reference/mica/setup.sh /work/mica-venv`), MICA side by side:

- **Program size.** examples/bookstore with filler agents added to its triage ensemble, so that
  the program has 10, 100 and 1,000 agents. The fillers are generated customer-service agents
  (flow agents with a question and a `the user claims` choice, one in five a kb agent with FAQ
  entries, one in ten an llm agent) over topics far from books, each with its own description.
  The dialogue is bs_issue7 (bench/intent_shift/: 8 intent-shifting turns). Both systems are
  answered by the same ideal model (bench/ideal_model.py, answering from the turn's labels): MICA
  through the differential harness's shared model server (bench/differential/shared_model.py), whose
  requests are counted with the same token counter. Columns: prompt tokens and calls per turn,
  turns right; for Frontdesk the compile time (a fresh process loading the program), the time of
  the first decision (Frontdesk's own milliseconds in the first turn: no model time; the models
  loaded and the knowledge indexes built before it), and the one-off builds: the knowledge indexes
  and, in hybrid mode, the encoding of the program's phrases (both kept on disk for the next process).
- **Session length.** bs_issue7's turns played over and over in one session; prompt tokens per turn
  at each checkpoint, the mean over the dialogue's last pass up to it (8 turns, every kind once).
- **Knowledge size.** A kb agent over N passages (generated store-policy documents), with three other
  members beside it in the ensemble (so the message is routed): in a fresh process, the index build
  (or load, when an earlier process built it; with the program's phrase vectors, read at start as
  `frontdesk chat` reads them) and the first question turn, Frontdesk only (LLM-only and hybrid). Run
  twice: the second process reuses the index.

Run: .venv/bin/python bench/scale.py [--only program,session,knowledge] [--sizes 10,100,1000]
     [--session-turns 1,10,100,400] [--passages 10000] [--modes llm,hybrid] [--no-mica] [--json FILE] [-v]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH / "differential"))

from ideal_model import IdealModel, IdealModelServer, TokenCounter, TurnOracle  # noqa: E402
from intent_shift import Bench, load_dialogue  # noqa: E402

MICA_PYTHON = Path("/work/mica-venv/bin/python")
SHARED = Path(os.environ.get("FRONTDESK_SHARED") or ROOT.parent / "shared")  # ../shared beside the checkout
MICA_SOURCE = SHARED / "reference" / "mica"
MICA_BOOKSTORE = SHARED / "conformance" / "mica" / "bookstore"  # MICA's own bookstore program
DIALOGUE = BENCH / "intent_shift" / "bs_issue7.yml"
DIFFERENTIAL_DIALOGUES = BENCH / "differential" / "example_dialogues" / "bookstore.yml"
BOOKSTORE_AGENTS = 5  # main, triage, store_policy_kb, book_recommendation, order

# ---- generated filler agents ---------------------------------------------------------------------

SUBJECTS = [
    "mobile phone plan", "home broadband", "energy tariff", "gas meter reading", "electricity bill",
    "water bill", "car insurance policy", "home insurance claim", "travel insurance", "pet insurance",
    "credit card", "savings account", "mortgage application", "personal loan", "pension transfer",
    "parcel delivery", "furniture order", "kitchen appliance repair", "laptop warranty", "TV subscription",
    "streaming service", "gym membership", "concert ticket", "train ticket", "flight booking",
    "hotel reservation", "car rental", "parking permit", "council tax", "driving licence",
    "passport renewal", "dental appointment", "eye test", "prescription refill", "vaccination appointment",
    "school enrolment", "university course", "library card", "bicycle repair", "garden service",
    "window cleaning", "boiler service", "solar panel installation", "phone screen repair", "smart watch",
    "gift card", "loyalty points", "newsletter subscription", "charity donation", "lottery ticket",
]
ACTIONS = [
    ("cancel", "I can cancel your {s} and tell you about any cancellation fee."),
    ("renew", "I can renew your {s} before it runs out."),
    ("upgrade", "I can upgrade your {s} to a better option."),
    ("complain", "I take complaints about your {s} and pass them to the right team."),
    ("price", "I can tell you what a {s} costs and which discounts apply."),
    ("status", "I can check the status of your {s}."),
    ("change", "I can change the details of your {s}."),
    ("open", "I can open a new {s} for you."),
    ("pay", "I can take a payment for your {s}."),
    ("refund", "I can refund money for your {s} when you are owed it."),
    ("fault", "I can report a fault or a problem with your {s}."),
    ("transfer", "I can move your {s} to another person or address."),
    ("documents", "I can send you the documents and statements of your {s}."),
    ("contact", "I can tell you how to reach the team that looks after your {s}."),
    ("schedule", "I can book, move or cancel an appointment for your {s}."),
    ("eligibility", "I can check whether you are eligible for a {s}."),
    ("compare", "I can compare the options for a {s} and say which suits you."),
    ("security", "I can help if you think someone else used your {s}."),
    ("accessibility", "I can set up accessible formats and support for your {s}."),
    ("feedback", "I collect feedback and ideas about your {s}."),
]


def filler_agents(count: int) -> list[tuple[str, dict[str, Any]]]:
    """`count` generated agents (name, ADL definition), each with its own description."""
    agents = []
    for i in range(count):
        subject = SUBJECTS[i % len(SUBJECTS)]
        action, description = ACTIONS[(i // len(SUBJECTS)) % len(ACTIONS)]
        lap = i // (len(SUBJECTS) * len(ACTIONS))
        name = f"{action}_{subject.replace(' ', '_').lower()}" + (f"_{lap + 1}" if lap else "")
        text = description.format(s=subject) + (f" (region {lap + 1})" if lap else "")
        if i % 10 == 9:
            agent = {"type": "llm agent", "description": text,
                     "prompt": f"You help customers with their {subject}. Ask what they need, answer briefly "
                               f"and politely, and complete this agent when they are done."}
        elif i % 5 == 4:
            agent = {"type": "kb agent", "description": text,
                     "faq": [{"q": f"How do I {action} my {subject}?",
                              "a": f"You can {action} your {subject} online or by phone."},
                             {"q": f"How long does it take to {action} a {subject}?",
                              "a": "It usually takes two working days."}]}
        else:
            agent = {"type": "flow agent", "description": text, "args": ["reference"],
                     "fallback": "Sorry, I did not understand that. Could you rephrase it?",
                     "steps": [{"bot": f"Shall I {action} your {subject} now?"}, "user",
                               {"if": f'the user claims "Yes", "Please {action} my {subject}"',
                                "then": [{"bot": f"Done: your {subject} request is in."},
                                         {"return": "success, Done."}],
                                "else": [{"bot": f"Fine, I will leave your {subject} as it is."},
                                         {"return": "success, Nothing to do."}]}]}
        agents.append((name, agent))
    return agents


def bookstore_with(total: int, into: Path, source: Path = ROOT / "examples" / "bookstore") -> Path:
    """A copy of a bookstore program (Frontdesk's example, or MICA's conformance program) whose triage
    ensemble has `total` agents in the program in all."""
    shutil.rmtree(into, ignore_errors=True)
    shutil.copytree(source, into, ignore=shutil.ignore_patterns(".frontdesk", "__pycache__"))
    agents_yml = into / "agents.yml"
    data = yaml.safe_load(agents_yml.read_text(encoding="utf-8"))
    if source == MICA_BOOKSTORE:  # its knowledge sources are web pages nobody fetches here: the example's files
        shutil.copytree(ROOT / "examples" / "bookstore" / "policies", into / "policies")
        data["store_policy_kb"]["sources"] = ["policies/"]
    fillers = filler_agents(max(total - BOOKSTORE_AGENTS, 0))
    data["triage"]["contains"] = list(data["triage"]["contains"]) + [name for name, _ in fillers]
    tools = data.pop("tools", None)
    for name, agent in fillers:
        data[name] = agent
    if tools is not None:
        data["tools"] = tools
    agents_yml.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=200), encoding="utf-8")
    return into


# ---- Frontdesk -----------------------------------------------------------------------------------

COMPILE_CHILD = """
import json, sys, time
start = time.perf_counter()
from frontdesk.lang import load_program
imported = time.perf_counter()
program, diagnostics = load_program(sys.argv[1])
done = time.perf_counter()
print(json.dumps({"import_s": imported - start, "compile_s": done - imported, "ok": program is not None}))
"""


def compile_seconds(folder: Path, repeat: int = 2) -> float:
    """The best of `repeat` fresh processes' time to load the program (imports excluded)."""
    times = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", COMPILE_CHILD, str(folder)], capture_output=True, text=True,
                             check=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
        times.append(json.loads(out.stdout.strip().splitlines()[-1])["compile_s"])
    return min(times)


class ScaleBench(Bench):
    """intent_shift's Bench over one generated program folder."""

    def __init__(self, mode: str, folder: Path, server, counter) -> None:
        super().__init__(mode, folder.parent, server, counter)
        self.dialogue_dir = folder.parent
        self.folder = folder


def encode_phrases(bench: Bench, name: str) -> float:
    """Hybrid mode: seconds to encode the program's own phrases once (kept on disk for later processes)."""
    from frontdesk.app import program_phrases

    _llm, _understanding, embedder = bench.models(name)
    if embedder is None:
        return 0.0
    embedder.encode(["the model loads once per process"])  # not part of the program's cost
    start = time.perf_counter()
    embedder.encode(sorted(program_phrases(bench.program(name))))
    return time.perf_counter() - start


def build_indexes(bench: Bench, name: str) -> float:
    """Seconds to build (or load) the program's knowledge indexes before the first turn: they are kept on
    disk, so the dialogue's engine loads them; the first turn then times the decision, not the build."""
    from frontdesk.app import knowledge_for
    from frontdesk.ir.models import KnowledgeAgent
    from frontdesk.nlu.base import Option

    program = bench.program(name)
    _llm, understanding, embedder = bench.models(name)
    start = time.perf_counter()
    knowledge = knowledge_for(program, embedder)
    for agent in program.agents.values():
        if isinstance(agent, KnowledgeAgent):
            knowledge.index(agent)
    if understanding is not None:  # its model loads once per process
        understanding.decide("warm up", [Option("warm", ("hello there",))], "route")
    return time.perf_counter() - start


def frontdesk_dialogue(mode: str, folder: Path, dialogue_turns, server, counter, verbose: int) -> dict[str, Any]:
    bench = ScaleBench(mode, folder, server, counter)
    name = folder.name
    dialogue = load_dialogue(DIALOGUE, bench.program(name))
    dialogue.program = name
    dialogue.turns = dialogue_turns(dialogue.turns)
    phrases_s = encode_phrases(bench, name) if mode == "hybrid" else 0.0
    phrases_s += build_indexes(bench, name)
    row = bench.run(dialogue)
    turns = row.turns
    if verbose:
        for t in turns:
            print(f"    {'ok ' if t.ok else 'BAD'} {t.calls} calls {t.prompt_tokens:>6} tok "
                  f"{t.frontdesk_ms:>8.1f} ms  {t.user[:50]}  {'; '.join(t.problems)[:120]}")
            if verbose > 1:
                for call in t.model_calls:
                    print(f"        {call[:160]}")
    n = len(turns) or 1
    return {"turns": len(turns), "right": sum(t.ok for t in turns),
            "calls_per_turn": sum(t.calls for t in turns) / n,
            "prompt_tokens_per_turn": sum(t.prompt_tokens for t in turns) / n,
            "first_turn_ms": turns[0].frontdesk_ms if turns else 0.0,
            "median_turn_ms": statistics.median(t.frontdesk_ms for t in turns) if turns else 0.0,
            "phrase_encoding_s": phrases_s,
            "per_turn_tokens": [t.prompt_tokens for t in turns]}


# ---- MICA ------------------------------------------------------------------------------------------


class CountingHook:
    """The shared model server's request hook: counts each MICA request's prompt tokens (no fault)."""

    def __init__(self, counter: TokenCounter, counted_turns: set[int] | None = None) -> None:
        self.counter = counter
        self.counted_turns = counted_turns
        self.lock = threading.Lock()
        self.per_turn: dict[int, list[int]] = {}

    def __call__(self, system: str, kind: str, body: dict[str, Any], answer: dict[str, Any], turn) -> None:
        if system != "mica":
            return None
        number = int(turn[1])
        tokens = -1
        if self.counted_turns is None or number in self.counted_turns:
            tokens = self.counter.prompt(body.get("messages") or [], body.get("tools") or [])
        with self.lock:
            self.per_turn.setdefault(number, []).append(tokens)
        return None


def mica_dialogue(folder: Path, dialogue: dict[str, Any], counter: TokenCounter, verbose: int,
                  counted_turns: set[int] | None = None) -> dict[str, Any]:
    """Play one differential-format dialogue through MICA against the shared model server."""
    import frontdesk_runner
    import score
    import shared_model

    from frontdesk.lang import load_program

    agents_yml = yaml.safe_load((folder / "agents.yml").read_text(encoding="utf-8")) or {}
    with frontdesk_runner.with_tools(folder, [str(ROOT / "examples" / "bookstore" / "tools.py")]) as played:
        program, diagnostics = load_program(played)
    if program is None:
        raise SystemExit(f"{folder} does not load: {[str(d) for d in diagnostics][:3]}")
    hook = CountingHook(counter, counted_turns)
    server = shared_model.Server(("127.0.0.1", 0), shared_model.Handler)
    server.model = shared_model.SharedModel(program, agents_yml, [dialogue])
    server.log_path, server.log_lock, server.fault_hook = "", threading.Lock(), hook
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    with tempfile.TemporaryDirectory() as scratch:
        dialogues = Path(scratch) / "dialogues.yml"
        dialogues.write_text(yaml.safe_dump({"dialogues": [dialogue]}, sort_keys=False), encoding="utf-8")
        out = Path(scratch) / "mica.jsonl"
        command = [str(MICA_PYTHON), str(BENCH / "differential" / "mica_runner.py"), str(folder), str(dialogues),
                   "--base-url", f"http://127.0.0.1:{server.server_address[1]}", "--announce",
                   "--continue-after-error", "--program-label", "scale",
                   "--env", "FRONTDESK_EXAMPLE_TODAY=2026-11-22", "--fresh-dir-env", "FRONTDESK_EXAMPLE_DB_DIR",
                   "--tools", str(ROOT / "examples" / "bookstore" / "tools.py"), "--out", str(out)]
        started = time.perf_counter()
        subprocess.run(command, env={**os.environ, "PYTHONPATH": str(MICA_SOURCE)}, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)
        seconds = time.perf_counter() - started
        lines = score.read_lines(out) if out.is_file() else []
    server.shutdown()
    server.server_close()
    by_turn = {int(line.get("turn") or 0): line for line in lines if line.get("record") == "turn"}
    turns = [t for t in dialogue["turns"]]
    right = sum(not score.check(t.get("expect") or {}, by_turn.get(i)) for i, t in enumerate(turns, start=1))
    n = len(turns) or 1
    counted = {k: v for k, v in hook.per_turn.items() if k >= 1 and all(x >= 0 for x in v)}
    if verbose:
        for i, t in enumerate(turns, start=1):
            problems = score.check(t.get("expect") or {}, by_turn.get(i))
            print(f"    {'BAD' if problems else 'ok '} {len(hook.per_turn.get(i, []))} calls "
                  f"{sum(counted.get(i, [])):>6} tok  {str(t.get('user'))[:50]}  {'; '.join(problems)[:160]}")
    return {"turns": len(turns), "right": right,
            "calls_per_turn": sum(len(v) for k, v in hook.per_turn.items() if k >= 1) / n,
            "prompt_tokens_per_turn": sum(sum(v) for v in counted.values()) / max(len(counted), 1),
            "per_turn_tokens": {k: sum(v) for k, v in counted.items()}, "seconds": seconds}


def differential_dialogue() -> dict[str, Any]:
    data = yaml.safe_load(DIFFERENTIAL_DIALOGUES.read_text(encoding="utf-8"))
    return next(d for d in data["dialogues"] if d["name"] == DIALOGUE.stem)


# ---- the three measurements ------------------------------------------------------------------------


def measure_program(sizes: list[int], modes: list[str], mica: bool, work: Path, server, counter,
                    verbose: int) -> list[dict[str, Any]]:
    rows = []
    for size in sizes:
        folder = bookstore_with(size, work / f"bookstore_{size}" / "bookstore")
        row: dict[str, Any] = {"agents": size, "compile_s": compile_seconds(folder)}
        for mode in modes:
            if verbose:
                print(f"  {size} agents, {mode}:")
            row[mode] = frontdesk_dialogue(mode, folder, list, server, counter, verbose)
        if mica:
            if verbose:
                print(f"  {size} agents, MICA:")
            mica_folder = bookstore_with(size, work / f"bookstore_{size}" / "mica_bookstore", MICA_BOOKSTORE)
            row["mica"] = mica_dialogue(mica_folder, differential_dialogue(), counter, verbose)
        rows.append(row)
        print_program([row], header=not rows[:-1])
    return rows


def print_program(rows: list[dict[str, Any]], header: bool = True) -> None:
    if header:
        print("| agents | system | prompt tokens/turn | calls/turn | right | first decision ms | compile s | "
              "one-off builds s |")
        print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        for system in ("mica", "llm", "hybrid"):
            r = row.get(system)
            if r is None:
                continue
            label = {"mica": "MICA", "llm": "Frontdesk LLM-only", "hybrid": "Frontdesk hybrid"}[system]
            first = f"{r['first_turn_ms']:.0f}" if "first_turn_ms" in r else ""
            compile_s = f"{row['compile_s']:.2f}" if system != "mica" else ""
            phrases = f"{r['phrase_encoding_s']:.1f}" if system != "mica" else ""
            print(f"| {row['agents']} | {label} | {r['prompt_tokens_per_turn']:,.0f} | {r['calls_per_turn']:.2f} | "
                  f"{r['right']}/{r['turns']} | {first} | {compile_s} | {phrases} |", flush=True)


def measure_session(checkpoints: list[int], modes: list[str], mica: bool, work: Path, server, counter,
                    verbose: int) -> dict[str, Any]:
    length = max(checkpoints)
    folder = bookstore_with(BOOKSTORE_AGENTS, work / "session" / "bookstore")
    result: dict[str, Any] = {"checkpoints": checkpoints}

    def cycled(turns):
        return [turns[i % len(turns)] for i in range(length)]

    cycle = len(load_dialogue(DIALOGUE, ScaleBench("llm", folder, server, counter).program(folder.name)).turns)

    def window(k: int) -> range:  # the dialogue's last pass up to turn k: every kind of turn once
        return range(max(1, k - cycle + 1), k + 1)

    def mean(per_turn: dict[int, int], k: int) -> int | None:
        values = [per_turn[i] for i in window(k) if per_turn.get(i) is not None]
        return round(sum(values) / len(values)) if values else None

    for mode in modes:
        r = frontdesk_dialogue(mode, folder, cycled, server, counter, 0)
        result[mode] = {k: mean(dict(enumerate(r["per_turn_tokens"], start=1)), k) for k in checkpoints}
    if mica:
        dialogue = differential_dialogue()
        dialogue = {**dialogue, "turns": cycled(dialogue["turns"])}
        mica_folder = bookstore_with(BOOKSTORE_AGENTS, work / "session" / "mica_bookstore", MICA_BOOKSTORE)
        counted = {i for k in checkpoints for i in window(k)}
        r = mica_dialogue(mica_folder, dialogue, counter, 0, counted_turns=counted)
        result["mica"] = {k: mean(r["per_turn_tokens"], k) for k in checkpoints}
    print(f"(prompt tokens per turn, the mean of the {cycle} turns up to the checkpoint)\n")
    print("| turn | " + " | ".join(s for s in ("mica", *modes) if s in result) + " |")
    print("|---:|" + "---:|" * len([s for s in ("mica", *modes) if s in result]))
    for k in checkpoints:
        print(f"| {k} | " + " | ".join(f"{result[s][k]:,}" if result[s][k] is not None else "-"
                                       for s in ("mica", *modes) if s in result) + " |")
    return result


KNOWLEDGE_CHILD = """
import json, os, sys, time
sys.path.insert(0, os.environ["SCALE_BENCH"])
start = time.perf_counter()
from frontdesk.lang import load_program
from frontdesk.app import choose_models, knowledge_for
from frontdesk.runtime.engine import Engine
from frontdesk.store.memory import MemorySessionStore
from intent_shift import environment
program, _ = load_program(sys.argv[1])
mode = sys.argv[2]
with environment(os.environ["SCALE_BASE_URL"]):
    models = choose_models(program, "openai", embeddings=(mode == "hybrid"))
if models.embedder is not None:  # the model itself loads once per process: not part of the index
    models.embedder.encode(["warm up"])
loaded = time.perf_counter()
knowledge = knowledge_for(program, models.embedder)
engine = Engine(program, models.llm, MemorySessionStore(), understanding=models.understanding, knowledge=knowledge)
index_start = time.perf_counter()
if models.embedder is not None:  # as `frontdesk chat` and `serve` do at start: the program's phrase vectors
    from frontdesk.app import attach_program_phrases
    attach_program_phrases(program, models.embedder)
index = knowledge.index(program.agents["policies"])
index_s = time.perf_counter() - index_start
session = engine.start().session_id
turn_start = time.perf_counter()
result = engine.send(session, sys.argv[3])
turn_s = time.perf_counter() - turn_start
model_ms = sum((e.data.get("duration_ms") or 0) for e in result.events if e.type == "llm_call")
print(json.dumps({"index_s": index_s, "turn_ms": turn_s * 1000 - model_ms, "model_ms": model_ms, "cached": bool(getattr(index, "loaded_from_cache", False)),
                  "chunks": len(index.chunks), "llm_calls": sum(e.type == "llm_call" for e in result.events),
                  "reply": [e.data.get("text") for e in result.events if e.type == "bot_message"][:1]}))
"""

TOPICS = ["shipping", "returns", "refunds", "membership", "gift wrapping", "store hours", "events", "payments",
          "privacy", "accessibility"]


def knowledge_program(passages: int, into: Path) -> Path:
    """A kb agent over `passages` generated passages (markdown sections, 20 per file). A folder generated
    before for as many passages is kept, with the indexes built in it (`--keep`: no second 5-minute build)."""
    marker = into / ".scale-passages"
    if marker.is_file() and marker.read_text(encoding="utf-8") == str(passages):
        return into
    shutil.rmtree(into, ignore_errors=True)
    docs = into / "docs"
    docs.mkdir(parents=True)
    per_file = 20
    for f in range((passages + per_file - 1) // per_file):
        sections = []
        for s in range(per_file):
            n = f * per_file + s
            if n >= passages:
                break
            topic = TOPICS[n % len(TOPICS)]
            sections.append(f"## {topic.title()} rule {n}\n\nFor {topic} case {n}, customers of branch {n // 7} "
                            f"follow procedure {n * 37 % 1000}: the fee is {n % 50} EUR and it takes {n % 9 + 1} days.\n")
        (docs / f"policy_{f:05d}.md").write_text(f"# Policy file {f}\n\n" + "\n".join(sections), encoding="utf-8")
    others = filler_agents(3)  # so that a routing decision reads every member's phrases, the documents' too
    (into / "agents.yml").write_text(yaml.safe_dump({
        "main": {"type": "flow agent", "description": "Entry.", "steps": [{"call": "desk"}]},
        "desk": {"type": "ensemble agent", "description": "Select an agent to respond to the user.",
                 "contains": ["policies", *[name for name, _ in others]], "steps": [{"bot": "Hello, how can I help?"}]},
        "policies": {"type": "kb agent", "description": "I answer questions about the store's policies.",
                     "sources": ["docs/"]},
        **dict(others),
    }, sort_keys=False), encoding="utf-8")
    marker.write_text(str(passages), encoding="utf-8")
    return into


def measure_knowledge(passages: int, modes: list[str], work: Path, server, counter) -> dict[str, Any]:
    from frontdesk.lang import load_program

    folder = knowledge_program(passages, work / f"kb_{passages}")
    case = passages // 2 + 1
    question = f"What is the fee for {TOPICS[case % len(TOPICS)]} case {case}?"
    program = load_program(folder)[0]
    oracle = TurnOracle.from_dict({"user": question, "agents": ["policies"], "evidence": f"the fee is {case % 50} EUR",
                                   "answer": f"For that case the fee is {case % 50} EUR."})
    result: dict[str, Any] = {"passages": passages}
    print("| passages | mode | process | index build/load s | first turn ms (own) | index reused | chunks | reply |")
    print("|---:|---|---|---:|---:|---|---:|---|")
    for mode in modes:
        for attempt in ("first process", "second process"):
            server.model = IdealModel(program, counter)
            server.model.begin_turn(oracle)
            env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "SCALE_BENCH": str(BENCH),
                   "SCALE_BASE_URL": server.base_url}
            out = subprocess.run([sys.executable, "-c", KNOWLEDGE_CHILD, str(folder), mode, question],
                                 capture_output=True, text=True, env=env)
            if out.returncode != 0:
                print(out.stderr[-2000:], file=sys.stderr)
                continue
            r = json.loads(out.stdout.strip().splitlines()[-1])
            result[f"{mode} {attempt}"] = r
            print(f"| {passages:,} | {mode} | {attempt} | {r['index_s']:.2f} | {r['turn_ms']:.0f} | "
                  f"{'yes' if r['cached'] else 'no'} | {r['chunks']} | {(r['reply'] or [''])[0][:60]} |", flush=True)
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="program,session,knowledge")
    parser.add_argument("--sizes", default="10,100,1000")
    parser.add_argument("--session-turns", default="1,10,100,400")
    parser.add_argument("--passages", type=int, default=10_000)
    parser.add_argument("--modes", default="llm,hybrid")
    parser.add_argument("--no-mica", action="store_true")
    parser.add_argument("--keep", default="", help="a folder to keep the generated programs in")
    parser.add_argument("--json", default="")
    parser.add_argument("-v", "--verbose", action="count", default=0)
    options = parser.parse_args(argv)
    only = set(options.only.split(","))
    modes = [m for m in options.modes.split(",") if m]
    mica = not options.no_mica and MICA_PYTHON.is_file() and MICA_BOOKSTORE.is_dir()
    if not mica and not options.no_mica:
        print(f"(MICA is not installed at {MICA_PYTHON}: Frontdesk only)")
    counter = TokenCounter()
    report: dict[str, Any] = {"tokenizer": counter.name}
    work = Path(options.keep) if options.keep else Path(tempfile.mkdtemp(prefix="frontdesk-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        with IdealModelServer() as server:
            if "program" in only:
                print("\n## Program size (bookstore + filler agents; bs_issue7, 8 turns)\n")
                report["program"] = measure_program([int(s) for s in options.sizes.split(",")], modes, mica, work,
                                                    server, counter, options.verbose)
            if "session" in only:
                print("\n## Session length (bs_issue7's turns over and over, one session)\n")
                report["session"] = measure_session([int(s) for s in options.session_turns.split(",")], modes,
                                                    mica, work, server, counter, options.verbose)
            if "knowledge" in only:
                print(f"\n## Knowledge size ({options.passages:,} passages; a fresh process each row)\n")
                report["knowledge"] = measure_knowledge(options.passages, modes, work, server, counter)
    finally:
        if not options.keep:
            shutil.rmtree(work, ignore_errors=True)
    if options.json:
        Path(options.json).write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
