"""Benchmark: the orchestration strategies of the ADL paper (section 4, Table 1) and Frontdesk's own
default, on the paper's bookstore bot with a relevance guardrail, over dialogues whose every turn after
the first shifts intent.

For each strategy it prints LLM calls per turn, prompt and completion tokens per turn, latency per turn
and routing accuracy, writes a PNG chart (`--chart`), and with `--json FILE` the table as a list of
objects (strategy, llm_calls_per_turn, prompt_tokens_per_turn, latency_per_turn_s, routing_accuracy).

The model is the ideal model of bench/ideal_model.py: a real OpenAI-compatible HTTP server on
127.0.0.1 that answers every request (guardrail checks, routing, judging and selecting drafts,
understanding, LLM-agent steps, knowledge answers) from the labelled oracle of the current turn, and
counts prompt and completion tokens with cl100k_base. Latency is modelled, so that it is comparable
across strategies and machines: each call costs a fixed overhead plus a cost per prompt token and per
completion token (the model is printed with the table); best-of-n's drafts run at the same time, so a
turn waits for its slowest draft, not for their sum. Frontdesk's own time in the turn (measured) is
added. With `--endpoint` the same dialogues run against the OpenAI-compatible endpoint configured in
FRONTDESK_LLM_BASE_URL / _API_KEY / _MODEL, and the latency column is measured wall time.

A turn is routed right when the member agents that acted on it (spoke, called a tool, recorded a value,
finished a task) are exactly the ones the oracle names, in order, and a guardrail blocked it exactly
when the oracle says it should. `right` is the stricter check of bench/intent_shift.py (tool calls,
arguments, texts said) as well.

Run: python bench/orchestration.py [--strategy NAME ...] [--dialogue NAME] [-v] [--json FILE] [--chart FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from ideal_model import IdealModelServer, TokenCounter  # noqa: E402
from intent_shift import (  # noqa: E402
    SIDE_EFFECTS,
    Bench,
    check_turn,
    examples_root,
    load_dialogue,
    member_agents,
)

DIALOGUES = BENCH / "orchestration" / "dialogues"
GUARD = BENCH / "orchestration" / "guard.yml"
PROGRAM = "bookstore"
# The paper's five, then Frontdesk's default. The paper's strategies decide with the LLM alone (as in
# the paper); `adaptive` also uses the local understanding model, which is what it is about.
STRATEGIES = ("merging", "first-success", "best-of-n", "proactive", "autonomous", "adaptive")
PAPER_TABLE = {"merging": (540, 2.34), "first-success": (1732, 10.39), "best-of-n": (1301, 7.29),
               "proactive": (540, 3.36), "autonomous": (601, 3.26)}


@dataclass(frozen=True)
class LatencyModel:
    """Seconds a call to a hosted small model takes: a fixed overhead (network, queueing, time to the
    first token) plus prompt processing and generation per token. The defaults are in the range
    GPT-4o-mini answers in; only their ratios matter for comparing strategies."""

    per_call: float = 0.35
    per_prompt_token: float = 0.00008
    per_completion_token: float = 0.011

    def call(self, prompt_tokens: int, completion_tokens: int) -> float:
        return self.per_call + prompt_tokens * self.per_prompt_token + completion_tokens * self.per_completion_token

    def describe(self) -> str:
        return (f"{self.per_call * 1000:.0f} ms per call + {self.per_prompt_token * 1000:.2f} ms per prompt token "
                f"+ {self.per_completion_token * 1000:.0f} ms per completion token; best-of-n drafts concurrent")


# ---- one turn -------------------------------------------------------------------------------------------


def model_calls(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The model calls a turn made (failed ones included), from its llm_call events; a drafted answer
    replayed when its draft was chosen made no call."""
    return [e["data"] for e in events if e["type"] == "llm_call" and e["data"].get("provider")
            and not e["data"].get("replayed")]


def modelled_seconds(calls: list[dict[str, Any]], model: LatencyModel, concurrent_drafts: bool) -> float:
    """The turn's model time: calls one after another, except drafts made at the same time (best-of-n),
    of which the turn waits for the slowest."""
    alone = 0.0
    drafts: dict[str, float] = {}
    for call in calls:
        seconds = model.call(call.get("prompt_tokens") or 0, call.get("completion_tokens") or 0)
        if concurrent_drafts and call.get("draft"):
            drafts[call["draft"]] = drafts.get(call["draft"], 0.0) + seconds
        else:
            alone += seconds
    return alone + (max(drafts.values()) if drafts else 0.0)


# Acting on a message: what the user sees an agent do. Not being started (an autonomous knowledge agent
# that reads a message and passes it on was started) nor finishing by passing the message on.
PASSED_ON = ("passed the message", "gave the message back")


def routed_agents(events: list[dict[str, Any]], members: set[str]) -> list[str]:
    acting: list[str] = []
    for e in events:
        agent = e.get("agent")
        if agent not in members or agent in acting:
            continue
        if e["type"] in ("bot_message", "tool_call", "arg_set", "agent_resumed") or (
                e["type"] == "agent_finished" and not str(e["data"].get("message", "")).startswith(PASSED_ON)):
            acting.append(agent)
    return acting


