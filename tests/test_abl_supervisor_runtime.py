"""ABL supervisors at run time: routing by HANDOFF WHEN / ROUTING (LLM and local model), DEFAULT, the
pre-classification pipeline (3.15), threads that wait and resume (RETURN: true, __return_to_parent__),
CONTEXT history strategies, ON_RETURN, handoff.completed, DELEGATE RETURNS and ESCALATE."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from frontdesk.lang import load_program
from frontdesk.llm.scripted import ScriptedProvider
from frontdesk.runtime.handoff import RETURN_TO_PARENT, when_phrases
from frontdesk.testing import run_conversation

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "support_hub"


def _program(tmp_path: Path, files: dict[str, str]):
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    program, diags = load_program(tmp_path)
    errors = [d.format() for d in diags if d.is_error]
    assert program is not None and not errors, errors
    return program


def _events(run, kind: str) -> list[dict]:
    return [e for e in run.events if e["type"] == kind]


def _said(run) -> list[str]:
    return [m.text for turn in run.turns for m in turn.messages]


def _offline(program, lines, local_model):
    understanding, embedder = local_model
    llm = ScriptedProvider([])
    llm.can_classify = False  # like a conversation file with `embeddings: true`: no model decides
    return run_conversation(program, lines, llm, understanding=understanding, embedder=embedder)


# ---- routing: HANDOFF WHEN words and INTENT words --------------------------------------------------


def test_when_words_become_phrases_a_user_would_say():
    assert when_phrases("user asks about delivery, shipping, or order status") == [
        "delivery, shipping, or order status", "delivery", "shipping", "order status"]
    assert "how much money I have" in when_phrases("user asks about their balance, how much money they have")
    assert when_phrases('language == "es"') == []  # an expression is not words
    assert when_phrases("reservation.ready_for_payment") == []


RETAIL = {
    "retail.agent.abl": """
        SUPERVISOR: Retail_Supervisor
        GOAL: "Route customers to the right specialist"

        HANDOFF:
          - TO: Order_Tracking
            WHEN: user asks about delivery, shipping, or order status
          - TO: Returns_Desk
            WHEN: user asks about returns, refunds, or exchanges
          - TO: Product_Advisor
            WHEN: user asks about products, recommendations, or comparisons
        """,
    "tracking.agent.abl": """
        AGENT: Order_Tracking
        GOAL: "Tell customers where their orders are"
        FLOW:
          say:
            RESPOND: "Tracking desk here."
            THEN: COMPLETE
        """,
    "returns.agent.abl": """
        AGENT: Returns_Desk
        GOAL: "Handle returns, refunds and exchanges"
        FLOW:
          say:
            RESPOND: "Returns desk here."
            THEN: COMPLETE
        """,
    "advisor.agent.abl": """
        AGENT: Product_Advisor
        GOAL: "Recommend and compare products"
        FLOW:
          say:
            RESPOND: "Product advisor here."
            THEN: COMPLETE
        """,
}


@pytest.mark.local
def test_offline_supervisor_routes_where_is_my_package_to_order_tracking(tmp_path, local_model):
    run = _offline(_program(tmp_path, RETAIL), ["Where is my package?"], local_model)
    assert "Tracking desk here." in _said(run)
    decided = _events(run, "route_decided")[0]["data"]
    assert decided["agent"] == "Order_Tracking" and decided["by"].startswith("embedding")


def test_llm_routing_sees_the_handoff_when_words(tmp_path):
    llm = ScriptedProvider([{"purpose": "route", "expect": "route here when: user asks about delivery, shipping",
                             "call": "route", "with": {"agent": "Order_Tracking"}}])
    run = run_conversation(_program(tmp_path, RETAIL), ["Where is my package?"], llm)
    assert "Tracking desk here." in _said(run)
    llm.assert_finished()


def test_default_takes_a_message_no_rule_fits(tmp_path):
    files = dict(RETAIL)
    files["retail.agent.abl"] += "\nROUTING:\n  - DEFAULT -> Product_Advisor\n"
    llm = ScriptedProvider([{"purpose": "route", "call": "route", "with": {"agent": "none"}}])
    run = run_conversation(_program(tmp_path, files), ["what's the weather like?"], llm)
    assert "Product advisor here." in _said(run)
    assert any(e["data"]["by"] == "DEFAULT" for e in _events(run, "route_decided"))


# ---- 3.15 pre-classification pipeline ------------------------------------------------------------------

PIPELINE = """
    SUPERVISOR: Support_Router
    GOAL: "Route support requests"
    EXECUTION:
      pipeline:
        enabled: true
        mode: {mode}
        shortCircuit:
          enabled: true
          confidenceThreshold: 0.85
        toolFilter:
          enabled: true
          maxTools: 2
        keywordVeto:
          enabled: true
          keywords: [cancel, undo]

    HANDOFF:
      - TO: Order_Tracking
        WHEN: user asks about delivery, shipping, or order status
      - TO: Returns_Desk
        WHEN: user asks about returns, refunds, or exchanges
      - TO: Product_Advisor
        WHEN: user asks about products, recommendations, or comparisons
    """


def _pipeline_program(tmp_path, mode="sequential"):
    files = {k: v for k, v in RETAIL.items() if k != "retail.agent.abl"}
    files["router.agent.abl"] = PIPELINE.replace("{mode}", mode)
    return _program(tmp_path, files)


def _classify(intent, confidence):
    return {"purpose": "route", "call": "classify_intent", "with": {"intent": intent, "confidence": confidence}}


def test_sequential_short_circuit_skips_the_routing_call(tmp_path):
    llm = ScriptedProvider([_classify("Returns_Desk", 0.95)])
    run = run_conversation(_pipeline_program(tmp_path), ["I want my money back for these shoes"], llm)
    assert "Returns desk here." in _said(run)
    assert [r.plan for r in llm.calls] == ["Classify_Support_Router"]  # one small call, no routing call
    assert llm.calls[0].max_tokens == 300 and llm.calls[0].timeout == 10
    assert llm.calls[0].model is None  # no model named: the configured chat model classifies
    pre = _events(run, "pre_classification")[0]["data"]
    assert pre["short_circuit"] is True and pre["mode"] == "sequential" and pre["confidence"] == 0.95
    # without the pipeline the same message costs the routing call
    (tmp_path / "plain").mkdir()
    plain = run_conversation(_program(tmp_path / "plain", RETAIL), ["I want my money back for these shoes"],
                             ScriptedProvider([{"purpose": "route", "call": "route", "with": {"agent": "Returns_Desk"}}]))
    assert [e["data"]["purpose"] for e in _events(plain, "llm_call")] == ["route"]
    assert not _events(plain, "pre_classification")


def test_low_confidence_filters_the_tools_of_the_routing_call(tmp_path):
    llm = ScriptedProvider([_classify("Order_Tracking", 0.5),
                            {"purpose": "route", "call": "route", "with": {"agent": "Order_Tracking"}}])
    run = run_conversation(_pipeline_program(tmp_path), ["hmm, about my thing"], llm)
    assert "Tracking desk here." in _said(run)
    assert len(llm.calls) == 2
    pre = _events(run, "pre_classification")[0]["data"]
    assert pre["short_circuit"] is False and "below 0.85" in pre["reason"]
    assert len(pre["kept"]) == 2 and "Order_Tracking" in pre["kept"]  # maxTools: 2 of 3 members
    offered = llm.calls[1].tools[0].parameters["properties"]["agent"]["enum"]
    assert set(offered) == {*pre["kept"], "none"}


def test_keyword_veto_stops_a_confident_short_circuit(tmp_path):
    llm = ScriptedProvider([_classify("Order_Tracking", 0.97),
                            {"purpose": "route", "call": "route", "with": {"agent": "Order_Tracking"}}])
    run = run_conversation(_pipeline_program(tmp_path), ["cancel my delivery"], llm)
    pre = _events(run, "pre_classification")[0]["data"]
    assert pre["short_circuit"] is False and pre["reason"] == "keyword veto: cancel"
    assert len(llm.calls) == 2


def test_parallel_mode_pays_for_both_calls(tmp_path):
    llm = ScriptedProvider([_classify("Returns_Desk", 0.95),
                            {"purpose": "route", "call": "route", "with": {"agent": "Order_Tracking"}}])
    run = run_conversation(_pipeline_program(tmp_path, "parallel"), ["I want my money back"], llm)
    assert "Returns desk here." in _said(run)  # the classifier's answer wins
    assert len(llm.calls) == 2
    llm.assert_finished()


@pytest.mark.local
def test_offline_the_local_model_is_the_classifier(tmp_path, local_model):
    run = _offline(_pipeline_program(tmp_path), ["can you recommend a good laptop?"], local_model)
    assert "Product advisor here." in _said(run)
    pre = _events(run, "pre_classification")[0]["data"]
    assert pre["by"] == "embedding" and pre["short_circuit"] is True
    assert not _events(run, "llm_call")


# ---- threads: RETURN: true, __return_to_parent__, history, ON_RETURN -------------------------------------

HUB = {
    "hub.agent.abl": """
        SUPERVISOR: Bank_Hub
        GOAL: "Route bank customers"
        HANDOFF:
          - TO: Card_Agent
            WHEN: user wants to pay their credit card bill
            RETURN: true
            CONTEXT:
              history: full
          - TO: Balance_Agent
            WHEN: user asks about their account balance
            RETURN: true
            CONTEXT:
              history: none
              summary: "Customer {{customer}} wants their balance."
            ON_RETURN:
              map:
                seen_balance: balance
        MEMORY:
          session:
            - customer:
                INITIAL: "Ada"
        COMPLETE:
          - WHEN: handoff.completed == true
            RESPOND: "Anything else?"
        """,
    "card.agent.abl": """
        AGENT: Card_Agent
        GOAL: "Pay the customer's credit card bill"
        GATHER:
          amount:
            prompt: "How much would you like to pay?"
            type: number
        """,
    "balance.agent.abl": """
        AGENT: Balance_Agent
        GOAL: "Tell the customer their account balance"
        GATHER:
          balance:
            prompt: "unused"
            type: number
        """,
}


def test_credit_card_balance_digression_resumes_the_waiting_thread(tmp_path):
    script = [
        {"purpose": "route", "call": "route", "with": {"agent": "Card_Agent"}},
        {"purpose": "reason", "reply": "How much would you like to pay?"},
        # the user digresses: the card agent gives the conversation back and waits
        {"purpose": "reason", "expect": "what's my balance", "call": RETURN_TO_PARENT,
         "with": {"reason": "balance question"}},
        {"purpose": "route", "call": "route", "with": {"agent": "Balance_Agent"}},
        {"purpose": "reason", "calls": [{"name": "set_args", "arguments": {"balance": 1250}},
                                        {"name": "complete", "arguments": {"message": "told"}}],
         "reply": "Your balance is 1250 EUR."},
        # routed back: the card agent resumes with its transcript
        {"purpose": "reason", "expect": "I need to pay my credit card", "reply": "Paying 100 EUR now. Done."},
    ]
    llm = ScriptedProvider(script)
    run = run_conversation(_program(tmp_path, HUB),
                           ["I need to pay my credit card", "what's my balance? the app said 1250", "100 please"], llm)
    said = _said(run)
    assert said.index("Your balance is 1250 EUR.") < len(said) - 1
    assert "How much would you like to pay?" in said[said.index("Your balance is 1250 EUR."):]  # re-asked
    assert "Paying 100 EUR now. Done." in said
    # __return_to_parent__ was offered to the card agent (RETURN: true), and the thread came back
    card_requests = [llm.calls[i] for i in (1, 2, 5)]  # the card agent's reason calls
    assert all(RETURN_TO_PARENT in [t.name for t in r.tools] for r in card_requests)
    assert RETURN_TO_PARENT in [t.name for t in llm.calls[4].tools]  # Balance_Agent is RETURN: true too
    assert _events(run, "agent_suspended")[0]["agent"] == "Card_Agent"
    assert any(e["agent"] == "Card_Agent" for e in _events(run, "thread_return"))
    # the resumed request holds the card agent's own earlier transcript
    last = llm.calls[-1]
    texts = [m.content for m in last.messages if m.content]
    assert "How much would you like to pay?" in texts and "100 please" in texts
    # history none: the balance agent starts fresh, with the message that brought it and nothing else:
    # not the card talk, and not the summary either (that is summary_only)
    balance_request = llm.calls[4]
    seen = [m.content or "" for m in balance_request.messages]
    assert not any("Customer Ada wants their balance." in s for s in seen)
    assert not any("I need to pay my credit card" in s for s in seen)
    assert [m.content for m in balance_request.messages if m.role == "user"] == ["what's my balance? the app said 1250"]
    assert _events(run, "handoff_context")[-1]["data"]["history"] == "none"
    # ON_RETURN map and handoff.completed
    done = [e["data"] for e in _events(run, "handoff_completed")]
    assert done[0]["target"] == "Balance_Agent" and done[0]["mapped"] == {"seen_balance": 1250}
    llm.assert_finished()


HISTORY_HUB = {
    "desk.agent.abl": """
        SUPERVISOR: Desk
        GOAL: "Route customers"
        HANDOFF:
          - TO: Chat_Agent
            WHEN: user wants to chat
          - TO: Specialist
            WHEN: user needs a specialist
            CONTEXT:
              summary: "The customer was chatting before."
        %s
        """,
    "chat.agent.abl": """
        AGENT: Chat_Agent
        GOAL: "Chat with the customer"
        """,
    "specialist.agent.abl": """
        AGENT: Specialist
        GOAL: "Solve hard problems"
        """,
}


def _history_run(tmp_path, history_line: str):
    """Two turns with the chat agent, then a third message it gives back: the specialist takes over with
    the history strategy `history_line` (a CONTEXT line, or "" for none written)."""
    files = dict(HISTORY_HUB)
    files["desk.agent.abl"] = files["desk.agent.abl"].replace(
        '      summary: "The customer was chatting before."\n        %s',
        '      summary: "The customer was chatting before."\n' + (f"              {history_line}" if history_line else ""))
    assert "%s" not in files["desk.agent.abl"]
    script = [
        {"purpose": "route", "call": "route", "with": {"agent": "Chat_Agent"}},
        {"purpose": "reason", "reply": "Hi there, one."},
        {"purpose": "reason", "expect": "second message", "reply": "Answer two."},
        {"purpose": "reason", "expect": "third message", "call": "hand_back", "with": {}},
        {"purpose": "route", "call": "route", "with": {"agent": "Specialist"}},
        {"purpose": "reason", "expect": "third message", "reply": "Specialist here."},
    ]
    llm = ScriptedProvider(script)
    run = run_conversation(_program(tmp_path, files),
                           ["first message", "second message", "third message I need a specialist"], llm)
    assert "Specialist here." in _said(run)
    llm.assert_finished()
    request = llm.calls[-1]
    seen = [(m.role, m.content) for m in request.messages if m.role in ("user", "assistant")]
    summaries = [m.content for m in request.messages if m.role == "system" and "chatting before" in (m.content or "")]
    return run, seen, summaries


def test_history_full_gives_the_member_the_whole_conversation_before_it(tmp_path):
    run, seen, summaries = _history_run(tmp_path, "history: full")
    assert seen == [("user", "first message"), ("assistant", "Hi there, one."), ("user", "second message"),
                    ("assistant", "Answer two."), ("user", "third message I need a specialist")]
    assert len(summaries) == 1
    assert _events(run, "handoff_context")[-1]["data"]["messages"] == 6  # summary + 5


def test_history_last_n_gives_exactly_the_last_n_messages(tmp_path):
    run, seen, summaries = _history_run(tmp_path, "history: {last_n: 2}")
    assert seen == [("user", "second message"), ("assistant", "Answer two."),
                    ("user", "third message I need a specialist")]
    assert len(summaries) == 1
    assert _events(run, "handoff_context")[-1]["data"]["history"] == "last_n:2"


def test_history_none_starts_fresh_and_summary_only_passes_just_the_summary(tmp_path):
    for sub in ("none", "only", "unset"):
        (tmp_path / sub).mkdir()
    _, seen, summaries = _history_run(tmp_path / "none", "history: none")
    assert seen == [("user", "third message I need a specialist")] and summaries == []
    _, seen, summaries = _history_run(tmp_path / "only", "history: summary_only")
    assert seen == [("user", "third message I need a specialist")] and len(summaries) == 1
    # a summary with no history written is passed (compiled as summary_only)
    run, seen, summaries = _history_run(tmp_path / "unset", "")
    assert seen == [("user", "third message I need a specialist")] and len(summaries) == 1
    assert _events(run, "handoff_context")[-1]["data"]["history"] == "summary_only"


def test_return_false_drops_the_member_that_gives_the_conversation_back(tmp_path):
    files = dict(HUB)
    files["hub.agent.abl"] = files["hub.agent.abl"].replace("RETURN: true", "RETURN: false", 1)
    assert "RETURN: false" in files["hub.agent.abl"]
    script = [
        {"purpose": "route", "call": "route", "with": {"agent": "Card_Agent"}},
        {"purpose": "reason", "reply": "How much would you like to pay?"},
        {"purpose": "reason", "call": "hand_back", "with": {}},
        {"purpose": "route", "call": "route", "with": {"agent": "Balance_Agent"}},
        {"purpose": "reason", "calls": [{"name": "set_args", "arguments": {"balance": 1250}},
                                        {"name": "complete", "arguments": {"message": "told"}}],
         "reply": "Your balance is 1250 EUR."},
    ]
    llm = ScriptedProvider(script)
    run = run_conversation(_program(tmp_path, files), ["I need to pay my credit card", "what's my balance?"], llm)
    req = llm.calls[1]
    assert RETURN_TO_PARENT not in [t.name for t in req.tools]  # only RETURN: true members get it
    assert any(e["agent"] == "Card_Agent" and "RETURN: false" in e["data"]["reason"]
               for e in _events(run, "agent_dropped"))
    assert [e["data"]["reason"] for e in _events(run, "thread_return")] == ["completed"]  # the balance agent
    assert _said(run)[-1] == "Anything else?"  # COMPLETE: handoff.completed == true
    state = run.engine.load_state(run.session_id)
    assert not state.threads and state.system["handoff.completed"] is True


# ---- ESCALATE: triggers, priority, context_for_human, session state --------------------------------------


@pytest.mark.local
def test_escalation_trigger_records_the_context_for_human(local_model, monkeypatch, tmp_path):
    monkeypatch.setenv("FRONTDESK_EXAMPLE_DB_DIR", str(tmp_path))
    program, diags = load_program(EXAMPLE)
    assert program is not None and not [d for d in diags if d.is_error]
    run = _offline(program, ["what's my balance?", "I want to pay off my credit card", "5000", "yes",
                             "pay my credit card bill", "5000", "yes"], local_model)  # asked afresh
    state = run.engine.load_state(run.session_id)
    assert state.status == "escalated"
    record = state.system["escalation"]
    assert record["priority"] == "high" and record["reason"] == "The bank's systems keep failing"
    package = record["context_for_human"]
    assert package["balance_seen"] == 1250.0
    assert package["failure_reasons"]["tool_failures"] == 2
    assert "User: what's my balance?" in package["conversation_transcript"]
    event = _events(run, "escalated")[0]["data"]
    assert event["context_for_human"] == package


def test_trigger_on_a_reasoning_agent_escalates_with_its_package(tmp_path):
    files = {"desk.agent.abl": """
        AGENT: Desk
        GOAL: "Help with orders"
        GATHER:
          order_id:
            prompt: "Which order?"
            type: string
        ESCALATE:
          triggers:
            - WHEN: order_id == "X-1"
              REASON: "VIP order"
              PRIORITY: critical
          context_for_human:
            - conversation_transcript
            - gathered: {order_id}
          on_human_complete:
            - IF human.resolved == true:
                RESPOND: "Thanks for your patience! {{human.resolution_summary}}"
                COMPLETE: true
            - IF human.handed_back == true:
                CONTINUE: with human.instructions
        """}
    llm = ScriptedProvider([
        {"purpose": "reason", "reply": "Hello, how can I help?"},
        {"purpose": "reason", "call": "set_args", "with": {"order_id": "X-1"}},
        {"purpose": "reason", "reply": "I see: order X-1."},
        {"purpose": "reason", "expect": "offer a voucher", "reply": "I can offer you a voucher."},
    ])
    run = run_conversation(_program(tmp_path, files), ["order X-1 is late"], llm)
    state = run.engine.load_state(run.session_id)
    assert state.status == "escalated"
    record = state.system["escalation"]
    assert record["priority"] == "critical" and record["reason"] == "VIP order"
    assert record["context_for_human"]["gathered"] == {"order_id": "X-1"}
    assert record["context_for_human"]["conversation_transcript"][:2] == [
        "Desk: Hello, how can I help?", "User: order X-1 is late"]
    assert _events(run, "escalated")[0]["data"]["priority"] == "critical"
    # the person hands the session back: on_human_complete's first rule that holds runs
    back = run.engine.human_completed(run.session_id, {"handed_back": True, "instructions": "offer a voucher"})
    state = run.engine.load_state(run.session_id)
    assert state.status == "waiting" and state.system["escalate.completed"] is True
    assert [e.data.get("action") for e in back.events if e.type == "human_completed"] == ["continue"]
    # the trigger still holds (order X-1) but does not escalate again; the agent goes on with the instructions
    again = run.engine.send(run.session_id, "so what now?")
    assert [m.text for m in again.messages] == ["I can offer you a voucher."]
    assert run.engine.load_state(run.session_id).status == "waiting"
    resolved = run.engine.human_completed(run.session_id, {"resolved": True, "resolution_summary": "Refund sent."})
    assert [m.text for m in resolved.messages] == ["Thanks for your patience! Refund sent."]


# ---- a reasoning agent's HANDOFF (RETURN: true, CONTEXT, ON_RETURN) and DELEGATE (RETURNS) --------------

BOOKING = {
    "hotel.agent.abl": """
        # entry: Hotel_Desk
        AGENT: Hotel_Desk
        GOAL: "Book hotel rooms"
        GATHER:
          total:
            prompt: "unused"
            type: number
          receipt:
            prompt: "unused"
            type: string
        DELEGATE:
          - AGENT: Loyalty_Lookup
            PURPOSE: "Check the customer's loyalty points"
            RETURNS: {points: number}
        HANDOFF:
          - TO: Payment_Desk
            WHEN: the booking is ready for payment
            RETURN: true
            CONTEXT:
              pass: [total]
              summary: "Booking total {{total}} EUR"
              history: summary_only
            ON_RETURN:
              map:
                receipt: receipt_id
        """,
    "payment.agent.abl": """
        AGENT: Payment_Desk
        GOAL: "Take payments"
        GATHER:
          total:
            prompt: "unused"
            type: number
          receipt_id:
            prompt: "unused"
            type: string
        """,
    "loyalty.agent.abl": """
        AGENT: Loyalty_Lookup
        GOAL: "Look up loyalty points"
        GATHER:
          points:
            prompt: "unused"
            type: number
          tier:
            prompt: "unused"
            type: string
        """,
}


def test_reasoning_handoff_with_return_maps_the_result_back_and_delegate_returns_declared_fields(tmp_path):
    script = [
        {"purpose": "reason", "reply": "Hello! Which room would you like?"},
        {"purpose": "reason", "call": "delegate_to_Loyalty_Lookup", "with": {}},
        {"purpose": "reason", "calls": [{"name": "set_args", "arguments": {"points": 120, "tier": "gold"}},
                                        {"name": "complete", "arguments": {"message": "found"}}]},
        {"purpose": "reason", "expect": '"points": 120',
         "calls": [{"name": "set_args", "arguments": {"total": 300}},
                   {"name": "transfer_to_Payment_Desk", "arguments": {}}]},
        {"purpose": "reason", "calls": [{"name": "set_args", "arguments": {"receipt_id": "R-9"}},
                                        {"name": "complete", "arguments": {"message": "paid"}}]},
        {"purpose": "reason", "expect": "R-9", "reply": "Booked: receipt R-9."},
    ]
    llm = ScriptedProvider(script)
    run = run_conversation(_program(tmp_path, BOOKING), ["Book the sea-view room, 300 EUR, receipt R-9, and check my points: 120, gold tier"], llm)
    assert _said(run)[-1] == "Booked: receipt R-9."
    # (the values the scripted model sets are in the user's words: a value nobody gave is refused)
    # DELEGATE RETURNS {points}: the loyalty agent's tier is not fed back
    delegated = [m.content for m in llm.calls[3].messages if m.role == "tool"]
    assert any('"points": 120' in c for c in delegated) and not any("gold" in c for c in delegated)
    # summary_only: the payment agent sees the summary and the message, not the greeting before it
    payment = [m.content or "" for m in llm.calls[4].messages if m.role != "system" or "Handed over" in m.content]
    assert any("Booking total 300 EUR" in c for c in payment)
    assert not any("Which room would you like" in c for c in payment)
    done = _events(run, "handoff_completed")[0]
    assert done["agent"] == "Hotel_Desk" and done["data"]["mapped"] == {"receipt": "R-9"}
    state = run.engine.load_state(run.session_id)
    assert state.system["handoff.completed"] is True
    llm.assert_finished()


def test_sentiment_is_read_without_a_model_and_can_trigger_an_escalation(tmp_path):
    from frontdesk.runtime.escalation import sentiment_of, trajectory_of

    assert sentiment_of("This is RIDICULOUS, I've asked three times!!") == "frustrated"
    assert sentiment_of("thanks, that was helpful") == "positive"
    assert sentiment_of("that was not helpful") == "negative"
    assert sentiment_of("my card number is 1234") == "neutral"
    assert trajectory_of([1, 0, -2]) == "declining" and trajectory_of([-1, 1, -1]) == "volatile"
    files = {"desk.agent.abl": """
        AGENT: Desk
        GOAL: "Help with orders"
        ESCALATE:
          - WHEN: user.sentiment == "frustrated" AND sentiment_trajectory == "declining"
            PRIORITY: high
            REASON: "The customer is frustrated"
            RESPOND: "I understand your frustration. Let me connect you with a specialist."
        """}
    llm = ScriptedProvider([{"purpose": "reason", "reply": "Hello!"},
                            {"purpose": "reason", "reply": "Your order is on its way."},
                            {"purpose": "reason", "reply": "Still checking."}])
    run = run_conversation(_program(tmp_path, files), ["hi, where is my order?", "this is useless, still nothing!!"],
                           llm)
    assert _said(run)[-1] == "I understand your frustration. Let me connect you with a specialist."
    state = run.engine.load_state(run.session_id)
    assert state.status == "escalated" and state.system["user.sentiment"] == "frustrated"
    assert state.system["escalation"]["priority"] == "high"


def test_support_hub_example_digression_with_an_llm_and_no_local_model(monkeypatch, tmp_path):
    """The example's §5.2 scenario on the LLM path: one routing call, one understand call that reads the
    balance question as a digression, then the waiting card payment resumes. No other call."""
    monkeypatch.setenv("FRONTDESK_EXAMPLE_DB_DIR", str(tmp_path))
    program, diags = load_program(EXAMPLE)
    assert program is not None and not [d for d in diags if d.is_error]
    llm = ScriptedProvider([
        {"purpose": "route", "expect": "route here when: user wants to pay their credit card bill",
         "call": "route", "with": {"agent": "Card_Services"}},
        {"purpose": "understand", "expect": "switch:Account_Info", "call": "understand",
         "with": {"choice": "switch:Account_Info"}},
    ])
    run = run_conversation(program, ["I'd like to pay my credit card bill", "wait, what's my balance first?",
                                      "100", "yes"], llm)
    assert _said(run) == [
        "How much would you like to pay on your credit card?",
        "Your checking account balance is 1250 EUR.",
        "How much would you like to pay on your credit card?",
        "Paying 100 EUR on your credit card from your checking account. Shall I go ahead?",
        "Done: payment P-10000 of 100 EUR. Your card balance is now 330 EUR.",
        "Is there anything else I can help with?",
    ]
    assert any(e["agent"] == "Card_Services" for e in _events(run, "thread_return"))
    llm.assert_finished()


def test_a_when_expression_routes_before_any_model(tmp_path):
    from frontdesk.runtime.engine import Engine
    from frontdesk.store.memory import MemorySessionStore

    files = {
        "router.agent.abl": """
            SUPERVISOR: Language_Router
            GOAL: "Route users by language and channel"
            ROUTING:
              - TO: Voice_Support
                WHEN: channel == "voice"
              - TO: Chat_Support
                WHEN: user asks anything in a chat
            """,
        "voice.agent.abl": """
            AGENT: Voice_Support
            GOAL: "Help callers"
            FLOW:
              say:
                RESPOND: "Voice desk."
                THEN: COMPLETE
            """,
        "chat.agent.abl": """
            AGENT: Chat_Support
            GOAL: "Help in the chat"
            FLOW:
              say:
                RESPOND: "Chat desk."
                THEN: COMPLETE
            """,
    }
    program = _program(tmp_path, files)
    assert [m.condition is not None for m in program.agents["Language_Router"].members] == [True, False]
    engine = Engine(program, ScriptedProvider([]), MemorySessionStore())
    session = engine.start(channel="voice").session_id
    assert engine.send(session, "hello, I need help").messages[0].text == "Voice desk."
    decided = [e for e in engine.store.events(session) if e["type"] == "route_decided"]
    assert decided[0]["data"]["by"] == "WHEN condition"
