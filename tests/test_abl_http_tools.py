"""HTTP tools of a `.tools.abl` library end to end: an ABL program is compiled, its flow calls tools bound
to a real local HTTP server (ThreadingHTTPServer on a free port), and the service's answer flows into
RESPOND; a templated JSON body reaches the service; a timeout and a 500 go to ON_ERROR (tool_timeout and
api_error), and the flow's ON_FAIL takes the failed call."""

from __future__ import annotations

import json
import textwrap
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from frontdesk.lang import load_program
from frontdesk.runtime.engine import Engine
from frontdesk.store.memory import MemorySessionStore

AGENT = """
AGENT: Order_Desk
GOAL: "Tell customers where their order is"

TOOLS:
  order_status(order_id: string) -> {state: string, eta: string}
  open_ticket(order_id: string, note: string) -> {ticket: string}
  slow_status(order_id: string) -> {state: string}
  broken_status(order_id: string) -> {state: string}

ON_ERROR:
  tool_timeout:
    RESPOND: "The order service is slow right now."
  api_error:
    RESPOND: "The order service answered with an error."

FLOW:
  start:
    RESPOND: "How can I help?"
    ON_INPUT:
      - IF: input matches /slow (\\d{4})/
        SET: order_id = match.1
        THEN: slow
      - IF: input matches /broken (\\d{4})/
        SET: order_id = match.1
        THEN: broken
      - IF: input matches /ticket for (\\d{4})/
        SET: order_id = match.1
        THEN: ticket
      - IF: input matches /order (\\d{4})/
        SET: order_id = match.1
        THEN: status
      - ELSE:
        RESPOND: "Tell me the order number."
        THEN: start

  status:
    CALL: order_status(order_id)
    ON_SUCCESS:
      RESPOND: "Order {{order_id}} is {{order_status.state}}, arriving {{order_status.eta}}."
      THEN: COMPLETE
    ON_FAIL:
      RESPOND: "No status."
      THEN: COMPLETE

  ticket:
    CALL: open_ticket(order_id, note = "where is it?")
    RESPOND: "Ticket {{open_ticket.ticket}} opened."
    THEN: COMPLETE

  slow:
    CALL: slow_status(order_id)
    ON_FAIL:
      RESPOND: "No status for now."
      THEN: COMPLETE
    RESPOND: "Slow says {{slow_status.state}}."
    THEN: COMPLETE

  broken:
    CALL: broken_status(order_id)
    ON_FAIL:
      RESPOND: "No status for now."
      THEN: COMPLETE
    RESPOND: "Broken says {{broken_status.state}}."
    THEN: COMPLETE
"""

LIBRARY = """
TOOLS:
  order_status(order_id: string) -> {state: string, eta: string}
    description: "Where an order is"
    method: GET
    url: "{{env.ORDER_API}}/orders/{order_id}"
    headers:
      Authorization: "Bearer {{env.ORDER_API_KEY}}"

  open_ticket(order_id: string, note: string) -> {ticket: string}
    description: "Open a support ticket"
    method: POST
    url: "{{env.ORDER_API}}/tickets"
    body_template: |
      {"order": "{{order_id}}", "note": "{{note}}", "source": "abl"}

  slow_status(order_id: string) -> {state: string}
    description: "A status service that takes its time"
    url: "{{env.ORDER_API}}/slow/{order_id}"
    timeout: 0.5

  broken_status(order_id: string) -> {state: string}
    description: "A status service that fails"
    url: "{{env.ORDER_API}}/broken/{order_id}"
"""

SECRET = "sk-test-0123456789"


class _Service(BaseHTTPRequestHandler):
    seen: ClassVar[list[dict]] = []

    def log_message(self, *args) -> None:  # keep the test output clean
        pass

    def _answer(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        try:
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (the timeout test)
            pass

    def do_GET(self) -> None:
        self.seen.append({"method": "GET", "path": self.path, "auth": self.headers.get("Authorization")})
        if self.path.startswith("/orders/"):
            self._answer(200, {"state": "in transit", "eta": "Friday"})
        elif self.path.startswith("/slow/"):
            time.sleep(2)
            self._answer(200, {"state": "late"})
        elif self.path.startswith("/broken/"):
            self._answer(500, {"error": "database down"})
        else:
            self._answer(404, {"error": "no such path"})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"null")
        self.seen.append({"method": "POST", "path": self.path, "body": body})
        self._answer(201, {"ticket": "T-" + str(body.get("order") if isinstance(body, dict) else "?")})


