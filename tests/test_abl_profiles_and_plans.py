"""BEHAVIOR_PROFILES' TOOLS_ADD and VOICE, MEMORY `RESET: per_step`, and the guardrail LLM calls as ACDL
prompt plans (`frontdesk describe` lists them, recorded calls verify)."""

from __future__ import annotations

from pathlib import Path

from frontdesk.lang.abl.compiler import load_abl
from frontdesk.acdl import parse_acdl
from frontdesk.acdl.verify import verify_calls
from frontdesk.llm.scripted import ScriptedProvider
from frontdesk.runtime import rules
from frontdesk.runtime.describe import describe_program
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.tools import StubToolRunner
from frontdesk.store.memory import MemorySessionStore

SHOP = '''AGENT: Shop
GOAL: "Help customers find products"

TOOLS:
  search(query: string) -> {items: string[]}

BEHAVIOR_PROFILES:
  - NAME: web-rich
    PRIORITY: 5
    WHEN: context.channel == "web"
    TOOLS_ADD:
      - show_carousel(items: string[]) -> {displayed: boolean}
        description: "Display a product carousel in the chat"
'''


def shop(tmp_path: Path, channel: str, script: list[dict]):
    (tmp_path / "shop.agent.abl").write_text(SHOP, encoding="utf-8")
    program, diags = load_abl(tmp_path)
    assert program is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    llm = ScriptedProvider(script)
    tools = StubToolRunner({"search": {"items": ["red mug"]}, "show_carousel": {"displayed": True}},
                           convention="value")
    engine = Engine(program, llm, MemorySessionStore(), tools=tools)
    return engine, llm, tools, engine.start(channel=channel).session_id


def offered(request) -> list[str]:
    return [t.name for t in request.tools]


def test_tools_add_offers_the_tool_while_the_profile_is_active(tmp_path):
    eng, llm, tools, sid = shop(tmp_path, "web", [
        {"purpose": "reason", "reply": "Hello!"},
        {"purpose": "reason", "call": "show_carousel", "with": {"items": ["red mug"]}},
        {"purpose": "reason", "reply": "Here they are."},
    ])
    assert eng.send(sid, "show me mugs").messages[-1].text == "Here they are."
    assert "show_carousel" in offered(llm.calls[1]) and "search" in offered(llm.calls[1])
    assert [c[0] for c in tools.calls] == ["show_carousel"]
    llm.assert_finished()


def test_tools_add_is_not_offered_nor_run_when_the_profile_is_inactive(tmp_path):
    eng, llm, tools, sid = shop(tmp_path, "cli", [
        {"purpose": "reason", "reply": "Hello!"},
        {"purpose": "reason", "call": "show_carousel", "with": {"items": ["red mug"]}},
        {"purpose": "reason", "reply": "I can only list them: red mug."},
    ])
    eng.send(sid, "show me mugs")
    assert "show_carousel" not in offered(llm.calls[1])
    assert tools.calls == []  # a call of a tool the agent does not have now is refused
    tool_answer = [m for m in llm.calls[2].messages if m.role == "tool"][-1].content
    assert "no tool named show_carousel" in tool_answer


def test_effective_profile_lists_added_tools_by_name(tmp_path):
    eng, _, _, sid = shop(tmp_path, "web", [{"purpose": "reason", "reply": "Hello!"}])
    ctx = eng.context(eng.load_state(sid))
    assert rules.effective_profile("Shop", ctx)["tools_add"] == ["show_carousel"]
    assert rules.added_tools("Shop", ctx) == ["show_carousel"]


def test_voice_of_a_profile_is_reported_as_without_effect(tmp_path):
    (tmp_path / "a.agent.abl").write_text(SHOP.replace('    TOOLS_ADD:', '''    VOICE:
      provider: elevenlabs
      speed: 1.1
    TOOLS_ADD:'''), encoding="utf-8")
    _, diags = load_abl(tmp_path)
    assert [d.code for d in diags if d.severity == "warning"] == ["ABL109"]
    assert "VOICE of profile web-rich" in diags[0].message


