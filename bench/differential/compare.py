"""Compare two runners' JSON lines for the same dialogues, turn by turn (MICA's and Frontdesk's).

    python bench/differential/compare.py MICA.jsonl FRONTDESK.jsonl [--names mica,frontdesk]
        [--program NAME] [--json OUT.json] [--details] [--no-turn0]

Lines are paired by (program, dialogue, turn); a line's program is found as score.py finds it.
For each pair, the differences a customer or an integrator would notice are listed, by kind:

- `step text`  the texts differ where they come from the program (flow `bot:` steps, tool results
               interpolated into them, fixed texts): exact after normalising case and whitespace;
- `llm text`   the texts differ only where at least one side's text came from a model (an llm or kb
               agent's reply, a generated fallback): wording from a model may be noise, so these are
               counted apart; the number of texts is compared too;
- `agent`      the agent that answered first;
- `tools`      the tool calls, in order, with their arguments (values compared as text without case);
- `values`     the arguments' values after the turn (only agents and arguments both sides know about:
               internal bookkeeping of one side is not a difference);
- `ended`      whether the conversation ended in the turn;
- `error`      one side failed in the turn (or did not play it: `missing`).

A text is taken to come from a model when its speaker's `source` says so (`llm`, `kb`, `fallback`
on MICA's side) or, for lines without sources, when its agent is an llm or kb agent of the program
(--kinds PROGRAM_DIR lets compare.py read agents.yml for that). Counts are printed per program and
overall; --details lists every differing turn.
"""

from __future__ import annotations

import argparse
import json
import re
import pathlib
import sys
from collections import Counter, defaultdict
from typing import Any

import yaml

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from score import assign_programs, fold, read_lines  # noqa: E402

KINDS = ("step text", "llm text", "agent", "tools", "values", "ended", "error")
MODEL_SOURCES = {"llm", "kb", "fallback", "reasoning", "knowledge", "model"}


def agent_kinds(folders: list[pathlib.Path]) -> dict[str, dict[str, str]]:
    """program -> agent -> kind ('llm agent', ...) from agents.yml files."""
    out: dict[str, dict[str, str]] = {}
    for folder in folders:
        for path in ([folder / "agents.yml"] if (folder / "agents.yml").is_file() else sorted(folder.glob("*/agents.yml"))):
            try:
                data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            except (OSError, yaml.YAMLError):
                continue
            out[path.parent.name] = {str(k): str(v.get("type", "")) for k, v in data.items() if isinstance(v, dict)}
    return out


def texts(line: dict[str, Any]) -> list[str]:
    return [str(t) for t in (line.get("bot") if line.get("bot") is not None else line.get("says")) or []
            if str(t).strip()]


def from_model(line: dict[str, Any], kinds: dict[str, str]) -> bool:
    """At least one text of the turn came from a model."""
    for s in line.get("speakers") or []:
        if not str(s.get("text") or "").strip():
            continue
        if str(s.get("source") or "") in MODEL_SOURCES:
            return True
        kind = kinds.get(str(s.get("agent")), "")
        if kind.startswith(("llm", "kb")):
            return True
    return bool(line.get("llm_calls")) and not line.get("speakers")


def norm_texts(line: dict[str, Any]) -> list[str]:
    return [fold(t) for t in texts(line)]


def tool_calls(line: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(str(c.get("name")), c.get("args") or {}) for c in line.get("tools") or []]


def same_calls(a: list, b: list) -> bool:
    return len(a) == len(b) and all(x[0] == y[0] and same_args(x[1], y[1]) for x, y in zip(a, b))


def same_args(a: dict[str, Any], b: dict[str, Any]) -> bool:
    keys = set(a) | set(b)
    return all(loose(a.get(k)) == loose(b.get(k)) for k in keys)


def loose(value: Any) -> Any:
    if value is None or value == "":
        return None
    if isinstance(value, (list, tuple)):
        return tuple(sorted(str(loose(v)) for v in value))
    if isinstance(value, dict):
        return tuple(sorted((k, str(loose(v))) for k, v in value.items()))
    if isinstance(value, bool):
        return value
    try:
        return float(str(value).replace(",", ""))
    except ValueError:
        return fold(value)


