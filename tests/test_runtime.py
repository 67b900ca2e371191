"""The turn engine on small ADL programs: each step kind, conditions, bindings, policies, errors, call economy."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from frontdesk.lang import load_program
from frontdesk.llm import ScriptedProvider
from frontdesk.runtime.engine import Engine, SessionNotFound
from frontdesk.runtime.state import SessionState
from frontdesk.lang.adl.returns import read_adl_return as normalise_return
from frontdesk.store.memory import MemorySessionStore
from frontdesk.store.sqlite import SqliteSessionStore
from frontdesk.testing import run_conversation

TOOLS = '''
def lookup(code: str):
    """Look a code up."""
    print("looked up " + code)
    if code == "boom":
        raise ValueError("database down")
    if code == "bad":
        return [{"status": "error", "msg": "unknown code"}]
    return [{"status": "success", "msg": "found"}, {"bot": "Code " + code + " is valid."},
            {"arg": "owner", "value": "Ada"}, {"arg": "count", "value": 3}]

def plain():
    """Returns a bare dict."""
    return {"colour": "blue"}
'''


def program(tmp_path: Path, text: str, tools: str | None = None):
    (tmp_path / "agents.yml").write_text(textwrap.dedent(text), encoding="utf-8")
    if tools is not None:
        (tmp_path / "tools.py").write_text(tools, encoding="utf-8")
    prog, diags = load_program(tmp_path)
    errors = [d.format() for d in diags if d.is_error]
    assert prog is not None and not errors, errors
    return prog


def said(run) -> list[str]:
    return run.bot_lines


def llm_calls(run) -> list[str]:
    return [e["data"]["purpose"] for e in run.events_of("llm_call")]


def test_bot_user_set_and_interpolation(tmp_path):
    prog = program(tmp_path, """
        main:
          type: flow agent
          args: [name, greeting]
          steps:
            - set:
                greeting: "Welcome"
                name: "Ada"
            - bot: "${greeting}, ${name}! ${main.name} again. It costs $5."
            - user
            - bot: "You said something."
    """)
    run = run_conversation(prog, ["hello"], None)
    assert said(run) == ["Welcome, Ada! Ada again. It costs $5.", "You said something."]
    assert run.turns[-1].ended  # the main flow finished
    assert llm_calls(run) == []


def test_expression_conditions_make_no_llm_call(tmp_path):
    prog = program(tmp_path, """
        main:
          type: flow agent
          args: [code, n]
          steps:
            - set:
                code: "AB-12"
                n: 3
            - if: code == None
              then:
                - bot: "none"
            - else if: re.match("[A-Z]+-[0-9]+", code) and n > 2 and not n >= 10
              then:
                - bot: "pattern ok"
              else:
                - bot: "no match"
            - if: n != 3 or code != "AB-12"
              then:
                - bot: "wrong"
              else:
                - bot: "values ok"
            - if: n < 3
              then:
                - bot: "small"
    """)
    run = run_conversation(prog, [], ScriptedProvider([]))
    assert said(run) == ["pattern ok", "values ok"]
    results = [(e["data"]["condition"], e["data"]["result"]) for e in run.events_of("condition_evaluated")]
    assert results[0] == ("code == None", False)
    assert results[1][1] is True
    assert llm_calls(run) == []


def test_all_claims_of_one_chain_take_a_single_call(tmp_path):
    prog = program(tmp_path, """
        main:
          type: flow agent
          steps:
            - bot: "How can I help?"
            - user
            - if: the user claims "I want to buy", "Order something"
              then:
                - bot: "buying"
            - else if: the user claims "Return an item"
              then:
                - bot: "returning"
            - else if: the user claims "Talk to a person"
              then:
                - bot: "human"
              else:
                - bot: "unknown"
    """)
    llm = ScriptedProvider([{"purpose": "understand", "expect": "Talk to a person",
                             "call": "understand", "with": {"choice": "3"}}])
    run = run_conversation(prog, ["can I speak to someone"], llm)
    assert said(run)[-1] == "human"
    assert llm_calls(run) == ["understand"]
    choices = llm.calls[0].tools[0].parameters["properties"]["choice"]["enum"]
    assert choices == ["1", "2", "3", "none"]


def test_none_choice_takes_else_and_unmatched_claims_without_else_fall_back(tmp_path):
    prog = program(tmp_path, """
        main:
          type: flow agent
          fallback: 'Reply with "Please answer yes or no."'
          steps:
            - bot: "Continue?"
            - user
            - if: the user claims "Yes"
              then:
                - bot: "going on"
            - else if: the user claims "No"
              then:
                - bot: "stopping"
            - bot: "end"
    """)
    llm = ScriptedProvider([
        {"call": "understand", "with": {"choice": "none"}},
        {"call": "understand", "with": {"choice": "2"}},
    ])
    run = run_conversation(prog, ["banana", "no"], llm)
    assert said(run) == ["Continue?", "Please answer yes or no.", "stopping", "end"]
    assert run.events_of("fallback")[0]["data"]["count"] == 1


def test_label_next_and_tries(tmp_path):
    prog = program(tmp_path, """
        main:
          type: flow agent
          args: [attempt]
          steps:
            - label: again
            - bot: "Enter the code"
            - user
            - if: attempt == None
              then:
                - next: again
                  tries: 2
                - bot: "Too many attempts."
    """)
    run = run_conversation(prog, ["1", "2", "3"], None)
    assert said(run) == ["Enter the code"] * 3 + ["Too many attempts."]
    exhausted = run.events_of("tries_exhausted")
    assert len(exhausted) == 1 and exhausted[0]["data"]["tries"] == 2


def test_subflows_call_return_and_status(tmp_path):
    prog = program(tmp_path, """
        main:
          type: flow agent
          args: [is_new, discount]
          steps:
            - begin
            - set:
                is_new: True
            - call: get_discount
            - if: get_discount.success
              then:
                - bot: "Discount ${discount}"
              else:
                - bot: "No discount"
            - next: farewell
            - end
            - begin: get_discount
            - if: is_new == True
              then:
                - set:
                    discount: 0.9
                - return: success, Load discount successful.
              else:
                - return: error, No discount applied.
            - end
            - begin: farewell
            - bot: "Bye"
            - end
    """)
    run = run_conversation(prog, [], None)
    assert said(run) == ["Discount 0.9", "Bye"]
    state = run.engine.load_state(run.session_id)
    assert state.results["main/get_discount"].status == "success"


def test_return_ends_the_agent_with_status_for_the_caller(tmp_path):
    prog = program(tmp_path, """
        main:
          type: flow agent
          steps:
            - call: check
            - if: check.error
              then:
                - bot: "check failed: ${check.message}"
        check:
          type: flow agent
          description: checks
          steps:
            - return: error, nothing to check
            - bot: "never said"
    """)
    run = run_conversation(prog, [], None)
    assert said(run) == ["check failed: nothing to check"]


def test_tool_call_with_args_and_return_convention(tmp_path):
    prog = program(tmp_path, """
        main:
          type: flow agent
          args: [owner, code]
          steps:
            - set:
                code: "X1"
            - call: lookup
              args:
                code: code
            - bot: "Owner ${lookup.owner} / mine ${owner}, count ${lookup.count}, status ${lookup.status}"
            - call: plain
            - bot: "Colour ${plain.colour}"
    """, TOOLS)
    run = run_conversation(prog, [], None)
    assert said(run) == ["Code X1 is valid.", "Owner Ada / mine Ada, count 3, status success", "Colour blue"]
    result = run.events_of("tool_result")[0]["data"]
    assert result["message"] == "looked up X1\nfound"  # printed output goes to the caller


def test_tool_errors_go_to_the_flow_not_to_a_traceback(tmp_path):
    prog = program(tmp_path, """
        main:
          type: flow agent
          steps:
            - call: lookup
              args:
                code: "boom"
            - if: lookup.error
              then:
                - bot: "Lookup failed: ${lookup.message}"
            - call: lookup
              args:
                code: "bad"
            - if: lookup.status == "error"
              then:
                - bot: "Second lookup: ${lookup.message}"
    """, TOOLS)
    run = run_conversation(prog, [], None)
    assert said(run)[0].startswith("Lookup failed: looked up boom")
    assert "ValueError" not in said(run)[0]  # the customer is not shown the exception ...
    assert said(run)[1] == "Second lookup: looked up bad\nunknown code"
    error = run.events_of("error")[0]["data"]
    assert error["where"] == "tool lookup" and "ValueError: database down" in error["message"]  # ... the log is


def test_normalise_return_reads_the_adl_convention():
    r = normalise_return([{"status": "error", "msg": "no"}, {"bot": "hi"}, {"arg": "a", "value": 1},
                          {"slot_name": "b", "value": 2}])
    assert (r.status, r.message, r.bot, r.args) == ("error", "no", ["hi"], {"a": 1, "b": 2})
    assert normalise_return({"error": "bad"}).status == "error"
    assert normalise_return("text").message == "text"
    assert normalise_return(None).status == "success"


ENSEMBLE = """
main:
  type: flow agent
  steps:
    - call: desk
