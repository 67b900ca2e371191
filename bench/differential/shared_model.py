"""One deterministic model server that both MICA and Frontdesk run against (issue 25).

    .venv/bin/python bench/differential/shared_model.py PROGRAM_DIR DIALOGUES.yml [--tools F] \\
        [--port 0] [--log requests.jsonl]

It prints `listening on http://127.0.0.1:PORT` once ready. The runners announce each turn before
playing it (`--announce`: POST /harness/turn {"dialogue", "turn"}), so that the server answers every
request of the turn from that turn's oracle, whichever system asks:

- the oracle of a turn is the dialogue's own `oracle:` when it has one (the intent-shift dialogues),
  else derived from the turn's `expect` by `frontdesk_runner.derive_oracle`, computed here from the
  dialogue alone (the agent an earlier turn named stays the addressee until another is named), never
  from what either system did, so both get the same reading of the same message;
- Frontdesk's requests (told apart by their tools) are answered by bench/ideal_model.py's IdealModel;
- MICA's requests (told apart by the fixed opening of its prompts, see MICA_NOTES.md) are answered
  here from the same oracle, each the way the IdealModel answers the Frontdesk request that asks the
  same question:

  | MICA request | answer | Frontdesk request asking the same |
  |---|---|---|
  | route | the oracle's next agent among the listed ones; `[FAQ]` for a kb agent; `[Exit]` for a turn that ends the conversation; else `None` | route |
  | claims | `True` when the oracle's `means` is one of the targets | understand (choice) |
  | flow_args | `{"data": ...}` with the oracle's values for the listed arguments; `{"status": "quit"}` when the turn names another agent that does not call this flow | understand (args; switch) |
  | llm_agent | the agent's script: its tool calls, then `{"bot": reply, "status": "running"}`; `{"bot": "", "status": "quit"}` when it has none | reason (hand_back) |
  | kb_answer | the passage sentence holding the evidence, else the first sentence of the context; `No answer` when the message is not for the kb agent | kb_answer |
  | fallback | the standard fallback sentence (`policy_message(None)`) | policy |

- embeddings: stub_server.py's hashed bag of words (MICA's kb retrieval only).

Every request is appended to --log as {"dialogue", "turn", "system", "kind", "answer"}.

A fault hook (`Server.fault_hook`, None by default: the answers above, unchanged) may change each answer
before it is sent (faults_side_by_side.py injects bench/faults.py's seeded faults that way; an
injected HTTP error is sent as that HTTP status); the log then records the fault of each request.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import yaml

HERE = pathlib.Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import frontdesk_runner as fr  # noqa: E402
import stub_server  # noqa: E402
from frontdesk.runtime.orchestration import EXIT_CHOICE as EXIT_CHOICE_NAME  # noqa: E402
from ideal_model import DELAY, HTTP_STATUS, REPLY_KEY, ROUTE_TOOL, UNDERSTAND_TOOL, IdealModel, TurnOracle, \
    _first_sentence, _norm, _sentence_with, step_tool_calls  # noqa: E402

MICA_EXIT, MICA_FAQ, MICA_NONE = "[Exit]", "[FAQ]", "None"


def called_by(agents_yml: dict[str, Any]) -> dict[str, set[str]]:
    """agent -> every agent it reaches by `call:` or `next:` (its subflows and theirs), itself included."""
    direct: dict[str, set[str]] = {}
    names = {n for n, a in agents_yml.items() if isinstance(a, dict)}

    def walk(node: Any, into: set[str]) -> None:
        if isinstance(node, dict):
            for key in ("call", "next"):
                if isinstance(node.get(key), str) and node[key] in names:
                    into.add(node[key])
            for value in node.values():
                walk(value, into)
        elif isinstance(node, list):
            for value in node:
                walk(value, into)

    for name in names:
        walk(agents_yml[name], direct.setdefault(name, set()))
        members = agents_yml[name].get("contains") or []
        direct[name] |= {m for m in members if isinstance(m, str)}
    closure = {}
    for name in names:
        seen, todo = {name}, [name]
        while todo:
            for nxt in direct.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        closure[name] = seen
    return closure


class SharedModel:
    """The turn oracles of a dialogue file and the answers to both systems' requests."""

    def __init__(self, program, agents_yml: dict[str, Any], dialogues: list[dict[str, Any]],
                 meanings: dict[str, Any] | None = None) -> None:
        self.program = program
        self.ideal = IdealModel(program)
        self.kinds = {n: a.kind for n, a in program.agents.items()}
        self.reach = called_by(agents_yml)
        self.lock = threading.Lock()
        self.oracles: dict[tuple[str, int], tuple[TurnOracle, dict[str, Any]]] = {}
        bindings, examples = fr.call_bindings(agents_yml), fr.claims_examples(program)
        for dialogue in dialogues:
            name, sticky = str(dialogue.get("name")), None
            turns = [t for t in dialogue.get("turns") or [] if isinstance(t, dict)]
            for index, turn in enumerate(turns, start=1):
                text, meaning = str(turn.get("user", "")), None
                if isinstance(turn.get("oracle"), dict):
                    data = {"user": text, **turn["oracle"]}
                    oracle = TurnOracle.from_dict(data)
                    meaning = {"agents": list(data.get("agents") or [])}  # who the message is for
                else:
                    oracle, data = fr.derive_oracle(turn, program, bindings, examples, sticky, sticky)
                    named = (turn.get("expect") or {}).get("agent")
                    sticky = str(named[0] if isinstance(named, list) else named) if named else sticky
                    meaning = next((m for m in ((meanings or {}).get(name) or []) if isinstance(m, dict)
                                    and m.get("turn") == index), None)
                    if meaning:  # what the message means, written beside the dialogues (oracle.yml)
                        data = {**data, **{k: v for k, v in meaning.items() if k not in ("turn", "ends")},
                                "means": meaning.get("means"),  # no case named: none fits (not a lexical guess)
                                "args": {**data.get("args", {}), **(meaning.get("args") or {})},
                                "model": {**data.get("model", {}), **self.scripts(meaning)}}
                        oracle = TurnOracle.from_dict(data)
                        if meaning.get("ends"):
                            turn = {**turn, "expect": {**(turn.get("expect") or {}), "ends": True}}
                named = meaning["agents"] if meaning and isinstance(meaning.get("agents"), list) else \
                    (turn.get("expect") or {}).get("agent")
                data = {**data, "named": [str(named)] if isinstance(named, str) else [str(n) for n in named or []],
                        "ends": bool((turn.get("expect") or {}).get("ends"))}
                self.oracles[(name, index)] = (oracle, data)
        self.turn: tuple[str, int] = ("", 0)
        self.data: dict[str, Any] = {}
        self.mica_step: dict[str, int] = {}
        self.mica_data: dict[str, dict[str, Any]] = {}  # llm agent -> values its next JSON answer gives

    def scripts(self, meaning: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
        """An llm agent's script from a meaning entry, in the built-in tools' terms: the values the message
        gives for the agent's own arguments are recorded first (`set_args`), and an agent followed by
        another in `agents` (or in a turn that ends the conversation) has finished its task (`finish`
        with its last reply)."""
        out: dict[str, list[dict[str, Any]]] = {}
        order = [str(a) for a in meaning.get("agents") or []]
        for agent, steps in (meaning.get("model") or {}).items():
            steps = [dict(s) if isinstance(s, dict) else {REPLY_KEY: str(s)} for s in steps or []]
            spec = self.program.agents.get(agent)
            own = {a.name for a in getattr(spec, "args", []) or []}
            given = {k: v for k, v in (meaning.get("args") or {}).items() if k in own}
            if given:
                steps.insert(0, {"set_args": given})
            done = (agent in order and order.index(agent) < len(order) - 1) or bool(meaning.get("ends"))
            if done and steps and not any("finish" in s for s in steps):
                steps[-1] = {**steps[-1], "finish": {}}
            out[agent] = steps
        return out

    # -- turns ------------------------------------------------------------------------------------

    def begin(self, dialogue: str, turn: int) -> dict[str, Any]:
        oracle, data = self.oracles.get((dialogue, turn), (TurnOracle(user=""), {"user": None}))
        with self.lock:
            self.turn, self.data, self.mica_step, self.mica_data = (dialogue, turn), data, {}, {}
        self.ideal.begin_turn(oracle)
        return data

    @property
    def oracle(self) -> TurnOracle:
        return self.ideal.oracle

    # -- Frontdesk --------------------------------------------------------------------------------

    def frontdesk(self, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        if self.data.get("ends") and not self.oracle.agents:
            # a turn that ends the conversation: the routing call's and the understand call's way out
            for tool, field, leave in ((ROUTE_TOOL, "agent", EXIT_CHOICE_NAME),
                                       (UNDERSTAND_TOOL, "choice", f"switch:{EXIT_CHOICE_NAME}")):
                offered = next((t.get("function", {}) for t in body.get("tools") or []
                                if t.get("function", {}).get("name") == tool), None)
                enum = ((offered or {}).get("parameters") or {}).get("properties", {}).get(field, {}).get("enum") or []
                if leave in enum:
                    return f"{tool} {leave}", completion(None, [(tool, {field: leave})])
        reply, record = self.ideal.complete(body)
        return record.answer, reply

    # -- MICA -------------------------------------------------------------------------------------

    def mica(self, kind: str, body: dict[str, Any]) -> tuple[str | None, list[tuple[str, dict[str, Any]]]]:
        messages = body.get("messages") or []
        system = "\n".join(m.get("content") or "" for m in messages if m.get("role") == "system")
        user = "\n".join(m.get("content") or "" for m in messages if m.get("role") == "user")
        oracle = self.oracle
        if kind == "route":
            listed = re.findall(r"^- (\w+): ", system.split("### AGENTS:", 1)[-1], re.M)
            for agent in oracle.agents:
                if self.kinds.get(agent) == "knowledge" and MICA_FAQ in system and "SUGGEST ANSWER: None" not in system:
                    return MICA_FAQ + ".", []
                if agent in listed:
                    return agent, []
            if self.data.get("ends") and "[Exit]" in system:
                return MICA_EXIT, []
            return MICA_NONE, []
        if kind == "claims":
            targets = user.split("- Targets:\n", 1)[-1].split("\n- Previous Conversation:", 1)[0].splitlines()
            means = _norm(oracle.means or "")
            return ("True" if means and any(_norm(t.strip(" -\"'")) == means for t in targets) else "False"), []
        if kind == "flow_args":
            name = re.search(r"Your name is: (\w+)", system)
            agent = name.group(1) if name else ""
            named = [a for a in self.data.get("named") or [] if a in self.kinds]
            if named and agent not in named and not any(agent in self.reach.get(a, ()) for a in named):
                return json.dumps({"status": "quit"}), []
            listed = re.search(r"following data in the conversation: (.*?), extract them", system)
            wanted = [n.strip() for n in listed.group(1).split(",")] if listed else []
            data = {k: v for k, v in oracle.args.items() if k in wanted}
            return json.dumps({"data": data} if data else {}), []
        if kind == "llm_agent":
            agent = next((n for n, text in sorted(self.ideal.catalog.instructions.items(), key=lambda i: -len(i[1]))
                          if self.kinds.get(n) == "reasoning" and text[:200] in system), None)
            script = oracle.model.get(agent or "") or []
            index = self.mica_step.get(agent or "", 0)
            if not script or index >= len(script):
                return json.dumps({"bot": "", "status": "quit"}), []
            # Frontdesk's built-in tools are MICA's JSON fields: set_args -> "data", finish -> "complete",
            # hand_back -> "quit"; steps made only of them are joined with the reply that follows
            data: dict[str, Any] = {}
            status, reply = "running", ""
            while index < len(script):
                step = script[index]
                index += 1
                calls = step_tool_calls(step)
                program_calls = [(n, a) for n, a in calls if n not in ("set_args", "finish", "hand_back")]
                for n, a in calls:
                    if n == "set_args":
                        data.update(a)
                    elif n == "finish":
                        status = "complete"
                    elif n == "hand_back":
                        status = "quit"
                if program_calls:  # MICA's answer is calls or JSON: the values go with the next JSON answer
                    self.mica_step[agent] = index
                    self.mica_data.setdefault(agent, {}).update(data)
                    return None, program_calls
                reply = step.get(REPLY_KEY) or ""
                if reply or status != "running":
                    break
            self.mica_step[agent] = index
            data = {**self.mica_data.pop(agent, {}), **data}
            answer: dict[str, Any] = {"bot": reply, "status": status}
            if data:
                answer["data"] = data
            return json.dumps(answer), []
        if kind == "kb_answer":
            kb = [a for a in oracle.agents if self.kinds.get(a) == "knowledge"]
            if not kb:
                return "No answer", []
            context = user.split("Context:", 1)[-1].rsplit("Answer:", 1)[0] if "Context:" in user else user
            context = re.sub(r"^\s*\d+\.\s*", "", context, flags=re.M)
            context = re.sub(r"^Question: .*$|^Answer: ", "", context, flags=re.M)  # FAQ items: the answers
            sentence = _sentence_with(context, oracle.evidence) if oracle.evidence else _first_sentence(context)
            return (oracle.answer if oracle.evidence and sentence and oracle.answer else sentence) or "No answer", []
        if kind == "fallback":
            from frontdesk.runtime.policies import policy_message

            return policy_message(None, "fallback"), []
        return "OK", []


def completion(content: str | None, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """A chat-completions answer: the text, and the tool calls in order."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [{"id": f"call_{i}", "type": "function",
                                  "function": {"name": n, "arguments": json.dumps(a, ensure_ascii=False)}}
                                 for i, (n, a) in enumerate(calls)]
    return {"id": f"chatcmpl-{time.monotonic_ns()}", "object": "chat.completion", "created": int(time.time()),
            "model": "shared", "choices": [{"index": 0, "message": message,
                                            "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "Server"

    def do_POST(self) -> None:  # noqa: N802 - the name http.server dispatches to
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            return self.send(400, {"error": {"message": "body is not JSON"}})
        model: SharedModel = self.server.model
        path = self.path.rstrip("/")
        system = ""
        if path.endswith("/harness/turn"):
            return self.send(200, {"oracle": model.begin(str(body.get("dialogue")), int(body.get("turn") or 0))})
        if path.endswith("/embeddings"):
            inputs = body.get("input")
            inputs = [inputs] if isinstance(inputs, str) else list(inputs or [])
            return self.send(200, {"object": "list", "model": "shared", "usage": {"prompt_tokens": 0, "total_tokens": 0},
                                   "data": [{"object": "embedding", "index": i, "embedding": stub_server.embed(str(t))}
                                            for i, t in enumerate(inputs)]})
        if not path.endswith("/chat/completions"):
            return self.send(404, {"error": {"message": f"no endpoint {self.path}"}})
        messages = body.get("messages") or []
        kind = stub_server.classify(messages)
        if kind == "unknown":
            system, (answer, reply) = "frontdesk", model.frontdesk(body)
        else:
            system = "mica"
            with model.lock:
                content, calls = model.mica(kind, body)
            answer = f"{kind} " + (content or ", ".join(n for n, _ in calls))
            reply = completion(content, calls)
        # a fault hook (off by default; faults_side_by_side.py sets one) may change the answer in place, e.g. by
        # bench/faults.py's apply_fault, and returns the fault it injected (None: none)
        hook = getattr(self.server, "fault_hook", None)
        fault = hook(system, kind, body, reply, model.turn) if hook is not None else None
        if self.server.log_path:
            entry = {"dialogue": model.turn[0], "turn": model.turn[1], "system": system, "kind": kind, "answer": answer}
            if hook is not None:
                entry["fault"] = fault
            with self.server.log_lock, open(self.server.log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry, ensure_ascii=False) + "\n")
        status = reply.pop(HTTP_STATUS, 200)  # an injected HTTP error (only with a fault hook)
        delay = float(reply.pop(DELAY, 0) or 0)
        if delay:
            time.sleep(delay)
        try:
            self.send(status, reply if status == 200 else {"error": {"message": f"injected HTTP {status}"}})
        except OSError:  # the client gave up (an injected delay)
            pass

    def send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, default=repr).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


class Server(ThreadingHTTPServer):
    daemon_threads = True
    # (system, kind, request body, answer, (dialogue, turn)) -> the fault injected into the answer, or None
    fault_hook = None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The shared deterministic model server of the differential harness.")
    parser.add_argument("program")
    parser.add_argument("dialogues")
    parser.add_argument("--tools", action="append", default=[])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log", default="")
    options = parser.parse_args(argv)
    from frontdesk.lang import load_program

    folder = pathlib.Path(options.program).resolve()
    dialogues = fr.load_dialogues(pathlib.Path(options.dialogues))
    agents_yml = yaml.safe_load((folder / "agents.yml").read_text(encoding="utf-8")) or {}
    with fr.with_tools(folder, options.tools) as played:
        program, diagnostics = load_program(played)
    if program is None:
        print("the program does not load: " + "; ".join(str(d) for d in diagnostics[:3]), file=sys.stderr)
        return 2
    server = Server(("127.0.0.1", options.port), Handler)
    beside = pathlib.Path(options.dialogues).resolve().parent / "oracle.yml"
    meanings = (yaml.safe_load(beside.read_text(encoding="utf-8")) or {}).get("dialogues") if beside.is_file() else None
    server.model = SharedModel(program, agents_yml, dialogues, meanings)
    return stub_server.serve(server, options.log)


if __name__ == "__main__":
    sys.exit(main())
