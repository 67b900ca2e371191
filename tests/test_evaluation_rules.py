"""`frontdesk eval`'s evaluators (each rule passing and failing), the judge's answers and the simulated user's."""

from __future__ import annotations

import pytest

from frontdesk.evaluation.evaluators import Conversation, evaluate
from frontdesk.evaluation.roles import (
    JudgeVerdict,
    SimulatedUserError,
    judge,
    next_user_turn,
    read_user_answer,
    read_verdict,
    user_messages,
)
from frontdesk.evaluation.scenarios import Evaluator
from frontdesk.llm import LLMError, LLMRequest, LLMResponse, ScriptedProvider, ToolCall


def ev(kind, target, **options):
    return Evaluator(kind, target, f"{kind} {target}", options)


def conversation(**overrides) -> Conversation:
    transcript = [
        {"role": "bot", "turn": 0, "agent": "triage", "text": "Hi, how can I help?"},
        {"role": "user", "turn": 1, "text": "Order Emberwild please"},
        {"role": "tool", "turn": 1, "agent": "order", "tool": "place_order", "args": {"ordered_book": ["Emberwild"]},
         "status": "success", "text": "Order 7 placed"},
        {"role": "bot", "turn": 1, "agent": "order", "text": "Done! Order 7 placed on 2026-11-22."},
    ]
    events = [
        {"type": "agent_started", "agent": "main", "turn": 0, "data": {}},
        {"type": "agent_started", "agent": "triage", "turn": 0, "data": {}},
        {"type": "agent_started", "agent": "order", "turn": 1, "data": {}},
        {"type": "tool_call", "agent": "order", "turn": 1, "data": {"tool": "place_order",
                                                                   "args": {"ordered_book": ["Emberwild"], "qty": 2}}},
        {"type": "tool_result", "agent": "order", "turn": 1, "data": {"tool": "place_order", "status": "success"}},
    ]
    values = {
        "transcript": transcript, "events": events, "turns": 1,
        "variables": {"triage": {"book": ["Emberwild"], "date": "2026-11-22", "count": 2, "empty": None}},
        "slot_of": lambda key: ("triage", "book") if key == "order.books" else tuple(key.split(".", 1)),
        "agents": ("main", "triage", "order", "store_policy_kb"), "tools": ("place_order", "get_date"),
    }
    values.update(overrides)
    return Conversation(**values)


def verdict_of(evaluator, conv=None, judge_fn=None):
    return evaluate(evaluator, conv or conversation(), judge_fn)


@pytest.mark.parametrize("evaluator, expected", [
    (ev("tool_called", "place_order"), "pass"),
    (ev("tool_called", "place_order", with_={}), "pass"),
    (ev("tool_called", "place_order", **{"with": {"ordered_book": "emberwild "}}), "pass"),  # a text matches [text]
    (ev("tool_called", "place_order", **{"with": {"ordered_book": ["Emberwild"], "qty": 2.0}}), "pass"),
    (ev("tool_called", "place_order", status="success"), "pass"),
    (ev("tool_called", "place_order", status="error"), "fail"),
    (ev("tool_called", "place_order", **{"with": {"ordered_book": "Dune"}}), "fail"),
    (ev("tool_called", "get_date"), "fail"),
    (ev("tool_not_called", "get_date"), "pass"),
    (ev("tool_not_called", "place_order"), "fail"),
    (ev("tool_not_called", "place_order", **{"with": {"ordered_book": "Dune"}}), "pass"),
    (ev("agent_reached", "order"), "pass"),
    (ev("agent_reached", "store_policy_kb"), "fail"),
    (ev("agent_not_reached", "store_policy_kb"), "pass"),
    (ev("agent_not_reached", "order"), "fail"),
    (ev("value", "triage.book", test="equals", expected=["emberwild"]), "pass"),
    (ev("value", "triage.book", test="equals", expected=["Dune"]), "fail"),
    (ev("value", "order.books", test="contains", expected="Emberwild"), "pass"),  # through the binding
    (ev("value", "triage.book", test="contains", expected="Dune"), "fail"),
    (ev("value", "triage.date", test="matches", expected=r"^2026-\d\d-\d\d$"), "pass"),
    (ev("value", "triage.date", test="matches", expected=r"^2025"), "fail"),
    (ev("value", "triage.count", test="equals", expected="2"), "pass"),
    (ev("value", "triage.date", test="set", expected=True), "pass"),
    (ev("value", "triage.empty", test="set", expected=True), "fail"),
    (ev("value", "triage.nothing", test="set", expected=False), "pass"),
    (ev("value", "triage.nothing", test="equals", expected=None), "fail"),
    (ev("bot_said", "ORDER 7", regex=False), "pass"),
    (ev("bot_said", "refund", regex=False), "fail"),
    (ev("bot_said", r"Order \d+ placed", regex=True), "pass"),
    (ev("bot_said", r"Order [a-z]+ placed", regex=True), "fail"),
    (ev("bot_never_said", "refund", regex=False), "pass"),
    (ev("bot_never_said", "how can i help", regex=False), "fail"),
    (ev("bot_never_said", r"\brefund(ed)?\b", regex=True), "pass"),
    (ev("bot_never_said", r"Done!", regex=True), "fail"),
    (ev("turns_at_most", 1), "pass"),
    (ev("turns_at_most", 0), "fail"),
    (ev("ended", False), "pass"),
    (ev("ended", True), "fail"),
    (ev("escalated", False), "pass"),
    (ev("escalated", True), "fail"),
    (ev("completed", True), "fail"),
    (ev("completed", False), "pass"),
])
def test_each_rule_evaluator_passes_and_fails(evaluator, expected):
    result = verdict_of(evaluator)
    assert result.verdict == expected, result.reason
    assert result.reason and result.evaluator == evaluator.label and result.kind == evaluator.kind


