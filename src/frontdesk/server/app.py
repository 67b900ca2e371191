"""The HTTP API: sessions of loaded programs over JSON and server-sent events (FastAPI).

Turns run in a worker thread (the engine is synchronous); one session's messages are processed one
at a time, under the session's lock in the store (so across server processes too). What the server needs to remember about a
session between requests (its owner, the recent client message ids and their results) is written
into the session state's `system["http_api"]` by a turn-end hook, so it is saved with the turn.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import anyio
from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from frontdesk.ir.models import Program
from frontdesk.runtime.engine import Engine, SessionNotFound, TurnResult, hold_session, program_digest
from frontdesk.runtime.inactivity import longest_silence
from frontdesk.runtime.events import Event
from frontdesk.runtime.usertext import UnkeepableText, keepable
from frontdesk.server.auth import OPERATOR_TOKENS_ENV, ServerSettings
from frontdesk.server.observability import Observability
from frontdesk.server.web import mount_web
from frontdesk.server.models import CreateSession, ProgramOut, ReloadOut, SendMessage, SessionOut, TurnOut
from frontdesk.store.base import ConflictError, LockTimeout, SessionStore, StoreError, trace_page

SYSTEM_KEY = "http_api"  # where the server keeps its per-session bookkeeping in state.system
TRACE_PAGE = 1000  # events in a page of GET /v1/sessions/{id}/trace unless the client asks for fewer
TRACE_PAGE_MAX = 5000


class ApiError(Exception):
    def __init__(self, status: int, error: str, detail: Any = None, headers: dict[str, str] | None = None):
        super().__init__(error)
        self.status, self.error, self.detail, self.headers = status, error, detail, headers


class _TurnScope(threading.local):
    """What the turn running in this worker thread belongs to: set around each engine call."""

    sink: Callable[[Event], None] | None = None
    owner: str | None = None
    message_id: str | None = None
    session_id: str | None = None


class _Listeners:
    """Clients following a session's events (GET /v1/sessions/{id}/stream), by session id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_session: dict[str, set[tuple[asyncio.AbstractEventLoop, asyncio.Queue]]] = {}

    def add(self, session_id: str, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue) -> None:
        with self._lock:
            self._by_session.setdefault(session_id, set()).add((loop, queue))

    def remove(self, session_id: str, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue) -> None:
        with self._lock:
            followers = self._by_session.get(session_id, set())
            followers.discard((loop, queue))
            if not followers:
                self._by_session.pop(session_id, None)

    def publish(self, session_id: str, event: dict) -> None:
        with self._lock:
            followers = list(self._by_session.get(session_id, ()))
        for loop, queue in followers:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, event)
            except RuntimeError:  # that client's loop is gone
                self.remove(session_id, loop, queue)


class _ServerHook:
    """Engine subscriber and turn-end hook: routes live events to the request that runs the turn
    and records owner and message id in the state before the engine saves it."""

    name = "http_api"

    def __init__(self, scope: _TurnScope, keep: int, listeners: _Listeners) -> None:
        self.scope = scope
        self.listeners = listeners
        self.keep = keep  # how many recent client message ids a session remembers

    def __call__(self, event: Event) -> None:
        sink = self.scope.sink
        if sink is not None:
            sink(event)
        if self.scope.session_id:
            self.listeners.publish(self.scope.session_id, event.model_dump(mode="json"))

    def turn_end(self, ctx) -> None:
        record = ctx.state.system.setdefault(SYSTEM_KEY, {})
        if not isinstance(record, dict):
            record = ctx.state.system[SYSTEM_KEY] = {}
        if self.scope.owner and not record.get("owner"):
            record["owner"] = self.scope.owner
        mid = self.scope.message_id
        if mid:
            ids = record.setdefault("message_ids", {})
            ids[mid] = {"turn": ctx.state.turn,
                        "messages": [{"agent": m.agent, "text": m.text, "actions": m.actions}
                                     for m in ctx.sent]}
            while len(ids) > max(self.keep, 0):
                ids.pop(next(iter(ids)))


