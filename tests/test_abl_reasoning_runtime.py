"""ABL reasoning agents at run time (runtime/reasoning.py, prompts.py): the system prompt built from the
agent's sections, declared and system tools, the iteration limit, GATHER in reasoning mode, fan_out,
context compaction, the offline mode and the ACDL description, with a scripted model."""

from __future__ import annotations

import json
from pathlib import Path

from frontdesk.lang import load_program
from frontdesk.lang.abl.compiler import load_abl
from frontdesk.llm.scripted import ScriptedProvider
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.tools import StubToolRunner
from frontdesk.store.memory import MemorySessionStore

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "insurance_claim"

DESK = r'''AGENT: Claims_Desk
GOAL: "Register home insurance claims"

PERSONA: |
  Patient and precise.

LIMITATIONS:
  - "Cannot pay claims"

INSTRUCTIONS: |
  Confirm the policy before anything else.

TOOLS:
  check_coverage(policy_number: string, incident_type: string) -> {covered: boolean}
  file_claim(policy_number: string, amount: number) -> {claim_id: string}

GATHER:
  policy_number:
    prompt: "Your policy number?"
    type: string
    required: true
    validate:
      type: pattern
      rule: "^POL-\\d{3}$"
      error: "Policy numbers look like POL-123."
  amount:
    prompt: "How much is the damage?"
    type: number
    required: true
    validate:
      type: range
      rule: "1-5000"
  incident_date:
    prompt: "When did it happen?"
    type: date
    required: true
  incident_type:
    prompt: "Fire or theft?"
    type: string
    required: true
    options: [fire, theft]

MEMORY:
  session:
    - customer_tier
      INITIAL: "gold"

BEHAVIOR_PROFILES:
  - NAME: terse
    PRIORITY: 5
    WHEN: context.channel == "test"
    INSTRUCTIONS: "Answer in one sentence."
  - NAME: voice
    PRIORITY: 9
    WHEN: context.channel == "voice"
    INSTRUCTIONS: "Speak slowly."
    TOOLS_HIDE: [file_claim]

DELEGATE:
  - AGENT: Fraud_Check
    PURPOSE: "Score the claim for fraud"
    INPUT: {policy_number}
  - AGENT: Weather_Check
    PURPOSE: "Check the weather on the day"
    INPUT: {incident_date}

HANDOFF:
  - TO: Adjuster
    WHEN: the customer disputes a decision
    RETURN: false

ESCALATE:
  triggers:
    - WHEN: amount > 4000
      REASON: "Large claim"
      PRIORITY: high

EXECUTION:
  max_iterations: 3
'''

HELPERS = {
    "fraud.agent.abl": '''AGENT: Fraud_Check
GOAL: "Score a claim for fraud"

TOOLS:
  fraud_score(policy_number: string) -> {score: number}

GATHER:
  policy_number:
    prompt: "Policy?"
    type: string

FLOW:
  score:
    CALL: fraud_score(policy_number)
    THEN: COMPLETE
''',
    "weather.agent.abl": '''AGENT: Weather_Check
GOAL: "Weather on a day"

TOOLS:
  weather_on(incident_date: string) -> {storm: boolean}

GATHER:
  incident_date:
    prompt: "Day?"
    type: date

FLOW:
  look:
    CALL: weather_on(incident_date)
    THEN: COMPLETE
''',
    "adjuster.agent.abl": '''AGENT: Adjuster
GOAL: "Review disputed claims"

FLOW:
  hello:
    RESPOND: "Adjuster here: I'll review the decision."
    THEN: COMPLETE
''',
}

STUBS = {"check_coverage": {"covered": True}, "file_claim": {"claim_id": "C-1"},
         "fraud_score": {"score": 0.1}, "weather_on": {"storm": False}}


def program(tmp_path: Path, desk: str = DESK):
    (tmp_path / "desk.agent.abl").write_text(desk, encoding="utf-8")
    for name, text in HELPERS.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    prog, diags = load_abl(tmp_path, entry="Claims_Desk")
    assert prog is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    return prog


GREETING = {"purpose": "reason", "reply": "Hello, how can I help with your claim?"}


def engine(tmp_path: Path, script: list[dict], desk: str = DESK, llm=True):
    """The desk with a scripted model; the first answer is the greeting it says when the session starts
    (`llm.calls[0]`)."""
    llm_ = ScriptedProvider([GREETING, *script]) if llm else None
    tools = StubToolRunner(dict(STUBS), convention="value")
    return Engine(program(tmp_path, desk), llm_, MemorySessionStore(), tools=tools), llm_, tools


