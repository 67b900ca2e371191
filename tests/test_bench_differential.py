"""The differential harness's Frontdesk side (bench/differential/): the runner's JSON lines, the scorer and
the comparison, on one held-out dialogue and on small synthetic lines."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

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


# ---- the shared model server and the explanations (issue 25) ----------------------------------------


def test_every_explanation_rule_points_at_a_section_of_the_semantics_document():
    rules = compare.load_rules(DIFFERENTIAL / "explained.yml", ROOT / "docs" / "adl-semantics.md")
    assert len(rules) >= 10 and len({r["id"] for r in rules}) == len(rules)


@pytest.mark.parametrize(("rule", "named"), [
    ("doc: No such heading", "No such heading"),  # a rule pointing at nothing
    ("doc: Steps\n    first: {errror: boom}", "first.errror"),  # a rule with an unknown condition key
])
def test_a_rule_naming_no_section_or_a_misspelt_condition_is_refused(tmp_path, rule, named):
    bad = tmp_path / "rules.yml"
    bad.write_text(f"rules:\n  - id: x\n    {rule}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(named)):
        compare.load_rules(bad, ROOT / "docs" / "adl-semantics.md")


def _line(turn, bot, error=None, ended=False):
    return {"record": "turn", "program": "p", "dialogue": "d", "turn": turn, "user": "hi", "bot": bot,
            "speakers": [], "agent": None, "tools": [], "values": {}, "ended": ended, "error": error}


def test_explain_sorts_differing_turns_into_explained_following_and_unexplained():
    mica = [_line(1, [], error="UnboundLocalError: fallback_response"), _line(2, ["a"]), _line(3, ["same"])]
    frontdesk = [_line(1, ["Sorry."]), _line(2, ["b"]), _line(3, ["same"])]
    report = compare.compare(mica, frontdesk, {})
    rules = [{"id": "crash", "doc": "x", "first": {"error": "fallback_response"}}]
    compare.explain(report, mica, frontdesk, rules)
    verdicts = {t["turn"]: t["verdict"] for t in report["turns"]}
    assert verdicts == {1: "explained", 2: "follows"}  # turn 3 does not differ
    lone = [_line(1, ["a"])], [_line(1, ["b"])]
    report = compare.compare(*lone, {})
    compare.explain(report, *lone, rules)
    assert report["verdicts"] == {"unexplained": 1}


def test_the_shared_server_answers_micas_requests_from_the_turn_oracle():
    import shared_model
    from frontdesk.lang import load_program

    folder = DIFFERENTIAL / "heldout" / "bike_repair"
    program, _ = load_program(folder)
    agents = __import__("yaml").safe_load((folder / "agents.yml").read_text(encoding="utf-8"))
    dialogues = [{"name": "d", "turns": [{"user": "It's a road bike"}, {"user": "When are you open?"}]}]
    meanings = {"d": [{"turn": 1, "agents": ["book_repair"], "args": {"bike_type": "road"}},
                      {"turn": 2, "agents": ["shop_faq"]}]}
    model = shared_model.SharedModel(program, agents, dialogues, meanings)
    model.begin("d", 1)
    ask = {"messages": [{"role": "system", "content": "Your name is: book_repair. Please reply in JSON format. If the "
                                                      "user mentions the following data in the conversation: "
                                                      "customer_name, bike_type, extract them."},
                        {"role": "user", "content": "User: It's a road bike"}]}
    assert json.loads(model.mica("flow_args", ask)[0]) == {"data": {"bike_type": "road"}}
    model.begin("d", 2)
    # the message is for another member that does not call the flow: MICA's flow is told the user quits
    assert json.loads(model.mica("flow_args", ask)[0]) == {"status": "quit"}
    route = {"messages": [{"role": "system", "content": "### AGENTS:\n- book_repair: x\n- repair_status: y\n"
                                                        "[FAQ] ### SUGGEST ANSWER: We are open."}]}
    assert model.mica("route", route)[0] == "[FAQ]."
