"""The runtime overhead benchmark (bench/overhead.py) on tiny sizes: each part runs and reports numbers
of the expected shape. No timing is asserted."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import overhead  # noqa: E402
from frontdesk.lang import load_program  # noqa: E402


@pytest.mark.parametrize("kind", overhead.KINDS)
def test_each_kind_does_its_work(kind, tmp_path):
    events = overhead.check_kind(kind, tmp_path)
    assert "execution.completed" in events
    calls = events.count("llm_call")
    assert calls == {"flow": 0, "reasoning": 2, "routing": 1}[kind]
    assert "bot_message" in events
    if kind in ("flow", "reasoning"):
        assert "tool_result" in events
    if kind == "routing":
        assert "route_decided" in events


@pytest.mark.parametrize("store", overhead.STORES)
def test_turn_stats_shape(store, tmp_path):
    stats = overhead.measure_turns("reasoning", store, tmp_path, sessions=1, turns=2)
    assert stats.turns == 2 and stats.store == store
    assert 0 < stats.p50_ms <= stats.p99_ms <= stats.max_ms
    assert 0 <= stats.model_share < 1
    assert stats.llm_calls_per_turn == 2
    assert stats.state_bytes > 0
    assert "reasoning" in overhead.turns_table([stats])


def test_generated_program_compiles_without_errors(tmp_path):
    folder = overhead.write_program(tmp_path / "big", overhead.big_program_yaml(12))
    program, diagnostics = load_program(folder)
    assert len(program.agents) == 12
    assert not [d for d in diagnostics if getattr(d, "severity", "") == "error"]
    out = overhead.compile_child(str(folder))
    assert out["agents"] == 12 and out["errors"] == 0
    assert out["load_s"] > 0 and out["tracemalloc_peak_mb"] >= 0
    assert out["routing_turn_warm_ms"] > 0


def test_idle_sessions_shape(tmp_path, monkeypatch):
    monkeypatch.setenv("FRONTDESK_EXAMPLE_DB_DIR", str(tmp_path / "data"))
    rows = [overhead.measure_idle(spec, 2, tmp_path) for spec in overhead.idle_programs()]
    for row in rows:
        assert row["sessions"] == 2
        assert row["state_json_bytes"] > 0 and row["events_per_session"] > 0
        assert row["sqlite_text_bytes_per_session"] > 0
        assert isinstance(row["memory_store_python_bytes_per_session"], int)
    assert "idle session" in overhead.idle_table(rows)


def test_main_writes_json(tmp_path, capsys):
    out = tmp_path / "overhead.json"
    report = overhead.main(["--only", "turns", "--kinds", "flow,routing", "--stores", "memory", "--sessions", "1",
                            "--turns", "2", "--long-turns", "12", "--profile", "--profile-sessions", "1",
                            "--json", str(out)])
    written = json.loads(out.read_text())
    assert written["turns"] == report["turns"]
    assert {r["kind"] for r in written["turns"]} == {"flow", "routing"}
    assert [p["kind"] for p in written["profiles"]] == ["flow", "routing"]
    assert len(written["profiles"][0]["top_own"]) <= 10
    assert written["long_sessions"][0]["turns"] == 12
    assert "per-turn overhead" in capsys.readouterr().out
