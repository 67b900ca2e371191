"""Play dialogues through Frontdesk's Engine and record what happens, turn by turn (issue 25).

The Frontdesk half of the differential harness; its JSON lines have the same shape as
mica_runner.py's, so that score.py and compare.py read both:

    python bench/differential/frontdesk_runner.py PROGRAM_DIR [DIALOGUES.yml] \\
        --model ideal|none|local | --base-url URL  [--out FILE] [--only NAME] [--program-label NAME]

PROGRAM_DIR holds `agents.yml` (its `tools:` list names its tool files). DIALOGUES.yml defaults to
PROGRAM_DIR/dialogues.yml (`dialogues: [{name, about, turns: [{user, expect?}]}]`, see
heldout/README.md).

Models:
- `--model none`: no LLM and no understanding model (what `frontdesk chat` runs with when nothing
  is installed and no endpoint is configured): only steps that need no model can work.
- `--model ideal`: bench/ideal_model.py behind a local HTTP server. That model answers from a
  per-turn oracle: a turn's own `oracle:` (agents, then, means, args, model, evidence, answer as in
  bench/intent_shift/) when it has one; the held-out dialogues carry none, so one is derived from each
  turn's `expect` (see `derive_oracle`) and recorded in the line (`oracle`). What the model answered to each
  request is recorded too (`llm_calls`); answers it gave for lack of an oracle are counted in the
  dialogue line (`oracle_gaps`).
- `--model local`: the local models, as `frontdesk chat --llm auto` chooses them.
- `--base-url URL`: any OpenAI-compatible server (model `--model-name`, default "ideal"), e.g. the
  shared deterministic server both MICA and Frontdesk run against.

One JSON object per line per turn:

    {"record": "turn", "program", "dialogue", "turn", "user", "bot": [texts], "says": [texts],
     "speakers": [{"text", "agent", "source"}], "agent": first agent that said something or null,
     "tools": [{"name", "args", "status", "result"}], "sets": [{"agent", "arg", "value"}],
     "values": {agent: {arg: value}}, "function_values": {tool: {value: ...}}, "ended": bool,
     "stack": [agents], "llm_calls": [{"kind", "agent", "answer"}], "error": null | "...",
     "oracle": {...} (ideal only)}

Turn 0 is the session start (`user: null`): what the program says before the first message, as
MICA's runner records its `/init`. One {"record": "dialogue", ...} line follows each dialogue. The
run never crashes on a dialogue: an exception is recorded as the turn's `error` and the dialogue goes
on with its next turn (a fresh session is not started; use --stop-after-error to stop the dialogue).
Exit status 0 when no turn failed with an error, 1 otherwise, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import re
import sys
import tempfile
import traceback
from typing import Any

import yaml

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from mica_runner import announce, plain  # noqa: E402  (standard library only: the MICA side's helpers)

BENCH = HERE.parent
TODAY = "2026-11-22"  # the examples' tools read FRONTDESK_EXAMPLE_TODAY
ENDPOINT_ENV = ("FRONTDESK_LLM_BASE_URL", "FRONTDESK_LLM_API_KEY", "FRONTDESK_LLM_MODEL",
                "OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL")


def load_dialogues(path: pathlib.Path) -> list[dict[str, Any]]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    dialogues = data.get("dialogues") if isinstance(data, dict) else data
    if not isinstance(dialogues, list):
        raise ValueError(f"{path}: expected `dialogues:` with a list")
    return [d for d in dialogues if isinstance(d, dict)]


@contextlib.contextmanager
def environment(**values: str):
    """Endpoint variables cleared (a developer's own endpoint must not leak in) and `values` set;
    everything restored afterwards."""
    touched = set(ENDPOINT_ENV) | set(values)
    saved = {k: os.environ.pop(k) for k in touched if k in os.environ}
    os.environ.update(values)
    try:
        yield
    finally:
        for k in touched:
            os.environ.pop(k, None)
        os.environ.update(saved)


# ---- the oracle the ideal model needs, derived from a turn's expectations --------------------------


def _norm(text: Any) -> str:
    return " ".join(re.sub(r"[^\w]+", " ", str(text).lower()).split())


def call_bindings(agents_yml: dict[str, Any]) -> dict[str, list[tuple[str, str]]]:
    """tool -> [(tool parameter, flow argument it is bound to)] from every `call:` step with `args`
    (mapping or list style); the argument is the last part of a dotted source (`take_order.items`)."""
    found: dict[str, list[tuple[str, str]]] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("call"), str) and node.get("args") is not None:
                args = node["args"]
                pairs = list(args.items()) if isinstance(args, dict) else [
                    kv for item in args if isinstance(item, dict) for kv in item.items()] \
                    if isinstance(args, list) else []
                for param, source in pairs:
                    if isinstance(source, str) and re.fullmatch(r"[A-Za-z_][\w.]*", source.strip()):
                        found.setdefault(node["call"], []).append((str(param), source.strip().split(".")[-1]))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(agents_yml)
    return found


def claims_examples(program) -> list[str]:
    """Every `the user claims` example string of the program."""
    out = []
    for agent in program.agents.values():
        for graph in (getattr(agent, "graph", None), getattr(agent, "setup", None)):
            for node in (graph.nodes.values() if graph is not None else []):
                for case in getattr(node, "cases", None) or []:
                    out += [str(e) for e in getattr(case.condition, "examples", None) or []]
    return out


def match_claim(user: str, examples: list[str]) -> str | None:
    """The claims example the message means, read lexically: equal or contained (either way, whole
    words), else the best word overlap of at least 60 % of the example's words."""
    said = _norm(user)
    if not said:
        return None
    best, score = None, 0.0
    for example in examples:
        wanted = _norm(example)
        if not wanted:
            continue
        if said == wanted or f" {wanted} " in f" {said} " or (len(said.split()) >= 2 and f" {said} " in f" {wanted} "):
            return example
        words = set(wanted.split())
        overlap = len(words & set(said.split())) / len(words)
        if overlap > score:
            best, score = example, overlap
    return best if score >= 0.6 else None


def derive_oracle(turn: dict[str, Any], program, bindings, examples, active_agent: str | None,
                  sticky: str | None = None):
    """A TurnOracle for the ideal model from a turn's `expect` (the held-out dialogues have no other):
    agents = [expect.agent], else [the agent an earlier turn named] while that agent has not finished
    (the dialogue goes on talking to it); args = the values of `sets` (arg name = the part after the dot) and the
    flow arguments bound to an expected tool call's arguments (`call_bindings`); means = the claims
    example the message matches lexically; an llm agent's script (the expected agent's, else the
    active llm agent's) = the expected tool call, then a reply made of the first `says` text."""
    from ideal_model import REPLY_KEY, TurnOracle

    expect = turn.get("expect") or {}
    agent = expect.get("agent")
    agent = str(agent[0] if isinstance(agent, list) and agent else agent) if agent else None
    agent = agent or sticky
    args: dict[str, Any] = {}
    for key, value in (expect.get("sets") or {}).items():
        args[str(key).split(".")[-1]] = value
    tools = expect.get("tool")
    tools = tools if isinstance(tools, list) else [tools] if isinstance(tools, dict) else []
    for tool in tools:
        for param, value in (tool.get("args") or {}).items():
            for bound_param, arg in bindings.get(str(tool.get("name")), []):
                if bound_param == str(param):
                    args.setdefault(arg, value)
    means = match_claim(str(turn.get("user", "")), examples)
    model: dict[str, list[dict[str, Any]]] = {}
    kinds = {n: a.kind for n, a in program.agents.items()}
    speaker = agent if agent and kinds.get(agent) == "reasoning" else \
        (active_agent if not agent and kinds.get(active_agent or "") == "reasoning" else None)
    if speaker:
        steps: list[dict[str, Any]] = [{str(t["name"]): dict(t.get("args") or {})} for t in tools
                                       if t.get("name") in getattr(program.agents[speaker], "tools", ())]
        says = expect.get("says") or []
        steps.append({REPLY_KEY: str(says[0]) if says else "OK."})
        model[speaker] = steps
    data = {"user": str(turn.get("user", "")), "agents": [agent] if agent and agent in kinds else [],
            "args": args, "means": means, "model": model}
    return TurnOracle.from_dict(data), data


# ---- running --------------------------------------------------------------------------------------


class Runner:
    def __init__(self, options) -> None:
        self.options = options
        self.server = None
        self.counter = None

    def __enter__(self) -> "Runner":
        if self.options.model == "ideal" and not self.options.base_url:
            from ideal_model import IdealModelServer, TokenCounter

            self.counter = TokenCounter()
            self.server = IdealModelServer().__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.server is not None:
            self.server.__exit__(*exc)

    def models(self, program):
        """(llm, understanding, embedder, description)."""
        from frontdesk.app import choose_models
        from frontdesk.llm.openai_compat import provider_from_config

        options = self.options
        if options.base_url or options.model == "ideal":
            url = options.base_url or self.server.base_url
            url = url.rstrip("/")
            url = url if url.endswith("/v1") else url + "/v1"
            llm = provider_from_config({}, env={"FRONTDESK_LLM_BASE_URL": url, "FRONTDESK_LLM_API_KEY": options.api_key,
                                                "FRONTDESK_LLM_MODEL": options.model_name})
            return llm, None, None, f"LLM: {llm.name} at {url} · understanding: none"
        if options.model == "none":
            return None, None, None, "LLM: none · understanding: none"
        with environment():
            models = choose_models(program, "auto")
        return models.llm, models.understanding, models.embedder, models.describe()

    def play(self, folder: pathlib.Path, dialogues: list[dict[str, Any]], emit) -> int:
        from frontdesk.lang import load_program

        label = self.options.program_label or folder.name
        failures = 0
        try:
            program, diagnostics = load_program(folder)
            errors = [str(d) for d in diagnostics if getattr(d, "is_error", False)]
            if program is None or errors:
                raise ValueError("; ".join(errors[:3]) or "the program does not load")
            llm, understanding, embedder, described = self.models(program)
        except Exception as exc:  # noqa: BLE001 - one line per dialogue, never a crash
            for dialogue in dialogues:
                emit({"record": "dialogue", "program": label, "dialogue": str(dialogue.get("name")), "turns": 0,
                      "error": f"load: {type(exc).__name__}: {exc}", "notes": []})
            return len(dialogues)
        try:
            agents_yml = yaml.safe_load((folder / "agents.yml").read_text(encoding="utf-8")) or {}
        except Exception:  # noqa: BLE001
            agents_yml = {}
        bindings, examples = call_bindings(agents_yml), claims_examples(program)
        for dialogue in dialogues:
            try:
                summary = self.play_dialogue(program, label, dialogue, llm, understanding, embedder,
                                             bindings, examples, emit)
            except Exception as exc:  # noqa: BLE001
                summary = {"record": "dialogue", "program": label, "dialogue": str(dialogue.get("name")),
                           "turns": 0, "error": f"{type(exc).__name__}: {exc}",
                           "traceback": traceback.format_exc(limit=8), "notes": []}
            summary["models"] = described
            failures += bool(summary.get("error"))
            emit(summary)
        return failures

    def play_dialogue(self, program, label, dialogue, llm, understanding, embedder, bindings, examples, emit):
        from frontdesk.app import knowledge_for
        from frontdesk.runtime.engine import Engine
        from frontdesk.store.memory import MemorySessionStore

        name = str(dialogue.get("name") or "?")
        summary: dict[str, Any] = {"record": "dialogue", "program": label, "dialogue": name, "turns": 0,
                                   "error": None, "notes": []}
        model = None
        if self.server is not None:
            from ideal_model import IdealModel

            model = IdealModel(program, self.counter)
            self.server.model = model
            summary["oracle_gaps"] = 0
        turns = [t for t in dialogue.get("turns") or [] if isinstance(t, dict)]
        with tempfile.TemporaryDirectory(prefix="fd-dialogue-") as scratch, \
                environment(FRONTDESK_EXAMPLE_DB_DIR=scratch, FRONTDESK_EXAMPLE_TODAY=TODAY):
            engine = Engine(program, llm, MemorySessionStore(), understanding=understanding,
                            knowledge=knowledge_for(program, embedder, fetch_urls=False))
            session = None
            before: dict[str, dict[str, Any]] = {}
            active = sticky = None
            plan = [(0, None, None)] + [(i, str(t.get("user", "")), t) for i, t in enumerate(turns, start=1)]
            for index, text, turn in plan:
                record: dict[str, Any] = {"record": "turn", "program": label, "dialogue": name, "turn": index,
                                          "user": text}
                if model is not None:
                    from ideal_model import TurnOracle

                    if turn is None:
                        oracle, data = TurnOracle(user=""), None
                    elif isinstance(turn.get("oracle"), dict):  # a dialogue that carries its own oracle
                        data = {"user": text, **turn["oracle"]}
                        oracle = TurnOracle.from_dict(data)
                    else:
                        oracle, data = derive_oracle(turn, program, bindings, examples, active, sticky)
                        named = (turn.get("expect") or {}).get("agent")
                        sticky = str(named[0] if isinstance(named, list) else named) if named else sticky
                    model.begin_turn(oracle)
                    record["oracle"] = data
                if self.options.announce and self.options.base_url:
                    record["oracle"] = announce(re.sub(r"/v1/?$", "", self.options.base_url.rstrip("/")), name, index)
                result, error = None, None
                try:
                    if index == 0:
                        result = engine.start(program_label=name)
                        session = result.session_id
                    else:
                        if session is None:
                            raise RuntimeError("the session did not start")
                        result = engine.send(session, text)
                except Exception as exc:  # noqa: BLE001 - recorded, never raised
                    error = f"{type(exc).__name__}: {exc}"
                    record["traceback"] = traceback.format_exc(limit=8)
                state = None
                if session is not None:
                    with contextlib.suppress(Exception):
                        state = engine.load_state(session)
                record.update(self.describe(result, state, before, error))
                if model is not None:
                    record["llm_calls"] = [{"kind": c.kind, "agent": c.agent, "answer": c.answer} for c in model.calls]
                    summary["oracle_gaps"] += sum(1 for c in model.calls if gap(c.answer))
                active = record.get("active_agent") or active
                if sticky and sticky in record.get("finished", []):
                    sticky = None
                if state is not None:
                    before = {k: dict(v) for k, v in (record.get("values") or {}).items()}
                emit(record)
                if index:
                    summary["turns"] += 1
                if error:
                    summary.setdefault("errors", []).append(f"turn {index}: {error}")
                    summary["error"] = summary["errors"][0]
                    if self.options.stop_after_error:
                        break
        return summary

    @staticmethod
    def describe(result, state, before, error) -> dict[str, Any]:
        events = [e.model_dump(mode="json") for e in result.events] if result is not None else []
        speakers, tools, sets, calls, finished = [], [], [], [], []
        ended = bool(result.ended) if result is not None else False
        for e in events:
            data = e.get("data") or {}
            if e["type"] == "bot_message":
                speakers.append({"text": data.get("text", ""), "agent": e.get("agent"),
                                 "source": data.get("source") or data.get("kind")})
            elif e["type"] in ("tool_call", "tool_called"):
                tools.append({"name": data.get("tool"), "args": plain(data.get("args") or {}),
                              "status": None, "result": None, "by": e.get("agent")})
            elif e["type"] == "tool_result":
                for t in reversed(tools):
                    if t["name"] == data.get("tool") and t["status"] is None:
                        t["status"] = data.get("status")
                        t["result"] = plain({k: v for k, v in data.items() if k not in ("tool", "status", "duration_ms")})
                        break
            elif e["type"] == "arg_set" and e.get("data", {}).get("scope") not in ("local",):
                sets.append({"agent": data.get("scope") or e.get("agent"), "arg": data.get("name"),
                             "value": plain(data.get("value"))})
            elif e["type"] == "llm_call":
                calls.append({"kind": data.get("purpose"), "agent": e.get("agent"), "answer": None})
            elif e["type"] == "agent_finished":
                finished.append(e.get("agent"))
            elif e["type"] == "session_ended":
                ended = True
            elif e["type"] == "error":
                pass
        values: dict[str, dict[str, Any]] = {}
        function_values: dict[str, Any] = {}
        stack: list[str] = []
        if state is not None:
            for scope, variables in state.variables.items():
                shown = {str(k): plain(v) for k, v in (variables or {}).items() if not str(k).startswith("_")}
                if shown:
                    values[str(scope)] = shown
            for name, rec in state.results.items():
                function_values[str(name)] = plain(rec)
            stack = [getattr(f, "agent", None) or repr(f) for f in state.stack]
            ended = ended or state.ended
        texts = [s["text"] for s in speakers]
        errors = [e["data"] for e in events if e["type"] == "error"]
        return {
            "bot": texts, "says": texts, "speakers": speakers,
            "agent": next((s["agent"] for s in speakers if s.get("agent") and (s.get("text") or "").strip()), None),
            "tools": tools, "sets": sets, "values": values, "function_values": function_values,
            "ended": ended, "stack": stack, "llm_calls": calls,
            "active_agent": result.active_agent if result is not None else None, "finished": finished,
            "engine_errors": [plain(e) for e in errors],
            "fallbacks": [plain(e["data"]) | {"agent": e.get("agent")} for e in events if e["type"] == "fallback"],
            "error": error,
        }


def gap(answer: str) -> bool:
    """A model answer the ideal model gave because the oracle said nothing for the request."""
    return answer == "understand choice none" or answer.startswith((
        "route none", "no answer", "hand_back", "understand choice none, args {}", "understand args {}", "text"))


def ideal_model_folder() -> pathlib.Path:
    """The bench/ folder of the Frontdesk tree being measured (its ideal_model.py goes with its engine:
    a baseline worktree's own), else the one beside this file."""
    try:
        import frontdesk

        beside = pathlib.Path(frontdesk.__file__).resolve().parents[2] / "bench"
        if (beside / "ideal_model.py").is_file():
            return beside
    except ImportError:
        pass
    return BENCH


@contextlib.contextmanager
def with_tools(folder: pathlib.Path, tools: list[str]):
    """The program folder itself, or (with tool files) a temporary copy holding them and listing them."""
    if not tools:
        yield folder
        return
    import shutil

    with tempfile.TemporaryDirectory(prefix="fd-program-") as scratch:
        copy = pathlib.Path(scratch) / folder.name
        shutil.copytree(folder, copy)
        names = []
        for tool in tools:
            source = pathlib.Path(tool).resolve()
            for sibling in source.parent.glob("*.py"):  # the tool's own modules (data.py, ...)
                if not sibling.name.startswith("test_") and not (copy / sibling.name).exists():
                    shutil.copy2(sibling, copy / sibling.name)
            names.append(source.name)
        agents = copy / "agents.yml"
        text = agents.read_text(encoding="utf-8")
        if not re.search(r"^tools:", text, re.M):
            agents.write_text(text.rstrip("\n") + "\n\ntools:\n" + "".join(f"  - {n}\n" for n in names),
                              encoding="utf-8")
        yield copy


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Play ADL dialogues through Frontdesk and record each turn.")
    parser.add_argument("program", help="folder holding agents.yml")
    parser.add_argument("dialogues", nargs="?", help="YAML file with `dialogues:` (default: PROGRAM/dialogues.yml)")
    parser.add_argument("--model", choices=("ideal", "none", "local"), default="none")
    parser.add_argument("--base-url", help="an OpenAI-compatible server (overrides --model)")
    parser.add_argument("--model-name", default="ideal", help="model name sent with --base-url / ideal")
    parser.add_argument("--api-key", default="differential")
    parser.add_argument("--out", default="-", help="JSON-lines output file (default: standard output)")
    parser.add_argument("--only", action="append", default=[], help="play only the named dialogue(s)")
    parser.add_argument("--program-label", help="the `program` field of each line (default: the folder name)")
    parser.add_argument("--tools", action="append", default=[],
                        help="tool file(s) for a program that ships none (MICA's conformance programs): the program "
                             "is copied to a temporary folder with the file, the .py files beside it, and a `tools:` list")
    parser.add_argument("--announce", action="store_true",
                        help="with --base-url: POST each turn to BASE/harness/turn first (the shared model server, "
                             "shared_model.py, answers the turn from its oracle)")
    parser.add_argument("--stop-after-error", action="store_true", help="stop a dialogue at its first error")
    options = parser.parse_args(argv)

    sys.path.insert(0, str(ideal_model_folder()))
    folder = pathlib.Path(options.program).resolve()
    if not (folder / "agents.yml").is_file():
        print(f"no agents.yml in {folder}", file=sys.stderr)
        return 2
    path = pathlib.Path(options.dialogues) if options.dialogues else folder / "dialogues.yml"
    try:
        dialogues = load_dialogues(path)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        print(f"cannot read dialogues: {exc}", file=sys.stderr)
        return 2
    if options.only:
        dialogues = [d for d in dialogues if str(d.get("name")) in options.only]
    out = sys.stdout if options.out == "-" else open(options.out, "w", encoding="utf-8")

    def emit(record: dict[str, Any]) -> None:
        out.write(json.dumps(record, ensure_ascii=False, default=repr) + "\n")
        out.flush()

    try:
        with Runner(options) as runner, with_tools(folder, options.tools) as played:
            options.program_label = options.program_label or folder.name
            failures = runner.play(played, dialogues, emit)
    finally:
        if out is not sys.stdout:
            out.close()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
