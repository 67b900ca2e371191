"""The server's observability: /metrics counts what the engine's events report, JSON logs, and spans."""

from __future__ import annotations

import io
import json
import logging
import threading
from collections import Counter
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from frontdesk.lang import load_program
from frontdesk.runtime.engine import Engine
from frontdesk.server.app import create_app
from frontdesk.server.auth import ServerSettings
from frontdesk.server.observability import LOGGER_NAME, Observability, configure_json_logging, redact
from frontdesk.store.memory import MemorySessionStore
from frontdesk.testing import load_conversation, scripted_model

trace_sdk = pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import SpanKind, StatusCode  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BOOKSTORE = ROOT / "examples" / "bookstore"
TOKEN = "alice-secret-token-123"
# The happy path orders a book; the other conversation's order fails (out of stock).
SCRIPTS = {"bookstore": "happy_path.yml", "bookstore_errors": "tool_error.yml"}


@pytest.fixture(autouse=True)
def bookstore_db(tmp_path, monkeypatch):
    """The bookstore's tools keep their stock in a SQLite file: a fresh one for every test."""
    monkeypatch.setenv("FRONTDESK_EXAMPLE_DB_DIR", str(tmp_path / "data"))


@pytest.fixture(scope="module")
def bookstore():
    program, diags = load_program(BOOKSTORE)
    assert program is not None, diags
    return program


@pytest.fixture()
def json_logs():
    """The `frontdesk.server` logger's JSON lines, as text; the logger is put back as it was afterwards."""
    log = logging.getLogger(LOGGER_NAME)
    saved = log.level, log.propagate, list(log.handlers)
    stream = io.StringIO()
    configure_json_logging("INFO", stream)
    yield stream
    log.handlers[:] = saved[2]
    log.setLevel(saved[0])
    log.propagate = saved[1]


def spans_and_exporter():
    exporter = InMemorySpanExporter()
    provider = trace_sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def metric_values(text: str) -> dict[tuple[str, frozenset], float]:
    """(sample name, its labels) -> value, from the Prometheus text format."""
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def total(values: dict, name: str, **labels: str) -> float:
    """The sum of the samples of `name` whose labels include `labels`."""
    want = set(labels.items())
    return sum(v for (n, got), v in values.items() if n == name and want <= got)


def run_both_conversations(client: TestClient) -> dict[str, dict]:
    """Each program's conversation over HTTP: program -> {session_id, events (of every turn)}."""
    runs = {}
    headers = {"Authorization": f"Bearer {TOKEN}"}
    for program, script in SCRIPTS.items():
        spec = load_conversation(BOOKSTORE / "conversations" / script)
        created = client.post("/v1/sessions", json={"program": program}, headers=headers)
        assert created.status_code == 201, created.text
        session_id = created.json()["session_id"]
        events = list(created.json()["events"])
        for line in spec["user"]:
            sent = client.post(f"/v1/sessions/{session_id}/messages", json={"text": line}, headers=headers)
            assert sent.status_code == 200, sent.text
            events += sent.json()["events"]
        runs[program] = {"session_id": session_id, "events": events, "user": spec["user"]}
    return runs


@pytest.fixture()
def served(bookstore, json_logs):
    """Both conversations run through create_app with an Observability attached as the brief describes."""
    scripts = iter(scripted_model(load_conversation(BOOKSTORE / "conversations" / s)) for s in SCRIPTS.values())
    settings = ServerSettings(tokens={TOKEN: "alice"})
    provider, exporter = spans_and_exporter()
    obs = Observability(tracer_provider=provider)
    # create_app subscribes it to every engine and installs its middleware and /metrics
    app = create_app({name: bookstore for name in SCRIPTS}, MemorySessionStore(), lambda _p: next(scripts), settings,
                     observability=obs)

    @app.get("/boom")
    async def boom():
        raise RuntimeError("kaboom")

    client = TestClient(app, raise_server_exceptions=False)
    runs = run_both_conversations(client)
    return {"client": client, "runs": runs, "exporter": exporter, "logs": json_logs, "obs": obs}


def completed(events: list[dict]) -> list[dict]:
    return [e for e in events if e["type"] == "execution.completed"]


