"""Benchmark: real `frontdesk serve` processes under load, 1 and then 2 of them sharing one store.

A program that needs no model (a flow agent whose tool answers at once, `--llm none`) is served on
127.0.0.1; N sessions are opened and each gets M messages, sent in order by its own client (a pool
of client threads runs the sessions at once), message j of session i going to process (i + j) % P.
Afterwards every session's trace is read back and its user messages compared with what was sent:
lost, duplicated and reordered messages are counted (they must be 0; the exit status is 1 if not).

Rows: 1 process on SQLite (skip with --no-sqlite), 1 process and 2 processes on the chosen shared
store (Redis by default, or PostgreSQL). Each row gets a fresh store (its own Redis key prefix, its
own PostgreSQL database, its own SQLite file), removed at the end with the server processes.

Run: .venv/bin/python bench/serve_load.py [--store redis|postgres] [--sessions 20] [--turns 10]
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx

REDIS_URL = "redis://127.0.0.1:6379/0"
POSTGRES_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
TOKEN = "bench-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

AGENTS = """
main:
  type: flow agent
  steps:
    - label: top
    - user
    - call: lookup
    - bot: "noted ${lookup.message}"
    - next: top
"""
TOOLS = '''
import os
import time

DELAY = float(os.environ.get("FRONTDESK_BENCH_TOOL_SECONDS", "0"))


def lookup():
    """Answers at once (or after FRONTDESK_BENCH_TOOL_SECONDS)."""
    if DELAY:
        time.sleep(DELAY)
    return [{"status": "success", "msg": f"by {os.getpid()}"}]
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- stores: made fresh for a row, removed after it ---------------------------------------------------

class Store:
    def __init__(self, kind: str, workdir: Path) -> None:
        self.kind = kind
        self._admin = None
        self._prefix = None
        run = uuid.uuid4().hex[:8]
        if kind == "sqlite":
            self.url = str(workdir / f"sessions-{run}.sqlite3")
        elif kind == "redis":
            import redis

            redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
            self._prefix = f"frontdesk-bench-{run}:"
            self.url = f"{REDIS_URL}?prefix={self._prefix}"
        elif kind == "postgres":
            import psycopg

            self._admin = psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True, connect_timeout=5)
            self._db = f"frontdesk_bench_{run}"
            self._admin.execute(f'CREATE DATABASE "{self._db}"')
            self.url = f"postgresql://postgres@127.0.0.1:5432/{self._db}"
        else:
            raise ValueError(kind)

    def remove(self) -> None:
        if self.kind == "redis" and self._prefix:
            import redis

            client = redis.Redis.from_url(REDIS_URL)
            keys = list(client.scan_iter(f"{self._prefix}*"))
            if keys:
                client.delete(*keys)
            client.close()
        elif self.kind == "postgres" and self._admin is not None:
            self._admin.execute(f'DROP DATABASE IF EXISTS "{self._db}" WITH (FORCE)')
            self._admin.close()
        elif self.kind == "sqlite":
            for suffix in ("", "-wal", "-shm"):
                Path(self.url + suffix).unlink(missing_ok=True)


# ---- server processes ----------------------------------------------------------------------------------

class Server:
    def __init__(self, folder: Path, store_url: str, workdir: Path, name: str, tool_seconds: float) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = workdir / f"server-{name}.log"
        self._log = open(self.log_path, "wb")
        env = {**os.environ, "FRONTDESK_API_TOKENS": TOKEN, "FRONTDESK_BENCH_TOOL_SECONDS": str(tool_seconds)}
        env.pop("FRONTDESK_OTEL_EXPORTER", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "frontdesk.cli", "serve", str(folder), "--llm", "none", "--no-embeddings",
             "--host", "127.0.0.1", "--port", str(self.port), "--store", store_url, "--max-turns", "100000"],
            cwd=workdir, env=env, stdout=self._log, stderr=subprocess.STDOUT)

    def wait_ready(self, within: float = 60.0) -> None:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited: {self.log_path.read_text(errors='replace')[-2000:]}")
            try:
                if httpx.get(f"{self.base}/ready", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"the server was not ready within {within} s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()


# ---- one row --------------------------------------------------------------------------------------------

@dataclass
class Row:
    processes: int
    store: str
    sessions: int
    turns: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    lost: int = 0
    duplicated: int = 0
    reordered: int = 0
    bad_seqs: int = 0
    first_error: str = ""

    def cells(self) -> list[str]:
        ms = sorted(x * 1000 for x in self.latencies)

        def pct(p: float) -> str:
            return f"{ms[min(len(ms) - 1, round(p / 100 * (len(ms) - 1)))]:.1f}" if ms else "-"

        return [str(self.processes), self.store, str(self.sessions), str(self.turns), f"{self.seconds:.2f}",
                f"{self.turns / self.seconds:.1f}" if self.seconds else "-", pct(50), pct(99),
                str(self.errors), str(self.lost), str(self.duplicated), str(self.reordered)]


HEADER = ["processes", "store", "sessions", "turns", "seconds", "turns/s", "p50 ms", "p99 ms",
          "errors", "lost", "duplicated", "reordered"]


def run_row(folder: Path, workdir: Path, kind: str, processes: int, sessions: int, turns: int,
            clients: int, tool_seconds: float, deadline: float) -> Row:
    row = Row(processes=processes, store=kind, sessions=sessions)
    store = Store(kind, workdir)
    servers: list[Server] = []
    try:
        servers = [Server(folder, store.url, workdir, f"{kind}-{processes}-{n}", tool_seconds)
                   for n in range(processes)]
        for server in servers:
            server.wait_ready()
        with httpx.Client(headers=AUTH, timeout=60) as http:
            ids = []
            for i in range(sessions):
                r = http.post(f"{servers[i % processes].base}/v1/sessions", json={"program": "desk"})
                r.raise_for_status()
                ids.append(r.json()["session_id"])
            # one request per process per session first, so connections and tool imports are warm
            warm = [http.post(f"{s.base}/v1/sessions/{ids[0]}/messages", json={"text": f"warm-{n}"})
                    for n, s in enumerate(servers)]
            for r in warm:
                r.raise_for_status()

        lock = threading.Lock()

        def session_job(i: int) -> list[str]:
            """Send session i its messages in order, spread across the processes."""
            sent = []
            own = [httpx.Client(base_url=s.base, headers=AUTH, timeout=60) for s in servers]
            try:
                for j in range(turns):
                    if time.monotonic() > deadline:
                        raise TimeoutError("the benchmark ran out of time")
                    text = f"s{i}-m{j}"
                    sent.append(text)
                    started = time.perf_counter()
                    try:
                        r = own[(i + j) % processes].post(f"/v1/sessions/{ids[i]}/messages",
                                                          json={"text": text, "message_id": text})
                        problem = None if r.status_code == 200 else f"{r.status_code} {r.text[:200]}"
                    except httpx.HTTPError as exc:
                        problem = f"{type(exc).__name__}: {exc}"
                    took = time.perf_counter() - started
                    with lock:
                        if problem:
                            row.errors += 1
                            row.first_error = row.first_error or problem
                        else:
                            row.latencies.append(took)
                return sent
            finally:
                for c in own:
                    c.close()

        began = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(max_workers=clients) as pool:
            futures = [pool.submit(session_job, i) for i in range(sessions)]
            remaining = max(1.0, deadline - time.monotonic())
            done, not_done = concurrent.futures.wait(futures, timeout=remaining)
            if not_done:
                raise TimeoutError(f"{len(not_done)} sessions did not finish in time")
            sent_by_session = [f.result() for f in futures]
        row.seconds = time.perf_counter() - began
        row.turns = len(row.latencies)

        # read every session back (from the processes in turn) and compare with what was sent
        with httpx.Client(headers=AUTH, timeout=60) as http:
            for i, sid in enumerate(ids):
                events = http.get(f"{servers[i % processes].base}/v1/sessions/{sid}/trace").json()["events"]
                if [e["seq"] for e in events] != list(range(1, len(events) + 1)):
                    row.bad_seqs += 1
                said = [e["data"]["text"] for e in events if e["type"] == "user_message"
                        and not e["data"]["text"].startswith("warm-")]
                sent = sent_by_session[i]
                counts = collections.Counter(said)
                row.lost += sum(1 for text in sent if counts[text] == 0)
                row.duplicated += sum(n - 1 for n in counts.values() if n > 1)
                place = {text: n for n, text in enumerate(sent)}
                seen = [place.get(text, -1) for text in dict.fromkeys(said)]  # first occurrences, in log order
                row.reordered += sum(1 for a, b in zip(seen, seen[1:]) if b < a)
        return row
    finally:
        for server in servers:
            server.stop()
        store.remove()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", choices=["redis", "postgres"], default="redis",
                        help="the shared store of the 1- and 2-process rows")
    parser.add_argument("--sessions", type=int, default=20, help="sessions run at once (N)")
    parser.add_argument("--turns", type=int, default=10, help="messages per session (M)")
    parser.add_argument("--clients", type=int, default=0, help="client threads (default: one per session)")
    parser.add_argument("--tool-ms", type=float, default=0.0, help="how long the tool takes (default 0)")
    parser.add_argument("--no-sqlite", action="store_true", help="skip the 1-process SQLite row")
    parser.add_argument("--time-limit", type=float, default=600.0, help="seconds the whole run may take")
    args = parser.parse_args()
    if args.sessions < 1 or args.turns < 1:
        parser.error("--sessions and --turns must be at least 1")
    deadline = time.monotonic() + args.time_limit
    clients = args.clients or args.sessions
    plan = ([] if args.no_sqlite else [("sqlite", 1)]) + [(args.store, 1), (args.store, 2)]

    workdir = Path(tempfile.mkdtemp(prefix="frontdesk-serve-load-"))
    rows: list[Row] = []
    try:
        folder = workdir / "desk"
        folder.mkdir()
        (folder / "agents.yml").write_text(textwrap.dedent(AGENTS), encoding="utf-8")
        (folder / "tools.py").write_text(TOOLS, encoding="utf-8")
        for kind, processes in plan:
            print(f"running: {processes} process(es) on {kind}, {args.sessions} sessions x {args.turns} turns, "
                  f"{clients} client threads ...", file=sys.stderr, flush=True)
            rows.append(run_row(folder, workdir, kind, processes, args.sessions, args.turns, clients,
                                args.tool_ms / 1000, deadline))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    table = [HEADER] + [row.cells() for row in rows]
    widths = [max(len(r[c]) for r in table) for c in range(len(HEADER))]
    print(f"{os.cpu_count()} CPUs; client and servers on this machine; tool {args.tool_ms:g} ms, --llm none")
    print("| " + " | ".join(h.ljust(w) for h, w in zip(HEADER, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for cells in table[1:]:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |")
    bad = False
    for row in rows:
        if row.errors:
            print(f"{row.processes} x {row.store}: {row.errors} requests failed, first: {row.first_error}")
        if row.bad_seqs:
            print(f"{row.processes} x {row.store}: {row.bad_seqs} sessions have event seqs with gaps or repeats")
        bad = bad or bool(row.errors or row.lost or row.duplicated or row.reordered or row.bad_seqs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
