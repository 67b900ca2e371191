"""ACDL parsing: the conformance corpus, printer round trips, and the tricky corners of the syntax."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from frontdesk.acdl import format_acdl, load_acdl, parse_acdl
from frontdesk.acdl.ast import (
    BinaryOp,
    BoolOp,
    Break,
    Comment,
    Compare,
    ContextVar,
    Continue,
    File,
    ForEach,
    FragInvoke,
    FunctionCall,
    ImplicitRange,
    ListComprehension,
    Literal,
    Mark,
    NameDef,
    NameRef,
    Not,
    Paren,
    PathSegment,
    PlainName,
    PromptEndsHere,
    PromptSpec,
    RoleMessage,
    RolesFragDef,
    StrFragDef,
    Switch,
    Template,
    TimeIndex,
    UnaryOp,
    node_from_dict,
    walk,
)

# the shared folder beside the repository (../shared), or where the workplace keeps it
SHARED = next((p for p in (Path(__file__).resolve().parents[2] / "shared", Path("/work/shared")) if p.is_dir()),
              Path("/work/shared"))

CONFORMANCE = SHARED / "conformance/acdl"
CONFORMANCE_FILES = sorted(CONFORMANCE.rglob("*.acdl")) if CONFORMANCE.is_dir() else []
needs_corpus = pytest.mark.skipif(not CONFORMANCE_FILES, reason="ACDL conformance folder is absent")


def parse_ok(text: str) -> File:
    """Parse text that must be valid: no diagnostic at all (warnings included)."""
    file_ast, diags = parse_acdl(text, "t.acdl")
    assert file_ast is not None and diags == [], [d.format() for d in diags]
    return file_ast


def roundtrip(file_ast: File) -> str:
    """Print, re-parse, and check the tree is unchanged and printing is stable."""
    text = format_acdl(file_ast)
    again = parse_ok(text)
    assert again == file_ast
    assert format_acdl(again) == text
    return text


def spec_body(text: str) -> list:
    """The body of the only specification in `text`."""
    file_ast = parse_ok(text)
    (spec,) = file_ast.specs
    return spec.body


def only_role_body(text: str) -> list:
    """The body of the only role message of the only specification."""
    (role,) = spec_body(text)
    assert isinstance(role, RoleMessage)
    return role.body


# ---------------------------------------------------------------------------
# Conformance corpus
# ---------------------------------------------------------------------------


@needs_corpus
@pytest.mark.parametrize("path", CONFORMANCE_FILES, ids=lambda p: str(p.relative_to(CONFORMANCE)))
def test_conformance_file_parses_without_diagnostics(path: Path) -> None:
    file_ast, diags = load_acdl(path)
    assert file_ast is not None
    assert [d.format() for d in diags] == []
    assert file_ast.specs, "every conformance file holds at least one specification"


@needs_corpus
@pytest.mark.parametrize("path", CONFORMANCE_FILES, ids=lambda p: str(p.relative_to(CONFORMANCE)))
def test_conformance_file_round_trips_through_the_printer(path: Path) -> None:
    file_ast, _ = load_acdl(path)
    assert file_ast is not None
    roundtrip(file_ast)


@needs_corpus
@pytest.mark.parametrize("path", CONFORMANCE_FILES, ids=lambda p: str(p.relative_to(CONFORMANCE)))
def test_conformance_file_survives_json(path: Path) -> None:
    file_ast, _ = load_acdl(path)
    assert file_ast is not None
    data = json.loads(json.dumps(file_ast.to_dict()))
    assert node_from_dict(data) == file_ast
    assert data["items"][0]["span"]["line"] >= 1


@needs_corpus
def test_truncated_and_shuffled_conformance_text_never_raises() -> None:
    rng = random.Random(7)
    for path in CONFORMANCE_FILES:
        text = path.read_text(encoding="utf-8")
        for _ in range(8):
            cut = rng.randrange(len(text) + 1)
            file_ast, diags = parse_acdl(text[:cut], "cut.acdl")
            assert file_ast is not None or any(d.is_error for d in diags)
            lines = text.splitlines()
            rng.shuffle(lines)
            parse_acdl("\n".join(lines), "shuffled.acdl")


# ---------------------------------------------------------------------------
# Examples from the paper (Section 4 and Appendix D)
# ---------------------------------------------------------------------------

PAPER_EXAMPLES = """\
CompletionPrompt[@t]: {
    N: {
        TASK_DESCRIPTION
        env.context[@t]
        QUESTION
    }
}