def test_metrics_count_what_the_turn_events_report(served):
    client, runs = served["client"], served["runs"]
    assert client.get("/v1/programs").status_code == 401  # no token
    assert client.get("/no/such/path").status_code == 404
    assert client.get("/boom").status_code == 500
    scraped = client.get("/metrics")  # no token needed
    assert scraped.status_code == 200 and scraped.headers["content-type"].startswith("text/plain")
    values = metric_values(scraped.text)

    for program, run in runs.items():
        done = completed(run["events"])
        assert len(done) == len(run["user"]) + 1  # the session's start is a turn too
        for status, count in Counter(e["data"]["status"] for e in done).items():
            assert total(values, "frontdesk_turns_total", program=program, status=status) == count
        assert total(values, "frontdesk_turns_total", program=program) == len(done)
        assert total(values, "frontdesk_turn_duration_seconds_count", program=program) == len(done)
        assert total(values, "frontdesk_sessions_started_total", program=program) == 1
        assert total(values, "frontdesk_turns_in_progress", program=program) == 0

    every = [e for run in runs.values() for e in run["events"]]
    done = completed(every)
    llm_calls = sum(e["data"]["llm_calls"] for e in done)
    assert llm_calls > 0
    assert total(values, "frontdesk_llm_calls_total") == llm_calls
    assert total(values, "frontdesk_llm_calls_total", outcome="ok", model="scripted") == llm_calls
    by_purpose = Counter(e["data"]["purpose"] for e in every if e["type"] == "llm_call")
    for purpose, count in by_purpose.items():
        assert total(values, "frontdesk_llm_calls_total", purpose=purpose) == count
    for kind in ("prompt", "completion"):
        reported = sum(e["data"][f"{kind}_tokens"] for e in done)
        assert reported > 0
        assert total(values, "frontdesk_llm_tokens_total", kind=kind) == reported

    results = [e["data"] for e in every if e["type"] == "tool_result"]
    outcomes = Counter((r["tool"], "error" if r["status"] == "error" or r["error"] else "ok") for r in results)
    assert outcomes[("place_order", "error")] == 1 and outcomes[("place_order", "ok")] == 1
    for (tool, outcome), count in outcomes.items():
        assert total(values, "frontdesk_tool_calls_total", tool=tool, outcome=outcome) == count
        assert total(values, "frontdesk_tool_call_duration_seconds_count", tool=tool) == sum(
            1 for r in results if r["tool"] == tool)
    assert total(values, "frontdesk_tool_calls_total") == len(results)

    messages_route = "/v1/sessions/{session_id}/messages"
    sent = sum(len(run["user"]) for run in runs.values())
    assert total(values, "frontdesk_http_requests_total", method="POST", route=messages_route, status="200") == sent
    assert total(values, "frontdesk_http_request_duration_seconds_count", route=messages_route) == sent
    assert total(values, "frontdesk_http_requests_total", method="POST", route="/v1/sessions", status="201") == 2
    assert total(values, "frontdesk_http_requests_total", route="/v1/programs", status="401") == 1
    assert total(values, "frontdesk_http_requests_total", route="unmatched", status="404") == 1
    assert total(values, "frontdesk_http_requests_total", route="/boom", status="500") == 1
    assert total(values, "frontdesk_errors_total", kind="http") == 1


def test_json_logs_carry_session_and_latency_and_no_secrets(served):
    runs, text = served["runs"], served["logs"].getvalue()
    lines = [json.loads(line) for line in text.splitlines()]
    assert lines and all({"ts", "level", "msg"} <= set(line) for line in lines)
    turns = [line for line in lines if line["msg"] == "turn completed"]
    for program, run in runs.items():
        mine = [line for line in turns if line["session_id"] == run["session_id"]]
        assert [line["turn"] for line in mine] == list(range(len(run["user"]) + 1))
        assert all(line["program"] == program and isinstance(line["latency_ms"], (int, float)) for line in mine)
        done = completed(run["events"])
        assert [line["prompt_tokens"] for line in mine] == [e["data"]["prompt_tokens"] for e in done]
        assert [line["status"] for line in mine] == [e["data"]["status"] for e in done]
    requests = [line for line in lines if line["msg"] == "http request"]
    assert len(requests) == sum(len(run["user"]) + 1 for run in runs.values())
    assert all({"method", "path", "route", "status", "latency_ms"} <= set(line) for line in requests)
    # no token, no Authorization header, and no message text (FRONTDESK_LOG_CONTENT is off)
    assert TOKEN not in text and "Bearer" not in text and "authorization" not in text.lower()
    said = [line for run in runs.values() for line in run["user"]]
    said += [e["data"]["text"] for run in runs.values() for e in run["events"] if e["type"] == "bot_message"]
    assert not [words for words in said if words in text]


