"""The server beyond single requests: program versions and reloading, inactivity rules on a timer,
the `preemptive` strategy, a busy session, a store that is down, expiring idle sessions."""

from __future__ import annotations

import json
import textwrap
import threading
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from frontdesk.lang import load_program
from frontdesk.llm.base import LLMResponse, Usage
from frontdesk.server.app import create_app
from frontdesk.server.auth import ServerSettings
from frontdesk.store.base import StoreError
from frontdesk.store.memory import MemorySessionStore
from frontdesk.store.sqlite import SqliteSessionStore

TOKEN = "tok"
H = {"Authorization": f"Bearer {TOKEN}"}


def wait_for(condition, failure: str, limit: float = 30.0) -> None:
    """Poll `condition` until it holds; fail with `failure` after `limit` seconds (a hang, not a timing)."""
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, failure
        time.sleep(0.02)


def texts(body: dict) -> list[str]:
    return [m["text"] for m in body["messages"]]


def write(folder: Path, agents: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "agents.yml").write_text(textwrap.dedent(agents), encoding="utf-8")
    return folder


def versioned(word: str) -> str:
    return f"""
    main:
      type: flow agent
      steps:
        - bot: "Hello from {word}."
        - user
        - bot: "Goodbye from {word}."
        - user
    """


def client_for(programs: dict, store=None, sources=None, **settings) -> TestClient:
    loaded = {}
    for name, program in programs.items():
        if isinstance(program, Path):
            program, diags = load_program(program)
            assert program is not None, [d.format() for d in diags]
        loaded[name] = program
    app = create_app(loaded, store or MemorySessionStore(), None,
                     ServerSettings(tokens={TOKEN: "alice"}, operators={TOKEN}, **settings),  # alice may reload
                     sources=sources)
    return TestClient(app)


# ---- program versions ----------------------------------------------------------------------------

def test_reloading_starts_new_sessions_on_the_new_version_and_running_ones_finish_on_theirs(tmp_path):
    folder = write(tmp_path / "desk", versioned("v1"))
    client = client_for({"desk": folder}, sources={"desk": folder})
    old = client.post("/v1/sessions", json={"program": "desk"}, headers=H).json()
    assert texts(old) == ["Hello from v1."]
    unchanged = client.post("/v1/programs/desk/reload", headers=H).json()
    assert unchanged["changed"] is False

    write(folder, versioned("v2"))
    reloaded = client.post("/v1/programs/desk/reload", headers=H).json()
    assert reloaded["changed"] is True and reloaded["previous"] != reloaded["version"]
    new = client.post("/v1/sessions", json={"program": "desk"}, headers=H).json()
    assert texts(new) == ["Hello from v2."]
    # the session begun on v1 goes on on v1; the new one on v2
    assert texts(client.post(f"/v1/sessions/{old['session_id']}/messages", json={"text": "hi"}, headers=H).json()) \
        == ["Goodbye from v1."]
    assert texts(client.post(f"/v1/sessions/{new['session_id']}/messages", json={"text": "hi"}, headers=H).json()) \
        == ["Goodbye from v2."]
    sessions = {s: client.get(f"/v1/sessions/{s}", headers=H).json()["program_version"]
                for s in (old["session_id"], new["session_id"])}
    assert sessions == {old["session_id"]: reloaded["previous"], new["session_id"]: reloaded["version"]}
    listed = client.get("/v1/programs", headers=H).json()[0]
    assert listed["version"] == reloaded["version"]
    assert listed["loaded_versions"] == [reloaded["previous"], reloaded["version"]]


def test_a_changed_program_is_picked_up_when_a_session_starts(tmp_path):
    folder = write(tmp_path / "desk", versioned("v1"))
    client = client_for({"desk": folder}, sources={"desk": folder})
    client.app.state.versions.CHECK_EVERY = 0  # look at the files on every new session
    assert texts(client.post("/v1/sessions", json={"program": "desk"}, headers=H).json()) == ["Hello from v1."]
    write(folder, versioned("v2"))
    assert texts(client.post("/v1/sessions", json={"program": "desk"}, headers=H).json()) == ["Hello from v2."]


