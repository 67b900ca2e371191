"""Text a session cannot keep (a lone surrogate, a NUL) is refused before its turn, on every store, in the HTTP
API, `frontdesk chat` and the engine, and nothing of it is committed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from fastapi.testclient import TestClient

from frontdesk.lang import load_program
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.usertext import UnkeepableText, text_problem
from frontdesk.server.app import create_app
from frontdesk.server.auth import ServerSettings
from frontdesk.store.memory import MemorySessionStore

from live_stores import STORE_KINDS, fresh_store

STEPS = """
main:
  type: flow agent
  steps:
    - bot: "Hello from the desk."
    - user
    - bot: "Got one."
    - user
    - bot: "Got two."
"""
HEADERS = {"Authorization": "Bearer text-token", "Content-Type": "application/json"}
# JSON bodies as a client sends them: the escapes reach the server as a lone surrogate and a NUL
UNKEEPABLE = {"surrogate": r"a\ud800b", "nul": r"a\u0000b"}


@pytest.fixture()
def program(tmp_path):
    (tmp_path / "agents.yml").write_text(textwrap.dedent(STEPS), encoding="utf-8")
    loaded, diags = load_program(tmp_path)
    assert loaded is not None, diags
    return loaded


@pytest.fixture(params=STORE_KINDS)
def store(request, tmp_path):
    with fresh_store(request.param, tmp_path, "usertext") as opened:
        yield opened


def client_for(program, store) -> TestClient:
    settings = ServerSettings(tokens={"text-token": "alice"})
    return TestClient(create_app({"steps": program}, store, None, settings), raise_server_exceptions=False)


def post(client: TestClient, path: str, raw_json: str):
    return client.post(path, content=raw_json.encode("utf-8"), headers=HEADERS)


@pytest.mark.parametrize("kind", sorted(UNKEEPABLE))
def test_a_message_a_session_cannot_keep_is_refused_before_its_turn(program, store, kind):
    client = client_for(program, store)
    sid = client.post("/v1/sessions", json={"program": "steps"}, headers=HEADERS).json()["session_id"]
    body = '{"text": "%s", "message_id": "s1"}' % UNKEEPABLE[kind]
    for query in ("", "?stream=true"):
        refused = post(client, f"/v1/sessions/{sid}/messages{query}", body)
        assert refused.status_code == 422, refused.text
        assert refused.headers["content-type"].startswith("application/json")
        [problem] = refused.json()["detail"]
        assert problem["where"] == "body.text"
        assert ("UTF-8" if kind == "surrogate" else "NUL") in problem["problem"]
    # nothing was committed: no turn, and the trace is readable and holds no message
    assert client.get(f"/v1/sessions/{sid}", headers=HEADERS).json()["turn"] == 0
    trace = client.get(f"/v1/sessions/{sid}/trace", headers=HEADERS)
    assert trace.status_code == 200 and "user_message" not in [e["type"] for e in trace.json()["events"]]
    # the same message id with text that can be kept runs the turn (nothing was remembered for it)
    retried = client.post(f"/v1/sessions/{sid}/messages", json={"text": "fine", "message_id": "s1"}, headers=HEADERS)
    assert retried.status_code == 200, retried.text
    assert retried.json()["replayed"] is False and retried.json()["turn"] == 1
    assert [m["text"] for m in retried.json()["messages"]] == ["Got one."]
    streamed = client.post(f"/v1/sessions/{sid}/messages?stream=true", json={"text": "more"}, headers=HEADERS)
    assert streamed.status_code == 200 and "event: result" in streamed.text and "Got two." in streamed.text
    trace = client.get(f"/v1/sessions/{sid}/trace", headers=HEADERS)
    assert trace.status_code == 200
    assert [e["data"]["text"] for e in trace.json()["events"] if e["type"] == "user_message"] == ["fine", "more"]


@pytest.mark.parametrize("field", ["user_id", "channel", "program"])
@pytest.mark.parametrize("kind", sorted(UNKEEPABLE))
def test_a_session_is_not_created_with_text_it_cannot_keep(program, field, kind):
    store = MemorySessionStore()
    client = client_for(program, store)
    fields = {"program": "steps", field: "x"}
    body = json.dumps(fields).replace('"x"', '"%s"' % UNKEEPABLE[kind])
    if field == "program":
        body = '{"program": "%s"}' % UNKEEPABLE[kind]
    refused = post(client, "/v1/sessions", body)
    assert refused.status_code == 422, refused.text
    assert refused.json()["detail"][0]["where"] == f"body.{field}"
    assert store.list_sessions() == []
    bad_id = post(client, "/v1/sessions/nope/messages", '{"text": "hi", "message_id": "%s"}' % UNKEEPABLE[kind])
    assert bad_id.status_code == 422 and bad_id.json()["detail"][0]["where"] == "body.message_id"


def test_the_engine_refuses_text_it_cannot_keep_and_stores_nothing(program):
    store = MemorySessionStore()
    engine = Engine(program, None, store)
    with pytest.raises(UnkeepableText, match="the user id"):
        engine.start(user_id="ann\x00")
    assert store.list_sessions() == []
    sid = engine.start().session_id
    for text in ("a\ud800b", "a\x00b"):
        with pytest.raises(UnkeepableText, match="the message"):
            engine.send(sid, text)
    assert store.load(sid)["turn"] == 0 and "user_message" not in [e["type"] for e in store.events(sid)]
    assert [m.text for m in engine.send(sid, "fine").messages] == ["Got one."]


def test_text_problem_names_what_cannot_be_kept():
    assert text_problem("plain, ünïcode 😀\ttabs\nand lines") is None
    assert "character 2" in text_problem("a\udcffb") and "UTF-8" in text_problem("a\udcffb")
    assert "NUL" in text_problem("ab\x00")


@pytest.mark.parametrize("encoding", [None, "utf-8:strict"])
def test_chat_does_not_send_a_line_it_cannot_keep(tmp_path, encoding):
    (tmp_path / "agents.yml").write_text(textwrap.dedent(STEPS), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FRONTDESK_LLM", "OPENAI_", "PYTHONIOENCODING"))}
    if encoding:
        env["PYTHONIOENCODING"] = encoding  # stdin that raises on bytes that are not UTF-8
    result = subprocess.run([sys.executable, "-m", "frontdesk.cli", "chat", str(tmp_path), "--llm", "none", "--no-embeddings",
                             "--store", "memory"], input=b"a\xffb\nc\x00d\nhi\n", capture_output=True,
                            cwd=tmp_path, env=env, timeout=120)
    out, err = result.stdout.decode("utf-8", "replace"), result.stderr.decode("utf-8", "replace")
    assert result.returncode == 0, err
    assert "Traceback" not in err
    assert err.count("that line was not sent") == 2 and "NUL" in err and "UTF-8" in err
    assert "you> hi" in out and "Got one." in out and "Got two." not in out  # only "hi" was sent
