"""Benchmark: right when the model is wrong (issue 28). The intent-shift dialogues, in-sample
(bench/intent_shift/) and held-out (bench/intent_shift_heldout/), answered by the ideal model with seeded
faults (bench/faults.py) at several rates, in llm and hybrid mode.

Each turn is one of:
- right: the turn is right (bench/intent_shift.py's judgement) and no fault hit it;
- recovered: the turn is right although a fault hit it (the engine noticed, asked again, or a retry
  or another path absorbed it);
- wrong: the turn is wrong, harmlessly;
- harmful: a side-effecting tool ran that the turn does not expect, or ran with a value no turn so far
  gives, or the user saw an internal message (an empty message, an error text, raw JSON).

Per fault kind, the outcomes of the turns that fault hit. Run:
    python bench/robustness.py [--rates 0,5,10,20] [--seeds 3] [--modes llm,hybrid] [--set in,held]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from faults import ALL_FAULTS, CLIENT_TIMEOUT, FaultyModel  # noqa: E402
from ideal_model import IdealModelServer, TokenCounter  # noqa: E402
from intent_shift import (  # noqa: E402
    DIALOGUES,
    SIDE_EFFECTS,
    Bench,
    changing_tools,
    check_turn,
    examples_root,
    listed_items,
    load_dialogue,
    member_agents,
    same_value,
    value_given,
    values_given,
    values_invented,
)

HELD_OUT = Path(__file__).resolve().parent / "intent_shift_heldout"
# what a user must never see: an empty message, an error or exception text, raw JSON or a tool call
INTERNAL = re.compile(r"traceback|exception|\berror:|\{\s*\"|tool_call|status code|http \d{3}|internal server",
                      re.IGNORECASE)
OUTCOMES = ("right", "recovered", "wrong", "harmful")


def harm(turn, events: list[dict[str, Any]], side_effects: set[str], given: list[Any], listed: list) -> str | None:
    """Why the turn is harmful, or None."""
    for e in events:
        if e["type"] == "bot_message":
            text = e["data"].get("text") or ""
            if not text.strip() or INTERNAL.search(text):
                return f"the user saw {text[:60]!r}"
    expected = list(turn.tools)
    for e in events:
        if e["type"] != "tool_call" or e["data"].get("tool") not in side_effects \
                or e["data"].get("answered_by"):  # a rule, a hook or a refused confirmation answered: it never ran
            continue
        name, args = e["data"].get("tool"), e["data"].get("args") or {}
        if not any(n == name and same_value(a, args) for n, a in expected):
            invented = {k: v for k, v in args.items() if v not in (None, "", []) and not value_given(v, given, listed)}
            return f"{name} ran unexpectedly" + (f" with values never given {invented}" if invented else "")
    return None


def run(mode: str, rate: float, seed: int, paths: list[Path], server, counter) -> tuple[Counter, dict, list]:
    bench = Bench(mode, examples_root(), server, counter)
    bench.model_factory = lambda program, counter_, name: FaultyModel(program, counter_, name, rate=rate, seed=seed)
    outcomes: Counter = Counter()
    by_fault: dict[str, Counter] = defaultdict(Counter)
    harms: list[str] = []
    for path in paths:
        bench.dialogue_dir = path.parent
        dialogue = load_dialogue(path, bench.program(yaml.safe_load(path.read_text())["program"]))
        program = bench.program(dialogue.program)
        members = member_agents(program)
        side_effects = SIDE_EFFECTS.get(dialogue.program) or changing_tools(program)
        given: list[Any] = []
        listed: list = []
        for turn, events, _wall, model, _before in bench.replay(dialogue):
            given += values_given(turn)
            listed += listed_items(events)
            problems = check_turn(turn, events, members, side_effects)
            invented = values_invented(events, given, listed)
            hurt = harm(turn, events, side_effects, given, listed)
            faults = [f for _, f in model.injected]
            if hurt:
                outcome = "harmful"
                harms.append(f"{dialogue.name}: {turn.oracle.user!r}: {hurt} (faults {faults})")
            elif problems or invented:
                outcome = "wrong"
            else:
                outcome = "recovered" if faults else "right"
            outcomes[outcome] += 1
            for fault in set(faults):
                by_fault[fault][outcome] += 1
    return outcomes, by_fault, harms


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rates", default="0,5,10,20", help="fault rates in percent of model calls")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--modes", default="llm,hybrid")
    parser.add_argument("--set", default="in,held", help="in: bench/intent_shift, held: the held-out dialogues")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every harmful turn")
    args = parser.parse_args(argv)
    # a `timeout` fault answers after the client gave up: a short client timeout keeps a run short
    os.environ["FRONTDESK_LLM_TIMEOUT"] = str(CLIENT_TIMEOUT)
    sets = {"in": sorted(DIALOGUES.glob("*.yml")), "held": sorted(HELD_OUT.glob("*.yml"))}
    counter = TokenCounter()
    print(f"{'set':5} {'mode':7} {'rate':>5} {'turns':>6} {'right':>7} {'recov.':>7} {'right+rec':>9} "
          f"{'wrong':>6} {'harmful':>7}")
    faults_total: dict[str, Counter] = defaultdict(Counter)
    with IdealModelServer() as server:
        for name in args.set.split(","):
            for mode in args.modes.split(","):
                for rate in [float(r) / 100 for r in args.rates.split(",")]:
                    total: Counter = Counter()
                    harms: list[str] = []
                    for seed in range(args.seeds if rate > 0 else 1):
                        outcomes, by_fault, hurt = run(mode, rate, seed, sets[name], server, counter)
                        total += outcomes
                        harms += hurt
                        for fault, counts in by_fault.items():
                            faults_total[f"{mode}:{fault}"] += counts
                    n = sum(total.values()) or 1
                    print(f"{name:5} {mode:7} {rate:>5.0%} {n:>6} {total['right'] / n:>7.1%} "
                          f"{total['recovered'] / n:>7.1%} {(total['right'] + total['recovered']) / n:>9.1%} "
                          f"{total['wrong'] / n:>6.1%} {total['harmful']:>7}", flush=True)
                    if args.verbose:
                        for line in harms:
                            print(f"    harmful: {line}")
    print("\nper fault kind (all sets, rates and seeds): turns it hit -> right/recovered, wrong, harmful")
    for key in sorted(faults_total):
        c = faults_total[key]
        print(f"  {key:24} {sum(c.values()):>5}  recovered {c['recovered']:>4}  wrong {c['wrong']:>4}  "
              f"harmful {c['harmful']:>3}")
    unused = [f for f in ALL_FAULTS if not any(k.endswith(":" + f) for k in faults_total)]
    if unused:
        print(f"  (never injected in a run: {', '.join(unused)})")


if __name__ == "__main__":
    main()
