"""The HTTP API (frontdesk.server): every endpoint and error in-process, and one real `frontdesk serve`."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from frontdesk.lang import load_program
from frontdesk.server.app import create_app
from frontdesk.server.auth import ServerSettings, tokens_from_env, user_for_token
from frontdesk.store.memory import MemorySessionStore
from frontdesk.store.sqlite import SqliteSessionStore

ROOT = Path(__file__).resolve().parents[1]
BOOKSTORE = ROOT / "examples" / "bookstore"

STEPS = """
main:
  type: flow agent
  steps:
    - bot: "Hello from the desk."
    - user
    - bot: "Got one."
    - user
    - bot: "Got two."
    - user
    - bot: "Got three."
"""
ALICE, BOB = "alice-token", "bob-token"


@pytest.fixture()
def steps(tmp_path):
    (tmp_path / "agents.yml").write_text(textwrap.dedent(STEPS), encoding="utf-8")
    program, diags = load_program(tmp_path)
    assert program is not None, diags
    return program


def make_client(steps, store=None, **limits) -> TestClient:
    settings = ServerSettings(tokens={ALICE: "alice", BOB: "bob"}, **limits)
    return TestClient(create_app({"steps": steps}, store or MemorySessionStore(), None, settings))


def auth(token: str = ALICE) -> dict:
    return {"Authorization": f"Bearer {token}"}


def texts(body: dict) -> list[str]:
    return [m["text"] for m in body["messages"]]


def test_health_ready_and_openapi_need_no_token(steps):
    client = make_client(steps)
    assert client.get("/health").json() == {"status": "ok"}
    ready = client.get("/ready")
    assert ready.status_code == 200 and ready.json()["programs"] == ["steps"]
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/v1/programs", "/v1/sessions", "/v1/sessions/{session_id}/messages",
            "/v1/sessions/{session_id}", "/v1/sessions/{session_id}/trace"} <= set(paths)


def test_every_api_endpoint_needs_a_known_bearer_token(steps):
    client = make_client(steps)
    for method, path in [("get", "/v1/programs"), ("post", "/v1/sessions"), ("get", "/v1/sessions/x"),
                         ("get", "/v1/sessions/x/trace"), ("post", "/v1/sessions/x/messages")]:
        bare = getattr(client, method)(path)
        assert bare.status_code == 401, (path, bare.text)
        assert bare.headers["www-authenticate"].startswith("Bearer")
        wrong = getattr(client, method)(path, headers=auth("nope"))
        assert wrong.status_code == 401 and wrong.json()["error"] == "unknown token"


def test_programs_lists_name_language_agents_and_version(steps):
    body = make_client(steps).get("/v1/programs", headers=auth()).json()
    assert body == [{"name": "steps", "language": "adl", "entry": "main", "agents": ["main"],
                     "version": body[0]["version"], "loaded_versions": [body[0]["version"]]}]
    assert len(body[0]["version"]) == 16


def test_a_conversation_state_and_trace(steps):
    client = make_client(steps)
    created = client.post("/v1/sessions", json={"program": "steps"}, headers=auth())
    assert created.status_code == 201
    sid = created.json()["session_id"]
    assert texts(created.json()) == ["Hello from the desk."]
    assert "session_started" in [e["type"] for e in created.json()["events"]]
    turn = client.post(f"/v1/sessions/{sid}/messages", json={"text": "hi"}, headers=auth()).json()
    assert texts(turn) == ["Got one."] and turn["turn"] == 1 and turn["replayed"] is False
    assert [e["data"]["text"] for e in turn["events"] if e["type"] == "user_message"] == ["hi"]
    state = client.get(f"/v1/sessions/{sid}", headers=auth()).json()
    assert state["status"] == "waiting" and state["turn"] == 1 and state["active_agent"] == "main"
    assert state["program"] == "steps" and state["program_version"] == client.get(
        "/v1/programs", headers=auth()).json()[0]["version"]
    trace = client.get(f"/v1/sessions/{sid}/trace", headers=auth()).json()["events"]
    assert [e["seq"] for e in trace] == sorted({e["seq"] for e in trace})
    assert [e["data"]["text"] for e in trace if e["type"] == "bot_message"] == ["Hello from the desk.", "Got one."]


def test_a_retried_message_id_returns_the_first_result_without_running_again(steps, tmp_path):
    client = make_client(steps, SqliteSessionStore(str(tmp_path / "s.sqlite3")))
    sid = client.post("/v1/sessions", json={"program": "steps"}, headers=auth()).json()["session_id"]
    first = client.post(f"/v1/sessions/{sid}/messages", json={"text": "one", "message_id": "m-1"}, headers=auth()).json()
    again = client.post(f"/v1/sessions/{sid}/messages", json={"text": "one", "message_id": "m-1"}, headers=auth()).json()
    assert texts(first) == texts(again) == ["Got one."]
    assert again["replayed"] is True and again["turn"] == first["turn"] == 1
    assert [e["seq"] for e in again["events"]] == [e["seq"] for e in first["events"]]
    assert client.get(f"/v1/sessions/{sid}", headers=auth()).json()["turn"] == 1  # no second turn ran
    nxt = client.post(f"/v1/sessions/{sid}/messages", json={"text": "two", "message_id": "m-2"}, headers=auth()).json()
    assert texts(nxt) == ["Got two."] and nxt["turn"] == 2
    trace = client.get(f"/v1/sessions/{sid}/trace", headers=auth()).json()["events"]
    assert [e["data"]["text"] for e in trace if e["type"] == "user_message"] == ["one", "two"]


def test_remembered_message_ids_are_bounded(steps):
    client = make_client(steps, recent_message_ids=1)
    sid = client.post("/v1/sessions", json={"program": "steps"}, headers=auth()).json()["session_id"]
    client.post(f"/v1/sessions/{sid}/messages", json={"text": "a", "message_id": "a"}, headers=auth())
    client.post(f"/v1/sessions/{sid}/messages", json={"text": "b", "message_id": "b"}, headers=auth())
    # "a" was forgotten: sending it again runs a new turn
    third = client.post(f"/v1/sessions/{sid}/messages", json={"text": "a", "message_id": "a"}, headers=auth()).json()
    assert third["replayed"] is False and texts(third) == ["Got three."]


def test_two_users_are_isolated(steps):
    client = make_client(steps)
    sid = client.post("/v1/sessions", json={"program": "steps"}, headers=auth(ALICE)).json()["session_id"]
    for method, path, body in [("get", f"/v1/sessions/{sid}", None), ("get", f"/v1/sessions/{sid}/trace", None),
                               ("post", f"/v1/sessions/{sid}/messages", {"text": "mine now"})]:
        r = getattr(client, method)(path, headers=auth(BOB), **({"json": body} if body else {}))
        assert r.status_code == 403, r.text
        assert r.json()["error"] == "this session belongs to another user"
    trace = client.get(f"/v1/sessions/{sid}/trace", headers=auth(ALICE)).json()["events"]
    assert "user_message" not in [e["type"] for e in trace]  # bob's message never ran
    bobs = client.post("/v1/sessions", json={"program": "steps"}, headers=auth(BOB)).json()["session_id"]
    assert client.get(f"/v1/sessions/{bobs}", headers=auth(BOB)).status_code == 200
    assert client.get(f"/v1/sessions/{bobs}", headers=auth(ALICE)).status_code == 403


def test_bad_requests_get_clear_4xx(steps):
    client = make_client(steps, max_message_chars=20)
    sid = client.post("/v1/sessions", json={"program": "steps"}, headers=auth()).json()["session_id"]
    unknown = client.post("/v1/sessions/nope/messages", json={"text": "hi"}, headers=auth())
    assert unknown.status_code == 404 and unknown.json()["error"] == "no such session"
    assert client.get("/v1/sessions/nope", headers=auth()).status_code == 404
    assert client.get("/v1/sessions/nope/trace", headers=auth()).status_code == 404
    program = client.post("/v1/sessions", json={"program": "other"}, headers=auth())
    assert program.status_code == 404 and program.json()["detail"]["loaded"] == ["steps"]
    broken = client.post(f"/v1/sessions/{sid}/messages", content=b"{not json", headers={
        **auth(), "Content-Type": "application/json"})
    assert broken.status_code == 422 and broken.json()["error"] == "invalid request"
    missing = client.post(f"/v1/sessions/{sid}/messages", json={"txt": "hi"}, headers=auth())
    assert missing.status_code == 422
    assert {p["where"] for p in missing.json()["detail"]} >= {"body.text"}
    assert client.post(f"/v1/sessions/{sid}/messages", json={"text": 5}, headers=auth()).status_code == 422
    assert client.post(f"/v1/sessions/{sid}/messages", json={"text": "  "}, headers=auth()).status_code == 422
    big = client.post(f"/v1/sessions/{sid}/messages", json={"text": "x" * 21}, headers=auth())
    assert big.status_code == 413 and big.json()["detail"]["limit"] == 20
    assert client.get(f"/v1/sessions/{sid}", headers=auth()).json()["turn"] == 0  # nothing ran


def test_session_length_limit(steps):
    client = make_client(steps, max_turns=1)
    sid = client.post("/v1/sessions", json={"program": "steps"}, headers=auth()).json()["session_id"]
    assert client.post(f"/v1/sessions/{sid}/messages", json={"text": "a"}, headers=auth()).status_code == 200
    over = client.post(f"/v1/sessions/{sid}/messages", json={"text": "b"}, headers=auth())
    assert over.status_code == 409 and over.json()["detail"]["limit"] == 1


SLOW = """
main:
  type: flow agent
  steps:
    - bot: "Ready."
    - user
    - call: pause
    - bot: "First done."
    - user
    - call: pause
    - bot: "Second done."
    - user