def test_a_session_finishes_on_its_version_in_another_process_that_loaded_a_newer_one(tmp_path):
    # two servers on one store, as after a restart or in a rolling deploy: the second was started with
    # v2 only, and still runs the session begun on v1 on v1 (its IR is kept in the store)
    folder = write(tmp_path / "desk", versioned("v1"))
    store_path = tmp_path / "s.sqlite3"
    first = client_for({"desk": folder}, store=SqliteSessionStore(store_path))
    old = first.post("/v1/sessions", json={"program": "desk"}, headers=H).json()["session_id"]
    write(folder, versioned("v2"))
    second = client_for({"desk": folder}, store=SqliteSessionStore(store_path))
    assert texts(second.post("/v1/sessions", json={"program": "desk"}, headers=H).json()) == ["Hello from v2."]
    answer = second.post(f"/v1/sessions/{old}/messages", json={"text": "hi"}, headers=H).json()
    assert texts(answer) == ["Goodbye from v1."]
    assert "the program changed" not in json.dumps(answer["events"])
    assert len(second.get("/v1/programs", headers=H).json()[0]["loaded_versions"]) == 2


def test_a_broken_program_is_not_loaded_and_the_running_version_stays(tmp_path):
    folder = write(tmp_path / "desk", versioned("v1"))
    client = client_for({"desk": folder}, sources={"desk": folder})
    (folder / "agents.yml").write_text("main:\n  type: flow agent\n  steps:\n    - next: nowhere\n", encoding="utf-8")
    refused = client.post("/v1/programs/desk/reload", headers=H)
    assert refused.status_code == 422
    body = refused.json()
    assert body["error"].startswith("the program has errors")
    assert any("agents.yml:4" in d for d in body["detail"]["diagnostics"])
    assert texts(client.post("/v1/sessions", json={"program": "desk"}, headers=H).json()) == ["Hello from v1."]


def test_reload_errors(tmp_path):
    folder = write(tmp_path / "desk", versioned("v1"))
    client = client_for({"desk": folder})  # not loaded from files
    assert client.post("/v1/programs/desk/reload", headers=H).status_code == 409
    assert client.post("/v1/programs/nope/reload", headers=H).status_code == 404
    assert client.post("/v1/programs/desk/reload").status_code == 401


# ---- inactivity ----------------------------------------------------------------------------------

IDLE = """
main:
  type: flow agent
  exit: "If there is no input for 3 seconds, remind the user. If there is no input for 6 seconds, say good-bye."
  steps:
    - label: top
    - bot: "What can I do for you?"
    - user
    - next: top
"""


def test_inactivity_rules_run_on_the_servers_timer_and_reach_the_event_stream(tmp_path):
    folder = write(tmp_path / "idle", IDLE)
    with client_for({"idle": folder}, inactivity_tick=0.1) as client:  # `with`: the timer runs
        sid = client.post("/v1/sessions", json={"program": "idle"}, headers=H).json()["session_id"]
        chunks: list[str] = []

        def follow() -> None:
            with client.stream("GET", f"/v1/sessions/{sid}/stream?turns=2", headers=H) as r:
                for chunk in r.iter_text():
                    chunks.append(chunk)

        follower = threading.Thread(target=follow)
        follower.start()
        wait_for(lambda: chunks, "the follower did not connect")
        follower.join(30)
        assert not follower.is_alive(), "the reminder and the good-bye did not come"
        said = [json.loads(line[6:])["data"]["text"] for line in "".join(chunks).splitlines()
                if line.startswith("data: ") and '"bot_message"' in line]
        assert said[0].startswith("Are you still there?") and said[1].endswith("Goodbye!")
        state = client.get(f"/v1/sessions/{sid}", headers=H).json()
        assert state["ended"] is True
        trace = client.get(f"/v1/sessions/{sid}/trace", headers=H).json()["events"]
        assert [e["data"]["action"] for e in trace if e["type"] == "inactivity"] == ["remind", "end"]


# ---- the preemptive strategy ---------------------------------------------------------------------

