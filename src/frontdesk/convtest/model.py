"""The conversation test format: files read with positions into cases, turns and checks.

A file holds one conversation (`steps:` at the top) or several (`test_cases:`, each with `steps:`);
in the second form the keys beside `test_cases:` are defaults every case may override, and
`fixtures:` there names sets of values that cases pick by name. A step is a mapping: with `user:` it
starts a turn, and its other keys check that turn; without, it checks the latest turn (before any
`user:` step: the opening turn, where the bot greets). See docs/testing.md.

Every problem in a file is a Diagnostic at its file:line:column (TestFormatError carries them all).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from frontdesk.diagnostics import (
    Diagnostic,
    DiagnosticBag,
    Severity,
    Span,
    did_you_mean,
)
from frontdesk.textutil import cut
from frontdesk.yamlsource import (
    YamlCodes,
    YMap,
    YNode,
    YScalar,
    YSeq,
    compose_yaml,
    kind_name,
    to_python,
)

# diagnostic codes of test files
SYNTAX = "TST001"  # not YAML, a duplicate key
UNKNOWN_KEY = "TST002"
WRONG_TYPE = "TST003"
MISSING = "TST004"
BAD_VALUE = "TST005"  # a regex that does not compile, a date that is not one, an unknown fixture, ...
_YAML = YamlCodes(read_error=SYNTAX, syntax=SYNTAX, duplicate_key=SYNTAX, document="a test file")

# what a case may say, at the top of a one-conversation file, in a case of `test_cases:`, and (but
# `steps`) beside `test_cases:` as defaults
CASE_KEYS = ("name", "description", "program", "skip", "tags", "today", "embeddings", "llm_classifies", "env",
             "stub_tools", "fixtures", "llm", "events", "steps")
FILE_KEYS = tuple(k for k in CASE_KEYS if k != "steps") + ("test_cases",)
BOT_KEYS = ("bot", "bot_contains", "bot_matches", "bot_like", "bot_not_contains", "bot_not_matches")
CHECK_KEYS = BOT_KEYS + ("agent", "args", "args_set", "args_not_set", "tool_called", "tool_not_called",
                         "events", "ended")
STEP_KEYS = ("user", "llm", "note") + CHECK_KEYS
STUB_KEYS = ("when", "result", "error")
TEXT_KEYS = ("bot", "bot_contains", "bot_matches", "bot_not_contains", "bot_not_matches")

DEFAULT_LIKE_THRESHOLD = 0.75  # cosine similarity a `bot_like` message must reach (all-MiniLM-L6-v2)


class TestFormatError(Exception):
    """A test file that cannot be read; `diagnostics` say where and why."""

    __test__ = False  # not a pytest test class

    def __init__(self, diagnostics: list[Diagnostic], source: str | None = None) -> None:
        self.diagnostics = diagnostics
        self.source = source
        super().__init__(self.format())

    def format(self) -> str:
        return "\n".join(d.format(self.source) for d in self.diagnostics)


@dataclass
class Check:
    """One assertion: its key (`bot_contains`, `agent`, ...), its value as read, and where it is written."""

    kind: str
    value: Any
    span: Span

    def describe(self) -> str:
        """The check as written, e.g. `bot_contains: "Done!"` (long values cut)."""
        value = self.value
        if self.kind == "bot_like":
            return f"bot_like: {value['text']!r} (threshold {value['threshold']:g})"
        if self.kind in ("args", "args_not_set") and value.get("has_value", self.kind == "args"):
            return f"{self.kind}: {value['name']} = {show_value(value['value'])}"
        if self.kind in ("args_set", "args_not_set"):
            return f"{self.kind}: {value['name']}"
        if self.kind == "tool_called":
            return f"tool_called: {value['name']}" + (f" with {show_value(value['args'])}" if value["args"] else "")
        if self.kind == "events":
            return f"events: {show_value(value)}"
        return f"{self.kind}: {show_value(value)}"


def show_value(value: Any, limit: int = 200) -> str:
    """A value as JSON for a message, cut with … to `limit` characters."""
    return cut(json.dumps(value, ensure_ascii=False, default=str), limit)


@dataclass
class Turn:
    """A turn of the conversation: the opening one (index 0, no user message) or one per `user:` step."""

    index: int
    user: str | None
    span: Span
    llm: list[dict] = field(default_factory=list)  # the scripted model's answers for this turn
    checks: list[Check] = field(default_factory=list)


@dataclass
class StubAnswerSpec:
    when: dict[str, Any]
    result: Any
    error: str | None
    span: Span


@dataclass
class TestCase:
    """One conversation to play and check."""

    __test__ = False

    name: str
    path: Path
    span: Span
    turns: list[Turn]
    program: Path | None = None
    description: str = ""
    skip: str | None = None
    tags: list[str] = field(default_factory=list)
    today: str | None = None
    embeddings: bool = False
    llm_classifies: bool = False
    env: dict[str, str] = field(default_factory=dict)
    stubs: dict[str, list[StubAnswerSpec]] = field(default_factory=dict)
    stub_spans: dict[str, Span] = field(default_factory=dict)
    fixtures: dict[str, Any] = field(default_factory=dict)  # "name" or "scope.name" -> value
    fixture_spans: dict[str, Span] = field(default_factory=dict)
    events: list[Check] = field(default_factory=list)  # case-level: over the whole conversation
    per_turn_llm: bool = False  # some step has `llm:`: each turn must use exactly its own answers
    position: int = 0  # its place in the file (0-based)

    @property
    def nodeid(self) -> str:
        return f"{self.path}::{self.name}"

    def all_llm(self) -> list[dict]:
        return [entry for turn in self.turns for entry in turn.llm]

    @property
    def user_lines(self) -> list[str]:
        return [t.user for t in self.turns[1:] if t.user is not None]

    def needs_embeddings(self) -> bool:
        return self.embeddings or any(c.kind == "bot_like" for t in self.turns for c in t.checks)


@dataclass
class TestFile:
    __test__ = False

    path: Path
    cases: list[TestCase]
    source: str = ""


# ---- reading ---------------------------------------------------------------------------------


def expected_value(node: YNode) -> Any:
    """An expected value as written: YAML's typed values, but a plain yes / no / on / off stays text (a
    user who said "no" is the text "no"; only true and false are booleans)."""
    if isinstance(node, YScalar):
        value = node.value
        if isinstance(value, bool) and node.text.lower() not in ("true", "false"):
            return node.text
        return value
    if isinstance(node, YSeq):
        return [expected_value(item) for item in node.items]
    return {key.text: expected_value(value) for key, value in node.pairs}


def split_case_selector(given: str | Path) -> tuple[Path, str | None]:
    """`FILE::CASE` (as Rasa and pytest write it) into the file and the case's name."""
    text = str(given)
    if "::" in text and not Path(text).exists():
        file, _, case = text.partition("::")
        return Path(file), case or None
    return Path(text), None


