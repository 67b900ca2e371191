"""The verifier's pattern semantics on hand-written specifications and calls."""

from frontdesk.acdl import parse_acdl
from frontdesk.acdl.verify import verify_calls

SPEC = """
Chat[@T]: {
    S: {
        INSTRUCTIONS
        If sys.tools {
            AVAILABLE_TOOLS
        }
    }
    Mark 1 {
        ForEach(@t: range(1, @T)) {
            U: env.user_input[@t]
            A: resp.answer[@t]
        }
    }
    U: env.user_input[@T]
    PromptEndsHere when @T == 1
    Switch sys.mode {
        Case "tools" {
            T: sys.tool_result[@T]
        }
    }
}
"""


def call(*messages, plan="Chat"):
    structure = [{"role": role, "elements": list(elements)} for role, *elements in messages]
    return {"type": "llm_call", "seq": 1, "data": {"plan": plan, "structure": structure}}


def check(*messages):
    file_ast, diags = parse_acdl(SPEC, "chat.acdl")
    assert file_ast is not None and not [d for d in diags if d.is_error]
    return verify_calls(file_ast, [call(*messages)])[0]


def test_loops_options_and_early_end_match():
    assert check(("S", "INSTRUCTIONS"), ("U", "env.user_input")).ok
    assert check(("S", "INSTRUCTIONS", "AVAILABLE_TOOLS"),
                 ("U", "env.user_input"), ("A", "resp.answer"),
                 ("U", "env.user_input"), ("A", "resp.answer"),
                 ("U", "env.user_input"), ("T", "sys.tool_result")).ok


def test_first_mismatch_is_reported():
    result = check(("S", "INSTRUCTIONS"), ("A", "resp.answer"))
    assert not result.ok and result.problem.startswith("message 2: expected")
    result = check(("S", "AVAILABLE_TOOLS"), ("U", "env.user_input"))
    assert "element 1: expected INSTRUCTIONS" in result.problem
    result = check(("S", "INSTRUCTIONS"), ("U", "env.user_input"), ("U", "env.user_input"))
    assert not result.ok


def test_calls_without_elements_are_checked_by_role_and_unknown_plans_are_skipped():
    file_ast, _ = parse_acdl(SPEC, "chat.acdl")
    roles_only = {"type": "llm_call", "seq": 2, "data": {"plan": "Chat", "messages": [
        {"role": "system", "content": "x"}, {"role": "user", "content": "hi"}]}}
    assert verify_calls(file_ast, [roles_only])[0].ok
    assert verify_calls(file_ast, [call(("S", "X"), plan="Other")]) == []
