"""Hostile input through the real `frontdesk` command: markup in data, odd program files, secrets, stores, sessions."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
BOOKSTORE = ROOT / "examples" / "bookstore"
BANK = ROOT / "examples" / "retail_banking"
MARKUP = "hello [/x] [link=https://evil.example]click[/link] [bold]loud[/bold] :thumbs_up:"


def frontdesk(*args: str, cwd: Path, stdin: str = "", env: dict | None = None,
              timeout: float = 120) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("FRONTDESK_LLM", "OPENAI_"))}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "frontdesk.cli", *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True, env=full_env, timeout=timeout)


def session_of(result: subprocess.CompletedProcess) -> str:
    return next(line.split()[-1] for line in result.stderr.splitlines() if "frontdesk trace" in line)


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.setenv("FRONTDESK_EXAMPLE_DB_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("FRONTDESK_EXAMPLE_TODAY", "2026-11-22")
    return tmp_path


def flow_program(folder: Path, bot: str = "Hi! What is your name?", bye: str = "Bye.") -> Path:
    """A program that needs no model: a greeting, a question, a goodbye, with user turns between."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "agents.yml").write_text(
        "main:\n  type: flow agent\n  steps:\n"
        f"    - bot: {json.dumps(bot)}\n    - user\n    - bot: \"Second question?\"\n    - user\n"
        f"    - bot: {json.dumps(bye)}\n",
        encoding="utf-8")
    return folder


# -- markup ---------------------------------------------------------------------------------


