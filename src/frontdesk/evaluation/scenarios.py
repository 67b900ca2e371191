"""The scenario file of `frontdesk eval`: simulated users with personas and goals, and evaluators.

A scenario file is YAML:

    defaults:            # optional: values every scenario gets unless it says otherwise
      max_turns: 8
      today: 2026-11-22
    script: offline.yml  # optional: scripted answers (a file, or the mapping inline), see below
    scenarios:
      - name: recommend_and_buy
        persona: A retired teacher who reads a science-fiction novel a week.
        goals:
          - get a science-fiction recommendation
          - order the recommended book
        max_turns: 6
        first_message: Can you recommend a science fiction book?
        fixtures: {triage.date: "2026-11-22"}
        evaluators:
          - tool_called: place_order
          - judge: task completed - the customer ordered a book
        script:          # optional: this scenario's scripted answers
          user: [...]    # the simulated user's model answers (reply: text, or call: finish)
          judge: [...]   # the judge's answers (call: verdict with: {verdict: pass, reason: ...})
          llm: [...]     # the bot's model answers, as in a conversation file's llm:

Errors are diagnostics with the file, line and column (codes EVAL001-EVAL009).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from frontdesk.diagnostics import Diagnostic, DiagnosticBag, Span, did_you_mean
from frontdesk.textutil import cut
from frontdesk.yamlsource import YamlCodes

FORMAT_SYNTAX = "EVAL001"  # YAML syntax (or a duplicate key)
FORMAT_SHAPE = "EVAL002"  # a value of the wrong kind (a list where a mapping belongs, ...)
FORMAT_UNKNOWN_KEY = "EVAL003"
FORMAT_MISSING_KEY = "EVAL004"
FORMAT_BAD_VALUE = "EVAL005"  # a number out of range, a bad regex, a bad date
FORMAT_DUPLICATE = "EVAL006"  # two scenarios with one name
FORMAT_EVALUATOR = "EVAL007"  # an evaluator with no kind, or two
FORMAT_SCRIPT = "EVAL008"  # a scripted answer the scripted model would refuse
FORMAT_READ = "EVAL009"  # the file cannot be read
_YAML = YamlCodes(read_error=FORMAT_READ, syntax=FORMAT_SYNTAX, duplicate_key=FORMAT_SYNTAX, document="a scenario file")

DEFAULT_MAX_TURNS = 10
MAX_TURNS_LIMIT = 200

FILE_KEYS = ("scenarios", "defaults", "script")
DEFAULT_KEYS = ("max_turns", "today", "fixtures")
SCENARIO_KEYS = ("name", "description", "persona", "goals", "max_turns", "first_message", "fixtures", "today",
                 "evaluators", "script")
SCRIPT_ROLES = ("user", "judge", "llm")

# Each evaluator kind and the keys it may have besides its own (every evaluator may have `name`).
EVALUATOR_KINDS: dict[str, tuple[str, ...]] = {
    "tool_called": ("with", "status"),
    "tool_not_called": ("with",),
    "agent_reached": (),
    "agent_not_reached": (),
    "value": ("equals", "contains", "matches", "set"),
    "bot_said": (),
    "bot_never_said": (),
    "turns_at_most": (),
    "ended": (),
    "escalated": (),
    "completed": (),
    "judge": (),
}
VALUE_TESTS = ("equals", "contains", "matches", "set")
TEXT_FORMS = ("text", "regex")


@dataclass
class Evaluator:
    """One check on a finished conversation. `kind` is a key of EVALUATOR_KINDS; `target` is what the
    kind's own key says (a tool, an agent, a slot, a text, a number, a flag or a criterion)."""

    kind: str
    target: Any
    label: str
    options: dict[str, Any] = field(default_factory=dict)
    span: Span | None = None

    @property
    def judged(self) -> bool:
        return self.kind == "judge"


