"""Play dialogues through MICA (the ADL reference interpreter) and record what happens, turn by turn.

This is the MICA half of the differential harness (issue 25). It runs with MICA's own virtual
environment and imports nothing from Frontdesk:

    PYTHONPATH=/work/shared/reference/mica /work/mica-venv/bin/python \\
        bench/differential/mica_runner.py PROGRAM_DIR DIALOGUES.yml --base-url http://127.0.0.1:PORT \\
        [--out results.jsonl] [--tools tools.py ...] [--env NAME=VALUE ...]

PROGRAM_DIR holds `agents.yml` (and optionally `config.yml`). Tool functions come from `--tools`,
else from a top-level `tools:` list in agents.yml (a Frontdesk extension; MICA's validator skips the
key), else from `tools.py` / `functions.py` in the folder. They are imported as ordinary modules (so
`__file__` and sibling files work) and installed into MICA's tool executor, which then calls them as
it calls its own; every call is observed.

The dialogue file (`dialogues: [{name, about, turns: [{user, expect?}]}]`) is played one dialogue at
a time, each on a freshly built bot (fresh tracker, tool modules imported afresh, and the directory
named by `--fresh-dir-env`, FRONTDESK_EXAMPLE_DB_DIR by default, set to a new empty temporary
directory). Before the first user turn the runner sends MICA's conversation-start message `/init`
(as MICA's workbench does), recorded as turn 0 with `"user": null`.

One JSON object per line is written for each turn:

    {"record": "turn", "dialogue", "turn", "user", "bot": [texts], "speakers": [{"text", "agent",
     "source"}], "agent": first answering agent or null, "tools": [{"name", "args", "status",
     "result", "error"}], "sets": [{"agent", "arg", "value"}], "values": {agent: {arg: value}},
     "function_values": {tool: {arg: value}}, "ended": bool, "stack": [agents],
     "llm_calls": [{"kind", "answer"}], "error": null | "..."}

and one {"record": "dialogue", ...} summary line per dialogue (turns played, error, load notes).
`ended` is true when an ensemble's exit agent ran in the turn: MICA's only notion of a conversation
ending (its default exit agent says nothing then; only after 5 s of silence would it start asking
"Do you have any other question?"; the runner does not wait, see MICA_NOTES.md). `bot` keeps MICA's
texts exactly, empty ones included (an llm agent that quits with "bot": "" adds an empty text).
A failing turn is recorded with its error and the rest of that dialogue is skipped (unless
--continue-after-error: MICA's server keeps the conversation and takes the next message); a program that
MICA refuses to load gives one dialogue line per dialogue with the error. The run never crashes on
a dialogue. Exit status: 0 when every dialogue was played without error, 1 otherwise, 2 on a usage
error or an unreachable model server.

Programs MICA cannot start as written can be adapted explicitly: `--skip-validation` (MICA's
validator rejects several paper/guide constructs) and `--wrap-main` (MICA's processor can only start
from a flow agent: a non-flow `main` is called from a wrapping flow). Each adaptation is listed in the
dialogue line's `notes`.

The model: every chat request MICA makes goes to `<base-url>/v1/chat/completions` (MICA's OpenAI
client, provider `openai`), including those of agents MICA builds with its default OpenAI settings
(`fallback: default`, conditions in ensemble steps), and knowledge-base embeddings go to
`<base-url>/v1/embeddings` (MICA's provider `custom`). See MICA_NOTES.md for the request kinds.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import contextlib
import copy
import importlib
import importlib.util
import json
import logging
import os
import pathlib
import re
import shutil
import sys
import tempfile
import traceback
from typing import Any

DEFAULT_MICA = "/work/shared/reference/mica"
USER_ID = "differential"
INIT_MESSAGE = "/init"
HIDDEN_ARGS = {"sender", "bot_name", "__mapping__"}


# ---- JSON-safe values -----------------------------------------------------------------------------


def plain(value: Any, depth: int = 0) -> Any:
    """A JSON-serialisable copy of a value (repr for anything else)."""
    if depth > 8:
        return repr(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {str(k): plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [plain(v, depth + 1) for v in value]
    if hasattr(value, "model_dump"):  # a pydantic model (Frontdesk's side uses this function too)
        return plain(value.model_dump(mode="json"), depth + 1)
    return repr(value)


# ---- what happened in one turn --------------------------------------------------------------------


class TurnLog:
    def __init__(self) -> None:
        self.depth = 0
        self.outer: list[tuple[Any, list]] = []  # (agent the processor ran, events it returned)
        self.made_by: dict[int, Any] = {}  # id(BotUtter) -> the innermost agent that returned it
        self.tools: list[dict[str, Any]] = []
        self.sets: list[dict[str, Any]] = []
        self.kb_answers: list[str] = []
        self.exit_by: list[str] = []
        self.llm_calls: list[dict[str, Any]] = []
        self.raw_results: list[Any] = []  # raw return values of tool functions, in call order
        self.kb_agents: list[str] = []  # names of the program's kb agents


LOG = TurnLog()


def install_observers(mica: dict[str, Any]) -> None:
    """Wrap MICA's agent runs, argument setting, tool execution and model calls so that each turn's
    speakers, values set, tool calls and model calls are recorded. MICA's behaviour is unchanged."""
    BotUtter = mica["BotUtter"]
    Tracker = mica["Tracker"]
    Executor = mica["SafePythonExecutor"]
    OpenAIModel = mica["OpenAIModel"]
    exit_classes = (mica["DefaultExitAgent"],)

    def wrap_run(cls):
        original = cls.__dict__["run"]

        async def run(self, *args, **kwargs):
            LOG.depth += 1
            try:
                result = await original(self, *args, **kwargs)
            finally:
                LOG.depth -= 1
            events = result[1] if isinstance(result, tuple) and len(result) == 2 else []
            events = events if isinstance(events, list) else []
            for event in events:
                if isinstance(event, BotUtter) and id(event) not in LOG.made_by:
                    LOG.made_by[id(event)] = self
            if isinstance(self, mica["KBAgent"]):
                for event in events:
                    meta = getattr(event, "metadata", None)
                    if isinstance(meta, dict) and meta.get("answer"):
                        LOG.kb_answers.append(meta["answer"])
            if isinstance(self, exit_classes) or getattr(self, "_is_exit_of", None):
                LOG.exit_by.append(getattr(self, "_is_exit_of", None) or self.name)
            if LOG.depth == 0:
                LOG.outer.append((self, events))
            return result

        run.__wrapped__ = original
        cls.run = run

    for name in ("FlowAgent", "LLMAgent", "EnsembleAgent", "KBAgent", "DefaultFallbackAgent",
                 "DefaultExitAgent"):
        wrap_run(mica[name])

    original_set = Tracker.set_arg

    def set_arg(self, agent_name, arg_name, arg_value):
        ok = original_set(self, agent_name, arg_name, arg_value)
        if ok and not str(arg_name).startswith("_"):
            LOG.sets.append({"agent": agent_name, "arg": arg_name, "value": plain(arg_value)})
        return ok

    Tracker.set_arg = set_arg

    original_execute = Executor.execute_function

    def execute_function(self, func_name, *args, **kwargs):
        before = len(LOG.raw_results)
        outcome = original_execute(self, func_name, *args, **kwargs)
        raw = LOG.raw_results[before] if len(LOG.raw_results) > before else None
        entry = {"name": func_name, "args": plain(kwargs), "status": outcome.get("status"),
                 "result": plain(raw)}
        if outcome.get("status") == "error":
            entry["error"] = outcome.get("error")
        if outcome.get("stdout"):
            entry["stdout"] = outcome["stdout"]
        LOG.tools.append(entry)
        return outcome

    Executor.execute_function = execute_function

    original_generate = OpenAIModel.generate_message

    async def generate_message(self, prompts, *args, **kwargs):
        result = await original_generate(self, prompts, *args, **kwargs)
        answer = []
        for event in result:
            if isinstance(event, BotUtter):
                answer.append(event.text)
            elif hasattr(event, "function_name"):
                answer.append({"call": event.function_name, "args": plain(event.args)})
        LOG.llm_calls.append({"kind": request_kind(prompts, bool(kwargs.get("functions"))), "answer": answer})
        return result

    OpenAIModel.generate_message = generate_message


