"""The `frontdesk` command as a user runs it: check, compile, chat (scripted, stdin, OpenAI-compatible), trace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BOOKSTORE = ROOT / "examples" / "bookstore"
BANK = ROOT / "examples" / "retail_banking"


def frontdesk(*args: str, cwd: Path, stdin: str = "", env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("FRONTDESK_LLM", "OPENAI_"))}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "frontdesk.cli", *args], cwd=cwd, input=stdin, capture_output=True,
        text=True, env=full_env, timeout=120,
    )


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.setenv("FRONTDESK_EXAMPLE_DB_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("FRONTDESK_EXAMPLE_TODAY", "2026-11-22")
    return tmp_path


def test_check_passes_on_the_examples(workdir):
    for example in (BOOKSTORE, BANK):
        result = frontdesk("check", str(example), cwd=workdir)
        assert result.returncode == 0, result.stderr
        assert "0 errors" in result.stderr


def test_check_reports_errors_with_position_and_exit_status_1(workdir):
    bad = workdir / "bad.yml"
    bad.write_text("main:\n  type: flow agent\n  steps:\n    - bot: hi\n    - next: nowhere\n", encoding="utf-8")
    result = frontdesk("check", str(bad), cwd=workdir)
    assert result.returncode == 1
    assert f"{bad}:5:" in result.stderr
    assert "Traceback" not in result.stderr
    as_json = frontdesk("check", str(bad), "--format", "json", cwd=workdir)
    codes = [d["code"] for d in json.loads(as_json.stdout)]
    assert as_json.returncode == 1 and codes


def test_compile_prints_ir_json(workdir):
    result = frontdesk("compile", str(BOOKSTORE), cwd=workdir)
    assert result.returncode == 0, result.stderr
    ir = json.loads(result.stdout)
    assert ir["language"] == "adl"
    assert ir["agents"]["order"]["kind"] == "flow"
    assert ir["agents"]["triage"]["kind"] == "router"


def test_chat_replays_a_script_and_trace_shows_the_session(workdir):
    script = BOOKSTORE / "conversations" / "happy_path.yml"
    result = frontdesk("chat", str(BOOKSTORE), "--script", str(script), "--trace", cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert "order> Done! Order" in result.stdout
    assert "route -> order" in result.stderr  # --trace shows decisions
    session = next(line.split()[-1] for line in result.stderr.splitlines() if "frontdesk trace" in line)
    trace = frontdesk("trace", session, cwd=workdir)
    assert trace.returncode == 0, trace.stderr
    assert "place_order" in trace.stdout and "llm_call" in trace.stdout
    lines = frontdesk("trace", session, "--json", cwd=workdir).stdout.splitlines()
    types = [json.loads(line)["type"] for line in lines]
    assert types[0] == "session_started" and "condition_evaluated" in types


def test_chat_reads_stdin_and_continues_a_session(workdir):
    first = frontdesk("chat", str(BANK), "--store", "s.sqlite3", "--llm", "none", "--no-embeddings", stdin="", cwd=workdir)
    assert first.returncode == 0, first.stderr
    assert "Hello Mary Brown" in first.stdout
    assert "no LLM" in first.stderr
    session = next(line.split()[-1] for line in first.stderr.splitlines() if "frontdesk trace" in line)
    again = frontdesk("chat", str(BANK), "--store", "s.sqlite3", "--llm", "none", "--no-embeddings", "--session", session,
                      stdin="What can you do?\n", cwd=workdir)
    assert again.returncode == 0, again.stderr
    assert "you> What can you do?" in again.stdout
    # no model: routing by words finds no member, and the bot says what it can help with (no traceback)
    assert "I can help with" in again.stdout
    assert "Traceback" not in again.stderr


def test_unknown_session_and_bad_store_are_clear_errors(workdir):
    result = frontdesk("chat", str(BANK), "--session", "nope", "--store", "memory", "--llm", "none", "--no-embeddings", cwd=workdir)
    assert result.returncode == 2 and "no session 'nope'" in result.stderr
    result = frontdesk("chat", str(BANK), "--store", "mysql://x", "--llm", "none", "--no-embeddings", cwd=workdir)
    assert result.returncode == 2 and "accepted forms" in result.stderr


class PolicyModelServer:
    """A local server speaking the chat-completions API: routes to the knowledge base and answers from it."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                tools = [t["function"]["name"] for t in body.get("tools", [])]
                if "route" in tools:
                    message = {"role": "assistant", "content": None, "tool_calls": [{
                        "id": "c1", "type": "function",
                        "function": {"name": "route", "arguments": json.dumps({"agent": "store_policy_kb"})}}]}
                else:
                    context = body["messages"][0]["content"]
                    fee = "$4.99" if "$4.99" in context else "unknown"
                    message = {"role": "assistant", "content": f"Standard shipping costs {fee}."}
                payload = json.dumps({
                    "id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107},
                }).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_chat_against_an_openai_compatible_endpoint(workdir):
    server = PolicyModelServer()
    try:
        result = frontdesk(
            "chat", str(BOOKSTORE), "--store", "memory", "--no-embeddings", cwd=workdir,
            stdin="How much is standard shipping?\n",
            env={"FRONTDESK_LLM_BASE_URL": server.url, "FRONTDESK_LLM_MODEL": "test-model"},
        )
    finally:
        server.close()
    assert result.returncode == 0, result.stderr
    assert "store_policy_kb> Standard shipping costs $4.99." in result.stdout
    assert [r["model"] for r in server.requests] == ["test-model", "test-model"]
    assert server.requests[0]["tool_choice"]["function"]["name"] == "route"