@dataclass
class Script:
    """Scripted model answers for one scenario's roles; None: the role uses a configured model."""

    user: list[dict] | None = None
    judge: list[dict] | None = None
    llm: list[dict] | None = None

    def merged(self, other: Script | None) -> Script:
        """This script with `other`'s roles where it has none."""
        if other is None:
            return self
        return Script(self.user if self.user is not None else other.user,
                      self.judge if self.judge is not None else other.judge,
                      self.llm if self.llm is not None else other.llm)


@dataclass
class Scenario:
    name: str
    persona: str
    goals: list[str]
    evaluators: list[Evaluator]
    max_turns: int = DEFAULT_MAX_TURNS
    first_message: str | None = None
    fixtures: dict[str, Any] = field(default_factory=dict)
    today: str | None = None
    description: str = ""
    script: Script | None = None
    span: Span | None = None

    @property
    def needs_judge(self) -> bool:
        return any(e.judged for e in self.evaluators)


@dataclass
class ScenarioFile:
    path: str
    scenarios: list[Scenario]


# ---- reading ------------------------------------------------------------------------------------


def load_scenarios(path: str | Path, script: str | Path | None = None) -> tuple[ScenarioFile | None, list[Diagnostic]]:
    """Read and check a scenario file, and `script` (a --script file) if given: the scenarios, or None
    and the diagnostics (each with file, line and column) when anything is wrong."""
    bag = DiagnosticBag()
    path = Path(path)
    root = _compose(path, bag)
    if root is None:
        return None, bag.items
    reader = _Reader(str(path), bag)
    scenarios = reader.read_file(root, path.parent)
    if script is not None:
        script_root = _compose(Path(script), bag)
        if script_root is not None and scenarios is not None:
            _Reader(str(script), bag).apply_script_file(script_root, scenarios, override=True)
    if bag.has_errors or scenarios is None:
        return None, bag.sorted()
    return ScenarioFile(str(path), scenarios), bag.sorted()


def _compose(path: Path, bag: DiagnosticBag):
    """The file's located YAML tree, or None with a diagnostic."""
    from frontdesk.diagnostics import SourceReadError, read_source_bytes
    from frontdesk.yamlsource import compose_yaml

    try:
        text = read_source_bytes(path).decode("utf-8")
    except SourceReadError as exc:
        bag.error(FORMAT_READ, f"cannot read {path}: {exc}", Span(file=str(path)), hint=exc.hint)
        return None
    except UnicodeDecodeError:
        bag.error(FORMAT_READ, f"{path} is not UTF-8 text", Span(file=str(path), line=1, column=1),
                  hint="save the file as UTF-8")
        return None
    before = len(bag.items)
    root = compose_yaml(text, str(path), bag, _YAML)
    if root is None and len(bag.items) == before:
        bag.error(FORMAT_SHAPE, f"{path} is empty", Span(file=str(path), line=1, column=1),
                  hint="a scenario file is a mapping with a 'scenarios:' list")
    return root


