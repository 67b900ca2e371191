"""The deeper checks of `frontdesk check` (frontdesk.analysis.lint): each finding on a small program that
has the bug, nothing on the same program without it, and the command's output."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from test_llm_openai import completion
from typer.testing import CliRunner

from frontdesk.analysis.agentgraph import agent_graph
from frontdesk.analysis.lint import lint_program
from frontdesk.cli import app
from frontdesk.lang import load_program

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return folder


def findings(folder: Path) -> list:
    program, diags = load_program(folder)
    assert program is not None and not [d for d in diags if d.is_error], [d.format() for d in diags]
    return lint_program(program, cycle_code="ADL041" if program.language == "adl" else "FD041")


def codes(folder: Path) -> list[str]:
    return [d.code for d in findings(folder)]


BANK = """
main:
  type: ensemble agent
  contains:
    - transfer_money
    - add_payee
  exit: default

transfer_money:
  type: llm agent
  description: Sends money to a payee.
  prompt: |
    1. Ask for the payee's name.
    2. If the payee does not exist, prompt the user to enter the "add payee" agent and exit this agent.
    3. Ask for the amount and confirm the transfer.
  args: [payee_name, amount]

add_payee:
  type: llm agent
  description: Adds a payee.
  prompt: |
    1. Ask for the payee's name and account number.
    2. Ask the user if they need to make a transfer; if so, enter the transfer_money agent.
  args: [payee_name, account_number]
"""


def test_the_papers_transfer_money_add_payee_loop_is_found_with_its_path(tmp_path):
    found = findings(write(tmp_path / "bank", {"agents.yml": BANK}))
    cycles = [d for d in found if d.code == "ADL041"]
    assert len(cycles) == 1
    assert "transfer_money -> add_payee -> transfer_money" in cycles[0].message
    assert "ends only when" in cycles[0].message  # both edges depend on a condition in the prompt
    assert len(cycles[0].notes) == 2
    lines = BANK.lstrip().splitlines()
    first = next(i for i, line in enumerate(lines, 1) if "add payee" in line)
    second = next(i for i, line in enumerate(lines, 1) if "if so, enter" in line)
    assert f"agents.yml:{first}:" in cycles[0].notes[0] and "enter the \"add payee\" agent" in cycles[0].notes[0]
    assert f"agents.yml:{second}:" in cycles[0].notes[1] and "if so, enter the transfer_money agent" in cycles[0].notes[1]
    assert cycles[0].span.line == first  # the sentence of the prompt, not the agent's first line


def test_without_the_way_back_there_is_no_cycle(tmp_path):
    fixed = BANK.replace("Ask the user if they need to make a transfer; if so, enter the transfer_money agent.",
                         "Tell the user the payee was added, then exit this agent.")
    assert "ADL041" not in codes(write(tmp_path / "bank", {"agents.yml": fixed}))


def test_a_member_sent_back_to_its_ensemble_is_not_a_cycle(tmp_path):
    program = BANK.replace("Ask the user if they need to make a transfer; if so, enter the transfer_money agent.",
                           "When you are done, go back to the main agent.")
    edges = agent_graph(load_program(write(tmp_path / "bank", {"agents.yml": program}))[0])
    assert any(e.kind == "member" and e.target == "add_payee" for e in edges)
    assert not any(e.source == "add_payee" and e.target == "main" for e in edges)  # a hand-back is no edge
    assert "ADL041" not in codes(tmp_path / "bank")


def test_flows_calling_each_other_unconditionally_have_nothing_that_breaks_the_cycle(tmp_path):
    folder = write(tmp_path / "calls", {"agents.yml": """
        main:
          type: flow agent
          steps:
            - call: a
        a:
          type: flow agent
          description: A.
          steps:
            - bot: "In a."
            - user
            - call: b
        b:
          type: flow agent
          description: B.
          steps:
            - bot: "In b."
            - call: a
        """})
    cycle = next(d for d in findings(folder) if d.code == "ADL041")
    assert "agents call each other in a cycle: a -> b -> a" in cycle.message
    assert "nothing breaks it" in cycle.message
    assert all("every time" in note for note in cycle.notes)


def test_a_conditional_call_names_its_condition(tmp_path):
    folder = write(tmp_path / "calls", {"agents.yml": """
        main:
          type: flow agent
          steps:
            - call: a
        a:
          type: flow agent
          description: A.
          args: [again]
          steps:
            - bot: "Again?"
            - user
            - if: the user claims "yes, once more"
              then:
                - call: a
            - return: success
        """})
    cycle = next(d for d in findings(folder) if d.code == "ADL041")
    assert "agent 'a' calls itself" in cycle.message
    assert 'only if the user claims "yes, once more"' in cycle.notes[0]


def test_exits_that_pass_control_round_without_a_user_step_are_fd044(tmp_path):
    folder = write(tmp_path / "ping", {"agents.yml": """
        main:
          type: flow agent
          steps:
            - call: ping
        ping:
          type: flow agent
          description: Ping.
          exit: pong
          steps:
            - bot: "ping"
        pong:
          type: flow agent
          description: Pong.
          exit: ping
          steps:
            - bot: "pong"
        """})
    found = findings(folder)
    assert [d.code for d in found].count("FD044") == 1
    assert "ping -> pong -> ping" in next(d for d in found if d.code == "FD044").message
    # the same pair with a question in one of them waits for the user: no longer FD044
    text = (folder / "agents.yml").read_text().replace('- bot: "pong"', '- bot: "pong?"\n    - user')
    (folder / "agents.yml").write_text(text)
    assert "FD044" not in codes(folder)


LOOP = """
main:
  type: flow agent
  args: [status]
  steps:
    - label: poll
    - call: check_status
    - set:
        status: check_status.state
    - if: status == "done"
      then:
        - bot: "Done."
        - return: success
    - bot: "Still working."
    - next: poll{tries}
