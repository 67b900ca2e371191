"""The `frontdesk` command line: check, compile, chat and trace."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import sys
from pathlib import Path
from typing import Optional

import typer
import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text

from frontdesk.access import ALLOW_ENV_HELP, ALLOW_PATH_HELP
from frontdesk.diagnostics import Severity
from frontdesk.loading import load_or_exit, print_diagnostics, read_program
from frontdesk.store.base import StoreError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Frontdesk: check, compile, run and trace declarative chatbot programs (ADL).",
)
# Data (user lines, bot replies, paths, ids, error texts) is always printed as Text, never read as
# Rich markup: a `[/x]` in it would crash the printing and a `[link=…]` would be applied.
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def styled(*parts: str | tuple[str, str]) -> Text:
    """Text from plain strings and (text, style) pairs; nothing in them is read as markup."""
    return Text.assemble(*parts)


def _error(message: str, label: str = "error:") -> None:
    err.print(styled((label, "red"), " ", message))


def _note(message: str, label: str = "note:") -> None:
    err.print(styled((label, "yellow"), " ", message))


def _dim(message: str) -> None:
    err.print(Text(message, style="dim"))

STORE_ENV = "FRONTDESK_STORE"


def _default_store() -> str:
    from frontdesk.store import DEFAULT_STORE_PATH

    return os.environ.get(STORE_ENV) or DEFAULT_STORE_PATH


# program loading lives in frontdesk.loading (graph_cli.py uses it too); the old names stay for callers
_print_diagnostics = print_diagnostics
_load_program = read_program
_load = load_or_exit


def _grant(allow_env: list[str], allow_path: list[str]) -> None:
    """The operator's --allow-env and --allow-path for the programs this command runs (frontdesk.access)."""
    from frontdesk.access import grant

    grant(allow_env, allow_path)


def _open_store(url: str):
    from frontdesk.store import open_store

    try:
        return open_store(url)
    except (ValueError, StoreError) as exc:
        _error(str(exc))
        raise typer.Exit(2)


@app.command()
def check(
    program: str = typer.Argument(..., help="A program file or the folder that holds it."),
    output_format: str = typer.Option("text", "--format", help="text or json"),
    show_info: bool = typer.Option(False, "--info", help="Also show informational notes."),
    entry: Optional[str] = typer.Option(None, "--entry", help="ABL: the agent a conversation starts with."),
    deep: bool = typer.Option(True, "--analysis/--no-analysis", help="Also look for loops between agents and in "
                              "flows, and for labels, arguments, tools and fields never used (default: on)."),
    llm_review: bool = typer.Option(False, "--llm", help="Also ask the configured LLM endpoint whether the program "
                                    "has an infinite loop (the ADL paper's question) and show its answer."),
    allow_env: list[str] = typer.Option([], "--allow-env", metavar="NAME", help=ALLOW_ENV_HELP),
    allow_path: list[str] = typer.Option([], "--allow-path", metavar="DIR", help=ALLOW_PATH_HELP),
) -> None:
    """Report every problem in a program (ADL or ABL) with file, line, column, code and hint, and the
    environment variables it reads (FD061-FD063)."""
    _grant(allow_env, allow_path)
    prog, diags = _load_program(program, entry)
    if prog is not None and deep and not any(d.is_error for d in diags):
        from frontdesk.analysis import with_analysis

        diags = with_analysis(prog, diags)
    errors = sum(1 for d in diags if d.is_error)
    warnings = sum(1 for d in diags if d.severity is Severity.WARNING)
    review = _llm_review(prog) if llm_review and prog is not None else None
    if output_format == "json":
        body: object = [d.to_json() for d in diags]
        if review is not None:
            body = {"diagnostics": body, "llm_review": review}
        sys.stdout.write(json.dumps(body, indent=2, ensure_ascii=False) + "\n")
    else:
        _print_diagnostics(diags, show_info)
        if review is not None:
            err.print(Text(f"LLM review ({review['model']}), beside the findings above:", style="bold"))
            err.print(Text(review["answer"]))
        if prog is not None:
            _print_env_reads(prog)
            _note_missing_extras(prog)
        agents = len(prog.agents) if prog else 0
        err.print(Text(f"{program}: {errors} error{'s' if errors != 1 else ''}, "
                       f"{warnings} warning{'s' if warnings != 1 else ''}, {agents} agents",
                       style="red" if errors else "green"))
    raise typer.Exit(1 if errors or prog is None else 0)


def _note_missing_extras(prog) -> None:
    """A note when the program has MCP tools and the [mcp] extra is not installed: their calls would fail."""
    from frontdesk.extras import install_hint, missing_module
    from frontdesk.ir.models import McpBinding

    mcp_tools = sorted(name for name, tool in prog.tools.items() if isinstance(tool.binding, McpBinding))
    module = missing_module("mcp") if mcp_tools else None
    if module:
        _note(install_hint("mcp", f"calling {', '.join(mcp_tools)} (served by MCP)", module)
              + "; until then these calls fail")


