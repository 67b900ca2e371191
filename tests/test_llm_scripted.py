"""Tests for the scripted LLM provider and YAML script loading."""

from __future__ import annotations

import pytest

from frontdesk.llm import LLM, ChatMessage, LLMError, LLMRequest, ScriptedProvider, ScriptError, load_script


def ask(text: str, purpose: str = "other") -> LLMRequest:
    return LLMRequest(purpose=purpose, messages=[ChatMessage(role="system", content="rules"), ChatMessage(role="user", content=text)])


def test_answers_are_given_in_order():
    provider = ScriptedProvider(
        [
            {"purpose": "route", "call": "route_to", "with": {"agent": "billing"}},
            {"reply": "Your invoice is attached."},
            {"calls": [{"name": "a", "arguments": {"x": 1}}, {"name": "b"}], "reply": "both"},
        ]
    )
    assert isinstance(provider, LLM)
    first = provider.complete(ask("my bill", "route"))
    assert first.content is None
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [("call_1", "route_to", {"agent": "billing"})]

    second = provider.complete(ask("thanks", "reason"))
    assert second.content == "Your invoice is attached." and second.tool_calls == []
    assert second.model == "scripted"

    third = provider.complete(ask("again"))
    assert third.content == "both"
    assert [(c.id, c.name, c.arguments) for c in third.tool_calls] == [("call_2", "a", {"x": 1}), ("call_3", "b", {})]

    assert provider.remaining() == 0
    provider.assert_finished()
    assert [request.purpose for request in provider.calls] == ["route", "reason", "other"]


def test_usage_is_a_rough_estimate():
    provider = ScriptedProvider([{"reply": "x" * 40}])
    response = provider.complete(ask("y" * 100))
    assert response.usage.completion_tokens == 10
    assert response.usage.prompt_tokens > 25  # system + user text


def test_purpose_mismatch_names_step_and_both_purposes():
    provider = ScriptedProvider([{"reply": "a"}, {"reply": "b"}, {"purpose": "route", "reply": "c"}])
    provider.complete(ask("one"))
    provider.complete(ask("two"))
    with pytest.raises(ScriptError) as caught:
        provider.complete(ask("I want a refund", "understand"))
    message = str(caught.value)
    assert "script step 3 expected a 'route' call but the runtime made a 'understand' call" in message
    assert "I want a refund" in message
    assert not isinstance(caught.value, LLMError)


def test_expect_must_occur_in_some_message():
    provider = ScriptedProvider([{"expect": "rules", "reply": "ok"}, {"expect": "refund", "reply": "ok"}])
    assert provider.complete(ask("hello")).content == "ok"  # found in the system message
    with pytest.raises(ScriptError, match="step 2.*'refund'"):
        provider.complete(ask("hello again"))


def test_exhausted_script_raises_script_error():
    provider = ScriptedProvider([{"reply": "only one"}])
    provider.complete(ask("first"))
    with pytest.raises(ScriptError, match=r"no answer left for a 'kb_answer' call \(1 answer was used\)"):
        provider.complete(ask("second", "kb_answer"))
    assert len(provider.calls) == 2


def test_error_entry_raises_llm_error_and_moves_on():
    provider = ScriptedProvider([{"error": "simulated outage"}, {"reply": "back"}])
    with pytest.raises(LLMError, match="simulated outage"):
        provider.complete(ask("hi"))
    assert provider.complete(ask("hi")).content == "back"


def test_assert_finished_reports_unused_answers():
    provider = ScriptedProvider([{"reply": "a"}, {"purpose": "route", "call": "go"}])
    provider.complete(ask("x"))
    assert provider.remaining() == 1
    with pytest.raises(ScriptError, match="1 unused answer left.*step 2.*'route'.*go"):
        provider.assert_finished()


def test_script_entries_are_not_shared_with_the_caller():
    entries = [{"call": "f", "with": {"items": [1]}}]
    provider = ScriptedProvider(entries)
    entries[0]["with"]["items"].append(2)
    assert provider.complete(ask("x")).tool_calls[0].arguments == {"items": [1]}


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        ([{"reply": "ok"}, {"replly": "typo"}], r"entry 2 has unknown key 'replly' \(did you mean 'reply'\?\)"),
        ([{"purpose": "route"}], "entry 1 has no answer"),
        (["just text"], "entry 1 must be a mapping"),
        ([{"purpose": "routing", "reply": "x"}], "entry 1 has purpose 'routing'"),
        ([{"with": {"a": 1}, "reply": "x"}], "no 'call'"),
        ([{"call": "f", "calls": [{"name": "g"}]}], "not both"),
        ([{"error": "boom", "reply": "x"}], "'error' cannot be combined"),
        ([{"calls": [{"name": "g", "args": {}}]}], r"entry 1, call 1 has unknown key 'args'"),
        ([{"calls": [{"arguments": {}}]}], "needs a tool 'name'"),
        ([{"call": "f", "with": [1, 2]}], "'with' must be a mapping"),
        ([{"reply": 42}], "'reply' must be text"),
    ],
)
def test_bad_entries_are_rejected_with_their_number(entries, expected):
    with pytest.raises(ScriptError, match=expected):
        ScriptedProvider(entries)


def test_load_script_from_a_plain_list(tmp_path):
    path = tmp_path / "script.yml"
    path.write_text(
        "- purpose: route\n"
        "  call: route_to\n"
        "  with: {agent: orders}\n"
        "- reply: Done.\n",
        encoding="utf-8",
    )
    provider = load_script(path)
    assert provider.remaining() == 2
    assert provider.complete(ask("x", "route")).tool_calls[0].arguments == {"agent": "orders"}
    assert provider.complete(ask("y")).content == "Done."


def test_load_script_from_a_mapping_with_llm_key(tmp_path):
    path = tmp_path / "conversation.yml"
    path.write_text(
        "user:\n"
        "  - hello\n"
        "llm:\n"
        "  - reply: Hi!\n"
        "    expect: hello\n"
        "notes: ignored\n",
        encoding="utf-8",
    )
    provider = load_script(str(path))
    assert provider.complete(ask("hello")).content == "Hi!"
    provider.assert_finished()


def test_load_script_reports_bad_entries_with_the_file(tmp_path):
    path = tmp_path / "bad.yml"
    path.write_text("llm:\n  - reply: ok\n  - call: f\n    whith: {a: 1}\n", encoding="utf-8")
    with pytest.raises(ScriptError, match=r"bad.yml: script entry 2 has unknown key 'whith'"):
        load_script(path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("llm: {reply: x}\n", "'llm' must be a list"),
        ("just a string\n", "must be a list of answers or a mapping"),
        ("- reply: [unclosed\n", "not valid YAML"),
    ],
)
def test_load_script_rejects_bad_documents(tmp_path, text, expected):
    path = tmp_path / "s.yml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ScriptError, match=expected):
        load_script(path)


def test_load_script_missing_file(tmp_path):
    with pytest.raises(ScriptError, match="cannot read script"):
        load_script(tmp_path / "nope.yml")