def of(result, kind: str) -> list:
    return [e for e in result.events if e.type == kind]


def system_text(request) -> str:
    return request.messages[0].content or ""


def test_the_system_prompt_is_built_from_the_agents_sections_fields_profiles_and_memory(tmp_path):
    eng, llm, _ = engine(tmp_path, [
        {"purpose": "reason", "call": "set_args", "with": {"policy_number": "POL-123"}},
        {"purpose": "reason", "reply": "When did it happen?"},
    ])
    sid = eng.start(channel="test").session_id
    eng.send(sid, "my policy is POL-123")
    first, second = llm.calls[1:]
    text = system_text(first)
    assert text.startswith("Goal: Register home insurance claims\nPatient and precise.\nLimitations:\n- Cannot pay")
    assert "Confirm the policy before anything else." in text
    assert "Active behaviour profiles (follow them):\n- terse: Answer in one sentence." in text
    assert "Speak slowly" not in text  # the voice profile's WHEN does not hold on this channel
    assert "- policy_number (string): Your policy number?" in text and "Already known:" not in text
    assert 'Memory you may read:\n- customer_tier: "gold"' in text
    # after set_args the field is known, no longer needed
    after = system_text(second)
    assert 'Already known:\n- policy_number: "POL-123"' in after
    assert "- policy_number (string)" not in after and "- amount (number): How much is the damage?" in after
    # the structure recorded for ACDL names each section
    elements = first.structure[0]["elements"]
    for element in ("sys.agent.goal", "sys.agent.persona", "LIMITATIONS_HEADER", "sys.agent.instructions",
                    "PROFILES_HEADER", "NEEDED_FIELDS_HEADER", "MEMORY_HEADER", "ABL_REASONING_RULES"):
        assert element in elements, element


def test_declared_tools_are_function_definitions_and_system_tools_have_the_specs_names(tmp_path):
    eng, llm, _ = engine(tmp_path, [{"purpose": "reason", "reply": "Hello! What is your policy number?"}])
    sid = eng.start(channel="test").session_id
    eng.send(sid, "hi, I had a fire")
    tools = {t.name: t for t in llm.calls[1].tools}
    assert tools["check_coverage"].parameters == {
        "type": "object", "required": ["policy_number", "incident_type"],
        "properties": {"policy_number": {"type": "string"}, "incident_type": {"type": "string"}}}
    assert tools["file_claim"].parameters["properties"]["amount"] == {"type": "number"}
    assert tools["check_coverage"].description.endswith("Returns: covered (boolean).")
    assert {"complete", "escalate", "fan_out", "hand_back", "set_args", "delegate_to_Fraud_Check",
            "transfer_to_Adjuster"} <= set(tools)
    assert "finish" not in tools and "escalate_to_human" not in tools
    fields = tools["set_args"].parameters["properties"]
    assert fields["amount"]["type"] == "number" and fields["incident_type"]["enum"] == ["fire", "theft"]
    assert tools["fan_out"].parameters["properties"]["tasks"]["items"]["properties"]["agent"]["enum"] == [
        "Fraud_Check", "Weather_Check"]


def test_a_profile_hides_its_tools_from_the_model(tmp_path):
    eng, llm, _ = engine(tmp_path, [{"purpose": "reason", "reply": "Hello."}])
    sid = eng.start(channel="voice").session_id
    eng.send(sid, "hi")
    assert "file_claim" not in {t.name for t in llm.calls[1].tools}
    assert "Speak slowly." in system_text(llm.calls[1])