def test_log_fields_are_redacted(json_logs):
    log = logging.getLogger(LOGGER_NAME)
    log.info("calling with Bearer abc.def-123 and sk-0123456789abcdef",
             extra={"authorization": "Bearer abc.def-123", "headers": {"Authorization": "x", "accept": "json"},
                    "prompt_tokens": 7})
    line = json.loads(json_logs.getvalue().splitlines()[-1])
    assert "abc.def-123" not in json.dumps(line) and "sk-0123456789abcdef" not in line["msg"]
    assert line["authorization"] == "[redacted]"
    assert line["headers"] == {"Authorization": "[redacted]", "accept": "json"}
    assert line["prompt_tokens"] == 7 and line["level"] == "info" and line["logger"] == LOGGER_NAME
    assert redact({"api_key": "k", "nested": ["Bearer zzz"]}) == {"api_key": "[redacted]",
                                                                  "nested": ["Bearer [redacted]"]}


def test_spans_one_trace_per_turn_with_genai_children(served):
    runs, spans = served["runs"], served["exporter"].get_finished_spans()
    turn_spans = [s for s in spans if s.name == "frontdesk.turn"]
    by_id = {s.context.span_id: s for s in turn_spans}
    assert len(turn_spans) == sum(len(run["user"]) + 1 for run in runs.values())
    assert len({s.context.trace_id for s in turn_spans}) == len(turn_spans)  # a trace per turn
    children = [s for s in spans if s.name != "frontdesk.turn"]
    assert children
    for child in children:  # every LLM and tool span hangs under a turn span, in its trace
        assert child.parent is not None and child.parent.span_id in by_id, child.name
        assert child.context.trace_id == child.parent.trace_id == by_id[child.parent.span_id].context.trace_id
        assert child.start_time <= child.end_time

    for program, run in runs.items():
        mine = sorted((s for s in turn_spans if s.attributes["session.id"] == run["session_id"]),
                      key=lambda s: s.attributes["frontdesk.turn"])
        done = completed(run["events"])
        assert [s.attributes["frontdesk.turn"] for s in mine] == [e["turn"] for e in done]
        for span, end in zip(mine, done, strict=True):
            assert span.attributes["frontdesk.program"] == program
            assert span.attributes["frontdesk.status"] == end["data"]["status"]
            under = [c for c in children if c.parent.span_id == span.context.span_id]
            llm = [c for c in under if c.attributes["gen_ai.operation.name"] == "chat"]
            assert len(llm) == end["data"]["llm_calls"]
            assert sum(c.attributes["gen_ai.usage.input_tokens"] for c in llm) == end["data"]["prompt_tokens"]
            assert sum(c.attributes["gen_ai.usage.output_tokens"] for c in llm) == end["data"]["completion_tokens"]
            calls = [e for e in run["events"] if e["turn"] == end["turn"] and e["type"] == "llm_call"]
            in_order = sorted(llm, key=lambda c: c.start_time)
            assert [(c.attributes["frontdesk.llm.purpose"], c.attributes["gen_ai.usage.input_tokens"])
                    for c in in_order] == [(e["data"]["purpose"], e["data"]["prompt_tokens"]) for e in calls]
            for c in llm:
                assert c.name == "chat scripted" and c.kind == SpanKind.CLIENT
                assert c.attributes["gen_ai.request.model"] == "scripted"
                assert c.attributes["gen_ai.provider.name"] == "scripted"
            tools = [c for c in under if c.attributes["gen_ai.operation.name"] == "execute_tool"]
            ran = [e["data"]["tool"] for e in run["events"] if e["turn"] == end["turn"] and e["type"] == "tool_result"]
            assert sorted(c.attributes["gen_ai.tool.name"] for c in tools) == sorted(ran)
            assert all(c.name == f"execute_tool {c.attributes['gen_ai.tool.name']}" for c in tools)

    failed = [s for s in children if s.status.status_code == StatusCode.ERROR]
    assert [s.name for s in failed] == ["execute_tool place_order"]
    assert failed[0].attributes["error.type"] == "tool_error"
    first = next(s for s in turn_spans if s.attributes["session.id"] == runs["bookstore"]["session_id"]
                 and s.attributes["frontdesk.turn"] == 1)
    routed = [e for e in first.events if e.name == "frontdesk.route_decided"]
    assert [e.attributes["frontdesk.agent_chosen"] for e in routed] == ["book_recommendation"]


STEPS = """
main:
  type: flow agent
  steps:
    - bot: "Hello from the desk."
    - user
    - bot: "Got one."
    - user
"""