def routed_right(turn, events: list[dict[str, Any]], members: set[str]) -> tuple[bool, str]:
    blocked = any(e["type"] == "guardrail_verdict" and e["data"].get("allowed") is False for e in events)
    acting = routed_agents(events, members)
    expected = turn.expected_agents
    if blocked != turn.oracle.blocked:
        return False, "blocked by a guardrail" if blocked else "expected a guardrail to block it"
    if acting != expected:
        return False, f"agents {acting or 'none'}, expected {expected or 'none'}"
    return True, ""


@dataclass
class TurnResult:
    dialogue: str
    user: str
    routed: bool
    right: bool
    calls: int
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    frontdesk_ms: float
    why: str = ""
    problems: list[str] = field(default_factory=list)
    model_calls: list[str] = field(default_factory=list)


# ---- the program and the runs ---------------------------------------------------------------------------


def guarded_program(examples: Path, into: Path) -> Path:
    """examples/bookstore copied into `into`, with the guardrail agent added and named by the triage
    ensemble (the program is otherwise the example's, unchanged)."""
    target = into / PROGRAM
    shutil.copytree(examples / PROGRAM, target, ignore=shutil.ignore_patterns("__pycache__", ".frontdesk"))
    agents = yaml.safe_load((target / "agents.yml").read_text(encoding="utf-8"))
    guard = yaml.safe_load(GUARD.read_text(encoding="utf-8"))
    agents.update(guard)
    agents["triage"]["guardrails"] = list(guard)
    (target / "agents.yml").write_text(yaml.safe_dump(agents, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return into


class StrategyBench(Bench):
    """One strategy over the dialogues: the intent-shift runner with the strategy forced on the engine."""

    def __init__(self, strategy: str, examples: Path, server: IdealModelServer | None, counter: TokenCounter | None,
                 endpoint: bool) -> None:
        mode = "hybrid" if strategy == "adaptive" else "llm"
        super().__init__(mode, examples, server, counter)
        self.strategy = strategy
        self.endpoint = endpoint
        self.engine_options = {"orchestration": strategy}

    def models(self, name: str) -> tuple:
        if self.endpoint and name not in self._models:
            from frontdesk.app import choose_models

            models = choose_models(self.program(name), "openai", embeddings=self.mode == "hybrid")
            self._models[name] = (models.llm, models.understanding, models.embedder)
            self.notes.add(models.describe())
        return super().models(name)

    def run_dialogue(self, dialogue, latency: LatencyModel) -> list[TurnResult]:
        program = self.program(dialogue.program)
        members = member_agents(program)
        side_effects = SIDE_EFFECTS.get(dialogue.program, set())
        out = []
        for turn, events, wall, model, _ in self.replay(dialogue):
            calls = model_calls(events)
            model_seconds = sum(c.seconds for c in model.calls) if model is not None else 0.0
            frontdesk_s = max(0.0, wall - model_seconds)
            if self.endpoint:
                seconds = wall
            else:
                seconds = modelled_seconds(calls, latency, self.strategy == "best-of-n") + frontdesk_s
            routed, why = routed_right(turn, events, members)
            # the rest of intent_shift's check (tools and their arguments, side effects, fallbacks, texts
            # said); which agents acted is judged above (a knowledge agent that passes a message on was
            # started, but did not act on it)
            problems = [p for p in check_turn(turn, events, members, side_effects) if not p.startswith("agents ")]
            described = [f"{c.get('purpose')}[{c.get('plan')}] {c.get('prompt_tokens')}+"
                         f"{c.get('completion_tokens')} tok" + (f" draft:{c['draft']}" if c.get("draft") else "")
                         for c in calls]
            out.append(TurnResult(dialogue.name, turn.oracle.user, routed, routed and not problems, len(calls),
                                  sum(c.get("prompt_tokens") or 0 for c in calls),
                                  sum(c.get("completion_tokens") or 0 for c in calls), round(seconds, 3),
                                  round(frontdesk_s * 1000, 1), why, problems, described))
        return out


def summary(strategy: str, turns: list[TurnResult]) -> dict[str, Any]:
    n = len(turns) or 1
    return {"strategy": strategy,
            "llm_calls_per_turn": round(sum(t.calls for t in turns) / n, 3),
            "prompt_tokens_per_turn": round(sum(t.prompt_tokens for t in turns) / n, 1),
            "completion_tokens_per_turn": round(sum(t.completion_tokens for t in turns) / n, 1),
            "latency_per_turn_s": round(sum(t.latency_s for t in turns) / n, 3),
            "routing_accuracy": round(sum(t.routed for t in turns) / n, 4),
            "turns_right": round(sum(t.right for t in turns) / n, 4),
            "turns": len(turns),
            "frontdesk_ms_per_turn": round(sum(t.frontdesk_ms for t in turns) / n, 1)}


HEADER = (f"{'strategy':14} {'calls/turn':>10} {'prompt tok/turn':>15} {'compl tok/turn':>14} "
          f"{'latency s/turn':>14} {'routing':>8} {'right':>7}")


def line(row: dict[str, Any]) -> str:
    return (f"{row['strategy']:14} {row['llm_calls_per_turn']:>10.2f} {row['prompt_tokens_per_turn']:>15.0f} "
            f"{row['completion_tokens_per_turn']:>14.0f} {row['latency_per_turn_s']:>14.2f} "
            f"{row['routing_accuracy']:>8.1%} {row['turns_right']:>7.1%}")


def chart(rows: list[dict[str, Any]], path: Path, latency_label: str) -> None:
    """Bars of prompt tokens, calls and latency per turn, and routing accuracy, one group per strategy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["strategy"] for r in rows]
    panels = [("prompt tokens per turn", "prompt_tokens_per_turn", "{:.0f}"),
              ("LLM calls per turn", "llm_calls_per_turn", "{:.2f}"),
              (f"latency per turn (s, {latency_label})", "latency_per_turn_s", "{:.2f}"),
              ("routing accuracy", "routing_accuracy", "{:.0%}")]
    fig, axes = plt.subplots(1, 4, figsize=(17, 4.6))
    for ax, (title, key, fmt) in zip(axes, panels):
        values = [r[key] for r in rows]
        colours = ["#2f6f4f" if n == "adaptive" else "#8a9bb0" for n in names]
        bars = ax.bar(names, values, color=colours)
        ax.set_title(title, fontsize=10)
        ax.tick_params(axis="x", labelrotation=35, labelsize=8)
        for bar, value in zip(bars, values):
            ax.annotate(fmt.format(value), (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                        ha="center", va="bottom", fontsize=7)
        if key == "routing_accuracy":
            ax.set_ylim(0, 1.1)
    fig.suptitle("Orchestration strategies on the bookstore bot with a relevance guardrail "
                 "(every turn after the first shifts intent)", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--strategy", action="append", choices=STRATEGIES, help="only this strategy (repeatable)")
    parser.add_argument("--dialogue", action="append", help="only this dialogue (repeatable)")
    parser.add_argument("--json", type=Path, help="write the table as a list of objects to this file")
    parser.add_argument("--chart", type=Path, default=Path("orchestration.png"), help="the PNG chart to write")
    parser.add_argument("--details", type=Path, help="write every turn's result as JSON to this file")
    parser.add_argument("--endpoint", action="store_true",
                        help="use the endpoint in FRONTDESK_LLM_BASE_URL instead of the ideal model (measured latency)")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="-v: turns routed wrong; -vv: every turn")
    args = parser.parse_args(argv)
    if args.endpoint and not os.environ.get("FRONTDESK_LLM_BASE_URL"):
        raise SystemExit("--endpoint needs FRONTDESK_LLM_BASE_URL (and FRONTDESK_LLM_MODEL, FRONTDESK_LLM_API_KEY)")

    paths = sorted(DIALOGUES.glob("*.yml"))
    if args.dialogue:
        paths = [p for p in paths if p.stem in args.dialogue]
    strategies = args.strategy or list(STRATEGIES)
    counter = None if args.endpoint else TokenCounter()
    latency = LatencyModel()
    rows, details = [], {}
    with tempfile.TemporaryDirectory() as folder:
        examples = guarded_program(examples_root(), Path(folder))
        server = None if args.endpoint else IdealModelServer().__enter__()
        try:
            print(f"{len(paths)} dialogues; tokens: {counter.name if counter else 'as the endpoint reports'}; "
                  f"latency: {'measured' if args.endpoint else latency.describe()}\n")
            print(HEADER + "\n" + "-" * len(HEADER), flush=True)
            for strategy in strategies:
                bench = StrategyBench(strategy, examples, server, counter, args.endpoint)
                turns: list[TurnResult] = []
                for path in paths:
                    dialogue = load_dialogue(path, bench.program(PROGRAM))
                    turns += bench.run_dialogue(dialogue, latency)
                row = summary(strategy, turns)
                rows.append(row)
                details[strategy] = [asdict(t) for t in turns]
                print(line(row), flush=True)
                for t in turns:
                    if args.verbose > 1 or (args.verbose and not t.routed):
                        print(f"    {'ok ' if t.routed else 'BAD'} {t.dialogue}: {t.user!r} {t.why}")
                        if args.verbose > 1:
                            for call in t.model_calls:
                                print(f"          llm {call}")
        finally:
            if server is not None:
                server.__exit__(None, None, None)
    print("-" * len(HEADER))
    print("ADL paper, Table 1 (GPT-4o-mini, prompt tokens / latency per turn): "
          + ", ".join(f"{k} {v[0]} / {v[1]} s" for k, v in PAPER_TABLE.items()))
    chart(rows, args.chart, "measured" if args.endpoint else "modelled")
    print(f"chart: {args.chart}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    if args.details:
        args.details.write_text(json.dumps(details, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return rows


if __name__ == "__main__":
    main()
