"""Benchmark: what a user waits for in the first hour on a small machine.

Prints, each measured in a fresh process (so nothing is warm in memory):
  - the time to load the local models (the embedding model all-MiniLM-L6-v2, then SmolLM2-135M-Instruct);
  - the time of one embedding (one short sentence, after a warm-up) with 1 and with 2 torch threads;
  - the time from starting `frontdesk chat examples/bookstore` to its first prompt, with the program's
    caches (`.frontdesk/index`: knowledge indexes and phrase vectors) removed (cold) and kept (warm),
    and the time of the first reply in each case.

The chat runs on a copy of the example in a temporary folder, so the checkout's caches are left alone.
Run: python bench/first_hour.py [--repeat N] [--program examples/bookstore] [--no-llm]
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
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

LOAD = r"""
import json, sys, time
started = time.perf_counter()
from frontdesk.nlu.embeddings import get_default_embedder
embedder = get_default_embedder()
embedder.load()
embedding = time.perf_counter() - started
llm = None
if sys.argv[1] == "yes":
    from frontdesk.llm.local import get_local_provider, local_generation_available
    if local_generation_available():
        began = time.perf_counter()
        get_local_provider().load()
        llm = time.perf_counter() - began
print(json.dumps({"embedding": embedding, "llm": llm}))
"""

EMBED = r"""
import json, os, time
from frontdesk.nlu.embeddings import SentenceEmbedder
embedder = SentenceEmbedder(threads=int(os.environ["THREADS"]))
embedder.encode(["warm up the model"])
times = []
for i in range(int(os.environ["REPEAT"])):
    began = time.perf_counter()
    embedder.encode([f"what is my balance number {i}?"])
    times.append(time.perf_counter() - began)
print(json.dumps(times))
"""


def _python(code: str, *args: str, env: dict | None = None) -> str:
    result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=900,
                            env={**os.environ, **(env or {})}, check=False)
    if result.returncode != 0:
        raise SystemExit(f"the measuring process failed:\n{result.stderr[-2000:]}")
    return result.stdout.strip().splitlines()[-1]


def _chat_until_prompt(program: Path, llm: str, workdir: Path) -> tuple[float, float | None]:
    """Seconds from starting the chat to its banner (the first prompt), and to the first reply."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FRONTDESK_LLM", "OPENAI_"))}
    env.update({"FRONTDESK_EXAMPLE_DB_DIR": str(workdir / "data"), "FRONTDESK_EXAMPLE_TODAY": "2026-11-22"})
    args = [sys.executable, "-m", "frontdesk.cli", "chat", str(program), "--store", "memory", "--llm", llm]
    started = time.perf_counter()
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=workdir, bufsize=1)
    prompt = reply = None
    assert proc.stderr is not None and proc.stdin is not None and proc.stdout is not None
    for line in proc.stderr:  # the banner "session … · LLM: … · type quit to leave" comes before any input
        if "to leave" in line:
            prompt = time.perf_counter() - started
            break
    if prompt is None:
        proc.kill()
        raise SystemExit(f"the chat never showed its prompt:\n{proc.stderr.read()[-2000:]}")
    asked = time.perf_counter()
    proc.stdin.write("what is your return policy?\n")
    proc.stdin.flush()
    echoed = False
    for line in proc.stdout:  # the greeting may come first; the reply follows the echoed question
        if line.startswith("you>"):
            echoed = True
        elif echoed and ">" in line:
            reply = time.perf_counter() - asked
            break
    proc.stdin.write("quit\n")
    proc.stdin.close()
    proc.wait(timeout=120)
    return prompt, reply


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--program", type=Path, default=ROOT / "examples" / "bookstore")
    parser.add_argument("--no-llm", action="store_true", help="measure the chat with --llm none (no SmolLM2)")
    args = parser.parse_args(argv)
    report: dict = {"cpus": os.cpu_count(), "load_average": os.getloadavg()}
    print(f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    loads = json.loads(_python(LOAD, "no" if args.no_llm else "yes"))
    report["load"] = loads
    print(f"load the embedding model: {loads['embedding']:.2f} s"
          + (f"; then SmolLM2: {loads['llm']:.2f} s" if loads["llm"] is not None else ""))

    report["embedding"] = {}
    for threads in (1, 2):
        times = json.loads(_python(EMBED, env={"THREADS": str(threads), "REPEAT": str(max(5, args.repeat))}))
        report["embedding"][threads] = times
        print(f"one embedding with {threads} torch thread{'s' if threads > 1 else ''}: median "
              f"{statistics.median(times) * 1000:.0f} ms, worst {max(times) * 1000:.0f} ms")

    llm = "none" if args.no_llm else "auto"
    report["chat"] = {"cold": [], "warm": []}
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        program = work / args.program.name
        shutil.copytree(args.program, program, ignore=shutil.ignore_patterns(".frontdesk", ".data"))
        for _ in range(args.repeat):
            shutil.rmtree(program / ".frontdesk", ignore_errors=True)
            report["chat"]["cold"].append(_chat_until_prompt(program, llm, work))
            report["chat"]["warm"].append(_chat_until_prompt(program, llm, work))
    for kind in ("cold", "warm"):
        runs = report["chat"][kind]
        prompts = [p for p, _ in runs]
        replies = [r for _, r in runs if r is not None]
        print(f"`frontdesk chat {args.program.name} --llm {llm}` to its first prompt, {kind} cache: median "
              f"{statistics.median(prompts):.2f} s (of {', '.join(f'{p:.2f}' for p in prompts)})"
              + (f"; first reply {statistics.median(replies):.2f} s" if replies else ""))
    return report


if __name__ == "__main__":
    main()