"""
TOOLS = '''
def check_status():
    return {"state": "pending"}
'''


def test_a_loop_with_no_user_step_and_no_tries_is_fd045(tmp_path):
    found = findings(write(tmp_path / "loop", {"agents.yml": LOOP.format(tries=""), "tools.py": TOOLS}))
    loop = next(d for d in found if d.code == "FD045")
    assert "can repeat forever" in loop.message and 'if status == "done"' in loop.message
    assert loop.span.line == 14  # the next: that closes the loop
    assert any("call: check_status" in n for n in loop.notes) and any("next: poll" in n for n in loop.notes)


def test_tries_or_a_user_step_or_a_counter_bound_the_loop(tmp_path):
    bounded = LOOP.format(tries="\n      tries: 3")
    assert "FD045" not in codes(write(tmp_path / "tries", {"agents.yml": bounded, "tools.py": TOOLS}))
    asking = LOOP.format(tries="").replace('    - bot: "Still working."', '    - bot: "Still working. Wait?"\n    - user')
    assert "FD045" not in codes(write(tmp_path / "user", {"agents.yml": asking, "tools.py": TOOLS}))


def test_labels_arguments_and_tools(tmp_path):
    folder = write(tmp_path / "misc", {"agents.yml": """
        main:
          type: flow agent
          args: [name]
          steps:
            - call: order
        order:
          type: flow agent
          description: Orders.
          args: [item, note, size]
          steps:
            - label: start
            - bot: "Your ${size} ${item}?"
            - set:
                note: "seen"
            - return: success
        helper:
          type: llm agent
          description: Helps.
          prompt: |
            Call "lookup_stock" with the item, then answer.
          uses: [get_price]
        """, "tools.py": '''
        def lookup_stock(item):
            return {"count": 1}

        def get_price(item):
            return {"price": 1}
        '''})
    found = {(d.code, d.message.split("'")[1]) for d in findings(folder)}
    assert ("FD046", "start") in found  # the label nothing jumps to
    assert ("FD047", "item") in found and ("FD047", "size") in found  # read, never given a value
    assert ("FD048", "note") in found  # set, never read
    assert ("FD050", "helper") in found  # told to call lookup_stock, which it is not given
    assert not any(code == "FD047" and arg == "name" for code, arg in found)  # the entry's may come from a host


def test_an_argument_a_caller_passes_or_a_user_step_fills_is_set(tmp_path):
    folder = write(tmp_path / "ok", {"agents.yml": """
        main:
          type: flow agent
          steps:
            - call: order
              args:
                item: "tea"
        order:
          type: flow agent
          description: Orders.
          args: [item, size]
          steps:
            - bot: "Which size?"
            - user
            - bot: "A ${size} ${item}."
        """})
    assert codes(folder) == []


ABL_STEPS = """
AGENT: Shop
GOAL: "Take an order"

TOOLS:
  place(item: string) -> {id: string}
  refund(id: string) -> {ok: boolean}

GATHER:
  item:
    prompt: "What would you like?"
    type: string
  colour:
    prompt: "Which colour?"
    type: string

