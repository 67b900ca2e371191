"""Real `frontdesk serve` processes on 127.0.0.1, as they are deployed.

Scale-out: two server processes share one Redis or PostgreSQL store and take turns of the same
session, one after another and all at once; nothing is lost, duplicated or reordered, either process
reads the session, and a message id retried on the other process is answered from the first result.

SIGKILL: a server killed in the middle of a turn leaves the session as its last committed turn; a
restarted server on the same store takes the dead process's session lock, runs the retried message
once, and the conversation goes on.

Each test starts its own servers and kills them at the end (the `servers` fixture), and cleans up
its store: a Redis key prefix of its own, a PostgreSQL database of its own, a SQLite file in tmp_path.
"""

from __future__ import annotations

import collections
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import httpx
import pytest
from live_stores import postgres_store_url, redis_store_url

pytestmark = pytest.mark.slow

TOKEN = "proc-token-1"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
READY_WITHIN = 60.0  # seconds a server may take to answer /ready
REQUEST_TIMEOUT = 60.0  # seconds an HTTP request may take (the session lock waits up to 30 s)

# A flow that loops: the user says something, a tool takes a moment (like a real back end) and says
# which process ran it, the bot notes it. The tool sleeps long, and says so in a file first, while the
# file named by FRONTDESK_TEST_SLOW_FLAG exists (the SIGKILL test's turn in progress).
AGENTS = """
main:
  type: flow agent
  steps:
    - label: top
    - user
    - call: pause
    - bot: "noted ${pause.message}"
    - next: top
"""
TOOLS = '''
import os
import time
from pathlib import Path


def pause():
    """Takes a moment, like a real back end; says which process ran it."""
    slow = os.environ.get("FRONTDESK_TEST_SLOW_FLAG")
    if slow and Path(slow).exists():
        Path(os.environ["FRONTDESK_TEST_STARTED"]).write_text(str(os.getpid()))
        time.sleep(20)
    else:
        time.sleep(0.02)
    return [{"status": "success", "msg": f"by {os.getpid()}"}]
'''


def write_program(tmp_path: Path) -> Path:
    folder = tmp_path / "desk"
    folder.mkdir()
    (folder / "agents.yml").write_text(textwrap.dedent(AGENTS), encoding="utf-8")
    (folder / "tools.py").write_text(TOOLS, encoding="utf-8")
    return folder


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- stores ------------------------------------------------------------------------------------------

@pytest.fixture
def backend() -> str:
    return "sqlite"


@pytest.fixture
def store_url(backend, tmp_path):
    """A fresh store of the backend's kind, removed at the end (after the servers are gone)."""
    if backend == "sqlite":
        yield str(tmp_path / "sessions.sqlite3")
        return
    assert backend in ("redis", "postgres"), backend
    with (redis_store_url("proc") if backend == "redis" else postgres_store_url("proc")) as url:
        yield url


# ---- server processes --------------------------------------------------------------------------------

class Server:
    """One `frontdesk serve` process on a free loopback port; its output goes to a log file."""

    def __init__(self, folder: Path, store_url: str, workdir: Path, name: str, env: dict[str, str]) -> None:
        self.name = name
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = workdir / f"server-{name}.log"
        self._log = open(self.log_path, "wb")
        full_env = {**os.environ, "FRONTDESK_API_TOKENS": TOKEN, **env}
        full_env.pop("FRONTDESK_OTEL_EXPORTER", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "frontdesk.cli", "serve", str(folder), "--llm", "none", "--no-embeddings",
             "--host", "127.0.0.1", "--port", str(self.port), "--store", store_url],
            cwd=workdir, env=full_env, stdout=self._log, stderr=subprocess.STDOUT)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def output(self) -> str:
        self._log.flush()
        return self.log_path.read_text(encoding="utf-8", errors="replace")[-4000:]

    def wait_ready(self, within: float = READY_WITHIN) -> None:
        deadline = time.monotonic() + within
        while True:
            try:
                if httpx.get(f"{self.base}/ready", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            assert self.proc.poll() is None, f"server {self.name} exited:\n{self.output()}"
            assert time.monotonic() < deadline, f"server {self.name} was not ready in {within} s:\n{self.output()}"
            time.sleep(0.1)

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.base, headers=AUTH, timeout=REQUEST_TIMEOUT)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()


@pytest.fixture
def servers(store_url, tmp_path):
    """start(folder, name, env) -> a Server on the test's store; every one is stopped at the end."""
    started: list[Server] = []

    def start(folder: Path, name: str, env: dict[str, str] | None = None) -> Server:
        server = Server(folder, store_url, tmp_path, name, env or {})
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


# ---- reading a session back --------------------------------------------------------------------------

def texts(body: dict) -> list[str]:
    return [m["text"] for m in body["messages"]]