def test_describe_render_and_verify_a_chat_session_from_the_command_line(workdir):
    spec = workdir / "bookstore.acdl"
    described = frontdesk("describe", str(BOOKSTORE), "-o", str(spec), cwd=workdir)
    assert described.returncode == 0, described.stderr
    assert frontdesk("acdl", "check", str(spec), cwd=workdir).returncode == 0
    rendered = frontdesk("acdl", "render", str(spec), "-o", str(workdir / "bookstore.svg"), cwd=workdir)
    assert rendered.returncode == 0 and (workdir / "bookstore.svg").read_text().startswith("<svg")
    chat = frontdesk("chat", str(BOOKSTORE), "--script", str(BOOKSTORE / "conversations" / "intent_change.yml"),
                     cwd=workdir)
    session = next(line.split()[-1] for line in chat.stderr.splitlines() if "frontdesk trace" in line)
    verified = frontdesk("acdl", "verify", str(spec), session, cwd=workdir)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "8 calls checked, 0 mismatched" in verified.stdout
    broken = workdir / "broken.acdl"
    broken.write_text(spec.read_text().replace("    U: {\n        CONVERSATION_HEADER", "    A: {\n        CONVERSATION_HEADER", 1))
    mismatch = frontdesk("acdl", "verify", str(broken), session, cwd=workdir)
    assert mismatch.returncode == 1 and "mismatch" in mismatch.stdout


def test_chat_prints_what_was_sent_not_a_draft_a_guardrail_changed(workdir):
    (workdir / "desk.agent.abl").write_text('''AGENT: Desk
GOAL: "Answer"

GUARDRAILS:
  no_email_out:
    kind: output
    check: "abl.contains_email(content)"
    action: redact

FLOW:
  hello -> bye

  hello:
    RESPOND: "Write to help@shop.test for anything."
    THEN: bye

  bye:
    RESPOND: "Goodbye."
''', encoding="utf-8")
    result = frontdesk("chat", str(workdir / "desk.agent.abl"), "--llm", "none", "--no-embeddings", "--trace", stdin="", cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert "help@shop.test" not in result.stdout
    assert "Write to [REDACTED] for anything." in result.stdout
    assert "draft not sent as written" in result.stderr  # the trace still shows what was drafted


@pytest.mark.local
@pytest.mark.smollm2
def test_chat_holds_an_escalated_session_until_the_person_hands_it_back(workdir):
    hub = ROOT / "examples" / "support_hub"
    lines = ["I want to pay off my credit card", "5000", "yes", "please pay my credit card bill", "5000",
             "yes", "hello?", "/human limit raised", "what's my balance?"]
    result = frontdesk("chat", str(hub), "--store", "memory", "--llm", "local", stdin="\n".join(lines) + "\n",
                       cwd=workdir)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "type /human" in result.stderr
    held = out.index("A member of our team will reply here shortly.")
    assert "handed the session back" in result.stderr
    assert out.index("Your checking account balance is 1250 EUR.") > held  # agents answer again
