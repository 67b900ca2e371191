"""MICA and Frontdesk under the same seeded faults (bench/differential/faults_side_by_side.py): how a fault
changes MICA's answers, the shared server's fault hook, and the classification of turns. No MICA, seconds."""

from __future__ import annotations

import json
import random
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DIFFERENTIAL = ROOT / "bench" / "differential"
sys.path[:0] = [str(DIFFERENTIAL), str(ROOT / "bench")]

import faults_side_by_side as fsbs  # noqa: E402
import shared_model  # noqa: E402
from ideal_model import HTTP_STATUS  # noqa: E402


def mica_answer(content=None, calls=()):
    return shared_model.completion(content, list(calls))


def content(answer):
    return answer["choices"][0]["message"]["content"]


ROUTE_BODY = {"messages": [{"role": "system", "content": "Your task is to select an agent to handle user requests.\n"
                                                         "### AGENTS:\n- order: I can place an order.\n"
                                                         "- book_recommendation: I can recommend books.\n"}]}
TOOLS_BODY = {"messages": [], "tools": [{"type": "function", "function": {
    "name": "find_bestsellers", "parameters": {"type": "object", "properties": {"genre": {"type": "str"}}}}}]}


# ---- which faults MICA's requests take --------------------------------------------------------------------


def test_mica_request_kinds_take_the_faults_of_their_frontdesk_counterpart_that_fit():
    assert fsbs.mica_faults("route") == ["wrong_route", "empty", "http_500", "http_429"]  # no bad_json: plain text
    assert fsbs.mica_faults("claims") == ["wrong_choice", "empty", "http_500"]
    assert "unknown_tool" in fsbs.mica_faults("llm_agent") and "no_tool" in fsbs.mica_faults("llm_agent")
    assert fsbs.mica_faults("fallback") == [] and fsbs.mica_faults("embeddings") == []
    every = {f for k in fsbs.COUNTERPART for f in fsbs.mica_faults(k)} | set(fsbs.frontdesk_faults("reason"))
    assert "timeout" not in every


# ---- faults in MICA's answers ------------------------------------------------------------------------------


def test_a_wrong_route_names_another_listed_member():
    answer = mica_answer("order")
    assert fsbs.apply_mica_fault("wrong_route", "route", answer, ROUTE_BODY, random.Random(0))
    assert content(answer) == "book_recommendation"
    answer = mica_answer("[FAQ].")  # the kb agent was right: a member is named instead
    assert fsbs.apply_mica_fault("wrong_route", "route", answer, ROUTE_BODY, random.Random(0))
    assert content(answer) in ("order", "book_recommendation")


def test_a_wrong_choice_flips_a_claim_and_a_flows_quit_decision():
    answer = mica_answer("True")
    assert fsbs.apply_mica_fault("wrong_choice", "claims", answer, {}, random.Random(0))
    assert content(answer) == "False"
    answer = mica_answer(json.dumps({"data": {"books": "Emberwild"}}))
    assert fsbs.apply_mica_fault("wrong_choice", "flow_args", answer, {}, random.Random(0))
    assert json.loads(content(answer)) == {"status": "quit"}
    answer = mica_answer(json.dumps({"status": "quit"}))
    assert fsbs.apply_mica_fault("wrong_choice", "flow_args", answer, {}, random.Random(0))
    assert json.loads(content(answer)) == {}


def test_value_faults_change_the_json_data_of_a_flow_or_llm_agent_answer():
    answer = mica_answer(json.dumps({"data": {"books": "Emberwild"}}))
    assert fsbs.apply_mica_fault("invented_arg", "flow_args", answer, {}, random.Random(0))
    books = json.loads(content(answer))["data"]["books"]
    assert books != "Emberwild" and books
    answer = mica_answer(json.dumps({"data": {"books": "Emberwild"}}))
    assert fsbs.apply_mica_fault("missing_arg", "flow_args", answer, {}, random.Random(0))
    assert json.loads(content(answer)) == {}
    answer = mica_answer(json.dumps({"bot": "Sure.", "status": "running", "data": {"genre": "fantasy"}}))
    assert fsbs.apply_mica_fault("wrong_type", "llm_agent", answer, {}, random.Random(0))
    parsed = json.loads(content(answer))
    assert isinstance(parsed["data"]["genre"], list) and parsed["bot"] == "Sure." and parsed["status"] == "running"
    # nothing to change: the fault does not fit (not injected)
    answer = mica_answer("{}")
    assert not fsbs.apply_mica_fault("invented_arg", "flow_args", answer, {}, random.Random(0))
    assert content(answer) == "{}"


