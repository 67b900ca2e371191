"""ABL GUARDRAILS at run time (abl-specification 3.9): every kind (input, output, tool_input, tool_output,
handoff), every way to check (CEL helpers, patterns, llm_check with a scripted model or none) and
every action (block, warn, redact, filter, fix, reask, escalate), on compiled programs."""

from __future__ import annotations

from pathlib import Path

import pytest

from frontdesk.expr.cel import compile_check
from frontdesk.lang.abl.compiler import load_abl
from frontdesk.llm.scripted import ScriptedProvider
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.tools import StubToolRunner
from frontdesk.store.memory import MemorySessionStore

DESK = '''AGENT: Desk
GOAL: "Answer questions about orders"

TOOLS:
  lookup(query: string) -> {answer: string}

GUARDRAILS:
{guards}

FLOW:
  ask:
    REASONING: false
    RESPOND: "What do you need?"
    ON_INPUT:
      - IF: input.contains("human")
        THEN: transfer
      - ELSE:
        SET: query = input
        THEN: answer

  answer:
    REASONING: false
    CALL: lookup(query)
    RESPOND: "{{lookup.answer}}"
    THEN: ask

  transfer:
    REASONING: false
    HANDOFF:
      TO: People
      CONTEXT:
        pass: [query]
'''

PEOPLE = '''AGENT: People
GOAL: "A person answers"

FLOW:
  hello:
    REASONING: false
    RESPOND: "Hello, a person here."
    THEN: COMPLETE
'''

HELPER = '''AGENT: Helper
GOAL: "Chat with customers"

GUARDRAILS:
{guards}
'''


def desk(tmp_path: Path, guards: str, answer: str = "Your parcel ships Monday.", llm=None):
    (tmp_path / "desk.agent.abl").write_text(DESK.replace("{guards}", guards), encoding="utf-8")
    (tmp_path / "people.agent.abl").write_text(PEOPLE, encoding="utf-8")
    program, diags = load_abl(tmp_path, entry="Desk")
    assert program is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    tools = StubToolRunner({"lookup": {"answer": answer}}, convention="value")
    engine = Engine(program, llm, MemorySessionStore(), tools=tools)
    return engine, tools, engine.start().session_id


def helper(tmp_path: Path, guards: str, script: list[dict]):
    (tmp_path / "helper.agent.abl").write_text(HELPER.replace("{guards}", guards), encoding="utf-8")
    program, diags = load_abl(tmp_path)
    assert program is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    llm = ScriptedProvider(script)
    engine = Engine(program, llm, MemorySessionStore())
    return engine, llm


def texts(result) -> list[str]:
    return [m.text for m in result.messages]


def kinds(result, kind: str) -> list:
    return [e for e in result.events if e.type == kind]


# ---- the CEL helpers -----------------------------------------------------------------------------------


@pytest.mark.parametrize("check, content, fires", [
    ("abl.contains_pii(content)", "card 4111 1111 1111 1111", True),
    ("abl.contains_pii(content)", "order A-123 please", False),
    ("abl.matches_pattern(content, '(?i)acme travel')", "Try ACME Travel", True),
    ("abl.word_count(content) > 3", "one two three four", True),
    ("abl.word_count(content) > 3", "one two", False),
    ("abl.sentence_count(content) > 1", "One. Two.", True),
    ("abl.contains_url(content)", "see https://x.test/a", True),
    ("abl.contains_email(content)", "mail me at a@b.co", True),
    ("abl.contains_email(content)", "no address here", False),
])
def test_every_documented_cel_helper_exists_and_judges(check, content, fires):
    assert compile_check(check).fires({"content": content}) is fires


# ---- kinds and actions ---------------------------------------------------------------------------------


def test_input_block_stops_the_message_before_any_agent_or_tool(tmp_path):
    eng, tools, sid = desk(tmp_path, '''  no_pii:
    kind: input
    check: "abl.contains_pii(content)"
    action: block
    msg: "Please keep card numbers out of the chat."''')
    result = eng.send(sid, "my card is 4111 1111 1111 1111")
    assert texts(result) == ["Please keep card numbers out of the chat."]
    assert not tools.calls and kinds(result, "input_blocked")
    assert kinds(result, "guardrail_action")[0].data["action"] == "block"