"""
PAUSE = '''
import time

def pause():
    """Wait a little, as a slow backend would."""
    time.sleep(0.3)
    return [{"status": "success", "msg": "paused"}]
'''


def test_messages_to_one_session_never_run_concurrently(tmp_path):
    (tmp_path / "agents.yml").write_text(textwrap.dedent(SLOW), encoding="utf-8")
    (tmp_path / "tools.py").write_text(PAUSE, encoding="utf-8")
    program, diags = load_program(tmp_path)
    assert program is not None, diags
    client = make_client(program)
    sid = client.post("/v1/sessions", json={"program": "steps"}, headers=auth()).json()["session_id"]
    results: list[dict] = []

    def send(text: str) -> None:
        results.append(client.post(f"/v1/sessions/{sid}/messages", json={"text": text}, headers=auth()).json())

    threads = [threading.Thread(target=send, args=(t,)) for t in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert sorted(r["turn"] for r in results) == [1, 2]
    assert sorted(m for r in results for m in texts(r)) == ["First done.", "Second done."]
    trace = client.get(f"/v1/sessions/{sid}/trace", headers=auth()).json()["events"]
    assert sorted(e["data"]["text"] for e in trace if e["type"] == "user_message") == ["a", "b"]
    seqs = [e["seq"] for e in trace]
    assert len(seqs) == len(set(seqs))
    started = [e["ts"] for e in trace if e["type"] == "execution.started"]
    ended = [e["ts"] for e in trace if e["type"] == "execution.completed"]
    assert started[2] >= ended[1]  # turn 2 began after turn 1 ended (turn 0 is the opening)


def read_sse(text: str) -> list[tuple[str, dict]]:
    out = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line and not line.startswith(":"))
        if "event" in lines:  # blocks of only `: comment` lines keep the connection alive
            out.append((lines["event"], json.loads(lines["data"])))
    return out


def test_streamed_turn_sends_events_then_the_result(steps):
    client = make_client(steps)
    sid = client.post("/v1/sessions", json={"program": "steps"}, headers=auth()).json()["session_id"]
    r = client.post(f"/v1/sessions/{sid}/messages?stream=true", json={"text": "hi", "message_id": "s1"},
                    headers=auth())
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = read_sse(r.text)
    kinds = [k for k, _ in events]
    assert kinds[-1] == "result" and "user_message" in kinds and "bot_message" in kinds
    assert kinds.index("user_message") < kinds.index("bot_message")
    assert texts(events[-1][1]) == ["Got one."]
    streamed = [d["seq"] for k, d in events[:-1]]
    assert streamed == [e["seq"] for e in events[-1][1]["events"]]
    again = read_sse(client.post(f"/v1/sessions/{sid}/messages?stream=true", json={"text": "hi", "message_id": "s1"},
                                 headers=auth()).text)
    assert again[-1][1]["replayed"] is True and texts(again[-1][1]) == ["Got one."]


def follow(get_stream, path: str, headers: dict) -> tuple[threading.Event, list[str], threading.Thread]:
    """Follow a session's stream in a thread; the event is set once the server has registered it."""
    ready, chunks = threading.Event(), []

    def run() -> None:
        with get_stream("GET", path, headers=headers) as r:
            chunks.append(r.headers["content-type"])
            for text in r.iter_text():
                chunks.append(text)
                ready.set()
        ready.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(20), "the stream did not open"
    return ready, chunks, thread


