"""Reading a long session's trace (issue 23): the bytes and time of `GET /v1/sessions/{id}/trace` for
the whole log (page after page, as an old client would need) against one page, one turn and the web
chat's restore (the last 50 turns), on a SQLite store holding a session of `--turns` turns.

The session is made by the engine itself through the HTTP API (an ADL flow that answers every message;
about 8 events a turn), then each read is timed with `time.perf_counter` around an in-process request
(FastAPI's TestClient: no network), `--repeat` times, and the median is printed.

Run: .venv/bin/python bench/trace_paging.py [--turns 5000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from fastapi.testclient import TestClient

from frontdesk.lang import load_program
from frontdesk.server.app import create_app
from frontdesk.server.auth import ServerSettings
from frontdesk.store.sqlite import SqliteSessionStore

ECHO = """
main:
  type: flow agent
  steps:
    - label: again
    - user
    - bot: "Noted, thank you. Anything else I can help you with today?"
    - next: again
"""
HEADERS = {"Authorization": "Bearer bench"}


def timed(client: TestClient, path: str, repeat: int, follow: bool = False) -> tuple[float, int, int]:
    """(median seconds, bytes, events) of reading `path`, following `next` to the end when `follow`."""
    times, size, count = [], 0, 0
    for _ in range(repeat):
        started = time.perf_counter()
        size = count = 0
        after = 0
        while True:
            joiner = "&" if "?" in path else "?"
            response = client.get(f"{path}{joiner}after={after}", headers=HEADERS)
            response.raise_for_status()
            body = response.json()
            size += len(response.content)
            count += len(body["events"])
            if not follow or body["next"] is None:
                break
            after = body["next"]
        times.append(time.perf_counter() - started)
    return statistics.median(times), size, count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "agents.yml").write_text(textwrap.dedent(ECHO), encoding="utf-8")
        program, diags = load_program(folder)
        assert program is not None, diags
        store = SqliteSessionStore(str(folder / "s.sqlite3"))
        client = TestClient(create_app({"echo": program}, store, None,
                                        ServerSettings(tokens={"bench": "bench"}, max_turns=args.turns + 10)))
        sid = client.post("/v1/sessions", json={"program": "echo"}, headers=HEADERS).json()["session_id"]
        started = time.perf_counter()
        for n in range(1, args.turns + 1):
            client.post(f"/v1/sessions/{sid}/messages", json={"text": f"message number {n}"}, headers=HEADERS)
        print(f"session of {args.turns} turns made in {time.perf_counter() - started:.1f} s; "
              f"{len(store.events(sid))} events")
        base = f"/v1/sessions/{sid}/trace"
        middle = args.turns // 2
        restore_from = max(0, args.turns - 49)
        rows = [("whole log, every page", base + "?limit=5000", True),
                ("first page (default size)", base, False),
                (f"one turn (turn {middle})", f"{base}?turn={middle}", True),
                (f"one turn (turn {args.turns})", f"{base}?turn={args.turns}", True),
                ("last 50 turns (web chat restore)", f"{base}?from_turn={restore_from}", True)]
        print(f"{'read':<36} {'ms':>9} {'bytes':>11} {'events':>8}")
        for label, path, follow in rows:
            seconds, size, count = timed(client, path, args.repeat, follow)
            print(f"{label:<36} {seconds * 1000:>9.1f} {size:>11,} {count:>8,}")
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
