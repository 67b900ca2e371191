"""Cost that stays flat as programs and knowledge grow (issue 29): a call lists a shortlist of a big
router's members, a "none" from the shortlist asks once more with the next members, and knowledge
indexes and phrases are kept on disk for the next process."""

from __future__ import annotations

from pathlib import Path

import yaml

from frontdesk.app import knowledge_for
from frontdesk.lang import load_program
from frontdesk.llm.scripted import ScriptedProvider
from frontdesk.runtime import options
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.retrieval import cache
from frontdesk.runtime.shortlist import SHORTLIST
from frontdesk.store.memory import MemorySessionStore

SUBJECTS = ["gym membership", "mobile plan", "energy tariff", "car insurance", "savings account", "train ticket",
            "hotel booking", "library card", "boiler service", "gift card", "parking permit", "pet insurance"]


NO_CASE = {"purpose": "understand", "call": "understand", "with": {"choice": "none"}}


def big_desk(folder: Path, last: str = "track_parcel", fillers: int = 24) -> Path:
    """An ensemble of `fillers` + 1 members (25 by default); `track_parcel` (the one the tests route to) is
    listed last."""
    agents: dict = {"main": {"type": "flow agent", "description": "Entry.", "steps": [{"call": "desk"}]}}
    members = []
    for i in range(fillers):
        subject = SUBJECTS[i % len(SUBJECTS)]
        action = ("cancel", "renew", "change", "close")[i // len(SUBJECTS)]
        name = f"{action}_{subject.replace(' ', '_')}"
        members.append(name)
        agents[name] = {"type": "flow agent", "description": f"I can {action} your {subject}.",
                        "steps": [{"bot": f"Shall I {action} your {subject}?"}, "user",
                                  {"if": 'the user claims "Yes"', "then": [{"bot": "Done."}, {"return": "success"}],
                                   "else": [{"bot": "Fine."}, {"return": "success"}]}]}
    members.append(last)
    agents[last] = {"type": "flow agent", "description": "I can track a parcel delivery and say when it arrives.",
                    "steps": [{"bot": "What is your parcel's tracking number?"}, "user",
                              {"if": 'the user claims "It is 12345", "I do not have it"',
                               "then": [{"bot": "Thanks, I'm looking it up."}, {"return": "success"}]}]}
    agents["desk"] = {"type": "ensemble agent", "description": "Select an agent to respond to the user.",
                      "contains": members, "steps": [{"bot": "Hello, how can I help?"}]}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "agents.yml").write_text(yaml.safe_dump(agents, sort_keys=False), encoding="utf-8")
    return folder


def engine_for(folder: Path, script: list[dict]) -> tuple[Engine, ScriptedProvider, str]:
    program, diagnostics = load_program(folder)
    assert program is not None, diagnostics
    llm = ScriptedProvider(script)
    engine = Engine(program, llm, MemorySessionStore())
    return engine, llm, engine.start().session_id


def listed_agents(request) -> list[str]:
    schema = request.tools[0].parameters["properties"]["agent"]
    return [name for name in schema["enum"] if name != "none"]


def said(result) -> list[str]:
    return [e.data.get("text") for e in result.events if e.type == "bot_message"]


def test_a_routing_call_of_a_big_router_lists_a_shortlist_that_holds_the_member_the_words_point_to(tmp_path):
    engine, llm, session = engine_for(big_desk(tmp_path / "desk"), [
        {"purpose": "route", "call": "route", "with": {"agent": "track_parcel"}}, NO_CASE])
    result = engine.send(session, "Can you track my parcel delivery?")
    listed = listed_agents(llm.calls[0])
    assert "track_parcel" in listed  # listed last in the program, first by its words
    assert len(listed) <= SHORTLIST < 25
    assert "What is your parcel's tracking number?" in said(result)
    assert any(e.type == "step" and e.data.get("action") == "shortlisted the members a call lists"
               for e in result.events)


def test_none_from_the_shortlist_asks_once_more_with_the_next_members(tmp_path):
    engine, llm, session = engine_for(big_desk(tmp_path / "desk"), [
        {"purpose": "route", "call": "route", "with": {"agent": "none"}},
        {"purpose": "route", "call": "route", "with": {"agent": "track_parcel"}}, NO_CASE])
    result = engine.send(session, "Where on earth is my stuff?")  # no word of any member's
    first, second = listed_agents(llm.calls[0]), listed_agents(llm.calls[1])
    assert "track_parcel" not in first and "track_parcel" in second
    assert not set(first) & set(second)
    assert "What is your parcel's tracking number?" in said(result)