def looks_like_test_file(text: str) -> bool:
    """Cheap sniff: a top-level `steps:` or `test_cases:` key (without parsing the YAML)."""
    return re.search(r"^(steps|test_cases)\s*:", text, re.MULTILINE) is not None


def load_test_file(path: str | Path) -> TestFile:
    """Read a test file; TestFormatError with every problem found (OSError if it cannot be read)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    return parse_test_file(text, path)


def parse_test_file(text: str, path: Path) -> TestFile:
    bag = DiagnosticBag()
    root = compose_yaml(text, str(path), bag, _YAML)
    if bag.has_errors:
        raise TestFormatError(bag.sorted(), text)
    reader = _Reader(path, bag)
    cases = reader.read_file(root)
    if bag.has_errors:
        raise TestFormatError(bag.sorted(), text)
    return TestFile(path, cases, text)


class _Reader:
    def __init__(self, path: Path, bag: DiagnosticBag) -> None:
        self.path = path
        self.bag = bag
        self.file_span = Span(file=str(path), line=1, column=1)

    # -- helpers --

    def error(self, code: str, message: str, span: Span | None, hint: str | None = None) -> None:
        self.bag.add(Diagnostic(code, message, span or self.file_span, Severity.ERROR, hint))

    def unknown_keys(self, node: YMap, allowed: tuple[str, ...], what: str) -> None:
        for key, _ in node.pairs:
            if key.text not in allowed:
                close = did_you_mean(key.text, allowed)
                self.error(UNKNOWN_KEY, f"unknown key '{key.text}' in {what}" +
                           (f" (did you mean '{close}'?)" if close else ""), key.span,
                           hint=f"the keys of {what} are: {', '.join(allowed)}")

    def want(self, node: YNode | None, kind: type, what: str, span: Span | None = None) -> bool:
        if isinstance(node, kind):
            return True
        names = {YMap: "a mapping", YSeq: "a list", YScalar: "a single value"}
        self.error(WRONG_TYPE, f"{what} must be {names[kind]}, not {kind_name(node)}",
                   node.span if node is not None else span)
        return False

    def text(self, node: YNode | None, what: str) -> str | None:
        """A scalar as written (`yes` stays "yes"); an error for lists, mappings and null."""
        if isinstance(node, YScalar) and not (node.plain and node.value is None):
            return node.text
        hint = "quote it: a ': ' inside plain text starts a mapping" if isinstance(node, YMap) else None
        self.error(WRONG_TYPE, f"{what} must be text, not {kind_name(node)}", node.span if node else None, hint)
        return None

    def texts(self, node: YNode, what: str) -> list[str]:
        """One text or a list of texts."""
        items = node.items if isinstance(node, YSeq) else [node]
        return [t for t in (self.text(item, what) for item in items) if t is not None]

    def flag(self, node: YNode, what: str) -> bool:
        if isinstance(node, YScalar) and isinstance(node.value, bool):
            return node.value
        self.error(WRONG_TYPE, f"{what} must be true or false, not {kind_name(node)}", node.span)
        return False

    # -- the file --

    def read_file(self, root: YNode | None) -> list[TestCase]:
        if root is None:
            self.error(MISSING, "the test file is empty", self.file_span,
                       hint="write `steps:` (one conversation) or `test_cases:` (several)")
            return []
        if not self.want(root, YMap, "a conversation test file"):
            return []
        assert isinstance(root, YMap)
        if "test_cases" in root:
            if "steps" in root:
                self.error(UNKNOWN_KEY, "a file with `test_cases:` holds its steps in each case, not at the top",
                           root.keys["steps"].span, hint="move these steps into a case of test_cases")
            self.unknown_keys(root, FILE_KEYS, "a test file with test_cases")
            named = self.named_fixtures(root.get("fixtures"))
            cases_node = root.get("test_cases")
            if not self.want(cases_node, YSeq, "test_cases", root.keys["test_cases"].span):
                return []
            assert isinstance(cases_node, YSeq)
            if not cases_node.items:
                self.error(MISSING, "test_cases is empty", cases_node.span)
            cases, seen = [], {}
            for position, item in enumerate(cases_node.items):
                if not self.want(item, YMap, "a test case"):
                    continue
                assert isinstance(item, YMap)
                case = self.read_case(item, root, named, position)
                if case is None:
                    continue
                if case.name in seen:
                    self.error(BAD_VALUE, f"two test cases are named '{case.name}' (the first at line {seen[case.name]})",
                               case.span, hint="give each case its own name")
                seen[case.name] = case.span.line
                cases.append(case)
            return cases
        if "steps" not in root:
            close = did_you_mean("steps", [k.text for k, _ in root.pairs]) or \
                did_you_mean("test_cases", [k.text for k, _ in root.pairs])
            self.error(MISSING, "a conversation test file needs `steps:` (one conversation) or `test_cases:` "
                       "(several)", root.span, hint=f"is '{close}' meant?" if close else
                       "old conversation files (user:, expect:) are converted by the migration in docs/testing.md")
            return []
        case = self.read_case(root, None, {}, 0)
        return [case] if case is not None else []

    def named_fixtures(self, node: YNode | None) -> dict[str, tuple[dict[str, Any], dict[str, Span]]]:
        """`fixtures:` beside test_cases: name -> values, as a mapping or Rasa's list of one-key mappings."""
        named: dict[str, tuple[dict[str, Any], dict[str, Span]]] = {}
        if node is None:
            return named
        if isinstance(node, YMap):
            pairs = node.pairs
        elif isinstance(node, YSeq):
            pairs = []
            for item in node.items:
                if isinstance(item, YMap) and len(item.pairs) == 1:
                    pairs.append(item.pairs[0])
                else:
                    self.error(WRONG_TYPE, "each named fixture is `name: {argument: value, ...}`", item.span)
        else:
            self.want(node, YMap, "fixtures")
            return named
        for key, value in pairs:
            named[key.text] = self.fixture_values(value, f"fixture '{key.text}'")
        return named

    def fixture_values(self, node: YNode, what: str) -> tuple[dict[str, Any], dict[str, Span]]:
        """{argument: value} as a mapping, or as Rasa's list of one-key mappings."""
        values: dict[str, Any] = {}
        spans: dict[str, Span] = {}
        pairs: list[tuple[YScalar, YNode]] = []
        if isinstance(node, YMap):
            pairs = node.pairs
        elif isinstance(node, YSeq):
            for item in node.items:
                if isinstance(item, YMap) and len(item.pairs) == 1:
                    pairs.append(item.pairs[0])
                else:
                    self.error(WRONG_TYPE, f"each value of {what} is `argument: value`", item.span)
        else:
            self.want(node, YMap, what)
        for key, value in pairs:
            values[key.text] = expected_value(value)
            spans[key.text] = key.span
        return values, spans

    # -- a case --

    def read_case(self, node: YMap, defaults: YMap | None, named: dict, position: int) -> TestCase | None:
        in_file = defaults is None
        allowed = CASE_KEYS if in_file else CASE_KEYS + ("test_case",)
        self.unknown_keys(node, allowed, "a conversation test" if in_file else "a test case")

        def pick(key: str) -> YNode | None:
            own = node.get(key)
            return own if own is not None or defaults is None else defaults.get(key)

        name_node = node.get("name") or node.get("test_case")
        if node.get("name") is not None and node.get("test_case") is not None:
            self.error(UNKNOWN_KEY, "give either `name:` or `test_case:` (Rasa's word), not both",
                       node.keys["test_case"].span)
        name = self.text(name_node, "a test case's name") if name_node is not None else None
        if name is None:
            if not in_file:
                self.error(MISSING, "a test case needs a `name:`", node.span)
                return None
            name = self.path.stem
        case = TestCase(name=name, path=self.path, span=(name_node.span if name_node is not None and not in_file
                                                         else node.span), turns=[], position=position)
        if (n := pick("program")) is not None and (t := self.text(n, "program")):
            case.program = (self.path.parent / t)
        if (n := pick("description")) is not None:
            case.description = self.text(n, "description") or ""
        if (n := pick("skip")) is not None:
            if isinstance(n, YScalar) and isinstance(n.value, bool):
                case.skip = "skipped in the test file" if n.value else None
            else:
                case.skip = self.text(n, "skip")
        if (n := pick("tags")) is not None:
            case.tags = self.texts(n, "a tag")
        if (n := pick("today")) is not None:
            case.today = self.today(n)
        if (n := pick("embeddings")) is not None:
            case.embeddings = self.flag(n, "embeddings")
        if (n := pick("llm_classifies")) is not None:
            case.llm_classifies = self.flag(n, "llm_classifies")
        for source in (defaults, node) if defaults is not None else (node,):
            if (n := source.get("env")) is not None:
                case.env.update(self.env(n))
            if (n := source.get("stub_tools")) is not None:
                self.stubs(n, case)
        fixtures = node.get("fixtures")
        if fixtures is not None:
            self.case_fixtures(fixtures, case, named, in_file)
        steps = node.get("steps")
        if steps is None:
            self.error(MISSING, f"test case '{name}' has no `steps:`", case.span)
            return case
        if not self.want(steps, YSeq, "steps"):
            return case
        assert isinstance(steps, YSeq)
        case.turns = self.steps(steps, case)
        opening_llm = pick("llm")
        if opening_llm is not None:
            entries = self.llm(opening_llm)
            if case.per_turn_llm:
                case.turns[0].llm[:0] = entries  # the opening turn's answers
            else:
                case.turns[0].llm = entries  # one pool for the whole conversation
        if (n := pick("events")) is not None:
            case.events = [Check("events", e, s) for e, s in self.events(n)]
        return case

    def today(self, node: YNode) -> str | None:
        from datetime import datetime

        text = self.text(node, "today")
        if text is None:
            return None
        try:
            datetime.fromisoformat(text)
        except ValueError:
            self.error(BAD_VALUE, f"today: {text!r} is not a date such as 2026-11-22 or 2026-11-22T09:00", node.span)
            return None
        return text

    def env(self, node: YNode) -> dict[str, str]:
        if not self.want(node, YMap, "env"):
            return {}
        assert isinstance(node, YMap)
        out = {}
        for key, value in node.pairs:
            text = self.text(value, f"env {key.text}")
            if text is not None:
                out[key.text] = text
        return out

    def stubs(self, node: YNode, case: TestCase) -> None:
        if not self.want(node, YMap, "stub_tools"):
            return
        assert isinstance(node, YMap)
        for key, value in node.pairs:
            items = value.items if isinstance(value, YSeq) else [value]
            answers = []
            for item in items:
                if not isinstance(item, YMap):
                    self.error(WRONG_TYPE, f"a stub answer of {key.text} is a mapping with `result:` or `error:`"
                               f" (and `when:`), not {kind_name(item)}", item.span)
                    continue
                self.unknown_keys(item, STUB_KEYS, "a stub answer")
                if ("result" in item) == ("error" in item):
                    self.error(MISSING, f"a stub answer of {key.text} gives `result:` (what the tool returns) or "
                               "`error:` (the tool fails), one of the two", item.span)
                    continue
                when: dict[str, Any] = {}
                if (w := item.get("when")) is not None and self.want(w, YMap, "when"):
                    when = expected_value(w)
                error = self.text(item.get("error"), "error") if "error" in item else None
                result = expected_value(item.get("result")) if "result" in item else None
                answers.append(StubAnswerSpec(when, result, error, item.span))
            case.stubs[key.text] = answers
            case.stub_spans[key.text] = key.span

    def case_fixtures(self, node: YNode, case: TestCase, named: dict, in_file: bool) -> None:
        """A case's fixtures: names of the file's fixture sets (a list), or values (a mapping)."""
        if isinstance(node, YSeq) and node.items and all(isinstance(i, YScalar) for i in node.items):
            for item in node.items:
                name = self.text(item, "a fixture name")
                if name is None:
                    continue
                if name not in named:
                    close = did_you_mean(name, named)
                    known = f"the file's fixtures: {', '.join(named)}" if named else \
                        "name fixture sets under `fixtures:` beside `test_cases:`, or give the values here"
                    self.error(BAD_VALUE, f"no fixture named '{name}'" + (f" (did you mean '{close}'?)" if close
                               else ""), item.span, hint=known)
                    continue
                values, spans = named[name]
                case.fixtures.update(values)
                case.fixture_spans.update(spans)
            return
        values, spans = self.fixture_values(node, "fixtures")
        case.fixtures.update(values)
        case.fixture_spans.update(spans)

    def llm(self, node: YNode) -> list[dict]:
        from frontdesk.llm.base import ScriptError
        from frontdesk.llm.scripted import ScriptedProvider

        if isinstance(node, YScalar) and node.plain and node.value is None:
            return []
        if not self.want(node, YSeq, "llm (the scripted model's answers)"):
            return []
        assert isinstance(node, YSeq)
        entries = []
        for item in node.items:
            entry = to_python(item)
            if isinstance(item, YMap):  # texts as written: `reply: yes` is the text "yes"
                for key, value in item.pairs:
                    if key.text in ("reply", "expect", "error") and isinstance(value, YScalar):
                        entry[key.text] = value.text
            try:
                ScriptedProvider([entry])
            except ScriptError as exc:
                self.error(BAD_VALUE, str(exc).replace("script entry 1", "this scripted answer"), item.span)
                continue
            entries.append(entry)
        return entries

    def events(self, node: YNode) -> list[tuple[dict[str, Any], Span]]:
        items = node.items if isinstance(node, YSeq) else [node]
        out = []
        for item in items:
            if isinstance(item, YScalar) and not (item.plain and item.value is None):
                out.append(({"type": item.text}, item.span))
            elif isinstance(item, YMap) and "type" in item:
                out.append((expected_value(item), item.span))
            else:
                self.error(WRONG_TYPE, "an expected event is an event type, or a mapping with `type:` and the "
                           "data fields it must have (`absent: true`: it must not happen)", item.span)
        return out

    # -- steps --

    def steps(self, node: YSeq, case: TestCase) -> list[Turn]:
        turns = [Turn(0, None, node.span)]
        if not node.items:
            self.error(MISSING, "steps is empty", node.span)
        for item in node.items:
            if not isinstance(item, YMap):
                hint = "write `- user: ...` for a user message" if isinstance(item, YScalar) else None
                self.error(WRONG_TYPE, f"a step is a mapping such as `user: ...` or `bot: ...`, not "
                           f"{kind_name(item)}", item.span, hint)
                continue
            self.unknown_keys(item, STEP_KEYS, "a step")
            if "user" in item:
                text = self.text(item.get("user"), "user")
                turns.append(Turn(len(turns), text if text is not None else "", item.keys["user"].span))
            turn = turns[-1]
            for key, value in item.pairs:
                if key.text in ("user", "note") or key.text not in STEP_KEYS:
                    continue
                if key.text == "llm":
                    turn.llm.extend(self.llm(value))
                    case.per_turn_llm = True
                    continue
                turn.checks.extend(self.check(key, value))
        for index, turn in enumerate(turns):
            turn.index = index
        return turns

    def check(self, key: YScalar, node: YNode) -> list[Check]:
        kind = key.text
        if kind in TEXT_KEYS:
            out = []
            for item in (node.items if isinstance(node, YSeq) else [node]):
                text = self.text(item, kind)
                if text is None:
                    continue
                if kind in ("bot_matches", "bot_not_matches"):
                    try:
                        re.compile(text)
                    except re.error as exc:
                        self.error(BAD_VALUE, f"{kind}: the regular expression {text!r} does not compile: {exc}",
                                   item.span)
                        continue
                out.append(Check(kind, text, item.span))
            return out
        if kind == "bot_like":
            out = []
            for item in (node.items if isinstance(node, YSeq) else [node]):
                if isinstance(item, YMap):
                    self.unknown_keys(item, ("text", "threshold"), "bot_like")
                    text = self.text(item.get("text"), "bot_like text")
                    threshold = DEFAULT_LIKE_THRESHOLD
                    if (t := item.get("threshold")) is not None:
                        value = t.value if isinstance(t, YScalar) else None
                        if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 < value <= 1:
                            self.error(BAD_VALUE, "bot_like threshold is a number above 0 and at most 1", t.span)
                            continue
                        threshold = float(value)
                else:
                    text, threshold = self.text(item, "bot_like"), DEFAULT_LIKE_THRESHOLD
                if text is not None:
                    out.append(Check(kind, {"text": text, "threshold": threshold}, item.span))
            return out
        if kind == "agent":
            if isinstance(node, YScalar) and node.plain and node.value is None:
                return [Check(kind, None, node.span)]
            text = self.text(node, "agent")
            return [Check(kind, text, node.span)] if text is not None else []
        if kind == "ended":
            return [Check(kind, self.flag(node, "ended"), node.span)]
        if kind == "args":
            if not self.want(node, YMap, "args (argument: value)"):
                return []
            assert isinstance(node, YMap)
            return [Check(kind, {"name": k.text, "value": expected_value(v),
                                 "text": v.text if isinstance(v, YScalar) else None}, k.span) for k, v in node.pairs]
        if kind == "args_set":
            return [Check(kind, {"name": t}, node.span) for t in self.texts(node, "an argument name")]
        if kind == "args_not_set":
            if isinstance(node, YMap):
                return [Check(kind, {"name": k.text, "value": expected_value(v), "has_value": True,
                                     "text": v.text if isinstance(v, YScalar) else None}, k.span)
                        for k, v in node.pairs]
            return [Check(kind, {"name": t, "has_value": False}, node.span)
                    for t in self.texts(node, "an argument name")]
        if kind == "tool_called":
            out = []
            for item in (node.items if isinstance(node, YSeq) else [node]):
                if isinstance(item, YMap):
                    self.unknown_keys(item, ("name", "args"), "tool_called")
                    name = self.text(item.get("name"), "tool_called name")
                    args: dict[str, Any] = {}
                    if (a := item.get("args")) is not None and self.want(a, YMap, "tool_called args"):
                        args = expected_value(a)
                    if name is not None:
                        out.append(Check(kind, {"name": name, "args": args}, item.span))
                else:
                    name = self.text(item, "tool_called")
                    if name is not None:
                        out.append(Check(kind, {"name": name, "args": {}}, item.span))
            return out
        if kind == "tool_not_called":
            return [Check(kind, t, node.span) for t in self.texts(node, "a tool name")]
        if kind == "events":
            return [Check(kind, e, s) for e, s in self.events(node)]
        return []  # pragma: no cover - every CHECK_KEYS kind is handled above