def test_input_redact_rewrites_the_message_the_agent_sees(tmp_path):
    eng, tools, sid = desk(tmp_path, '''  mask_email:
    kind: input
    check: "abl.contains_email(content)"
    action: redact''')
    eng.send(sid, "where is my parcel? I am ann@shop.test")
    assert tools.calls == [("lookup", {"query": "where is my parcel? I am [REDACTED]"})]


def test_input_warn_lets_the_message_through_and_logs(tmp_path):
    eng, tools, sid = desk(tmp_path, '''  long_input:
    kind: input
    check: "abl.word_count(content) > 3"
    action: warn
    msg: "A long message"''')
    result = eng.send(sid, "where is my parcel today")
    assert texts(result)[0] == "Your parcel ships Monday." and tools.calls
    assert any(e.data.get("where") == "guardrail long_input" for e in kinds(result, "warning"))


def test_input_escalate_hands_the_session_to_a_person(tmp_path):
    eng, tools, sid = desk(tmp_path, '''  threats:
    kind: input
    patterns: ["(?i)lawyer"]
    action: escalate
    msg: "I'm bringing in a colleague."''')
    result = eng.send(sid, "my lawyer will call you")
    assert texts(result) == ["I'm bringing in a colleague."] and not tools.calls
    assert eng.load_state(sid).status == "escalated"


def test_tool_input_block_refuses_the_call(tmp_path):
    eng, tools, sid = desk(tmp_path, '''  short_queries:
    kind: tool_input
    check: "abl.word_count(tool_input) > 5"
    action: block
    msg: "That query is too long."''')
    result = eng.send(sid, "a b c d e f g h")
    assert not tools.calls and kinds(result, "tool_intercepted")
    assert eng.load_state(sid).results["lookup"].status == "error"


def test_tool_input_redact_changes_the_arguments(tmp_path):
    eng, tools, sid = desk(tmp_path, '''  no_phone:
    kind: tool_input
    check: "abl.contains_pii(tool_input)"
    action: redact''')
    eng.send(sid, "call me on +44 20 7946 0958")
    assert tools.calls == [("lookup", {"query": "call me on [REDACTED]"})]


def test_tool_output_filter_removes_the_violating_sentences(tmp_path):
    eng, _, sid = desk(tmp_path, '''  no_urls:
    kind: tool_output
    check: "abl.contains_url(content)"
    action: filter''', answer="Ships Monday. Track it at https://track.test/1 today.")
    result = eng.send(sid, "where is it")
    assert texts(result)[0] == "Ships Monday."


def test_tool_output_block_turns_the_result_into_an_error(tmp_path):
    eng, _, sid = desk(tmp_path, '''  secrets:
    kind: tool_output
    patterns: ["(?i)internal only"]
    action: block
    msg: "That answer is not for customers."''', answer="INTERNAL ONLY: margin 40%")
    eng.send(sid, "where is it")
    record = eng.load_state(sid).results["lookup"]
    assert record.status == "error" and record.message == "That answer is not for customers."


def test_output_redact_and_fix_replace_what_the_check_finds(tmp_path):
    for action in ("redact", "fix"):
        folder = tmp_path / action
        folder.mkdir()
        eng, _, sid = desk(folder, f'''  no_email_out:
    kind: output
    check: "abl.contains_email(content)"
    action: {action}''', answer="Write to help@shop.test.")
        assert texts(eng.send(sid, "help"))[0] == "Write to [REDACTED]."


def test_output_block_replaces_the_drafts(tmp_path):
    eng, _, sid = desk(tmp_path, '''  no_competitors:
    kind: output
    check: "abl.matches_pattern(content, '(?i)globex')"
    action: block
    msg: "Let me stick to our own services."''', answer="Globex ships faster.")
    assert texts(eng.send(sid, "help")) == ["Let me stick to our own services."]


def test_output_reask_of_a_flows_message_blocks_it(tmp_path):
    eng, _, sid = desk(tmp_path, '''  too_long:
    kind: output
    check: "abl.word_count(content) > 3"
    action: reask
    msg: "Keep it short."''', answer="Your parcel ships on Monday morning.")
    result = eng.send(sid, "help")
    assert texts(result) == ["Keep it short."]