class ProgramVersions:
    """The loaded versions of each served program (name -> digest -> Engine) and the one new sessions
    start on. Each version's IR is kept in the session store, so a session runs on the version it started
    with in any process, and after a restart."""

    CHECK_EVERY = 1.0  # seconds between looks at a program's files for changes

    def __init__(self, programs: Mapping[str, Program], make_engine: Callable[[str, Program], Engine],
                 sources: Mapping[str, str | Path], store: SessionStore) -> None:
        self._make = make_engine
        self._store = store
        self._sources = {name: Path(path) for name, path in sources.items()}
        self._lock = threading.RLock()
        self._by_digest: dict[str, dict[str, Engine]] = {}
        self.current: dict[str, Engine] = {}
        self._stamps: dict[str, tuple] = {}
        self._checked: dict[str, float] = {}
        for name, program in programs.items():
            self._add(name, self._make(name, program))
            if name in self._sources:
                self._stamps[name] = self._stamp(name)

    def _add(self, name: str, engine: Engine) -> None:
        self._by_digest.setdefault(name, {}).setdefault(engine.digest, engine)
        self.current[name] = self._by_digest[name][engine.digest]
        # any process (or this one after a restart) can run its sessions; with the store down, the version
        # is kept when it is next loaded
        with contextlib.suppress(StoreError):
            self._store.save_program(engine.digest, engine.program.model_dump_json())

    def engine(self, name: str, digest: str) -> Engine | None:
        """The engine of version `digest` of program `name`: loaded here, or read back from the store (a
        version another process loaded, or this one before a restart); else the current version's."""
        found = self._by_digest.get(name, {})
        if digest and digest not in found and name in self.current:
            with self._lock:
                if digest not in self._by_digest.get(name, {}):
                    kept = self._store.load_program(digest)
                    if kept:
                        try:
                            program = Program.model_validate_json(kept)
                        except ValueError:
                            program = None  # an IR this version of Frontdesk cannot read
                        if program is not None and program_digest(program) == digest:
                            self._by_digest[name][digest] = self._make(name, program)
            found = self._by_digest.get(name, {})
        return found.get(digest) or self.current.get(name)

    def digests(self, name: str) -> list[str]:
        return list(self._by_digest.get(name, {}))

    def named_engines(self) -> list[tuple[str, Engine]]:
        return [(name, e) for name, engines in self._by_digest.items() for e in engines.values()]

    def has_source(self, name: str) -> bool:
        return name in self._sources

    def _stamp(self, name: str) -> tuple:
        """What the program's files look like now: (path, size, mtime) of each, hidden and cache files aside."""
        root = self._sources[name]
        files = [root] if root.is_file() else sorted(
            p for p in root.rglob("*") if p.is_file() and not any(part.startswith((".", "__pycache__"))
                                                                   for part in p.relative_to(root).parts))
        stamp = []
        for path in files:
            try:
                info = path.stat()
            except OSError:
                continue
            stamp.append((str(path), info.st_size, info.st_mtime_ns))
        return tuple(stamp)

    def reload_if_changed(self, name: str) -> None:
        """Load the program again if its files changed since it was loaded (looked at once a second)."""
        if name not in self._sources or time.monotonic() - self._checked.get(name, 0.0) < self.CHECK_EVERY:
            return
        self._checked[name] = time.monotonic()
        if self._stamp(name) != self._stamps.get(name):
            self.reload(name)

    def reload(self, name: str) -> list[str]:
        """Compile the program from its files; on success new sessions start on it. The errors, if any
        (the loaded version stays)."""
        from frontdesk.lang import load_program

        with self._lock:
            stamp = self._stamp(name)
            try:
                program, diagnostics = load_program(self._sources[name])
            except (OSError, ValueError) as exc:
                return [f"{self._sources[name]}: {exc}"]
            errors = [d.format() for d in diagnostics if d.is_error]
            if program is None or errors:
                return errors or [f"{self._sources[name]}: the program could not be loaded"]
            self._stamps[name] = stamp
            digest = program_digest(program)
            known = self._by_digest.get(name, {}).get(digest)
            self._add(name, known or self._make(name, program))
            return []


