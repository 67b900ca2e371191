"""ADL lowering: each step kind, chains, subflows, calls, ensembles, KB sources, tools, config, spans, ids."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from frontdesk.ir.models import (
    AssignNode,
    BranchNode,
    ClaimsCondition,
    ExprCondition,
    ExprPart,
    FlowAgent,
    InvokeNode,
    JumpNode,
    KnowledgeAgent,
    ListenNode,
    Lit,
    Program,
    ReasoningAgent,
    Ref,
    ReturnNode,
    RouterAgent,
    SayNode,
)
from frontdesk.lang import load_program
from frontdesk.lang.adl import load_adl
from frontdesk.lang.adl.tools import docstring_arg_descriptions, docstring_summary


def write(folder: Path, text: str, name: str = "agents.yml") -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def load_ok(folder: Path, text: str) -> Program:
    path = write(folder, text)
    program, diagnostics = load_adl(path)
    errors = [d.format() for d in diagnostics if d.is_error]
    assert program is not None and not errors, "\n".join(errors)
    return program


def codes_of(folder: Path, text: str) -> list[str]:
    _, diagnostics = load_adl(write(folder, text))
    return [d.code for d in diagnostics]


def graph_of(program: Program, agent: str = "main"):
    agent_ir = program.agents[agent]
    assert isinstance(agent_ir, FlowAgent)
    return agent_ir.graph


# ---------------------------------------------------------------------------------------------
# Steps
# ---------------------------------------------------------------------------------------------


def test_each_simple_step_kind(tmp_path):
    program = load_ok(tmp_path, """
        main:
          type: flow agent
          args: [name, count]
          steps:
            - bot: "Hello ${name}"
            - user
            - set:
                count: 3
            - call: helper
            - return: success, All done.
        helper:
          type: llm agent
          description: Helps.
          prompt: Help.
    """)
    graph = graph_of(program)
    nodes = graph.nodes
    assert list(nodes) == ["steps.0", "steps.1", "steps.2", "steps.3", "steps.4"]
    assert graph.entry == "steps.0"
    say = nodes["steps.0"]
    assert isinstance(say, SayNode) and say.next == "steps.1"
    assert say.text.parts[1] == ExprPart(expr=Ref(scope="main", name="name"))
    assert isinstance(nodes["steps.1"], ListenNode)
    assign = nodes["steps.2"]
    assert isinstance(assign, AssignNode)
    assert assign.assignments[0].target == Ref(scope="main", name="count")
    assert assign.assignments[0].value == Lit(value=3)
    invoke = nodes["steps.3"]
    assert isinstance(invoke, InvokeNode) and invoke.target == "helper" and invoke.target_kind == "agent"
    ret = nodes["steps.4"]
    assert isinstance(ret, ReturnNode) and ret.status == "success" and ret.message.source == "All done." and ret.next is None


def test_return_without_message_and_error_status(tmp_path):
    program = load_ok(tmp_path, """
        main:
          type: flow agent
          steps:
            - user
            - if: the user claims "stop"
              then:
                - return: error
            - return: success
    """)
    nodes = graph_of(program).nodes
    assert nodes["steps.1.then.0"].status == "error" and nodes["steps.1.then.0"].message is None
    assert nodes["steps.2"].status == "success"


def test_if_else_if_else_chain_with_else_as_key(tmp_path):
    program = load_ok(tmp_path, """
        main:
          type: flow agent
          args: [amount]
          steps:
            - user
            - if: the user claims "yes", "sure"
              then:
                - bot: Great.
            - else if: amount > 10
              then:
                - bot: Big.
                - bot: Really big.
              else:
                - bot: Neither.
            - bot: After the chain.
    """)
    nodes = graph_of(program).nodes
    branch = nodes["steps.1"]
    assert isinstance(branch, BranchNode)
    assert isinstance(branch.cases[0].condition, ClaimsCondition)
    assert branch.cases[0].condition.examples == ["yes", "sure"]
    assert isinstance(branch.cases[1].condition, ExprCondition)
    assert [c.target for c in branch.cases] == ["steps.1.then.0", "steps.2.then.0"]
    assert branch.otherwise == "steps.2.else.0"
    assert branch.next == "steps.3"
    # every block continues after the chain
    assert nodes["steps.1.then.0"].next == "steps.3"
    assert nodes["steps.2.then.0"].next == "steps.2.then.1"
    assert nodes["steps.2.then.1"].next == "steps.3"
    assert nodes["steps.2.else.0"].next == "steps.3"
    assert "steps.2" not in nodes  # the else-if item is part of the one branch node


def test_if_chain_with_separate_else_item(tmp_path):
    program = load_ok(tmp_path, """
        main:
          type: flow agent
          steps:
            - user
            - if: the user claims "yes"
              then:
                - bot: Yes.
            - else:
                - bot: No.
    """)
    nodes = graph_of(program).nodes
    branch = nodes["steps.1"]
    assert branch.otherwise == "steps.2.else.0"
    assert branch.next is None and nodes["steps.2.else.0"].next is None


def test_if_without_else_falls_through(tmp_path):
    program = load_ok(tmp_path, """
        main:
          type: flow agent
          args: [x]
          steps:
            - if: x == None
              then:
                - bot: Empty.
            - bot: Next.
    """)
    branch = graph_of(program).nodes["steps.0"]
    assert branch.otherwise is None and branch.next == "steps.1"


def test_nested_if_ids_and_continuations(tmp_path):
    program = load_ok(tmp_path, """
        main:
          type: flow agent
          args: [x]
          steps:
            - user
            - if: the user claims "a"
              then:
                - if: x == 1
                  then:
                    - bot: One.
                - bot: Inner after.
            - bot: Outer after.
    """)
    nodes = graph_of(program).nodes
    assert nodes["steps.1.then.0"].cases[0].target == "steps.1.then.0.then.0"
    assert nodes["steps.1.then.0.then.0"].next == "steps.1.then.1"
    assert nodes["steps.1.then.1"].next == "steps.2"
    # pre-order: a branch comes before its blocks
    order = list(nodes)
    assert order.index("steps.1") < order.index("steps.1.then.0") < order.index("steps.1.then.0.then.0")


def test_labels_next_and_tries(tmp_path):
    program = load_ok(tmp_path, """
        main:
          type: flow agent
          steps:
            - bot: Hi.
            - label: ask
            - bot: Code?
            - user
            - if: the user claims "wrong"
              then:
                - next: ask
                  tries: 3
                - bot: Too many tries.
            - next: done
            - label: done
            - bot: Bye.
    """)
    graph = graph_of(program)
    assert graph.labels == {"ask": "steps.2", "done": "steps.7"}
    retry = graph.nodes["steps.4.then.0"]
    assert isinstance(retry, JumpNode)
    assert (retry.target, retry.target_name, retry.tries, retry.next) == ("steps.2", "ask", 3, "steps.4.then.1")
    jump = graph.nodes["steps.5"]
    assert (jump.target, jump.tries, jump.next) == ("steps.7", None, None)


def test_label_at_the_end_points_at_a_no_op(tmp_path):
    program = load_ok(tmp_path, """
        main:
          type: flow agent
          steps:
            - user
            - if: the user claims "skip"
              then:
                - next: finish
            - bot: Not skipped.
            - label: finish
    """)
    graph = graph_of(program)
    target = graph.labels["finish"]
    node = graph.nodes[target]
    assert isinstance(node, AssignNode) and node.assignments == [] and node.next is None
    assert graph.nodes["steps.2"].next == target


def test_subflows_as_keys(tmp_path):
    program = load_ok(tmp_path, """
        main:
          type: flow agent
          steps:
            - bot: Main flow.
            - next: a_subflow
          a_subflow:
            - bot: In the subflow.
            - call: helper_sub
          helper_sub:
            - bot: Called subflow.
    """)
    graph = graph_of(program)
    assert graph.subflows == {"a_subflow": "a_subflow.0", "helper_sub": "helper_sub.0"}
    assert graph.nodes["steps.1"].target == "a_subflow.0"
    call = graph.nodes["a_subflow.1"]
    assert call.target_kind == "subflow" and call.target == "helper_sub"
    assert graph.nodes["helper_sub.0"].next is None


def test_subflows_as_begin_end_blocks(tmp_path):
    program = load_ok(tmp_path, """
        shopping_flow:
          type: flow agent
          description: Assists with orders.
          args: [discount, is_new_customer]
          steps:
            - begin
            - bot: Hi. What can I do for you?
            - user
            - if: the user claims "Is there any discount?"
              then:
                - next: get_discount
            - end
            - begin: get_discount
            - if: is_new_customer == True
              then:
                - set:
                    discount: 0.9
                - return: success, Load discount successful.
              else:
                - return: error, No discount applied.
            - end
        main:
          type: flow agent
          steps:
            - call: shopping_flow
    """)
    graph = graph_of(program, "shopping_flow")
    assert graph.entry == "steps.1"
    assert graph.subflows == {"get_discount": "steps.6"}
    assert graph.nodes["steps.3.then.0"].target == "steps.6"
    assert graph.nodes["steps.3"].next is None  # end of the first block ends the agent
    assert graph.nodes["steps.6"].cases[0].target == "steps.6.then.0"


def test_call_args_literal_versus_reference(tmp_path):
    program = load_ok(tmp_path, """
        main:
          type: flow agent
          args: [username, books]
          steps:
            - call: helper
              args:
                name: username
                quoted: "username"
                number: 42
                flag: true
                text: In-N-Out
                other: helper.result
                listed: [1, 2]
        helper:
          type: llm agent
          description: Helps.
          args: [name, quoted, number, flag, text, other, listed, result]
          prompt: Help.
    """)
    args = {a.name: a.value for a in graph_of(program).nodes["steps.0"].args}
    assert args["name"] == Ref(scope="main", name="username")
    assert args["quoted"] == Lit(value="username")
    assert args["number"] == Lit(value=42)
    assert args["flag"] == Lit(value=True)
    assert args["text"] == Lit(value="In-N-Out")
    assert args["other"] == Ref(scope="helper", name="result")
    assert args["listed"] == Lit(value=[1, 2])


def test_call_args_as_list_of_one_key_mappings(tmp_path):
    program = load_ok(tmp_path, """
        main:
          type: flow agent
          args: [preference]
          steps:
            - call: helper
              args:
                - wanted: preference
        helper:
          type: llm agent
          description: Helps.
          args: [wanted]
          prompt: Help.
    """)
    (arg,) = graph_of(program).nodes["steps.0"].args
    assert arg.name == "wanted" and arg.value == Ref(scope="main", name="preference")


def test_set_with_other_agent_targets_and_tool_values(tmp_path):
    (tmp_path / "tools.py").write_text("def get_date():\n    return []\n")
    program = load_ok(tmp_path, """
        main:
          type: flow agent
          args: [date]
          steps:
            - call: get_date
            - set:
                date: get_date.today
                helper.topic: "books"
            - call: helper
        helper:
          type: llm agent
          description: Helps.
          args: [topic]
          prompt: Help.
    """)
    nodes = graph_of(program).nodes
    assert nodes["steps.0"].target_kind == "tool"
    first, second = nodes["steps.1"].assignments
    assert first.target == Ref(scope="main", name="date")
    assert first.value == Ref(scope="get_date", name="today", space="result")  # a tool's value is a result
    assert second.target == Ref(scope="helper", name="topic") and second.value == Lit(value="books")


def test_pseudo_arguments_of_called_agents_and_subflows(tmp_path):
    assert "ADL018" not in codes_of(tmp_path, """
        main:
          type: flow agent
          steps:
            - call: helper
            - if: helper.status == "success" and helper.error == None
              then:
                - next: check
          check:
            - if: check.success
              then:
                - bot: Ok.
        helper:
          type: llm agent
          description: Helps.
          prompt: Help.
    """)


# ---------------------------------------------------------------------------------------------
# Agents
# ---------------------------------------------------------------------------------------------


def test_ensemble_members_bindings_and_setup(tmp_path):
    program = load_ok(tmp_path, """
        triage:
          type: ensemble agent
          description: Routes.
          args: [username, book]
          prompt: Prefer the helper.
          contains:
            - helper:
                args:
                  name: ref username
                  wanted: book
            - other:
                args:
                  - name: username
            - kb
          steps:
            - bot: Welcome.
          fallback: default
          exit: helper
        helper:
          type: llm agent
          description: Helps.
          args: [name, wanted]
          prompt: Help.
        other:
          type: llm agent
          description: Other.
          args:
            - name: the customer's name
          prompt: Other.
        kb:
          type: kb agent
          description: Knows.
          faq:
            - q: Hours?
              a: Nine to five.
        main:
          type: flow agent
          steps:
            - call: triage
    """)
    triage = program.agents["triage"]
    assert isinstance(triage, RouterAgent)
    assert triage.instructions == "Prefer the helper."
    members = {m.agent: [(b.member_arg, b.router_arg, b.two_way) for b in m.bindings] for m in triage.members}
    assert members == {"helper": [("name", "username", True), ("wanted", "book", False)],
                       "other": [("name", "username", False)], "kb": []}
    assert triage.setup is not None and triage.setup.entry == "steps.0"
    assert triage.fallback.kind == "default" and triage.exit.kind == "agent" and triage.exit.value == "helper"
    assert program.agents["other"].args[0].description == "the customer's name"


def test_llm_agent_fields(tmp_path):
    (tmp_path / "tools.py").write_text("def lookup(q: str):\n    '''Look it up.'''\n")
    program = load_ok(tmp_path, """
        main:
          type: llm agent
          description: Answers.
          prompt: |
            Use lookup.
          uses: [lookup]
          max_iterations: 4
          fallback: Apologise and ask again.
          steps:
            - bot: Hi.
    """)
    agent = program.agents["main"]
    assert isinstance(agent, ReasoningAgent)
    assert agent.instructions == "Use lookup.\n" and agent.tools == ["lookup"] and agent.max_iterations == 4
    assert agent.fallback.kind == "text" and agent.fallback.value == "Apologise and ask again."
    assert agent.setup.nodes["steps.0"].kind == "say"


def test_kb_sources_resolution_and_faq(tmp_path, monkeypatch):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "policy.txt").write_text("Returns within 30 days.")
    (tmp_path / "return_policy.pdf").write_bytes(b"%PDF")
    monkeypatch.chdir(tmp_path.parent)
    program = load_ok(tmp_path, """
        kb:
          type: kb agent
          description: Knows the policies.
          sources:
            - https://example.com/help
            - www.bookstore.com/help-center
            - docs
            - ./examples/shop/docs/policy.txt
            - missing/file.pdf
          file: return_policy.pdf
          faq:
            - q: Thanks, bye
              a: See you.
        main:
          type: flow agent
          steps:
            - call: kb
    """)
    kb = program.agents["kb"]
    assert isinstance(kb, KnowledgeAgent)
    found = [(s.location, s.kind, s.path) for s in kb.sources]
    assert found == [
        ("https://example.com/help", "url", None),
        ("www.bookstore.com/help-center", "url", None),
        ("docs", "directory", "docs"),
        ("./examples/shop/docs/policy.txt", "file", "docs/policy.txt"),
        ("missing/file.pdf", "file", None),
        ("return_policy.pdf", "file", "return_policy.pdf"),
    ]
    assert [(f.q, f.a) for f in kb.faq] == [("Thanks, bye", "See you.")]
    _, diagnostics = load_adl(tmp_path / "agents.yml")
    missing = [d for d in diagnostics if d.code == "ADL027"]
    assert len(missing) == 1 and not missing[0].is_error and missing[0].span.line == 9


def test_kb_source_found_from_current_directory(tmp_path, monkeypatch):
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "faq.txt").write_text("x")
    program_dir = tmp_path / "bot"
    monkeypatch.chdir(tmp_path)
    program = load_ok(program_dir, """
        main:
          type: kb agent
          description: Knows.
          sources: [shared/faq.txt]
    """)
    assert program.agents["main"].sources[0].path == "../shared/faq.txt"


# ---------------------------------------------------------------------------------------------
# Tools
# ---------------------------------------------------------------------------------------------

TOOL_SOURCE = '''
"""Shop tools."""
from typing import Optional


def place_order(ordered_book: list, date: str, express: bool = False, note: Optional[str] = None,
                count: int = 1, price: float = 9.5, extra: dict = {}, *, tag="x", **kwargs):
    """Place an order for books.

    It also sends a mail.

    Args:
        ordered_book: the books to order,
            one per line
        date (str): when
        express: ship express
    """
    return []


async def query_book_genre(book_name):
    """Find the genre of a book.

    :param book_name: the title
    """


def _private_helper():
    pass


class NotATool:
    def method(self):
        pass
'''


def test_tool_discovery_reads_signature_and_docstring(tmp_path):
    (tmp_path / "shop.py").write_text(TOOL_SOURCE)
    program = load_ok(tmp_path, """
        tools:
          - shop.py
        main:
          type: flow agent
          args: [books]
          steps:
            - call: place_order
              args:
                ordered_book: books
                date: "2025-01-01"
                anything: 1
    """)
    assert set(program.tools) == {"place_order", "query_book_genre"}
    tool = program.tools["place_order"]
    assert tool.module == "shop.py" and tool.span.line == 6
    assert tool.description == "Place an order for books."
    params = {p.name: p for p in tool.params}
    assert list(params) == ["ordered_book", "date", "express", "note", "count", "price", "extra", "tag"]
    assert [(p.type, p.required, p.default) for p in params.values()] == [
        ("array", True, None), ("string", True, None), ("boolean", False, False), ("string", False, None),
        ("integer", False, 1), ("number", False, 9.5), ("object", False, {}), ("string", False, "x")]
    assert params["ordered_book"].description == "the books to order, one per line"
    assert params["date"].description == "when"
    genre = program.tools["query_book_genre"]
    assert genre.params[0].description == "the title" and genre.params[0].type == "string"
    assert tool.json_schema()["required"] == ["ordered_book", "date"]


def test_tool_call_checks_parameters(tmp_path):
    (tmp_path / "shop.py").write_text("def order(book: str, date: str, note=''):\n    pass\n")
    codes = codes_of(tmp_path, """
        main:
          type: flow agent
          args: [date]
          steps:
            - call: order
              args:
                bok: "x"
    """)
    assert codes.count("ADL024") == 1  # 'bok' is not a parameter
    assert codes.count("ADL025") == 1  # 'book' has no value; 'date' is filled from the caller's args


def test_default_tool_files_beside_the_program(tmp_path):
    (tmp_path / "tools.py").write_text("def get_date():\n    pass\n")
    (tmp_path / "more.py").write_text("def get_time():\n    pass\n")
    (tmp_path / "_private.py").write_text("def hidden():\n    pass\n")
    (tmp_path / "test_tools.py").write_text("def test_it():\n    pass\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "deep.py").write_text("def deep():\n    pass\n")
    program = load_ok(tmp_path, """
        main:
          type: flow agent
          steps:
            - call: get_date
            - call: get_time
    """)
    assert set(program.tools) == {"get_date", "get_time"}
    assert program.tools["get_time"].module == "more.py"
    assert "tools.py" in program.sources and "more.py" in program.sources


def test_unknown_call_is_warning_without_tool_files_and_error_with_them(tmp_path):
    text = """
        main:
          type: flow agent
          steps:
            - call: get_date
            - set:
                main.today: get_date.today
    """
    _, diagnostics = load_adl(write(tmp_path / "a", text))
    (unknown,) = [d for d in diagnostics if d.code == "ADL012"]
    assert not unknown.is_error and "get_date" in unknown.message and "tools:" in unknown.hint
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "tools.py").write_text("def other():\n    pass\n")
    _, diagnostics = load_adl(write(tmp_path / "b", text))
    assert [d.is_error for d in diagnostics if d.code == "ADL012"] == [True]


def test_docstring_helpers():
    assert docstring_summary("First line\ncontinues.\n\nMore.") == "First line continues."
    assert docstring_summary("Summary.\nArgs:\n    x: y") == "Summary."
    assert docstring_arg_descriptions("Do.\n\nArgs:\n    x (int): the x\n    y: the y\n\nReturns:\n    z: no") == {
        "x": "the x", "y": "the y"}


# ---------------------------------------------------------------------------------------------
# Program level: config, spans, ids, JSON, dispatch
# ---------------------------------------------------------------------------------------------


def test_config_settings(tmp_path):
    write(tmp_path, """
        unsafe_mode: true
        history_window: 7
        llm:
          chat:
            provider: custom
            model: m1
    """, name="config.yml")
    program = load_ok(tmp_path, """
        main:
          type: flow agent
          steps:
            - bot: Hi.
    """)
    assert program.settings.llm == {"chat": {"provider": "custom", "model": "m1"}}
    assert program.settings.history_window == 7
    assert program.sources == ["agents.yml", "config.yml"]
    _, diagnostics = load_adl(tmp_path)
    assert [d.severity.value for d in diagnostics if d.code == "ADL034"] == ["info"]


def test_spans_point_at_the_source(tmp_path):
    program = load_ok(tmp_path, """
        main:
          type: flow agent
          steps:
            - bot: Hi.
            - user
            - if: the user claims "x"
              then:
                - bot: X.
    """)
    graph = graph_of(program)
    assert (graph.nodes["steps.0"].span.line, graph.nodes["steps.0"].span.column) == (4, 7)
    assert graph.nodes["steps.1"].span.line == 5
    branch = graph.nodes["steps.2"]
    assert (branch.cases[0].span.line, branch.cases[0].span.column) == (6, 11)
    assert graph.nodes["steps.2.then.0"].span.line == 8
    assert program.agents["main"].span.line == 1
    assert graph.nodes["steps.0"].span.file == str(tmp_path / "agents.yml")


def test_span_file_is_the_path_as_given(tmp_path, monkeypatch):
    write(tmp_path / "bot", """
        main:
          type: flow agent
          steps:
            - bot: Hi.
    """)
    monkeypatch.chdir(tmp_path)
    program, diagnostics = load_adl("bot")
    assert program.agents["main"].span.file == "bot/agents.yml"
    assert program.root == str((tmp_path / "bot").resolve())
    assert program.sources == ["agents.yml"]


def test_condition_error_column_points_into_the_condition(tmp_path):
    _, diagnostics = load_adl(write(tmp_path, """
        main:
          type: flow agent
          args: [a]
          steps:
            - if: "a == == 1"
              then:
                - bot: x
    """))
    (bad,) = [d for d in diagnostics if d.code == "ADL016"]
    # the quote is at column 11, the text starts at 12, the second '==' at offset 5
    assert (bad.span.line, bad.span.column) == (5, 17)


def test_ir_round_trips_through_json(tmp_path):
    (tmp_path / "tools.py").write_text(TOOL_SOURCE)
    program = load_ok(tmp_path, """
        main:
          type: flow agent
          args: [books, x]
          steps:
            - bot: "Books: ${books}"
            - user
            - if: x == 1 or re.match(r"^a", x)
              then:
                - call: place_order
                  args:
                    ordered_book: books
                    date: "today"
              else:
                - return: error, no
    """)
    again = Program.model_validate_json(program.model_dump_json())
    again.root = program.root
    assert again == program


def test_load_program_dispatch(tmp_path):
    (tmp_path / "program.abc").write_text("x")
    program, diagnostics = load_program(tmp_path / "program.abc")
    assert program is None and [d.code for d in diagnostics] == ["FD001"]
    write(tmp_path / "only", """
        main:
          type: flow agent
          steps:
            - bot: Hi.
    """, name="bot.yaml")
    program, diagnostics = load_program(tmp_path / "only")
    assert program is not None and not [d for d in diagnostics if d.is_error]


def test_folder_without_a_single_program(tmp_path):
    (tmp_path / "a.yml").write_text("main: {}")
    (tmp_path / "b.yml").write_text("main: {}")
    program, diagnostics = load_adl(tmp_path)
    assert program is None and [d.code for d in diagnostics] == ["ADL002"]
    program, diagnostics = load_adl(tmp_path / "missing.yml")
    assert program is None and [d.code for d in diagnostics] == ["ADL002"]


def test_program_with_errors_is_still_returned(tmp_path):
    path = write(tmp_path, """
        main:
          type: flow agent
          steps:
            - next: nowhere
    """)
    program, diagnostics = load_adl(path)
    assert program is not None and any(d.code == "ADL013" for d in diagnostics)


def test_duplicate_keys_in_steps(tmp_path):
    codes = codes_of(tmp_path, """
        main:
          type: flow agent
          steps:
            - set:
                a: 1
                a: 2
    """)
    assert "ADL005" in codes


@pytest.mark.parametrize("text", [
    "main: [",
    "main:\n  type: flow agent\n  steps:\n    - if:\n",
    "main:\n  type: flow agent\n  steps:\n    - [1, 2]\n    - {}\n    - ''\n",
    "a: &x [*x]\n",
    "main:\n  type: {a: 1}\n",
    "main:\n  type: flow agent\n  steps:\n    - call: {a: 1}\n      args: 3\n",
    "main:\n  type: ensemble agent\n  contains: [{a: 1, b: 2}, [x], {main: [1]}]\n",
    "? [a, b]\n: 1\nmain:\n  type: kb agent\n  faq: [1, {q: [x], a: y}]\n",
    "main:\n  type: flow agent\n  steps:\n    - begin: [x]\n    - end\n    - end\n",
])
def test_odd_programs_give_diagnostics_not_exceptions(tmp_path, text):
    program, diagnostics = load_adl(write(tmp_path, text))
    assert any(d.is_error for d in diagnostics)


# ---------------------------------------------------------------------------------------------
# The paper's examples and the language-independent analysis
# ---------------------------------------------------------------------------------------------

BLOCK_CARD = """
block_card:
  type: flow agent
  description: Block or freeze a user's debit or credit card
  args:
    - reason_for_blocking
    - physical_address
  steps:
    - bot: "Okay, we can block a card. Let's do it in a few steps"
    - bot: "Please tell us the reason for blocking"
    - user
    - if: the user claims "My card is damaged", "My card has expired"
      then:
        - bot: "Thank you for letting us know. I'm sorry to hear the card was ${reason_for_blocking}"
        - next: confirm_issue_new_card
    - else if: the user claims "I lost my card", "I suspect fraud on my account"
      then:
        - bot: "Since you have reported ${reason_for_blocking}, we will block your card"
        - next: confirm_issue_new_card
      else:
        - bot: "Please contact our support team at 020 7777 7777."
        - call: action_update_card_status
  confirm_issue_new_card:
    - bot: "Would you like to be issued a new card?"
    - user
    - if: the user claims "Yes, send me a new card"
      then:
        - next: retrieve_user_address
      else:
        - call: action_update_card_status
  retrieve_user_address:
    - bot: "I have found your address: ${physical_address}. Should the new card be delivered there?"
    - user
    - if: the user claims "Yes"
      then:
        - bot: "Your card will be delivered to ${physical_address} within 7 business days"
      else:
        - bot: "Please contact our support team at 020 7777 7777."
    - call: action_update_card_status
