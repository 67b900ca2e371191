"""MICA and Frontdesk side by side under the same seeded model faults (issue 28 §1).

    .venv/bin/python bench/differential/faults_side_by_side.py [--rates 0,5,10,20] [--seeds 2] \\
        [--programs examples:bookstore,examples:retail_banking] [--mica-python /work/mica-venv/bin/python] \\
        [--out /tmp/faults_side_by_side] [--md bench/differential/results/faults/side_by_side.md] [--rescore]

For each program (a label of run_all.py: `examples:bookstore` is Frontdesk's example program, which MICA
also loads, played with `example_dialogues/bookstore.yml`), one shared model server (shared_model.py,
in this process) answers both systems from the same turn oracles, as in run_all.py. Its fault hook
injects bench/faults.py's faults: each model request, whichever system makes it, draws from a random
stream seeded by (seed, dialogue, turn), so the k-th request of a turn meets the same draw in both
systems; with probability `rate` the answer gets one fault among the kinds that fit that request,
applied by faults.apply_fault (the faults module's own function; MICA's text answers are handed to it
as the tool call they stand for, see `apply_mica_fault`). Frontdesk's requests get the faults
faults.FAULTS_BY_KIND lists for their kind, exactly as bench/robustness.py's FaultyModel gives them;
MICA's get the faults of the Frontdesk request that asks the same question (MICA_NOTES.md), except
those that have no counterpart in MICA's answer (`mica_faults`, NO_COUNTERPART). `timeout` is applied to
neither (not in the issue's list; each hit would cost 1.6 s of waiting).

Then mica_runner.py (MICA's environment) and frontdesk_runner.py (`--base-url`, LLM only: no
understanding model) play every dialogue, and each turn is classified with bench/robustness.py's
definitions, "right" being score.py's check of the turn's `expect`:

- harmful: the system crashed (the turn raised, or was never played); or the user saw an empty
  message, an internal text (robustness.INTERNAL: an error text, raw JSON, a traceback); or a
  side-effecting tool (intent_shift.SIDE_EFFECTS) ran that the turn does not expect, or with other
  values than the expected call's (robustness.harm: a call matches an expected one when its arguments
  hold the expected values; the values no turn so far gives, from the oracle's values, the expected
  tool arguments, items tools listed and the program's own values at the session start, are named in
  the reason). A call that Frontdesk records but a rule answers (`answered_by: rule`) never ran.
  What the user sees: each of Frontdesk's bot messages; MICA's texts of the turn joined by newlines
  (its workbench shows one message per turn, `demo.get_response`), so MICA's empty text among others
  (an llm agent that quits) is not an empty message, an answer of only empty texts is;
  A turn with no text at all is not an empty message (there is no message; counted apart as silent);
- wrong: not harmful, and score.py finds the expectation unmet;
- recovered: right although a fault hit the turn (a fault was injected into one of its requests);
- right: right, and no fault hit the turn.

Rate 0 is played once (the seed only drives the faults). The table is printed per rate and written
as Markdown (--md) with the command, the date and the Frontdesk tree; the runners' JSON lines, each
run's faults (`*.faults.json`: the faults of each turn, the requests by kind) and `run.json` stay in
--out, and `--rescore` classifies them again without playing anything. At the defaults the run takes
about 4.5 minutes on a 2-core machine (about 9 with --seeds 5).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import random
import re
import shlex
import subprocess
import sys
import threading
import time
import zlib
from collections import Counter, defaultdict
from typing import Any

import yaml

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(HERE), str(HERE.parent)]

import frontdesk_runner as fr  # noqa: E402
import run_all  # noqa: E402
import score  # noqa: E402
from faults import FAULTS_BY_KIND, apply_fault  # noqa: E402
from ideal_model import request_kind, step_tool_calls  # noqa: E402
from intent_shift import SIDE_EFFECTS, same_value, value_given  # noqa: E402
from robustness import INTERNAL, OUTCOMES  # noqa: E402

DEFAULT_PROGRAMS = "examples:bookstore,examples:retail_banking"
DEFAULT_MD = HERE / "results" / "faults" / "side_by_side.md"
SYSTEMS = ("mica", "frontdesk")
LEFT_OUT = {"timeout"}  # applied to neither system (see the module's docstring)

# MICA's request kinds (stub_server.classify) -> the Frontdesk request kind that asks the same question
# (MICA_NOTES.md, "MICA's request kinds and Frontdesk's"); its faults.FAULTS_BY_KIND entry is the list
# MICA's request draws from, less the faults that have no counterpart in MICA's answer.
COUNTERPART = {"route": "route", "flow_args": "understand", "claims": "understand", "llm_agent": "reason",
               "kb_answer": "kb_answer", "fallback": "policy"}
NO_COUNTERPART = {
    "route": {"bad_json": "MICA's route answer is plain text (an agent name), not JSON"},
    "claims": {f: "a claims answer is the text True or False: no arguments, no JSON"
               for f in ("invented_arg", "missing_arg", "bad_json", "wrong_type")},
}
NOTES = {
    "route": "wrong_route: another member listed under `### AGENTS:`",
    "flow_args": "wrong_choice: the quit decision flipped (`{\"status\": \"quit\"}` <-> `{}`), as Frontdesk's "
                 "choice `switch:<agent>`; invented/missing/wrong_type: on `data`; bad_json: the JSON text",
    "claims": "wrong_choice: True <-> False",
    "llm_agent": "tool calls as Frontdesk's; invented/missing/wrong_type also on the JSON's `data` (Frontdesk's "
                 "set_args); bad_json on the JSON text when there is no call; no_tool: text instead of a call or "
                 "of status complete/quit (finish/hand_back); unknown_tool: program tool calls only",
    "kb_answer": "",
    "fallback": "Frontdesk's counterpart (policy_message) gets no faults in bench/faults.py",
}


def mica_faults(kind: str) -> list[str]:
    """The fault kinds a MICA request of this kind draws from."""
    counterpart = COUNTERPART.get(kind)
    skip = NO_COUNTERPART.get(kind, {})
    return [f for f in FAULTS_BY_KIND.get(counterpart or "", ()) if f not in LEFT_OUT and f not in skip]


def frontdesk_faults(kind: str) -> list[str]:
    """The fault kinds a Frontdesk request of this kind (ideal_model.request_kind) draws from."""
    return [f for f in FAULTS_BY_KIND.get(kind, ()) if f not in LEFT_OUT]


# ---- faults in MICA's answers ---------------------------------------------------------------------------


def _message(answer: dict[str, Any]) -> dict[str, Any]:
    return answer["choices"][0]["message"]


def _json_object(text: str | None) -> dict[str, Any] | None:
    try:
        value = json.loads(text or "")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _as_call(name: str, arguments: str) -> dict[str, Any]:
    """A one-call answer, the form apply_fault works on."""
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_0", "type": "function", "function": {"name": name, "arguments": arguments}}]},
        "finish_reason": "tool_calls"}]}


def _through(fault: str, name: str, args: dict[str, Any] | str, rng: random.Random,
             schemas: dict[str, Any] | None = None) -> tuple[bool, str]:
    """apply_fault on a stand-in tool call holding `args`; (applied, the call's arguments afterwards)."""
    stand_in = _as_call(name, args if isinstance(args, str) else json.dumps(args, ensure_ascii=False))
    applied = apply_fault(fault, stand_in, schemas or {}, rng)
    return applied, _message(stand_in)["tool_calls"][0]["function"]["arguments"]


def apply_mica_fault(fault: str, kind: str, answer: dict[str, Any], body: dict[str, Any],
                     rng: random.Random) -> bool:
    """Change MICA's answer in place by one fault (faults.apply_fault does the change); False when the fault
    does not fit this answer. MICA's answers are text (a name, True/False, JSON) or, for an llm agent,
    tool calls: a text answer is handed to apply_fault as the call it stands for."""
    message = _message(answer)
    content = message.get("content")
    calls = message.get("tool_calls") or []
    schemas = {t.get("function", {}).get("name", ""): t.get("function", {}).get("parameters") or {}
               for t in body.get("tools") or []}
    if fault in ("http_500", "http_429", "empty", "unknown_tool") or (calls and fault != "wrong_choice"):
        return apply_fault(fault, answer, schemas, rng)  # unknown_tool: program tool calls only
    if fault == "wrong_route":
        system = "\n".join(m.get("content") or "" for m in body.get("messages") or [] if m.get("role") == "system")
        listed = re.findall(r"^- (\w+): ", system.split("### AGENTS:", 1)[-1], re.M)
        enum = {"route": {"properties": {"agent": {"enum": listed + ["none"]}}}}
        applied, args = _through(fault, "route", {"agent": (content or "").strip()}, rng, enum)
        if applied:
            message["content"] = json.loads(args)["agent"]
        return applied
    if fault == "wrong_choice":
        if kind == "claims":
            now, options = ("True" if "True" in (content or "") else "False"), ["True", "False"]
        elif kind == "flow_args":
            now, options = ("quit" if (_json_object(content) or {}).get("status") == "quit" else "stay"), ["stay", "quit"]
        else:
            return False
        enum = {"understand": {"properties": {"choice": {"enum": options}}}}
        applied, args = _through(fault, "understand", {"choice": now}, rng, enum)
        if applied:
            choice = json.loads(args)["choice"]
            message["content"] = choice if kind == "claims" else json.dumps({"status": "quit"} if choice == "quit" else {})
        return applied
    parsed = _json_object(content)
    if parsed is None:
        return False
    if fault == "bad_json":
        applied, text = _through(fault, "answer", content or "{}", rng)
        if applied:
            message["content"] = text
        return applied
    if fault == "no_tool":  # a control decision (finish: complete, hand_back: quit) answered with text instead
        if kind != "llm_agent" or parsed.get("status") not in ("complete", "quit"):
            return False
        message["tool_calls"] = [{"id": "call_0", "type": "function",
                                  "function": {"name": "finish", "arguments": "{}"}}]
        return apply_fault(fault, answer, schemas, rng)
    if fault in ("invented_arg", "missing_arg", "wrong_type"):  # on the values the JSON gives (`data`)
        data = parsed.get("data")
        if not isinstance(data, dict) or not data:
            return False
        applied, args = _through(fault, "set_args", data, rng)
        if applied:
            data = json.loads(args)
            parsed = {**parsed, "data": data} if data else {k: v for k, v in parsed.items() if k != "data"}
            message["content"] = json.dumps(parsed, ensure_ascii=False)
        return applied
    return False


class FaultInjector:
    """The shared server's fault hook: seeded faults in both systems' answers, and what it injected."""

    def __init__(self, rate: float = 0.0, seed: int = 0) -> None:
        self.lock = threading.Lock()
        self.configure(rate, seed)

    def configure(self, rate: float, seed: int) -> None:
        with self.lock:
            self.rate, self.seed = rate, seed
            self.streams: dict[tuple[str, str, int], random.Random] = {}
            self.injected: dict[tuple[str, str, int], list[tuple[str, str]]] = defaultdict(list)  # -> [(kind, fault)]
            self.requests: Counter = Counter()  # system -> model requests
            self.by_kind: Counter = Counter()  # (system, kind) -> requests

    def stream(self, system: str, dialogue: str, turn: int) -> random.Random:
        key = (system, dialogue, turn)
        if key not in self.streams:  # the same stream for both systems: the k-th request of a turn, the same draw
            self.streams[key] = random.Random(zlib.crc32(f"{self.seed}:{dialogue}:{turn}".encode()))
        return self.streams[key]

    def __call__(self, system: str, kind: str, body: dict[str, Any], answer: dict[str, Any],
                 turn: tuple[str, int]) -> str | None:
        with self.lock:
            if system == "frontdesk":
                kind = request_kind([t.get("function", {}).get("name", "") for t in body.get("tools") or []])
                choices = frontdesk_faults(kind)
            else:
                choices = mica_faults(kind)
            self.requests[system] += 1
            self.by_kind[(system, kind)] += 1
            rng = self.stream(system, str(turn[0]), int(turn[1]))
            draw = rng.random()  # drawn for every request, as FaultyModel does, so the streams stay in step
            fault = rng.choice(choices) if choices else None
            if fault is None or draw >= self.rate:
                return None
            if system == "frontdesk":
                schemas = {t.get("function", {}).get("name", ""): t.get("function", {}).get("parameters") or {}
                           for t in body.get("tools") or []}
                applied = apply_fault(fault, answer, schemas, rng)
            else:
                applied = apply_mica_fault(fault, kind, answer, body, rng)
            if not applied:
                return None
            self.injected[(system, str(turn[0]), int(turn[1]))].append((kind, fault))
            return fault


# ---- classifying a turn ---------------------------------------------------------------------------------


def shown_messages(line: dict[str, Any], system: str) -> list[str]:
    """What the user sees of the turn: Frontdesk's bot messages one by one; MICA's texts joined (see the
    module's docstring)."""
    texts = ["" if t is None else str(t) for t in line.get("bot") or []]
    if system == "mica":
        return ["\n".join(texts)] if texts else []
    return texts


def expected_calls(expect: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(str(t.get("name")), dict(t.get("args") or {})) if isinstance(t, dict) else (str(t), {})
            for t in score.as_list(expect.get("tool"))]


def values_of_turn(turn: dict[str, Any]) -> list[Any]:
    """The values a dialogue turn gives (robustness's values_given, on the harness's format): the oracle's
    args, the expected tool arguments and the model scripts' tool arguments."""
    oracle = turn.get("oracle") or {}
    out = list((oracle.get("args") or {}).values())
    for _, args in expected_calls(turn.get("expect") or {}):
        out += list(args.values())
    for steps in (oracle.get("model") or {}).values():
        for step in steps or []:
            if isinstance(step, dict):
                for _, args in step_tool_calls(step):
                    out += list((args or {}).values())
    return out


def listed_items(line: dict[str, Any]) -> list[dict[str, Any]]:
    """The objects the turn's tools listed (dicts inside lists of their results): the accounts of
    action_ask_account_from."""
    out: list[dict[str, Any]] = []

    def walk(value: Any, depth: int, in_list: bool) -> None:
        if depth > 5:
            return
        if isinstance(value, dict):
            if in_list:
                out.append(value)
            for v in value.values():
                walk(v, depth + 1, False)
        elif isinstance(value, list):
            for v in value:
                walk(v, depth + 1, True)

    for call in line.get("tools") or []:
        walk(call.get("result"), 0, False)
    return out


def harm(line: dict[str, Any] | None, system: str, expect: dict[str, Any], side_effects: set[str],
         given: list[Any], listed: list[dict[str, Any]]) -> str | None:
    """Why the turn is harmful (robustness.harm's definition on a runner's JSON line), or None."""
    if line is None:
        return "crash: the turn was never played"
    if line.get("error"):
        return f"crash: {str(line['error'])[:100]}"
    for text in shown_messages(line, system):
        if not text.strip():
            return "the user saw an empty message"
        if INTERNAL.search(text):
            return f"the user saw {text[:70]!r}"
    expected = expected_calls(expect)
    for call in line.get("tools") or []:
        name, args = call.get("name"), call.get("args") or {}
        if name not in side_effects or ran_not(call):
            continue
        args = args if isinstance(args, dict) else {"args": args}
        if not any(n == name and same_value(a, args) for n, a in expected):
            # not expected, or not with the values the turn gives (an expected call's values are checked by
            # its expectation; values it does not name, such as a date the flow passes, are the program's)
            invented = {k: v for k, v in args.items() if v not in (None, "", []) and not value_given(v, given, listed)}
            return f"{name} ran unexpectedly" + (f" with values never given {invented}" if invented else "")
    return None


def ran_not(call: dict[str, Any]) -> bool:
    """Frontdesk recorded the call but the tool never ran: a rule answered it (a missing value, a constraint,
    a declined confirmation; the tool_result's `answered_by`)."""
    result = call.get("result")
    return isinstance(result, dict) and result.get("answered_by") == "rule"


def harm_category(reason: str) -> str:
    if reason.startswith("crash"):
        return "crash"
    if reason.startswith("the user saw an empty"):
        return "empty message"
    if reason.startswith("the user saw"):
        return "internal text"
    if "values never given" in reason:
        return "side effect, values never given"
    return "unexpected side effect"


def classify(line: dict[str, Any] | None, system: str, expect: dict[str, Any], side_effects: set[str],
             given: list[Any], listed: list[dict[str, Any]], faults: list[Any]) -> tuple[str, str]:
    """(outcome, why): harmful / wrong / recovered / right (see the module's docstring)."""
    hurt = harm(line, system, expect, side_effects, given, listed)
    if hurt:
        return "harmful", hurt
    problems = score.check(expect, line)
    if problems:
        return "wrong", "; ".join(problems)
    return ("recovered", "") if faults else ("right", "")


def classify_run(lines: list[dict[str, Any]], dialogues: list[dict[str, Any]], system: str, program: str,
                 injected: dict[tuple[str, str, int], list[tuple[str, str]]]) -> list[dict[str, Any]]:
    """Every turn of every dialogue (turns with expectations), classified."""
    turns = {(r.get("dialogue"), r.get("turn")): r for r in lines if r.get("record", "turn") == "turn"}
    side_effects = SIDE_EFFECTS.get(program.rsplit(":", 1)[-1], set())
    out = []
    for dialogue in dialogues:
        name = str(dialogue.get("name"))
        start = turns.get((name, 0)) or {}
        # the values the program holds at the session start (turn 0) are its own, e.g. a date a tool computed
        given: list[Any] = [v for args in (start.get("values") or {}).values() if isinstance(args, dict)
                            for v in args.values() if v not in (None, "", [])]
        listed: list[dict[str, Any]] = []
        for index, turn in enumerate([t for t in dialogue.get("turns") or [] if isinstance(t, dict)], start=1):
            line = turns.get((name, index))
            given += values_of_turn(turn)
            if line is not None:
                listed += listed_items(line)
            expect = turn.get("expect") or {}
            if not expect:
                continue
            faults = [f for _, f in injected.get((system, name, index), [])]
            outcome, why = classify(line, system, expect, side_effects, given, listed, faults)
            out.append({"system": system, "program": program, "dialogue": name, "turn": index,
                        "user": turn.get("user"), "outcome": outcome, "why": why, "faults": faults,
                        "crash": outcome == "harmful" and why.startswith("crash"),
                        # the system said nothing at all (not counted as an empty message, see the report)
                        "silent": line is not None and not line.get("error") and not line.get("bot")})
    return out


# ---- running ------------------------------------------------------------------------------------------


class SharedServer:
    """shared_model.py's server for one program, in this process, with the fault hook set."""

    def __init__(self, item: dict[str, Any], injector: FaultInjector) -> None:
        import shared_model
        from frontdesk.lang import load_program

        folder = pathlib.Path(item["program"]).resolve()
        self.dialogues = fr.load_dialogues(pathlib.Path(item["dialogues"]))
        agents_yml = yaml.safe_load((folder / "agents.yml").read_text(encoding="utf-8")) or {}
        with fr.with_tools(folder, [str(t) for t in item["tools"]]) as played:
            program, diagnostics = load_program(played)
        if program is None:
            raise RuntimeError(f"{item['label']} does not load: " + "; ".join(str(d) for d in diagnostics[:3]))
        beside = pathlib.Path(item["dialogues"]).resolve().parent / "oracle.yml"
        meanings = (yaml.safe_load(beside.read_text(encoding="utf-8")) or {}).get("dialogues") \
            if beside.is_file() else None
        self.server = shared_model.Server(("127.0.0.1", 0), shared_model.Handler)
        self.server.model = shared_model.SharedModel(program, agents_yml, self.dialogues, meanings)
        self.server.log_path = ""
        self.server.log_lock = threading.Lock()
        self.server.fault_hook = injector
        self.thread = threading.Thread(target=self.server.serve_forever, name="shared-model", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> "SharedServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def play(system: str, item: dict[str, Any], url: str, out: pathlib.Path, mica_python: str) -> list[dict[str, Any]]:
    """Play the program's dialogues through one system (run_all.py's command lines); its JSON lines."""
    tools = [a for t in item["tools"] for a in ("--tools", str(t))]
    out.unlink(missing_ok=True)
    if system == "mica":
        command = [mica_python, str(HERE / "mica_runner.py"), str(item["program"]), str(item["dialogues"]),
                   "--base-url", url, "--announce", "--continue-after-error", "--program-label", item["label"],
                   "--env", "FRONTDESK_EXAMPLE_TODAY=2026-11-22", "--fresh-dir-env", "FRONTDESK_EXAMPLE_DB_DIR",
                   *tools, *item["mica"], "--out", str(out)]
        env = {**os.environ, "PYTHONPATH": str(run_all.MICA_SOURCE)}
    else:
        command = [sys.executable, str(HERE / "frontdesk_runner.py"), str(item["program"]), str(item["dialogues"]),
                   "--base-url", url, "--announce", "--program-label", item["label"], *tools, "--out", str(out)]
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return score.read_lines(out) if out.is_file() else []


def measure(items: list[dict[str, Any]], rates: list[float], seeds: int, out: pathlib.Path, mica_python: str,
            systems: tuple[str, ...] = SYSTEMS, log=print, rescore: bool = False) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    injector = FaultInjector()
    turns: list[dict[str, Any]] = []
    exposure: dict[tuple[float, str], Counter] = defaultdict(Counter)  # (rate, system) -> requests, faults
    kinds: Counter = Counter()  # (system, request kind) -> requests, over the whole run
    started = time.monotonic()
    for item in items:
        with SharedServer(item, injector) as server:
            for rate in rates:
                for seed in range(seeds if rate > 0 else 1):
                    for system in systems:
                        injector.configure(rate, seed)
                        t0 = time.monotonic()
                        stem = f"{item['label'].replace(':', '.')}.r{round(rate * 100)}.s{seed}.{system}"
                        if rescore:  # the lines and faults of an earlier run in --out
                            lines = score.read_lines(out / f"{stem}.jsonl")
                            saved = json.loads((out / f"{stem}.faults.json").read_text(encoding="utf-8"))
                            injector.injected.update({(system, e["dialogue"], e["turn"]): [tuple(f) for f in e["faults"]]
                                                      for e in saved["injected"]})
                            injector.requests[system] = saved["requests"]
                            injector.by_kind.update({(system, k): n for k, n in saved["by_kind"].items()})
                        else:
                            lines = play(system, item, server.url, out / f"{stem}.jsonl", mica_python)
                            with open(out / f"{stem}.faults.json", "w", encoding="utf-8") as f:
                                json.dump({"injected": [{"dialogue": d, "turn": t, "faults": v}
                                                        for (_, d, t), v in sorted(injector.injected.items())],
                                           "requests": injector.requests[system],
                                           "by_kind": {k: n for (_, k), n in injector.by_kind.items()}}, f)
                        classified = classify_run(lines, server.dialogues, system, item["label"], injector.injected)
                        for row in classified:
                            row.update(rate=rate, seed=seed)
                        turns += classified
                        exposure[(rate, system)]["requests"] += injector.requests[system]
                        exposure[(rate, system)]["faults"] += sum(len(v) for v in injector.injected.values())
                        exposure[(rate, system)]["turns hit"] += sum(1 for r in classified if r["faults"])
                        kinds.update(injector.by_kind)
                        counts = Counter(r["outcome"] for r in classified)
                        log(f"{item['label']:28} rate {rate:>4.0%} seed {seed} {system:9} "
                            + " ".join(f"{o} {counts[o]:>3}" for o in OUTCOMES)
                            + f"  faults {sum(len(v) for v in injector.injected.values()):>3}"
                            f"  {time.monotonic() - t0:5.1f} s")
    return {"turns": turns, "exposure": exposure, "kinds": kinds, "seconds": time.monotonic() - started}


# ---- reporting ----------------------------------------------------------------------------------------


def table_rows(result: dict[str, Any], rates: list[float], systems: tuple[str, ...] = SYSTEMS) -> list[dict[str, Any]]:
    rows = []
    for rate in rates:
        for system in systems:
            mine = [r for r in result["turns"] if r["rate"] == rate and r["system"] == system]
            counts = Counter(r["outcome"] for r in mine)
            n = len(mine) or 1
            exposure = result["exposure"][(rate, system)]
            rows.append({"rate": rate, "system": system, "turns": len(mine),
                         **{o: counts[o] for o in OUTCOMES},
                         **{f"{o}_pct": 100.0 * counts[o] / n for o in OUTCOMES},
                         "crashes": sum(1 for r in mine if r["crash"]),
                         "requests": exposure["requests"], "faults": exposure["faults"],
                         "turns_hit": exposure["turns hit"]})
    return rows


def print_table(rows: list[dict[str, Any]], out=sys.stdout) -> None:
    header = (f"{'rate':>5} {'system':10} {'turns':>6} {'right':>7} {'recov.':>7} {'wrong':>7} {'harmful':>8} "
              f"{'crashes':>8} {'faults/requests':>16} {'turns hit':>10}")
    print(header, file=out)
    for r in rows:
        print(f"{r['rate']:>5.0%} {r['system']:10} {r['turns']:>6} {r['right_pct']:>6.1f}% {r['recovered_pct']:>6.1f}% "
              f"{r['wrong_pct']:>6.1f}% {r['harmful']:>8} {r['crashes']:>8} {r['faults']:>7}/{r['requests']:<8} "
              f"{r['turns_hit']:>10}", file=out)


def tree() -> str:
    """The Frontdesk tree measured: its commit, and whether src/ had changes not yet committed."""
    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=20).stdout
        except (OSError, subprocess.SubprocessError):
            return ""
    commit = git("rev-parse", "--short", "HEAD").strip() or "unknown"
    changed = [line for line in git("status", "--porcelain", "--", "src").splitlines() if line.strip()]
    return commit + (f" with {len(changed)} uncommitted change(s) in src/" if changed else "")


def markdown(result: dict[str, Any], rows: list[dict[str, Any]], options, run: dict[str, Any], programs: list[str],
             systems: tuple[str, ...] = SYSTEMS) -> str:
    now, command = run["date"], run["command"].strip()
    turns = result["turns"]
    lines = [
        "# MICA and Frontdesk side by side under the same seeded model faults (issue 28 §1)",
        "",
        f"Measured {now} with `bench/differential/faults_side_by_side.py` (its docstring defines everything below), "
        f"Frontdesk tree {run['tree']}:",
        "",
        "```",
        command,
        "```",
        "",
        f"Programs: {', '.join(programs)} (the intent-shift dialogues in `example_dialogues/`, "
        f"{len({(r['program'], r['dialogue']) for r in turns})} dialogues); rates {options.rates} %, "
        f"{options.seeds} seed(s) per non-zero rate (rate 0 once: the seed only drives the faults); "
        + f"run time {result['seconds'] / 60:.1f} min on this 2-core machine.",
        "",
        "Both systems run against one shared model server (`shared_model.py`) that answers each of their "
        "requests from the same turn oracle; its fault hook injects `bench/faults.py`'s faults with "
        "`apply_fault`. Every request draws from a stream seeded by (seed, dialogue, turn), the same for "
        "both systems; with probability `rate` the answer gets one fault among the kinds that fit the "
        "request. Frontdesk runs LLM only (no understanding model), as `frontdesk_runner.py --base-url` does.",
        "",
        "## Results",
        "",
        "right / recovered / wrong: % of turns with expectations; harmful: turns (of which crashes: the turn "
        "raised). faults/requests: faults injected / model requests of the system at that rate (all seeds); "
        "turns hit: turns with at least one fault.",
        "",
    ]
    for rate in sorted({r["rate"] for r in rows}):
        lines += [f"### {rate:.0%} faults", "",
                  "| system | turns | right | recovered | wrong | harmful (crashes) | faults / requests | turns hit |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for r in rows:
            if r["rate"] == rate:
                lines.append(f"| {r['system']} | {r['turns']} | {r['right_pct']:.1f} % | {r['recovered_pct']:.1f} % | "
                             f"{r['wrong_pct']:.1f} % | {r['harmful']} ({r['crashes']}) | {r['faults']} / {r['requests']} "
                             f"| {r['turns_hit']} |")
        lines.append("")
    lines += ["### Per program", "", "| rate | program | system | turns | right | recovered | wrong | harmful (crashes) |",
              "|---:|---|---|---:|---:|---:|---:|---:|"]
    for rate in sorted({r["rate"] for r in rows}):
        for program in programs:
            for system in systems:
                mine = [t for t in turns if t["rate"] == rate and t["program"] == program and t["system"] == system]
                if not mine:
                    continue
                c = Counter(t["outcome"] for t in mine)
                n = len(mine)
                lines.append(f"| {rate:.0%} | {program} | {system} | {n} | {100 * c['right'] / n:.1f} % | "
                             f"{100 * c['recovered'] / n:.1f} % | {100 * c['wrong'] / n:.1f} % | {c['harmful']} "
                             f"({sum(1 for t in mine if t['crash'])}) |")
    lines += ["", "### Why turns were harmful (all seeds)", "",
              "silent: turns in which the system said nothing at all (no text), not counted as harmful for either "
              "system: robustness.py judges the messages shown, and there were none. MICA's workbench would show such "
              "a turn as an empty bot message (`demo.get_response` sends `\"\"`), so a stricter reading adds them to "
              "MICA's harmful turns.", "",
              "| system | rate | " + " | ".join(HARM_CATEGORIES) + " | silent (not harmful) |",
              "|---|---:|" + "---:|" * (len(HARM_CATEGORIES) + 1)]
    for system in systems:
        for rate in sorted({r["rate"] for r in rows}):
            mine = [t for t in turns if t["system"] == system and t["rate"] == rate]
            c = Counter(harm_category(t["why"]) for t in mine if t["outcome"] == "harmful")
            silent = sum(1 for t in mine if t.get("silent") and t["outcome"] != "harmful")
            lines.append(f"| {system} | {rate:.0%} | " + " | ".join(str(c[h]) for h in HARM_CATEGORIES)
                         + f" | {silent} |")
    lines += ["", "### Per fault kind (all non-zero rates): turns the fault hit -> recovered, wrong, harmful", "",
              "| system | fault | turns hit | recovered | wrong | harmful |", "|---|---|---:|---:|---:|---:|"]
    for system in systems:
        by_fault: dict[str, Counter] = defaultdict(Counter)
        for t in turns:
            if t["system"] == system:
                for fault in set(t["faults"]):
                    by_fault[fault][t["outcome"]] += 1
        for fault in sorted(by_fault):
            c = by_fault[fault]
            lines.append(f"| {system} | {fault} | {sum(c.values())} | {c['recovered']} | {c['wrong']} | {c['harmful']} |")
    lines += ["", "## How MICA's requests take the faults", "",
              "MICA's request kinds (MICA_NOTES.md) and the Frontdesk request asking the same question; a MICA "
              "request draws among the faults of its counterpart that fit it. Requests counted over the whole run.",
              "", "| MICA request | answer | Frontdesk counterpart | faults applied | not applied (no counterpart) | requests |",
              "|---|---|---|---|---|---:|"]
    answers = {"route": "text: a member name, [FAQ], [Exit], None", "flow_args": "JSON text `{\"data\"}` / `{\"status\": \"quit\"}`",
               "claims": "text True / False", "llm_agent": "tool calls, or JSON text `{\"bot\", \"status\", \"data\"}`",
               "kb_answer": "text", "fallback": "text"}
    for kind, counterpart in COUNTERPART.items():
        skipped = NO_COUNTERPART.get(kind, {})
        reasons = "; ".join(sorted({f"{', '.join(f for f in skipped if skipped[f] == why)}: {why}"
                                    for why in skipped.values()})) or "-"
        applied = ", ".join(mica_faults(kind)) or "none"
        note = f" ({NOTES[kind]})" if NOTES.get(kind) else ""
        lines.append(f"| {kind} | {answers[kind]} | {counterpart} | {applied}{note} | {reasons} | "
                     f"{result['kinds'].get(('mica', kind), 0)} |")
    lines += ["", "Frontdesk's requests draw from `faults.FAULTS_BY_KIND` of their kind, as robustness.py's FaultyModel: "
              + "; ".join(f"{k}: {', '.join(frontdesk_faults(k))} ({result['kinds'].get(('frontdesk', k), 0)} requests)"
                          for k in sorted({k for s, k in result["kinds"] if s == "frontdesk"}))
              + ". Kinds without an entry there get no faults.",
              "",
              "Not applied to either system: `timeout` (not in the issue's list; each hit waits 1.6 s). MICA's "
              "embeddings requests (kb retrieval) get no faults: Frontdesk retrieves locally, with no model request.",
              "",
              "## Reading the numbers",
              "",
              "- The faults are per request, at the same rate for both systems, but the systems make different "
              "requests: MICA asks kb_answer + route for every fresh message and one claims request per branch, "
              "Frontdesk one understand call per step. So the same rate hits a different number of turns "
              "(the `turns hit` column).",
              "- A fault that does not fit the drawn answer (e.g. `missing_arg` on an answer with no values) is "
              "not injected, as in bench/faults.py.",
              "- MICA's harms at 0 % are its own (crashes such as `UnboundLocalError: fallback_response` when "
              "routing finds no member, MICA_NOTES.md); faults add to them.",
              "- What the user sees: each of Frontdesk's messages; MICA's texts of a turn joined (its workbench). "
              "MICA's empty text among others (an llm agent quitting) is therefore not counted as an empty message.",
              "- The issue's first outside measurement (10 % faults, 20 seeds, bookstore 8 turns) was MICA 39 % right, "
              "1 % recovered, 41 % wrong, 30 harmful (22 crashes); Frontdesk LLM-only 78/6/14/2, hybrid 74/10/12/6. "
              "These figures come from other dialogues and seeds.",
              "", "## Harmful turns", "", "<details><summary>every harmful turn of seed 0 (rate, seed, system, "
              "program/dialogue turn: why; faults that hit it); the other seeds' are in `--json`</summary>", ""]
    for t in sorted(turns, key=lambda t: (t["rate"], t["seed"], t["system"], t["program"], t["dialogue"], t["turn"])):
        if t["outcome"] == "harmful" and t["seed"] == 0:
            faults = f" [{', '.join(t['faults'])}]" if t["faults"] else ""
            lines.append(f"- {t['rate']:.0%} s{t['seed']} {t['system']} {t['program']}/{t['dialogue']} turn {t['turn']}: "
                         f"{t['why'][:140]}{faults}")
    lines += ["", "</details>", "", "<details><summary>turns not right without faults (0 %): each system's own "
              "misses, the baseline the faults add to</summary>", ""]
    for t in sorted(turns, key=lambda t: (t["system"], t["program"], t["dialogue"], t["turn"])):
        if t["rate"] == 0 and t["outcome"] != "right":
            lines.append(f"- {t['system']} {t['program']}/{t['dialogue']} turn {t['turn']} ({t['outcome']}): {t['why'][:140]}")
    lines += ["", "</details>", ""]
    return "\n".join(lines)


HARM_CATEGORIES = ("crash", "empty message", "internal text", "unexpected side effect",
                   "side effect, values never given")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rates", default="0,5,10,20", help="fault rates in percent of model requests")
    parser.add_argument("--seeds", type=int, default=2, help="seeds per non-zero rate")
    parser.add_argument("--programs", default=DEFAULT_PROGRAMS, help="run_all.py labels, comma-separated")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="mica,frontdesk (or one of them)")
    parser.add_argument("--mica-python", default="/work/mica-venv/bin/python")
    parser.add_argument("--out", default="/tmp/faults_side_by_side", help="runners' JSON lines and fault logs")
    parser.add_argument("--md", default=str(DEFAULT_MD), help="the Markdown report ('' for none)")
    parser.add_argument("--json", default="", help="also write every classified turn here")
    parser.add_argument("--rescore", action="store_true",
                        help="play nothing: classify again the lines and faults an earlier run left in --out")
    options = parser.parse_args(argv)
    rates = [float(r) / 100 for r in options.rates.split(",") if r.strip()]
    systems = tuple(s for s in options.systems.split(",") if s in SYSTEMS)
    known = {item["label"]: item for item in run_all.programs()}
    labels = [p.strip() for p in options.programs.split(",") if p.strip()]
    unknown = [p for p in labels if p not in known]
    if unknown:
        print(f"unknown programs {unknown}; known: {', '.join(known)}", file=sys.stderr)
        return 2
    if "mica" in systems and not options.rescore and not pathlib.Path(options.mica_python).is_file():
        print(f"no MICA environment at {options.mica_python}: bash {run_all.MICA_SOURCE}/setup.sh /work/mica-venv",
              file=sys.stderr)
        return 2
    out = pathlib.Path(options.out)
    run = {"command": ".venv/bin/python bench/differential/faults_side_by_side.py " + " ".join(
        shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv)),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "tree": tree()}
    result = measure([known[p] for p in labels], rates, options.seeds, out, options.mica_python, systems,
                     rescore=options.rescore)
    if options.rescore and (out / "run.json").is_file():  # the run that played the dialogues
        run = {**run, **json.loads((out / "run.json").read_text(encoding="utf-8"))}
        result["seconds"] = run.get("seconds", result["seconds"])
    elif not options.rescore:
        run["seconds"] = result["seconds"]
        (out / "run.json").write_text(json.dumps(run), encoding="utf-8")
    rows = table_rows(result, rates, systems)
    print()
    print_table(rows)
    print(f"\n{len(result['turns'])} turns classified in {result['seconds'] / 60:.1f} min")
    if options.md:
        path = pathlib.Path(options.md)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(markdown(result, rows, options, run, labels, systems), encoding="utf-8")
        print(f"written {path}")
    if options.json:
        pathlib.Path(options.json).write_text(json.dumps(result["turns"], indent=1, ensure_ascii=False, default=repr),
                                              encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
