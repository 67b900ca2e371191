"""The engine's public shape (issue 24): no module outside runtime/engine.py reaches into the engine's
internals, the turn's context holds a typed link to the engine (runtime/driver.py), and the engine acts
on typed next steps (runtime/steps.py)."""

from __future__ import annotations

import ast
import dataclasses
import typing
from pathlib import Path

import pytest

from frontdesk.ir.models import Program
from frontdesk.lang import build as b
from frontdesk.runtime import steps
from frontdesk.runtime.context import TurnContext
from frontdesk.runtime.driver import Driver
from frontdesk.runtime.engine import Engine
from frontdesk.runtime.steps import Outcome, UnknownStep
from frontdesk.store.memory import MemorySessionStore

SRC = Path(__file__).resolve().parent.parent / "src" / "frontdesk"
ENGINE = SRC / "runtime" / "engine.py"
# the names an engine may be held by outside engine.py
ENGINE_NAMES = {"engine", "driver", "_engine", "eng"}


def _engine_privates() -> set[str]:
    """The names of the Engine class's own private methods (`_drive`, `_finish`, ...)."""
    tree = ast.parse(ENGINE.read_text(encoding="utf-8"))
    engine = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Engine")
    return {f.name for f in engine.body if isinstance(f, ast.FunctionDef) and f.name.startswith("_")
            and not f.name.startswith("__")}