class GatedModel:
    """An LLM whose answer to "what do you sell?" waits until the test lets it go."""

    name = "gated"

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.calls = 0

    def complete(self, request) -> LLMResponse:
        last = [m.content for m in request.messages if m.role == "user"][-1:]
        if last == ["what do you sell?"] and not self.entered.is_set():
            self.entered.set()
            assert self.release.wait(30)
        self.calls += 1
        return LLMResponse(content=f"answer to {last}", usage=Usage(prompt_tokens=5, completion_tokens=3))


CHATTY = """
main:
  type: llm agent
  prompt: You answer questions about the shop.
"""


@pytest.mark.parametrize("strategy", ["serial", "preemptive"])
def test_a_newer_message_supersedes_the_turn_in_progress_only_when_preemptive(strategy, tmp_path):
    folder = write(tmp_path / "chat", CHATTY)
    program, _ = load_program(folder)
    model = GatedModel()
    app = create_app({"chat": program}, MemorySessionStore(), lambda _p: model,
                     ServerSettings(tokens={TOKEN: "alice"}, strategy=strategy))
    client = TestClient(app)
    sid = client.post("/v1/sessions", json={"program": "chat"}, headers=H).json()["session_id"]
    replies: dict[str, dict] = {}

    def send(text: str) -> None:
        replies[text] = client.post(f"/v1/sessions/{sid}/messages", json={"text": text}, headers=H).json()

    first = threading.Thread(target=send, args=("what do you sell?",))
    first.start()
    assert model.entered.wait(30)
    second = threading.Thread(target=send, args=("actually, when do you open?",))
    second.start()
    if strategy == "preemptive":  # the second request has arrived and told the running turn
        wait_for(lambda: app.state.running.get(sid) is not None and app.state.running[sid].is_set(),
                 "the newer message never reached the running turn")
    else:
        time.sleep(0.3)  # the second request has arrived and waits for the session
    model.release.set()
    first.join(30)
    second.join(30)
    history = [e["data"]["text"] for e in client.get(f"/v1/sessions/{sid}/trace", headers=H).json()["events"]
               if e["type"] == "user_message"]
    assert history == ["what do you sell?", "actually, when do you open?"]
    metrics = client.get("/metrics").text  # every turn, superseded or not, has ended
    assert 'frontdesk_turns_in_progress{program="chat"} 0.0' in metrics
    if strategy == "preemptive":
        assert 'frontdesk_turns_total{program="chat",status="preempted"} 1.0' in metrics
        assert replies["what do you sell?"]["preempted"] is True and replies["what do you sell?"]["messages"] == []
        assert not replies["actually, when do you open?"]["preempted"]
        assert texts(replies["actually, when do you open?"]) == ["answer to ['actually, when do you open?']"]
    else:
        assert not replies["what do you sell?"]["preempted"]
        assert texts(replies["what do you sell?"]) == ["answer to ['what do you sell?']"]
        assert texts(replies["actually, when do you open?"]) == ["answer to ['actually, when do you open?']"]


def test_an_unknown_strategy_is_refused():
    with pytest.raises(ValueError, match="unknown strategy"):
        ServerSettings(strategy="fastest")


# ---- a busy session, a store that is down, idle sessions -----------------------------------------

SLOW = """
main:
  type: flow agent
  steps:
    - label: top
    - user
    - call: pause
    - bot: "done"
    - next: top
"""
PAUSE = '''
import os
import time


def pause():
    """Takes a while; says when it started (in the file $PAUSE_STARTED names)."""
    open(os.environ["PAUSE_STARTED"], "a").close()
    time.sleep(1.5)
    return {"ok": True}
'''


def test_a_message_that_waits_too_long_for_its_session_gets_409_with_retry_after(tmp_path, monkeypatch):
    started = tmp_path / "started"
    monkeypatch.setenv("PAUSE_STARTED", str(started))
    folder = write(tmp_path / "slow", SLOW)
    (folder / "tools.py").write_text(PAUSE, encoding="utf-8")
    client = client_for({"slow": folder}, lock_timeout=0.2)
    sid = client.post("/v1/sessions", json={"program": "slow"}, headers=H).json()["session_id"]
    first = threading.Thread(target=client.post, args=(f"/v1/sessions/{sid}/messages",),
                             kwargs={"json": {"text": "one"}, "headers": H})
    first.start()
    wait_for(started.exists, "the first turn's tool never started")  # the first turn holds the session
    busy = client.post(f"/v1/sessions/{sid}/messages", json={"text": "two"}, headers=H)
    first.join(30)
    assert busy.status_code == 409 and busy.headers["retry-after"] == "1"
    assert "busy" in busy.json()["error"]