def test_bad_json_no_tool_and_unknown_tool_on_an_llm_agent():
    answer = mica_answer(json.dumps({"bot": "Hello", "status": "running"}))
    assert fsbs.apply_mica_fault("bad_json", "llm_agent", answer, {}, random.Random(0))
    with pytest.raises(ValueError):
        json.loads(content(answer))
    answer = mica_answer(None, [("find_bestsellers", {"genre": "fantasy"})])
    assert fsbs.apply_mica_fault("bad_json", "llm_agent", answer, TOOLS_BODY, random.Random(0))
    with pytest.raises(ValueError):
        json.loads(answer["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"])
    answer = mica_answer(json.dumps({"status": "complete"}))  # finish, answered with text instead
    assert fsbs.apply_mica_fault("no_tool", "llm_agent", answer, {}, random.Random(0))
    assert content(answer) == "Let me look into that for you." and "tool_calls" not in answer["choices"][0]["message"]
    answer = mica_answer(json.dumps({"bot": "Hello", "status": "running"}))  # a reply: nothing was due
    assert not fsbs.apply_mica_fault("no_tool", "llm_agent", answer, {}, random.Random(0))
    assert not fsbs.apply_mica_fault("unknown_tool", "llm_agent", answer, {}, random.Random(0))
    answer = mica_answer(None, [("find_bestsellers", {"genre": "fantasy"})])
    assert fsbs.apply_mica_fault("unknown_tool", "llm_agent", answer, TOOLS_BODY, random.Random(0))
    assert answer["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "lookup_everything"


def test_http_errors_and_empty_answers():
    answer = mica_answer("True")
    assert fsbs.apply_mica_fault("http_500", "claims", answer, {}, random.Random(0))
    assert answer[HTTP_STATUS] == 500
    answer = mica_answer("order")
    assert fsbs.apply_mica_fault("empty", "route", answer, ROUTE_BODY, random.Random(0))
    assert content(answer) == ""


# ---- the injector ----------------------------------------------------------------------------------------


def test_the_injector_gives_both_systems_the_same_draws_and_records_what_it_injected():
    injector = fsbs.FaultInjector(rate=1.0, seed=3)
    a, b = random.Random(), random.Random()
    a.setstate(injector.stream("mica", "d", 2).getstate())
    b.setstate(injector.stream("frontdesk", "d", 2).getstate())
    assert [a.random() for _ in range(5)] == [b.random() for _ in range(5)]
    claims = {"messages": [{"role": "system", "content": "Your task is to identify the user"}]}
    answer = mica_answer("True")
    fault = injector("mica", "claims", claims, answer, ("d", 2))
    assert fault in ("wrong_choice", "empty", "http_500")
    assert injector.injected[("mica", "d", 2)] == [("claims", fault)]
    assert injector.requests["mica"] == 1
    quiet = fsbs.FaultInjector(rate=0.0, seed=3)
    answer = mica_answer("True")
    assert quiet("mica", "claims", claims, answer, ("d", 2)) is None and content(answer) == "True"
    assert not quiet.injected


def test_the_shared_servers_fault_hook_is_off_by_default_and_sends_an_injected_http_error():
    from frontdesk.lang import load_program

    folder = DIFFERENTIAL / "heldout" / "bike_repair"
    program, _ = load_program(folder)
    agents = __import__("yaml").safe_load((folder / "agents.yml").read_text(encoding="utf-8"))
    dialogues = [{"name": "d", "turns": [{"user": "It's a road bike"}]}]
    server = shared_model.Server(("127.0.0.1", 0), shared_model.Handler)
    server.model = shared_model.SharedModel(program, agents, dialogues, {"d": [{"turn": 1, "agents": ["book_repair"]}]})
    server.log_path, server.log_lock = "", threading.Lock()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    claims = {"messages": [{"role": "system", "content": "Your task is to identify the user's intent."},
                           {"role": "user", "content": "- Targets:\nNo\n- Previous Conversation: \nUser: x"}]}

    def post(path, body):
        request = urllib.request.Request(url + path, data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())

    try:
        post("/harness/turn", {"dialogue": "d", "turn": 1})
        status, reply = post("/v1/chat/completions", claims)
        assert status == 200 and content(reply) == "False"
        seen = []

        def hook(system, kind, body, answer, turn):
            seen.append((system, kind, turn))
            answer[HTTP_STATUS] = 500
            return "http_500"

        server.fault_hook = hook
        with pytest.raises(urllib.error.HTTPError) as error:
            post("/v1/chat/completions", claims)
        assert error.value.code == 500
        assert seen == [("mica", "claims", ("d", 1))]
    finally:
        server.shutdown()
        server.server_close()


# ---- classification --------------------------------------------------------------------------------------


def line(bot=("Done.",), tools=(), error=None, agent="order"):
    return {"record": "turn", "dialogue": "d", "turn": 1, "bot": list(bot), "tools": list(tools), "error": error,
            "speakers": [{"text": t, "agent": agent} for t in bot], "values": {}, "sets": [], "ended": False}


EXPECT = {"says": ["Done"], "tool": {"name": "place_order", "args": {"books": ["Emberwild"]}}}
SIDE = {"place_order"}
ORDER = {"name": "place_order", "args": {"books": ["Emberwild"], "date": "2026-11-22"}}


def outcome(l, system="frontdesk", expect=EXPECT, faults=()):
    return fsbs.classify(l, system, expect, SIDE, ["Emberwild"], [], list(faults))


def test_a_side_effecting_tool_the_turn_does_not_expect_or_with_a_value_never_given_is_harmful():
    assert outcome(line(tools=[ORDER]))[0] == "right"  # the flow's own date is not the user's to give
    invented = {"name": "place_order", "args": {"books": ["Alex Morgan"]}}
    kind, why = outcome(line(tools=[invented]))
    assert kind == "harmful" and "values never given" in why and "Alex Morgan" in why
    kind, why = outcome(line(tools=[ORDER]), expect={"says": ["Done"]})
    assert kind == "harmful" and "unexpectedly" in why
    # a call Frontdesk recorded but a rule answered (the tool never ran) changed nothing
    refused = {**ORDER, "result": {"answered_by": "rule", "message": "place_order was not run"}}
    assert outcome(line(tools=[refused]), expect={"says": ["Done"]})[0] == "right"
    # a tool that changes nothing may run unexpected: at worst wrong
    assert outcome(line(tools=[ORDER, {"name": "find_bestsellers", "args": {"genre": "x"}}]))[0] == "right"


def test_crashes_empty_messages_and_internal_texts_are_harmful():
    assert outcome(line(tools=[ORDER], error="UnboundLocalError: fallback_response"))[0] == "harmful"
    assert fsbs.classify(None, "mica", EXPECT, SIDE, [], [], [])[1].startswith("crash")
    assert outcome(line(bot=["function call [place_order] error: boom"], tools=[ORDER]))[0] == "harmful"
    assert outcome(line(bot=['{"bot": "Done", "status": "running",}'], tools=[ORDER]))[0] == "harmful"
    # MICA's texts are shown joined (its workbench): an empty one among others is not an empty message
    assert outcome(line(bot=["", "Done."], tools=[ORDER]), system="mica")[0] == "right"
    assert outcome(line(bot=[""], tools=[ORDER]), system="mica")[1] == "the user saw an empty message"
    assert outcome(line(bot=["", "Done."], tools=[ORDER]), system="frontdesk")[0] == "harmful"


def test_right_recovered_and_wrong_follow_the_dialogues_expectations():
    assert outcome(line(tools=[ORDER]), faults=["http_500"])[0] == "recovered"
    kind, why = outcome(line(bot=["Sorry?"], tools=[ORDER]), faults=["wrong_route"])
    assert kind == "wrong" and "says" in why
    assert outcome(line(bot=["Done."]))[0] == "wrong"  # the expected order was never placed: not harmful


def test_a_run_is_classified_turn_by_turn_with_the_faults_that_hit_each_turn():
    dialogues = [{"name": "d", "turns": [
        {"user": "Order Emberwild", "expect": EXPECT, "oracle": {"args": {"books": ["Emberwild"]}}},
        {"user": "Thanks", "expect": {"says": ["Bye"]}}]}]
    lines = [{**line(tools=[ORDER]), "turn": 1}, {**line(bot=["Bye!"]), "turn": 2}]
    rows = fsbs.classify_run(lines, dialogues, "mica", "examples:bookstore", {("mica", "d", 2): [("route", "empty")]})
    assert [(r["turn"], r["outcome"], r["faults"]) for r in rows] == [(1, "right", []), (2, "recovered", ["empty"])]
    rows = fsbs.classify_run(lines[:1], dialogues, "mica", "examples:bookstore", {})
    assert rows[1]["outcome"] == "harmful" and rows[1]["crash"]  # never played
    # the values the program holds at the session start are its own, not values never given
    start = {**line(bot=["Hi"]), "turn": 0, "values": {"triage": {"date": "2026-11-22"}}}
    late = {"name": "place_order", "args": {"books": ["Emberwild"], "date": "2026-11-22"}}
    rows = fsbs.classify_run([start, {**line(tools=[late]), "turn": 1}, {**line(bot=["Bye"], tools=[late]), "turn": 2}],
                             dialogues, "frontdesk", "examples:bookstore", {})
    assert rows[1]["outcome"] == "harmful" and rows[1]["why"] == "place_order ran unexpectedly"
    # a turn that says nothing at all is judged by its expectation, and counted apart as silent
    rows = fsbs.classify_run([lines[0], {**line(bot=[]), "turn": 2}], dialogues, "mica", "examples:bookstore", {})
    assert (rows[1]["outcome"], rows[1]["silent"]) == ("wrong", True) and not rows[0]["silent"]
