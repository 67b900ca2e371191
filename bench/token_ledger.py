"""Where each prompt token of a turn goes, against the floor (issue 29).

Plays the intent-shift or the orchestration benchmark (their own code: same dialogues, same ideal
model) and sorts every prompt token the model is sent into parts:

- `designer prompt`: an LLM agent's prompt, as its designer wrote it;
- `system`: the rest of the call's system message (an LLM agent's: Frontdesk's lines: the arguments it
  keeps and their values, what to call when; a knowledge answer's: the rules and the passages; a
  routing or understand call's: the candidates and the question);
- `transcript, earlier`: messages before the latest user message (earlier turns, other agents' lines,
  tool calls and results);
- `transcript, this turn`: the latest user message and what followed it;
- `designer tools`: the schemas of the program's tools offered to the call;
- `built-in tools`: Frontdesk's own (set_args, finish, hand_back, route, understand, ...);
- `framing`: 3 tokens per message and for the reply (OpenAI's count).

**The floor** is what the oracle's own work needs: one call per step the oracle scripts for an LLM
agent, carrying the agent's prompt, the schemas of its tools and the user's message; one call per
knowledge answer with evidence, carrying the question and the answer's sentence. No transcript, no
built-in tool, no routing or understanding, nothing of Frontdesk's: a bound no runtime reaches.

**The working floor** adds what any system must send to do the same work: a knowledge answer carries
the whole passage that holds its evidence (not only the sentence), and a message the guardrail blocks
costs one call with the guardrail's prompt and the message (not nothing).

Run: .venv/bin/python bench/token_ledger.py [intent_shift|orchestration] [--mode hybrid|llm]
     [--strategy adaptive] [--dir DIR] [--json FILE] [--dump FILE]
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import ideal_model  # noqa: E402
from ideal_model import TokenCounter, TurnOracle  # noqa: E402

BUILTIN = {"set_args", "finish", "hand_back", "complete", "route", "understand", "guardrail", "guard", "judge",
           "select", "pass_to", "summarise", "escalate", "fan_out", "__return_to_parent__"}
PARTS = ("designer prompt", "system", "transcript, earlier", "transcript, this turn", "designer tools", "built-in tools", "framing")


class Ledger:
    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.parts: collections.Counter = collections.Counter()  # (kind, part) -> tokens
        self.calls: collections.Counter = collections.Counter()  # kind -> calls
        self.prompt_lines: set[str] = set()  # the lines of the programs' LLM agents' prompts
        self.programs: set[int] = set()
        self.floor_calls = 0
        self.floor_tokens = 0
        self.working_calls = 0  # the floor plus what any system must send to do the same work (see working_of)
        self.working_tokens = 0
        self.passages: dict[int, list[str]] = {}  # program -> the text of every knowledge passage
        self.turns = 0

    def call(self, body: dict[str, Any], kind: str, total: int) -> None:
        messages = body.get("messages") or []
        self.calls[kind] += 1
        last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=None)
        counted = 0
        for i, message in enumerate(messages):
            single = self.counter.prompt([message], []) - self.counter.REPLY_PRIMING - self.counter.PER_MESSAGE
            if message.get("role") == "system":
                part = "system"
                content = str(message.get("content") or "")
                designer = "\n".join(line for line in content.splitlines() if line.strip() in self.prompt_lines)
                if designer:  # the designer's own prompt (its lines as written), as the floor counts it
                    mine = min(self.counter.count(designer), single)
                    self.parts[(kind, "designer prompt")] += mine
                    single -= mine
                    counted += mine
            elif last_user is not None and i >= last_user:
                part = "transcript, this turn"
            else:
                part = "transcript, earlier"
            self.parts[(kind, part)] += single
            counted += single
        for tool in body.get("tools") or []:
            function = tool.get("function", tool)
            part = "built-in tools" if function.get("name") in BUILTIN or str(function.get("name", "")).startswith(
                ("transfer_to_", "delegate_")) else "designer tools"
            tokens = self.counter.count(json.dumps([function], separators=(",", ":")))
            self.parts[(kind, part)] += tokens
            counted += tokens
        self.parts[(kind, "framing")] += total - counted  # per message and reply, the tools list's brackets

    def floor_of(self, oracle: TurnOracle, program) -> None:
        """The oracle's own calls and their least prompt tokens."""
        self.turns += 1
        if id(program) not in self.programs:
            self.programs.add(id(program))
            self.prompt_lines |= {line.strip() for a in program.agents.values()
                                 for line in (getattr(a, "instructions", "") or "").splitlines() if line.strip()}
        before = (self.floor_calls, self.floor_tokens)
        for agent_name, steps in oracle.model.items():
            agent = program.agents.get(agent_name)
            prompt = getattr(agent, "instructions", "") or ""
            tools = [{"name": n, "description": program.tools[n].description or "",
                      "parameters": program.tools[n].json_schema()}
                     for n in getattr(agent, "tools", []) if n in program.tools]
            for _ in steps:
                self.floor_calls += 1
                self.floor_tokens += self.counter.prompt([{"role": "system", "content": prompt},
                                                          {"role": "user", "content": oracle.user}], tools)
        if oracle.evidence:
            self.floor_calls += 1
            self.floor_tokens += self.counter.prompt([{"role": "user", "content": oracle.user},
                                                      {"role": "system", "content": oracle.answer or oracle.evidence}],
                                                     [])
        self.working_of(oracle, program, before)

    def working_of(self, oracle: TurnOracle, program, before: tuple[int, int]) -> None:
        """The working floor: the floor, with a knowledge answer carrying the whole passage that holds its
        evidence (a model reads the answer from a passage; the floor counts the sentence as found) and a
        message a guardrail blocks costing one call with the guardrail's prompt and the message (the floor
        counts it as free). Still no transcript, no built-in tool, no routing."""
        calls, tokens = self.floor_calls - before[0], self.floor_tokens - before[1]
        if oracle.evidence:
            passage = next((p for p in self._passages(program) if oracle.evidence in p), None)
            if passage is not None:
                tokens -= self.counter.prompt([{"role": "user", "content": oracle.user},
                                               {"role": "system", "content": oracle.answer or oracle.evidence}], [])
                tokens += self.counter.prompt([{"role": "user", "content": oracle.user},
                                               {"role": "system", "content": passage}], [])
        if oracle.blocked:
            guards = [program.agents[g] for a in program.agents.values() for g in getattr(a, "guardrails", []) or []
                      if g in program.agents]
            if guards:
                calls += 1
                tokens += self.counter.prompt([{"role": "system", "content": getattr(guards[0], "instructions", "")},
                                               {"role": "user", "content": oracle.user}], [])
        self.working_calls += calls
        self.working_tokens += tokens

    def _passages(self, program) -> list[str]:
        if id(program) not in self.passages:
            from frontdesk.app import knowledge_for
            from frontdesk.ir.models import KnowledgeAgent

            cache = knowledge_for(program, None, fetch_urls=False)
            self.passages[id(program)] = [chunk.text for agent in program.agents.values()
                                          if isinstance(agent, KnowledgeAgent)
                                          for chunk in cache.index(agent).chunks]
        return self.passages[id(program)]

    def report(self) -> dict[str, Any]:
        n = max(self.turns, 1)
        kinds = {}
        for kind in sorted(self.calls):
            calls = self.calls[kind]
            kinds[kind] = {"calls_per_turn": calls / n,
                           "tokens_per_call": {p: self.parts[(kind, p)] / calls for p in PARTS},
                           "tokens_per_turn": {p: self.parts[(kind, p)] / n for p in PARTS}}
        total_calls = sum(self.calls.values()) / n
        total_tokens = sum(self.parts.values()) / n
        return {"turns": self.turns, "calls_per_turn": total_calls, "prompt_tokens_per_turn": total_tokens,
                "floor": {"calls_per_turn": self.floor_calls / n, "prompt_tokens_per_turn": self.floor_tokens / n},
                "working_floor": {"calls_per_turn": self.working_calls / n,
                                  "prompt_tokens_per_turn": self.working_tokens / n},
                "kinds": kinds}