def test_a_streamed_turn_is_counted_once_it_is_done(tmp_path, json_logs):
    (tmp_path / "agents.yml").write_text(STEPS, encoding="utf-8")
    program, diags = load_program(tmp_path)
    assert program is not None, diags
    obs = Observability()
    app = create_app({"steps": program}, MemorySessionStore(), None, ServerSettings(tokens={TOKEN: "alice"}),
                     observability=obs)
    client = TestClient(app)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    session_id = client.post("/v1/sessions", json={"program": "steps"}, headers=headers).json()["session_id"]
    with client.stream("POST", f"/v1/sessions/{session_id}/messages?stream=true", json={"text": "one"},
                       headers=headers) as streamed:
        body = "".join(streamed.iter_text())
    assert "event: result" in body
    values = metric_values(client.get("/metrics").text)
    assert total(values, "frontdesk_turns_total", program="steps") == 2
    assert total(values, "frontdesk_http_requests_total", route="/v1/sessions/{session_id}/messages",
                 status="200") == 1
    assert total(values, "frontdesk_llm_calls_total") == 0
    logged = [json.loads(line) for line in json_logs.getvalue().splitlines()]
    assert [line["session_id"] for line in logged if line["msg"] == "turn completed"] == [session_id] * 2


def test_concurrent_sessions_keep_their_turns_apart(bookstore):
    """Two engines run their conversations at once in two threads: every turn's spans and counts stay its own."""
    provider, exporter = spans_and_exporter()
    obs = Observability(tracer_provider=provider)
    engines, specs = {}, {}
    for name, script in SCRIPTS.items():
        specs[name] = load_conversation(BOOKSTORE / "conversations" / script)
        engines[name] = Engine(bookstore, scripted_model(specs[name]), MemorySessionStore())
        engines[name].subscribe(lambda _e: threading.Event().wait(0.001))  # let the two turns interleave
    obs.attach(engines)
    sessions, failures = {}, []
    barrier = threading.Barrier(len(engines))

    def converse(name: str) -> None:
        try:
            barrier.wait(10)
            sessions[name] = engines[name].start().session_id
            for line in specs[name]["user"]:
                engines[name].send(sessions[name], line)
        except Exception as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    threads = [threading.Thread(target=converse, args=(name,)) for name in engines]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not failures and len(sessions) == 2

    values = metric_values(obs.metrics_text().decode())
    spans = exporter.get_finished_spans()
    turns = {s.context.span_id: s for s in spans if s.name == "frontdesk.turn"}
    for name, session_id in sessions.items():
        assert total(values, "frontdesk_turns_total", program=name) == len(specs[name]["user"]) + 1
        mine = {i for i, s in turns.items() if s.attributes["session.id"] == session_id}
        assert all(turns[i].attributes["frontdesk.program"] == name for i in mine)
        tool_outcomes = {(s.attributes["gen_ai.tool.name"], s.status.status_code) for s in spans
                         if s.parent is not None and s.parent.span_id in mine and "gen_ai.tool.name" in s.attributes}
        broken = ("place_order", StatusCode.ERROR) in tool_outcomes
        assert broken == (name == "bookstore_errors")
        assert total(values, "frontdesk_turns_in_progress", program=name) == 0
    assert not obs._turns  # every turn's state was dropped at its execution.completed


def test_without_tracing_and_with_content_logged(bookstore, json_logs):
    obs = Observability(log_content=True)  # no tracer provider: no OpenTelemetry at all
    spec = load_conversation(BOOKSTORE / "conversations" / "happy_path.yml")
    engine = Engine(bookstore, scripted_model(spec), MemorySessionStore())
    engine.subscribe(obs.subscriber)
    session_id = engine.start(program_label="shop").session_id
    engine.send(session_id, spec["user"][0])
    turns = [json.loads(line) for line in json_logs.getvalue().splitlines()]
    turns = [line for line in turns if line["msg"] == "turn completed"]
    assert [line["program"] for line in turns] == ["shop", "shop"]  # learned from session_started
    assert turns[1]["user_text"] == spec["user"][0] and "science fiction" in turns[1]["bot_texts"][0]
    values = metric_values(obs.metrics_text().decode())
    assert total(values, "frontdesk_llm_calls_total", purpose="route") == 1


def test_from_env():
    assert Observability.from_env({}).tracer is None
    assert Observability.from_env({"FRONTDESK_OTEL_EXPORTER": "bogus"}).tracer is None
    assert Observability.from_env({"FRONTDESK_LOG_CONTENT": "1"}).log_content
    assert not Observability.from_env({"FRONTDESK_LOG_CONTENT": "0"}).log_content
    console = Observability.from_env({"FRONTDESK_OTEL_EXPORTER": "console", "OTEL_SERVICE_NAME": "desk"})
    assert console.tracer is not None
    assert console.tracer_provider.resource.attributes["service.name"] == "desk"
    console.shutdown()
    # two instances never share a registry
    a, b = Observability(), Observability()
    a.turns.labels("p", "active").inc()
    assert total(metric_values(a.metrics_text().decode()), "frontdesk_turns_total") == 1
    assert total(metric_values(b.metrics_text().decode()), "frontdesk_turns_total") == 0