def test_the_second_call_offers_every_member_of_a_router_of_up_to_64(tmp_path):
    # "Where on earth is my stuff?" has no word of any member's: the shortlist is the program's first 8,
    # and the member it is for is the 41st (before, the second call listed the next 24 only)
    engine, llm, session = engine_for(big_desk(tmp_path / "desk", fillers=40), [
        {"purpose": "route", "call": "route", "with": {"agent": "none"}},
        {"purpose": "route", "call": "route", "with": {"agent": "track_parcel"}}, NO_CASE])
    result = engine.send(session, "Where on earth is my stuff?")
    first, second = listed_agents(llm.calls[0]), listed_agents(llm.calls[1])
    assert len(first) == SHORTLIST and len(first) + len(second) == 41
    assert "What is your parcel's tracking number?" in said(result)


def test_a_router_of_few_members_lists_them_all(tmp_path):
    folder = big_desk(tmp_path / "desk")
    data = yaml.safe_load((folder / "agents.yml").read_text(encoding="utf-8"))
    data["desk"]["contains"] = data["desk"]["contains"][-SHORTLIST:]
    (folder / "agents.yml").write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    engine, llm, session = engine_for(folder, [{"purpose": "route", "call": "route", "with": {"agent": "none"}}])
    engine.send(session, "Where on earth is my stuff?")
    assert len(listed_agents(llm.calls[0])) == SHORTLIST
    assert len(llm.calls) == 1  # nothing left out: no second call


def test_a_topic_switch_in_a_flow_of_a_big_router_offers_a_shortlist(tmp_path):
    engine, llm, session = engine_for(big_desk(tmp_path / "desk"), [
        {"purpose": "route", "call": "route", "with": {"agent": "track_parcel"}}, NO_CASE, NO_CASE])
    engine.send(session, "Can you track my parcel delivery?")
    engine.send(session, "Actually I want to cancel my gym membership instead")
    understand = [r for r in llm.calls if r.purpose == "understand"][-1]  # the second message's
    choices = understand.tools[0].parameters["properties"].get("choice", {}).get("enum", [])
    switches = [c for c in choices if c.startswith("switch:")]
    assert "switch:cancel_gym_membership" in switches
    assert len(switches) <= SHORTLIST


def knowledge_folder(folder: Path) -> Path:
    docs = folder / "docs"
    docs.mkdir(parents=True)
    for i in range(30):
        (docs / f"rule_{i:02d}.md").write_text(f"# Rule {i}\n\n## How long do returns take for case {i}?\n\n"
                                               f"Returns of case {i} take {i % 7 + 1} days.\n", encoding="utf-8")
    (folder / "agents.yml").write_text(yaml.safe_dump({
        "main": {"type": "flow agent", "steps": [{"call": "desk"}]},
        "desk": {"type": "ensemble agent", "description": "Pick.", "contains": ["policies"]},
        "policies": {"type": "kb agent", "description": "Store policies.", "sources": ["docs/"]},
    }, sort_keys=False), encoding="utf-8")
    return folder


def test_a_knowledge_index_searched_by_words_is_kept_for_the_next_process(tmp_path):
    program, _ = load_program(knowledge_folder(tmp_path / "kb"))
    first = knowledge_for(program, None).index(program.agents["policies"])
    again = knowledge_for(program, None).index(program.agents["policies"])  # a new cache: as a new process
    assert not first.loaded_from_cache and again.loaded_from_cache
    question = "how long do returns take for case 17"
    assert [p.text for p in again.search(question)] == [p.text for p in first.search(question)]
    assert "case 17" in again.search(question)[0].text


def test_a_changed_document_is_indexed_again(tmp_path):
    folder = knowledge_folder(tmp_path / "kb")
    program, _ = load_program(folder)
    knowledge_for(program, None).index(program.agents["policies"])
    (folder / "docs" / "rule_03.md").write_text("# Rule 3\n\nReturns of case 3 take forty days.\n", encoding="utf-8")
    again = knowledge_for(program, None).index(program.agents["policies"])
    assert not again.loaded_from_cache
    assert "forty days" in again.search("forty days")[0].text


def test_the_phrases_of_a_knowledge_agent_are_read_once_and_kept(tmp_path, monkeypatch):
    folder = knowledge_folder(tmp_path / "kb")
    program, _ = load_program(folder)
    agent = program.agents["policies"]
    phrases = options.cached_knowledge_phrases(agent, folder)
    assert "How long do returns take for case 17?" in phrases
    cache._kept_phrases.clear()  # as in a new process

    def unread(*_args):
        raise AssertionError("the documents were read again")

    monkeypatch.setattr(options, "knowledge_phrases", unread)
    assert options.cached_knowledge_phrases(agent, folder) == phrases