def test_several_fields_in_one_message_are_checked_against_their_types_and_kept(tmp_path):
    eng, _, _ = engine(tmp_path, [
        {"purpose": "reason", "call": "set_args", "with": {
            "policy_number": "POL-7", "amount": "1,200", "incident_date": "2026-11-20",
            "incident_type": "Fire", "colour": "red"}},
        {"purpose": "reason", "call": "set_args", "with": {"policy_number": "POL-777", "amount": 9000}},
        {"purpose": "reason", "reply": "Thanks. Anything else?"},
    ])
    sid = eng.start(channel="test").session_id
    result = eng.send(sid, "POL-7, fire on 20 November, about 1200 euros (or is it POL-777 and 9000?)")
    state = eng.load_state(sid)
    values = state.variables["session"]
    assert values["amount"] == 1200 and values["incident_date"] == "2026-11-20" and values["incident_type"] == "fire"
    assert not [e for e in of(result, "arg_set") if e.data.get("value") == "POL-7"]  # fails the pattern: not kept
    tool_answers = [m for m in state.stack[-1].data.messages if m.get("role") == "tool"]
    assert "not recorded: policy_number: Policy numbers look like POL-123.; colour: not a field" in \
        tool_answers[0]["content"]
    assert "still needed: policy_number" in tool_answers[0]["content"]
    assert "amount: must be between 1 and 5000" in tool_answers[1]["content"]
    assert "all fields gathered" in tool_answers[1]["content"]
    assert values["policy_number"] == "POL-777" and values["amount"] == 1200  # 9000 out of range: kept 1200
    assert state.system["all_fields_gathered"] is True
    extraction = of(result, "gather_extraction")[0].data
    assert extraction["by"] == "llm" and set(extraction["fields"]) == {"amount", "incident_date", "incident_type"}


def test_the_loop_stops_at_execution_max_iterations_with_a_fallback_reply(tmp_path):
    looping = {"purpose": "reason", "call": "check_coverage", "with": {"policy_number": "POL-123",
                                                                        "incident_type": "fire"}}
    eng, llm, tools = engine(tmp_path, [looping, looping, looping, {"purpose": "reason", "reply": "Hello again."}])
    sid = eng.start(channel="test").session_id
    result = eng.send(sid, "is a fire covered on POL-123?")
    assert len(llm.calls) == 4 and len(tools.calls) == 3  # EXECUTION max_iterations: 3
    exceeded = of(result, "max_iterations_exceeded")
    assert exceeded and exceeded[0].data["limit"] == 3
    assert [m.text for m in result.messages][-1].startswith("Sorry, I could not work that out just now.")
    again = eng.send(sid, "hello?")  # the agent waits for the user and goes on
    assert [m.text for m in again.messages] == ["Hello again."]


def test_max_iterations_defaults_to_ten_for_abl_agents(tmp_path):
    from frontdesk.runtime.reasoning import iteration_limit

    prog = program(tmp_path, DESK.replace("EXECUTION:\n  max_iterations: 3\n", ""))

    class Ctx:
        program = prog

    assert iteration_limit(Ctx(), prog.agents["Claims_Desk"]) == 10


def test_complete_under_its_spec_name_ends_the_agent_with_its_values(tmp_path):
    eng, _, _ = engine(tmp_path, [
        {"purpose": "reason", "calls": [
            {"name": "set_args", "arguments": {"policy_number": "POL-123"}},
            {"name": "complete", "arguments": {"status": "success", "message": "done", "rest": ""}}]},
    ])
    sid = eng.start(channel="test").session_id
    result = eng.send(sid, "POL-123, that's all")
    finished = [e for e in of(result, "agent_finished") if e.agent == "Claims_Desk"]
    assert finished and finished[0].data["status"] == "success"


def test_escalate_under_its_spec_name_hands_the_session_to_a_person(tmp_path):
    eng, _, _ = engine(tmp_path, [
        {"purpose": "reason", "call": "escalate", "with": {"reason": "customer asks for a person",
                                                          "priority": "high"}}])
    sid = eng.start(channel="test").session_id
    result = eng.send(sid, "I want to talk to a human")
    assert eng.load_state(sid).status == "escalated"
    assert of(result, "session_escalated")
    assert any(e.data.get("priority") == "high" for e in of(result, "step"))


def test_handoff_with_an_agent_argument_transfers_the_conversation(tmp_path):
    eng, _, _ = engine(tmp_path, [{"purpose": "reason", "call": "handoff", "with": {"agent": "Adjuster"}}])
    sid = eng.start(channel="test").session_id
    result = eng.send(sid, "I dispute your decision")
    assert "Adjuster here: I'll review the decision." in [m.text for m in result.messages]


def test_delegate_with_an_agent_argument_runs_it_and_answers_with_its_result(tmp_path):
    eng, llm, tools = engine(tmp_path, [
        {"purpose": "reason", "call": "delegate", "with": {"agent": "Fraud_Check",
                                                          "input": {"policy_number": "POL-123"}}},
        {"purpose": "reason", "reply": "The fraud check is done."},
    ])
    sid = eng.start(channel="test").session_id
    result = eng.send(sid, "please check POL-123")
    assert ("fraud_score", {"policy_number": "POL-123"}) in tools.calls
    answer = [m for m in llm.calls[2].messages if m.role == "tool"][-1]
    assert json.loads(answer.content)["status"] == "success"
    assert [m.text for m in result.messages] == ["The fraud check is done."]