def _active_agent(raw: dict) -> str | None:
    """The agent a stored session is with: the top frame of its main stack."""
    return next((f.get("agent") for f in reversed(raw.get("stack") or []) if f.get("graph", "main") == "main"), None)


def _models_of(made: Any) -> tuple[Any, Any]:
    """(llm, understanding) from what an llm_factory returned: a Models-like object or an LLM."""
    if made is None:
        return None, None
    if hasattr(made, "llm"):
        return made.llm, getattr(made, "understanding", None)
    return made, None


def create_app(programs: Mapping[str, Program] | Iterable[tuple[str, Program]], store: SessionStore,
               llm_factory: Callable[[Program], Any] | None = None,
               settings: ServerSettings | None = None,
               sources: Mapping[str, str | Path] | None = None,
               observability: Observability | None = None) -> FastAPI:
    """An ASGI app serving `programs` (name -> Program) with sessions in `store`.

    `llm_factory(program)` gives each program's models (a `frontdesk.app.Models` or an LLM, or None);
    `sources` (name -> the file or folder it was loaded from) lets a changed program be loaded again;
    `observability` (metrics, JSON logs, OpenTelemetry spans) is made from the environment if not given."""
    settings = settings or ServerSettings.from_env()
    named = dict(programs.items() if isinstance(programs, Mapping) else programs)
    scope = _TurnScope()
    listeners = _Listeners()
    hook = _ServerHook(scope, settings.recent_message_ids, listeners)
    # program name -> event subscriber, for every engine loaded now or later (observability)
    subscriber_factories: list[Callable[[str], Callable[[Event], None]]] = []

    def make_engine(name: str, program: Program) -> Engine:
        made = llm_factory(program) if llm_factory else None
        llm, understanding = _models_of(made)
        knowledge = None
        if made is not None and getattr(made, "embedder", None) is not None:
            from frontdesk.app import knowledge_for

            knowledge = knowledge_for(program, made.embedder)
        engine = Engine(program, llm, store, understanding=understanding, listener=hook, knowledge=knowledge,
                        orchestration=settings.orchestration)
        engine.add_hook(hook)
        for factory in subscriber_factories:
            engine.subscribe(factory(name))
        return engine

    versions = ProgramVersions(named, make_engine, sources or {}, store)
    engines = versions.current  # name -> the engine of the version new sessions start on
    running: dict[str, threading.Event] = {}  # session id -> "a newer message arrived" (preemptive)
    idle_sessions: dict[str, float] = {}  # sessions this process served -> when to look at them again

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI):
        tasks = []
        if settings.inactivity_tick > 0:
            if any(longest_silence(e.program) > 0 for e in engines.values()):
                with contextlib.suppress(StoreError):
                    await anyio.to_thread.run_sync(watch_stored)
            tasks.append(asyncio.create_task(_inactivity_timer()))
        if settings.expire_idle_after > 0:
            tasks.append(asyncio.create_task(_expire_idle()))
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    app = FastAPI(title="Frontdesk", version="1", description="Sessions of Frontdesk programs over HTTP.",
                  lifespan=lifespan)
    app.state.engines = engines
    app.state.versions = versions
    app.state.settings = settings
    app.state.running = running  # session id -> the flag its running turn is superseded by (preemptive)

    def add_subscribers(factory: Callable[[str], Callable[[Event], None]]) -> None:
        """Give every engine, loaded now or later, the event subscriber `factory(program name)` makes."""
        subscriber_factories.append(factory)
        for name, engine in versions.named_engines():
            engine.subscribe(factory(name))

    app.state.add_subscribers = add_subscribers
    observability = observability if observability is not None else Observability.from_env()
    add_subscribers(observability.subscriber_for)
    observability.install(app)
    app.state.observability = observability
    mount_web(app)
    # a request body is JSON around one message: far past that, it is refused before it is read whole
    app.add_middleware(BodyLimit, limit=settings.max_message_chars * 6 + 16_384)

    # ---- errors: always JSON {error, detail}; bad input is a 4xx with the reason ----------------

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError):
        return JSONResponse({"error": exc.error, "detail": exc.detail}, status_code=exc.status, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        problems = [{"where": ".".join(str(p) for p in e.get("loc", ())), "problem": e.get("msg", "")}
                    for e in exc.errors()]
        return JSONResponse({"error": "invalid request", "detail": problems}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException):
        return JSONResponse({"error": str(exc.detail), "detail": None}, status_code=exc.status_code,
                            headers=getattr(exc, "headers", None))

    @app.exception_handler(ConflictError)
    async def _conflict(request: Request, exc: ConflictError):
        # another writer saved the session between this turn's load and save: nothing of it was written
        return JSONResponse({"error": "the session changed while this message was being answered; retry it",
                             "detail": str(exc)}, status_code=409, headers={"Retry-After": "1"})

    @app.exception_handler(LockTimeout)
    async def _busy(request: Request, exc: LockTimeout):
        return JSONResponse({"error": "the session is busy with another message; retry shortly",
                             "detail": str(exc)}, status_code=409, headers={"Retry-After": "1"})

    @app.exception_handler(StoreError)
    async def _store_down(request: Request, exc: StoreError):
        return JSONResponse({"error": "the session store is unavailable; retry later", "detail": str(exc)},
                            status_code=503, headers={"Retry-After": "2"})

    # ---- auth ----------------------------------------------------------------------------------

    def current_user(request: Request) -> str:
        header = request.headers.get("authorization", "")
        kind, _, token = header.partition(" ")
        if kind.lower() != "bearer" or not token.strip():
            raise ApiError(401, "a bearer token is required", "send 'Authorization: Bearer <token>'",
                           {"WWW-Authenticate": "Bearer"})
        user = settings.user(token.strip())
        if user is None:
            raise ApiError(401, "unknown token", None, {"WWW-Authenticate": 'Bearer error="invalid_token"'})
        return user

    def current_operator(request: Request, user: str = Depends(current_user)) -> str:
        """The user of an operator token; 403 for any other token (docs/security.md)."""
        token = request.headers.get("authorization", "").partition(" ")[2].strip()
        if not settings.is_operator(token):
            raise ApiError(403, "this needs an operator token", {
                "hint": f"the operator's tokens come from {OPERATOR_TOKENS_ENV} or 'operator:' lines of --tokens-file"})
        return user

    # ---- helpers -------------------------------------------------------------------------------

    def owned_state(session_id: str, user: str) -> dict:
        raw = store.load(session_id)
        if raw is None:
            raise ApiError(404, "no such session", {"session_id": session_id})
        owner = ((raw.get("system") or {}).get(SYSTEM_KEY) or {}).get("owner")
        if owner != user:
            raise ApiError(403, "this session belongs to another user", {"session_id": session_id})
        return raw

    def engine_for(raw: dict) -> Engine:
        """The engine of the program version the session started on, if this server still has it; else
        the current version's (the engine adopts the session, see Engine._adopt_program)."""
        name = str(raw.get("program") or "")
        engine = versions.engine(name, str(raw.get("program_digest") or ""))
        if engine is None:
            raise ApiError(409, "the session's program is not loaded in this server", {"program": name})
        return engine

    def turn_out(result: TurnResult, turn: int, replayed: bool = False) -> dict:
        # keepable: a session stored before user text was checked may still hold a lone surrogate
        return keepable(TurnOut(session_id=result.session_id, turn=turn,
                       messages=[{"agent": m.agent, "text": m.text, "actions": m.actions} for m in result.messages],
                       events=[e.model_dump(mode="json") for e in result.events], ended=result.ended,
                       active_agent=result.active_agent, replayed=replayed,
                       preempted=result.preempted).model_dump(mode="json"))

    def replay(session_id: str, raw: dict, message_id: str) -> dict | None:
        ids = ((raw.get("system") or {}).get(SYSTEM_KEY) or {}).get("message_ids") or {}
        done = ids.get(message_id)
        if done is None:
            return None
        turn = done.get("turn")
        events = [e for e in store.events(session_id) if e.get("turn") == turn]
        return TurnOut(session_id=session_id, turn=turn, messages=done.get("messages") or [], events=events,
                       ended=raw.get("status") == "ended", active_agent=_active_agent(raw),
                       replayed=True).model_dump(mode="json")

    async def run_turn(call: Callable[[], TurnResult], owner: str | None, message_id: str | None,
                       sink: Callable[[Event], None] | None = None, session_id: str | None = None) -> TurnResult:
        def work() -> TurnResult:
            scope.sink, scope.owner, scope.message_id, scope.session_id = sink, owner, message_id, session_id
            try:
                return call()
            finally:
                scope.sink = scope.owner = scope.message_id = scope.session_id = None
        try:
            return await anyio.to_thread.run_sync(work)
        except SessionNotFound as exc:
            raise ApiError(404, "no such session", str(exc)) from exc
        except UnkeepableText as exc:  # the request models refuse it first; a library caller's check
            raise ApiError(422, str(exc)) from exc

    def check_message(body: SendMessage) -> None:
        if len(body.text) > settings.max_message_chars:
            raise ApiError(413, f"the message is longer than {settings.max_message_chars} characters",
                           {"limit": settings.max_message_chars, "length": len(body.text)})
        if not body.text.strip():
            raise ApiError(422, "the message is empty", {"where": "body.text"})

    # ---- endpoints -----------------------------------------------------------------------------

    @app.get("/health", tags=["service"])
    async def health() -> dict:
        return {"status": "ok"}

    @app.get("/ready", tags=["service"])
    async def ready() -> JSONResponse:
        try:
            await anyio.to_thread.run_sync(store.load, "__frontdesk_ready__")
        except StoreError as exc:
            return JSONResponse({"status": "unavailable", "detail": str(exc)}, status_code=503,
                                headers={"Retry-After": "2"})
        return JSONResponse({"status": "ready", "programs": sorted(engines)})

    def program_out(name: str) -> dict:
        e = engines[name]
        return ProgramOut(name=name, language=e.program.language, entry=e.program.entry,
                          agents=list(e.program.agents), version=e.digest,
                          loaded_versions=versions.digests(name)).model_dump()

    @app.get("/v1/programs", response_model=list[ProgramOut], tags=["programs"])
    async def list_programs(user: str = Depends(current_user)) -> list[dict]:
        return [program_out(name) for name in engines]

    @app.post("/v1/programs/{name}/reload", response_model=ReloadOut, tags=["programs"])
    async def reload_program(name: str, user: str = Depends(current_operator)) -> dict:
        """Compile the program again from its files: new sessions start on the new version, running
        sessions finish on the one they started with. A program with errors is not loaded (422). Only
        an operator token may (403 otherwise)."""
        if name not in engines:
            raise ApiError(404, "no such program", {"program": name, "loaded": sorted(engines)})
        if not versions.has_source(name):
            raise ApiError(409, "this program was not loaded from files, so it cannot be reloaded", {"program": name})
        previous = engines[name].digest
        problems = await anyio.to_thread.run_sync(versions.reload, name)
        if problems:
            raise ApiError(422, "the program has errors; the loaded version stays", {"diagnostics": problems})
        return ReloadOut(name=name, version=engines[name].digest, previous=previous,
                         changed=engines[name].digest != previous).model_dump()

    @app.post("/v1/sessions", status_code=201, response_model=TurnOut, tags=["sessions"])
    async def create_session(body: CreateSession, user: str = Depends(current_user)) -> dict:
        if body.program not in engines:
            raise ApiError(404, "no such program", {"program": body.program, "loaded": sorted(engines)})
        await anyio.to_thread.run_sync(versions.reload_if_changed, body.program)
        engine = engines[body.program]
        end_user = f"{user}/{body.user_id}" if body.user_id else user
        result = await run_turn(lambda: engine.start(program_label=body.program, user_id=end_user,
                                                     channel=body.channel), user, None)
        watch(result.session_id, engine)
        return turn_out(result, 0)

    @app.post("/v1/sessions/{session_id}/messages", response_model=TurnOut, tags=["sessions"],
              responses={200: {"content": {"text/event-stream": {}}}})
    async def send_message(session_id: str, body: SendMessage, stream: bool = False,
                           user: str = Depends(current_user)):
        check_message(body)
        owned_state(session_id, user)
        if stream:
            return StreamingResponse(_stream_turn(session_id, body, user), media_type="text/event-stream",
                                     headers={"Cache-Control": "no-cache"})
        newer = supersede(session_id)
        out = await run_message(session_id, body, user, newer)
        return out

    async def run_message(session_id: str, body: SendMessage, user: str, newer: threading.Event,
                          sink: Callable[[Event], None] | None = None) -> dict:
        """Check the message and run its turn in a worker thread, all under the session's store lock
        (so a retried message id is answered once even across server processes): the TurnOut."""
        engine_used: list[Engine] = []

        def work() -> dict:
            scope.sink, scope.owner, scope.message_id, scope.session_id = sink, user, body.message_id, session_id
            try:
                with hold_session(store, session_id, settings.lock_timeout):
                    raw = owned_state(session_id, user)
                    if body.message_id:
                        earlier = replay(session_id, raw, body.message_id)
                        if earlier is not None:
                            return earlier
                    if int(raw.get("turn", 0)) >= settings.max_turns:
                        raise ApiError(409, f"the session reached its limit of {settings.max_turns} turns; "
                                            "start a new one", {"limit": settings.max_turns})
                    engine = engine_for(raw)
                    engine_used.append(engine)
                    running[session_id] = newer
                    try:
                        result = engine.send(session_id, body.text, preempt_check(newer))
                    finally:
                        if running.get(session_id) is newer:
                            running.pop(session_id, None)
                    return turn_out(result, int(raw.get("turn", 0)) + 1)
            except SessionNotFound as exc:
                raise ApiError(404, "no such session", str(exc)) from exc
            except UnkeepableText as exc:  # SendMessage refuses it first: nothing was stored
                raise ApiError(422, str(exc), {"where": "body.text"}) from exc
            except LockTimeout as exc:
                raise ApiError(409, "the session is busy with another message; retry shortly", str(exc),
                               {"Retry-After": "1"}) from exc
            finally:
                scope.sink = scope.owner = scope.message_id = scope.session_id = None

        out = await anyio.to_thread.run_sync(work)
        if engine_used:
            watch(session_id, engine_used[0])
        return out

    def supersede(session_id: str) -> threading.Event:
        """Under `preemptive`, tell the session's running turn (in this process) that a newer message
        came; the flag this message's own turn will be told by."""
        if settings.strategy == "preemptive":
            earlier = running.get(session_id)
            if earlier is not None:
                earlier.set()
        return threading.Event()

    def preempt_check(newer: threading.Event) -> Callable[[], bool] | None:
        return newer.is_set if settings.strategy == "preemptive" else None

    def watch(session_id: str, engine: Engine) -> None:
        """Look at the session on the inactivity timer if its program has inactivity rules."""
        if settings.inactivity_tick > 0 and longest_silence(engine.program) > 0:
            idle_sessions[session_id] = 0.0

    def watch_stored() -> None:
        """After a (re)start: the stored sessions of programs with inactivity rules that may still have a
        rule to run (written to within the longest delay) go back on the timer."""
        now = time.time()
        for info in store.list_sessions():
            engine = engines.get(info.program)
            silence = longest_silence(engine.program) if engine is not None else 0.0
            if silence > 0 and now - info.updated_at.timestamp() <= silence + 60:
                idle_sessions[info.id] = 0.0

    def run_idle(session_id: str) -> TurnResult | None:
        """The due inactivity rule of one session, if any (under its lock, taken only if free now)."""
        scope.session_id = session_id
        try:
            with hold_session(store, session_id, 0.05):
                raw = store.load(session_id)
                if raw is None or raw.get("status") == "ended":
                    idle_sessions.pop(session_id, None)
                    return None
                result = engine_for(raw).idle(session_id)  # None when no rule is due
                if result is not None and result.ended:
                    idle_sessions.pop(session_id, None)
                return result
        finally:
            scope.session_id = None

    async def _expire_idle() -> None:
        """Delete the sessions nobody wrote to for `expire_idle_after` seconds, now and then."""
        every = max(1.0, min(60.0, settings.expire_idle_after / 4))
        while True:
            await asyncio.sleep(every)
            with contextlib.suppress(StoreError):
                await anyio.to_thread.run_sync(store.expire_idle, settings.expire_idle_after)

    async def _inactivity_timer() -> None:
        """Every tick, run the inactivity rules that are due (reminders, good-byes) of the sessions this
        process served; what they say reaches followers of GET /v1/sessions/{id}/stream."""
        while True:
            await asyncio.sleep(settings.inactivity_tick)
            for session_id in list(idle_sessions):
                if idle_sessions.get(session_id, 0.0) > time.monotonic():
                    continue
                try:
                    await anyio.to_thread.run_sync(run_idle, session_id)
                except LockTimeout:
                    continue  # a turn is running; look again at the next tick
                except (ApiError, StoreError):  # the store is down or the program is gone: try later
                    idle_sessions[session_id] = time.monotonic() + 5 * settings.inactivity_tick

    async def _stream_turn(session_id: str, body: SendMessage, user: str):
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()

        def sink(event: Event) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, ("event", event.model_dump(mode="json")))

        newer = supersede(session_id)
        task = asyncio.ensure_future(run_message(session_id, body, user, newer, sink))
        task.add_done_callback(lambda _t: loop.call_soon_threadsafe(queue.put_nowait, ("done", None)))
        while True:
            kind, item = await queue.get()
            if kind == "done":
                break
            yield _sse(item["type"], item)
        try:
            out = task.result()
        except ApiError as exc:
            yield _sse("error", {"error": exc.error, "detail": exc.detail, "status": exc.status})
            return
        except StoreError as exc:
            yield _sse("error", {"error": "the session store is unavailable; retry later",
                                 "detail": str(exc), "status": 503})
            return
        if out.get("replayed"):  # the stored result of an earlier request with this id: its events, then it
            for ev in out["events"]:
                yield _sse(ev["type"], ev)
        yield _sse("result", out)

    @app.get("/v1/sessions/{session_id}", response_model=SessionOut, tags=["sessions"])
    async def get_session(session_id: str, user: str = Depends(current_user)) -> dict:
        raw = await anyio.to_thread.run_sync(owned_state, session_id, user)
        active = _active_agent(raw)
        return SessionOut(session_id=session_id, program=str(raw.get("program") or ""),
                          program_version=str(raw.get("program_digest") or ""), status=str(raw.get("status")),
                          active_agent=active, turn=int(raw.get("turn", 0)),
                          ended=raw.get("status") == "ended").model_dump()

    @app.get("/v1/sessions/{session_id}/stream", tags=["sessions"],
             responses={200: {"content": {"text/event-stream": {}}}})
    async def follow_session(session_id: str, request: Request, turns: int | None = None,
                             user: str = Depends(current_user)):
        """Server-sent events of every later turn of the session as they happen; with `turns=N`
        the stream ends after N turns completed, otherwise when the client goes away."""
        if turns is not None and turns < 1:
            raise ApiError(422, "turns must be at least 1", {"where": "query.turns"})
        raw = await anyio.to_thread.run_sync(owned_state, session_id, user)
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()
        listeners.add(session_id, loop, queue)
        stored_up_to = int(raw.get("event_seq") or 0)  # what the store held when following began

        async def events():
            # Turns this process runs arrive live (as they happen); turns other processes ran (several
            # servers on one store) are read from the store's log whenever the live side is quiet.
            nonlocal stored_up_to
            done = 0
            seen: collections.deque = collections.deque(maxlen=2048)  # (turn, seq, type) already sent
            quiet = 0.0
            try:
                yield b": following\n\n"
                while turns is None or done < turns:
                    try:
                        batch = [await asyncio.wait_for(queue.get(), timeout=settings.follow_poll)]
                    except asyncio.TimeoutError:
                        if await request.is_disconnected():
                            return
                        try:
                            batch = await anyio.to_thread.run_sync(store.events_since, session_id, stored_up_to)
                        except StoreError:  # the store is down for now: the live side goes on
                            batch = []
                        if batch:
                            stored_up_to = max(int(e.get("seq") or 0) for e in batch)
                        quiet += settings.follow_poll
                        if not batch and quiet >= 15:
                            quiet = 0.0
                            yield b": keep-alive\n\n"
                    for event in batch:
                        key = (event.get("turn"), event.get("seq"), event.get("type"))
                        if key in seen:
                            continue
                        seen.append(key)
                        quiet = 0.0
                        yield _sse(event["type"], event)
                        if event["type"] == "execution.completed":
                            done += 1
                            if turns is not None and done >= turns:
                                return
            finally:
                listeners.remove(session_id, loop, queue)

        return StreamingResponse(events(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})

    @app.get("/v1/sessions/{session_id}/trace", tags=["sessions"])
    async def get_trace(session_id: str, user: str = Depends(current_user),
                        after: int = Query(0, ge=0, description="Skip this many events: the `next` of the page before."),
                        limit: int = Query(TRACE_PAGE, ge=1, le=TRACE_PAGE_MAX, description="At most this many events."),
                        turn: int | None = Query(None, ge=0, description="Only this turn's events."),
                        from_turn: int | None = Query(None, ge=0, description="Only events of this turn and later."),
                        to_turn: int | None = Query(None, ge=0, description="Only events of this turn and earlier.")
                        ) -> dict:
        """A page of the session's events, oldest first: `next` is the `after` of the following page (null
        on the last); `turn`, or `from_turn`/`to_turn`, keep to a range of turns; `turns` is how many turns
        the session has had."""
        if turn is not None:
            if from_turn is not None or to_turn is not None:
                raise ApiError(422, "give either turn or from_turn/to_turn, not both", {})
            from_turn = to_turn = turn
        if from_turn is not None and to_turn is not None and from_turn > to_turn:
            raise ApiError(422, "from_turn is after to_turn", {"from_turn": from_turn, "to_turn": to_turn})
        raw = await anyio.to_thread.run_sync(owned_state, session_id, user)
        events, following = await anyio.to_thread.run_sync(
            lambda: trace_page(store, session_id, after, limit, from_turn, to_turn))
        return {"session_id": session_id, "events": keepable(events), "next": following,
                "turns": int(raw.get("turn") or 0)}

    return app


class BodyLimit:
    """ASGI middleware: a request whose body (as declared, or as it arrives) is larger than `limit`
    bytes gets 413 without the rest of it being read."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await self._refuse(send)
            return
        if scope.get("method") not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        # read the body here (it is small or refused): past the limit, answer 413 and read no more
        chunks, seen = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.limit:
                await self._refuse(send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> dict:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send: Callable) -> None:
        body = json.dumps({"error": f"the request body is larger than {self.limit} bytes",
                           "detail": {"limit": self.limit}}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def _sse(kind: str, data: Any) -> bytes:
    """One server-sent event; the data is one line of JSON."""
    text = json.dumps(data, ensure_ascii=False, default=str)
    return f"event: {kind}\ndata: {text}\n\n".encode("utf-8", errors="replace")  # a lone surrogate: "?"