def print_report(report: dict[str, Any]) -> None:
    floor = report["floor"]
    print(f"\n{report['turns']} turns: {report['calls_per_turn']:.2f} calls and {report['prompt_tokens_per_turn']:.0f} "
          f"prompt tokens per turn; the floor {floor['calls_per_turn']:.2f} and {floor['prompt_tokens_per_turn']:.0f} "
          f"({report['calls_per_turn'] / max(floor['calls_per_turn'], 1e-9):.2f}x and "
          f"{report['prompt_tokens_per_turn'] / max(floor['prompt_tokens_per_turn'], 1e-9):.2f}x)")
    working = report["working_floor"]
    print(f"the working floor (the evidence's whole passage, a guardrail's verdict on a blocked message): "
          f"{working['calls_per_turn']:.2f} calls and {working['prompt_tokens_per_turn']:.0f} tokens "
          f"({report['calls_per_turn'] / max(working['calls_per_turn'], 1e-9):.2f}x and "
          f"{report['prompt_tokens_per_turn'] / max(working['prompt_tokens_per_turn'], 1e-9):.2f}x)\n")
    print("| call | calls/turn | " + " | ".join(PARTS) + " | tokens/call |")
    print("|---|---:|" + "---:|" * (len(PARTS) + 1))
    for kind, row in report["kinds"].items():
        per_call = row["tokens_per_call"]
        print(f"| {kind} | {row['calls_per_turn']:.3f} | " + " | ".join(f"{per_call[p]:.0f}" for p in PARTS)
              + f" | {sum(per_call.values()):.0f} |")
    print("\nper turn (tokens/call x calls/turn):")
    print("| call | " + " | ".join(PARTS) + " | total |")
    print("|---|" + "---:|" * (len(PARTS) + 1))
    for kind, row in report["kinds"].items():
        per_turn = row["tokens_per_turn"]
        print(f"| {kind} | " + " | ".join(f"{per_turn[p]:.0f}" for p in PARTS) + f" | {sum(per_turn.values()):.0f} |")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bench", nargs="?", default="intent_shift", choices=("intent_shift", "orchestration"))
    parser.add_argument("--mode", default="hybrid", choices=("llm", "hybrid"))
    parser.add_argument("--strategy", default="adaptive")
    parser.add_argument("--dir", default="")
    parser.add_argument("--json", default="")
    parser.add_argument("--dump", default="", help="write every call's body (one JSON object a line) to this file")
    options = parser.parse_args(argv)
    counter = TokenCounter()
    ledger = Ledger(counter)
    original_init = ideal_model.IdealModel.__init__
    original_complete, original_begin = ideal_model.IdealModel.complete, ideal_model.IdealModel.begin_turn

    def init(self, program, *args, **kwargs):
        original_init(self, program, *args, **kwargs)
        self.ledger_program = program

    dump = open(options.dump, "w", encoding="utf-8") if options.dump else None

    def complete(self, body):
        answer, record = original_complete(self, body)
        ledger.call(body, record.kind, record.prompt_tokens)
        if dump is not None:
            dump.write(json.dumps({"kind": record.kind, "tokens": record.prompt_tokens, "body": body,
                                   "answer": answer}, default=str) + "\n")
        return answer, record

    def begin_turn(self, oracle):
        original_begin(self, oracle)
        if dump is not None:
            dump.write(json.dumps({"turn": oracle.user, "agents": oracle.agents, "blocked": oracle.blocked}) + "\n")
        ledger.floor_of(oracle, self.ledger_program)

    ideal_model.IdealModel.__init__ = init
    ideal_model.IdealModel.complete, ideal_model.IdealModel.begin_turn = complete, begin_turn
    try:
        if options.bench == "intent_shift":
            import intent_shift

            intent_shift.main(["--mode", options.mode, *(["--dir", options.dir] if options.dir else [])])
        else:
            import orchestration

            with tempfile.TemporaryDirectory() as scratch:
                orchestration.main(["--strategy", options.strategy, "--chart", str(Path(scratch) / "chart.png")])
    finally:
        if dump is not None:
            dump.close()
        ideal_model.IdealModel.__init__ = original_init
        ideal_model.IdealModel.complete, ideal_model.IdealModel.begin_turn = original_complete, original_begin
    report = ledger.report()
    print_report(report)
    if options.json:
        Path(options.json).write_text(json.dumps(report, indent=2), encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