def test_fan_out_runs_several_delegations_and_returns_their_results_together(tmp_path):
    eng, llm, tools = engine(tmp_path, [
        {"purpose": "reason", "call": "fan_out", "with": {"tasks": [
            {"agent": "Fraud_Check", "input": {"policy_number": "POL-123"}},
            {"agent": "Weather_Check", "input": {"incident_date": "2026-11-20"}},
            {"agent": "Nobody", "input": {}}]}},
        {"purpose": "reason", "reply": "Both checks are back: no storm, low fraud score."},
    ])
    sid = eng.start(channel="test").session_id
    result = eng.send(sid, "check everything about POL-123 on 2026-11-20")
    assert [t for t, _ in tools.calls] == ["fraud_score", "weather_on"]
    started, completed = of(result, "fan_out.started"), of(result, "fan_out.completed")
    assert started[0].data["tasks"] == ["Fraud_Check", "Weather_Check"]
    results = completed[0].data["results"]
    assert [r["agent"] for r in results] == ["Nobody", "Fraud_Check", "Weather_Check"]
    assert [r["status"] for r in results] == ["error", "success", "success"]
    answers = [m for m in llm.calls[2].messages if m.role == "tool"]
    assert len(answers) == 1 and len(json.loads(answers[0].content)["results"]) == 3  # one answer, all results
    assert [m.text for m in result.messages] == ["Both checks are back: no storm, low fraud score."]


def test_a_long_conversation_is_compacted_with_a_model_summary_and_the_transcript_is_kept(tmp_path):
    desk = DESK.replace("  max_iterations: 3\n", "  max_iterations: 3\n  context_tokens: 1000\n")
    script = [{"purpose": "reason", "reply": f"Noted point {i}. " + "Please go on with the details. " * 6}
              for i in range(5)]
    # the fourth message's request would be over 1000 tokens: older messages are summarised first
    script.insert(3, {"purpose": "summarize", "reply": "The user reported a fire at home; policy POL-123."})
    eng, llm, _ = engine(tmp_path, script, desk)
    sid = eng.start(channel="test").session_id
    for i in range(5):
        eng.send(sid, f"detail {i}: " + "the kitchen wall burnt and smoke went everywhere " * 4)
    events = [e for e in eng.store.events(sid) if e["type"] == "context_compacted"]
    assert events, "no compaction"
    first = events[0]["data"]
    assert first["by"] == "llm" and first["after_tokens"] < first["before_tokens"] and first["messages"] > 0
    summarized = [c for c in llm.calls if c.purpose == "summarize"]
    assert summarized and "detail 0" in summarized[0].messages[1].content
    later = [c for c in llm.calls if c.purpose == "reason"][-1]
    assert "The user reported a fire at home; policy POL-123." in system_text(later)
    assert not any("detail 0" in (m.content or "") for m in later.messages[1:])  # folded out of what is sent
    frame = eng.load_state(sid).stack[-1]
    assert sum(1 for m in frame.data.messages if m.get("role") == "user") == 5  # the transcript is whole
    assert frame.data.compacted > 0
    # the ACDL description covers the summary call and the summary in the system prompt
    from frontdesk.acdl import parse_acdl
    from frontdesk.acdl.verify import verify_calls
    from frontdesk.runtime.describe import describe_program

    file_ast, diags = parse_acdl(describe_program(eng.program), "desk.acdl")
    assert file_ast is not None and not diags
    results = verify_calls(file_ast, eng.store.events(sid))
    assert {r.spec for r in results} >= {"Summarize_Claims_Desk", "Reason_Claims_Desk"}
    assert [r.problem for r in results if not r.ok] == []


def test_with_a_model_too_small_to_summarise_the_summary_is_extractive(tmp_path):
    from frontdesk.runtime.reasoning import summarise

    class Ctx:
        llm_classifies = False

    messages = [{"role": "user", "content": "my policy is POL-123"},
                {"role": "assistant", "content": "Thanks!"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "c1", "name": "check_coverage", "arguments": {"policy_number": "POL-123"}}]},
                {"role": "tool", "name": "check_coverage", "content": '{"covered": true}'}]
    text, by = summarise(Ctx(), None, "", messages)
    assert by == "extractive"
    assert text.splitlines() == ["User: my policy is POL-123",
                                 'Assistant: [called check_coverage({"policy_number": "POL-123"})]',
                                 'Tool check_coverage: {"covered": true}']


