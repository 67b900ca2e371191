"""Rasa end-to-end test files converted to Frontdesk conversation tests.

What has a Frontdesk counterpart is converted (docs/testing.md has the table); every item that has none,
or only an approximate one, is reported with its line in the Rasa file, and listed in the converted
file's header comment. Rasa flows are Frontdesk agents, slots are agent arguments, custom actions are
tools.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from frontdesk.diagnostics import DiagnosticBag
from frontdesk.yamlsource import (
    YamlCodes,
    YMap,
    YNode,
    YScalar,
    YSeq,
    compose_yaml,
    to_python,
)

# a Rasa file that is not YAML fails the conversion as a whole (ValueError): the codes only label the text
_YAML = YamlCodes(read_error="TST001", syntax="TST001", duplicate_key="TST001", document="a Rasa test file")

# Rasa's own actions: they have no Frontdesk tool to stand for
RASA_BUILTIN_ACTIONS = ("action_listen", "action_restart", "action_session_start", "action_default_fallback",
                        "action_deactivate_loop", "action_revert_fallback_events", "action_two_stage_fallback",
                        "action_default_ask_affirmation", "action_default_ask_rephrase", "action_back",
                        "action_unlikely_intent", "action_extract_slots", "action_validate_slot_mappings",
                        "action_run_slot_rejections", "action_clean_stack", "action_trigger_search",
                        "action_trigger_chitchat", "action_cancel_flow", "action_correct_flow_slot",
                        "action_clarify_flows", "action_hangup", "action_repeat_bot_messages",
                        "action_block_digressions", "action_continue_digression")


@dataclass
class Unmapped:
    """A Rasa item with no Frontdesk equivalent (or only an approximate one: `approximate`)."""

    line: int
    item: str
    why: str
    approximate: bool = False

    def format(self, file: str) -> str:
        kind = "approximated" if self.approximate else "not converted"
        return f"{file}:{self.line}: {kind}: {self.item} — {self.why}"


@dataclass
class Conversion:
    document: dict[str, Any]
    unmapped: list[Unmapped] = field(default_factory=list)
    cases: int = 0

    def text(self, source: str, program: str | None = None) -> str:
        header = [f"# Converted from the Rasa end-to-end test file {source} by `frontdesk test --from-rasa`.",
                  "# Each step's `llm:` holds the scripted model answers its turn needs: add them where the",
                  "# program asks a model (docs/testing.md); a turn that calls the model without one fails."]
        if self.unmapped:
            header.append("#")
            header.append("# Rasa items without an exact Frontdesk equivalent:")
            for item in self.unmapped:
                header.append(f"#   line {item.line}: {'~ ' if item.approximate else ''}{item.item} — {item.why}")
        document = dict(self.document)
        if program:
            document = {"program": program, **document}
        body = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=110, default_flow_style=False)
        return "\n".join(header) + "\n\n" + body


def convert_rasa(text: str, file: str = "<rasa>", program=None) -> Conversion:
    """A Rasa e2e test file's text as a Frontdesk test document. `program` (optional, the loaded program)
    decides the shape of stubbed tool results (its tools' convention). ValueError: not a Rasa test file."""
    bag = DiagnosticBag()
    root = compose_yaml(text, file, bag, _YAML)
    if bag.has_errors or root is None:
        raise ValueError("\n".join(d.format(text) for d in bag.items) or f"{file}: the file is empty")
    if not isinstance(root, YMap) or "test_cases" not in root:
        raise ValueError(f"{file}: a Rasa end-to-end test file has a top-level `test_cases:` list")
    converter = _Converter(program)
    return converter.convert(root)


class _Converter:
    def __init__(self, program) -> None:
        self.program = program
        self.unmapped: list[Unmapped] = []
        self.stub_for_case: dict[str, dict[str, Any]] = {}

    def skip(self, node: YNode | YScalar, item: str, why: str, approximate: bool = False) -> None:
        self.unmapped.append(Unmapped(node.span.line, item, why, approximate))

    def convert(self, root: YMap) -> Conversion:
        document: dict[str, Any] = {}
        known = ("test_cases", "fixtures", "metadata", "stub_custom_actions")
        for key, value in root.pairs:
            if key.text not in known:
                self.skip(key, f"{key.text}:", "not part of Rasa's test case format")
        fixtures, today_of = self.fixtures(root.get("fixtures"))
        if fixtures:
            document["fixtures"] = fixtures
        if "metadata" in root:
            self.skip(root.keys["metadata"], "metadata:", "Frontdesk turns carry no user metadata; put what an agent needs in "
                      "fixtures or in the user's words")
        stubs = self.stubs(root.get("stub_custom_actions"))
        if stubs:
            document["stub_tools"] = stubs
        cases = []
        cases_node = root.get("test_cases")
        for item in cases_node.items if isinstance(cases_node, YSeq) else []:
            if isinstance(item, YMap):
                cases.append(self.case(item, fixtures, today_of))
        document["test_cases"] = cases
        return Conversion(document, sorted(self.unmapped, key=lambda u: u.line), len(cases))

    # -- file level --

    def fixtures(self, node: YNode | None) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
        """Named fixtures as Frontdesk writes them; Rasa's `mocked_datetime` slot becomes the case's `today:`."""
        out: dict[str, dict[str, Any]] = {}
        today_of: dict[str, str] = {}
        for entry in node.items if isinstance(node, YSeq) else []:
            if not (isinstance(entry, YMap) and len(entry.pairs) == 1):
                self.skip(entry, "fixture", "a Rasa fixture is `- name: [{slot: value}, ...]`")
                continue
            name, values = entry.pairs[0]
            slots: dict[str, Any] = {}
            for slot in values.items if isinstance(values, YSeq) else [values]:
                pairs = slot.pairs if isinstance(slot, YMap) else []
                for key, value in pairs:
                    if key.text == "mocked_datetime":
                        today_of[name.text] = str(to_python(value))
                    else:
                        slots[key.text] = to_python(value)
            if slots:  # a fixture of mocked_datetime alone is the case's today:
                out[name.text] = slots
        return out, today_of

    def stubs(self, node: YNode | None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in node.pairs if isinstance(node, YMap) else []:
            case, _, action = key.text.rpartition("::")
            answer = self.stub_answer(action, value, key)
            if case:
                self.stub_for_case.setdefault(case, {})[action] = answer
            else:
                out[action] = answer
        return out

    def stub_answer(self, action: str, node: YNode, key: YScalar) -> dict[str, Any]:
        """A Rasa stub (slot events and responses) as the result a Frontdesk tool returns, in the tool's
        convention (ADL's when the program is not known)."""
        slots: dict[str, Any] = {}
        texts: list[str] = []
        if isinstance(node, YMap):
            for event in (node.get("events").items if isinstance(node.get("events"), YSeq) else []):
                data = to_python(event) if isinstance(event, YMap) else {}
                if data.get("event") == "slot" and "name" in data:
                    slots[str(data["name"])] = data.get("value")
                else:
                    self.skip(event, f"stub event of {action}", "only slot events have a counterpart (the tool "
                              "sets arguments)")
            for response in (node.get("responses").items if isinstance(node.get("responses"), YSeq) else []):
                data = to_python(response) if isinstance(response, YMap) else {}
                if "text" in data:
                    texts.append(str(data["text"]))
                else:
                    self.skip(response, f"stub response of {action}", "only text responses have a counterpart")
        convention = "adl"
        if self.program is not None:
            tool = self.program.tools.get(action)
            if tool is None:
                self.skip(key, f"stub of {action}", "the program has no tool by this name; the stub is kept",
                          approximate=True)
            else:
                convention = tool.convention
        if convention == "adl":
            first: dict[str, Any] = {"status": "success"}
            if texts:
                first["msg"] = " ".join(texts)
            return {"result": [first] + [{"arg": k, "value": v} for k, v in slots.items()]}
        if texts:
            self.skip(key, f"responses of stub {action}", "a tool returning a value has no message: the "
                      "responses are dropped (the agent says what it says about the value)", approximate=True)
        return {"result": slots}

    # -- a case --

    def case(self, node: YMap, named_fixtures: dict, today_of: dict[str, str]) -> dict[str, Any]:
        name_node = node.get("test_case")
        name = name_node.text if isinstance(name_node, YScalar) else f"case_line_{node.span.line}"
        case: dict[str, Any] = {"name": name}
        for key, value in node.pairs:
            if key.text not in ("test_case", "steps", "fixtures", "metadata", "assertion_order_enabled"):
                self.skip(key, f"{key.text}:", "not part of Rasa's test case format")
            if key.text == "assertion_order_enabled":
                self.skip(key, "assertion_order_enabled", "Frontdesk checks bot messages in the order written and "
                          "the other checks in any order", approximate=True)
        if (fixtures := node.get("fixtures")) is not None:
            names = [i.text for i in fixtures.items if isinstance(i, YScalar)] if isinstance(fixtures, YSeq) else []
            for fixture_name in names:
                if fixture_name in today_of:
                    case["today"] = today_of[fixture_name]
            names = [n for n in names if named_fixtures.get(n)]
            if names:
                case["fixtures"] = names
        if "metadata" in node:
            self.skip(node.keys["metadata"], "metadata:", "Frontdesk turns carry no user metadata")
        if name in self.stub_for_case:
            case["stub_tools"] = self.stub_for_case[name]
        steps: list[dict[str, Any]] = []
        steps_node = node.get("steps")
        for step in steps_node.items if isinstance(steps_node, YSeq) else []:
            if isinstance(step, YMap):
                self.step(step, steps)
        case["steps"] = steps
        return case

    def _target(self, steps: list[dict[str, Any]]) -> dict[str, Any]:
        """The step that checks the latest turn (a new one if no step yet)."""
        if not steps:
            steps.append({})
        return steps[-1]

    def _add(self, steps: list[dict[str, Any]], key: str, value: Any, many: bool = True) -> None:
        target = self._target(steps)
        if key in target and not many:
            steps.append({key: value})
            return
        if key not in target:
            target[key] = value
            return
        current = target[key]
        if isinstance(current, list) and isinstance(value, list):
            current.extend(value)
        elif isinstance(current, dict) and isinstance(value, dict) and not (current.keys() & value.keys()):
            current.update(value)
        else:
            steps.append({key: value})  # a second check of the same key checks the same turn

    def step(self, node: YMap, steps: list[dict[str, Any]]) -> None:
        if "user" in node:
            user = node.get("user")
            steps.append({"user": user.text if isinstance(user, YScalar) else str(to_python(user))})
            if "metadata" in node:
                self.skip(node.keys["metadata"], "metadata:", "Frontdesk turns carry no user metadata")
            for assertion in node.get("assertions").items if isinstance(node.get("assertions"), YSeq) else []:
                self.assertion(assertion, steps)
            for key, _ in node.pairs:
                if key.text not in ("user", "metadata", "assertions"):
                    self.skip(key, f"{key.text}:", "not part of a Rasa user step")
            return
        for key, value in node.pairs:
            if key.text == "bot":
                self._add(steps, "bot", [value.text if isinstance(value, YScalar) else str(to_python(value))])
            elif key.text == "utter":
                self.skip(key, f"utter: {to_python(value)}", "Frontdesk has no named responses; check the text "
                          "with bot: or bot_matches:")
            elif key.text in ("slot_was_set", "slot_was_not_set"):
                self.slots(key.text, value, steps)
            else:
                self.skip(key, f"{key.text}:", "not a Rasa test step")

    def slots(self, kind: str, node: YNode, steps: list[dict[str, Any]]) -> None:
        """Rasa slot steps (`- name` or `- name: value`) and assertions (`- name: x, value: y`)."""
        for item in node.items if isinstance(node, YSeq) else [node]:
            if isinstance(item, YScalar):
                name, has_value, value = item.text, False, None
            elif isinstance(item, YMap) and "name" in item:
                name_node = item.get("name")
                name = name_node.text if isinstance(name_node, YScalar) else str(to_python(name_node))
                has_value, value = "value" in item, to_python(item.get("value")) if "value" in item else None
            elif isinstance(item, YMap) and len(item.pairs) == 1:
                key, v = item.pairs[0]
                name, has_value, value = key.text, True, to_python(v)
            else:
                self.skip(item, kind, "a slot is `name` or `name: value`")
                continue
            if kind == "slot_was_set":
                if has_value:
                    self._add(steps, "args", {name: value})
                else:
                    self._add(steps, "args_set", [name])
            elif has_value:
                self._add(steps, "args_not_set", {name: value})
            else:
                self._add(steps, "args_not_set", [name])

    def assertion(self, node: YNode, steps: list[dict[str, Any]]) -> None:
        if not (isinstance(node, YMap) and len(node.pairs) == 1):
            self.skip(node, "assertion", "an assertion is a mapping with one key")
            return
        key, value = node.pairs[0]
        kind = key.text
        data = to_python(value)
        if kind == "flow_started":
            if isinstance(data, str):
                ids, operator = [data], "all"
            elif isinstance(data, dict):
                ids = data.get("flow_ids") or ([data["flow_id"]] if "flow_id" in data else [])
                operator = str(data.get("operator", "all"))
            else:
                ids, operator = [str(i) for i in data or []], "all"
            if operator == "any" and len(ids) > 1:
                self.skip(key, "flow_started with operator any", "Frontdesk checks each agent it names; the first "
                          f"one, {ids[0]}, is checked", approximate=True)
                ids = ids[:1]
            self._add(steps, "events", [{"type": "agent_started", "agent": str(i)} for i in ids])
        elif kind == "flow_completed":
            data = data if isinstance(data, dict) else {"flow_id": data}
            self._add(steps, "events", [{"type": "agent_finished", "agent": str(data.get("flow_id"))}])
            if data.get("flow_step_id"):
                self.skip(key, "flow_completed flow_step_id", "the step an agent finished at is not checked "
                          "(the agent's finishing is)", approximate=True)
        elif kind == "flow_cancelled":
            self.skip(key, f"flow_cancelled: {data}", "Frontdesk agents are not cancelled: a user who turns away "
                      "suspends the agent (an `agent_suspended` event), which is not the same")
        elif kind == "pattern_clarification_contains":
            self._add(steps, "events", [{"type": "step", "action": "clarifying question"}])
            self.skip(key, "pattern_clarification_contains", "the clarifying question is checked, not the flows it "
                      "offers (a router offers its two closest members)", approximate=True)
        elif kind in ("slot_was_set", "slot_was_not_set"):
            self.slots(kind, value, steps)
        elif kind == "action_executed":
            name = str(data)
            if name in RASA_BUILTIN_ACTIONS or name.startswith(("utter_", "validate_", "pattern_")):
                self.skip(key, f"action_executed: {name}", "a Rasa action of its own, not a tool")
            else:
                self._add(steps, "tool_called", [name])
        elif kind in ("bot_uttered", "bot_did_not_utter"):
            data = data if isinstance(data, dict) else {}
            if "text_matches" in data:
                self._add(steps, "bot_matches" if kind == "bot_uttered" else "bot_not_matches",
                          [str(data["text_matches"])])
            for extra in ("utter_name", "buttons"):
                if extra in data:
                    self.skip(key, f"{kind} {extra}", "Frontdesk has no named responses" if extra == "utter_name"
                              else "buttons are not checked (a message's actions are not part of the checks)")
        elif kind == "generative_response_is_grounded":
            data = data if isinstance(data, dict) else {}
            truth = data.get("ground_truth")
            if truth:
                self._add(steps, "bot_like", [{"text": str(truth), "threshold": float(data.get("threshold", 0.75))}])
                self.skip(key, kind, "compared by meaning with the ground truth (local embeddings), not judged "
                          "by an LLM", approximate=True)
            else:
                self.skip(key, kind, "without ground_truth there is nothing to compare the reply with")
        elif kind == "generative_response_is_relevant":
            self.skip(key, kind, "relevance is an LLM judge's verdict; Frontdesk tests compare with texts "
                      "(bot_like) — `frontdesk eval` judges answers")
        else:
            self.skip(key, kind, "not a Rasa assertion Frontdesk knows")


def rasa_command(source: Path, output: Path | None, program_path: Path | None) -> int:
    """`frontdesk test --from-rasa FILE`: write the conversion, report what was not converted. Exit 0 when
    converted, 2 when the file cannot be read."""
    from rich.console import Console
    from rich.text import Text

    err = Console(stderr=True, highlight=False, soft_wrap=True)
    files = sorted(p for p in source.rglob("*.y*ml")) if source.is_dir() else [source]
    if not files:
        err.print(Text(f"error: no YAML files under {source}", style="red"))
        return 2
    program = None
    if program_path is not None:
        from frontdesk.lang import load_program

        program, diags = load_program(program_path)
        if program is None or any(d.is_error for d in diags):
            err.print(Text(f"error: the program {program_path} does not load", style="red"))
            return 2
    written = []
    for file in files:
        try:
            conversion = convert_rasa(file.read_text(encoding="utf-8"), str(file), program)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            err.print(Text(f"error: {exc}", style="red"))
            return 2
        # a folder of Rasa files: one converted file each, in the --output folder
        target = (output / f"test_{file.stem}.yml" if source.is_dir() else output) if output is not None else None
        shown_program = None
        if program_path is not None:
            where = target.parent if target is not None else Path.cwd()
            try:
                shown_program = str(Path(program_path).resolve().relative_to(where.resolve(), walk_up=True))
            except (ValueError, TypeError):  # another drive; Python 3.11 has no walk_up
                shown_program = str(Path(program_path).resolve())
        text = conversion.text(str(file), shown_program)
        for item in conversion.unmapped:
            err.print(Text(item.format(str(file)), style="dim" if item.approximate else "yellow"))
        exact = sum(1 for u in conversion.unmapped if not u.approximate)
        err.print(Text(f"{file}: {conversion.cases} test case(s) converted; {exact} item(s) not converted, "
                       f"{len(conversion.unmapped) - exact} approximated", style="green"))
        if target is None:
            sys.stdout.write(text if not written else "\n# ---- next file ----\n" + text)
            written.append(None)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        written.append(target)
        err.print(Text(f"wrote {target}", style="dim"))
    return 0