def test_reasons_say_what_happened():
    assert verdict_of(ev("tool_called", "get_date")).reason == "get_date was never called; tools called: place_order"
    assert "the program has no tool named 'nope'" in verdict_of(ev("tool_called", "nope")).reason
    failed = verdict_of(ev("tool_called", "place_order", **{"with": {"ordered_book": "Dune"}})).reason
    assert failed.startswith("place_order was called 1 time, never with ordered_book='Dune'")
    assert verdict_of(ev("value", "order.books", test="set", expected=False)).reason == \
        'at the end order.books (triage.book) is ["Emberwild"]'
    assert "turn 1 matches 'done!'" in verdict_of(ev("bot_never_said", "done!", regex=False)).reason
    assert verdict_of(ev("agent_reached", "ghost")).reason.startswith(
        "ghost never started (the program has no agent named 'ghost')")


def test_completed_ended_and_escalated_read_how_the_run_ended():
    done = conversation(finished=True, goals_met=True, finish_reason="I have my book")
    assert verdict_of(ev("completed", True), done).verdict == "pass"
    assert "goals met: I have my book" in verdict_of(ev("completed", True), done).reason
    gave_up = conversation(finished=True, goals_met=False)
    assert verdict_of(ev("completed", True), gave_up).verdict == "fail"
    ended = conversation(ended=True)
    assert verdict_of(ev("ended", True), ended).verdict == "pass"
    assert "the program ended the conversation" in verdict_of(ev("completed", True), ended).reason
    assert verdict_of(ev("escalated", True), conversation(escalated=True)).verdict == "pass"


def test_a_name_several_arguments_have_and_a_slow_pattern_are_errors_not_crashes():
    def ambiguous(key):
        raise ValueError(f"{key!r} names several arguments (a.x, b.x); write agent.{key}")

    result = verdict_of(ev("value", "x", test="set", expected=True), conversation(slot_of=ambiguous))
    assert (result.verdict, result.reason) == ("error", "'x' names several arguments (a.x, b.x); write agent.x")
    slow = conversation(transcript=[{"role": "bot", "turn": 0, "text": "a" * 40 + "!"}])
    result = verdict_of(ev("bot_said", r"(a+)+$", regex=True), slow)
    assert result.verdict in ("error", "fail")  # a catastrophic pattern stops within the time limit


def test_the_judge_evaluator_uses_the_judge_and_its_absence_is_an_error():
    asked = []

    def fake_judge(criterion):
        asked.append(criterion)
        return JudgeVerdict("fail", "the bot promised a refund")

    result = verdict_of(ev("judge", "policy followed"), judge_fn=fake_judge)
    assert (result.verdict, result.reason, asked) == ("fail", "the bot promised a refund", ["policy followed"])
    assert verdict_of(ev("judge", "anything")).verdict == "error"


# ---- the judge's answers -----------------------------------------------------------------------


def answer(content=None, *calls):
    return LLMResponse(content=content, tool_calls=[ToolCall(id=f"c{i}", name=n, arguments=a)
                                                   for i, (n, a) in enumerate(calls)])


@pytest.mark.parametrize("response, expected", [
    (answer(None, ("verdict", {"verdict": "pass", "reason": "it was polite"})), ("pass", "it was polite")),
    (answer(None, ("verdict", {"verdict": "FAIL", "reason": " promised $500 "})), ("fail", "promised $500")),
    (answer('{"verdict": "pass", "reason": "fine"}'), ("pass", "fine")),
    (answer('Here you go:\n```json\n{"verdict": "fail", "reason": "rude"}\n```'), ("fail", "rude")),
    (answer('My verdict: {"verdict": "yes", "reason": "ok"} done'), ("pass", "ok")),
    (answer('{"passed": false, "reason": "no"}'), ("fail", "no")),
    (answer(None, ("verdict", {"verdict": "pass"})), ("pass", "(the judge gave no reason)")),
])
def test_the_judges_answer_is_read(response, expected):
    result = read_verdict(response)
    assert (result.verdict, result.reason) == expected


