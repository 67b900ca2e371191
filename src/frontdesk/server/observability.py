"""Prometheus metrics, JSON logs and OpenTelemetry spans for the HTTP server, read from the engine's events."""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from frontdesk.runtime.events import Event

LOGGER_NAME = "frontdesk.server"
logger = logging.getLogger(LOGGER_NAME)

TRUE_WORDS = ("1", "true", "yes", "on")
MAX_OPEN_TURNS = 10_000  # turns whose execution.completed never came (a crashed turn) are dropped beyond this
MAX_KNOWN_SESSIONS = 10_000  # session id -> program, learned from session_started
UNKNOWN = "unknown"
QUIET_ROUTES = ("/metrics", "/health", "/ready")  # polled by scrapers and probes: logged at DEBUG
# the data fields of routing, condition and agent events that go onto the turn span's events
DECISION_FIELDS = ("by", "target", "condition", "result", "status", "reason", "node", "choice", "step",
                   "guardrail", "fired", "constraint", "passed")

TURN_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120)
TOOL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
HTTP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


# ---- redaction and JSON logs ---------------------------------------------------------------------

SECRET_KEYS = frozenset({
    "authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api_key", "apikey",
    "api-key", "token", "access_token", "refresh_token", "id_token", "bearer", "password", "secret",
    "client_secret",
})
SECRET_PATTERNS = (
    re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+"),
    re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"),
)
REDACTED = "[redacted]"


def scrub(text: str) -> str:
    """`text` with bearer tokens and API-key-looking strings replaced."""
    for pattern in SECRET_PATTERNS:
        text = pattern.sub(lambda m: f"{m.group(1)} {REDACTED}" if m.groups() else REDACTED, text)
    return text


def redact(value: Any, key: str = "") -> Any:
    """`value` with secrets removed: whole values under secret-sounding keys, token patterns in text."""
    if key.lower() in SECRET_KEYS:
        return REDACTED
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, Mapping):
        return {str(k): redact(v, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    return value


# What every LogRecord carries; anything else on a record came from `extra=` and is logged as a field.
_RECORD_ATTRS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, msg and the record's `extra=` fields, secrets redacted."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": scrub(record.getMessage()),
        }
        for key, value in vars(record).items():
            if key not in _RECORD_ATTRS and not key.startswith("_"):
                line[key] = redact(value, key)
        if record.exc_info:
            line["exc"] = scrub(self.formatException(record.exc_info))
        return json.dumps(line, ensure_ascii=False, default=str)


def configure_json_logging(level: int | str | None = None, stream: Any = None) -> logging.Handler:
    """Send the `frontdesk.server` logger's records, as JSON lines, to `stream` (stderr by default).

    `level` defaults to FRONTDESK_LOG_LEVEL or INFO. Calling it again replaces the handler it added."""
    level = level if level is not None else os.environ.get("FRONTDESK_LOG_LEVEL", "INFO")
    for old in [h for h in logger.handlers if getattr(h, "_frontdesk_json", False)]:
        logger.removeHandler(old)
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter())
    handler._frontdesk_json = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(level.upper() if isinstance(level, str) else level)
    logger.propagate = False  # the root logger (uvicorn's) would print each line a second time
    return handler


# ---- tracing (OpenTelemetry, imported lazily) ----------------------------------------------------


def tracer_provider_from_env(environ: Mapping[str, str] | None = None) -> Any | None:
    """An SDK TracerProvider exporting as FRONTDESK_OTEL_EXPORTER says (`otlp` or `console`), or None:
    not asked for, or the packages it needs are not installed (a warning is logged)."""
    env = os.environ if environ is None else environ
    kind = env.get("FRONTDESK_OTEL_EXPORTER", "").strip().lower()
    if kind in ("", "none", "off", "0"):
        return None
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor
    except ImportError:
        logger.warning("tracing is off: FRONTDESK_OTEL_EXPORTER is set but opentelemetry-sdk is not installed",
                       extra={"exporter": kind})
        return None
    if kind == "console":
        processor = SimpleSpanProcessor(ConsoleSpanExporter())
    elif kind == "otlp":
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:
            logger.warning("tracing is off: FRONTDESK_OTEL_EXPORTER=otlp needs "
                           "opentelemetry-exporter-otlp-proto-http", extra={"exporter": kind})
            return None
        processor = BatchSpanProcessor(OTLPSpanExporter())  # OTEL_EXPORTER_OTLP_ENDPOINT and friends
    else:
        logger.warning("tracing is off: unknown FRONTDESK_OTEL_EXPORTER (use otlp or console)",
                       extra={"exporter": kind})
        return None
    provider = TracerProvider(resource=Resource.create({"service.name": env.get("OTEL_SERVICE_NAME", "frontdesk")}))
    provider.add_span_processor(processor)
    return provider