def request_kind(prompts: list[dict[str, Any]], has_tools: bool) -> str:
    """The kind of a MICA model request, from the fixed opening of its prompt (for the record only)."""
    system = next((m.get("content") or "" for m in prompts if m.get("role") == "system"), "")
    first = prompts[0].get("content") or "" if prompts else ""
    if system.startswith("Your task is to identify the user"):
        return "claims"
    if system.startswith("Your task is to select an agent"):
        return "route"
    if system.startswith("You can talk to the user and act according to the instruction below"):
        return "llm_agent"
    if "What you generate is that you cannot understand" in system:
        return "fallback"
    if "Your name is:" in system and "Please reply in JSON format" in system:
        return "flow_args"
    if first.startswith("You are an assistant for question-answering tasks"):
        return "kb_answer"
    return "other"


# ---- loading a program ----------------------------------------------------------------------------


def import_mica(mica_path: str) -> dict[str, Any]:
    """Import MICA (its logging config writes app.log into the working directory: use a scratch one)."""
    if mica_path not in sys.path:
        sys.path.insert(0, mica_path)
    os.environ.setdefault("USER_AGENT", "mica-differential-runner")
    here = os.getcwd()
    scratch = tempfile.mkdtemp(prefix="mica-run-")
    os.chdir(scratch)
    names = {  # key: (module, attribute or None for the module itself)
        "mica_parser": ("mica.parser", None), "mica_utils": ("mica.utils", None),
        "openai_model": ("mica.llm.openai_model", None),
        "OpenAIModel": ("mica.llm.openai_model", "OpenAIModel"),
        "DefaultExitAgent": ("mica.agents.default", "DefaultExitAgent"),
        "DefaultFallbackAgent": ("mica.agents.default", "DefaultFallbackAgent"),
        "EnsembleAgent": ("mica.agents.ensemble_agent", "EnsembleAgent"),
        "FlowAgent": ("mica.agents.flow_agent", "FlowAgent"),
        "Function": ("mica.agents.functions", "Function"),
        "KBAgent": ("mica.agents.kb_agent", "KBAgent"),
        "LLMAgent": ("mica.agents.llm_agent", "LLMAgent"),
        "Bot": ("mica.bot", "Bot"),
        "BotUtter": ("mica.event", "BotUtter"),
        "SafePythonExecutor": ("mica.exec_tool", "SafePythonExecutor"),
        "Tracker": ("mica.tracker", "Tracker"),
    }
    found: dict[str, Any] = {}
    try:
        with contextlib.redirect_stdout(sys.stderr):
            for key, (module_name, attribute) in names.items():
                module = importlib.import_module(module_name)
                found[key] = getattr(module, attribute) if attribute else module
    finally:
        os.chdir(here)
        for name in ("sys_info", "user_info", "bot_info", ""):  # MICA's loggers write app.log: stop that
            log = logging.getLogger(name)
            for handler in [h for h in log.handlers if isinstance(h, logging.FileHandler)]:
                log.removeHandler(handler)
                handler.close()
        shutil.rmtree(scratch, ignore_errors=True)
    return found