def _private_engine_uses(path: Path, root: Path = SRC) -> list[str]:
    """`engine._x`, `ctx.engine._x`, `ctx.engine`, `getattr(engine, "_x")` and calls of `_drive` in a file."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, UnicodeDecodeError, OSError):  # the broken tool files some tests load on purpose
        return []
    where = path.relative_to(root)
    found = []
    for node in ast.walk(tree):  # a subclass of the engine that overrides or calls its private methods
        if isinstance(node, ast.ClassDef) and any(getattr(b, "id", getattr(b, "attr", "")) == "Engine"
                                                  for b in node.bases):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name in _engine_privates():
                    found.append(f"{where}:{item.lineno}: {node.name}.{item.name} overrides the engine's internals")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            holder = node.value
            held_by = holder.id if isinstance(holder, ast.Name) else \
                holder.attr if isinstance(holder, ast.Attribute) else ""
            if node.attr.startswith("_") and not node.attr.startswith("__") and held_by in ENGINE_NAMES:
                found.append(f"{where}:{node.lineno}: {held_by}.{node.attr}")
            elif node.attr == "engine" and isinstance(holder, ast.Name) and holder.id == "ctx":
                found.append(f"{where}:{node.lineno}: ctx.engine")
            elif node.attr in ("_drive", "_transfer", "_start", "_result", "_suspend_chain", "_take_chain",
                               "_new_thread", "_resume_handoff"):
                found.append(f"{where}:{node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
                and len(node.args) >= 2 and isinstance(node.args[0], (ast.Name, ast.Attribute)):
            first = node.args[0]
            held_by = first.id if isinstance(first, ast.Name) else first.attr
            if held_by in ENGINE_NAMES and isinstance(node.args[1], ast.Constant):
                found.append(f"{where}:{node.lineno}: getattr({held_by}, {node.args[1].value!r})")
    return found


def test_no_module_outside_the_engine_reaches_into_it():
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if path != ENGINE:
            found += _private_engine_uses(path)
    repo = SRC.parent.parent  # the tests and benchmarks use the public engine too
    for path in sorted([*(repo / "tests").rglob("*.py"), *(repo / "bench").rglob("*.py")]):
        if path != Path(__file__).resolve():
            found += _private_engine_uses(path, repo)
    assert not found, "the engine's internals used outside runtime/engine.py (use runtime/handoff.py or " \
                      "ctx.driver):\n" + "\n".join(found)


def test_the_check_finds_what_it_looks_for(tmp_path):
    """The check above fails on what the code did before issue 24."""
    sample = tmp_path / "sample.py"
    sample.write_text("def f(ctx, engine):\n    engine._transfer(1, 2, ctx)\n    ctx.engine._drive(ctx)\n"
                      "    return getattr(ctx.engine, 'orchestration', None)\n"
                      "class Mine(Engine):\n    def _finish(self, ctx):\n        return ctx\n", encoding="utf-8")
    found = _private_engine_uses(sample, tmp_path)
    assert any("engine._transfer" in f for f in found)
    assert any("._drive" in f for f in found)
    assert any("ctx.engine" in f for f in found)
    assert any("Mine._finish" in f for f in found)


def test_the_turn_context_links_to_the_engine_by_a_typed_protocol():
    hints = typing.get_type_hints(TurnContext, include_extras=True)
    fields = {f.name for f in dataclasses.fields(TurnContext)}
    assert "engine" not in fields, "TurnContext.engine: the context's link to the engine is `driver`"
    assert hints["driver"] == Driver | None
    for name in fields:
        if "engine" in name or "driver" in name:
            assert hints[name] is not typing.Any, f"TurnContext.{name} is annotated Any"
    # what the link offers: driving, a result to an executor, the engine's subscribers and strategy
    for member in ("drive_turn", "drive_task", "child_finished", "subscribers", "orchestration"):
        assert member in Driver.__annotations__ or callable(getattr(Driver, member, None)), member


def test_the_engine_is_a_driver():
    engine = Engine(_program(), None, MemorySessionStore())
    for member in ("drive_turn", "drive_task", "child_finished"):
        assert callable(getattr(engine, member))
    assert isinstance(engine.subscribers, list)
    assert engine.orchestration is None


# ---- next steps -----------------------------------------------------------------------------------


def test_each_next_step_is_a_small_frozen_type_with_its_kind():
    assert [t.kind for t in steps.STEP_TYPES] == ["wait", "done", "call", "transfer", "yield", "escalate"]
    made_by_name = ((Outcome.wait(), "wait", steps.Wait), (Outcome.done("error", "no"), "done", steps.Done),
                    (Outcome.switch("b"), "yield", steps.Yield), (Outcome.hand_back("x"), "yield", steps.Yield),
                    (Outcome.escalate("why"), "escalate", steps.Escalate))
    for made, kind, type_ in made_by_name:
        assert isinstance(made, type_) and isinstance(made, Outcome)
        assert made.kind == kind
        with pytest.raises(dataclasses.FrozenInstanceError):
            made.kind_of = "x"  # type: ignore[attr-defined]
    done = Outcome.done("error", "no", {"a": 1})
    assert (done.status, done.message, done.value) == ("error", "no", {"a": 1})
    assert Outcome.escalate("why").message == "why"
    assert Outcome.switch("b").target == "b" and Outcome.hand_back("x").reason == "hand_back"


def test_the_engine_dispatches_on_the_type_of_the_step():
    """A Done ends the agent; the session, with nobody left, ends."""
    engine = Engine(_program(), None, MemorySessionStore())
    result = engine.start()
    assert [m.text for m in result.messages] == ["Hello."]
    assert result.ended


class _Stray:
    """An executor that returns something that is not a next step."""

    def run(self, frame, ctx):
        return "done"  # the kind's name, not the step

    def child_finished(self, frame, child, ctx):  # pragma: no cover - never reached
        pass


def test_the_engine_rejects_an_unknown_step_with_a_clear_error():
    engine = Engine(_program(), None, MemorySessionStore())
    engine.executors["flow"] = _Stray()
    with pytest.raises(UnknownStep, match=r"greeter returned str 'done', which is not a next step"):
        engine.start()


def test_a_step_of_the_old_shape_is_rejected_too():
    class Legacy:
        kind = "wait"

    engine = Engine(_program(), None, MemorySessionStore())

    class Old(_Stray):
        def run(self, frame, ctx):
            return Legacy()

    engine.executors["flow"] = Old()
    with pytest.raises(UnknownStep):
        engine.start()


def _program() -> Program:
    return b.program(b.flow("greeter", [b.say("Hello.")]), entry="greeter")


# ---- the rules ride the pipeline ---------------------------------------------------------------------


def test_the_engine_calls_the_rules_only_through_the_pipeline():
    text = ENGINE.read_text(encoding="utf-8")
    for call in ("rules.attach", "rules.before_done", "rules.after_drive", "rules.handoff_allowed"):
        assert call not in text, f"engine.py calls {call} beside the pipeline"
    engine = Engine(_program(), None, MemorySessionStore())
    assert engine.rules is None and engine.pipeline.hooks == []  # no rules declared: no rules hook


class _Driving:
    """A hook at the points where the engine drives the agents."""

    def __init__(self, block: bool = False) -> None:
        self.calls: list[str] = []
        self.block = block

    def context_opened(self, ctx):
        self.calls.append("context_opened")

    def before_done(self, ctx, finishing):
        self.calls.append(f"before_done {finishing.frame.agent}")
        if self.block:
            finishing.outcome = dataclasses.replace(finishing.outcome, status="error", message="blocked")

    def after_drive(self, ctx):
        self.calls.append("after_drive")


def test_a_hook_rides_the_points_where_the_engine_drives_the_agents():
    hook = _Driving()
    engine = Engine(_program(), None, MemorySessionStore(), hooks=[hook])
    engine.start()
    assert hook.calls == ["context_opened", "before_done greeter", "after_drive"]


def test_a_hook_at_before_done_may_replace_the_agent_s_result():
    engine = Engine(_program(), None, MemorySessionStore(), hooks=[_Driving(block=True)])
    result = engine.start()
    state = engine.load_state(result.session_id)
    assert (state.results["greeter"].status, state.results["greeter"].message) == ("error", "blocked")
    finished = [e for e in result.events if e.type == "agent_finished"]
    assert finished[-1].data["status"] == "error"