def send(http: httpx.Client, sid: str, text: str, message_id: str | None = None) -> dict:
    body = {"text": text} if message_id is None else {"text": text, "message_id": message_id}
    response = http.post(f"/v1/sessions/{sid}/messages", json=body)
    assert response.status_code == 200, (text, response.status_code, response.text)
    return response.json()


def trace(http: httpx.Client, sid: str) -> list[dict]:
    response = http.get(f"/v1/sessions/{sid}/trace")
    assert response.status_code == 200, response.text
    return response.json()["events"]


def said(events: list[dict]) -> list[str]:
    return [e["data"]["text"] for e in events if e["type"] == "user_message"]


def assert_well_formed(events: list[dict], turns: int) -> None:
    """Event seqs are 1..N with no gap or repeat, in order; turns run 0..`turns` in order, each turn
    after the first holding exactly one user message."""
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    turn_of = [e["turn"] for e in events]
    assert turn_of == sorted(turn_of), "events of turns are interleaved"
    assert sorted(set(turn_of)) == list(range(0, turns + 1))
    per_turn = collections.Counter(e["turn"] for e in events if e["type"] == "user_message")
    assert per_turn == {t: 1 for t in range(1, turns + 1)}


# ---- scale-out: two processes, one store, one session --------------------------------------------------

SEQUENTIAL = 8
THREADS = 4
PER_THREAD = 6