def quiet_mica_logging(verbose: bool) -> None:
    for name in ("sys_info", "user_info", "bot_info", ""):
        log = logging.getLogger(name)
        log.setLevel(logging.DEBUG if verbose else logging.WARNING)
        for handler in log.handlers:
            if isinstance(handler, logging.StreamHandler) and getattr(handler, "stream", None) is sys.stdout:
                handler.setStream(sys.stderr)


def tool_files(folder: pathlib.Path, agents: dict[str, Any], given: list[str]) -> list[pathlib.Path]:
    if given:
        return [pathlib.Path(p).resolve() for p in given]
    listed = agents.get("tools") if isinstance(agents, dict) else None
    if isinstance(listed, list) and listed:
        return [(folder / str(p)).resolve() for p in listed]
    return [folder / n for n in ("tools.py", "functions.py") if (folder / n).is_file()]


class Tools:
    """Tool functions imported from files, with MICA's own reading of their signatures."""

    def __init__(self, files: list[pathlib.Path], mica: dict[str, Any]) -> None:
        self.files = files
        self.functions: dict[str, Any] = {}  # name -> the module's function
        self.specs: list[dict[str, Any]] = []  # MICA's description of each (name, description, args)
        for index, path in enumerate(files):
            source = path.read_text(encoding="utf-8")
            spec = importlib.util.spec_from_file_location(f"mica_run_tools_{index}_{path.stem}", path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
            for fn in mica["SafePythonExecutor"]._extract_functions_from_script(ast.parse(source)):
                self.functions[fn["name"]] = getattr(module, fn["name"])
                self.specs.append(fn)

    def install(self, bot, mica: dict[str, Any]) -> None:
        executor = bot.tools
        Function = mica["Function"]
        executor.functions = {fn["name"]: Function.create(**fn) for fn in self.specs}
        for name, fn in self.functions.items():
            executor.script_namespace[name] = observed(fn)
        # the tracker's per-function argument table, as Bot.__init__ builds it from the executor
        bot._func_args_config = {name: {} for name in executor.functions}


def observed(fn):
    def call(*args, **kwargs):
        result = fn(*args, **kwargs)
        LOG.raw_results.append(result)
        return result

    call.__name__ = getattr(fn, "__name__", "tool")
    call.__doc__ = getattr(fn, "__doc__", None)
    return call


def resolve_sources(agents: dict[str, Any], folder: pathlib.Path, allow_web: bool, notes: list[str]) -> None:
    """Knowledge sources: drop web addresses unless allowed (MICA would fetch them while loading);
    resolve relative paths against the program folder (MICA's examples name them from its repository
    root, e.g. ./examples/retail_banking/docs)."""
    for name, agent in agents.items():
        if not isinstance(agent, dict) or agent.get("type") != "kb agent":
            continue
        sources = agent.get("sources") or []
        kept = []
        for source in sources:
            text = str(source)
            if re.match(r"^(https?|ftp)://", text):
                if allow_web:
                    kept.append(text)
                else:
                    notes.append(f"{name}: web source left out: {text}")
                continue
            path = pathlib.Path(text)
            if not path.is_absolute():
                candidates = [folder / path]
                parts = path.parts
                if "examples" in parts and parts.index("examples") + 2 <= len(parts):
                    candidates.append(folder.joinpath(*parts[parts.index("examples") + 2:]))
                found = next((c for c in candidates if c.exists()), None)
                if found is not None:
                    text = str(found.resolve())
                else:
                    notes.append(f"{name}: source not found: {source}")
            kept.append(text)
        agent["sources"] = kept


def build_bot(folder: pathlib.Path, mica: dict[str, Any], options, tools: Tools | None, notes: list[str]):
    import yaml  # MICA's workbench reads agents.yml with PyYAML (YAML 1.1)

    agents = yaml.safe_load((folder / "agents.yml").read_text(encoding="utf-8"))
    if not isinstance(agents, dict):
        raise ValueError("agents.yml is not a mapping of agents")
    for key in [k for k, v in agents.items() if not isinstance(v, dict)]:
        notes.append(f"top-level key left out (not an agent): {key}")
        agents.pop(key)
    resolve_sources(agents, folder, options.web, notes)
    code = "\n".join(p.read_text(encoding="utf-8") for p in tools.files) if tools else None
    if not options.skip_validation:
        errors = mica["mica_parser"].Validator().validate(copy.deepcopy(agents), code)
        if errors:
            raise ValueError("MICA's validator refuses the program: " +
                             "; ".join(f"{e.rule_name}: {e.message} ({e.path})" for e in errors))
    parsed = mica["mica_parser"].parse_agents(agents)

    config: dict[str, Any] = {}
    if (folder / "config.yml").is_file():
        config = yaml.safe_load((folder / "config.yml").read_text(encoding="utf-8")) or {}
    config.setdefault("unsafe_mode", True)
    config["llm"] = {
        "chat": {"provider": "openai", "server": options.server, "api_key": options.api_key,
                 "model": options.model},
        "embedding": {"provider": "custom", "server": options.server, "api_key": options.api_key,
                      "model": options.embedding_model},
    }
    here = os.getcwd()
    os.chdir(folder)
    try:
        # MICA's workbench always hands over a tool script ("" when the bot has no .py file), so a
        # program without tools gets an empty executor: a missing function is an error result, not a crash
        bot = mica["Bot"].from_json(name=folder.name, data=parsed, config=config, tool_code="")
    finally:
        os.chdir(here)
    if tools:
        tools.install(bot, mica)
    main = bot.agents.get("main")
    if options.wrap_main and main is not None and not isinstance(main, mica["FlowAgent"]):
        # MICA's processor can only start from a flow: an ensemble, llm or kb agent as `main` fails on
        # every message. Start instead from a flow named `main` (so that, like MICA's own entry flows,
        # it extracts nothing) whose one step calls the program's `main`, as MICA's examples write it.
        bot.entrypoint = mica["FlowAgent"].create(name="main", description="", steps=[{"call": "main"}],
                                                  config=config, llm_model=getattr(main, "llm_model", None))
        notes.append(f"main ({kind_of(main, mica)} agent) started from a wrapping flow (--wrap-main)")
    members = {m for a in bot.agents.values() for m in (getattr(a, "contains", None) or [])}
    for agent in list(bot.agents.values()):
        exit_agent = getattr(agent, "exit_agent", None)
        # an `exit:` naming one of the program's agents: its runs count as the exit unless it is also a member
        if exit_agent is not None and not isinstance(exit_agent, str) \
                and getattr(exit_agent, "name", None) not in members:
            try:
                exit_agent._is_exit_of = f"exit of {agent.name}"
            except AttributeError:
                pass
    return bot


# ---- playing dialogues ----------------------------------------------------------------------------


def snapshot(tracker) -> tuple[dict[str, Any], dict[str, Any]]:
    values = {}
    for agent, args in tracker.args.items():
        if agent in HIDDEN_ARGS or not isinstance(args, dict):
            continue
        try:
            resolved = tracker.get_args(agent)
        except Exception:  # noqa: BLE001 - a broken mapping: show the raw values
            resolved = args
        shown = {k: plain(v) for k, v in resolved.items() if not str(k).startswith("_")}
        if shown:
            values[agent] = shown
    functions = {name: plain(args) for name, args in tracker.func_args.items() if args}
    return values, functions


def stack_names(tracker) -> list[str]:
    names = []
    for event in tracker.agent_stack.keys():
        agent = getattr(event, "agent", None)
        names.append(getattr(agent, "name", None) or repr(agent))
    return names


def speakers(mica: dict[str, Any]) -> list[dict[str, Any]]:
    """Who said each text of the turn, in the order MICA's processor collects them."""
    BotUtter = mica["BotUtter"]
    out = []
    for agent, events in LOG.outer:
        for event in events:
            if not isinstance(event, BotUtter):
                continue
            maker = LOG.made_by.get(id(event), agent)
            source = kind_of(maker, mica)
            name = getattr(agent, "name", None)  # a fallback's or exit's text belongs to its owner
            if isinstance(agent, mica["EnsembleAgent"]) and event.text in LOG.kb_answers and LOG.kb_agents:
                name, source = LOG.kb_agents[0], "kb"  # the ensemble speaks the kb agent's answer
            out.append({"raw": event.text, "agent": name, "source": source})
    return out


def kind_of(agent, mica: dict[str, Any]) -> str:
    for cls, kind in ((mica["DefaultFallbackAgent"], "fallback"), (mica["DefaultExitAgent"], "exit"),
                      (mica["KBAgent"], "kb"), (mica["EnsembleAgent"], "ensemble"),
                      (mica["LLMAgent"], "llm"), (mica["FlowAgent"], "flow")):
        if isinstance(agent, cls):
            return kind
    return type(agent).__name__


async def play_turn(bot, text: str, mica: dict[str, Any]) -> dict[str, Any]:
    global LOG
    kb_agents = [n for n, a in bot.agents.items() if isinstance(a, mica["KBAgent"])]
    LOG = TurnLog()
    LOG.kb_agents = kb_agents
    record: dict[str, Any] = {"error": None}
    try:
        with contextlib.redirect_stdout(sys.stderr):
            response = await bot.handle_message(USER_ID, text)
    except Exception as exc:  # noqa: BLE001 - recorded, never raised
        response = None
        record["error"] = f"{type(exc).__name__}: {exc}"
        record["traceback"] = traceback.format_exc(limit=8)
    finally:
        # MICA's default exit agent starts a timer task (retry after 5 s idle, then "Goodbye!");
        # a scripted dialogue has no idle time: stop it so that it never writes into the history.
        for task in asyncio.all_tasks():
            if task is not asyncio.current_task():
                task.cancel()
        await asyncio.sleep(0)
    texts = []
    for item in response or []:
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, mica["BotUtter"]):  # the entry flow's own messages come back as events
            texts.append(item.text)
    said = speakers(mica)
    if len(said) == len(texts):
        for entry, shown in zip(said, texts):
            entry["text"] = shown
            del entry["raw"]
    else:
        for entry in said:
            entry["text"] = entry.pop("raw")
        record["speakers_note"] = "speakers could not be matched one to one with the texts"
    tracker = bot.tracker_store.retrieve(USER_ID)
    values, functions = snapshot(tracker) if tracker is not None else ({}, {})
    record.update({
        "bot": texts,
        "speakers": said,
        "agent": next((s["agent"] for s in said if s.get("agent") and (s.get("text") or "").strip()), None),
        "tools": LOG.tools,
        "sets": LOG.sets,
        "values": values,
        "function_values": functions,
        "ended": bool(LOG.exit_by),
        "stack": stack_names(tracker) if tracker is not None else [],
        "llm_calls": LOG.llm_calls,
    })
    return record