@pytest.fixture
def service(monkeypatch):
    _Service.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Service)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("ORDER_API", f"http://127.0.0.1:{httpd.server_address[1]}")
    monkeypatch.setenv("ORDER_API_KEY", SECRET)
    monkeypatch.setenv("FRONTDESK_ALLOW_ENV", "ORDER_API, ORDER_API_KEY")  # the operator grants them
    yield _Service.seen
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    (tmp_path / "desk.agent.abl").write_text(textwrap.dedent(AGENT).lstrip(), encoding="utf-8")
    (tmp_path / "orders.tools.abl").write_text(textwrap.dedent(LIBRARY).lstrip(), encoding="utf-8")
    program, diags = load_program(tmp_path)
    assert program is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    assert program.tools["order_status"].binding.kind == "http"
    return Engine(program, None, MemorySessionStore())


def _chat(engine: Engine, *lines: str):
    sid = engine.start(program_label="http").session_id
    said, events = [], []
    for line in lines:
        result = engine.send(sid, line)
        said += [m.text for m in result.messages]
        events += result.events
    return sid, said, events


def _results(events, tool: str) -> list:
    return [e.data for e in events if e.type == "tool_result" and e.data["tool"] == tool]


def test_the_services_answer_flows_into_respond(service, engine):
    sid, said, events = _chat(engine, "order 1234")
    assert said == ["Order 1234 is in transit, arriving Friday."]
    assert service == [{"method": "GET", "path": "/orders/1234", "auth": f"Bearer {SECRET}"}]
    assert _results(events, "order_status")[0]["status"] == "success"
    stored = json.dumps(engine.store.events(sid)) + json.dumps(engine.load_state(sid).model_dump(mode="json"))
    assert SECRET not in stored  # the credential reached the service, never the session or its trace


def test_a_templated_json_body_reaches_the_service(service, engine):
    _, said, _ = _chat(engine, "ticket for 1234")
    assert said == ["Ticket T-1234 opened."]
    assert service == [{"method": "POST", "path": "/tickets",
                        "body": {"order": "1234", "note": "where is it?", "source": "abl"}}]


def test_a_timeout_goes_to_on_error_and_the_flows_on_fail(service, engine):
    sid, said, events = _chat(engine, "slow 1234")
    assert said == ["No status for now."]  # the step's ON_FAIL answers; ON_ERROR (tool_timeout) retried only
    result = _results(events, "slow_status")[0]
    assert result["status"] == "error" and "did not answer within 0.5 seconds" in result["error"]
    assert result["duration_ms"] < 1900  # the binding's own timeout, not the service's 2 s
    assert engine.load_state(sid).system["tool_failures"] == 1


def test_a_500_goes_to_on_error_as_an_api_error(service, engine):
    _, said, events = _chat(engine, "broken 1234")
    assert said == ["No status for now."]  # the step's ON_FAIL answers; ON_ERROR (api_error) retried only
    result = _results(events, "broken_status")[0]
    assert result["status"] == "error" and "answered 500" in result["error"]
    assert not any("Broken says" in s for s in said)


def test_header_names_with_dashes_are_kept(tmp_path: Path):
    library = textwrap.dedent(LIBRARY).lstrip().replace(
        '      Authorization: "Bearer {{env.ORDER_API_KEY}}"',
        '      Authorization: "Bearer {{env.ORDER_API_KEY}}"\n      X-Api-Key: "{{env.ORDER_API_KEY}}"\n'
        "      X-Trace-Id: desk-7")
    (tmp_path / "desk.agent.abl").write_text(textwrap.dedent(AGENT).lstrip(), encoding="utf-8")
    (tmp_path / "orders.tools.abl").write_text(library, encoding="utf-8")
    program, diags = load_program(tmp_path)
    assert program is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    assert program.tools["order_status"].binding.headers == {
        "Authorization": "Bearer {{env.ORDER_API_KEY}}", "X-Api-Key": "{{env.ORDER_API_KEY}}", "X-Trace-Id": "desk-7"}