class _Reader:
    def __init__(self, file: str, bag: DiagnosticBag) -> None:
        self.file = file
        self.bag = bag

    # -- helpers --

    def error(self, code: str, message: str, node: Any, hint: str | None = None) -> None:
        span = getattr(node, "span", None) or Span(file=self.file, line=1, column=1)
        self.bag.error(code, message, span, hint)

    def mapping(self, node: Any, what: str, hint: str | None = None):
        from frontdesk.yamlsource import YMap, kind_name

        if isinstance(node, YMap):
            return node
        self.error(FORMAT_SHAPE, f"{what} must be a mapping, not {kind_name(node)}", node, hint)
        return None

    def keys(self, node, allowed: tuple[str, ...], what: str) -> None:
        for key, _ in node.pairs:
            if key.text not in allowed:
                guess = did_you_mean(key.text, allowed)
                self.error(FORMAT_UNKNOWN_KEY, f"unknown key '{key.text}' in {what}"
                           + (f" (did you mean '{guess}'?)" if guess else ""), key,
                           f"the keys of {what} are: {', '.join(allowed)}")

    def text(self, node: Any, what: str) -> str | None:
        from frontdesk.yamlsource import YScalar, kind_name

        if isinstance(node, YScalar) and not (node.plain and node.value is None):
            return node.text
        self.error(FORMAT_SHAPE, f"{what} must be text, not {kind_name(node)}", node)
        return None

    def texts(self, node: Any, what: str) -> list[str] | None:
        from frontdesk.yamlsource import YScalar, YSeq

        if isinstance(node, YScalar):
            one = self.text(node, what)
            return [one] if one is not None else None
        if isinstance(node, YSeq):
            out = [self.text(item, f"each of {what}") for item in node.items]
            return [t for t in out if t is not None] if all(t is not None for t in out) else None
        self.error(FORMAT_SHAPE, f"{what} must be text or a list of texts", node)
        return None

    def count(self, node: Any, what: str, low: int = 1, high: int = MAX_TURNS_LIMIT) -> int | None:
        from frontdesk.yamlsource import YScalar, kind_name

        value = node.value if isinstance(node, YScalar) and node.plain else None
        if isinstance(value, bool) or not isinstance(value, int):
            self.error(FORMAT_SHAPE, f"{what} must be a whole number, not {kind_name(node)}", node)
            return None
        if not low <= value <= high:
            self.error(FORMAT_BAD_VALUE, f"{what} must be between {low} and {high}, not {value}", node)
            return None
        return value

    def flag(self, node: Any, what: str) -> bool | None:
        from frontdesk.yamlsource import YScalar, kind_name

        value = node.value if isinstance(node, YScalar) and node.plain else None
        if not isinstance(value, bool):
            self.error(FORMAT_SHAPE, f"{what} must be true or false, not {kind_name(node)}", node)
            return None
        return value

    def date(self, node: Any, what: str) -> str | None:
        from datetime import datetime

        text = self.text(node, what)
        if text is None:
            return None
        try:
            datetime.fromisoformat(text)
        except ValueError:
            self.error(FORMAT_BAD_VALUE, f"{what}: '{text}' is not a date such as 2026-11-22 or 2026-11-22T09:00",
                       node)
            return None
        return text

    def fixtures(self, node: Any) -> dict[str, Any] | None:
        from frontdesk.yamlsource import to_python

        fixtures = self.mapping(node, "fixtures", "write `fixtures: {agent.argument: value}`")
        if fixtures is None:
            return None
        out = {}
        for key, value in fixtures.pairs:
            if not re.fullmatch(r"[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)?", key.text):
                self.error(FORMAT_BAD_VALUE, f"fixture '{key.text}' is not an argument name "
                           "(write `name` or `agent.name`)", key)
                continue
            out[key.text] = to_python(value)
        return out

    # -- the file --

    def read_file(self, root: Any, folder: Path) -> list[Scenario] | None:
        top = self.mapping(root, "a scenario file", "write `scenarios:` followed by a list of scenarios")
        if top is None:
            return None
        self.keys(top, FILE_KEYS, "a scenario file")
        defaults: dict[str, Any] = {}
        given_defaults = top.get("defaults")
        if given_defaults is not None:
            d = self.mapping(given_defaults, "defaults")
            if d is not None:
                self.keys(d, DEFAULT_KEYS, "defaults")
                if d.get("max_turns") is not None:
                    defaults["max_turns"] = self.count(d.get("max_turns"), "defaults: max_turns")
                if d.get("today") is not None:
                    defaults["today"] = self.date(d.get("today"), "defaults: today")
                if d.get("fixtures") is not None:
                    defaults["fixtures"] = self.fixtures(d.get("fixtures")) or {}
        listed = top.get("scenarios")
        if listed is None:
            self.error(FORMAT_MISSING_KEY, "a scenario file needs a 'scenarios:' list", top,
                       "write `scenarios:` followed by `- name: ...` items")
            return None
        from frontdesk.yamlsource import YSeq

        if not isinstance(listed, YSeq) or not listed.items:
            self.error(FORMAT_SHAPE, "'scenarios' must be a non-empty list of scenarios", listed)
            return None
        scenarios: list[Scenario] = []
        seen: dict[str, Scenario] = {}
        for item in listed.items:
            scenario = self.scenario(item, defaults)
            if scenario is None:
                continue
            if scenario.name in seen:
                first = seen[scenario.name].span
                self.error(FORMAT_DUPLICATE, f"two scenarios are named '{scenario.name}' (the first at line "
                           f"{first.line if first else '?'})", item, "give each scenario its own name")
                continue
            seen[scenario.name] = scenario
            scenarios.append(scenario)
        script = top.get("script")
        if script is not None:
            from frontdesk.yamlsource import YScalar

            if isinstance(script, YScalar):
                name = self.text(script, "script")
                if name is not None:
                    script_path = folder / name
                    script_root = _compose(script_path, self.bag)
                    if script_root is not None:
                        _Reader(str(script_path), self.bag).apply_script_file(script_root, scenarios, override=False)
            else:
                self.apply_script_file(script, scenarios, override=False)
        return scenarios

    def scenario(self, node: Any, defaults: dict[str, Any]) -> Scenario | None:
        item = self.mapping(node, "each scenario", "write `- name: ...` with persona, goals and evaluators")
        if item is None:
            return None
        self.keys(item, SCENARIO_KEYS, "a scenario")
        ok = True
        for required in ("name", "persona", "goals", "evaluators"):
            if item.get(required) is None:
                where = item.get("name")
                named = f" '{where.text}'" if where is not None and hasattr(where, "text") else ""
                self.error(FORMAT_MISSING_KEY, f"scenario{named} has no '{required}'", item,
                           _REQUIRED_HINTS[required])
                ok = False
        if not ok:
            return None
        name = self.text(item.get("name"), "name")
        persona = self.text(item.get("persona"), "persona")
        goals = self.texts(item.get("goals"), "goals")
        if name is not None and not name.strip():
            self.error(FORMAT_BAD_VALUE, "a scenario's name cannot be empty", item.get("name"))
            name = None
        max_turns = defaults.get("max_turns") or DEFAULT_MAX_TURNS
        if item.get("max_turns") is not None:
            max_turns = self.count(item.get("max_turns"), "max_turns")
        first = None
        if item.get("first_message") is not None:
            first = self.text(item.get("first_message"), "first_message")
        today = defaults.get("today")
        if item.get("today") is not None:
            today = self.date(item.get("today"), "today")
        fixtures = dict(defaults.get("fixtures") or {})
        if item.get("fixtures") is not None:
            own = self.fixtures(item.get("fixtures"))
            fixtures.update(own or {})
        description = ""
        if item.get("description") is not None:
            description = self.text(item.get("description"), "description") or ""
        evaluators = self.evaluators(item.get("evaluators"))
        script = self.script(item.get("script"), f"scenario '{name}'") if item.get("script") is not None else None
        if None in (name, persona, goals, max_turns, evaluators):
            return None
        return Scenario(name=name.strip(), persona=persona, goals=goals, evaluators=evaluators,  # type: ignore[union-attr]
                        max_turns=max_turns, first_message=first, fixtures=fixtures, today=today,  # type: ignore[arg-type]
                        description=description, script=script, span=item.span)

    # -- evaluators --

    def evaluators(self, node: Any) -> list[Evaluator] | None:
        from frontdesk.yamlsource import YSeq

        if not isinstance(node, YSeq) or not node.items:
            self.error(FORMAT_SHAPE, "'evaluators' must be a non-empty list", node,
                       "for example `- tool_called: place_order` or `- judge: the customer got an answer`")
            return None
        out: list[Evaluator] = []
        labels: dict[str, int] = {}
        failed = False
        for item in node.items:
            evaluator = self.evaluator(item)
            if evaluator is None:
                failed = True
                continue
            count = labels.get(evaluator.label, 0) + 1
            labels[evaluator.label] = count
            if count > 1:
                evaluator.label = f"{evaluator.label} #{count}"
            out.append(evaluator)
        return None if failed else out

    def evaluator(self, node: Any) -> Evaluator | None:
        from frontdesk.yamlsource import YScalar, to_python

        if isinstance(node, YScalar) and node.text in ("ended", "completed", "escalated"):
            node_value = node  # `- completed` is short for `- completed: true`
            return Evaluator(node.text, True, node.text, span=node_value.span)
        item = self.mapping(node, "each evaluator", "for example `- tool_called: place_order`")
        if item is None:
            return None
        kinds = [k for k in item.key_names() if k in EVALUATOR_KINDS]
        if len(kinds) != 1:
            if kinds:
                self.error(FORMAT_EVALUATOR, f"an evaluator has one kind, this one has {len(kinds)}: "
                           f"{', '.join(kinds)}", item, "write each check as its own `- ...` item")
            else:
                unknown = [k for k in item.key_names() if k != "name"]
                guess = did_you_mean(unknown[0], EVALUATOR_KINDS) if unknown else None
                self.error(FORMAT_EVALUATOR, "this evaluator has no kind"
                           + (f": '{unknown[0]}' is not one (did you mean '{guess}'?)" if guess else
                              (f": '{unknown[0]}' is not one" if unknown else "")),
                           item.keys.get(unknown[0]) if unknown else item,
                           f"the kinds are: {', '.join(EVALUATOR_KINDS)}")
            return None
        kind = kinds[0]
        self.keys(item, (kind, "name", *EVALUATOR_KINDS[kind]), f"a '{kind}' evaluator")
        value = item.get(kind)
        label = None
        if item.get("name") is not None:
            label = self.text(item.get("name"), "an evaluator's name")
        options: dict[str, Any] = {}
        span = item.span
        if kind in ("tool_called", "tool_not_called", "agent_reached", "agent_not_reached"):
            target = self.text(value, kind)
            if target is None:
                return None
            if item.get("with") is not None:
                args = self.mapping(item.get("with"), "with", "write `with: {argument: value}`")
                if args is None:
                    return None
                options["with"] = to_python(args)
            if item.get("status") is not None:
                status = self.text(item.get("status"), "status")
                if status not in ("success", "error"):
                    self.error(FORMAT_BAD_VALUE, f"status must be success or error, not '{status}'", item.get("status"))
                    return None
                options["status"] = status
            default = {"tool_called": f"called {target}", "tool_not_called": f"never called {target}",
                       "agent_reached": f"reached {target}", "agent_not_reached": f"never reached {target}"}[kind]
            if options.get("with"):
                default += "(" + ", ".join(f"{k}={v!r}" for k, v in options["with"].items()) + ")"
        elif kind == "value":
            target = self.text(value, "value")
            if target is None:
                return None
            tests = [k for k in VALUE_TESTS if item.get(k) is not None]
            if len(tests) > 1:
                self.error(FORMAT_EVALUATOR, f"a 'value' evaluator tests one thing, this one has "
                           f"{', '.join(tests)}", item, "write a `- value:` item for each")
                return None
            test = tests[0] if tests else "set"
            expected = to_python(item.get(test)) if tests else True
            if test == "set" and not isinstance(expected, bool):
                self.error(FORMAT_SHAPE, "set must be true or false", item.get("set"))
                return None
            if test == "matches":
                pattern = self.regex(item.get("matches"), "matches")
                if pattern is None:
                    return None
                expected = pattern
            options = {"test": test, "expected": expected}
            shown = {"equals": f"= {expected!r}", "contains": f"contains {expected!r}",
                     "matches": f"matches /{expected}/", "set": "is set" if expected else "is not set"}[test]
            default = f"{target} {shown}"
        elif kind in ("bot_said", "bot_never_said"):
            target, regex = self.said(value, kind)
            if target is None:
                return None
            options["regex"] = regex
            verb = "said" if kind == "bot_said" else "never said"
            default = f"bot {verb} " + (f"/{target}/" if regex else repr(target))
        elif kind == "turns_at_most":
            target = self.count(value, "turns_at_most")
            if target is None:
                return None
            default = f"at most {target} turns"
        elif kind in ("ended", "completed", "escalated"):
            target = self.flag(value, kind)
            if target is None:
                return None
            default = kind if target else f"not {kind}"
        else:  # judge
            target = self.text(value, "judge")
            if target is None:
                return None
            if not target.strip():
                self.error(FORMAT_BAD_VALUE, "a judge needs a criterion in words", value)
                return None
            default = "judge: " + cut(target, 60, "...")
        return Evaluator(kind, target, (label or default).strip() or default, options, span)

    def said(self, node: Any, kind: str) -> tuple[str | None, bool]:
        from frontdesk.yamlsource import YMap

        if isinstance(node, YMap):
            self.keys(node, TEXT_FORMS, f"'{kind}'")
            forms = [k for k in TEXT_FORMS if node.get(k) is not None]
            if len(forms) != 1:
                self.error(FORMAT_SHAPE, f"'{kind}' takes either `text:` or `regex:`", node)
                return None, False
            if forms[0] == "regex":
                return self.regex(node.get("regex"), "regex"), True
            return self.text(node.get("text"), "text"), False
        return self.text(node, kind), False

    def regex(self, node: Any, what: str) -> str | None:
        import regex

        pattern = self.text(node, what)
        if pattern is None:
            return None
        try:
            regex.compile(pattern)
        except regex.error as exc:
            self.error(FORMAT_BAD_VALUE, f"{what}: not a valid regular expression: {exc}", node)
            return None
        return pattern

    # -- scripts --

    def script(self, node: Any, what: str) -> Script | None:
        from frontdesk.yamlsource import YSeq, to_python
        from frontdesk.llm.base import ScriptError
        from frontdesk.llm.scripted import _validate_entry

        mapping = self.mapping(node, f"the script of {what}",
                               "write `script: {user: [...], judge: [...], llm: [...]}`")
        if mapping is None:
            return None
        self.keys(mapping, SCRIPT_ROLES, "a scenario's script")
        roles: dict[str, list[dict] | None] = {}
        for role in SCRIPT_ROLES:
            given = mapping.get(role)
            if given is None:
                roles[role] = None
                continue
            if not isinstance(given, YSeq):
                self.error(FORMAT_SHAPE, f"script '{role}' must be a list of model answers", given)
                roles[role] = None
                continue
            entries = []
            for number, entry_node in enumerate(given.items, start=1):
                entry = to_python(entry_node)
                try:
                    _validate_entry(entry, number)
                except ScriptError as exc:
                    self.error(FORMAT_SCRIPT, f"script '{role}': {exc}", entry_node,
                               "an answer is {reply: text}, {call: name, with: {...}}, {calls: [...]} or {error: text}")
                entries.append(entry)
            roles[role] = entries
        return Script(roles["user"], roles["judge"], roles["llm"])

    def apply_script_file(self, root: Any, scenarios: list[Scenario], override: bool) -> None:
        """A script file (or a scenario file's `script:` mapping): scenario name -> {user, judge, llm}.
        With `override` (--script) its roles win over a scenario's own; else a scenario's own win."""
        top = self.mapping(root, "a script", "write `scenario name: {user: [...], judge: [...], llm: [...]}`")
        if top is None:
            return
        by_name = {s.name: s for s in scenarios}
        for key, value in top.pairs:
            scenario = by_name.get(key.text)
            if scenario is None:
                guess = did_you_mean(key.text, list(by_name))
                self.error(FORMAT_UNKNOWN_KEY, f"the script names scenario '{key.text}', which is not in the "
                           "scenario file" + (f" (did you mean '{guess}'?)" if guess else ""), key,
                           f"the scenarios are: {', '.join(by_name) or '(none)'}")
                continue
            script = self.script(value, f"scenario '{key.text}'")
            if script is None:
                continue
            if override:
                scenario.script = script.merged(scenario.script)
            else:
                scenario.script = scenario.script.merged(script) if scenario.script else script


_REQUIRED_HINTS = {
    "name": "give the scenario a name, e.g. `name: recommend_and_buy`",
    "persona": "say who the simulated user is, e.g. `persona: a student on a budget who is in a hurry`",
    "goals": "say what the simulated user wants, e.g. `goals: [get a recommendation, order the book]`",
    "evaluators": "say how the conversation is judged, e.g. `evaluators: [{tool_called: place_order}]`",
}