class FlakyStore(SqliteSessionStore):
    """A SQLite store that can be made to fail like a database that went away."""

    down = False

    def _check(self) -> None:
        if self.down:
            raise StoreError("database is unreachable (simulated outage)")

    def load(self, session_id):
        self._check()
        return super().load(session_id)

    def load_versioned(self, session_id):
        self._check()
        return super().load_versioned(session_id)

    def save_turn(self, *args, **kwargs):
        self._check()
        return super().save_turn(*args, **kwargs)


def test_a_store_outage_is_503_with_a_retry_hint_and_leaves_no_half_written_session(tmp_path):
    folder = write(tmp_path / "desk", versioned("v1"))
    store = FlakyStore(tmp_path / "s.sqlite3")
    client = client_for({"desk": folder}, store=store)
    sid = client.post("/v1/sessions", json={"program": "desk"}, headers=H).json()["session_id"]
    before = store.load_versioned(sid)
    events_before = store.events(sid)
    store.down = True
    for call in (lambda: client.post(f"/v1/sessions/{sid}/messages", json={"text": "hi"}, headers=H),
                 lambda: client.get(f"/v1/sessions/{sid}", headers=H),
                 lambda: client.post("/v1/sessions", json={"program": "desk"}, headers=H),
                 lambda: client.get("/ready")):
        answer = call()
        assert answer.status_code == 503 and answer.headers["retry-after"]
    assert client.get("/health").status_code == 200  # the process itself is fine
    store.down = False
    assert store.load_versioned(sid) == before and store.events(sid) == events_before
    again = client.post(f"/v1/sessions/{sid}/messages", json={"text": "hi"}, headers=H)
    assert again.status_code == 200 and texts(again.json()) == ["Goodbye from v1."]


def test_a_store_that_fails_while_saving_a_turn_keeps_the_previous_turn(tmp_path):
    folder = write(tmp_path / "desk", versioned("v1"))
    store = FlakyStore(tmp_path / "s.sqlite3")
    client = client_for({"desk": folder}, store=store)
    sid = client.post("/v1/sessions", json={"program": "desk"}, headers=H).json()["session_id"]
    before = store.load_versioned(sid)
    original = store.save_turn

    def failing_save(*args, **kwargs):
        raise StoreError("disk I/O error (simulated)")

    store.save_turn = failing_save
    answer = client.post(f"/v1/sessions/{sid}/messages", json={"text": "hi", "message_id": "m1"}, headers=H)
    assert answer.status_code == 503
    store.save_turn = original
    assert store.load_versioned(sid) == before
    retried = client.post(f"/v1/sessions/{sid}/messages", json={"text": "hi", "message_id": "m1"}, headers=H)
    assert retried.status_code == 200 and texts(retried.json()) == ["Goodbye from v1."]
    assert retried.json()["replayed"] is False  # the first attempt left nothing to replay


def test_a_save_that_finds_the_session_changed_is_409_and_writes_nothing(tmp_path):
    from frontdesk.store.base import ConflictError

    folder = write(tmp_path / "desk", versioned("v1"))
    store = FlakyStore(tmp_path / "s.sqlite3")
    client = client_for({"desk": folder}, store=store)
    sid = client.post("/v1/sessions", json={"program": "desk"}, headers=H).json()["session_id"]
    before = store.load_versioned(sid)

    def conflicting_save(*args, **kwargs):
        raise ConflictError("session is at version 9, not 1")

    store.save_turn = conflicting_save
    answer = client.post(f"/v1/sessions/{sid}/messages", json={"text": "hi"}, headers=H)
    assert answer.status_code == 409 and answer.headers["retry-after"] == "1"
    assert "changed" in answer.json()["error"]
    assert store.load_versioned(sid) == before