@pytest.mark.parametrize("response, says", [
    (answer("I think the bot did fine."), "the judge's answer has no verdict: I think the bot did fine."),
    (answer('{"verdict": "maybe", "reason": "hmm"}'), 'the judge\'s verdict "maybe" is neither pass nor fail'),
    (answer(None, ("verdict", {"verdict": 3})), "the judge's verdict 3 is neither pass nor fail"),
    (answer(None, ("think", {"about": "it"})), "the judge's answer has no verdict: a call of think"),
    (answer(""), "the judge's answer has no verdict: an empty answer"),
    (answer('["pass"]'), "the judge's answer has no verdict"),
])
def test_a_malformed_judge_answer_is_an_error_verdict(response, says):
    result = read_verdict(response)
    assert result.verdict == "error"
    assert result.reason.startswith(says), result.reason


class Failing:
    name = "failing"

    def complete(self, request):
        raise LLMError("cannot connect to LLM server at http://localhost:1/v1")


def test_the_judge_is_asked_with_a_forced_verdict_tool_and_failures_are_errors():
    llm = ScriptedProvider([{"call": "verdict", "with": {"verdict": "pass", "reason": "ok"}}])
    result = judge(llm, "policy followed: never promise refunds over $100", "Customer: hi\nBot (x): hello",
                   "a customer", ["get help"])
    assert (result.verdict, result.reason) == ("pass", "ok")
    request = llm.calls[0]
    assert request.tool_choice == "verdict" and [t.name for t in request.tools] == ["verdict"]
    assert "never promise refunds over $100" in request.messages[0].content
    assert "Bot (x): hello" in request.messages[1].content
    assert judge(Failing(), "c", "t", "p", []).verdict == "error"
    assert judge(ScriptedProvider([]), "c", "t", "p", []).reason.startswith("the judge's script: ")


# ---- the simulated user ------------------------------------------------------------------------


@pytest.mark.parametrize("response, expected", [
    (answer("I'd like a mystery novel."), ("I'd like a mystery novel.", False)),
    (answer('Customer: "Something short, please."'), ("Something short, please.", False)),
    (answer(None, ("say", {"text": "Hello there"})), ("Hello there", False)),
    (answer("ignored", ("finish", {"reason": "got it", "goals_met": True})), (None, True)),
    (answer("Thanks, that's all.\nFINISHED: I have my answer"), (None, True)),
])
def test_the_simulated_users_answer_is_read(response, expected):
    turn, problem = read_user_answer(response)
    assert turn is not None, problem
    assert (turn.text, turn.finished) == expected


def test_finishing_keeps_the_reason_and_whether_the_goals_were_met():
    turn, _ = read_user_answer(answer(None, ("finish", {"reason": "the bot refused", "goals_met": "false"})))
    assert (turn.finished, turn.reason, turn.goals_met) == (True, "the bot refused", False)
    turn, _ = read_user_answer(answer("FINISHED: all done"))
    assert (turn.reason, turn.goals_met) == ("all done", True)


def test_the_simulated_user_sees_the_conversation_with_the_roles_turned_round():
    transcript = [
        {"role": "bot", "text": "Hi!"}, {"role": "bot", "text": "How can I help?"},
        {"role": "user", "text": "A book please"},
        {"role": "tool", "tool": "find_bestsellers", "text": "secret"},
        {"role": "bot", "text": "Which genre?"},
        {"role": "user", "text": "Fantasy"},
    ]
    messages = user_messages("A reader of fantasy.", ["buy a book"], transcript)
    assert [(m.role, m.content) for m in messages[1:]] == [
        ("user", "Hi!\nHow can I help?"), ("assistant", "A book please"), ("user", "Which genre?"),
        ("assistant", "Fantasy"), ("user", "(the assistant said nothing)")]
    assert "A reader of fantasy." in messages[0].content and "- buy a book" in messages[0].content
    assert "secret" not in str([m.content for m in messages])  # tool calls are the bot's business
    first = user_messages("p", ["g"], [])
    assert [m.role for m in first] == ["system", "user"] and "first message" in first[1].content


def test_the_simulated_user_is_asked_again_once_then_gives_up():
    llm = ScriptedProvider([{"reply": "  "}, {"reply": "Hello"}])
    assert next_user_turn(llm, "p", ["g"], []).text == "Hello"
    request: LLMRequest = llm.calls[0]
    assert {t.name for t in request.tools} == {"say", "finish"} and request.tool_choice == "auto"
    with pytest.raises(SimulatedUserError, match="no usable answer twice: it called lookup without a message"):
        next_user_turn(ScriptedProvider([{"reply": ""}, {"call": "lookup", "with": {}}]), "p", ["g"], [])
    with pytest.raises(SimulatedUserError, match="the simulated user's script: the script has no answer left"):
        next_user_turn(ScriptedProvider([]), "p", ["g"], [])
    with pytest.raises(SimulatedUserError, match="the simulated user's model failed: cannot connect"):
        next_user_turn(Failing(), "p", ["g"], [])
