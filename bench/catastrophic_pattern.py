"""Benchmark: how long a turn takes when an ABL guardrail's pattern backtracks catastrophically.

The guardrails `(x+x+)+y` (a pattern, and the same pattern in a CEL check) read 5000 x's: the stdlib
`re` would take practically for ever; the runtime stops each after its time limit, so the turn
should take a few seconds at most. The behaviour (both guardrails reported as too slow, the turn
answered) is tested in tests/test_abl_rules_checkpoints.py; the time is printed here.

Run: python bench/catastrophic_pattern.py [--repeat N] [--length N]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from frontdesk.lang.abl.compiler import load_abl
from frontdesk.runtime.engine import Engine
from frontdesk.store.memory import MemorySessionStore

PROGRAM = '''AGENT: Desk
GOAL: "Answer questions"

GUARDRAILS:
  slow:
    kind: input
    patterns: ["(x+x+)+y"]
    action: block
  slow_check:
    kind: input
    check: "abl.matches_pattern(content, '(x+x+)+y')"
    action: block

FLOW:
  ask:
    REASONING: false
    RESPOND: "What do you need?"
    ON_INPUT:
      - ELSE:
        SET: query = input
        THEN: answer

  answer:
    REASONING: false
    RESPOND: "You said: {{query}}"
    THEN: ask
'''


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--length", type=int, default=5000, help="how many x's the user sends")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "desk.agent.abl").write_text(PROGRAM, encoding="utf-8")
        program, diags = load_abl(Path(folder))
        if program is None or any(d.is_error for d in diags):
            raise SystemExit("the benchmark program does not compile: " + "; ".join(d.format() for d in diags))
        engine = Engine(program, None, MemorySessionStore())
        seconds = []
        for _ in range(args.repeat):
            session = engine.start().session_id
            started = time.perf_counter()
            result = engine.send(session, "x" * args.length)
            seconds.append(time.perf_counter() - started)
            stopped = sum(1 for e in result.events if e.type == "error" and "took more than" in e.data.get("message", ""))
            print(f"turn with {args.length} x's: {seconds[-1]:.2f} s ({stopped} guardrails stopped at their time limit)")
    print(f"median {statistics.median(seconds):.2f} s over {len(seconds)} turns (a turn should take under 5 s)")
    return seconds


if __name__ == "__main__":
    main()