def test_markup_in_user_lines_bot_text_and_session_ids_is_printed_as_text(workdir):
    program = flow_program(workdir / "prog", bot="Welcome [/INST] [link=https://evil.example]x[/link]")
    result = frontdesk("chat", str(program), "--llm", "none", "--no-embeddings", "--store", "s.sqlite3", stdin=MARKUP + "\n",
                       cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "main> Welcome [/INST] [link=https://evil.example]x[/link]" in result.stdout
    assert f"you> {MARKUP}" in result.stdout
    assert "main> Second question?" in result.stdout
    trace = frontdesk("trace", session_of(result), "--store", "s.sqlite3", cwd=workdir)
    assert trace.returncode == 0 and "Traceback" not in trace.stderr
    assert "[/x]" in trace.stdout and "[link=https://evil.example]" in trace.stdout
    for command in (("chat", str(program), "--llm", "none", "--no-embeddings", "--store", "s.sqlite3", "--session", "[/x]"),
                    ("trace", "[/x]", "--store", "s.sqlite3")):
        missing = frontdesk(*command, cwd=workdir)
        assert missing.returncode in (1, 2) and "Traceback" not in missing.stderr
        assert "'[/x]'" in missing.stderr


def test_a_models_note_keeps_its_brackets(workdir, monkeypatch):
    from frontdesk import cli
    from frontdesk import app as choose

    hint = "install the local models: pip install 'frontdesk[local]' [/x]"
    monkeypatch.setattr(choose, "choose_models", lambda *a, **k: choose.Models(None, notes=[hint]))
    program = flow_program(workdir / "prog")
    result = CliRunner().invoke(cli.app, ["chat", str(program), "--store", "memory"], input="")
    assert result.exit_code == 0, result.output
    assert hint in result.output


class ReplyServer:
    """A local chat-completions server: routes to the knowledge base, then answers with `reply`."""

    def __init__(self, reply) -> None:
        self.auth: list[str | None] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.auth.append(self.headers.get("Authorization"))
                tools = [t["function"]["name"] for t in body.get("tools", [])]
                if "route" in tools:
                    message = {"role": "assistant", "content": None, "tool_calls": [{
                        "id": "c1", "type": "function",
                        "function": {"name": "route", "arguments": json.dumps({"agent": "store_policy_kb"})}}]}
                else:
                    message = {"role": "assistant", "content": reply}
                payload = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                                      "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                                      "usage": {"prompt_tokens": 1, "completion_tokens": 1}}).encode()
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


@pytest.mark.parametrize("reply", ["[/INST] Shipping is free over $35 [/x]", 42, {"text": "[/b]"}])
def test_a_model_reply_with_markup_or_that_is_not_text_is_shown_as_text(workdir, reply):
    server = ReplyServer(reply)
    try:
        result = frontdesk("chat", str(BOOKSTORE), "--store", "memory", "--no-embeddings", cwd=workdir,
                           stdin="How much is shipping?\nAnd returns?\n",
                           env={"FRONTDESK_LLM_BASE_URL": server.url})
    finally:
        server.close()
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    shown = reply if isinstance(reply, str) else json.dumps(reply)
    assert result.stdout.count(f"store_policy_kb> {shown}") == 2  # the second turn works too


# -- program files --------------------------------------------------------------------------


def test_check_on_binary_and_non_utf8_files_is_a_diagnostic(workdir):
    latin1 = workdir / "latin1.yml"
    latin1.write_bytes(b"main:\n  type: flow agent\n  steps:\n    - bot: \"caf\xe9\"\n")
    binary = workdir / "binary.yml"
    binary.write_bytes(bytes(range(256)) * 8)
    nul = workdir / "nul.yml"
    nul.write_bytes(b"main:\n  type: flow agent\x00\n")
    for path, where in ((latin1, ":4:16:"), (binary, ":2:118:"), (nul, ":2:19:")):
        result = frontdesk("check", str(path), cwd=workdir)
        assert result.returncode == 1, result.stderr
        assert "Traceback" not in result.stderr
        assert f"{path}{where} error[ADL002]" in result.stderr, result.stderr
        assert "\x1b" not in result.stderr  # no raw escape bytes from the file reach the terminal
        as_json = frontdesk("check", str(path), "--format", "json", cwd=workdir)
        assert json.loads(as_json.stdout)[0]["code"] == "ADL002"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifos_devices_folders_and_long_names_are_refused_without_reading(workdir):
    os.mkfifo(workdir / "fifo.yml")
    (workdir / "zero.yml").symlink_to("/dev/zero")
    (workdir / "folder.yml").mkdir()
    (workdir / "folder.yml" / "agents.yml").mkdir()
    long_name = "a" * 300 + ".yml"
    cases = {
        "fifo.yml": "not a regular file",
        "zero.yml": "not a regular file",
        "folder.yml": "it is a folder",
        long_name: "file name is too long",
    }
    for name, message in cases.items():
        result = frontdesk("check", name, cwd=workdir, timeout=30)
        assert result.returncode == 1, (name, result.stderr)
        assert message in result.stderr and "Traceback" not in result.stderr, (name, result.stderr)


def test_oversized_and_node_heavy_yaml_is_refused_quickly(workdir):
    big = workdir / "big.yml"
    big.write_text("main:\n  type: flow agent\n  steps:\n" + "    - bot: hi\n" * 400_000, encoding="utf-8")
    heavy = workdir / "heavy.yml"
    heavy.write_text("main: [" + "a," * 1_000_000 + "a]\n", encoding="utf-8")
    deep = workdir / "deep.yml"
    deep.write_text("main: " + "[" * 3000 + "]" * 3000 + "\n", encoding="utf-8")
    for path, message in ((big, "more than the limit of 4,194,304 bytes"), (heavy, "more than 200,000 nodes"),
                          (deep, "nested more than 100 levels deep")):
        result = frontdesk("check", str(path), cwd=workdir, timeout=30)
        assert result.returncode == 1 and message in result.stderr, result.stderr
        assert max(len(line) for line in result.stderr.splitlines()) < 400  # the excerpt is a window


def test_a_huge_config_file_is_refused_before_reading(workdir):
    program = flow_program(workdir / "prog")
    (program / "config.yml").write_text("history_window: 3\n# " + "x" * (5 * 1024 * 1024) + "\n", encoding="utf-8")
    result = frontdesk("check", str(program), cwd=workdir)
    assert result.returncode == 1 and "cannot read the settings file" in result.stderr, result.stderr


# -- secrets ----------------------------------------------------------------------------------


def test_compile_does_not_print_the_configs_secrets(workdir):
    program = flow_program(workdir / "prog")
    (program / "config.yml").write_text(
        "llm:\n  base_url: https://bob:hunter2@llm.example/v1\n  api_key: sk-SECRET-123\n  model: m\n",
        encoding="utf-8")
    result = frontdesk("compile", str(program), cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert "sk-SECRET-123" not in result.stdout and "hunter2" not in result.stdout
    llm = json.loads(result.stdout)["settings"]["llm"]
    assert llm["api_key"] == "***" and llm["base_url"] == "https://***@llm.example/v1" and llm["model"] == "m"


def test_the_users_key_is_not_sent_to_a_programs_endpoint(workdir):
    server = ReplyServer("Shipping is $4.99.")
    try:
        program = workdir / "shop"
        program.mkdir()
        for name in ("agents.yml",):
            (program / name).write_text((BOOKSTORE / name).read_text(encoding="utf-8"), encoding="utf-8")
        (program / "config.yml").write_text(f"llm:\n  base_url: {server.url}\n", encoding="utf-8")
        for source in BOOKSTORE.glob("*.py"):
            (program / source.name).write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
        shutil.copytree(BOOKSTORE / "policies", program / "policies")  # a link out of the folder is refused
        result = frontdesk("chat", str(program), "--store", "memory", "--no-embeddings", cwd=workdir,
                           stdin="How much is shipping?\n", env={"FRONTDESK_LLM_API_KEY": "sk-USER-SECRET"})
    finally:
        server.close()
    assert result.returncode == 0, result.stderr
    assert server.auth and all("sk-USER-SECRET" not in (a or "") for a in server.auth)


# -- stores -----------------------------------------------------------------------------------


def test_a_file_that_is_not_a_database_is_a_clear_error(workdir):
    (workdir / "notes.sqlite3").write_text("my notes, not a database\n" * 100, encoding="utf-8")
    program = flow_program(workdir / "prog")
    for command in (("chat", str(program), "--llm", "none", "--no-embeddings", "--store", "notes.sqlite3"),
                    ("trace", "abc", "--store", "notes.sqlite3")):
        result = frontdesk(*command, cwd=workdir)
        assert result.returncode == 2, result.stderr
        assert "file is not a database" in result.stderr and "Traceback" not in result.stderr


def test_a_store_locked_by_another_process_is_a_clear_error(workdir):
    program = flow_program(workdir / "prog")
    store = workdir / "s.sqlite3"
    first = frontdesk("chat", str(program), "--llm", "none", "--no-embeddings", "--store", str(store), cwd=workdir)
    assert first.returncode == 0, first.stderr
    holder = sqlite3.connect(store, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process writing for longer than the busy timeout
    try:
        result = frontdesk("chat", str(program), "--llm", "none", "--no-embeddings", "--store", str(store), cwd=workdir)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.returncode == 2
    assert "database is locked" in result.stderr and "Traceback" not in result.stderr


# -- sessions ---------------------------------------------------------------------------------


def test_a_session_is_never_overwritten_by_another_program(workdir):
    mine = flow_program(workdir / "mine")
    other = flow_program(workdir / "other", bot="Other program here.")
    first = frontdesk("chat", str(mine), "--llm", "none", "--no-embeddings", "--store", "s.sqlite3", stdin="Ada\n", cwd=workdir)
    assert "Second question?" in first.stdout
    session = session_of(first)
    before = frontdesk("trace", session, "--store", "s.sqlite3", "--json", cwd=workdir).stdout
    wrong = frontdesk("chat", str(other), "--llm", "none", "--no-embeddings", "--store", "s.sqlite3", "--session", session,
                      stdin="hello\n", cwd=workdir)
    assert wrong.returncode == 2
    assert f"belongs to program {mine / 'agents.yml'}" in wrong.stderr
    assert "starts over" not in wrong.stderr + wrong.stdout and "Other program" not in wrong.stdout
    assert frontdesk("trace", session, "--store", "s.sqlite3", "--json", cwd=workdir).stdout == before
    again = frontdesk("chat", "agents.yml", "--llm", "none", "--no-embeddings", "--store", "../s.sqlite3", "--session", session,
                      stdin="see you\n", cwd=mine)  # the same program, named from another folder
    assert again.returncode == 0, again.stderr
    assert "main> Bye." in again.stdout


def test_a_changed_version_of_the_same_program_still_continues(workdir):
    mine = flow_program(workdir / "mine")
    first = frontdesk("chat", str(mine), "--llm", "none", "--no-embeddings", "--store", "s.sqlite3", stdin="Ada\n", cwd=workdir)
    session = session_of(first)
    text = (mine / "agents.yml").read_text(encoding="utf-8")
    (mine / "agents.yml").write_text(text.replace("Bye.", "Goodbye."), encoding="utf-8")
    again = frontdesk("chat", str(mine), "--llm", "none", "--no-embeddings", "--store", "s.sqlite3", "--session", session,
                      stdin="bye\n", cwd=workdir)
    assert again.returncode == 0, again.stderr
    assert "main> Goodbye." in again.stdout


# -- scripts ----------------------------------------------------------------------------------


def write_script(folder: Path, text: str) -> Path:
    path = folder / "script.yml"
    path.write_text(text, encoding="utf-8")
    return path


def test_script_user_lines_stay_as_written(workdir):
    program = flow_program(workdir / "prog")
    script = write_script(workdir, "user:\n  - yes\n  - no\nllm: []\nexpect:\n  - Second question?\n  - Bye.\n")
    result = frontdesk("chat", str(program), "--script", str(script), "--store", "memory", cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert "you> yes" in result.stdout and "you> no" in result.stdout and "True" not in result.stdout
    assert "script checks passed" in result.stderr
    from frontdesk.testing import load_conversation

    script.write_text("user: [yes, no, on, 1.50, null, ~, 007]\n", encoding="utf-8")
    assert load_conversation(script)["user"] == ["yes", "no", "on", "1.50", "null", "~", "007"]


def test_a_script_user_line_that_is_not_text_is_refused_with_its_line(workdir):
    program = flow_program(workdir / "prog")
    script = write_script(workdir, "user:\n  - fine\n  - Note: this became a mapping\n")
    result = frontdesk("chat", str(program), "--script", str(script), "--store", "memory", cwd=workdir)
    assert result.returncode == 2
    assert f"{script}:3:" in result.stderr and "quote it" in result.stderr


def test_a_script_with_an_unknown_key_is_refused_listing_the_known_ones(workdir):
    program = flow_program(workdir / "prog")
    script = write_script(workdir, "user: [Ada]\nexpected:\n  - Bye\n")
    result = frontdesk("chat", str(program), "--script", str(script), "--store", "memory", cwd=workdir)
    assert result.returncode == 2
    assert "unknown key 'expected'" in result.stderr
    assert "user, llm, expect, events, embeddings, llm_classifies" in result.stderr


def test_chat_script_checks_expect_and_events_and_shows_the_failing_turn(workdir):
    program = flow_program(workdir / "prog")
    script = write_script(workdir, "user:\n  - Ada\n  - bye\nexpect:\n  - Second question?\n"
                                   "  - See you later\nevents:\n  - {type: session_ended}\n"
                                   "  - {type: arg_set, name: nickname}\n")
    result = frontdesk("chat", str(program), "--script", str(script), "--store", "memory", cwd=workdir)
    assert result.returncode == 1, result.stderr
    assert "check failed: the bot never said 'See you later'" in result.stderr
    assert "events of turn 2:" in result.stderr and "Bye." in result.stderr.split("events of turn 2:")[1]
    assert "check failed: no event arg_set {'name': 'nickname'}" in result.stderr
    assert "script checks failed: 2 of 4 expectations" in result.stderr
    good = write_script(workdir, "user:\n  - Ada\n  - bye\nexpect:\n  - Bye.\nevents:\n  - session_ended\n")
    passed = frontdesk("chat", str(program), "--script", str(good), "--store", "memory", cwd=workdir)
    assert passed.returncode == 0, passed.stderr
    assert "script checks passed (2 expectations)" in passed.stderr