desk:
  type: ensemble agent
  description: front desk
  args: [user_name, city]
  contains:
    - greeter:
        args:
          name: ref user_name
    - weather:
        args:
          place: city
    - faq
  steps:
    - set:
        user_name: "Ada"
        city: "Paris"
    - bot: "Hello!"
greeter:
  type: flow agent
  description: greets and renames the user
  args: [name]
  steps:
    - bot: "Hi ${name}, what should I call you?"
    - user
    - set:
        name: "Grace"
    - bot: "Noted, ${name}."
weather:
  type: flow agent
  description: tells the weather
  args: [place]
  steps:
    - bot: "Sunny in ${place}."
    - set:
        place: "Rome"
faq:
  type: kb agent
  description: answers questions
  faq:
    - q: What are your opening hours?
      a: We open at 9.
"""


def test_ensemble_routes_and_binds_arguments_both_ways(tmp_path):
    prog = program(tmp_path, ENSEMBLE)
    llm = ScriptedProvider([
        {"purpose": "route", "call": "route", "with": {"agent": "greeter"}},
        {"purpose": "route", "call": "route", "with": {"agent": "weather"}},
        {"purpose": "route", "call": "route", "with": {"agent": "faq"}},
    ])
    run = run_conversation(prog, ["hi", "call me Grace", "weather?", "What are your opening hours?"], llm)
    assert said(run) == ["Hello!", "Hi Ada, what should I call you?", "Noted, Grace.", "Sunny in Paris.",
                         "We open at 9."]
    state = run.engine.load_state(run.session_id)
    assert state.variables["desk"]["user_name"] == "Grace"  # `ref`: the member wrote the ensemble's argument
    assert state.variables["desk"]["city"] == "Paris"  # one-way: the member's change stays its own
    assert state.variables["weather"]["place"] == "Rome"
    assert llm_calls(run) == ["route", "route", "route"]  # the FAQ answer needs no model


def test_route_to_none_uses_the_ensemble_fallback_agent(tmp_path):
    text = ENSEMBLE.replace("  description: front desk\n", "  description: front desk\n  fallback: faq\n")
    prog = program(tmp_path, text)
    llm = ScriptedProvider([{"purpose": "route", "call": "route", "with": {"agent": "none"}}])
    run = run_conversation(prog, ["what are your opening hours"], llm)
    assert said(run)[-1] == "We open at 9."


def test_llm_failure_in_routing_apologises_and_keeps_the_session(tmp_path):
    prog = program(tmp_path, ENSEMBLE)
    llm = ScriptedProvider([{"purpose": "route", "error": "HTTP 500 from the model server"},
                            {"purpose": "route", "call": "route", "with": {"agent": "weather"}}])
    run = run_conversation(prog, ["weather?", "weather please"], llm)
    assert "trouble" in said(run)[1]
    assert said(run)[2] == "Sunny in Paris."
    assert run.events_of("error")[0]["data"]["where"] == "routing"


def test_reasoning_agent_fills_args_calls_tools_and_finishes(tmp_path):
    prog = program(tmp_path, """
        main:
          type: flow agent
          steps:
            - call: helper
            - bot: "Helper said ${helper.status}; code was ${helper.code}"
        helper:
          type: llm agent
          description: looks codes up
          args: [code, owner]
          prompt: Ask for a code and look it up with lookup.
          uses: [lookup]
    """, TOOLS)
    llm = ScriptedProvider([
        {"purpose": "reason", "reply": "Which code?"},
        {"purpose": "reason", "calls": [{"name": "set_args", "arguments": {"code": "Z9"}}]},
        {"purpose": "reason", "call": "lookup", "with": {}},
        {"purpose": "reason", "expect": "owner=", "reply": "Z9 belongs to Ada.",
         "calls": [{"name": "finish", "arguments": {"status": "success"}}]},
    ])
    run = run_conversation(prog, ["Z9 please"], llm)
    assert said(run) == ["Which code?", "Code Z9 is valid.", "Z9 belongs to Ada.",
                         "Helper said success; code was Z9"]
    called = run.events_of("tool_call")[0]["data"]
    assert called["args"] == {"code": "Z9"}  # filled from the agent's argument
    state = run.engine.load_state(run.session_id)
    assert state.variables["helper"]["owner"] == "Ada"
    # Before the user said anything the agent may only talk; afterwards it has its tools.
    assert llm.calls[0].tools == []
    schemas = {t.name for t in llm.calls[1].tools}
    assert schemas == {"lookup", "set_args", "finish", "hand_back"}


def test_an_llm_agent_started_before_any_user_message_runs_no_tool(tmp_path):
    prog = program(tmp_path, """
        main:
          type: flow agent
          steps:
            - call: helper
        helper:
          type: llm agent
          args: [code]
          prompt: Look codes up.
          uses: [lookup]
    """, TOOLS)
    llm = ScriptedProvider([
        # a model that acts before anyone asked: the call must not run
        {"purpose": "reason", "call": "lookup", "with": {"code": "your code here"}},
        {"purpose": "reason", "reply": "Hello! Which code should I look up?"},
    ])
    run = run_conversation(prog, [], llm)
    assert run.events_of("tool_call") == []
    assert said(run) == ["Hello! Which code should I look up?"]


def test_reasoning_agent_hands_back_and_resumes_later(tmp_path):
    prog = program(tmp_path, """
        main:
          type: flow agent
          steps:
            - call: desk
        desk:
          type: ensemble agent
          description: desk
          contains: [helper, faq]
        helper:
          type: llm agent
          description: looks codes up
          args: [code]
          prompt: Ask for a code.
        faq:
          type: kb agent
          description: answers questions
          faq:
            - q: What are your opening hours?
              a: We open at 9.
    """)
    llm = ScriptedProvider([
        {"purpose": "route", "call": "route", "with": {"agent": "helper"}},
        {"purpose": "reason", "reply": "Which code?"},
        {"purpose": "reason", "call": "hand_back", "with": {"reason": "opening hours"}},
        {"purpose": "route", "expect": "faq", "call": "route", "with": {"agent": "faq"}},
    ])
    run = run_conversation(prog, ["look up a code", "What are your opening hours?"], llm)
    assert said(run) == ["Which code?", "We open at 9.", "Which code?"]
    route_tools = llm.calls[-1].tools[0].parameters["properties"]["agent"]["enum"]
    assert "helper" not in route_tools  # the agent that handed back is not offered again
    assert [e["agent"] for e in run.events_of("agent_resumed")] == ["helper"]


def test_fallback_policy_naming_an_agent_and_exit_policy(tmp_path):
    prog = program(tmp_path, """
        main:
          type: flow agent
          steps:
            - call: asker
        asker:
          type: flow agent
          description: asks
          fallback: helpdesk
          exit: goodbye
          steps:
            - bot: "Yes or no?"
            - user
            - if: the user claims "yes"
              then:
                - bot: "Great"
        helpdesk:
          type: flow agent
          description: explains
          steps:
            - bot: "Please just say yes or no."
        goodbye:
          type: flow agent
          description: says goodbye
          steps:
            - bot: "Goodbye!"
    """)
    llm = ScriptedProvider([{"call": "understand", "with": {"choice": "none"}},
                            {"call": "understand", "with": {"choice": "1"}}])
    run = run_conversation(prog, ["hmm", "yes"], llm)
    assert said(run) == ["Yes or no?", "Please just say yes or no.", "Great", "Goodbye!"]


def test_arguments_are_extracted_only_where_the_flow_reads_them(tmp_path):
    prog = program(tmp_path, """
        main:
          type: flow agent
          args: [amount, note]
          steps:
            - bot: "How much?"
            - user
            - if: amount != None
              then:
                - bot: "Sending ${amount}."
            - bot: "Anything else?"
            - user
            - set:
                note: "done"
            - bot: "${note}"
    """)
    llm = ScriptedProvider([{"purpose": "understand", "expect": "amount", "call": "understand",
                             "with": {"args": {"amount": 25}}}])
    run = run_conversation(prog, ["twenty-five pounds", "no"], llm)
    assert said(run) == ["How much?", "Sending 25.", "Anything else?", "done"]
    assert llm_calls(run) == ["understand"]  # the second answer is never read: no call


def test_infinite_loop_without_user_step_is_stopped(tmp_path):
    prog = program(tmp_path, """
        main:
          type: flow agent
          steps:
            - label: top
            - bot: "again"
            - next: top
    """)
    run = run_conversation(prog, [], None)
    assert run.events_of("error")
    assert len(said(run)) < 600


def test_state_is_plain_json_and_survives_a_new_process(tmp_path):
    prog = program(tmp_path, ENSEMBLE)
    db = tmp_path / "s.sqlite3"
    llm = ScriptedProvider([{"call": "route", "with": {"agent": "greeter"}}])
    first = Engine(prog, llm, SqliteSessionStore(db))
    sid = first.start().session_id
    first.send(sid, "hi")
    # A second engine (as in another process) continues the conversation from the store alone.
    second = Engine(prog, ScriptedProvider([]), SqliteSessionStore(db))
    result = second.send(sid, "call me Grace")
    assert [m.text for m in result.messages] == ["Noted, Grace."]
    raw = SqliteSessionStore(db).load(sid)
    assert SessionState.model_validate(raw).history[-1].text == "Noted, Grace."
    with pytest.raises(SessionNotFound):
        second.send("missing", "hi")


def test_same_answers_give_the_same_turns(tmp_path):
    prog = program(tmp_path, ENSEMBLE)

    def once():
        llm = ScriptedProvider([{"call": "route", "with": {"agent": "greeter"}}])
        run = run_conversation(prog, ["hi", "Grace"], llm, store=MemorySessionStore())
        # what was decided, not how long it took: timings are measurements (duration_ms of calls)
        return [(e["type"], e["agent"], {k: v for k, v in e["data"].items()
                                         if k != "messages" and not k.startswith("duration")})
                for e in run.events if e["type"] != "session_started"]

    assert once() == once()


def test_extractive_answer_quotes_the_best_sentences_without_a_model():
    from frontdesk.runtime.answering import extractive_answer
    from frontdesk.runtime.retrieval.index import Passage

    passages = [
        Passage("# Returns\nYou can return any book within 30 days of delivery. Gift cards are never refunded. "
                "| Option | Fee |", "returns.md", 1.0),
        Passage("Our shops open at 9 am on weekdays and close at 8 pm.", "hours.md", 0.4),
    ]
    answer = extractive_answer("Can I return a book after 30 days?", passages)
    assert answer.startswith("You can return any book within 30 days of delivery.")
    assert "|" not in answer and "# Returns" not in answer


class FixedUnderstanding:
    """A stand-in for the embedding model: answers each message from a table."""

    name = "fixed"

    def __init__(self, table, scores=None):
        self.table = table  # message -> (choice, sure)
        self.scores = scores or {}
        self.asked = []

    def decide(self, message, options, task, thresholds=None):
        from frontdesk.nlu.base import Decision

        self.asked.append((task, message, [o.key for o in options], thresholds))
        choice, sure = self.table[message]
        return Decision(choice=choice, score=0.9 if sure else 0.5, margin=0.3 if sure else 0.01, sure=sure,
                        best=choice, scores=dict(self.scores))


def test_sure_embedding_decisions_skip_the_llm_and_unsure_ones_ask_it(tmp_path):
    prog = program(tmp_path, ENSEMBLE)
    nlu = FixedUnderstanding({"greet me": ("greeter", True), "hmm weather?": ("weather", False)})
    llm = ScriptedProvider([{"purpose": "route", "call": "route", "with": {"agent": "weather"}}])
    run = run_conversation(prog, ["greet me", "Grace", "hmm weather?"], llm, understanding=nlu)
    routes = [(e["data"]["agent"], e["data"]["by"]) for e in run.events_of("route_decided")]
    assert routes == [("greeter", "embedding"), ("weather", "llm")]
    assert llm_calls(run) == ["route"]  # only the unsure decision cost a call


def test_unsure_routing_with_no_llm_to_ask_asks_the_user_instead_of_guessing(tmp_path):
    prog = program(tmp_path, ENSEMBLE)
    scores = {"greeter": 0.31, "weather": 0.36, "faq": 0.1}
    nlu = FixedUnderstanding({"hmm weather?": ("weather", False), "the second one": ("greeter", False)},
                             scores=scores)
    llm = ScriptedProvider([])
    llm.can_classify = False  # like the small local model
    run = run_conversation(prog, ["hmm weather?", "the second one"], llm, understanding=nlu)
    question = run.turns[1].messages[-1].text
    assert question.startswith("Just to be sure I understand") and "tells the weather" in question
    assert "greets and renames the user" in question
    assert said(run)[-1] == "Hi Ada, what should I call you?"
    assert run.events_of("route_decided")[-1]["data"]["by"] == "embedding, after a clarifying question"


def test_unsure_claims_with_no_llm_to_ask_are_none_not_a_guess(tmp_path):
    prog = program(tmp_path, """
        main:
          type: flow agent
          steps:
            - bot: "Was it lost or expired?"
            - user
            - if: the user claims "It expired"
              then:
                - bot: "expired branch"
              else:
                - bot: "Sorry, which was it?"
    """)
    nlu = FixedUnderstanding({"I just don't like the colour": ("1", False)})
    llm = ScriptedProvider([])
    llm.can_classify = False
    run = run_conversation(prog, ["I just don't like the colour"], llm, understanding=nlu)
    assert said(run)[-1] == "Sorry, which was it?"


def test_claims_decided_by_embedding_and_program_thresholds_reach_the_model(tmp_path):
    prog = program(tmp_path, """
        main:
          type: flow agent
          steps:
            - bot: "Continue?"
            - user
            - if: the user claims "Yes"
              then:
                - bot: "going on"
              else:
                - bot: "stopping"
    """)
    (tmp_path / "config.yml").write_text("understanding:\n  claims:\n    accept: 0.8\n", encoding="utf-8")
    prog, _ = load_program(tmp_path)
    assert prog.settings.understanding["claims"].accept == 0.8
    nlu = FixedUnderstanding({"sure thing": ("1", True)})
    run = run_conversation(prog, ["sure thing"], ScriptedProvider([]), understanding=nlu)
    assert said(run)[-1] == "going on"
    assert llm_calls(run) == []
    task, _, keys, thresholds = nlu.asked[0]
    assert (task, keys) == ("claims", ["1"])
    assert thresholds.accept == 0.8 and thresholds.margin is not None


def test_bad_understanding_thresholds_are_diagnostics(tmp_path):
    (tmp_path / "agents.yml").write_text("main:\n  type: flow agent\n  steps:\n    - bot: hi\n", encoding="utf-8")
    (tmp_path / "config.yml").write_text("understanding:\n  claim:\n    accept: 2\n", encoding="utf-8")
    _, diags = load_program(tmp_path)
    assert any(d.is_error and "claims" in (d.hint or "") for d in diags)


def test_a_tool_that_hangs_becomes_an_error_after_the_time_limit(tmp_path):
    from frontdesk.runtime.tools import PythonToolRunner

    prog = program(tmp_path, """
        main:
          type: flow agent
          steps:
            - call: slow
            - if: slow.error
              then:
                - bot: "Timed out: ${slow.message}"
    """, 'import time\n\ndef slow():\n    """Sleeps."""\n    print("starting")\n    time.sleep(5)\n')
    engine = Engine(prog, None, MemorySessionStore(), tools=PythonToolRunner(prog, timeout=0.3))
    result = engine.start()
    [message] = [m.text for m in result.messages]
    assert message.startswith("Timed out: starting\n") and "0.3 seconds" not in message
    errors = [e for e in engine.store.events(result.session_id) if e["type"] == "error"]
    assert "slow did not finish within 0.3 seconds" in errors[0]["data"]["message"]


def test_a_session_survives_a_changed_program(tmp_path):
    first = program(tmp_path, """
        main:
          type: flow agent
          steps:
            - bot: "Name?"
            - user
            - bot: "Thanks"
    """)
    store = MemorySessionStore()
    sid = Engine(first, None, store).start().session_id
    same_shape = program(tmp_path, """
        main:
          type: flow agent
          steps:
            - bot: "What is your name?"
            - user
            - bot: "Thank you"
    """)
    result = Engine(same_shape, None, store).send(sid, "Ada")  # the `user` step still exists: go on
    assert [m.text for m in result.messages] == ["Thank you"]
    sid = Engine(first, None, store).start().session_id
    changed = program(tmp_path, """
        main:
          type: flow agent
          steps:
            - bot: "Welcome back."
    """)
    result = Engine(changed, None, store).send(sid, "Ada")  # the `user` step is gone: start over
    assert [m.text for m in result.messages] == ["Welcome back."]
    assert any("starts over" in e.data.get("message", "") for e in result.events if e.type == "warning")


def test_an_llm_agent_sees_a_bounded_transcript_that_starts_at_a_user_message():
    from frontdesk.runtime.reasoning import recent

    transcript = []
    for i in range(40):
        transcript += [{"role": "user", "content": f"u{i}"},
                       {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "name": "t"}]},
                       {"role": "tool", "content": "ok", "tool_call_id": f"c{i}"}]
    kept = recent(transcript, 10)
    assert len(kept) <= 10 and kept[0]["role"] == "user" and kept[-1] == transcript[-1]
    assert recent(transcript[:6], 10) == transcript[:6]


def test_events_go_to_every_subscriber_and_a_broken_one_does_not_break_the_turn():
    import warnings

    from frontdesk.runtime.events import EVENT_TYPES, EventLog, EventTypeWarning, register_event_type

    seen_a, seen_b = [], []

    def broken(event):
        raise RuntimeError("exporter down")

    log = EventLog(0, 1, subscribers=[seen_a.append, broken])
    log.subscribe(seen_b.append)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        log.emit("bot_message", "main", text="hello")
    assert [e.type for e in seen_a] == [e.type for e in seen_b] == ["bot_message"]
    assert any("exporter down" in str(w.message) for w in caught)
    # the registry is open: a new kind of event is declared with the fields it carries
    log = EventLog(0, 1)
    register_event_type("constraint_failed", "a constraint did not hold", ("constraint",))
    assert EVENT_TYPES["constraint_failed"].fields == ("constraint",)
    log.emit("constraint_failed", "main", constraint="amount > 0")
    with pytest.raises(EventTypeWarning, match="lacks constraint"):
        log.emit("constraint_failed", "main")
    with pytest.raises(EventTypeWarning, match="unknown event type"):
        log.emit("no_such_event", "main")
    with pytest.raises(ValueError, match="already registered differently"):
        register_event_type("bot_message", "something else")