def test_a_bad_tools_add_signature_is_an_error(tmp_path):
    (tmp_path / "a.agent.abl").write_text(SHOP.replace("show_carousel(items: string[])", "show_carousel(items: )"),
                                          encoding="utf-8")
    _, diags = load_abl(tmp_path)
    assert any(d.is_error and "TOOLS_ADD of profile web-rich" in d.message for d in diags)


# ---- RESET: per_step ---------------------------------------------------------------------------------------

STEPS = '''AGENT: Steps
GOAL: "Count attempts per step"

MEMORY:
  session:
    - attempts
      INITIAL: 0
      RESET: per_step
    - total
      INITIAL: 0

FLOW:
  first:
    REASONING: false
    RESPOND: "First, a number?"
    ON_INPUT:
      - IF: input == "next"
        THEN: second
      - ELSE:
        SET:
          attempts = attempts + 1
          total = total + 1
        THEN: first

  second:
    REASONING: false
    RESPOND: "Second: {{attempts}} attempts here, {{total}} in all."
    THEN: COMPLETE
'''


def test_reset_per_step_gives_the_initial_value_again_when_a_step_is_entered(tmp_path):
    (tmp_path / "steps.agent.abl").write_text(STEPS, encoding="utf-8")
    program, diags = load_abl(tmp_path)
    assert program is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    eng = Engine(program, None, MemorySessionStore())
    sid = eng.start().session_id
    eng.send(sid, "1")
    eng.send(sid, "2")
    assert eng.load_state(sid).variables["session"]["attempts"] == 2  # the same step: kept
    result = eng.send(sid, "next")
    assert result.messages[-1].text == "Second: 0 attempts here, 2 in all."
    assert any(e.type == "arg_set" and e.data.get("why") == "RESET per_step" for e in result.events)


# ---- guardrail calls in ACDL -----------------------------------------------------------------------------

HELPER = '''AGENT: Helper
GOAL: "Chat with customers"

GUARDRAILS:
  abusive:
    kind: input
    llm_check: "Does this input contain abusive or threatening language?"
    action: block
    msg: "Let's keep this respectful."
  short:
    kind: output
    check: "abl.sentence_count(content) > 1"
    action: reask
    msg: "Answer in one sentence."
'''


def test_guardrail_calls_are_described_in_acdl_and_recorded_calls_verify(tmp_path):
    (tmp_path / "helper.agent.abl").write_text(HELPER, encoding="utf-8")
    program, diags = load_abl(tmp_path)
    assert program is not None and not [d for d in diags if d.is_error]
    text = describe_program(program, label="helper")
    file_ast, problems = parse_acdl(text, "helper.acdl")
    assert file_ast is not None and not problems, [p.format(text) for p in problems]
    names = {item.name for item in file_ast.items if hasattr(item, "body")}
    assert {"GuardrailJudge_Helper", "GuardrailReask_Helper"} <= names
    assert "sys.guardrail.llm_check" in text and "GUARDRAIL_REASK_ROLE" in text

    llm = ScriptedProvider([
        {"purpose": "reason", "reply": "Hi, how can I help?"},
        {"purpose": "other", "expect": "abusive or threatening", "reply": "no"},
        {"purpose": "reason", "reply": "Sure. Your parcel ships Monday."},
        {"purpose": "other", "expect": "Answer in one sentence.", "reply": "Your parcel ships Monday."},
    ])
    store = MemorySessionStore()
    eng = Engine(program, llm, store)
    sid = eng.start().session_id
    assert [m.text for m in eng.send(sid, "when does it ship?").messages] == ["Your parcel ships Monday."]
    llm.assert_finished()
    events = store.events(sid)
    calls = [e for e in events if e["type"] == "llm_call"]
    plans = [e["data"]["plan"] for e in calls]
    assert "GuardrailJudge_Helper" in plans and "GuardrailReask_Helper" in plans
    assert set(plans) <= names  # every kind of call made is described
    results = verify_calls(file_ast, events)
    assert len(results) == len(calls)
    assert [r.problem for r in results if not r.ok] == []