StrFrag DocumentContext[doc]: {
    env.doc_title[doc]
    env.doc_content[doc]
    summarize(env.doc_metadata[doc])
}

StrFrag ConversationContext[@T]: {
    CONTEXT_HEADER
    ForEach(@t: range(@T-5, @T)) {
        sys.Summary[@t]
        If sys.has_tool_call[@t] {
            sys.tool_response[@t]
        }
    }
}

RolesFrag ConversationTurn[@t]: {
    U: env.user_input[@t]
    A: resp.answer[@t]
    If sys.tool[@t] != none {
        T: sys.tool[@t].tool_response
    }
}

RoleFrag ToolResult[@t, tool]: {
    A: sys.tool_call[@t, tool]
    T: sys.tool_response[@t, tool]
}

ChatAgent[@T]: {
    S: INSTRUCTIONS
    ForEach(@t: range(1, @T)) {
        Frag ConversationTurn[@t]
        Frag ToolResult[@t, sys.selected_tool[@t]]
    }
    U: {
        TASK_INSTRUCTIONS
        ForEach(doc: env.documents) {
            Frag DocumentContext[doc]
        }
        env.user_question[@T]
    }
}

Prompt[@T]: {
    S: INSTRUCTIONS
    U: env.user_input[@T]
    PromptEndsHere when (@T == @t && @T.0)
    ForEach(i: range(1, @t.substeps)) {
        A: resp.answer[@T.i]
        U: env.feedback[@T.i]
    }
    Switch sys.action_type[@t] {
        Case "search" {
            U: env.search_results[@t]
        }
        Default {
            U: env.fallback[@t]
        }
    }
    If sys.tool[@t] == get_clarification {
        U: env.user_input[@i]
    }
    ElseIf sys.tool[@t] == search {
        A: env.search_results[@t]
    }
    Else {
        A: sys.tool_used[@t].tool_response
    }
    U: {
        ForEach(bomb: env.bombs) {
            env.bomb_location[@t, bomb]
        }
        Name relevant_summaries := [sys.summary[@t] for t in range(@T, @T-900, 100)]
        compress_summaries($relevant_summaries)
        QUERY(sys.agent_name)
        get_dialog_history(sys.agent_name)
        sys[agent].foo[@t]
    }
    S: {REACT_INSTRUCTIONS}
}
"""


def test_paper_examples_parse_cleanly_and_round_trip() -> None:
    file_ast = parse_ok(PAPER_EXAMPLES)
    assert [type(i).__name__ for i in file_ast.items] == [
        "PromptSpec", "StrFragDef", "StrFragDef", "RolesFragDef", "RolesFragDef", "PromptSpec", "PromptSpec",
    ]
    text = roundtrip(file_ast)
    assert "RolesFrag ToolResult[@t, tool]:" in text  # RoleFrag spelling printed canonically


# ---------------------------------------------------------------------------
# Roles
# ---------------------------------------------------------------------------


def test_single_line_and_braced_role_messages() -> None:
    body = spec_body("P[@T]: {\n    U: env.question[@t]\n    S: {INSTRUCTIONS}\n    A: {\n        resp.x\n        resp.y\n    }\n}\n")
    single, braced_one_line, braced = body
    assert (single.role, single.form) == ("U", "single")
    assert single.body == [ContextVar("env", [PathSegment("question", [TimeIndex(["t"])])])]
    assert (braced_one_line.form, braced_one_line.body) == ("block", [Template("INSTRUCTIONS")])
    assert braced.form == "block" and len(braced.body) == 2


def test_single_line_role_with_template_and_function() -> None:
    body = spec_body("P[@T]: {\n  S: INSTRUCTIONS\n  U: summarize(sys.history[@t])\n  U: QUERY(sys.agent_name)\n}")
    assert body[0].body == [Template("INSTRUCTIONS")]
    assert body[1].body == [FunctionCall("summarize", [ContextVar("sys", [PathSegment("history", [TimeIndex(["t"])])])])]
    assert body[2].body == [Template("QUERY", [ContextVar("sys", [PathSegment("agent_name")])])]


def test_role_letter_as_loop_variable_is_not_a_role_marker() -> None:
    (loop,) = spec_body("P[@T]: {\n  ForEach(T: range(1, 3)) {\n    U: env.x[T]\n  }\n}")
    assert isinstance(loop, ForEach) and loop.var == "T" and not loop.time_var


def test_keywords_after_a_dot_are_field_names() -> None:
    body = only_role_body("P[@T]: {\n  U: {\n    sys.in\n    env.when\n    resp.Name.for\n  }\n}")
    assert [c.path[0].name for c in body] == ["in", "when", "Name"]
    assert body[2].path[1].name == "for"


# ---------------------------------------------------------------------------
# Comments
# ---------------------------------------------------------------------------


def test_inline_comments_attach_to_the_element_on_their_line() -> None:
    text = """\