async def play_dialogue(dialogue: dict[str, Any], folder, mica, options, tools, emit) -> dict[str, Any]:
    name = str(dialogue.get("name") or "?")
    notes: list[str] = []
    summary = {"record": "dialogue", "dialogue": name, "turns": 0, "error": None, "notes": notes}
    try:
        bot = build_bot(folder, mica, options, tools, notes)
    except Exception as exc:  # noqa: BLE001
        summary["error"] = f"load: {type(exc).__name__}: {exc}"
        summary["traceback"] = traceback.format_exc(limit=8)
        return summary
    turns = [t for t in dialogue.get("turns") or [] if isinstance(t, dict)]
    plan: list[tuple[int, str | None, str]] = []
    if options.init:
        plan.append((0, None, INIT_MESSAGE))
    plan += [(i, str(t.get("user", "")), str(t.get("user", ""))) for i, t in enumerate(turns, start=1)]
    for index, shown, text in plan:
        record = {"record": "turn", "dialogue": name, "turn": index, "user": shown}
        if options.announce:
            announce(options.server, name, index)
        record.update(await play_turn(bot, text, mica))
        emit(record)
        if index:
            summary["turns"] += 1
        if record["error"]:
            summary.setdefault("errors", []).append(f"turn {index}: {record['error']}")
            summary["error"] = summary["errors"][0]
            if not options.continue_after_error:
                summary["skipped"] = len(plan) - plan.index((index, shown, text)) - 1
                break
    return summary


