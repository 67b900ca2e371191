"""Benchmark: replay every example conversation and print, per conversation, turns, LLM calls
per turn, tokens and the engine's own time per turn (model time excluded: the model is scripted;
conversations marked `embeddings: true` include the local embedding model's decisions).

Run: python bench/turns.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import json
import time
import tracemalloc
from pathlib import Path

from frontdesk.lang import load_program
from frontdesk.testing import load_conversation, run_conversation, scripted_model

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault("FRONTDESK_EXAMPLE_TODAY", "2026-11-22")
    rows = []
    understanding = embedder = None
    for path in sorted(ROOT.glob("examples/*/conversations/*.yml")):
        program, _ = load_program(path.parent.parent)
        spec = load_conversation(path)
        if spec.get("embeddings") and understanding is None:
            from frontdesk.nlu.embeddings import get_default_embedder
            from frontdesk.nlu.matcher import EmbeddingUnderstanding

            embedder = get_default_embedder()
            embedder.load()
            understanding = EmbeddingUnderstanding(embedder)
        nlu = (understanding, embedder) if spec.get("embeddings") else (None, None)
        timings = []
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory() as data:
                os.environ["FRONTDESK_EXAMPLE_DB_DIR"] = data
                start = time.perf_counter()
                run = run_conversation(program, [str(u) for u in spec["user"]], scripted_model(spec),
                                       understanding=nlu[0], embedder=nlu[1])
                timings.append(time.perf_counter() - start)
        turns = len(spec["user"])
        state_kb = len(json.dumps(run.engine.store.load(run.session_id))) / 1024
        with tempfile.TemporaryDirectory() as data:  # peak Python memory of one more replay
            os.environ["FRONTDESK_EXAMPLE_DB_DIR"] = data
            tracemalloc.start()
            run_conversation(program, [str(u) for u in spec["user"]], scripted_model(spec),
                             understanding=nlu[0], embedder=nlu[1])
            peak_mb = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
        calls = run.events_of("llm_call")
        tokens = sum(e["data"].get("prompt_tokens", 0) + e["data"].get("completion_tokens", 0) for e in calls)
        rows.append((f"{path.parent.parent.name}/{path.stem}", turns, len(calls), len(calls) / max(turns, 1),
                     tokens, statistics.median(timings) * 1000 / (turns + 1), state_kb, peak_mb))
    header = (f"{'conversation':34} {'turns':>5} {'llm calls':>9} {'calls/turn':>10} {'tokens*':>8} "
              f"{'ms/turn':>8} {'state KB':>8} {'peak MB':>8}")
    print(header)
    print("-" * len(header))
    for name, turns, calls, per, tokens, ms, state_kb, peak_mb in rows:
        print(f"{name:34} {turns:5d} {calls:9d} {per:10.2f} {tokens:8d} {ms:8.2f} {state_kb:8.1f} {peak_mb:8.2f}")
    print("* tokens estimated by the scripted model (characters / 4); ms/turn includes tool calls and SQLite;")
    print("  state KB: the stored session state after the conversation; peak MB: Python allocations")
    print("  during one replay (tracemalloc; the embedding model's tensors are outside it)")


if __name__ == "__main__":
    main()