// file header
P[@T]: { // spec note
    // standalone
    S: TASK_DESC  // beside the role
    U: {
        INSTRUCTIONS // beside the template
        env.datetime[@T] // beside the variable
    }
    ForEach(@t: range(1, @T)) { // beside the loop
        U: env.x[@t]
    } // after the loop
}
// trailing
"""
    file_ast = parse_ok(text)
    header, spec, trailing = file_ast.items
    assert header == Comment("file header", inline=False)
    assert trailing == Comment("trailing", inline=False)
    assert spec.comment == "spec note"
    standalone, role_s, role_u, loop, after = spec.body
    assert standalone == Comment("standalone", inline=False)
    assert role_s.comment == "beside the role" and role_s.body[0].comment is None
    assert [e.comment for e in role_u.body] == ["beside the template", "beside the variable"]
    assert loop.comment == "beside the loop"
    assert after == Comment("after the loop", inline=True)
    printed = roundtrip(file_ast)
    assert "    } // after the loop\n" in printed
    assert "    S: TASK_DESC // beside the role\n" in printed


def test_comments_around_else_and_switch_cases_stay_in_the_tree() -> None:
    text = """\
P[@T]: {
    If sys.a {
        U: X
    }
    // about the else
    Else { // else note
        U: Y
    }
    Switch sys.b { // switch note
        // before case
        Case 1 { // case note
            U: X
        }
        Default {
            U: Y
        }
    }
}
"""
    if_node, switch = spec_body(text)
    assert if_node.else_comment == "else note"
    assert if_node.else_body[0] == Comment("about the else")
    assert switch.comment == "switch note"
    assert switch.cases[0].comment == "case note"
    assert switch.cases[0].body[0] == Comment("before case")
    roundtrip(parse_ok(text))


def test_comments_inside_parentheses_are_dropped_without_error() -> None:
    (role,) = spec_body("P[@T]: {\n  U: f(a, // first\n        b)\n}")
    assert role.body == [FunctionCall("f", [PlainName("a"), PlainName("b")])]


def test_crlf_and_lf_give_the_same_tree() -> None:
    text = "P[@T]: {\n    S: A_B // c\n    U: env.x[@T]\n}\n"
    assert parse_ok(text.replace("\n", "\r\n")) == parse_ok(text)


# ---------------------------------------------------------------------------
# Indices and expressions
# ---------------------------------------------------------------------------


def test_time_indices_and_arithmetic() -> None:
    (var,) = only_role_body("P[@T.I]: {\n  U: env.x[@T.I-2, @t % 25, (t - k) * 2, @T.3.J, @1, @T.*, -1]\n}")
    idx = var.path[0].indices
    assert idx[0] == BinaryOp("-", TimeIndex(["T", "I"]), Literal(2, "number"))
    assert idx[1] == BinaryOp("%", TimeIndex(["t"]), Literal(25, "number"))
    assert idx[2] == BinaryOp("*", Paren(BinaryOp("-", PlainName("t"), PlainName("k"))), Literal(2, "number"))
    assert idx[3] == TimeIndex(["T", 3, "J"])
    assert idx[4] == TimeIndex([1])
    assert idx[5] == TimeIndex(["T", "*"])
    assert idx[6] == UnaryOp("-", Literal(1, "number"))


def test_index_at_every_level_of_a_path_and_agent_namespace_index() -> None:
    first, second = only_role_body("P[@T, agent]: {\n  U: {\n    sys.tool[@t].tool_response[@t]\n    sys[agent].foo[@t]\n  }\n}")
    assert [(s.name, len(s.indices)) for s in first.path] == [("tool", 1), ("tool_response", 1)]
    assert second.namespace_indices == [PlainName("agent")] and second.path[0].name == "foo"


def test_nested_foreach_with_sub_steps() -> None:
    (outer,) = spec_body(
        "P[@T.I]: {\n  ForEach(@t: range(1, @T)) {\n    ForEach(i: range(1, @t.substeps)) {\n      A: sys.action[@t.i]\n    }\n  }\n}"
    )
    assert outer.var == "t" and outer.time_var
    (inner,) = outer.body
    assert inner.var == "i" and not inner.time_var
    assert inner.iterable == FunctionCall("range", [Literal(1, "number"), TimeIndex(["t", "substeps"])])
    assert inner.body[0].body[0].path[0].indices == [TimeIndex(["t", "i"])]


def test_foreach_over_bounds_without_range_and_over_a_collection() -> None:
    first, second = spec_body("P[@T]: {\n  ForEach(i: 1, @t.substeps) {\n    U: X\n  }\n  ForEach(agent: sys.agent_names) {\n    U: env.u[@t, agent]\n  }\n}")
    assert first.iterable == ImplicitRange([Literal(1, "number"), TimeIndex(["t", "substeps"])])
    assert second.iterable == ContextVar("sys", [PathSegment("agent_names")])
    assert "ForEach(i: 1, @t.substeps) {" in roundtrip(parse_ok("P[@T]: {\n  ForEach(i: 1, @t.substeps) {\n    U: X\n  }\n}"))


def test_condition_connectives_and_precedence() -> None:
    (if_node,) = spec_body("P[@T]: {\n  If I==0 and @t>1 | not sys.a && !sys.b {\n    U: X\n  }\n}")
    cond = if_node.branches[0].condition
    assert isinstance(cond, BoolOp) and cond.op == "or" and cond.spelling == "|"
    assert cond.left == BoolOp(
        "and", Compare("==", PlainName("I"), Literal(0, "number")), Compare(">", TimeIndex(["t"]), Literal(1, "number")), "and"
    )
    assert cond.right == BoolOp("and", Not(ContextVar("sys", [PathSegment("a")]), "not"), Not(ContextVar("sys", [PathSegment("b")]), "!"), "&&")


def test_bare_and_parenthesised_conditions() -> None:
    first, second, third = spec_body(
        "P[@T]: {\n  If sys.code_blocks[@t] {\n    U: X\n  }\n  If (sys.foo[@T] >= 5) {\n    U: Y\n  }\n"
        "  If is_long(sys.r) {\n    U: Z\n  }\n}"
    )
    assert isinstance(first.branches[0].condition, ContextVar)
    assert first.else_body is None and second.branches[0].condition == Paren(
        Compare(">=", ContextVar("sys", [PathSegment("foo", [TimeIndex(["T"])])]), Literal(5, "number"))
    )
    assert isinstance(third.branches[0].condition, FunctionCall)


def test_if_elseif_else_on_shared_lines() -> None:
    (if_node,) = spec_body("P[@T]: {\n  T: {\n    If a { X } ElseIf b { Y } Else If c { Z } Else { W }\n  }\n}")[0].body
    assert [b.condition for b in if_node.branches] == [PlainName("a"), PlainName("b"), PlainName("c")]
    assert if_node.else_body == [Template("W")]


# ---------------------------------------------------------------------------
# Other constructs
# ---------------------------------------------------------------------------


def test_switch_case_default() -> None:
    (switch,) = spec_body(
        'P[@T]: {\n  Switch sys.action_type[@t] {\n    Case "search" {\n      U: env.r[@t]\n    }\n'
        "    Case 2 {\n      U: env.c[@t]\n    }\n    Default {\n      U: env.f[@t]\n    }\n  }\n}"
    )
    assert isinstance(switch, Switch)
    assert [c.value for c in switch.cases] == [Literal("search", "string"), Literal(2, "number")]
    assert switch.default is not None and switch.default[0].role == "U"


def test_prompt_ends_here_forms() -> None:
    first, second, third = spec_body(
        "P[@T]: {\n  PromptEndsHere when (@t==@T and @T.0)\n  PromptEndsHere when sys.foo[@T] >= 5\n  PromptEndsHere\n}"
    )
    assert first.cond == Paren(BoolOp("and", Compare("==", TimeIndex(["t"]), TimeIndex(["T"])), TimeIndex(["T", 0]), "and"))
    assert isinstance(second.cond, Compare)
    assert third == PromptEndsHere(None)


def test_name_definitions_and_references() -> None:
    body = only_role_body(
        "P[@T]: {\n  U: {\n    Name docs := k_relevant_docs(env.user_input[@T])\n"
        "    Name sums := [sys.summary[@t] for t in range(@T, @T-900, 100)]\n"
        "    ForEach(i: range(1, $docs.len)) {\n      $docs[i].source\n    }\n    compress_summaries($sums)\n  }\n}"
    )
    docs, sums, loop, call = body
    assert docs == NameDef("docs", FunctionCall("k_relevant_docs", [ContextVar("env", [PathSegment("user_input", [TimeIndex(["T"])])])]))
    assert isinstance(sums.value, ListComprehension) and sums.value.var == "t" and not sums.value.time_var
    assert loop.iterable.args[1] == NameRef("docs", [], [PathSegment("len")])
    assert loop.body[0] == NameRef("docs", [PlainName("i")], [PathSegment("source")])
    assert call.args == [NameRef("sums")]


def test_fragment_invocations_of_both_kinds() -> None:
    file_ast = parse_ok(PAPER_EXAMPLES)
    invokes = {n.name: n.kind for n in walk(file_ast) if isinstance(n, FragInvoke)}
    assert invokes == {"ConversationTurn": "roles", "ToolResult": "roles", "DocumentContext": "str"}


def test_fragment_kind_of_an_undefined_fragment_comes_from_its_context() -> None:
    from frontdesk.acdl.parser import parse_syntax

    file_ast, diags = parse_syntax("P[@T]: {\n  Frag Outer[@T]\n  U: {\n    Frag Inner\n  }\n}")
    assert diags == [] and file_ast is not None
    outer, role = file_ast.specs[0].body
    assert outer.kind == "roles" and role.body[0].kind == "str" and role.body[0].args == []


def test_fragment_definitions_may_sit_in_a_prompt_body() -> None:
    body = spec_body("P[@T]: {\n  StrFrag D[x]: {\n    env.d[x]\n  }\n  U: {\n    Frag D[1]\n  }\n}")
    assert isinstance(body[0], StrFragDef) and body[1].body[0].kind == "str"


def test_mark_blocks_around_roles_and_inside_roles() -> None:
    outer, role = spec_body("P[@T]: {\n  Mark 1 {\n    S: X\n  }\n  A: {\n    Mark 2 {\n      resp.r[@t]\n    }\n  }\n}")
    assert isinstance(outer, Mark) and outer.number == 1 and outer.body[0].role == "S"
    assert role.body[0] == Mark(2, [ContextVar("resp", [PathSegment("r", [TimeIndex(["t"])])])])


def test_break_and_continue_in_loops() -> None:
    (loop,) = spec_body("P[@T]: {\n  ForEach(i: xs) {\n    If i > 2 {\n      break\n    }\n    Continue\n  }\n}")
    assert loop.body[0].branches[0].body == [Break()] and loop.body[1] == Continue()


def test_literal_strings_are_unescaped_and_reprinted() -> None:
    (role,) = spec_body("P[@T]: {\n  U: 'it\\'s \"quoted\"'\n}")
    assert role.body == [Literal("it's \"quoted\"", "string")]
    assert 'U: "it\'s \\"quoted\\""' in roundtrip(parse_ok("P[@T]: {\n  U: 'it\\'s \"quoted\"'\n}"))


def test_spans_point_at_the_source() -> None:
    file_ast = parse_ok("// c\nP[@T]: {\n    U: env.x[@t]\n}\n")
    spec = file_ast.specs[0]
    role = spec.body[0]
    assert (spec.span.line, spec.span.column, spec.span.end_line) == (2, 1, 4)
    assert (role.span.line, role.span.column) == (3, 5)
    assert (role.body[0].span.line, role.body[0].span.column) == (3, 8)
    assert role.body[0].path[0].indices[0].span.column == 14
    assert spec.span.file == "t.acdl"


def test_empty_file_and_comment_only_file() -> None:
    assert parse_ok("") == File([])
    assert parse_ok("// only\n\n// comments\n").items == [Comment("only"), Comment("comments")]
    assert format_acdl(parse_ok("// only\n\n// comments\n")) == "// only\n\n// comments\n"


# ---------------------------------------------------------------------------
# Printer on constructed trees and formatting choices
# ---------------------------------------------------------------------------


def test_printer_adds_parentheses_where_precedence_needs_them() -> None:
    from frontdesk.acdl import format_expr

    t, k = PlainName("t"), PlainName("k")
    assert format_expr(BinaryOp("*", BinaryOp("+", t, k), Literal(2, "number"))) == "(t + k) * 2"
    assert format_expr(BinaryOp("-", t, BinaryOp("-", k, Literal(1, "number")))) == "t - (k - 1)"
    assert format_expr(BoolOp("and", BoolOp("or", t, k), t)) == "(t | k) & t"
    assert format_expr(Not(Compare("==", t, k))) == "not t == k"  # not binds looser than ==
    assert format_expr(Compare("==", Not(t), k)) == "(not t) == k"


def test_printer_formats_a_constructed_tree() -> None:
    spec = PromptSpec(
        "Chat",
        [TimeIndex(["T"])],
        [
            RoleMessage("S", "single", [Template("INSTRUCTIONS", comment="what to do")]),
            ForEach("t", FunctionCall("range", [Literal(1, "number"), TimeIndex(["T"])]), [
                RoleMessage("U", "single", [ContextVar("env", [PathSegment("q", [TimeIndex(["t"])])])]),
            ], time_var=True),
            Mark(3, [RoleMessage("A", "block", [NameRef("x")])]),
        ],
    )
    frag = RolesFragDef("Turn", [TimeIndex(["t"])], [RoleMessage("U", "single", [ContextVar("env", [PathSegment("u")])])])
    text = format_acdl(File([frag, spec]))
    assert text == (
        "RolesFrag Turn[@t]: {\n    U: env.u\n}\n\n"
        "Chat[@T]: {\n    S: INSTRUCTIONS // what to do\n    ForEach(@t: range(1, @T)) {\n        U: env.q[@t]\n    }\n"
        "    Mark 3 {\n        A: {\n            $x\n        }\n    }\n}\n"
    )


def test_formatting_normalises_layout_but_keeps_one_blank_line() -> None:
    messy = "P[@T]:{\n  S:   INSTRUCTIONS     //  note  \n\n\n\n      U:{env.x}\n}"
    assert format_acdl(parse_ok(messy)) == "P[@T]: {\n    S: INSTRUCTIONS // note\n\n    U: {\n        env.x\n    }\n}\n"


def test_to_dict_names_every_node_and_omits_spans_on_request() -> None:
    file_ast = parse_ok("P[@T]: {\n  U: env.x[@t]\n}")
    data = file_ast.to_dict(spans=False)
    assert "span" not in json.dumps(data)
    role = data["items"][0]["body"][0]
    assert role["node"] == "RoleMessage" and role["role"] == "U" and role["form"] == "single"
    assert role["body"][0]["node"] == "ContextVar" and role["body"][0]["namespace"] == "env"


def test_string_fragment_as_a_function_argument() -> None:
    text = "StrFrag D[x]: {\n    env.d[x]\n}\n\nP[@T]: {\n    U: summarize(Frag D[1])\n}\n"
    file_ast = parse_ok(text)
    (role,) = file_ast.specs[0].body
    assert role.body[0].args == [FragInvoke("D", [Literal(1, "number")], "str")]
    assert roundtrip(file_ast) == text
