"""The differential harness's Frontdesk side (bench/differential/): the runner's JSON lines, the scorer and
the comparison, on one held-out dialogue and on small synthetic lines."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DIFFERENTIAL = ROOT / "bench" / "differential"
sys.path.insert(0, str(DIFFERENTIAL))

import compare  # noqa: E402
import frontdesk_runner  # noqa: E402
import score  # noqa: E402

TURN_FIELDS = {"record", "program", "dialogue", "turn", "user", "bot", "says", "speakers", "agent", "tools",
               "sets", "values", "ended", "error"}


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_runner_plays_a_heldout_dialogue_without_a_model(tmp_path):
    out = tmp_path / "bike.jsonl"
    status = frontdesk_runner.main([str(DIFFERENTIAL / "heldout" / "bike_repair"), "--model", "none",
                                    "--only", "happy_path_booking", "--out", str(out)])
    assert status == 0  # no turn raised
    lines = read(out)
    turns = [r for r in lines if r["record"] == "turn"]
    assert [r["turn"] for r in turns] == list(range(6))  # turn 0 (session start) and the 5 user turns
    assert turns[0]["user"] is None and turns[1]["user"].startswith("Hi, I'd like to book")
    for r in turns:
        assert TURN_FIELDS <= set(r), TURN_FIELDS - set(r)
        assert r["program"] == "bike_repair" and r["dialogue"] == "happy_path_booking"
        assert isinstance(r["bot"], list) and all(isinstance(t, str) for t in r["bot"])
        assert isinstance(r["tools"], list) and isinstance(r["values"], dict) and isinstance(r["ended"], bool)
        assert all({"name", "args"} <= set(t) for t in r["tools"])
    summary = [r for r in lines if r["record"] == "dialogue"]
    assert len(summary) == 1 and summary[0]["turns"] == 5 and summary[0]["error"] is None
    assert "oracle_gaps" not in summary[0]  # only the ideal model has an oracle


def synthetic_dialogues(tmp_path: Path) -> Path:
    folder = tmp_path / "dialogues" / "toy"
    folder.mkdir(parents=True)
    (folder / "dialogues.yml").write_text(
        "dialogues:\n"
        "  - name: d1\n"
        "    turns:\n"
        "      - user: hi\n"
        "        expect: {says: [\"Welcome\"], agent: main}\n"
        "      - user: book it\n"
        "        expect: {tool: {name: book, args: {day: Monday}}, sets: {main.day: Monday}, not_says: [sorry]}\n"
        "      - user: bye\n"
        "        expect: {ends: true}\n", encoding="utf-8")
    return tmp_path / "dialogues"


def turn(number: int, bot: list[str], **fields) -> dict:
    return {"record": "turn", "program": "toy", "dialogue": "d1", "turn": number, "user": "x", "bot": bot,
            "speakers": [{"text": t, "agent": fields.get("agent", "main")} for t in bot], "agent": "main",
            "tools": fields.get("tools", []), "sets": [], "values": fields.get("values", {}),
            "ended": fields.get("ended", False), "error": None}


def test_score_meets_and_fails_expectations(tmp_path):
    places = [synthetic_dialogues(tmp_path)]
    good = [turn(1, ["WELCOME to the shop"]),
            turn(2, ["Booked."], tools=[{"name": "book", "args": {"day": "monday", "time": "9"}}],
                 values={"main": {"day": "Monday"}}),
            turn(3, ["Bye"], ended=True)]
    report = score.score(good, places)
    assert report["overall"]["turns_with_expectations"] == 3
    assert report["overall"]["turns_met"] == 3 and report["overall"]["dialogues_fully_met"] == 1

    bad = [turn(1, ["Hello"], agent="other"),
           turn(2, ["Sorry, booked."], tools=[{"name": "book", "args": {"day": "Tuesday"}}],
                values={"main": {"day": None}})]  # turn 3 never played
    report = score.score(bad, places)
    assert report["overall"]["turns_met"] == 0 and report["overall"]["dialogues_fully_met"] == 0
    unmet = {f["turn"]: " ".join(f["unmet"]) for f in report["failures"]}
    assert "says" in unmet[1] and "agent main" in unmet[1]
    assert "tool book" in unmet[2] and "sets main.day" in unmet[2] and "not_says" in unmet[2]
    assert unmet[3] == "turn not played"


def test_score_command_exit_status(tmp_path):
    places = synthetic_dialogues(tmp_path)
    results = tmp_path / "toy.jsonl"
    results.write_text(json.dumps(turn(1, ["nothing useful"])) + "\n", encoding="utf-8")
    assert score.main([str(results), "--dialogues", str(places), "--quiet"]) == 1


def test_compare_tells_step_text_from_llm_text():
    a = [turn(1, ["Which day?"]), turn(2, ["Booked for Monday."], tools=[{"name": "book", "args": {"day": "Monday"}}])]
    b = [turn(1, ["which  day?"]), turn(2, ["Booked for Tuesday."], tools=[{"name": "book", "args": {"day": "tuesday"}}])]
    report = compare.compare(a, b, {"toy": {"main": "flow agent"}})
    assert report["overall"]["turns"] == 2 and report["overall"]["turns differing"] == 1
    assert report["overall"]["step text"] == 1 and report["overall"]["tools"] == 1
    report = compare.compare(a, b, {"toy": {"main": "llm agent"}})
    assert report["overall"]["llm text"] == 1 and "step text" not in report["overall"]