def test_following_a_session_streams_the_events_of_later_turns(steps):
    client = make_client(steps)
    sid = client.post("/v1/sessions", json={"program": "steps"}, headers=auth()).json()["session_id"]
    assert client.get(f"/v1/sessions/{sid}/stream", headers=auth(BOB)).status_code == 403
    assert client.get(f"/v1/sessions/{sid}/stream?turns=0", headers=auth()).status_code == 422
    _, chunks, thread = follow(client.stream, f"/v1/sessions/{sid}/stream?turns=2", auth())
    client.post(f"/v1/sessions/{sid}/messages", json={"text": "one"}, headers=auth())
    client.post(f"/v1/sessions/{sid}/messages", json={"text": "two"}, headers=auth())
    thread.join(20)
    assert not thread.is_alive()
    assert chunks[0].startswith("text/event-stream")
    events = read_sse("".join(chunks[1:]))
    said = [d["data"]["text"] for k, d in events if k in ("user_message", "bot_message")]
    assert said == ["one", "Got one.", "two", "Got two."]
    assert [k for k, _ in events].count("execution.completed") == 2


def test_tokens_from_env_are_users_without_revealing_the_token():
    tokens = tokens_from_env(" a1 , b2,,")
    assert tokens == {"a1": user_for_token("a1"), "b2": user_for_token("b2")}
    assert "a1" not in tokens["a1"] and tokens["a1"] != tokens["b2"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_real_frontdesk_serve_process(tmp_path):
    port = free_port()
    env = {**os.environ, "FRONTDESK_API_TOKENS": "tok-1,tok-2", "FRONTDESK_STORE": str(tmp_path / "s.sqlite3")}
    proc = subprocess.Popen([sys.executable, "-m", "frontdesk.cli", "serve", str(BOOKSTORE), "--llm", "none", "--no-embeddings",
                             "--host", "127.0.0.1", "--port", str(port)], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            try:
                if httpx.get(f"{base}/ready", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None, proc.stdout.read().decode()
            assert time.time() < deadline, "server did not become ready"
            time.sleep(0.2)
        h = {"Authorization": "Bearer tok-1"}
        with httpx.Client(base_url=base, headers=h, timeout=30) as http:
            programs = http.get("/v1/programs").json()
            assert [p["name"] for p in programs] == ["bookstore"] and "triage" in programs[0]["agents"]
            created = http.post("/v1/sessions", json={"program": "bookstore"})
            assert created.status_code == 201
            assert "Hi, I'm your bookstore assistant. How can I help you?" in texts(created.json())
            sid = created.json()["session_id"]
            with http.stream("POST", f"/v1/sessions/{sid}/messages?stream=true",
                             json={"text": "Who are you?", "message_id": "q1"}) as r:
                assert r.headers["content-type"].startswith("text/event-stream")
                body = "".join(r.iter_text())
            events = read_sse(body)
            assert events[-1][0] == "result" and "user_message" in [k for k, _ in events]
            assert http.get(f"/v1/sessions/{sid}").json()["turn"] == 1
            _, chunks, thread = follow(http.stream, f"/v1/sessions/{sid}/stream?turns=1", h)
            http.post(f"/v1/sessions/{sid}/messages", json={"text": "Thanks, bye"})
            thread.join(30)
            followed = read_sse("".join(chunks[1:]))
            assert [d["data"]["text"] for k, d in followed if k == "user_message"] == ["Thanks, bye"]
            assert followed[-1][0] == "execution.completed"
            assert http.get(f"/v1/sessions/{sid}", headers={"Authorization": "Bearer tok-2"}).status_code == 403
            assert http.get("/v1/programs", headers={"Authorization": ""}).status_code == 401
    finally:
        proc.terminate()
        proc.wait(10)


def test_tokens_from_a_file_name_their_users(tmp_path):
    from frontdesk.server.auth import tokens_from_file

    path = tmp_path / "tokens"
    path.write_text("# the team\nalice=tok-a\n\ntok-b\n", encoding="utf-8")
    assert tokens_from_file(path) == {"tok-a": "alice", "tok-b": user_for_token("tok-b")}
    path.write_text("alice=tok a\n", encoding="utf-8")
    with pytest.raises(ValueError, match=":1: a line is a token"):
        tokens_from_file(path)