def value_diffs(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    out = []
    for agent in sorted(set(a) & set(b)):
        left, right = a.get(agent) or {}, b.get(agent) or {}
        if not isinstance(left, dict) or not isinstance(right, dict):
            continue
        for arg in sorted(set(left) & set(right)):
            if loose(left[arg]) != loose(right[arg]):
                out.append(f"{agent}.{arg}: {left[arg]!r} vs {right[arg]!r}")
    return out


def compare_turn(a: dict[str, Any] | None, b: dict[str, Any] | None, kinds: dict[str, str]) -> dict[str, str]:
    if a is None or b is None:
        return {"error": f"missing on the {'first' if a is None else 'second'} side"}
    diffs: dict[str, str] = {}
    if bool(a.get("error")) != bool(b.get("error")) or (a.get("error") and b.get("error")):
        diffs["error"] = f"{str(a.get('error'))[:100]} vs {str(b.get('error'))[:100]}"
    ta, tb = norm_texts(a), norm_texts(b)
    if ta != tb:
        kind = "llm text" if (from_model(a, kinds) or from_model(b, kinds)) else "step text"
        diffs[kind] = f"{texts(a)} vs {texts(b)}"
    if (a.get("agent") or None) != (b.get("agent") or None):
        diffs["agent"] = f"{a.get('agent')} vs {b.get('agent')}"
    ca, cb = tool_calls(a), tool_calls(b)
    if not same_calls(ca, cb):
        diffs["tools"] = f"{ca} vs {cb}"
    vd = value_diffs(a.get("values") or {}, b.get("values") or {})
    if vd:
        diffs["values"] = "; ".join(vd)
    if bool(a.get("ended")) != bool(b.get("ended")):
        diffs["ended"] = f"{bool(a.get('ended'))} vs {bool(b.get('ended'))}"
    return diffs


def compare(first: list[dict[str, Any]], second: list[dict[str, Any]], kinds: dict[str, dict[str, str]],
            turn0: bool = True) -> dict[str, Any]:
    def index(lines):
        return {(r["program"], r.get("dialogue"), r.get("turn")): r for r in lines if r.get("record", "turn") == "turn"}

    a, b = index(first), index(second)
    keys = sorted(set(a) | set(b), key=lambda k: (str(k[0]), str(k[1]), int(k[2] or 0)))
    per_program: dict[str, Counter] = defaultdict(Counter)
    turns = []
    for key in keys:
        if not turn0 and key[2] == 0:
            continue
        program = key[0]
        diffs = compare_turn(a.get(key), b.get(key), kinds.get(program) or kinds.get(str(program).split(":")[-1], {}))
        per_program[program]["turns"] += 1
        per_program[program]["turns differing"] += bool(diffs)
        for kind in diffs:
            per_program[program][kind] += 1
        if diffs:
            line = a.get(key) or b.get(key) or {}
            turns.append({"program": program, "dialogue": key[1], "turn": key[2], "user": line.get("user"),
                          "differences": diffs})
    overall = Counter()
    for counts in per_program.values():
        overall.update(counts)
    return {"programs": {p: dict(c) for p, c in sorted(per_program.items())}, "overall": dict(overall),
            "turns": turns}


# ---- explaining differences (--explain) -------------------------------------------------------------

STATEFUL = ("step text", "agent", "tools", "values", "ended", "error")
RULE_KEYS = {"id", "doc", "program", "dialogue", "turn", "first", "second", "kinds", "first_said_less"}
SIDE_KEYS = {"error", "says", "not_says", "tool", "agent", "ended", "silent", "missing", "trace"}


def load_rules(path: pathlib.Path, docs: pathlib.Path | None = None) -> list[dict[str, Any]]:
    """The rules of an explanations file (explained.yml). Each names the section of the semantics
    document that gives the difference's reason (`doc`, a heading of docs/adl-semantics.md); an
    unknown heading is an error, so that a rule cannot point at nothing."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    rules = data.get("rules") if isinstance(data, dict) else data
    if not isinstance(rules, list):
        raise ValueError(f"{path}: expected `rules:` with a list")
    headings = None
    if docs is not None and docs.is_file():
        headings = {line.lstrip("#").strip() for line in docs.read_text(encoding="utf-8").splitlines()
                    if line.startswith("#")}
    for rule in rules:
        if not isinstance(rule, dict) or not rule.get("id") or not rule.get("doc"):
            raise ValueError(f"{path}: every rule needs `id` and `doc`: {rule!r}")
        # a misspelt key would be ignored and the rule would match more than it says
        unknown = [k for k in rule if k not in RULE_KEYS] + \
            [f"{side}.{k}" for side in ("first", "second") for k in (rule.get(side) or {}) if k not in SIDE_KEYS]
        if unknown:
            raise ValueError(f"{path}: rule {rule['id']}: unknown key(s) {', '.join(unknown)}")
        if headings is not None and rule["doc"] not in headings:
            raise ValueError(f"{path}: rule {rule['id']}: no heading {rule['doc']!r} in {docs}")
    return rules


def _side_matches(want: dict[str, Any] | None, line: dict[str, Any] | None) -> bool:
    """A rule's condition on one side's line: `error`, `says` (a text), `tool` (a call's name),
    `agent`, `trace` (an error event of Frontdesk's turn) as regular expressions (case-insensitive); `ended`, `silent` (said nothing) as booleans."""
    if not want:
        return True
    if line is None:
        return bool(want.get("missing"))
    checks = {
        "error": lambda p: re.search(p, str(line.get("error") or ""), re.I) is not None and bool(line.get("error")),
        "says": lambda p: any(re.search(p, t, re.I) for t in texts(line)),
        "not_says": lambda p: not any(re.search(p, t, re.I) for t in texts(line)),
        "tool": lambda p: any(re.search(p, str(c.get("name")), re.I) for c in line.get("tools") or []),
        "agent": lambda p: re.search(p, str(line.get("agent") or ""), re.I) is not None,
        "ended": lambda v: bool(line.get("ended")) == bool(v),
        "silent": lambda v: (not texts(line)) == bool(v),
        "missing": lambda v: not v,
        "trace": lambda p: any(re.search(p, str(e.get("message") if isinstance(e, dict) else e), re.I)
                               for e in line.get("engine_errors") or []),
    }
    return all(checks[key](value) for key, value in want.items() if key in checks)


def explain(report: dict[str, Any], first: list[dict[str, Any]], second: list[dict[str, Any]],
            rules: list[dict[str, Any]]) -> dict[str, Any]:
    """Give each differing turn the rules that explain its differences. A rule explains the kinds it
    lists (`kinds`, default all) of a turn whose program/dialogue match its `program`/`dialogue` and whose
    two lines match its `first`/`second` conditions. A turn is `explained` when every kind is; else,
    when an earlier turn of its dialogue differed in what the conversation holds (a stateful kind), it
    `follows` that turn (the two conversations are no longer in the same state); else it is
    `unexplained`."""
    def index(lines):
        return {(r["program"], r.get("dialogue"), r.get("turn")): r for r in lines if r.get("record", "turn") == "turn"}

    a, b = index(first), index(second)
    diverged: dict[tuple[str, str], int] = {}
    counts: Counter = Counter()
    by_rule: Counter = Counter()
    for turn in report["turns"]:
        key = (turn["program"], turn["dialogue"], turn["turn"])
        left, right = a.get(key), b.get(key)
        covered: dict[str, str] = {}
        for rule in rules:
            if rule.get("program") and not re.search(rule["program"], str(turn["program"])):
                continue
            if rule.get("dialogue") and not re.search(rule["dialogue"], str(turn["dialogue"])):
                continue
            if rule.get("turn") is not None and int(rule["turn"]) != int(turn["turn"] or 0):
                continue
            if not (_side_matches(rule.get("first"), left) and _side_matches(rule.get("second"), right)):
                continue
            if rule.get("first_said_less") and not (left and right and 0 < len(texts(left)) < len(texts(right))
                                                    and norm_texts(right)[:len(texts(left))] == norm_texts(left)):
                continue
            for kind in turn["differences"]:
                if kind not in covered and (not rule.get("kinds") or kind in rule["kinds"]):
                    covered[kind] = rule["id"]
        earlier = diverged.get((turn["program"], turn["dialogue"]))
        if all(kind in covered for kind in turn["differences"]):
            turn["verdict"] = "explained"
        elif earlier is not None and earlier < int(turn["turn"] or 0):
            turn["verdict"] = "follows"
            turn["follows"] = earlier
        else:
            turn["verdict"] = "unexplained"
        turn["explained_by"] = covered
        by_rule.update(set(covered.values()))
        counts[turn["verdict"]] += 1
        if any(kind in STATEFUL for kind in turn["differences"]):
            diverged.setdefault((turn["program"], turn["dialogue"]), int(turn["turn"] or 0))
    report["verdicts"] = dict(counts)
    report["rules"] = dict(by_rule)
    return report


def print_report(report: dict[str, Any], names: tuple[str, str], details: bool, out=sys.stdout) -> None:
    columns = ("turns", "turns differing") + KINDS
    widths = [max(8, len(c) + 2) for c in columns]
    header = f"{'program':20}" + "".join(f"{c:>{w}}" for c, w in zip(columns, widths))
    print(f"{names[0]} vs {names[1]}", file=out)
    print(header, file=out)
    print("-" * len(header), file=out)
    for name, counts in list(report["programs"].items()) + [("overall", report["overall"])]:
        print(f"{name:20}" + "".join(f"{counts.get(c, 0):>{w}}" for c, w in zip(columns, widths)), file=out)
    if "verdicts" in report:
        v = report["verdicts"]
        print(f"\ndiffering turns: {v.get('explained', 0)} explained by a documented rule, {v.get('follows', 0)} "
              f"after an earlier difference in the dialogue, {v.get('unexplained', 0)} unexplained", file=out)
        for rule, n in sorted(report["rules"].items(), key=lambda item: -item[1]):
            print(f"  {n:4}  {rule}", file=out)
    if details:
        print("\nturns that differ:", file=out)
        for t in report["turns"]:
            if details == "unexplained" and t.get("verdict") != "unexplained":
                continue
            verdict = f"  [{t['verdict']}" + (f" turn {t['follows']}" if t.get("follows") is not None else "") + \
                (": " + ", ".join(sorted(set(t["explained_by"].values()))) if t.get("explained_by") else "") + "]" \
                if t.get("verdict") else ""
            print(f"- {t['program']}/{t['dialogue']} turn {t['turn']}: {t['user']!r}{verdict}", file=out)
            for kind, text in t["differences"].items():
                print(f"    {kind:9} {text[:300]}", file=out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Turn-by-turn differences between two runners' JSON lines.")
    parser.add_argument("first", type=pathlib.Path, help="e.g. MICA's JSON lines")
    parser.add_argument("second", type=pathlib.Path, help="e.g. Frontdesk's JSON lines")
    parser.add_argument("--names", default="first,second", help="labels of the two sides, e.g. mica,frontdesk")
    parser.add_argument("--program", help="the program of lines that do not name one")
    parser.add_argument("--kinds", action="append", type=pathlib.Path,
                        help="program folder(s), or a folder of them, whose agents.yml tell llm/kb agents apart "
                             "(default: heldout/)")
    parser.add_argument("--no-turn0", dest="turn0", action="store_false", help="leave out turn 0 (session start)")
    parser.add_argument("--json", type=pathlib.Path, help="write the report as JSON here")
    parser.add_argument("--details", action="store_const", const=True, default=False,
                        help="list every turn that differs")
    parser.add_argument("--unexplained", dest="details", action="store_const", const="unexplained",
                        help="list only the turns no rule explains (with --explain)")
    parser.add_argument("--explain", type=pathlib.Path,
                        help="rules that explain differences (explained.yml), each pointing at a heading of --docs")
    parser.add_argument("--docs", type=pathlib.Path, default=HERE.parents[1] / "docs" / "adl-semantics.md")
    options = parser.parse_args(argv)
    try:
        first, second = read_lines(options.first), read_lines(options.second)
    except (OSError, ValueError) as exc:
        print(exc, file=sys.stderr)
        return 2
    assign_programs(first, options.first, options.program)
    assign_programs(second, options.second, options.program)
    kinds = agent_kinds(options.kinds or [HERE / "heldout", HERE.parents[1] / "examples",
                                         HERE.parents[2] / "shared" / "conformance" / "mica"])
    report = compare(first, second, kinds, options.turn0)
    if options.explain:
        try:
            explain(report, first, second, load_rules(options.explain, options.docs))
        except (OSError, ValueError, yaml.YAMLError) as exc:
            print(exc, file=sys.stderr)
            return 2
    names = tuple((options.names.split(",") + ["first", "second"])[:2])
    print_report(report, names, options.details)
    if options.json:
        options.json.write_text(json.dumps(report, indent=2, ensure_ascii=False, default=repr) + "\n", encoding="utf-8")
    if "verdicts" in report:
        return 0 if not report["verdicts"].get("unexplained") else 1
    return 0 if not report["turns"] else 1


if __name__ == "__main__":
    sys.exit(main())