main:
  type: flow agent
  steps:
    - call: block_card
"""


def test_paper_block_card_flow(tmp_path):
    path = write(tmp_path, BLOCK_CARD)
    program, diagnostics = load_adl(path)
    assert not [d for d in diagnostics if d.is_error]
    # the tool is unknown (no tool files): a warning naming it, nothing else
    assert {d.code for d in diagnostics} == {"ADL012"}
    graph = graph_of(program, "block_card")
    assert graph.subflows == {"confirm_issue_new_card": "confirm_issue_new_card.0",
                              "retrieve_user_address": "retrieve_user_address.0"}
    assert graph.nodes["steps.3.then.1"].target == "confirm_issue_new_card.0"
    assert graph.nodes["confirm_issue_new_card.2.then.0"].target == "retrieve_user_address.0"
    branch = graph.nodes["retrieve_user_address.2"]
    assert graph.nodes[branch.cases[0].target].next == "retrieve_user_address.3"
    assert graph.nodes["retrieve_user_address.3"].target_kind == "tool"


def test_unreachable_steps_are_reported_once_per_run(tmp_path):
    _, diagnostics = load_adl(write(tmp_path, """
        main:
          type: flow agent
          steps:
            - user
            - if: the user claims "a"
              then:
                - return: success
                - bot: dead 1
                - bot: dead 2
            - next: main_end
            - bot: dead 3
            - label: main_end
            - bot: end
    """))
    unreachable = [d for d in diagnostics if d.code == "ADL040"]
    assert [d.span.line for d in unreachable] == [8, 11]
    assert all(not d.is_error for d in unreachable)


def test_loops_through_labels_are_not_unreachable(tmp_path):
    codes = codes_of(tmp_path, """
        main:
          type: flow agent
          steps:
            - label: again
            - bot: Code?
            - user
            - if: the user claims "wrong"
              then:
                - next: again
                  tries: 2
                - return: error, too many tries
            - bot: Correct.
    """)
    assert "ADL040" not in codes and "ADL042" not in codes


def test_call_cycle_between_agents(tmp_path):
    _, diagnostics = load_adl(write(tmp_path, """
        main:
          type: flow agent
          steps:
            - call: a
        a:
          type: flow agent
          description: A.
          steps:
            - call: b
        b:
          type: flow agent
          description: B.
          steps:
            - call: a
    """))
    (cycle,) = [d for d in diagnostics if d.code == "ADL041"]
    assert "a -> b -> a" in cycle.message and cycle.span.line == 9


def test_ensemble_cannot_contain_itself(tmp_path):
    assert "ADL022" in codes_of(tmp_path, """
        main:
          type: ensemble agent
          contains: [main]
    """)


def test_ensemble_bindings_name_llm_args_written_in_words_by_their_underscore_form(tmp_path):
    program = load_ok(tmp_path, """
        main:
          type: ensemble agent
          args: [claim_number]
          contains:
            - claims:
                args:
                  claim_number: ref claim_number
        claims:
          type: llm agent
          description: Collects a claim.
          prompt: Ask for the claim number.
          args:
            - claim number
    """)
    member = program.agents["main"].members[0]
    assert [(b.member_arg, b.router_arg, b.two_way) for b in member.bindings] == [("claim number", "claim_number", True)]


def test_flow_call_args_to_an_llm_agent_may_use_the_underscore_form(tmp_path):
    program = load_ok(tmp_path, """
        main:
          type: flow agent
          steps:
            - call: claims
              args:
                claim_number: "C-1"
                date of incident: "today"
        claims:
          type: llm agent
          description: Collects a claim.
          prompt: Ask for the claim number.
          args:
            - claim number
            - date of incident
    """)
    call = graph_of(program).nodes["steps.0"]
    assert [a.name for a in call.args] == ["claim number", "date of incident"]