def test_idle_sessions_expire_on_the_servers_schedule(tmp_path):
    folder = write(tmp_path / "desk", versioned("v1"))
    store = MemorySessionStore()
    with client_for({"desk": folder}, store=store, expire_idle_after=0.5) as client:
        sid = client.post("/v1/sessions", json={"program": "desk"}, headers=H).json()["session_id"]
        deadline = time.time() + 20
        while store.load(sid) is not None and time.time() < deadline:
            time.sleep(0.2)
        assert store.load(sid) is None
        assert client.get(f"/v1/sessions/{sid}", headers=H).status_code == 404


def test_a_restarted_server_runs_the_inactivity_rules_of_the_sessions_it_finds(tmp_path):
    folder = write(tmp_path / "idle", IDLE)
    store = SqliteSessionStore(tmp_path / "s.sqlite3")
    before = client_for({"idle": folder}, store=store, inactivity_tick=0)  # a server that stopped
    sid = before.post("/v1/sessions", json={"program": "idle"}, headers=H).json()["session_id"]
    with client_for({"idle": folder}, store=SqliteSessionStore(tmp_path / "s.sqlite3"), inactivity_tick=0.1):
        deadline = time.time() + 20
        while store.load(sid)["status"] != "ended" and time.time() < deadline:
            time.sleep(0.2)
    actions = [e["data"]["action"] for e in store.events(sid) if e["type"] == "inactivity"]
    assert actions in (["remind", "end"], ["end"])  # the good-bye comes, whenever the new server looked


def test_a_huge_request_body_is_refused_before_it_is_read(tmp_path):
    folder = write(tmp_path / "desk", versioned("v1"))
    client = client_for({"desk": folder}, max_message_chars=100)
    sid = client.post("/v1/sessions", json={"program": "desk"}, headers=H).json()["session_id"]
    huge = json.dumps({"text": "x" * 50_000})
    declared = client.post(f"/v1/sessions/{sid}/messages", content=huge,
                           headers={**H, "Content-Type": "application/json"})
    assert declared.status_code == 413 and "larger than" in declared.json()["error"]

    def chunks():  # no Content-Length: counted as it arrives
        for _ in range(50):
            yield b"x" * 1000

    streamed = client.post(f"/v1/sessions/{sid}/messages", content=chunks(),
                           headers={**H, "Content-Type": "application/json"})
    assert streamed.status_code == 413
    ok = client.post(f"/v1/sessions/{sid}/messages", json={"text": "hi"}, headers=H)
    assert ok.status_code == 200 and texts(ok.json()) == ["Goodbye from v1."]


def test_a_follower_sees_the_turns_another_server_process_runs(tmp_path):
    # two servers on one store (as behind a load balancer): the page follows the session on one of
    # them, the next message goes to the other; its turn reaches the follower from the store's log
    folder = write(tmp_path / "desk", versioned("v1"))
    store_path = tmp_path / "s.sqlite3"
    followed = client_for({"desk": folder}, store=SqliteSessionStore(store_path), follow_poll=0.1)
    other = client_for({"desk": folder}, store=SqliteSessionStore(store_path))
    sid = followed.post("/v1/sessions", json={"program": "desk"}, headers=H).json()["session_id"]
    chunks: list[str] = []

    def follow() -> None:
        with followed.stream("GET", f"/v1/sessions/{sid}/stream?turns=2", headers=H) as r:
            for chunk in r.iter_text():
                chunks.append(chunk)

    follower = threading.Thread(target=follow)
    follower.start()
    wait_for(lambda: chunks, "the follower did not connect")
    assert texts(other.post(f"/v1/sessions/{sid}/messages", json={"text": "hi"}, headers=H).json()) == \
        ["Goodbye from v1."]
    wait_for(lambda: '"text": "hi"' in "".join(chunks), "the other process's turn never reached the follower")
    followed.post(f"/v1/sessions/{sid}/messages", json={"text": "again"}, headers=H)  # a local turn too
    follower.join(30)
    assert not follower.is_alive(), "the other process's turn never reached the follower"
    events = [json.loads(line[6:]) for line in "".join(chunks).splitlines() if line.startswith("data: ")]
    said = [e["data"]["text"] for e in events if e["type"] == "user_message"]
    assert said == ["hi", "again"]
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(set(seqs))  # each event once, in order