def test_handoff_guardrail_stops_a_handoff_that_passes_personal_data(tmp_path):
    eng, _, sid = desk(tmp_path, '''  clean_handoff:
    kind: handoff
    check: "abl.contains_pii(content)"
    action: block
    msg: "I can't pass personal data on."''')
    eng.send(sid, "I am ann@shop.test")  # query now holds an e-mail address
    result = eng.send(sid, "a human please")
    assert "I can't pass personal data on." in texts(result)
    assert "Hello, a person here." not in texts(result)
    assert kinds(result, "guardrail_check")[-1].data["kind"] == "handoff"


def test_handoff_guardrail_lets_a_clean_handoff_through(tmp_path):
    eng, _, sid = desk(tmp_path, '''  clean_handoff:
    kind: handoff
    check: "abl.contains_pii(content)"
    action: block''')
    result = eng.send(sid, "a human please")
    assert "Hello, a person here." in texts(result)


# ---- llm_check and reask with a model --------------------------------------------------------------------


LLM_GUARD = '''  abusive:
    kind: input
    llm_check: "Does this input contain abusive or threatening language?"
    action: block
    msg: "Let's keep this respectful."'''


def test_llm_check_asks_the_model_and_blocks_on_yes(tmp_path):
    eng, llm = helper(tmp_path, LLM_GUARD, [
        {"purpose": "reason", "reply": "Hi, how can I help?"},
        {"purpose": "other", "expect": "abusive or threatening", "reply": "yes"},
    ])
    sid = eng.start().session_id
    result = eng.send(sid, "you useless idiot")
    assert texts(result) == ["Let's keep this respectful."]
    assert kinds(result, "guardrail_check")[0].data["by"] == "llm_check"
    llm.assert_finished()


def test_llm_check_passes_on_no(tmp_path):
    eng, llm = helper(tmp_path, LLM_GUARD, [
        {"purpose": "reason", "reply": "Hi, how can I help?"},
        {"purpose": "other", "reply": "no"},
        {"purpose": "reason", "reply": "Happy to help!"},
    ])
    sid = eng.start().session_id
    assert texts(eng.send(sid, "hello there")) == ["Happy to help!"]
    llm.assert_finished()


def test_llm_check_without_a_model_is_skipped_and_says_so(tmp_path):
    eng, tools, sid = desk(tmp_path, LLM_GUARD)
    result = eng.send(sid, "you useless idiot")
    check = kinds(result, "guardrail_check")[0]
    assert check.data["fired"] is False and check.data["skipped"] == "no LLM is configured"
    assert tools.calls  # the message went on


def test_output_reask_regenerates_a_model_reply_once(tmp_path):
    eng, llm = helper(tmp_path, '''  short:
    kind: output
    check: "abl.sentence_count(content) > 1"
    action: reask
    msg: "Answer in one sentence."''', [
        {"purpose": "reason", "reply": "Hi, how can I help?"},
        {"purpose": "reason", "reply": "Sure. Your parcel ships Monday."},
        {"purpose": "other", "expect": "Answer in one sentence.", "reply": "Your parcel ships Monday."},
    ])
    sid = eng.start().session_id
    result = eng.send(sid, "when does it ship?")
    assert texts(result) == ["Your parcel ships Monday."]
    assert kinds(result, "guardrail_action")[0].data["action"] == "reask"
    llm.assert_finished()


def test_output_reask_blocks_when_the_new_reply_still_fails(tmp_path):
    eng, _ = helper(tmp_path, '''  short:
    kind: output
    check: "abl.sentence_count(content) > 1"
    action: reask
    msg: "Answer in one sentence."''', [
        {"purpose": "reason", "reply": "Hi, how can I help?"},
        {"purpose": "reason", "reply": "Sure. Your parcel ships Monday."},
        {"purpose": "other", "reply": "OK. Monday."},
    ])
    sid = eng.start().session_id
    assert texts(eng.send(sid, "when does it ship?")) == ["Answer in one sentence."]
