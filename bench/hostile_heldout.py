"""Run the held-out hostile inputs of tests/hostile_heldout/ against a Frontdesk build and count outcomes.

The inputs were written from the language specifications and the user documentation only, without
reading Frontdesk's source or tests. Each program goes through `check` (and `compile` where the
expectation says so; ACDL files through `acdl check`), each hostile HTTP message through
`frontdesk serve`, each hostile chat line through `frontdesk chat`. Every outcome is one of

  pass       the expectation is met
  traceback  a Python traceback in the output (or in an HTTP answer)
  hang       the run did not finish within the time limit
  wrong      no traceback, but the expectation is not met (the reason is listed)

Usage:
  python bench/hostile_heldout.py                       # the installed .venv/bin/frontdesk
  python bench/hostile_heldout.py --python .venv/bin/python --pythonpath /tmp/frontdesk_base/src
  python bench/hostile_heldout.py --only adl/ --skip-serve --json out.json

Only the standard library, httpx and PyYAML are used.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import datetime
import http.server
import json
import os
import pathlib
import re
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
import time

import httpx
import yaml

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent
SET = REPO / "tests" / "hostile_heldout"
OUTSIDE = pathlib.Path("/tmp/frontdesk_hostile_outside")

SENTINELS = {
    "FRONTDESK_LLM_API_KEY": "sk-hostile-sentinel-llm-key-7f3a9c",
    "FRONTDESK_API_TOKENS": "hostile-user-token-5b1e",
    "FRONTDESK_OPERATOR_TOKENS": "hostile-operator-token-c0de",
}
USER_TOKEN = SENTINELS["FRONTDESK_API_TOKENS"]
OPERATOR_TOKEN = SENTINELS["FRONTDESK_OPERATOR_TOKENS"]
LEAK_MARKERS = [SENTINELS["FRONTDESK_LLM_API_KEY"], "hostile-secret-doc-4242", "root:x:0:0:"]

TRACEBACK = re.compile(r"Traceback \(most recent call last\)")
DIAG = re.compile(r"^\S[^\n]*?:\d+:\d+:\s*(error|warning|info|note)\b", re.M | re.I)
DIAG_ERROR = re.compile(r"^\S[^\n]*?:\d+:\d+:\s*error\b", re.M | re.I)
DIAG_NOPOS = re.compile(r"^\S[^\n]*?:\s*error\s*\[\w+\]", re.M | re.I)
REPEAT = re.compile(r"@@REPEAT\((.*?),(\d+)\)@@", re.S)


# ------------------------------------------------------------------------------------------ running
class Runner:
    def __init__(self, args):
        self.args = args
        self.env = dict(os.environ)
        for key in list(self.env):
            if key.startswith("FRONTDESK_"):
                del self.env[key]
        self.env.update(SENTINELS)
        self.env["FRONTDESK_LOG_LEVEL"] = "WARNING"
        if args.pythonpath:
            self.env["PYTHONPATH"] = args.pythonpath + (
                os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")

    def cmd(self, *argv):
        if self.args.python:
            boot = ("import sys, frontdesk.cli; sys.argv[0] = 'frontdesk'; "
                    "sys.exit(frontdesk.cli.main())")
            return [self.args.python, "-c", boot, *argv]
        return [self.args.frontdesk, *argv]

    def run(self, argv, timeout, stdin=None, cwd=None, env=None):
        """(rc | None on timeout, output text, seconds)."""
        start = time.monotonic()
        proc = subprocess.Popen(self.cmd(*argv), stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=env or self.env,
                                start_new_session=True)
        try:
            out, err = proc.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            return None, (out + err).decode("utf-8", "replace"), time.monotonic() - start
        text = out.decode("utf-8", "replace") + "\n" + err.decode("utf-8", "replace")
        return proc.returncode, text, time.monotonic() - start


# ------------------------------------------------------------------------------------------ setup
def prepare(work: pathlib.Path):
    """Copy the programs, make the outside fixtures, symlinks and generated huge inputs."""
    progs = work / "programs"
    shutil.copytree(SET / "programs", progs, symlinks=True)
    shutil.rmtree(OUTSIDE, ignore_errors=True)
    (OUTSIDE / "secret_docs").mkdir(parents=True)
    shutil.copy(SET / "programs/_outside/evil.py", OUTSIDE / "evil.py")
    shutil.copy(SET / "programs/_outside/server.sh", OUTSIDE / "server.sh")
    shutil.copy(SET / "programs/_outside/secret_docs/secret.md", OUTSIDE / "secret_docs/secret.md")
    os.chmod(OUTSIDE / "server.sh", 0o755)
    links = {
        "abl_tools/python_symlink_out/link.py": OUTSIDE / "evil.py",
        "abl_tools/mcp_command_symlink/srv.sh": OUTSIDE / "server.sh",
        "abl_tools/symlink_loop_dir/loop": pathlib.Path("."),
        "adl/tool_symlink_out/tools.py": OUTSIDE / "evil.py",
        "adl/tool_implicit_symlink_out/helper.py": OUTSIDE / "evil.py",
        "adl/kb_sources_symlink_dir/docs": OUTSIDE / "secret_docs",
    }
    for rel, target in links.items():
        path = progs / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() or path.is_symlink():
            path.unlink()
        path.symlink_to(target)
    for script in progs.rglob("*.sh"):
        os.chmod(script, 0o755)
    gen = progs / "gen"
    gen.mkdir()
    field = ('  field_{i}:\n    prompt: "Question number {i}, please answer it carefully?"\n'
             '    type: string\n    required: false\n')
    head = 'AGENT: Big\nGOAL: "A very large agent"\n\nGATHER:\n'
    tail = ('\nFLOW:\n  ask -> done\n\n  ask:\n    GATHER:\n      - field_0: required\n    THEN: done\n\n'
            '  done:\n    RESPOND: "ok"\n    THEN: COMPLETE\n')
    body, i = [], 0
    while sum(map(len, body)) < 1_000_000:
        body.append(field.format(i=i))
        i += 1
    (gen / "abl_1mb.agent.abl").write_text(head + "".join(body) + tail)
    ybody = "".join(f'  field_{j}:\n    prompt: "Question number {j}, please answer it carefully?"\n'
                    f'    type: string\n    required: false\n' for j in range(i))
    (gen / "abl_1mb_yaml.agent.yaml").write_text(
        'agent: Big\ngoal: "A very large agent"\ngather:\n' + ybody
        + 'flow:\n  sequence: [ask, done]\n  ask:\n    gather:\n      - field_0: required\n    then: done\n'
          '  done:\n    respond: "ok"\n    then: COMPLETE\n')
    persona = "".join(f"  Line {j} of a very long persona that keeps going and going.\n" for j in range(17000))
    (gen / "abl_1mb_one_string.agent.abl").write_text(
        'AGENT: Big\nGOAL: "A very large persona"\n\nPERSONA: |\n' + persona
        + '\nFLOW:\n  done\n\n  done:\n    RESPOND: "ok"\n    THEN: COMPLETE\n')
    spec = "P{i}[@T]: {{\n  S: INSTRUCTIONS_{i}\n  ForEach(@t: range(1, @T)) {{\n    U: env.q{i}[@t]\n    A: resp.a{i}[@t]\n  }}\n  U: env.q{i}[@T]\n}}\n"
    parts, i = [], 0
    while sum(map(len, parts)) < 2_000_000:
        parts.append(spec.format(i=i))
        i += 1
    (gen / "acdl_2mb.acdl").write_text("".join(parts))
    lines = "".join(f"    env.item_{j}[@T] // item {j}\n" for j in range(70000))
    (gen / "acdl_2mb_one_prompt.acdl").write_text("Big[@T]: {\n  U: {\n" + lines + "  }\n}\n")
    adl = ["main:\n  type: flow agent\n  description: Entry point.\n  steps:\n    - call: a0\n"]
    j = 0
    while sum(map(len, adl)) < 2_000_000:
        adl.append(f"a{j}:\n  type: flow agent\n  description: Agent number {j} of many.\n  steps:\n"
                   f"    - bot: \"I am agent {j}.\"\n    - call: a{j + 1}\n")
        j += 1
    adl.append(f"a{j}:\n  type: flow agent\n  description: The last.\n  steps:\n    - bot: done\n")
    (gen / "adl_2mb").mkdir()
    (gen / "adl_2mb/agents.yml").write_text("".join(adl))
    (gen / "adl_tools_3mb").mkdir()
    (gen / "adl_tools_3mb/agents.yml").write_text(
        "main:\n  type: flow agent\n  description: d\n  steps:\n    - call: f0\n\ntools:\n  - tools.py\n")
    funcs = "".join(f'def f{k}(a: str, b: int = {k}) -> list:\n    """Tool number {k}."""\n    return []\n\n'
                    for k in range(40000))
    (gen / "adl_tools_3mb/tools.py").write_text(funcs)
    return progs


# ------------------------------------------------------------------------------------------ programs
def judge_cli(kind, rc, out, seconds, timeout, position_optional=False):
    """(category, reason) for one check/compile run against `kind` (ok, error, any)."""
    if rc is None:
        return "hang", f"no answer within {timeout:.0f} s"
    if TRACEBACK.search(out):
        line = [l for l in out.splitlines() if l.strip()]
        last = next((l for l in reversed(line) if re.match(r"^\w+(\.\w+)*(Error|Exception|Exit)\b", l.strip())), line[-1] if line else "")
        return "traceback", f"traceback (exit {rc}): {last.strip()[:160]}"
    for marker in LEAK_MARKERS:
        if marker in out:
            return "wrong", f"output contains a secret ({marker[:12]}...)"
    has_diag = bool(DIAG.search(out))
    has_err = bool(DIAG_ERROR.search(out))
    if position_optional and DIAG_NOPOS.search(out):
        has_diag = has_err = True
    first = next((l.strip() for l in out.splitlines() if l.strip()), "")[:140]
    if kind == "ok":
        if rc == 0:
            return "pass", ""
        return "wrong", f"expected exit 0, got {rc}: {first}"
    if kind == "error":
        if rc != 0 and has_err:
            return "pass", ""
        if rc == 0:
            return "wrong", "expected an error, exit 0" + (f" ({first})" if first else "")
        return "wrong", f"exit {rc} without a file:line:col error diagnostic: {first}"
    # any
    if rc == 0 or has_diag:
        return "pass", ""
    return "wrong", f"exit {rc} without a file:line:col diagnostic: {first}"


def run_programs(runner, progs, expectations, only):
    limits = expectations.get("limits", {})
    timeout = float(runner.args.timeout or limits.get("seconds_per_run", 20))
    extra = float(limits.get("huge_extra_seconds", 2.0))
    items = list(expectations["programs"]) + list(expectations.get("generated", []))
    if only:
        items = [e for e in items if any(o in e["id"] for o in only)]
    # a baseline: how long `check` of a tiny program takes (start-up), for the huge-file limit
    base_times = []
    for _ in range(2):
        rc, out, secs = runner.run(["check", str(progs / "abl/control_valid.agent.abl")], timeout)
        base_times.append(secs)
    baseline = min(base_times)
    with contextlib.suppress(FileNotFoundError):
        os.unlink("/tmp/frontdesk_hostile_pwned_import")

    def one(e):
        path = progs / e["id"]
        reader = e["reader"]
        for f in e.get("absent_files", []):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f)
        steps = []
        if reader == "acdl":
            steps.append(("check", ["acdl", "check", str(path)], e["check"]))
        else:
            steps.append(("check", ["check", str(path)], e["check"]))
            comp = e.get("compile")
            if comp == "same":
                comp = e["check"] if e["check"] in ("ok", "error") else "any"
            if comp:
                steps.append(("compile", ["compile", str(path)], comp))
        outcome, reason, took = "pass", "", 0.0
        for name, argv, kind in steps:
            rc, out, secs = runner.run(argv, timeout, cwd=str(progs.parent))
            took = max(took, secs)
            cat, why = judge_cli(kind, rc, out, secs, timeout, e.get("position_optional", False))
            if cat == "pass" and name == "check" and e.get("mentions"):
                missing = [m for m in e["mentions"] if m not in out]
                if missing:
                    cat, why = "wrong", f"check does not name {', '.join(missing)}"
            if cat == "pass" and name == "check" and e.get("diag_mentions"):
                rc2, out2, _ = runner.run(argv + ["--format", "json"], timeout, cwd=str(progs.parent))
                msgs = []
                with contextlib.suppress(ValueError):
                    data = json.loads(out2[out2.find("["): out2.rfind("]") + 1])
                    msgs = [d.get("message", "") + " " + d.get("hint", "") for d in data
                            if isinstance(d, dict) and d.get("severity") == "error"]
                missing = [m for m in e["diag_mentions"] if not any(m in x for x in msgs)]
                if missing:
                    cat, why = "wrong", f"no error diagnostic names {', '.join(missing)}"
            if cat == "pass" and e.get("huge") and name == "check" and secs > baseline + e.get("extra_seconds", extra):
                cat, why = "wrong", f"took {secs:.1f} s (a tiny program takes {baseline:.1f} s)"
            if cat != "pass":
                outcome, reason = cat, f"{name}: {why}"
                break
        for f in e.get("absent_files", []):
            if os.path.exists(f):
                outcome, reason = "wrong", f"ran program code while reading: {f} was created"
        if runner.args.verbose:
            print(f"  {outcome:9} {e['id']} {reason}", flush=True)
        return {"kind": "program", "id": e["id"], "reader": reader, "what": e["what"],
                "outcome": outcome, "reason": reason, "seconds": round(took, 2)}

    import concurrent.futures
    normal = [e for e in items if not e.get("huge")]
    huge = [e for e in items if e.get("huge")]
    with concurrent.futures.ThreadPoolExecutor(max(1, runner.args.jobs)) as pool:
        results = list(pool.map(one, normal))
    results += [one(e) for e in huge]  # one at a time: their time limit is measured
    if os.path.exists("/tmp/frontdesk_hostile_pwned_import"):
        results.append({"kind": "program", "id": "_outside/evil.py", "reader": "tools",
                        "what": "a tool file outside the program", "outcome": "wrong",
                        "reason": "check or compile imported (ran) a tool file outside the program's folder"})
    return results, baseline


# ------------------------------------------------------------------------------------------ fake LLM
class FakeLLM:
    """An OpenAI-compatible endpoint whose next answers can be made to fail in chosen ways."""

    def __init__(self):
        self.fault = None
        self.calls = 0
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                self._send(200, b'{"object": "list", "data": [{"id": "fake", "object": "model"}]}')

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n)
                owner.calls += 1
                try:
                    req = json.loads(raw)
                except ValueError:
                    req = {}
                stream = bool(req.get("stream"))
                fault = owner.fault
                if fault == "reset":
                    with contextlib.suppress(OSError):
                        self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                if fault == "slow":
                    time.sleep(8)
                    fault = None
                if fault == "http_429":
                    return self._send(429, b'{"error": {"message": "Rate limit", "type": "rate_limit"}}',
                                      extra={"Retry-After": "0"})
                if fault == "http_500":
                    return self._send(500, b'{"error": {"message": "boom", "type": "server_error"}}')
                if fault == "http_503_html":
                    return self._send(503, b"<html><body><h1>503 Service Unavailable</h1></body></html>", "text/html")
                if fault == "ok_html":
                    return self._send(200, b"<!doctype html><html><body>Login required</body></html>", "text/html")
                if fault == "malformed_json":
                    return self._send(200, b'{"id": "x", "choices": [{"index": 0, "message": {"role": "assist')
                if fault == "json_array":
                    return self._send(200, b"[1, 2, 3]")
                if fault == "no_choices":
                    return self._send(200, json.dumps(self._envelope([])).encode())
                if fault == "choice_no_message":
                    return self._send(200, json.dumps(self._envelope([{"index": 0, "finish_reason": "stop"}])).encode())
                content = {"empty_content": "", "null_content": None, "whitespace_content": "  \n\t ",
                           "surrogate_content": None, "huge_content": "lorem ipsum " * 180000}.get(
                    fault, "We are open from 9 am to 6 pm, Monday to Saturday.")
                if fault == "surrogate_content":
                    body = (b'{"id": "x", "object": "chat.completion", "created": 1, "model": "fake", "choices": '
                            b'[{"index": 0, "message": {"role": "assistant", "content": "hi \\ud800 there"}, '
                            b'"finish_reason": "stop"}], "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}')
                    return self._send(200, body)
                message = {"role": "assistant", "content": content}
                if fault == "bad_tool_call":
                    message = {"role": "assistant", "content": None, "tool_calls": [
                        {"id": "call_1", "type": "function",
                         "function": {"name": "no_such_tool_\u202e", "arguments": "{not json"}}]}
                if stream and fault not in ("bad_tool_call",):
                    return self._stream(content)
                self._send(200, json.dumps(self._envelope(
                    [{"index": 0, "message": message, "finish_reason": "stop"}])).encode())

            def _envelope(self, choices):
                return {"id": "chatcmpl-fake", "object": "chat.completion", "created": 1, "model": "fake",
                        "choices": choices,
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}

            def _send(self, status, body, ctype="application/json", extra=None):
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                with contextlib.suppress(OSError):
                    self.wfile.write(body)

            def _stream(self, content):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                chunks = [{"role": "assistant", "content": content}, {}]
                for i, delta in enumerate(chunks):
                    data = {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "fake",
                            "choices": [{"index": 0, "delta": delta,
                                         "finish_reason": "stop" if i == len(chunks) - 1 else None}]}
                    self.wfile.write(b"data: " + json.dumps(data).encode() + b"\n\n")
                self.wfile.write(b"data: [DONE]\n\n")

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


# ------------------------------------------------------------------------------------------ serving
def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    def __init__(self, runner, program, work, name, llm, extra_env=None):
        self.runner, self.program, self.work, self.name = runner, program, work, name
        self.llm, self.extra_env = llm, extra_env or {}
        self.proc = None
        self.start()

    def start(self):
        self.port = free_port()
        env = dict(self.runner.env)
        env.update(self.extra_env)
        store = self.work / f"{self.name}-{self.port}.sqlite3"
        self.log = open(self.work / f"serve-{self.name}-{self.port}.log", "wb")
        self.proc = subprocess.Popen(
            self.runner.cmd("serve", str(self.program), "--port", str(self.port), "--llm", self.llm,
                            *(["--no-embeddings"] if self.llm == "none" else []), "--store", str(store)),
            stdout=self.log, stderr=subprocess.STDOUT, env=env, cwd=str(self.work), start_new_session=True)
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"serve exited with {self.proc.returncode}: {self.log_text()[-2000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.base + "/health", timeout=2).status_code == 200:
                    return
            time.sleep(0.3)
        raise RuntimeError("serve did not become healthy in 120 s: " + self.log_text()[-2000:])

    def log_text(self):
        self.log.flush()
        return (self.work / f"serve-{self.name}-{self.port}.log").read_text("utf-8", "replace")

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def expand(text):
    def rep(m):
        return m.group(1) * int(m.group(2))
    return REPEAT.sub(rep, text)


def status_ok(expect, status):
    classes = expect.split("|")
    return any(status // 100 == int(c[0]) for c in classes)


def body_of(case):
    if "body_hex" in case:
        return bytes.fromhex(case["body_hex"].replace(" ", ""))
    return expand(case.get("body", "")).encode("utf-8")


def json_or_none(resp):
    try:
        return resp.json()
    except ValueError:
        return None


def nonempty_reply(data):
    if not isinstance(data, dict):
        return False
    msgs = data.get("messages") or []
    return any(isinstance(m, dict) and str(m.get("text") or "").strip() for m in msgs)


class Fail(Exception):
    def __init__(self, category, reason):
        super().__init__(reason)
        self.category, self.reason = category, reason


def check_resp(resp, expect, what):
    text = resp.text
    if TRACEBACK.search(text):
        raise Fail("traceback", f"{what}: traceback in the HTTP answer ({resp.status_code})")
    for marker in LEAK_MARKERS:
        if marker in text:
            raise Fail("wrong", f"{what}: answer contains a secret")
    if not status_ok(expect, resp.status_code):
        detail = text[:120].replace("\n", " ")
        raise Fail("wrong", f"{what}: expected {expect}, got {resp.status_code} {detail}")
    if 400 <= resp.status_code < 500 and not isinstance(json_or_none(resp), dict):
        raise Fail("wrong", f"{what}: {resp.status_code} without a JSON object body: {text[:80]!r}")


def run_http_case(case, served, client, fake):
    auth = {"Authorization": f"Bearer {USER_TOKEN}"}
    r = client.post(served.base + "/v1/sessions", json={"program": served.program.name}, headers=auth)
    if r.status_code // 100 != 2:
        raise Fail("wrong", f"could not create a session: {r.status_code} {r.text[:100]}")
    sid = (json_or_none(r) or {}).get("id") or (json_or_none(r) or {}).get("session_id") \
        or ((json_or_none(r) or {}).get("session") or {}).get("id")
    if not sid:
        raise Fail("wrong", f"no session id in {r.text[:100]}")
    headers = {"Content-Type": "application/json", **auth}
    for k, v in (case.get("headers") or {}).items():
        if k == "auth":
            if v == "none":
                headers.pop("Authorization")
            elif v == "operator":
                headers["Authorization"] = f"Bearer {OPERATOR_TOKEN}"
            else:
                headers["Authorization"] = expand(v).encode("latin-1", "replace")
        else:
            headers[k] = v
    target = case.get("target", "messages")
    method = "POST"
    if target == "messages":
        path = f"/v1/sessions/{sid}/messages"
    elif target == "create":
        path = "/v1/sessions"
    elif target == "trace":
        client.post(served.base + f"/v1/sessions/{sid}/messages", json={"text": "hello"}, headers=auth)
        path, method = f"/v1/sessions/{sid}/trace", "GET"
    elif target == "session":
        path, method = f"/v1/sessions/{sid}", "GET"
    elif target == "reload":
        path = f"/v1/programs/{served.program.name}/reload"
    elif target == "raw":
        path, method = expand(case["path"]).replace("{session}", sid), case.get("method", "GET")
    else:
        raise Fail("wrong", f"unknown target {target}")
    url = served.base + path + (("?" + case["query"]) if case.get("query") else "")
    content = body_of(case) if method in ("POST", "PUT", "PATCH") else None
    if case.get("special") == "trace_paging":
        for i in range(5):
            rr = client.post(served.base + f"/v1/sessions/{sid}/messages", json={"text": f"hello {i}"}, headers=auth)
            check_resp(rr, "2xx", f"turn {i}")
        full = client.get(served.base + f"/v1/sessions/{sid}/trace?limit=5000", headers=auth)
        check_resp(full, "2xx", "trace at once")
        fdata = json_or_none(full)
        events = fdata.get("events") if isinstance(fdata, dict) else fdata
        if not isinstance(events, list) or len(events) < 5:
            raise Fail("wrong", f"trace at once has no event list ({str(fdata)[:80]})")
        paged, after, pages = [], None, 0
        while True:
            q = "limit=3" + (f"&after={after}" if after is not None else "")
            page = client.get(served.base + f"/v1/sessions/{sid}/trace?{q}", headers=auth)
            check_resp(page, "2xx", f"trace page {pages}")
            pdata = json_or_none(page)
            if not isinstance(pdata, dict) or not isinstance(pdata.get("events"), list):
                raise Fail("wrong", "a trace page is not an object with events")
            if len(pdata["events"]) > 3:
                raise Fail("wrong", f"limit=3 gave {len(pdata['events'])} events")
            paged += pdata["events"]
            pages += 1
            after = pdata.get("next")
            if after is None or pages > 2000:
                break
        if paged != events:
            raise Fail("wrong", f"paged trace ({len(paged)} events in {pages} pages) differs from the whole ({len(events)})")
        return sid
    for attempt in range(int(case.get("repeat", 1))):
        fake.fault = case.get("llm_fault")
        calls_before = fake.calls
        try:
            resp = client.request(method, url, content=content, headers=headers)
        except httpx.TimeoutException:
            raise Fail("hang", "no HTTP answer within the time limit")
        except httpx.HTTPError as exc:
            raise Fail("wrong", f"connection failed: {type(exc).__name__}: {exc}"[:160])
        finally:
            fake.fault = None
        check_resp(resp, case["expect"], "hostile request")
        if case.get("llm_fault") and fake.calls == calls_before:
            raise Fail("wrong", "the model endpoint was never called (the fault was not exercised)")
        if case.get("reply") == "nonempty" and resp.status_code // 100 == 2 and "stream=true" not in url:
            if not nonempty_reply(json_or_none(resp)):
                raise Fail("wrong", f"empty reply: {resp.text[:120]}")
        if "stream=true" in url and resp.status_code // 100 == 2:
            if "event: error" in resp.text and "event: result" not in resp.text:
                pass  # an error event in the stream is an answer; the follow-up decides
    return sid


def follow_up(sid, served, client):
    auth = {"Authorization": f"Bearer {USER_TOKEN}"}
    try:
        r = client.post(served.base + f"/v1/sessions/{sid}/messages", json={"text": "hello"}, headers=auth)
    except httpx.TimeoutException:
        raise Fail("hang", "follow-up message: no answer")
    if TRACEBACK.search(r.text):
        raise Fail("traceback", "follow-up message: traceback in the answer")
    if r.status_code // 100 != 2:
        raise Fail("wrong", f"follow-up message: {r.status_code} {r.text[:100]}")
    if not nonempty_reply(json_or_none(r)):
        raise Fail("wrong", f"follow-up message: no non-empty reply ({r.text[:100]})")
    t = client.get(served.base + f"/v1/sessions/{sid}/trace", headers=auth)
    if t.status_code != 200 or json_or_none(t) is None:
        raise Fail("wrong", f"trace after the case: {t.status_code} {t.text[:100]}")


def run_serve(runner, work, messages, only):
    results = []
    cases = messages.get("messages", [])
    if only:
        cases = [c for c in cases if any(o in c["id"] for o in only)]
    if not cases:
        return results
    fake = FakeLLM()
    examples = pathlib.Path(runner.args.examples)
    offline_prog = work / "serve" / "refund_desk"
    shutil.copytree(examples / "refund_desk", offline_prog)
    llm_prog = work / "serve" / "llm_helper"
    shutil.copytree(SET / "serve_programs" / "llm_helper", llm_prog)
    servers = {}
    try:
        servers["offline"] = Served(runner, offline_prog, work, "offline", "none")
        if any(c.get("server") == "llm" for c in cases):
            servers["llm"] = Served(runner, llm_prog, work, "llm", "openai", {
                "FRONTDESK_LLM_BASE_URL": f"http://127.0.0.1:{fake.port}/v1",
                "FRONTDESK_LLM_MODEL": "fake-model"})
    except RuntimeError as exc:
        for c in cases:
            results.append({"kind": "http", "id": c["id"], "reader": "serve", "what": c["what"],
                            "outcome": "wrong", "reason": f"server did not start: {str(exc)[:200]}"})
        for s in servers.values():
            s.stop()
        fake.close()
        return results
    timeout = httpx.Timeout(60.0, connect=10.0)
    with httpx.Client(timeout=timeout) as client:
        for case in cases:
            served = servers[case.get("server", "offline")]
            outcome, reason = "pass", ""
            start = time.monotonic()
            try:
                sid = run_http_case(case, served, client, fake)
                follow_up(sid, served, client)
            except Fail as f:
                outcome, reason = f.category, f.reason
            except httpx.TimeoutException:
                outcome, reason = "hang", "no HTTP answer within the time limit"
            except httpx.HTTPError as exc:
                outcome, reason = "wrong", f"{type(exc).__name__}: {exc}"[:160]
            if not served.alive():
                log = served.log_text()
                outcome = "traceback" if TRACEBACK.search(log) else "wrong"
                reason = (reason + "; " if reason else "") + f"the server died (exit {served.proc.returncode})"
                served.start()
            elif outcome == "pass" and TRACEBACK.search(served.log_text()[-20000:]) and runner.args.strict_logs:
                outcome, reason = "traceback", "a traceback in the server log"
            results.append({"kind": "http", "id": case["id"], "reader": "serve-" + case.get("server", "offline"),
                            "what": case["what"], "outcome": outcome, "reason": reason,
                            "seconds": round(time.monotonic() - start, 2)})
            if runner.args.verbose:
                print(f"  {outcome:9} {case['id']} {reason}", flush=True)
    for s in servers.values():
        s.stop()
    fake.close()
    if os.path.exists("/tmp/frontdesk_hostile_pwned_msg"):
        results.append({"kind": "http", "id": "yaml_tag_text(side effect)", "reader": "serve", "what": "",
                        "outcome": "wrong", "reason": "a message ran code"})
    return results


def run_chat(runner, work, messages, only):
    results = []
    cases = messages.get("chat", [])
    if only:
        cases = [c for c in cases if any(o in c["id"] for o in only)]
    prog = work / "chat" / "refund_desk"
    if cases:
        shutil.copytree(pathlib.Path(runner.args.examples) / "refund_desk", prog)
    for case in cases:
        if "stdin_repeat" in case:
            data = (case["stdin_repeat"]["unit"] * case["stdin_repeat"]["count"] + "\nhello\n").encode()
        else:
            data = bytes.fromhex(case["stdin_hex"])
        rc, out, secs = runner.run(["chat", str(prog), "--llm", "none", "--no-embeddings", "--store", "memory"],
                                   60, stdin=data, cwd=str(work))
        if rc is None:
            outcome, reason = "hang", "chat did not finish in 60 s"
        elif TRACEBACK.search(out):
            last = [l for l in out.splitlines() if l.strip()][-1:]
            outcome, reason = "traceback", f"traceback: {last[0][:150] if last else ''}"
        elif rc != 0:
            outcome, reason = "wrong", f"chat exited {rc}: {out.strip().splitlines()[-1][:120] if out.strip() else ''}"
        elif b"hello\n" in data and not out[out.rfind("hello") + 5:].strip():
            outcome, reason = "wrong", "nothing answered after the last line"
        else:
            outcome, reason = "pass", ""
        results.append({"kind": "chat", "id": case["id"], "reader": "chat", "what": case["what"],
                        "outcome": outcome, "reason": reason, "seconds": round(secs, 2)})
        if runner.args.verbose:
            print(f"  {outcome:9} {case['id']} {reason}", flush=True)
    return results


# ------------------------------------------------------------------------------------------ runtime env
ENV_SENTINELS = {"FRONTDESK_SOMETHING_NEW": "hostile-new-frontdesk-var-91d2",
                 "UNLISTED_SECRET": "hostile-unlisted-secret-3e77", "SHOP_TOKEN": "shop-token-allowed-1a2b"}


def run_runtime_env(runner, work, expectations, only):
    """Run an ABL flow whose HTTP tool template reads an env var; the capture server must never see a secret."""
    cases = expectations.get("runtime_env", [])
    if only:
        cases = [c for c in cases if any(o in c["id"] for o in only)]
    results = []
    if not cases:
        return results
    seen = []

    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def _any(self):
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n) if n else b""
            seen.append(self.requestline + "\n" + str(self.headers) + "\n" + body.decode("utf-8", "replace"))
            out = b'{"found": true}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        do_GET = do_POST = do_PUT = _any

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True

    srv = Server(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    port = srv.server_address[1]
    agent = (SET / "serve_programs" / "http_caller.agent.abl").read_text()
    secrets = list(SENTINELS.values()) + [ENV_SENTINELS["FRONTDESK_SOMETHING_NEW"], ENV_SENTINELS["UNLISTED_SECRET"]]
    for case in cases:
        prog = work / "runtime_env" / case["id"]
        prog.mkdir(parents=True)
        (prog / "orders.agent.abl").write_text(agent)
        (prog / "orders.tools.abl").write_text(
            'TOOLS:\n  lookup_order(order_id: string) -> {found: boolean}\n    description: "Find an order"\n'
            + case["binding"].replace("{PORT}", str(port)))
        env = dict(runner.env)
        env.update(ENV_SENTINELS)
        if case.get("allow_env"):
            env["FRONTDESK_ALLOW_ENV"] = ",".join(case["allow_env"])
        del seen[:]
        rc, out, secs = runner.run(["chat", str(prog), "--llm", "none", "--no-embeddings", "--store", "memory"],
                                   60, stdin=b"A-100\n", cwd=str(work), env=env)
        got = "\n".join(seen)
        if rc is None:
            outcome, reason = "hang", "chat did not finish in 60 s"
        elif TRACEBACK.search(out):
            outcome, reason = "traceback", "traceback in chat"
        elif any(x in got for x in secrets):
            leaked = [k for k, v in {**SENTINELS, **ENV_SENTINELS}.items() if v in got and k != "SHOP_TOKEN"]
            outcome, reason = "wrong", f"the tool's HTTP request carried the value of {', '.join(leaked)}"
        elif any(x in out for x in secrets):
            outcome, reason = "wrong", "chat printed a secret"
        elif case.get("control") and not seen:
            outcome, reason = "wrong", f"the tool was never called (exit {rc}): the harness is not exercised"
        elif case.get("require_value") and ENV_SENTINELS[case["require_value"]] not in got:
            outcome, reason = "wrong", (f"the allowed {case['require_value']} never reached the request "
                                        f"(the cases that read env vars the same way prove nothing)")
        else:
            outcome, reason = "pass", ""
        results.append({"kind": "runtime", "id": "env:" + case["id"], "reader": "runtime-env", "what": case["what"],
                        "outcome": outcome, "reason": reason, "seconds": round(secs, 2)})
        if runner.args.verbose:
            print(f"  {outcome:9} env:{case['id']} {reason} (requests: {len(seen)})", flush=True)
            for req in seen:
                print("      " + req.replace("\n", " | ")[:400], flush=True)
    srv.shutdown()
    return results


# ------------------------------------------------------------------------------------------ report
CATS = ["pass", "traceback", "hang", "wrong"]


def report(results, label):
    table = collections.defaultdict(collections.Counter)
    for r in results:
        table[r["reader"]][r["outcome"]] += 1
    lines = [f"Held-out hostile inputs: {label}", ""]
    lines.append(f"{'reader':16}" + "".join(f"{c:>10}" for c in CATS) + f"{'total':>8}")
    total = collections.Counter()
    for reader in sorted(table):
        row = table[reader]
        total.update(row)
        lines.append(f"{reader:16}" + "".join(f"{row[c]:>10}" for c in CATS) + f"{sum(row.values()):>8}")
    lines.append(f"{'all':16}" + "".join(f"{total[c]:>10}" for c in CATS) + f"{sum(total.values()):>8}")
    fails = [r for r in results if r["outcome"] != "pass"]
    if fails:
        lines += ["", f"Failures ({len(fails)}):"]
        for r in fails:
            lines.append(f"  [{r['outcome']}] {r['id']} ({r['what']}): {r['reason']}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frontdesk", default=str(REPO / ".venv/bin/frontdesk"))
    ap.add_argument("--python", help="run `python -c 'import frontdesk.cli; ...'` instead of --frontdesk")
    ap.add_argument("--pythonpath", help="PYTHONPATH for --python (e.g. an older src/ tree)")
    ap.add_argument("--examples", help="the examples folder to serve (default: beside --pythonpath, else the repo's)")
    ap.add_argument("--timeout", type=float, help="seconds per check/compile run (default from expectations.yml)")
    ap.add_argument("--jobs", type=int, default=2, help="programs checked at the same time (default 2)")
    ap.add_argument("--only", action="append", help="run only ids containing this text (repeatable)")
    ap.add_argument("--skip-serve", action="store_true")
    ap.add_argument("--skip-programs", action="store_true")
    ap.add_argument("--strict-logs", action="store_true", help="also fail a case when the server logs a traceback")
    ap.add_argument("--json", help="write every result to this file")
    ap.add_argument("--label", default=None)
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    if args.python and not args.pythonpath:
        args.pythonpath = None
    if not args.examples:
        cand = pathlib.Path(args.pythonpath).parent / "examples" if args.pythonpath else None
        args.examples = str(cand if cand and cand.is_dir() else REPO / "examples")
    runner = Runner(args)
    expectations = yaml.safe_load((SET / "expectations.yml").read_text())
    messages = yaml.safe_load((SET / "messages.yml").read_text())
    label = args.label or (f"{args.python} PYTHONPATH={args.pythonpath}" if args.python else args.frontdesk)
    label += " at " + datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    results = []
    with tempfile.TemporaryDirectory(prefix="frontdesk-hostile-") as tmp:
        work = pathlib.Path(tmp)
        progs = prepare(work)
        if not args.skip_programs:
            print("programs ...", flush=True)
            res, baseline = run_programs(runner, progs, expectations, args.only)
            results += res
            print(f"  (a tiny program's check takes {baseline:.2f} s)", flush=True)
        if not args.skip_serve:
            print("serve ...", flush=True)
            results += run_serve(runner, work, messages, args.only)
            print("chat ...", flush=True)
            results += run_chat(runner, work, messages, args.only)
            print("runtime env ...", flush=True)
            results += run_runtime_env(runner, work, expectations, args.only)
    shutil.rmtree(OUTSIDE, ignore_errors=True)
    print()
    print(report(results, label))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"label": label, "results": results}, indent=1))
    return 0 if all(r["outcome"] == "pass" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