def test_with_no_model_a_reasoning_step_asks_reads_runs_its_read_only_tool_and_completes(tmp_path):
    prog, _ = load_program(EXAMPLE)
    assert prog is not None
    tools = StubToolRunner({"check_coverage": {"covered": True, "deductible": 250, "reason": "fire is covered",
                                               "holder": "Dana"}, "file_claim": {"claim_id": "CLM-9"}},
                           convention="value")
    eng = Engine(prog, None, MemorySessionStore(), tools=tools)
    sid = eng.start().session_id
    for line in ("POL-AB123456", "yesterday", "fire"):
        result = eng.send(sid, line)
    assert [m.text for m in result.messages] == ["Please describe what happened, in your own words."]
    result = eng.send(sid, "The toaster caught fire and burnt the curtains.")
    state = eng.load_state(sid)
    assert state.variables["session"]["incident_description"] == "The toaster caught fire and burnt the curtains."
    # the assess step names check_coverage in its instructions and it is read-only: it runs; file_claim is
    # the flow's own CALL (side effects), never the offline reasoning's
    assert [t for t, _ in tools.calls] == ["check_coverage", "file_claim"]
    offline = [(e.agent, e.data["action"]) for e in result.events if e.type == "reasoning_offline"]
    assert ("Insurance_Claim__assess", "tool") in offline and ("Insurance_Claim__describe", "complete") in offline
    texts = [m.text for m in result.messages]
    assert texts[0] == "Coverage check for Dana: fire is covered. Deductible: 250 EUR."
    assert texts[-1].startswith("Your claim CLM-9 is registered.")


def test_adl_prompts_are_unchanged_by_the_abl_sections(tmp_path):
    from frontdesk.runtime import prompts

    prog, _ = load_program(Path(__file__).resolve().parent.parent / "examples" / "bookstore")
    agent = next(a for a in prog.agents.values() if a.kind == "reasoning")
    request = prompts.reasoning_request(agent, {}, [], prog.tools)
    names = {t.name for t in request.tools}
    assert "finish" in names and "complete" not in names and "fan_out" not in names
    elements = request.structure[0]["elements"]
    assert elements[0] == "sys.agent.prompt" and "SUMMARY_HEADER" not in elements


def test_the_acdl_description_follows_the_abl_prompt_and_recorded_calls_verify(tmp_path, monkeypatch):
    from frontdesk.acdl import parse_acdl
    from frontdesk.acdl.verify import verify_calls
    from frontdesk.runtime.describe import describe_program
    from frontdesk.testing import load_conversation, run_conversation, scripted_model

    prog, _ = load_program(EXAMPLE)
    text = describe_program(prog, label="insurance_claim")
    assert "Reason_Insurance_Claim__assess[@T.I]" in text and "Summarize_Insurance_Claim__assess[@T]" in text
    for element in ("sys.agent.goal", "NEEDED_FIELDS_HEADER", "PROFILES_HEADER", "sys.session_memory",
                    "sys.conversation_summary"):
        assert element in text, element
    assert "tools: check_coverage, file_claim, set_args, complete, hand_back" in text
    file_ast, diags = parse_acdl(text, "insurance_claim.acdl")
    assert file_ast is not None and not diags
    events = []
    for path in sorted((EXAMPLE / "conversations").glob("*.yml")):
        spec = load_conversation(path)
        events += run_conversation(prog, spec["user"], scripted_model(spec), today=spec.get("today")).events
    results = verify_calls(file_ast, events)
    assert results and [r.problem for r in results if not r.ok] == []


def test_with_no_model_an_agent_with_nothing_to_do_by_itself_says_so_and_stays(tmp_path):
    (tmp_path / "chat.agent.abl").write_text('AGENT: Small_Talk\nGOAL: "Chat about the weather"\n', encoding="utf-8")
    prog, _ = load_abl(tmp_path)
    eng = Engine(prog, None, MemorySessionStore())
    started = eng.start()
    assert started.messages == []
    sid = started.session_id
    for _ in range(2):
        result = eng.send(sid, "nice weather today?")
        assert [m.text for m in result.messages] == ["I can't help with that here: no language model is configured "
                                                     "for me."]
    assert eng.load_state(sid).stack[-1].agent == "Small_Talk"  # still there
