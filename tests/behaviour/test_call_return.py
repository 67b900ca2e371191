"""Call and return: a flow calls another agent and a subflow; what they returned (status and message)
is what the caller's next condition sees."""

from __future__ import annotations


def test_callee_status_and_message_reach_the_caller(make_program, converse):
    talk = converse(make_program("call_return"), None)
    first = talk.start()
    assert [m.text for m in first.messages] == [
        "Verified A1 (status success).",
        "Rejected: unknown code.",
        "Discount 10%.",
        "No second discount: already used.",
        "Done.",
    ]
    finished = [(e.agent, e.data["status"]) for e in first.events if e.type == "agent_finished"]
    assert finished == [("verify", "success"), ("verify", "error"), ("main", "success")]
    started = [(e.agent, e.data["by"]) for e in first.events if e.type == "agent_started"]
    assert started == [("main", "session"), ("verify", "main"), ("verify", "main")]
    # the conditions read the callees' results: no model was needed
    assert [e for e in first.events if e.type == "llm_call"] == []
    conditions = [(e.data["condition"], e.data["result"]) for e in first.events if e.type == "condition_evaluated"]
    assert ("verify.success", True) in conditions and ("verify.error", True) in conditions
    assert ("get_discount.success", True) in conditions and ("no_discount.error", True) in conditions
    assert first.ended
    assert talk.state().status == "ended"
    talk.check_stored()