@pytest.mark.parametrize("backend", ["redis", "postgres"])
def test_two_server_processes_share_a_session_without_losing_or_reordering(backend, servers, tmp_path):
    folder = write_program(tmp_path)
    procs = [servers(folder, "one"), servers(folder, "two")]
    for server in procs:
        server.wait_ready()
    ran_by = [f"noted by {server.pid}" for server in procs]
    clients = [server.client() for server in procs]
    try:
        created = clients[0].post("/v1/sessions", json={"program": "desk"})
        assert created.status_code == 201, created.text
        sid = created.json()["session_id"]
        assert created.json()["turn"] == 0

        # one after another, message n to process n % 2: each turn runs where it was sent
        answers: dict[str, dict] = {}
        for n in range(SEQUENTIAL):
            out = send(clients[n % 2], sid, f"seq-{n}", f"seq-{n}")
            assert (out["turn"], out["replayed"], texts(out)) == (n + 1, False, [ran_by[n % 2]])
            answers[f"seq-{n}"] = out

        # all at once: several clients, each with its own connections to both processes, alternating
        barrier = threading.Barrier(THREADS)
        results: dict[int, list[tuple[str, int, dict | str]]] = {t: [] for t in range(THREADS)}

        def client_thread(t: int) -> None:
            own = [server.client() for server in procs]
            try:
                barrier.wait(timeout=30)
                for k in range(PER_THREAD):
                    which = (t + k) % 2
                    mid = f"t{t}-{k}"
                    try:
                        r = own[which].post(f"/v1/sessions/{sid}/messages", json={"text": mid, "message_id": mid})
                        results[t].append((mid, which, r.json() if r.status_code == 200
                                           else f"{r.status_code} {r.text}"))
                    except httpx.HTTPError as exc:
                        results[t].append((mid, which, f"{type(exc).__name__}: {exc}"))
            finally:
                for c in own:
                    c.close()

        threads = [threading.Thread(target=client_thread, args=(t,), daemon=True) for t in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not any(thread.is_alive() for thread in threads), "a client thread did not finish"

        total = SEQUENTIAL + THREADS * PER_THREAD
        concurrent_turns = []
        for t in range(THREADS):
            assert [mid for mid, _, _ in results[t]] == [f"t{t}-{k}" for k in range(PER_THREAD)]
            for mid, which, out in results[t]:
                assert isinstance(out, dict), f"{mid} to process {which}: {out}"
                assert not out["replayed"] and texts(out) == [ran_by[which]], (mid, out)
                answers[mid] = out
                concurrent_turns.append(out["turn"])
        # every request got a turn of its own
        assert sorted(concurrent_turns) == list(range(SEQUENTIAL + 1, total + 1))

        # both processes read the same session and the same trace
        for http in clients:
            got = http.get(f"/v1/sessions/{sid}")
            assert got.status_code == 200, got.text
            assert (got.json()["turn"], got.json()["status"], got.json()["ended"]) == (total, "waiting", False)
        events = trace(clients[0], sid)
        assert trace(clients[1], sid) == events

        # every message exactly once, each sender's in the order it sent them
        messages = said(events)
        expected = [f"seq-{n}" for n in range(SEQUENTIAL)] + [f"t{t}-{k}" for t in range(THREADS)
                                                              for k in range(PER_THREAD)]
        counts = collections.Counter(messages)
        assert sorted(counts) == sorted(expected) and set(counts.values()) == {1}, counts
        assert messages[:SEQUENTIAL] == [f"seq-{n}" for n in range(SEQUENTIAL)]
        for t in range(THREADS):
            assert [m for m in messages if m.startswith(f"t{t}-")] == [f"t{t}-{k}" for k in range(PER_THREAD)]
        assert_well_formed(events, total)
        # the turn a response named is the turn whose user message it was
        turn_of_message = {e["data"]["text"]: e["turn"] for e in events if e["type"] == "user_message"}
        assert {mid: out["turn"] for mid, out in answers.items()} == turn_of_message
        # each turn's bot message is the one its response carried (the process that ran it)
        bot_of_turn = {e["turn"]: e["data"]["text"] for e in events if e["type"] == "bot_message"}
        assert {out["turn"]: texts(out)[0] for out in answers.values()} == bot_of_turn

        # a message id retried on the OTHER process: the first result, not a second turn
        for mid, first_on in (("seq-3", 1), ("seq-4", 0), ("t1-2", (1 + 2) % 2)):
            again = send(clients[1 - first_on], sid, mid, mid)
            assert again["replayed"] is True
            assert (again["turn"], texts(again)) == (answers[mid]["turn"], texts(answers[mid]))
        assert trace(clients[1], sid) == events
        assert clients[1].get(f"/v1/sessions/{sid}").json()["turn"] == total
    finally:
        for http in clients:
            http.close()


# ---- SIGKILL in the middle of a turn ----------------------------------------------------------------

@pytest.mark.parametrize("backend", ["sqlite", "redis", "postgres"])
def test_a_server_killed_mid_turn_keeps_the_last_committed_turn(backend, servers, tmp_path):
    folder = write_program(tmp_path)
    slow_flag, started = tmp_path / "slow-flag", tmp_path / "tool-started"
    env = {"FRONTDESK_TEST_SLOW_FLAG": str(slow_flag), "FRONTDESK_TEST_STARTED": str(started)}
    first = servers(folder, "first", env)
    first.wait_ready()
    with first.client() as http:
        created = http.post("/v1/sessions", json={"program": "desk"})
        assert created.status_code == 201, created.text
        sid = created.json()["session_id"]
        for n, text in enumerate(["one", "two", "three"], start=1):
            out = send(http, sid, text, f"m-{n}")
            assert (out["turn"], texts(out)) == (n, [f"noted by {first.pid}"])
        committed = trace(http, sid)

    # the next turn's tool takes 20 s: send it, wait until the tool runs, then kill the server
    slow_flag.touch()
    outcome: list = []

    def interrupted() -> None:
        try:
            with first.client() as c:
                outcome.append(c.post(f"/v1/sessions/{sid}/messages", json={"text": "four", "message_id": "m-k"}))
        except httpx.HTTPError as exc:
            outcome.append(exc)

    sender = threading.Thread(target=interrupted, daemon=True)
    sender.start()
    deadline = time.monotonic() + 30
    while not (started.exists() and started.read_text()):  # written, not just created
        assert first.proc.poll() is None, first.output()
        assert time.monotonic() < deadline, f"the slow tool did not start:\n{first.output()}"
        time.sleep(0.02)
    assert started.read_text() == str(first.pid)
    os.kill(first.pid, signal.SIGKILL)
    assert first.proc.wait(10) == -signal.SIGKILL
    sender.join(30)
    assert not sender.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], httpx.TransportError), outcome
    slow_flag.unlink()

    second = servers(folder, "second", env)
    second.wait_ready()
    with second.client() as http:
        # the session is its last committed turn: the interrupted one left nothing
        got = http.get(f"/v1/sessions/{sid}")
        assert got.status_code == 200, got.text
        assert (got.json()["turn"], got.json()["status"]) == (3, "waiting")
        after_crash = trace(http, sid)
        assert after_crash == committed
        assert "four" not in said(after_crash) and max(e["turn"] for e in after_crash) == 3
        assert_well_formed(after_crash, 3)

        # the retried message runs once, on the new process (which takes over the dead one's lock) ...
        retried = send(http, sid, "four", "m-k")
        assert (retried["turn"], retried["replayed"], texts(retried)) == (4, False, [f"noted by {second.pid}"])
        # ... and a second retry is answered from that result
        again = send(http, sid, "four", "m-k")
        assert (again["turn"], again["replayed"], texts(again)) == (4, True, texts(retried))
        # an id committed before the crash is still remembered
        assert send(http, sid, "two", "m-2")["replayed"] is True

        # the conversation goes on
        out = send(http, sid, "five", "m-5")
        assert (out["turn"], out["replayed"], texts(out)) == (5, False, [f"noted by {second.pid}"])
        final = trace(http, sid)
        assert final[:len(committed)] == committed
        assert said(final) == ["one", "two", "three", "four", "five"]
        assert_well_formed(final, 5)
        assert http.get(f"/v1/sessions/{sid}").json()["turn"] == 5