def announce(server: str, dialogue: str, turn: int) -> Any:
    """Tell the shared model server (shared_model.py) which turn is played next; its oracle for the turn.
    `server` is the address without `/v1`."""
    import urllib.request

    request = urllib.request.Request(f"{server}/harness/turn", data=json.dumps({"dialogue": dialogue, "turn": turn}).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read() or b"{}").get("oracle")


def load_dialogues(path: pathlib.Path) -> list[dict[str, Any]]:
    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    dialogues = data.get("dialogues") if isinstance(data, dict) else data
    if not isinstance(dialogues, list):
        raise ValueError(f"{path}: expected `dialogues:` with a list")
    return [d for d in dialogues if isinstance(d, dict)]


def server_reachable(server: str) -> bool:
    """A TCP connection to the server opens (MICA's embedding client hides a refused connection:
    a kb agent would then fail inside FAISS with an unhelpful IndexError)."""
    import socket
    from urllib.parse import urlparse

    address = urlparse(server)
    port = address.port or (443 if address.scheme == "https" else 80)
    try:
        with socket.create_connection((address.hostname or "127.0.0.1", port), timeout=5):
            return True
    except OSError:
        return False


def pin_hash_seed() -> None:
    """MICA lists an ensemble's candidate members from a Python set, so their order in the routing
    prompt depends on string hashing: re-run under a fixed PYTHONHASHSEED for repeatable prompts."""
    if os.environ.get("PYTHONHASHSEED") is None and __name__ == "__main__":
        env = dict(os.environ, PYTHONHASHSEED="0")
        os.execve(sys.executable, [sys.executable, os.path.abspath(__file__), *sys.argv[1:]], env)