FLOW:
  ask -> review -> order

  ask:
    GATHER:
      - item: required
    THEN: order

  review:
    RESPOND: "You chose {{item}}."
    THEN: order

  order:
    CALL: place(item)
    ON_SUCCESS:
      RESPOND: "Order {{place.id}} placed."
      THEN: COMPLETE
"""


def test_abl_unreached_step_unused_tool_and_unasked_field(tmp_path):
    found = findings(write(tmp_path / "shop", {"shop.agent.abl": ABL_STEPS}))
    by_code = {d.code: d for d in found}
    assert set(by_code) == {"FD040", "FD049", "FD051", "FD054"}  # FD054: its tools have no implementation
    assert "FLOW step 'review'" in by_code["FD040"].message
    assert "step 'ask', written before it, goes on to order" in by_code["FD040"].notes[0]
    assert by_code["FD040"].span.line == 24  # "  review:" under FLOW:
    assert "'refund'" in by_code["FD049"].message
    assert "'colour'" in by_code["FD051"].message
    fixed = ABL_STEPS.replace("    THEN: order\n\n  review", "    THEN: review\n\n  review").replace(
        "  refund(id: string) -> {ok: boolean}\n", "").replace("      - item: required", "      - item: required\n      - colour: optional")
    assert codes(write(tmp_path / "fixed", {"shop.agent.abl": fixed})) == ["FD054"]  # still unimplemented


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir()))
def test_the_examples_are_clean(example):
    assert codes(EXAMPLES / example) == []


# ---- the command --------------------------------------------------------------------------------------------


def test_check_prints_the_finding_with_its_notes_and_still_exits_0(tmp_path):
    folder = write(tmp_path / "bank", {"agents.yml": BANK})
    result = CliRunner().invoke(app, ["check", str(folder)])
    assert result.exit_code == 0, result.output
    assert "warning[ADL041]" in result.output and "note:" in result.output
    assert "transfer_money -> add_payee -> transfer_money" in result.output
    quiet = CliRunner().invoke(app, ["check", str(folder), "--no-analysis"])
    assert "ADL041" not in quiet.output


def test_check_json_carries_the_notes(tmp_path):
    folder = write(tmp_path / "bank", {"agents.yml": BANK})
    result = CliRunner().invoke(app, ["check", str(folder), "--format", "json"])
    found = [d for d in json.loads(result.stdout) if d["code"] == "ADL041"]
    assert len(found) == 1 and len(found[0]["notes"]) == 2


def test_check_llm_asks_the_papers_question_and_shows_the_answer(tmp_path, chat_server, monkeypatch):
    answer = "Yes: transfer_money enters add_payee, which can enter transfer_money again."
    chat_server.behaviour = lambda body, attempt: (200, completion(content=answer), {})
    monkeypatch.setenv("FRONTDESK_LLM_BASE_URL", chat_server.base_url)
    monkeypatch.setenv("FRONTDESK_LLM_API_KEY", "test-key")
    folder = write(tmp_path / "bank", {"agents.yml": BANK})
    result = CliRunner().invoke(app, ["check", str(folder), "--llm", "--format", "json"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["llm_review"]["answer"] == answer
    assert any(d["code"] == "ADL041" for d in body["diagnostics"])
    sent = chat_server.last_body["messages"][-1]["content"]
    assert "Is there any infinite loop in the logic of this chatbot?" in sent
    assert "# file: agents.yml" in sent and "enter the transfer_money agent" in sent


def test_check_llm_without_an_endpoint_says_so(tmp_path, monkeypatch):
    for var in ("FRONTDESK_LLM_BASE_URL", "OPENAI_BASE_URL", "FRONTDESK_LLM_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    folder = write(tmp_path / "bank", {"agents.yml": BANK})
    result = CliRunner().invoke(app, ["check", str(folder), "--llm"])
    assert result.exit_code == 2
    assert "--llm" in result.output and "endpoint" in result.output


def test_check_llm_with_a_failing_endpoint_reports_it(tmp_path, chat_server, monkeypatch):
    chat_server.behaviour = lambda body, attempt: (400, {"error": {"message": "bad request"}}, {})
    monkeypatch.setenv("FRONTDESK_LLM_BASE_URL", chat_server.base_url)
    monkeypatch.setenv("FRONTDESK_LLM_API_KEY", "test-key")
    result = CliRunner().invoke(app, ["check", str(write(tmp_path / "bank", {"agents.yml": BANK})), "--llm"])
    assert result.exit_code == 2 and "review call failed" in result.output