def _print_env_reads(prog) -> None:
    """The environment variables the program reads, each with whether it may (docs/security.md)."""
    from frontdesk.access import env_reads, env_refusal, is_own

    names = sorted(env_reads(prog))
    if names:
        said = [f"{n} ({'never readable' if is_own(n) else 'not granted' if env_refusal(n) else 'granted'})"
                for n in names]
        err.print(Text(f"environment variables the program reads: {', '.join(said)}"))


def _llm_review(prog) -> dict:
    from frontdesk.analysis.review import ask_review
    from frontdesk.app import ModelChoiceError, choose_models

    try:
        models = choose_models(prog, "openai", None, False)
    except (ModelChoiceError, ValueError) as exc:
        _error(f"--llm: {exc}")
        raise typer.Exit(2)
    try:
        answer = ask_review(models.llm, prog)
    except Exception as exc:  # noqa: BLE001 - any failure of the endpoint is reported, not raised
        _error(f"--llm: the review call failed: {exc}")
        raise typer.Exit(2)
    return {"model": getattr(models.llm, "model", "") or getattr(models.llm, "name", "llm"), "answer": answer}


@app.command("compile")
def compile_(
    program: str = typer.Argument(..., help="A program file or the folder that holds it."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Write the IR here instead of stdout."),
    entry: Optional[str] = typer.Option(None, "--entry", help="ABL: the agent a conversation starts with."),
) -> None:
    """Print the program's IR as JSON."""
    prog, _ = _load(program, quiet_warnings=True, entry=entry)
    text = without_secrets(prog).model_dump_json(indent=2)
    if output:
        output.write_text(text + "\n", encoding="utf-8")
        err.print(Text(f"wrote {output}"))
    else:
        sys.stdout.write(text + "\n")


@app.command()
def convert(
    source: Path = typer.Argument(..., help="An .agent.abl or .agent.yaml file (or a folder of them)."),
    output: Optional[Path] = typer.Option(None, "-o", "--output",
                                          help="Where to write (a file, or a folder for a folder); default: stdout."),
) -> None:
    """Turn ABL's .agent.abl form into .agent.yaml and back (the same program; comments are not kept)."""
    from frontdesk.diagnostics import DiagnosticBag
    from frontdesk.lang.abl.convert import to_abl, to_yaml
    from frontdesk.lang.abl.documents import read_document

    files = sorted(p for p in source.rglob("*") if p.name.endswith((".agent.abl", ".agent.yaml"))) \
        if source.is_dir() else [source]
    if not files or not all(f.name.endswith((".agent.abl", ".agent.yaml", ".agent.yml")) for f in files):
        _error(f"{source}: give an .agent.abl or .agent.yaml file, or a folder holding them")
        raise typer.Exit(2)
    failed = False
    for f in files:
        bag = DiagnosticBag()
        doc = read_document(f, str(f), bag)
        errors = [d for d in bag.items if d.is_error]
        if doc is None or errors:
            _print_diagnostics(bag.items)
            failed = True
            continue
        to_yaml_form = doc.fmt == "abl"
        text = to_yaml(doc.root) if to_yaml_form else to_abl(doc.root)
        name = f.name.replace(".agent.abl", ".agent.yaml") if to_yaml_form else \
            f.name.replace(".agent.yaml", ".agent.abl").replace(".agent.yml", ".agent.abl")
        if output is None:
            sys.stdout.write(text)
            continue
        target = output / f.relative_to(source).with_name(name) if source.is_dir() else output
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        err.print(Text(f"wrote {target}"))
    raise typer.Exit(1 if failed else 0)


@app.command()
def schema(output: Optional[Path] = typer.Option(None, "-o", "--output")) -> None:
    """Print the JSON schema of the IR."""
    from frontdesk.ir.schema import generate_schema

    text = generate_schema()
    if output:
        output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


def without_secrets(prog):
    """The program with API keys, tokens and URL passwords in its `llm:` settings replaced by ***."""
    from frontdesk.llm.openai_compat import url_without_credentials

    def clean(value, key: str = ""):
        if isinstance(value, dict):
            return {k: clean(v, str(k)) for k, v in value.items()}
        if isinstance(value, list):
            return [clean(v, key) for v in value]
        if isinstance(value, str) and value and any(w in key.lower() for w in _SECRET_WORDS):
            return "***"
        if isinstance(value, str) and "://" in value:
            return url_without_credentials(value)
        return value

    if not prog.settings.llm:
        return prog
    return prog.model_copy(update={"settings": prog.settings.model_copy(update={"llm": clean(prog.settings.llm)})})


_SECRET_WORDS = ("key", "secret", "token", "password", "passwd", "credential", "auth")


def _load_script(script: Path) -> dict | None:
    """The conversation file `--script` names, or None for a bare list of LLM answers."""
    from frontdesk.llm import ScriptError
    from frontdesk.testing import load_conversation

    try:
        return load_conversation(script)
    except ValueError:
        return None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        _error(f"cannot read script {script}: {exc}")
        raise typer.Exit(2)
    except ScriptError as exc:
        _error(str(exc))
        raise typer.Exit(2)


def _choose_models(prog, mode: str, script: Optional[Path], embeddings: Optional[bool]):
    from frontdesk.llm import ScriptError
    from frontdesk.app import ModelChoiceError, choose_models

    if mode not in ("auto", "local", "openai", "none"):
        _error(f"--llm must be auto, local, openai or none, not {mode!r}")
        raise typer.Exit(2)
    try:
        with err.status("loading models…", spinner="dots") if mode in ("auto", "local", "none") and script is None \
                else contextlib.nullcontext():
            models = choose_models(prog, mode, script, embeddings)  # type: ignore[arg-type]
    except (ScriptError, ModelChoiceError, OSError, UnicodeDecodeError, yaml.YAMLError, ValueError) as exc:
        _error(str(exc))
        raise typer.Exit(2)
    for note in models.notes:
        _note(note)
    return models


def _event_line(ev: dict) -> str:
    data = dict(ev.get("data") or {})
    agent = ev.get("agent") or "-"
    t = ev["type"]
    if t == "llm_call":
        if data.get("error"):
            return f"{agent}: llm_call {data.get('purpose')} failed: {data['error']}"
        return (f"{agent}: llm_call {data.get('purpose')} ({data.get('prompt_tokens', 0)}+"
                f"{data.get('completion_tokens', 0)} tokens) -> "
                + _short(data.get("response")))
    if t == "condition_evaluated":
        return f"{agent}: condition {data.get('condition')!r} = {data.get('result')} (by {data.get('by')})"
    if t == "route_decided":
        return f"{agent}: route -> {data.get('agent')} (by {data.get('by')})"
    took = f" [{data['duration_ms']} ms]" if isinstance(data.get("duration_ms"), (int, float)) else ""
    if t in ("tool_call", "tool_called"):  # tool_called: the kind's name in sessions stored before
        return f"{agent}: call {data.get('tool')}({_short(data.get('args'))}){took}"
    if t == "tool_result":
        return f"{agent}: {data.get('tool')} -> {data.get('status')} {_short(data.get('message'))}{took}"
    return f"{agent}: {t} {_short(data)}"


def _short(value, limit: int = 140) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _check_orchestration(name: str | None) -> None:
    from frontdesk.ir.models import ORCHESTRATION_STRATEGIES

    if name is not None and name not in ORCHESTRATION_STRATEGIES:
        _error(f"--orchestration must be one of {', '.join(ORCHESTRATION_STRATEGIES)}, not {name!r}")
        raise typer.Exit(2)


LLM_HELP = ("Which LLM writes replies: auto (an endpoint if FRONTDESK_LLM_* is configured, else the local "
            "SmolLM2-135M-Instruct), local, openai or none (no LLM; the embedding model still runs).")
EMBEDDINGS_HELP = ("Route, decide conditions and rank knowledge with the local embedding model all-MiniLM-L6-v2 "
                   "(default: on, also with --llm none; off with --script). The banner says which models run.")
# lines that leave the terminal chat (any case, surrounding spaces ignored); they are never sent to the bot
QUIT_WORDS = frozenset({"quit", "exit", "/quit", "/exit"})


def is_quit(text: str) -> bool:
    """Whether a line typed in `frontdesk chat` asks to leave it."""
    return text.strip().lower() in QUIT_WORDS


def _login_name() -> str:
    """Who runs the terminal chat: a local chat is one person's, so their user memory carries over."""
    import getpass

    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no login name (a container with no passwd entry)
        return "local"


@app.command()
def chat(
    program: str = typer.Argument(..., help="A program file or the folder that holds it."),
    script: Optional[Path] = typer.Option(None, "--script", help="Replay LLM answers (and user lines) from a YAML file."),
    llm_mode: str = typer.Option("auto", "--llm", help=LLM_HELP),
    embeddings: Optional[bool] = typer.Option(None, "--embeddings/--no-embeddings", help=EMBEDDINGS_HELP),
    trace: bool = typer.Option(False, "--trace", help="Show every runtime decision as it happens."),
    session: Optional[str] = typer.Option(None, "--session", help="Continue this session instead of starting one."),
    store: str = typer.Option(None, "--store", help="Session store: a SQLite path or 'memory'. [default: .frontdesk/sessions.sqlite3]"),
    orchestration: Optional[str] = typer.Option(None, "--orchestration", help="How ensembles and supervisors "
                                                "orchestrate their members, overriding the program: adaptive (the "
                                                "default), proactive, merging, autonomous, first-success, best-of-n."),
    allow_env: list[str] = typer.Option([], "--allow-env", metavar="NAME", help=ALLOW_ENV_HELP),
    allow_path: list[str] = typer.Option([], "--allow-path", metavar="DIR", help=ALLOW_PATH_HELP),
    user: Optional[str] = typer.Option(None, "--user", metavar="ID", help="Who is chatting: the user whose "
                                       "memory (ABL MEMORY user.*) the session reads and keeps. [default: your "
                                       "login name]"),
) -> None:
    """Chat with a program in the terminal (reads lines from stdin when it is not a terminal)."""
    _grant(allow_env, allow_path)
    from frontdesk.app import attach_program_phrases, knowledge_for
    from frontdesk.llm import ScriptError
    from frontdesk.progress import IndexProgressBar
    from frontdesk.runtime.engine import Engine, SessionNotFound
    from frontdesk.runtime.usertext import text_problem
    from frontdesk.store.memory import MemorySessionStore
    from frontdesk.testing import ConversationRun, clock_for

    prog, _ = _load(program)
    _note_missing_extras(prog)
    _check_orchestration(orchestration)
    spec = _load_script(script) if script else None
    try:
        clock = clock_for((spec or {}).get("today"))
    except ScriptError as exc:
        _error(f"{script}: {exc}")
        raise typer.Exit(2)
    models = _choose_models(prog, llm_mode, script, embeddings)
    llm = models.llm
    store_name = store or _default_store()
    session_store = _open_store(store_name)
    if models.embedder is not None:
        attach_program_phrases(prog, models.embedder)
    knowledge = knowledge_for(prog, models.embedder, on_progress=IndexProgressBar())
    case = (spec or {}).get("case")  # a conversation test (docs/testing.md): its env, stubs and fixtures apply
    if case is not None:
        from frontdesk.convtest.runner import conversation_engine, hold_case_environment

        hold_case_environment(case)
        engine = conversation_engine(case, prog, llm, session_store, understanding=models.understanding,
                                     knowledge=knowledge, clock=clock, orchestration=orchestration)
    else:
        engine = Engine(prog, llm, session_store, understanding=models.understanding, knowledge=knowledge,
                        clock=clock, orchestration=orchestration)
    interactive = sys.stdin.isatty() and script is None
    inputs = list((spec or {}).get("user") or []) if script else None
    with contextlib.suppress(AttributeError, ValueError, OSError):
        # bytes that are not UTF-8 arrive as lone surrogates, which text_problem refuses, not as a traceback
        sys.stdin.reconfigure(errors="surrogateescape")  # type: ignore[union-attr]
    turns = []
    before = 0  # turns the session had before this run (a continued session)

    def show(result) -> None:
        # Events in order: bot lines on stdout, and with --trace the decisions between them on stderr.
        # What is printed as the bot's is what was sent (result.messages): a draft that a rule
        # dropped or changed (BLOCK, redact, reask) is shown only in the trace.
        turns.append(result)
        pending = list(result.messages)

        def say(agent, text) -> None:
            out.print(styled((f"{agent or 'bot'}>", "bold cyan"), " ", text))

        for ev in result.events:
            if ev.type == "bot_message":
                sent = pending[0] if pending else None
                if sent is not None and sent.text == str(ev.data.get("text", "")):
                    say(pending.pop(0).agent, sent.text)
                elif trace:
                    err.print(Text(f"  · draft not sent as written: {ev.data.get('text', '')}", style="dim"))
            elif ev.type == "warning" and not trace:
                err.print(styled(("warning:", "yellow"), " ", f"{ev.agent or ''} {ev.data.get('message', '')}"))
            elif trace and ev.type != "user_message":
                err.print(Text(f"  · {_event_line(ev.model_dump())}", style="dim"))
        for sent in pending:  # sent as changed by a rule
            say(sent.agent, sent.text)

    try:
        if session:
            if not _may_continue(engine, session, program, store_name):
                raise typer.Exit(2)
            session_id = session
            before = engine.load_state(session).turn  # the script's first turn is the one after these
        else:
            result = engine.start(program_label=_program_label(prog, program), channel="cli",
                                  user_id=user if user is not None else _login_name())
            session_id = result.session_id
            show(result)
        _dim(f"session {session_id} · {models.describe()} · type quit to leave")
        lines = iter(inputs) if inputs is not None else None
        escalated_noted = False
        while True:
            if lines is not None:
                text = next(lines, None)
                if text is None:
                    break
                out.print(styled(("you>", "bold"), " ", text))
            elif interactive:
                try:
                    text = out.input(styled(("you>", "bold"), " "))
                except (EOFError, KeyboardInterrupt):
                    break
            else:
                text = sys.stdin.readline()
                if not text:
                    break
                text = text.rstrip("\n")
            problem = text_problem(text)
            if problem is not None:  # bytes that are not UTF-8, a NUL: the session could not keep it
                _note(f"that line was not sent: {problem}", "refused:")
                continue
            if lines is None and not interactive:  # a line read from stdin is echoed once it can be sent
                out.print(styled(("you>", "bold"), " ", text))
            if is_quit(text):
                break
            if not text.strip():
                continue
            if text.strip().split()[0] == "/human":
                # Play the person an escalated session went to: hand it back with a summary
                # (ABL ESCALATE on_human_complete; a server does this through its API).
                summary = text.strip()[len("/human"):].strip() or "resolved by a person"
                show(engine.human_completed(session_id, {"resolved": True, "resolution_summary": summary}))
                _dim("(the person handed the session back)")
                escalated_noted = False
                continue
            if interactive:
                with err.status(Text("…", style="dim"), spinner="dots"):
                    result = engine.send(session_id, text)
            else:
                result = engine.send(session_id, text)
            show(result)
            if result.ended:
                _dim("(the conversation has ended)")
                break
            if engine.load_state(session_id).status == "escalated" and not escalated_noted:
                escalated_noted = True
                _dim("(the session is with a person now; type /human <what they did> to hand it back)")
    except ScriptError as exc:
        _error(str(exc), "script error:")
        raise typer.Exit(1)
    except SessionNotFound as exc:
        _error(str(exc))
        raise typer.Exit(2)
    except StoreError as exc:
        _error(f"{exc} (nothing of this turn was saved)")
        raise typer.Exit(2)
    failed = False
    if spec and (case is not None or spec.get("expect") or spec.get("events")):
        run = ConversationRun(engine, session_id, turns, llm)  # type: ignore[arg-type]
        failed = not _report_script_checks(run, spec, continued=before if session else None)
    elif script is not None and llm is not None and llm.remaining():  # type: ignore[union-attr]
        _note(f"{llm.remaining()} scripted answers were not used", "warning:")  # type: ignore[union-attr]
    if not isinstance(session_store, MemorySessionStore):
        _dim(f"trace: frontdesk trace {session_id}")
    else:
        _dim("trace: not kept (a memory store ends with this process; --trace shows each decision as it "
             "happens, and a SQLite --store keeps the session to trace later)")
    if failed:
        raise typer.Exit(1)


def _program_label(prog, given: str) -> str:
    """What a session records as its program, as an absolute path (the same from any folder): an ABL
    project named by its folder as the folder (its documents together are the program), else the
    program file (an ADL program named by its folder or by its agents.yml is the same program)."""
    if prog.language == "abl" and given and Path(given).is_dir():
        return str(Path(given).resolve())
    if prog.root and prog.sources:
        return str(Path(prog.root) / prog.sources[0])
    return given


def _may_continue(engine, session_id: str, given: str, store_name: str) -> bool:
    """Whether `--session` may go on with this program; says why not. A session is only continued by
    the program that started it (changed or not), never overwritten by another one."""
    state = engine.load_state(session_id)
    if state is None:
        _error(f"no session {session_id!r} in {store_name}")
        return False
    if state.program_digest == engine.digest:
        return True
    recorded = state.program
    label = _program_label(engine.program, given)
    if recorded and _same_file(recorded, label):
        return True
    owner = f"program {recorded}" if recorded else "another program"
    _error(f"session {session_id!r} belongs to {owner}, not {label}; it was left as it is. "
           f"Continue it with: frontdesk chat {recorded or 'PROGRAM'} --session {session_id}")
    return False


def _same_file(first: str, second: str) -> bool:
    try:
        return os.path.samefile(first, second)
    except (OSError, ValueError):
        return False


def _report_script_checks(run, spec: dict, continued: int | None = None) -> bool:
    """Check the replay against the file's `expect:` and `events:`; print the result and, for each
    failure, the events of the turn where it showed. True when every check passed. `continued`: the
    session was continued after that many turns, so the script's first step is the turn after them."""
    from frontdesk.testing import expectation_failures

    case = spec.get("case")
    offset = 0  # a case's turn N is the session's turn N + offset
    if case is not None:  # a conversation test: its checks, turn by turn (frontdesk.convtest)
        from frontdesk.convtest.runner import check_replay

        # a continued session's opening turn was played before: the first turn here is the case's first step
        failures = check_replay(case, run.engine, run.turns, first=1 if continued is not None else 0)
        offset = continued or 0
        checks = sum(len(t.checks) for t in case.turns) + len(case.events)
    else:
        failures = expectation_failures(run, spec)
        checks = len(spec.get("expect") or []) + len(spec.get("events") or [])
    if not failures:
        err.print(Text(f"script checks passed ({checks} expectations)", style="green"))
        return True
    shown: set[int] = set()
    events = run.events
    for failure in failures:
        err.print(styled(("check failed:", "red"), " ", failure.format() if case is not None else failure.message))
        turn = failure.turn + offset if failure.turn is not None and case is not None else failure.turn
        if turn is not None and turn not in shown:
            shown.add(turn)
            err.print(Text(f"  events of turn {turn}:", style="dim"))
            for ev in events:
                if ev.get("turn") == turn:
                    err.print(Text(f"    {ev.get('seq')} {_event_line(ev)}"))
    err.print(Text(f"script checks failed: {len(failures)} of {checks} expectations", style="red"))
    return False


@app.command("trace")
def trace_(
    session: str = typer.Argument(..., help="The session id printed by chat."),
    store: str = typer.Option(None, "--store", help="Session store: a SQLite path or 'memory'."),
    as_json: bool = typer.Option(False, "--json", help="Print the events as JSON lines."),
    full: bool = typer.Option(False, "--full", help="Include LLM prompts in full."),
    turn: str = typer.Option(None, "--turn", help="Only these turns: N, or FIRST-LAST (either end may be left out)."),
) -> None:
    """Print every event of a session: agents chosen, conditions, tool and LLM calls, messages."""
    session_store = _open_store(store or _default_store())
    first, last = _turn_range(turn)
    try:
        events = session_store.events(session) if turn is None else _turn_events(session_store, session, first, last)
    except StoreError as exc:
        _error(str(exc))
        raise typer.Exit(2)
    if not events:
        _error(f"no events for session {session!r} in {store or _default_store()}")
        raise typer.Exit(1)
    if as_json:
        for ev in events:
            sys.stdout.write(json.dumps(ev, ensure_ascii=False) + "\n")
        return
    table = Table(show_lines=False, box=None, pad_edge=False)
    for col in ("#", "turn", "agent", "event", "details"):
        table.add_column(col, overflow="fold")
    for ev in events:
        data = ev.get("data") or {}
        if ev["type"] in ("bot_message", "user_message"):
            detail = data.get("text", "")
        elif ev["type"] == "llm_call" and full:
            detail = json.dumps(data, ensure_ascii=False, indent=1)
        else:
            detail = _event_line(ev).split(": ", 1)[-1]
        table.add_row(*(Text(str(cell)) for cell in (ev["seq"], ev["turn"], ev.get("agent") or "", ev["type"], detail)))
    out.print(table)
    tokens = sum(int((e.get("data") or {}).get("prompt_tokens", 0)) + int((e.get("data") or {}).get("completion_tokens", 0))
                 for e in events if e["type"] == "llm_call")
    calls = sum(1 for e in events if e["type"] == "llm_call")
    out.print(Text(f"{len(events)} events, {calls} LLM calls, {tokens} tokens"))


def _turn_range(text: str | None) -> tuple[int | None, int | None]:
    """`--turn` as (first, last): "7" is (7, 7), "3-" is (3, None), "-5" is (None, 5)."""
    if text is None:
        return None, None
    first, dash, last = text.strip().partition("-")
    try:
        low = int(first) if first.strip() else None
        high = (int(last) if last.strip() else None) if dash else low
    except ValueError:
        low = high = -1
    if (low is not None and low < 0) or (high is not None and high < 0) or \
            (low is not None and high is not None and low > high) or (low is None and high is None):
        _error(f"--turn {text!r} is not a turn or a range of turns: write 7, 3-9, 3- or -9")
        raise typer.Exit(2)
    return low, high


def _turn_events(store, session: str, first: int | None, last: int | None) -> list[dict]:
    """The session's events of turns first..last, read page by page (never the whole log)."""
    from frontdesk.store.base import trace_page

    events: list[dict] = []
    after: int | None = 0
    while after is not None:
        page, after = trace_page(store, session, after, 5000, first, last)
        events.extend(page)
    return events


@app.command()
def serve(
    programs: list[str] = typer.Argument(..., help="Program files or folders; each is served under its name."),
    host: str = typer.Option("127.0.0.1", "--host", help="The address to listen on."),
    port: int = typer.Option(8000, "--port", help="The port to listen on."),
    llm_mode: str = typer.Option("auto", "--llm", help=LLM_HELP),
    embeddings: Optional[bool] = typer.Option(None, "--embeddings/--no-embeddings", help=EMBEDDINGS_HELP),
    store: str = typer.Option(None, "--store", help="Session store: a SQLite path, 'memory', redis://... or "
                              "postgresql://... (several servers share Redis or PostgreSQL). "
                              "[default: .frontdesk/sessions.sqlite3]"),
    strategy: str = typer.Option("serial", "--strategy", help="serial: a session's messages are answered one "
                                 "after another; preemptive: a newer message supersedes the turn in progress."),
    max_message_chars: int = typer.Option(4000, "--max-message-chars", help="Longer messages get 413."),
    max_turns: int = typer.Option(500, "--max-turns", help="Turns a session may take."),
    idle_expiry: float = typer.Option(0, "--expire-idle", help="Delete sessions idle this many seconds (0: keep)."),
    tokens_file: Optional[Path] = typer.Option(None, "--tokens-file", help="API tokens, one per line "
                                               "(name=token names its user; operator:name=token an operator, "
                                               "who may reload programs); added to FRONTDESK_API_TOKENS."),
    orchestration: Optional[str] = typer.Option(None, "--orchestration", help="How ensembles and supervisors "
                                                "orchestrate their members, overriding the program: adaptive (the "
                                                "default), proactive, merging, autonomous, first-success, best-of-n."),
    allow_env: list[str] = typer.Option([], "--allow-env", metavar="NAME", help=ALLOW_ENV_HELP),
    allow_path: list[str] = typer.Option([], "--allow-path", metavar="DIR", help=ALLOW_PATH_HELP),
) -> None:
    """Serve programs over HTTP: a web chat at /, the JSON API under /v1 (server-sent events), /metrics.

    API tokens come from FRONTDESK_API_TOKENS (comma-separated, each a user); with none set, a token
    is made for this run and printed. Operator tokens, which may also reload programs, come from
    FRONTDESK_OPERATOR_TOKENS and `operator:` lines of --tokens-file."""
    import secrets

    from frontdesk.extras import MissingExtra, require

    try:
        require("serve", "frontdesk serve")
    except MissingExtra as exc:
        _error(str(exc))
        raise typer.Exit(2)
    from frontdesk.server.auth import (
        STRATEGIES,
        TOKENS_ENV,
        ServerSettings,
        operator_tokens_from_env,
        read_tokens_file,
        tokens_from_env,
    )
    from frontdesk.server.observability import configure_json_logging

    _grant(allow_env, allow_path)
    if strategy not in STRATEGIES:
        _error(f"--strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
        raise typer.Exit(2)
    _check_orchestration(orchestration)
    made_token = None
    tokens = tokens_from_env()
    operators = operator_tokens_from_env()
    tokens.update(operators)
    operator_tokens = set(operators)
    if tokens_file is not None:
        try:
            from_file, file_operators = read_tokens_file(tokens_file)
            tokens.update(from_file)
            operator_tokens |= file_operators
        except (OSError, ValueError) as exc:
            _error(f"--tokens-file: {exc}")
            raise typer.Exit(2)
    if not tokens:
        made_token = secrets.token_urlsafe(18)
        tokens = tokens_from_env(made_token)
    settings = ServerSettings(tokens=tokens, operators=operator_tokens, max_message_chars=max_message_chars, max_turns=max_turns,
                              strategy=strategy, expire_idle_after=idle_expiry, orchestration=orchestration)
    loaded, sources = {}, {}
    for given in programs:
        prog, _ = _load(given)
        name = _serve_name(given)
        if name in loaded:
            _error(f"two programs are named {name!r}; serve them from differently named folders")
            raise typer.Exit(2)
        loaded[name], sources[name] = prog, given
    session_store = _open_store(store or _default_store())
    models_by_digest: dict = {}

    def models_for(prog):
        # each program version gets its models; the local models themselves are loaded once per process
        from frontdesk.runtime.engine import program_digest

        digest = program_digest(prog)
        if digest not in models_by_digest:
            models_by_digest[digest] = _choose_models(prog, llm_mode, None, embeddings)
            if models_by_digest[digest].embedder is not None:
                from frontdesk.app import attach_program_phrases

                attach_program_phrases(prog, models_by_digest[digest].embedder)
        return models_by_digest[digest]

    import uvicorn

    from frontdesk.server.app import create_app

    configure_json_logging()
    api = create_app(loaded, session_store, models_for, settings, sources=sources)
    # what is loaded now (programs, models) lives as long as the server: full garbage collections need
    # not walk it again (a collection inside a turn cost about 80 ms; see bench/overhead.md)
    gc.freeze()
    url = f"http://{host}:{port}"
    described = {m.describe() for m in models_by_digest.values()}
    _dim(f"serving {', '.join(loaded)} on {url} (web chat at /, API under /v1, OpenAPI at /openapi.json, "
         f"metrics at /metrics)" + (f" · {described.pop()}" if len(described) == 1 else ""))
    if made_token:
        _note(f"{TOKENS_ENV} is not set, so this run made a token: {made_token}")
        _note(f"open {url}/#token={made_token}")
    try:
        uvicorn.run(api, host=host, port=port, log_level="warning", access_log=False)
    finally:
        api.state.observability.shutdown()


def _serve_name(given: str) -> str:
    """The name a served program goes by: its folder's name, or its file's name without suffixes."""
    path = Path(given).resolve()
    if path.is_file() and path.name in ("agents.yml", "agents.yaml"):
        path = path.parent
    return path.name.split(".")[0] if path.is_file() else path.name


def _mount_acdl() -> None:
    from frontdesk.acdl.cli import app as acdl_app
    from frontdesk.acdl.render_cli import diff_command, render_command

    acdl_app.command("render", help="Render a specification as HTML, SVG, PNG or PDF.")(render_command)
    acdl_app.command("diff", help="Structural diff of two specifications (exit status 1 when they differ).")(
        diff_command)
    acdl_app.command("verify", help="Check the LLM calls of a session trace against a specification.")(
        verify_command)
    app.add_typer(acdl_app, name="acdl", help="Agentic Context Description Language: check, fmt, render, diff, verify.")


def verify_command(
    spec: Path = typer.Argument(..., help="The .acdl specification."),
    trace: str = typer.Argument(..., help="A session id (from the store) or a JSON-lines file from `frontdesk trace --json`."),
    name: Optional[str] = typer.Option(None, "--spec", help="Check every call against this specification instead of the one named like the call's plan."),
    store: str = typer.Option(None, "--store", help="Session store for a session id."),
) -> None:
    """Report, per LLM call, whether its messages conform to the specification (the first mismatch if not)."""
    from frontdesk.acdl import load_acdl
    from frontdesk.acdl.verify import verify_calls

    file_ast, diags = load_acdl(spec)
    if file_ast is None or any(d.is_error for d in diags):
        _print_diagnostics(diags)
        raise typer.Exit(2)
    trace_path = Path(trace)
    if trace_path.is_file():
        try:
            events = [json.loads(line) for line in trace_path.read_text(encoding="utf-8").splitlines() if line.strip()]
        except (OSError, ValueError) as exc:
            _error(f"cannot read trace {trace}: {exc}")
            raise typer.Exit(2)
    else:
        try:
            events = _open_store(store or _default_store()).events(trace)
        except StoreError as exc:
            _error(str(exc))
            raise typer.Exit(2)
        if not events:
            _error(f"{trace} is neither a trace file nor a session in {store or _default_store()}")
            raise typer.Exit(2)
    results = verify_calls(file_ast, events, name)
    if not results:
        err.print("[yellow]no LLM call in the trace has a specification in this file[/yellow] "
                  "(calls are matched by their plan name, e.g. Route_triage; use --spec NAME to force one)")
        raise typer.Exit(1)
    for r in results:
        mark = ("ok", "green") if r.ok else ("mismatch", "red")
        out.print(styled(f"#{r.seq} {r.plan or '-'} vs {r.spec}: ", mark, f" — {r.problem}" if r.problem else ""))
    bad = sum(1 for r in results if not r.ok)
    out.print(Text(f"{len(results)} calls checked, {bad} mismatched"))
    raise typer.Exit(1 if bad else 0)


@app.command()
def describe(
    program: str = typer.Argument(..., help="A program file or the folder that holds it."),
    agent: Optional[str] = typer.Option(None, "--agent", help="Only this agent's calls."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Write the ACDL here instead of stdout."),
    orchestration: Optional[str] = typer.Option(None, "--orchestration", help="Describe the routers' calls under "
                                                "this strategy instead of their own."),
) -> None:
    """Write, in ACDL, every kind of LLM call the runtime makes for a program."""
    from frontdesk.runtime.describe import describe_program

    prog, _ = _load(program, quiet_warnings=True)
    if agent is not None and agent not in prog.agents:
        _error(f"no agent {agent!r}; agents: {', '.join(prog.agents)}")
        raise typer.Exit(2)
    _check_orchestration(orchestration)
    text = describe_program(prog, agent, label=program, orchestration=orchestration)
    if output:
        output.write_text(text, encoding="utf-8")
        err.print(Text(f"wrote {output}"))
    else:
        sys.stdout.write(text)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)


def _mount_commands() -> None:
    """Commands kept in their own modules: each module's `register(app)` adds its command(s). A module
    imports only typer at import time, so `frontdesk --help` stays fast."""
    # one line per module, e.g. `from frontdesk.x.cli import register as _x; _x(app)`
    from frontdesk.convtest.cli import register as _convtest; _convtest(app)  # noqa: E702
    from frontdesk.evaluation.cli import register as _evaluation; _evaluation(app)  # noqa: E702
    from frontdesk.analysis.graph_cli import register as _graph; _graph(app)  # noqa: E702


_mount_acdl()
_mount_commands()

if __name__ == "__main__":
    main()
