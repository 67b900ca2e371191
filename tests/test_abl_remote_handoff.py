"""A HANDOFF to an agent of another service (ABL 3.10 `remote:`): `check` accepts it, the front end
compiles it to a remote agent whose turns are requests to an endpoint tool, and the conversation runs
against a real local HTTP server: the first request carries the CONTEXT (values passed, summary,
history) and the auth header from the environment, later ones the user's messages; the service ending
hands back values the ON_RETURN map reads, and a service that fails is told to the user and gives the
conversation back."""

from __future__ import annotations

import json
import textwrap
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from frontdesk.ir.models import RemoteAgent
from frontdesk.lang import load_program
from frontdesk.runtime.engine import Engine
from frontdesk.store.memory import MemorySessionStore

SECRET = "porting-secret-8812"

AGENT = """
AGENT: Telco_Support
GOAL: "Help customers with their mobile line"

GATHER:
  phone_number:
    prompt: "What is the phone number of the line?"
    type: string
    required: true

FLOW:
  ask_number:
    GATHER: [phone_number]
    THEN: porting
  porting:
    HANDOFF: Number_Porting_Service
    THEN: wrap_up
  wrap_up:
    RESPOND: "Back with support: porting {{porting_id}} for {{phone_number}}."
    THEN: COMPLETE

HANDOFF:
  - TO: Number_Porting_Service
    WHEN: user wants to move their number to another carrier
    remote:
      service_url: "{{env.PORTING_URL}}/handoff"
      auth_header: "Bearer {{service_token}}"
    CONTEXT:
      pass: [phone_number]
      summary: "Porting request for {{phone_number}}"
      history: full
    RETURN: true
    ON_RETURN:
      map:
        porting_id: Number_Porting_Service.porting_id
"""


class _Porting(BaseHTTPRequestHandler):
    seen: ClassVar[list] = []
    fail: ClassVar[bool] = False

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append({"auth": self.headers.get("Authorization"), "path": self.path, "body": body})
        if self.fail:
            payload, status = {"error": "porting backend down"}, 503
        elif body.get("context"):
            values = body["context"]["values"]
            payload, status = {"messages": [f"Porting desk: moving {values.get('phone_number')}. To which carrier?"],
                               "ended": False}, 200
        else:
            payload, status = {"messages": [{"text": f"Porting to {body['message']} is booked."}], "ended": True,
                               "values": {"porting_id": "P-77"}}, 200
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def porting(monkeypatch):
    _Porting.seen, _Porting.fail = [], False
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Porting)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    monkeypatch.setenv("PORTING_URL", f"http://127.0.0.1:{httpd.server_address[1]}")
    monkeypatch.setenv("SERVICE_TOKEN", SECRET)
    monkeypatch.setenv("FRONTDESK_ALLOW_ENV", "PORTING_URL, SERVICE_TOKEN")
    yield _Porting
    httpd.shutdown()
    httpd.server_close()


def _program(tmp_path: Path, text: str = AGENT):
    (tmp_path / "support.agent.abl").write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return load_program(tmp_path)


def test_a_remote_handoff_is_accepted_and_compiled(tmp_path, porting):
    program, diags = _program(tmp_path)
    assert program is not None, [d.format() for d in diags]
    assert [d.format() for d in diags if d.severity.value != "info"] == []  # no ABL018, no FD047 on the map
    remote = program.agents["Number_Porting_Service"]
    assert isinstance(remote, RemoteAgent)
    endpoint = program.tools[remote.endpoint].binding
    assert endpoint.kind == "http" and endpoint.method == "POST"
    assert endpoint.headers == {"Authorization": "Bearer {{env.SERVICE_TOKEN}}"}  # never a conversation value


def test_the_conversation_runs_through_the_remote_service(tmp_path, porting):
    program, _ = _program(tmp_path)
    engine = Engine(program, None, MemorySessionStore())
    sid = engine.start().session_id
    said = [m.text for m in engine.send(sid, "555-1234").messages]
    assert said == ["Porting desk: moving 555-1234. To which carrier?"]
    result = engine.send(sid, "Acme Mobile")
    assert [(m.agent, m.text) for m in result.messages] == [
        ("Number_Porting_Service", "Porting to Acme Mobile is booked."),
        ("Telco_Support", "Back with support: porting P-77 for 555-1234.")]  # ON_RETURN mapped what came back
    first, second = porting.seen
    assert first["auth"] == second["auth"] == f"Bearer {SECRET}"
    assert first["path"] == "/handoff"
    context = first["body"]["context"]
    assert context["from"] == "Telco_Support" and context["values"] == {"phone_number": "555-1234"}
    assert context["summary"] == "Porting request for 555-1234"
    assert [m["content"] for m in context["history"]] == ["What is the phone number of the line?"]
    assert second["body"]["message"] == "Acme Mobile" and "context" not in second["body"]
    assert first["body"]["conversation"] == second["body"]["conversation"]
    stored = json.dumps(engine.store.events(sid)) + json.dumps(engine.load_state(sid).model_dump(mode="json"))
    assert SECRET not in stored


def test_a_failing_service_is_told_and_gives_the_conversation_back(tmp_path, porting):
    porting.fail = True
    program, _ = _program(tmp_path)
    engine = Engine(program, None, MemorySessionStore())
    sid = engine.start().session_id
    result = engine.send(sid, "555-1234")
    said = [m.text for m in result.messages]
    assert said[0] == "Sorry, Number Porting Service cannot be reached right now. Please try again later."
    assert said[1].startswith("Back with support")  # RETURN: true: the flow that handed over goes on
    errors = [e.data["message"] for e in result.events if e.type == "error"]
    assert any("503" in m for m in errors), errors


def test_a_credential_written_into_auth_header_is_an_error_at_its_line(tmp_path):
    program, diags = _program(tmp_path, AGENT.replace("Bearer {{service_token}}", "Bearer abc123"))
    errors = [d for d in diags if d.is_error]
    assert [(e.code, e.span.line) for e in errors] == [("ABL026", 24)]
    assert "validation error" not in errors[0].message and "credential" in errors[0].message


def test_a_remote_agent_needs_a_service_url(tmp_path):
    program, diags = _program(tmp_path, AGENT.replace('service_url: "{{env.PORTING_URL}}/handoff"',
                                                      'url: "http://x"'))
    assert [(d.code, d.span.line) for d in diags if d.is_error][0] == ("ABL010", 24)


def test_an_http_tool_with_a_literal_credential_says_what_is_wrong_and_where(tmp_path):
    (tmp_path / "desk.agent.abl").write_text(textwrap.dedent("""
        AGENT: Desk
        GOAL: "Look up orders"
        TOOLS:
          order_status(order_id: string) -> {state: string}
        FLOW:
          start:
            CALL: order_status(order_id = "1")
            THEN: COMPLETE
        """).lstrip(), encoding="utf-8")
    (tmp_path / "orders.tools.abl").write_text(textwrap.dedent("""
        TOOLS:
          order_status(order_id: string) -> {state: string}
            url: "https://orders.example.com/{order_id}"
            headers:
              Authorization: "Bearer abc123"
        """).lstrip(), encoding="utf-8")
    program, diags = load_program(tmp_path)
    errors = [d for d in diags if d.is_error]
    assert len(errors) == 1, [d.format() for d in diags]
    assert "validation error" not in errors[0].message
    assert "Authorization holds a credential" in errors[0].message and "{env.API_TOKEN}" in errors[0].message
    assert errors[0].span.file.endswith("orders.tools.abl") and errors[0].span.line == 5  # the headers entry
