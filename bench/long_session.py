"""Benchmark: what a long session costs. One session of many turns on a looping flow, stored in
SQLite after every turn; prints the engine's time per turn and the stored state's size at
checkpoints. The stored state keeps a bounded history (the event log keeps everything), so the
time per turn should stay flat as the session grows.

Run: python bench/long_session.py [--turns 10000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import textwrap
import time
from pathlib import Path

from frontdesk.lang import load_program
from frontdesk.runtime.engine import Engine
from frontdesk.store.sqlite import SqliteSessionStore

PROGRAM = """
main:
  type: flow agent
  args: [said]
  steps:
    - label: again
    - bot: "Tell me something (you said: ${said})."
    - user
    - set:
        said: "something"
    - next: again
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--window", type=int, default=200, help="turns averaged at each checkpoint")
    args = parser.parse_args()
    checkpoints = sorted({c for c in (100, 500, 1000, 2000, 5000, 10_000, args.turns) if c <= args.turns})
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "agents.yml").write_text(textwrap.dedent(PROGRAM), encoding="utf-8")
        program, _ = load_program(root)
        store = SqliteSessionStore(root / "sessions.sqlite3")
        engine = Engine(program, None, store)
        sid = engine.start().session_id
        times: list[float] = []
        print(f"{'turn':>7} {'ms/turn (median of last %d)' % args.window:>28} {'state KB':>9}")
        for turn in range(1, args.turns + 1):
            start = time.perf_counter()
            engine.send(sid, f"message number {turn}")
            times.append(time.perf_counter() - start)
            if turn in checkpoints:
                recent = times[-args.window:]
                state_kb = len(json.dumps(store.load(sid))) / 1024
                print(f"{turn:>7} {statistics.median(recent) * 1000:>28.2f} {state_kb:>9.1f}")


if __name__ == "__main__":
    main()