def main(argv: list[str] | None = None) -> int:
    pin_hash_seed()
    parser = argparse.ArgumentParser(description="Play ADL dialogues through MICA and record each turn.")
    parser.add_argument("program", help="folder holding agents.yml (and config.yml)")
    parser.add_argument("dialogues", help="YAML file with `dialogues:`")
    parser.add_argument("--base-url", required=True, help="OpenAI-compatible server, e.g. http://127.0.0.1:8000")
    parser.add_argument("--model", default="ideal", help="model name sent with each request")
    parser.add_argument("--embedding-model", default="ideal-embedding")
    parser.add_argument("--api-key", default="differential", help="bearer key sent to the server")
    parser.add_argument("--out", default="-", help="JSON-lines output file (default: standard output)")
    parser.add_argument("--tools", action="append", default=[], help="tool file(s) to use (repeatable)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="environment for the tools, e.g. FRONTDESK_EXAMPLE_TODAY=2026-11-22")
    parser.add_argument("--fresh-dir-env", default="FRONTDESK_EXAMPLE_DB_DIR",
                        help="variable set to a new empty directory for each dialogue ('' for none)")
    parser.add_argument("--only", action="append", default=[], help="play only the named dialogue(s)")
    parser.add_argument("--continue-after-error", action="store_true",
                        help="after a turn fails in MICA, go on with the dialogue's next turns (MICA's server would)")
    parser.add_argument("--no-init", dest="init", action="store_false", help="do not send /init first")
    parser.add_argument("--program-label", help="the `program` field of each line (default: none)")
    parser.add_argument("--announce", action="store_true",
                        help="POST each turn to BASE/harness/turn first (the shared model server, shared_model.py)")
    parser.add_argument("--web", action="store_true", help="let kb agents fetch their web sources")
    parser.add_argument("--wrap-main", action="store_true",
                        help="when `main` is not a flow agent, start from a flow that calls it (MICA "
                             "crashes on every message otherwise)")
    parser.add_argument("--skip-validation", action="store_true", help="do not run MICA's validator")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per model request")
    parser.add_argument("--mica", default=os.environ.get("MICA_PATH", DEFAULT_MICA))
    parser.add_argument("--verbose", action="store_true", help="MICA's debug log (prompts) on stderr")
    options = parser.parse_args(argv)

    folder = pathlib.Path(options.program).resolve()
    if not (folder / "agents.yml").is_file():
        print(f"no agents.yml in {folder}", file=sys.stderr)
        return 2
    try:
        dialogues = load_dialogues(pathlib.Path(options.dialogues))
    except (OSError, ValueError) as exc:
        print(f"cannot read dialogues: {exc}", file=sys.stderr)
        return 2
    if options.only:
        dialogues = [d for d in dialogues if str(d.get("name")) in options.only]
    for pair in options.env:
        key, _, value = pair.partition("=")
        os.environ[key] = value
    options.server = re.sub(r"/v1/?$", "", options.base_url.rstrip("/"))

    if not server_reachable(options.server):
        print(f"the model server {options.server} does not accept connections", file=sys.stderr)
        return 2

    mica = import_mica(options.mica)
    quiet_mica_logging(options.verbose)
    # Agents MICA builds without the bot's model (`fallback: default`, conditions inside ensemble or
    # llm agent steps) use OpenAI's address and the OPENAI_API_KEY variable: point them here too.
    os.environ["OPENAI_API_KEY"] = options.api_key
    mica["openai_model"].OPENAI_CHAT_URL = options.server + "/v1/chat/completions"
    import httpx

    original_init = mica["OpenAIModel"].__init__

    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        self.client = httpx.AsyncClient(timeout=options.timeout)  # MICA's own is 10 s

    mica["OpenAIModel"].__init__ = init
    install_observers(mica)

    agents_yaml = {}
    try:
        import yaml

        agents_yaml = yaml.safe_load((folder / "agents.yml").read_text(encoding="utf-8")) or {}
    except Exception:  # noqa: BLE001 - build_bot reports it per dialogue
        pass
    files = tool_files(folder, agents_yaml if isinstance(agents_yaml, dict) else {}, options.tools)

    out = sys.stdout if options.out == "-" else open(options.out, "w", encoding="utf-8")
    failures = 0

    def emit(record: dict[str, Any]) -> None:
        if options.program_label:
            record = {**record, "program": options.program_label}
        out.write(json.dumps(record, ensure_ascii=False, default=repr) + "\n")
        out.flush()

    try:
        for dialogue in dialogues:
            with tempfile.TemporaryDirectory(prefix="mica-dialogue-") as scratch:
                if options.fresh_dir_env:
                    os.environ[options.fresh_dir_env] = scratch
                try:
                    # the tool modules are imported afresh for each dialogue: module-level state
                    # (in-memory bookings, counters) never carries over from one dialogue to the next
                    with contextlib.redirect_stdout(sys.stderr):
                        tools = Tools(files, mica) if files else None
                except Exception as exc:  # noqa: BLE001
                    summary = {"record": "dialogue", "dialogue": str(dialogue.get("name")), "turns": 0,
                               "error": f"load: tools: {type(exc).__name__}: {exc}",
                               "traceback": traceback.format_exc(limit=8), "notes": []}
                else:
                    try:
                        summary = asyncio.run(play_dialogue(dialogue, folder, mica, options, tools, emit))
                    except Exception as exc:  # noqa: BLE001 - never crash the run
                        summary = {"record": "dialogue", "dialogue": str(dialogue.get("name")), "turns": 0,
                                   "error": f"{type(exc).__name__}: {exc}",
                                   "traceback": traceback.format_exc(limit=8), "notes": []}
            summary["files"] = {"program": str(folder), "tools": [str(f) for f in files]}
            failures += bool(summary.get("error"))
            emit(summary)
            mica["mica_utils"].clear_web_log_contents()
    finally:
        if out is not sys.stdout:
            out.close()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