# ---- the old conversation files' view (frontdesk.testing.load_conversation) -----------------------


def select_case(test_file: TestFile, name: str | None) -> TestCase:
    """The case called `name`, or the first; LookupError naming the cases when there is none by that name."""
    if not test_file.cases:
        raise LookupError(f"{test_file.path}: the file has no test case")
    if name is None:
        return test_file.cases[0]
    for case in test_file.cases:
        if case.name == name:
            return case
    raise LookupError(f"{test_file.path}: no test case named {name!r}; cases: "
                      f"{', '.join(c.name for c in test_file.cases)}")


def legacy_view(case: TestCase) -> dict[str, Any]:
    """The case as the older conversation dict (user, llm, expect, events, embeddings, llm_classifies,
    today) that `frontdesk.testing` and `frontdesk chat --script` read; `case` holds the case itself."""
    expect = [c.value for t in case.turns for c in t.checks if c.kind in ("bot", "bot_contains")]
    events = [c.value for t in case.turns for c in t.checks if c.kind == "events"] + [c.value for c in case.events]
    view: dict[str, Any] = {"user": case.user_lines, "llm": case.all_llm(), "expect": expect, "events": events,
                            "embeddings": case.embeddings, "llm_classifies": case.llm_classifies, "case": case}
    if case.today is not None:
        view["today"] = case.today
    return view
