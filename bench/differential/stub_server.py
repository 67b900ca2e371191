"""A tiny OpenAI-compatible stub model for trying the MICA runner (not the differential model server).

It answers `POST /v1/chat/completions` and `POST /v1/embeddings` on 127.0.0.1 with fixed, sensible
answers for each kind of request MICA makes, so that MICA runs a conversation end to end without
crashing. It tells the kinds apart by the fixed wording of MICA's prompts (see MICA_NOTES.md):

- flow_args   flow agent argument extraction      -> "{}" (or {"data": ...} from `name=value` in the message)
- claims      `the user claims` condition check    -> "True" / "False" (the message equals or contains a target)
- route       ensemble agent selection             -> an agent name, "[Exit]", "[Fallback]" or "None"
- llm_agent   llm agent turn                       -> {"bot": ..., "status": "running"} or a tool call
- fallback    default fallback message             -> a fixed apology
- kb_answer   kb agent answer from retrieved text  -> the FAQ answer that matches, else "No answer"
- exception   (DispatcherProcessor only, unused)   -> a fixed question

Every request is appended to the log file (--log) as {"kind", "body"} for inspection.

Usage: python stub_server.py [--port 0] [--log /tmp/stub_requests.jsonl]
It prints `listening on http://127.0.0.1:PORT` once ready. Standard library only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

EMBED_DIM = 64
STOP = {"a", "an", "the", "i", "you", "me", "my", "to", "of", "and", "or", "is", "are", "can", "do",
        "for", "in", "on", "it", "be", "with", "please", "would", "like", "want", "some", "any", "your",
        "that", "this", "what", "how", "have", "has", "there", "about", "agent", "user", "users"}
EXIT_WORDS = {"bye", "goodbye", "thanks", "thank", "that's all", "nothing else"}


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def content_words(text: str) -> set[str]:
    out = set()
    for w in words(text):
        if w in STOP or len(w) < 3:
            continue
        out.add(w[:-1] if w.endswith("s") and len(w) > 4 else w)  # crude singular
    return out


def classify(messages: list[dict[str, Any]]) -> str:
    system = "\n".join(m.get("content") or "" for m in messages if m.get("role") == "system")
    first_user = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
    if system.startswith("Your task is to identify the user"):
        return "claims"
    if system.startswith("Your task is to select an agent to handle user requests"):
        return "route"
    if system.startswith("You can talk to the user and act according to the instruction below"):
        return "llm_agent"
    if "What you generate is that you cannot understand" in system:
        return "fallback"
    if "Your name is:" in system and "Please reply in JSON format" in system:
        return "flow_args"
    if "asking the user if they would like to return to a previous task" in system:
        return "exception"
    if not system and first_user.startswith("You are an assistant for question-answering tasks"):
        return "kb_answer"
    return "unknown"


def last_user_line(conversation: str) -> str:
    lines = [l for l in conversation.splitlines() if l.startswith("User: ")]
    return lines[-1][len("User: "):] if lines else ""


def pairs(text: str) -> dict[str, str]:
    return {k: v.strip().strip("\"'") for k, v in re.findall(r"(\w+)\s*=\s*(\"[^\"]*\"|'[^']*'|[^,;\s]+)", text)}


class Stub:
    def __init__(self) -> None:
        self.ids = 0
        self.lock = threading.Lock()

    def answer(self, kind: str, body: dict[str, Any]) -> tuple[str | None, list[tuple[str, dict]]]:
        messages = body.get("messages") or []
        system = "\n".join(m.get("content") or "" for m in messages if m.get("role") == "system")
        user = "\n".join(m.get("content") or "" for m in messages if m.get("role") == "user")
        if kind == "claims":
            targets = user.split("- Targets:\n", 1)[1].split("\n- Previous Conversation:", 1)[0].splitlines()
            said = re.search(r'Does sentence "(.*)" have the same meaning', user, re.S)
            said_n = " ".join(words(said.group(1) if said else ""))
            hit = any(t and (" ".join(words(t)) == said_n or " ".join(words(t)) in said_n.split(" ") or
                             (len(words(t)) > 1 and " ".join(words(t)) in said_n)) for t in targets)
            return ("True" if hit else "False"), []
        if kind == "route":
            said = last_user_line(user).lower()
            agents = re.findall(r"^- (\w+): (.*)$", system.split("### AGENTS:", 1)[-1], re.M)
            if "[FAQ]" in system and "### SUGGEST ANSWER: None" not in system:
                return "[FAQ]", []
            if "output: [Exit]" in system and any(w in said for w in EXIT_WORDS):
                return "[Exit]", []
            said_w = content_words(said)
            best = max(agents, key=lambda a: len(said_w & content_words(a[1] + " " + a[0].replace("_", " "))),
                       default=None)
            if best and said_w & content_words(best[1] + " " + best[0].replace("_", " ")):
                return best[0], []
            return ("[Fallback]" if "output: [Fallback]" in system else "None"), []
        if kind == "llm_agent":
            tools = {t["function"]["name"]: t["function"] for t in body.get("tools") or []}
            last = messages[-1] if messages else {}
            if last.get("role") == "tool":
                return json.dumps({"bot": "Here is what I found: " + (last.get("content") or "").strip()[:200],
                                   "status": "running"}), []
            said = last.get("content") or ""
            others = re.search(r"for example: (.*?) or user want to quit", system)
            other_names = [n.strip() for n in others.group(1).split(",")] if others else []
            if any(set(n.lower().split("_")) & content_words(said) for n in other_names if n):
                return json.dumps({"bot": "", "status": "quit"}), []
            given = pairs(said)
            for name, fn in tools.items():
                required = (fn.get("parameters") or {}).get("required") or []
                if required and all(r in given for r in required):
                    return None, [(name, {r: given[r] for r in required})]
            if any(w in said.lower() for w in ("bye", "nothing else", "that's all")):
                return json.dumps({"status": "complete"}), []
            data = {k: v for k, v in given.items() if re.search(rf"\b{re.escape(k)}\b", system)}
            reply: dict[str, Any] = {"bot": "Sure, I can help with that. What would you like?", "status": "running"}
            if data:
                reply = {"data": data, **reply}
            return json.dumps(reply), []
        if kind == "fallback":
            return "I'm sorry, I didn't understand that. Can you please rephrase?", []
        if kind == "flow_args":
            said = last_user_line(user)
            if any(w in words(said) for w in ("cancel", "stop", "quit")):
                return json.dumps({"status": "quit"}), []
            given = pairs(said)
            listed = re.search(r"following data in the conversation: (.*?), extract them", system)
            names = [n.strip() for n in listed.group(1).split(",")] if listed else []
            data = {k: v for k, v in given.items() if k in names}
            if data:
                return json.dumps({"data": data}), []
            return "{}", []
        if kind == "kb_answer":
            q = re.search(r"Question: (.*)\nContext:", user)
            question = content_words(q.group(1) if q else "")
            items = re.findall(r"^\d+\. (.*?)(?=^\d+\. |\Z)", user.split("Context:", 1)[-1], re.M | re.S)
            for item in items:
                qa = re.match(r"Question: (.*)\nAnswer: (.*)", item.strip(), re.S)
                if qa and question & content_words(qa.group(1)):
                    return qa.group(2).strip().splitlines()[0], []
            return "No answer", []
        if kind == "exception":
            return "Would you like to go back to what we were doing before?", []
        return "OK", []

    def chat(self, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        kind = classify(body.get("messages") or [])
        content, calls = self.answer(kind, body)
        with self.lock:
            tool_calls = []
            for name, args in calls:
                self.ids += 1
                tool_calls.append({"id": f"call_{self.ids}", "type": "function",
                                   "function": {"name": name, "arguments": json.dumps(args)}})
            self.ids += 1
            ident = self.ids
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if tool_calls:
            message["tool_calls"] = tool_calls
        return kind, {"id": f"chatcmpl-stub-{ident}", "object": "chat.completion", "created": int(time.time()),
                      "model": body.get("model") or "stub",
                      "choices": [{"index": 0, "message": message,
                                   "finish_reason": "tool_calls" if tool_calls else "stop"}],
                      "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}


def embed(text: str) -> list[float]:
    vec = [0.0] * EMBED_DIM
    for w in content_words(text) or set(words(text)) or {"empty"}:
        h = int.from_bytes(hashlib.sha256(w.encode()).digest()[:4], "big")
        vec[h % EMBED_DIM] += 1.0 if (h >> 8) & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "Server"

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            return self.send(400, {"error": {"message": "body is not JSON"}})
        path = self.path.rstrip("/")
        if path.endswith("/chat/completions"):
            kind, answer = self.server.stub.chat(body)
        elif path.endswith("/embeddings"):
            inputs = body.get("input")
            inputs = [inputs] if isinstance(inputs, str) else list(inputs or [])
            kind = "embeddings"
            answer = {"object": "list", "model": body.get("model") or "stub",
                      "data": [{"object": "embedding", "index": i, "embedding": embed(str(t))}
                               for i, t in enumerate(inputs)],
                      "usage": {"prompt_tokens": 0, "total_tokens": 0}}
        else:
            return self.send(404, {"error": {"message": f"no endpoint {self.path}"}})
        if self.server.log_path:
            with self.server.log_lock, open(self.server.log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps({"kind": kind, "path": self.path, "body": body, "answer": answer},
                                   ensure_ascii=False) + "\n")
        self.send(200, answer)

    def send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class Server(ThreadingHTTPServer):
    daemon_threads = True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log", default="", help="append every request (JSON lines) to this file")
    args = parser.parse_args(argv)
    server = Server(("127.0.0.1", args.port), Handler)
    server.stub = Stub()
    return serve(server, args.log)


def serve(server: ThreadingHTTPServer, log_path: str) -> int:
    """Serve until interrupted, appending requests to `log_path` (none when empty); print the address
    first (the runners wait for the `listening on` line)."""
    server.log_path = log_path
    server.log_lock = threading.Lock()
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
