"""Benchmark: accuracy, share of sure decisions and latency of the embedding understanding on the
labelled messages of bench/understanding/*.yml; with --threshold-sweep, the grid used to choose
the default thresholds.

Run: python bench/accuracy.py [--task route|claims] [--threshold-sweep] [--threads N]
     [--top-k K] [--best-weight W] [--no-switches] [--errors]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from frontdesk.ir.models import BranchNode, FlowAgent, Program, RouterAgent
from frontdesk.lang import load_program
from frontdesk.nlu.base import Decision, Option, Thresholds
from frontdesk.nlu.matcher import (
    BEST_WEIGHT,
    DEFAULT_THRESHOLDS,
    LEXICAL_WEIGHT,
    POLARITY_PENALTY,
    TOP_K,
    EmbeddingUnderstanding,
    decision_from_scores,
)
from frontdesk.runtime.options import claims_options, route_options

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "understanding"
NONE = "none"


@dataclass
class Item:
    bot: str
    task: str
    point: str  # "triage" or "order@steps.5"
    message: str
    expected: str
    ambiguous: bool
    options: list[Option]
    decision: Decision | None = None
    latency_ms: float = 0.0


def load_items(task_filter: str | None, switches: bool) -> list[Item]:
    items: list[Item] = []
    for path in sorted(DATA.glob("*.yml")):
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
        program, diagnostics = load_program(ROOT / spec["program"])
        if program is None:
            sys.exit(f"{path.name}: {spec['program']} does not compile: {diagnostics}")
        bot = path.stem
        for point in spec["decision_points"]:
            task = point["task"]
            if task_filter and task != task_filter:
                continue
            options, where = _options(program, point, switches, Path(program.root))
            keys = {o.key for o in options}
            for entry in point["items"]:
                expected = str(entry["expected"])
                if expected.startswith("switch:") and not switches:
                    expected = NONE
                if expected != NONE and expected not in keys:
                    sys.exit(f"{path.name}: {entry['message']!r} expects {expected!r}, "
                             f"not an option at {where} ({sorted(keys)})")
                items.append(Item(bot, task, where, str(entry["message"]), expected,
                                  bool(entry.get("ambiguous")), options))
    return items


def _options(program: Program, point: dict, switches: bool,
             root: Path) -> tuple[list[Option], str]:
    def members(program: Program, names: list[str]) -> list[Option]:
        return route_options(program, names, root)
    agent = program.agents[point["agent"]]
    if point["task"] == "route":
        assert isinstance(agent, RouterAgent), f"{agent.name} is not an ensemble"
        return members(program, [m.agent for m in agent.members]), agent.name
    assert isinstance(agent, FlowAgent), f"{agent.name} is not a flow agent"
    branch = agent.graph.nodes[point["node"]]
    assert isinstance(branch, BranchNode), f"{point['node']} is not a branch"
    options = claims_options(branch)
    if switches:  # as the runtime's understand call does: the other members of its ensembles
        others = [m.agent for router in program.agents.values() if isinstance(router, RouterAgent)
                  and any(m.agent == agent.name for m in router.members)
                  for m in router.members if m.agent != agent.name]
        options += [Option(f"switch:{o.key}", o.examples) for o in members(program, others)]
    return options, f"{agent.name}@{point['node']}"


def run(items: list[Item], understanding: EmbeddingUnderstanding) -> None:
    embedder = understanding.embedder
    for item in items:  # warm-up: every option example is encoded and cached
        understanding.decide(item.message, item.options, item.task)
    for item in items:
        if hasattr(embedder, "forget"):
            embedder.forget([item.message])  # time a message the model has not seen
        start = time.perf_counter()
        item.decision = understanding.decide(item.message, item.options, item.task)
        item.latency_ms = (time.perf_counter() - start) * 1000


def final(decision: Decision) -> str:
    return decision.choice if decision.choice is not None else NONE


def metrics(items: list[Item], thresholds: Thresholds | None = None) -> dict:
    decisions = [decision_from_scores(i.decision.scores, thresholds) if thresholds else i.decision
                 for i in items]
    right = [final(d) == i.expected for i, d in zip(items, decisions)]
    sure = [d.sure for d in decisions]
    sure_right = [r for r, s in zip(right, sure) if s]
    clear = [r for r, i in zip(right, items) if not i.ambiguous]
    said_none = [final(d) == NONE for d in decisions]
    is_none = [i.expected == NONE for i in items]
    true_none = sum(a and b for a, b in zip(said_none, is_none))
    latencies = sorted(i.latency_ms for i in items)
    return {
        "items": len(items),
        "accuracy": _share(right),
        "clear_accuracy": _share(clear),
        "sure_accuracy": _share(sure_right),
        "sure_share": _share(sure),
        "none_precision": true_none / sum(said_none) if sum(said_none) else float("nan"),
        "none_recall": true_none / sum(is_none) if sum(is_none) else float("nan"),
        "p50": statistics.median(latencies) if latencies else float("nan"),
        "p95": latencies[min(len(latencies) - 1, int(round(0.95 * (len(latencies) - 1))))]
        if latencies else float("nan"),
    }


def _share(flags: list[bool]) -> float:
    return sum(flags) / len(flags) if flags else float("nan")


def _pct(value: float) -> str:
    return "   -" if value != value else f"{value * 100:4.0f}"


def print_table(items: list[Item]) -> None:
    header = (f"{'bot':15} {'task':6} {'items':>5} {'acc%':>5} {'acc clear%':>10} {'sure acc%':>9} "
              f"{'sure%':>6} {'none P%':>7} {'none R%':>7} {'p50 ms':>7} {'p95 ms':>7}")
    print(header)
    print("-" * len(header))
    groups: dict[tuple[str, str], list[Item]] = {}
    for item in items:
        groups.setdefault((item.bot, item.task), []).append(item)
    for task in ("route", "claims"):
        groups_of_task = [(k, v) for k, v in groups.items() if k[1] == task]
        if not groups_of_task:
            continue
        for (bot, _), members in groups_of_task:
            _print_row(bot, task, metrics(members))
        _print_row("all", task, metrics([i for _, v in groups_of_task for i in v]))
    _print_row("all", "both", metrics(items))


def _print_row(bot: str, task: str, m: dict) -> None:
    print(f"{bot:15} {task:6} {m['items']:5d} {_pct(m['accuracy']):>5} {_pct(m['clear_accuracy']):>10} "
          f"{_pct(m['sure_accuracy']):>9} {_pct(m['sure_share']):>6} {_pct(m['none_precision']):>7} "
          f"{_pct(m['none_recall']):>7} {m['p50']:7.1f} {m['p95']:7.1f}")


def print_errors(items: list[Item]) -> None:
    print("\nwrong or unsure decisions (message -> choice, best score, margin; expected)")
    for item in items:
        d = item.decision
        if d.sure and final(d) == item.expected:
            continue
        mark = "UNSURE" if not d.sure else "WRONG "
        top = sorted(d.scores.items(), key=lambda kv: kv[1], reverse=True)[:3]
        print(f"  {mark} {item.point:34} {item.message[:48]!r:50} -> {final(d):24} "
              f"{d.score:.2f} {d.margin:.2f}  expected {item.expected}"
              f"{' (ambiguous)' if item.ambiguous else ''}  top: "
              + ", ".join(f"{k}={v:.2f}" for k, v in top))


ACCEPTS = [0.30, 0.35, 0.40, 0.45, 0.50, 0.55, 0.60, 0.65, 0.70, 0.75, 0.80, 0.85]
MARGINS = [0.0, 0.02, 0.04, 0.06, 0.08, 0.10, 0.12, 0.15, 0.20, 0.25]
REJECTS = [0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40]


def sweep(items: list[Item], target: float) -> None:
    for task in ("route", "claims"):
        task_items = [i for i in items if i.task == task]
        if not task_items:
            continue
        rows = []
        for accept, margin, reject in itertools.product(ACCEPTS, MARGINS, REJECTS):
            if reject > accept:
                continue
            m = metrics(task_items, Thresholds(accept=accept, margin=margin, reject=reject))
            rows.append((accept, margin, reject, m))
        # the Pareto front: no other setting is both surer more often and more accurate when sure
        front = [r for r in rows if not any(
            o[3]["sure_share"] >= r[3]["sure_share"] and o[3]["sure_accuracy"] >= r[3]["sure_accuracy"]
            and (o[3]["sure_share"] > r[3]["sure_share"] or o[3]["sure_accuracy"] > r[3]["sure_accuracy"])
            for o in rows)]
        front.sort(key=lambda r: (-r[3]["sure_share"], r[0], r[1], -r[2]))
        seen = set()
        print(f"\nthreshold sweep, task {task} ({len(task_items)} items): Pareto front")
        print(f"  {'accept':>6} {'margin':>6} {'reject':>6} {'sure%':>6} {'sure acc%':>9} {'acc%':>5} "
              f"{'none P%':>7} {'none R%':>7}")
        for accept, margin, reject, m in front:
            key = (round(m["sure_share"], 4), round(m["sure_accuracy"], 4))
            if key in seen:
                continue
            seen.add(key)
            print(f"  {accept:6.2f} {margin:6.2f} {reject:6.2f} {_pct(m['sure_share']):>6} "
                  f"{_pct(m['sure_accuracy']):>9} {_pct(m['accuracy']):>5} {_pct(m['none_precision']):>7} "
                  f"{_pct(m['none_recall']):>7}")
        good = [r for r in rows if r[3]["sure_accuracy"] >= target]
        if good:
            best = max(good, key=lambda r: (round(r[3]["sure_share"], 6), r[0], r[1], -r[2]))
            a, mg, rj, m = best
            print(f"  most sure decisions with sure accuracy >= {target:.0%}: accept={a:.2f} "
                  f"margin={mg:.2f} reject={rj:.2f} (sure {m['sure_share']:.0%}, "
                  f"sure accuracy {m['sure_accuracy']:.1%})")
        for bot in sorted({i.bot for i in task_items}):
            for label, limits in (("defaults", DEFAULT_THRESHOLDS[task]),):
                m = metrics([i for i in task_items if i.bot == bot], limits)
                print(f"  {label} accept={limits.accept} margin={limits.margin} reject={limits.reject} "
                      f"on {bot}: sure {_pct(m['sure_share']).strip()}%, sure accuracy "
                      f"{_pct(m['sure_accuracy']).strip()}%, accuracy {_pct(m['accuracy']).strip()}%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", choices=["route", "claims"])
    parser.add_argument("--threshold-sweep", action="store_true")
    parser.add_argument("--target", type=float, default=0.95, help="sure accuracy the sweep aims for")
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    parser.add_argument("--top-k", type=int, default=TOP_K)
    parser.add_argument("--best-weight", type=float, default=BEST_WEIGHT)
    parser.add_argument("--polarity-penalty", type=float, default=POLARITY_PENALTY,
                        help="factor for examples whose yes/no polarity contradicts the message (1: off)")
    parser.add_argument("--no-switches", action="store_true",
                        help="claims options without the switch:<agent> intent changes")
    parser.add_argument("--errors", action="store_true", help="list wrong and unsure decisions")
    parser.add_argument("--lexical-weight", type=float, default=None,
                        help="weight of the keyword score in routing decisions (default: the runtime's)")
    args = parser.parse_args()

    from frontdesk.nlu.embeddings import LocalModelMissing, SentenceEmbedder

    items = load_items(args.task, switches=not args.no_switches)
    embedder = SentenceEmbedder(threads=args.threads)
    start = time.perf_counter()
    try:
        embedder.load()
    except LocalModelMissing as error:
        sys.exit(str(error))
    load_s = time.perf_counter() - start
    lexical = dict(LEXICAL_WEIGHT)
    if args.lexical_weight is not None:
        lexical["route"] = args.lexical_weight
    understanding = EmbeddingUnderstanding(embedder, top_k=args.top_k, best_weight=args.best_weight,
                                           polarity_penalty=args.polarity_penalty, lexical_weight=lexical)
    run(items, understanding)
    print(f"model {embedder.name}: loaded in {load_s:.1f} s; torch threads {args.threads}; "
          f"score = {args.best_weight:g} * best + {1 - args.best_weight:g} * mean(top {args.top_k}); "
          f"polarity penalty {args.polarity_penalty:g}; keyword weight in routing {lexical['route']:g}")
    print("thresholds: " + "; ".join(f"{task} accept={t.accept} margin={t.margin} reject={t.reject}"
                                     for task, t in DEFAULT_THRESHOLDS.items()))
    print("acc: final choice right (an unsure best guess counts); acc clear: without ambiguous items;\n"
          "sure acc: right among sure decisions; sure: decided without an LLM; none P/R: precision\n"
          "and recall of 'none'; latency per decision after warm-up (option examples cached)\n")
    print_table(items)
    if args.errors:
        print_errors(items)
    if args.threshold_sweep:
        sweep(items, args.target)


if __name__ == "__main__":
    main()