def _ns(seconds: float) -> int:
    return int(seconds * 1_000_000_000)


def _provider_name(provider: str | None) -> str:
    """gen_ai.provider.name from an LLM's name: "openai:gpt-4o" -> "openai"."""
    return (provider or UNKNOWN).split(":", 1)[0]


# ---- per-turn state ------------------------------------------------------------------------------


@dataclass
class _Turn:
    """What one running turn has seen so far; touched only by the thread that runs the turn."""

    session_id: str | None
    program: str
    turn: int
    first_ts: float
    clock: float  # time.perf_counter() at the turn's first event: the measured latency starts here
    last_ts: float
    agent: str | None = None
    started: bool = False  # execution.started seen
    span: Any = None
    tools: dict[str, list[float]] = field(default_factory=dict)  # tool name -> ts of calls not yet returned
    tool_calls: int = 0
    errors: int = 0
    user_text: str | None = None
    bot_texts: list[str] = field(default_factory=list)


def _current_session() -> str | None:
    """The session whose turn runs in this thread (the engine holds it while the turn runs)."""
    from frontdesk.runtime.engine import held_session

    return held_session()


# ---- the observer --------------------------------------------------------------------------------


class Observability:
    """Metrics in a registry of its own, JSON logs on `frontdesk.server`, and spans when a tracer
    provider is given or configured; fed by the engines' events and an HTTP middleware.

        obs = Observability.from_env()        # FRONTDESK_OTEL_EXPORTER, FRONTDESK_LOG_CONTENT
        engine.subscribe(obs.subscriber)      # every engine (or obs.attach(name -> engine))
        obs.install(app)                      # before the app starts: HTTP metrics and logs, GET /metrics

    Events reach the subscriber in the worker thread that runs the turn, after the fact and with their
    own `ts`; what a turn needs is kept per (session, turn) and dropped at its `execution.completed`.
    OpenTelemetry is imported only when there is a tracer provider."""

    def __init__(self, tracer_provider: Any | None = None, registry: CollectorRegistry | None = None,
                 log_content: bool = False, owns_provider: bool = False) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.log_content = log_content
        self.tracer_provider = tracer_provider
        self._owns_provider = owns_provider
        self.tracer = tracer_provider.get_tracer("frontdesk.server") if tracer_provider is not None else None
        self._lock = threading.Lock()
        self._turns: OrderedDict[tuple[str, int], _Turn] = OrderedDict()
        self._programs: OrderedDict[str, str] = OrderedDict()  # session id -> program
        self._make_metrics()

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Observability:
        """FRONTDESK_OTEL_EXPORTER (otlp | console) turns tracing on; FRONTDESK_LOG_CONTENT=1 logs message texts."""
        env = os.environ if environ is None else environ
        provider = tracer_provider_from_env(env)
        return cls(tracer_provider=provider, owns_provider=provider is not None,
                   log_content=env.get("FRONTDESK_LOG_CONTENT", "").strip().lower() in TRUE_WORDS)

    def shutdown(self) -> None:
        """Flush and stop the tracer provider `from_env` made (one given by the caller is left alone)."""
        if self._owns_provider and self.tracer_provider is not None:
            self.tracer_provider.shutdown()

    def _make_metrics(self) -> None:
        r = self.registry
        self.turns = Counter("frontdesk_turns_total", "Turns completed", ("program", "status"), registry=r)
        self.turn_seconds = Histogram("frontdesk_turn_duration_seconds", "Time a turn took, measured",
                                      ("program",), buckets=TURN_BUCKETS, registry=r)
        self.turns_running = Gauge("frontdesk_turns_in_progress", "Turns running now", ("program",), registry=r)
        self.sessions = Counter("frontdesk_sessions_started_total", "Sessions started", ("program",), registry=r)
        self.llm_calls = Counter("frontdesk_llm_calls_total", "Model calls", ("purpose", "model", "outcome"),
                                 registry=r)
        self.llm_tokens = Counter("frontdesk_llm_tokens_total", "Model tokens, by kind (prompt or completion)",
                                  ("kind", "model"), registry=r)
        self.tool_calls = Counter("frontdesk_tool_calls_total", "Tool calls", ("tool", "outcome"), registry=r)
        self.tool_seconds = Histogram("frontdesk_tool_call_duration_seconds", "Time a tool call took",
                                      ("tool",), buckets=TOOL_BUCKETS, registry=r)
        self.errors = Counter("frontdesk_errors_total", "Errors: `error` events by where they happened, "
                              "and HTTP requests that failed unhandled", ("kind",), registry=r)
        self.http_requests = Counter("frontdesk_http_requests_total", "HTTP requests", ("method", "route", "status"),
                                     registry=r)
        self.http_seconds = Histogram("frontdesk_http_request_duration_seconds", "Time an HTTP request took",
                                      ("method", "route", "status"), buckets=HTTP_BUCKETS, registry=r)

    def metrics_text(self) -> bytes:
        """The registry in the Prometheus text format."""
        return generate_latest(self.registry)

    # ---- engine events -----------------------------------------------------------------------

    def attach(self, engines: Mapping[str, Any]) -> None:
        """Subscribe to each engine of `engines` (program name -> Engine), its events labelled with its name."""
        for name, engine in engines.items():
            engine.subscribe(self.subscriber_for(name))

    def subscriber_for(self, program: str) -> Callable[[Event], None]:
        """A subscriber that labels the events it gets with `program`."""
        return partial(self._on_event, program=program)

    def subscriber(self, event: Event) -> None:
        """Subscriber for any engine: the program is the one the session started with (its session_started
        event, seen by this process), else "unknown"."""
        self._on_event(event, program=None)

    def _on_event(self, event: Event, program: str | None) -> None:
        session_id = _current_session()
        if event.type == "session_started":
            program = program or str(event.data.get("program") or "") or None
            if session_id and program:
                self._remember_program(session_id, program)
        state = self._turn_for(event, session_id, program)
        handler = self._HANDLERS.get(event.type)
        try:
            if handler is not None:
                handler(self, state, event)
        finally:
            state.last_ts = self._ts(event)
            if event.type == "execution.completed":  # the turn is over, whatever became of its handler
                with self._lock:
                    self._turns.pop(self._key(session_id, event.turn), None)

    @staticmethod
    def _key(session_id: str | None, turn: int) -> tuple[str, int]:
        # Without a session id the thread names the turn: one thread runs one turn at a time.
        return (session_id or f"thread-{threading.get_ident()}", turn)

    @staticmethod
    def _ts(event: Event) -> float:
        return event.ts or time.time()

    def _remember_program(self, session_id: str, program: str) -> None:
        with self._lock:
            self._programs[session_id] = program
            self._programs.move_to_end(session_id)
            while len(self._programs) > MAX_KNOWN_SESSIONS:
                self._programs.popitem(last=False)

    def _turn_for(self, event: Event, session_id: str | None, program: str | None) -> _Turn:
        key = self._key(session_id, event.turn)
        abandoned: list[_Turn] = []
        with self._lock:
            state = self._turns.get(key)
            # a turn's first events on a key whose turn already ran: that earlier attempt died mid-way
            if state is not None and state.started and event.type in ("session_started", "user_message"):
                abandoned.append(self._turns.pop(key))
                state = None
            if state is None:
                if program is None and session_id:
                    program = self._programs.get(session_id)
                ts = self._ts(event)
                state = _Turn(session_id, program or UNKNOWN, event.turn, ts, time.perf_counter(), ts)
                self._turns[key] = state
                while len(self._turns) > MAX_OPEN_TURNS:
                    abandoned.append(self._turns.popitem(last=False)[1])
        for old in abandoned:
            self._abandon(old)
        return state

    def _abandon(self, state: _Turn) -> None:
        if state.started:
            self.turns_running.labels(state.program).dec()
        if state.span is not None:
            from opentelemetry.trace import Status, StatusCode

            state.span.set_status(Status(StatusCode.ERROR, "the turn did not complete"))
            state.span.set_attribute("error.type", "turn_incomplete")
            state.span.end(end_time=_ns(state.last_ts))

    # one method per event type that counts for something; the others only move the turn's clock

    def _on_user_message(self, state: _Turn, event: Event) -> None:
        state.user_text = str(event.data.get("text", ""))

    def _on_bot_message(self, state: _Turn, event: Event) -> None:
        state.bot_texts.append(str(event.data.get("text", "")))

    def _on_session_started(self, state: _Turn, event: Event) -> None:
        self.sessions.labels(state.program).inc()

    def _on_execution_started(self, state: _Turn, event: Event) -> None:
        state.started = True
        state.agent = event.data.get("agent") or event.agent
        self.turns_running.labels(state.program).inc()
        if self.tracer is None:
            return
        attributes = {"frontdesk.program": state.program, "frontdesk.turn": state.turn,
                      "frontdesk.agent": state.agent or ""}
        if state.session_id:
            attributes["session.id"] = state.session_id
        state.span = self.tracer.start_span("frontdesk.turn", start_time=_ns(state.first_ts), attributes=attributes)

    def _on_execution_completed(self, state: _Turn, event: Event) -> None:
        data = event.data
        status = str(data.get("status") or UNKNOWN)
        seconds = time.perf_counter() - state.clock
        self.turns.labels(state.program, status).inc()
        self.turn_seconds.labels(state.program).observe(seconds)
        if state.started:
            self.turns_running.labels(state.program).dec()
        counts = {k: int(data.get(k) or 0) for k in ("messages", "llm_calls", "prompt_tokens", "completion_tokens")}
        if state.span is not None:
            state.span.set_attributes({"frontdesk.status": status, "frontdesk.agent.final": event.agent or "",
                                       "frontdesk.tool_calls": state.tool_calls, "frontdesk.errors": state.errors,
                                       "gen_ai.usage.input_tokens": counts["prompt_tokens"],
                                       "gen_ai.usage.output_tokens": counts["completion_tokens"],
                                       **{f"frontdesk.{k}": v for k, v in counts.items()
                                          if k in ("messages", "llm_calls")}})
            state.span.end(end_time=_ns(max(self._ts(event), state.first_ts)))
        fields = {"session_id": state.session_id, "program": state.program, "turn": state.turn,
                  "agent": state.agent, "final_agent": event.agent, "status": status,
                  "latency_ms": round(seconds * 1000, 1), "tool_calls": state.tool_calls,
                  "errors": state.errors, **counts}
        if self.log_content:
            fields["user_text"] = state.user_text
            fields["bot_texts"] = state.bot_texts
        logger.info("turn completed", extra=fields)

    def _on_llm_call(self, state: _Turn, event: Event) -> None:
        data = event.data
        model = str(data.get("model") or UNKNOWN)
        failed = bool(data.get("error"))
        self.llm_calls.labels(str(data.get("purpose") or UNKNOWN), model, "error" if failed else "ok").inc()
        prompt, completion = int(data.get("prompt_tokens") or 0), int(data.get("completion_tokens") or 0)
        if prompt:
            self.llm_tokens.labels("prompt", model).inc(prompt)
        if completion:
            self.llm_tokens.labels("completion", model).inc(completion)
        if state.span is None:
            return
        end = self._ts(event)
        duration = data.get("duration_ms")
        # the event comes when the call returned; without its duration the call began after the event before it
        start = end - float(duration) / 1000 if duration is not None else state.last_ts
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": _provider_name(data.get("provider")),
            "gen_ai.system": _provider_name(data.get("provider")),
            "gen_ai.agent.name": event.agent or "",
            "frontdesk.llm.purpose": str(data.get("purpose") or UNKNOWN),
        }
        if data.get("model"):
            attributes["gen_ai.request.model"] = attributes["gen_ai.response.model"] = model
        if not failed:
            attributes["gen_ai.usage.input_tokens"] = prompt
            attributes["gen_ai.usage.output_tokens"] = completion
        name = f"chat {data['model']}" if data.get("model") else "chat"
        self._child_span(state, name, start, end, attributes, client=True,
                         error=("LLMError", scrub(str(data["error"]))[:300]) if failed else None)

    def _on_tool_call(self, state: _Turn, event: Event) -> None:
        state.tools.setdefault(str(event.data.get("tool")), []).append(self._ts(event))

    def _on_tool_result(self, state: _Turn, event: Event) -> None:
        data = event.data
        tool = str(data.get("tool") or UNKNOWN)
        failed = data.get("status") == "error" or bool(data.get("error"))
        duration = data.get("duration_ms")
        state.tool_calls += 1
        self.tool_calls.labels(tool, "error" if failed else "ok").inc()
        if duration is not None:
            self.tool_seconds.labels(tool).observe(float(duration) / 1000)
        pending = state.tools.get(tool)
        started = pending.pop() if pending else None
        if state.span is None:
            return
        if started is None:
            started = self._ts(event) - float(duration or 0) / 1000
        end = started + float(duration) / 1000 if duration is not None else self._ts(event)
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool,
                      "gen_ai.tool.type": "function", "gen_ai.agent.name": event.agent or "",
                      "frontdesk.tool.status": str(data.get("status") or UNKNOWN)}
        if "attempt" in data:
            attributes["frontdesk.tool.attempt"] = int(data["attempt"])
        self._child_span(state, f"execute_tool {tool}", started, end, attributes,
                         error=("tool_error", scrub(str(data.get("error") or "the tool reported an error"))[:300])
                         if failed else None)

    def _on_error(self, state: _Turn, event: Event) -> None:
        data = event.data
        kind = str(data.get("kind") or str(data.get("where") or UNKNOWN).split(" ", 1)[0]).lower()
        state.errors += 1
        self.errors.labels(kind).inc()
        logger.warning("turn error", extra={"session_id": state.session_id, "program": state.program,
                                            "turn": state.turn, "agent": event.agent, "kind": kind,
                                            "where": data.get("where"), "error": str(data.get("message") or "")[:500]})
        self._span_event(state, event, {"error.type": kind, "frontdesk.where": str(data.get("where") or "")})

    def _on_decision(self, state: _Turn, event: Event) -> None:
        """Routing and conditions become events on the turn span: who handled the message and why."""
        data = event.data
        attributes: dict[str, Any] = {"frontdesk.agent": event.agent or ""}
        if event.type == "route_decided":
            attributes["frontdesk.agent_chosen"] = str(data.get("agent") or "none")
        for key in DECISION_FIELDS:
            value = data.get(key)
            if isinstance(value, (str, bool, int, float)):
                attributes[f"frontdesk.{key}"] = value
        self._span_event(state, event, attributes)

    _HANDLERS: dict[str, Callable[[Observability, _Turn, Event], None]] = {
        "user_message": _on_user_message,
        "bot_message": _on_bot_message,
        "session_started": _on_session_started,
        "execution.started": _on_execution_started,
        "execution.completed": _on_execution_completed,
        "llm_call": _on_llm_call,
        "tool_call": _on_tool_call,
        "tool_result": _on_tool_result,
        "error": _on_error,
        **dict.fromkeys(("route_decided", "handoff_match", "condition_evaluated", "agent_started", "agent_finished",
                         "fallback", "flow_transition", "session_escalated", "guardrail_check", "constraint_check"),
                        _on_decision),
    }

    def _span_event(self, state: _Turn, event: Event, attributes: dict[str, Any]) -> None:
        if state.span is not None:
            state.span.add_event(f"frontdesk.{event.type}", attributes=attributes, timestamp=_ns(self._ts(event)))

    def _child_span(self, state: _Turn, name: str, start: float, end: float, attributes: dict[str, Any],
                    client: bool = False, error: tuple[str, str] | None = None) -> None:
        """A finished span under the turn's span, from `start` to `end` (seconds since the epoch)."""
        from opentelemetry.trace import SpanKind, Status, StatusCode, set_span_in_context

        start = max(start, state.first_ts)
        span = self.tracer.start_span(name, context=set_span_in_context(state.span),
                                      kind=SpanKind.CLIENT if client else SpanKind.INTERNAL,
                                      start_time=_ns(start), attributes=attributes)
        if error is not None:
            span.set_attribute("error.type", error[0])
            span.set_status(Status(StatusCode.ERROR, error[1]))
        span.end(end_time=_ns(max(end, start)))

    # ---- HTTP ----------------------------------------------------------------------------------

    def install(self, app: Any) -> None:
        """Count, time and log every request of `app` (a FastAPI app) and serve GET /metrics, without auth."""
        from fastapi import Response

        def metrics() -> Response:
            return Response(self.metrics_text(), media_type=CONTENT_TYPE_LATEST)

        app.add_api_route("/metrics", metrics, methods=["GET"], include_in_schema=False)
        app.add_middleware(_HttpObserver, observability=self)

    def observe_request(self, method: str, route: str, path: str, status: int, seconds: float) -> None:
        """Record one finished HTTP request (the middleware calls it)."""
        self.http_requests.labels(method, route, str(status)).inc()
        self.http_seconds.labels(method, route, str(status)).observe(seconds)
        if status >= 500:
            self.errors.labels("http").inc()
        level = logging.ERROR if status >= 500 else logging.DEBUG if route in QUIET_ROUTES else logging.INFO
        logger.log(level, "http request",
                   extra={"method": method, "route": route, "path": path, "status": status,
                          "latency_ms": round(seconds * 1000, 1)})


class _HttpObserver:
    """ASGI middleware: method, route template and status of each HTTP request, and its time."""

    def __init__(self, app: Any, observability: Observability) -> None:
        self.app = app
        self.observability = observability

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # unless the app answers

        async def sending(message: dict) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            # the router writes the matched route into the scope; unmatched paths share one label
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            self.observability.observe_request(scope.get("method", ""), route, scope.get("path", ""),
                                               status, time.perf_counter() - started)
