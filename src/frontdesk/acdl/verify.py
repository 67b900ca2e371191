"""Verification of recorded LLM calls against ACDL specifications.

A specification is compiled to a pattern over the messages of a call: role messages match one
message of their role, `ForEach` repeats its body any number of times, `If`/`Switch` choose one
branch (or none without `Else`/`Default`), `Mark` is transparent, fragments are expanded and
`PromptEndsHere` lets the prompt stop there. Inside a role message the same pattern language
runs over the message's elements: templates by name, context variables by path (indices are
runtime values and are not compared). Frontdesk records the elements of every message it sends
(`structure` in the `llm_call` event), so a call can be checked element by element; for calls
recorded without elements, only the roles and their order are checked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Union

from frontdesk.acdl import ast as A

# ---- patterns ------------------------------------------------------------------------


@dataclass
class Atom:
    test: Callable[[Any], str | None]  # None when the item matches, else why it does not
    expect: str


@dataclass
class Seq:
    items: list["Pattern"]


@dataclass
class Star:
    body: "Pattern"


@dataclass
class Alt:
    options: list["Pattern"]


Pattern = Union[Atom, Seq, Star, Alt]
EMPTY = Seq([])


@dataclass
class Failure:
    position: int = -1
    expected: list[str] = field(default_factory=list)
    detail: str = ""

    def note(self, position: int, expect: str, detail: str = "") -> None:
        if position > self.position:
            self.position, self.expected, self.detail = position, [expect], detail
        elif position == self.position and expect not in self.expected:
            self.expected.append(expect)
            self.detail = self.detail or detail


def match(pattern: Pattern, items: list, failure: Failure) -> bool:
    """Whether the whole of `items` matches `pattern`; `failure` keeps the furthest miss."""
    memo: dict[tuple[int, int], frozenset[int]] = {}

    def ends(p: Pattern, i: int) -> frozenset[int]:
        key = (id(p), i)
        if key in memo:
            return memo[key]
        memo[key] = frozenset()  # a loop that consumes nothing must not recurse forever
        if isinstance(p, Atom):
            if i >= len(items):
                failure.note(i, p.expect, "nothing is left")
                out = frozenset()
            else:
                why = p.test(items[i])
                if why is None:
                    out = frozenset({i + 1})
                else:
                    failure.note(i, p.expect, why)
                    out = frozenset()
        elif isinstance(p, Seq):
            current = frozenset({i})
            for item in p.items:
                current = frozenset(e for c in current for e in ends(item, c))
                if not current:
                    break
            out = current
        elif isinstance(p, Alt):
            out = frozenset(e for option in p.options for e in ends(option, i))
        else:  # Star
            out = {i}
            frontier = {i}
            while frontier:
                step = {e for f in frontier for e in ends(p.body, f)} - out
                out |= step
                frontier = step
            out = frozenset(out)
        memo[key] = out
        return out

    return len(items) in ends(pattern, 0)


# ---- from the syntax tree ----------------------------------------------------------------


def element_key(node: Any) -> str | None:
    """The name an element is recorded under: a template's name, a variable's dotted path."""
    if isinstance(node, A.Template):
        return node.name
    if isinstance(node, A.ContextVar):
        return ".".join([node.namespace, *(seg.name for seg in node.path if seg.name)])
    if isinstance(node, A.FunctionCall):
        return f"{node.name}()"
    if isinstance(node, A.NameRef):
        return f"${node.name}"
    return None


class Compiler:
    def __init__(self, file: A.File) -> None:
        self.fragments = {item.name: item for item in file.items
                          if isinstance(item, (A.StrFragDef, A.RolesFragDef))}
        self._expanding: set[str] = set()

    def content(self, body: list) -> Pattern:
        """Inside a role message: a sequence of element keys."""
        def leaf(node):
            key = element_key(node)
            return None if key is None else Atom(lambda got, key=key: None if got == key else f"found {got}", key)
        return self._body(body, leaf, self.content)

    def messages(self, body: list) -> Pattern:
        """A prompt body: a sequence of messages."""
        return self._body(body, lambda node: self._message(node) if isinstance(node, A.RoleMessage) else None,
                          self.messages)

    def _body(self, body: list, leaf, recurse) -> Pattern:
        """The control flow shared by both levels; `leaf` turns an element into an atom (or None)."""
        items: list[Pattern] = []
        for index, node in enumerate(body):
            atom = leaf(node)
            if atom is not None:
                items.append(atom)
            elif isinstance(node, A.ForEach):
                items.append(Star(recurse(node.body)))
            elif isinstance(node, A.If):
                options = [recurse(b.body) for b in node.branches]
                options.append(recurse(node.else_body) if node.else_body is not None else EMPTY)
                items.append(Alt(options))
            elif isinstance(node, A.Switch):
                options = [recurse(c.body) for c in node.cases]
                options.append(recurse(node.default) if node.default is not None else EMPTY)
                items.append(Alt(options))
            elif isinstance(node, A.Mark):
                items.append(recurse(node.body))
            elif isinstance(node, A.FragInvoke):
                items.append(self._fragment(node, recurse))
            elif isinstance(node, A.PromptEndsHere):
                items.append(Alt([EMPTY, recurse(body[index + 1:])]))
                break
        return Seq(items)

    def _fragment(self, node: A.FragInvoke, compile_body) -> Pattern:
        fragment = self.fragments.get(node.name)
        if fragment is None or node.name in self._expanding:
            return EMPTY
        self._expanding.add(node.name)
        try:
            return compile_body(fragment.body)
        finally:
            self._expanding.discard(node.name)

    def _message(self, node: A.RoleMessage) -> Atom:
        content = self.content(node.body)
        role = node.role

        def test(message: dict) -> str | None:
            if message.get("role") != role:
                return f"found a {message.get('role')}: message"
            elements = message.get("elements")
            if elements is None:
                return None
            inner = Failure()
            if match(content, list(elements), inner):
                return None
            at = inner.position
            found = elements[at] if 0 <= at < len(elements) else "the end of the message"
            return (f"inside the {role}: message, element {at + 1}: expected "
                    f"{' or '.join(inner.expected) or 'nothing more'}, found {found}")

        return Atom(test, f"a {role}: message")


# ---- calls in a trace --------------------------------------------------------------------


@dataclass
class CallCheck:
    seq: int
    plan: str
    spec: str | None
    ok: bool
    problem: str = ""


def call_messages(event: dict) -> list[dict]:
    """The messages of a recorded call as {role letter, elements?}."""
    data = event.get("data") or {}
    structure = data.get("structure")
    if structure:
        return [dict(m) for m in structure]
    letters = {"system": "S", "user": "U", "assistant": "A", "tool": "T"}
    return [{"role": letters.get(m.get("role"), "?")} for m in data.get("messages") or []]


def verify_calls(file: A.File, events: list[dict], spec_name: str | None = None) -> list[CallCheck]:
    """Check every LLM call in `events` against the specification named like its plan
    (or against `spec_name` for every call)."""
    specs = {item.name: item for item in file.items if isinstance(item, A.PromptSpec)}
    compiler = Compiler(file)
    patterns: dict[str, Pattern] = {}
    results = []
    for event in events:
        if event.get("type") != "llm_call" or (event.get("data") or {}).get("error"):
            continue
        plan = (event.get("data") or {}).get("plan", "")
        name = spec_name or (plan if plan in specs else None)
        if name is None and len(specs) == 1 and not plan:
            name = next(iter(specs))
        if name is None or name not in specs:
            continue
        if name not in patterns:
            patterns[name] = compiler.messages(specs[name].body)
        messages = call_messages(event)
        failure = Failure()
        if match(patterns[name], messages, failure):
            results.append(CallCheck(event.get("seq", 0), plan, name, True))
        else:
            at = failure.position
            where = f"message {at + 1}" if at < len(messages) else f"after message {len(messages)}"
            expected = " or ".join(failure.expected) or "no more messages"
            problem = f"{where}: expected {expected}" + (f" ({failure.detail})" if failure.detail else "")
            results.append(CallCheck(event.get("seq", 0), plan, name, False, problem))
    return results
