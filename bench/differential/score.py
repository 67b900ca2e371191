"""Score a runner's JSON lines (frontdesk_runner.py or mica_runner.py) against the dialogues' `expect`.

    python bench/differential/score.py RESULTS.jsonl [MORE.jsonl ...] \\
        [--dialogues bench/differential/heldout] [--dialogues bench/differential/conformance_dialogues] \\
        [--program NAME] [--json OUT.json] [--failures] [--quiet]

Each turn's `expect` (heldout/README.md) is checked against the line of the same program, dialogue
and turn number:

- says: met when any of the texts occurs in what the bot said in the turn (all its texts joined;
  case-insensitive, whitespace folded);
- not_says: none of the texts occurs;
- agent: an agent of that name said something in the turn (any of them when a list);
- tool: a call of that tool happened in the turn whose arguments include the expected ones
  (values compared as text without case; numbers by value); a list: every call;
- sets: after the turn, `agent.arg` holds the value (read from the line's `values`; the turn's own
  `sets` records count too);
- ends: the line's `ended` is the expected boolean.

A met turn whose `says` text was itself the ideal model's scripted reply (the line's `oracle` put
it there: frontdesk_runner.py derives an llm agent's reply from the expectation) is counted again
in `met_by_echo`: such a turn shows that the text reached the user, not that a model could produce it.

A turn with expectations is met when all of its checks pass; a turn that was never played (the
runner stopped the dialogue) or that ended in an error is not met. A dialogue is fully met when
every turn with expectations is. The programs' dialogue files are found under each --dialogues
folder as <program>/dialogues.yml or <program>.yml (a label `origin:name` also as <name>...; default: heldout/ and conformance_dialogues/
and example_dialogues/ beside this file); a --dialogues file applies to every program. A line's program is its `program`
field, else the folder named in its dialogue line (`files.program`, mica_runner), else --program,
else the results file's name up to the first dot.

Exit status: 0 when every turn with expectations is met, 1 otherwise, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
from typing import Any

import yaml

HERE = pathlib.Path(__file__).resolve().parent
DEFAULT_DIALOGUES = [HERE / "heldout", HERE / "example_dialogues", HERE / "conformance_dialogues"]


def fold(text: Any) -> str:
    return " ".join(str(text).lower().replace("’", "'").split())


def as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def same(expected: Any, actual: Any) -> bool:
    """Expected and actual values agree: numbers by value, lists as sets, text without case."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(same(v, actual.get(k)) for k, v in expected.items())
    if isinstance(expected, (list, tuple)):
        actual_list = actual if isinstance(actual, (list, tuple)) else [actual]
        return {fold(v) for v in expected} == {fold(v) for v in actual_list}
    if isinstance(expected, bool):
        return actual is expected or fold(actual) == fold(expected)
    if expected is None:
        return actual is None
    if isinstance(expected, (int, float)):
        try:
            return abs(float(str(actual).replace(",", "").strip()) - float(expected)) < 1e-6
        except (TypeError, ValueError):
            return False
    return fold(expected) == fold(actual)


# ---- reading -------------------------------------------------------------------------------------


def read_lines(path: pathlib.Path) -> list[dict[str, Any]]:
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError as exc:
                raise ValueError(f"{path}:{number}: not JSON: {exc}") from None
    return out


def assign_programs(lines: list[dict[str, Any]], path: pathlib.Path, given: str | None) -> None:
    """Give every line a `program` (see the module's docstring)."""
    by_dialogue = {}
    for r in lines:
        if r.get("record") == "dialogue":
            program = r.get("program") or pathlib.Path(str((r.get("files") or {}).get("program") or "")).name
            if program:
                by_dialogue[r.get("dialogue")] = program
    fallback = given or path.name.split(".")[0]
    for r in lines:
        if not r.get("program"):
            r["program"] = given or by_dialogue.get(r.get("dialogue")) or fallback


def find_dialogues(program: str, places: list[pathlib.Path]) -> pathlib.Path | None:
    names = [program] + ([program.rsplit(":", 1)[1]] if ":" in program else [])  # conformance:bookstore
    for place in places:
        if place.is_file():
            return place
        for name in names:
            for candidate in (place / name / "dialogues.yml", place / f"{name}.yml"):
                if candidate.is_file():
                    return candidate
    return None


def load_dialogues(path: pathlib.Path) -> list[dict[str, Any]]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    dialogues = data.get("dialogues") if isinstance(data, dict) else data
    return [d for d in dialogues or [] if isinstance(d, dict)]


# ---- checking one turn ---------------------------------------------------------------------------


def texts_of(line: dict[str, Any]) -> list[str]:
    return [str(t) for t in (line.get("bot") if line.get("bot") is not None else line.get("says")) or [] if t]


def speaking_agents(line: dict[str, Any]) -> list[str]:
    agents = [s.get("agent") for s in line.get("speakers") or [] if (s.get("text") or "").strip() and s.get("agent")]
    if not agents and line.get("agent"):
        agents = [line["agent"]]
    return agents


def value_of(line: dict[str, Any], key: str) -> tuple[bool, Any]:
    """(found, value) of `agent.arg` after the turn: the line's values, else the turn's sets."""
    agent, _, arg = str(key).rpartition(".")
    values = line.get("values") or {}
    if isinstance(values.get(agent), dict) and arg in values[agent]:
        return True, values[agent][arg]
    if key in values:  # a flat {"agent.arg": value} table
        return True, values[key]
    for s in reversed(line.get("sets") or []):
        if s.get("agent") == agent and s.get("arg") == arg:
            return True, s.get("value")
    return False, None


def check(expect: dict[str, Any], line: dict[str, Any] | None) -> list[str]:
    """What of the expectation the line does not meet (empty: met)."""
    if line is None:
        return ["turn not played"]
    problems = []
    if line.get("error"):
        problems.append(f"error: {str(line['error'])[:160]}")
    said = fold(" \n ".join(texts_of(line)))
    says = [str(s) for s in as_list(expect.get("says"))]
    if says and not any(fold(s) in said for s in says):
        problems.append(f"says one of {says}")
    for text in as_list(expect.get("not_says")):
        if fold(text) in said:
            problems.append(f"not_says {str(text)!r}")
    agents = [str(a) for a in as_list(expect.get("agent"))]
    if agents and not set(agents) & set(speaking_agents(line)):
        problems.append(f"agent {'/'.join(agents)}")
    calls = line.get("tools") or []
    for tool in as_list(expect.get("tool")):
        if not isinstance(tool, dict):
            tool = {"name": tool}
        wanted_args = tool.get("args") or {}
        if not any(c.get("name") == tool.get("name") and same(wanted_args, c.get("args") or {}) for c in calls):
            problems.append(f"tool {tool.get('name')}({json.dumps(wanted_args, ensure_ascii=False)})")
    for key, value in (expect.get("sets") or {}).items():
        found, actual = value_of(line, key)
        if not found or not same(value, actual):
            problems.append(f"sets {key}={value!r}")
    if "ends" in expect and bool(line.get("ended")) != bool(expect["ends"]):
        problems.append(f"ends {bool(expect['ends'])}")
    return problems


def echoed(expect: dict[str, Any], line: dict[str, Any] | None) -> bool:
    """The expected `says` text was in the ideal model's scripted replies of the turn (see the docstring)."""
    oracle = (line or {}).get("oracle") or {}
    replies = [fold(step.get("reply")) for steps in (oracle.get("model") or {}).values() for step in steps or []
               if isinstance(step, dict) and step.get("reply")]
    return any(fold(s) in r for s in as_list(expect.get("says")) for r in replies)


def seen(line: dict[str, Any] | None) -> dict[str, Any]:
    if line is None:
        return {}
    return {"bot": texts_of(line), "agents": speaking_agents(line),
            "tools": [{"name": c.get("name"), "args": c.get("args")} for c in line.get("tools") or []],
            "ended": bool(line.get("ended")), "error": line.get("error")}


# ---- scoring -------------------------------------------------------------------------------------


def score(lines: list[dict[str, Any]], places: list[pathlib.Path]) -> dict[str, Any]:
    turns = {(r["program"], r.get("dialogue"), r.get("turn")): r for r in lines if r.get("record", "turn") == "turn"}
    programs = sorted({r["program"] for r in lines})
    report: dict[str, Any] = {"programs": {}, "failures": [], "missing_dialogue_files": []}
    for program in programs:
        path = find_dialogues(program, places)
        if path is None:
            report["missing_dialogue_files"].append(program)
            continue
        played = {r.get("dialogue") for r in lines if r["program"] == program}
        row = {"dialogues": 0, "turns_with_expectations": 0, "turns_met": 0, "dialogues_fully_met": 0,
               "turns_with_errors": 0, "met_by_echo": 0, "dialogue_file": str(path)}
        for dialogue in load_dialogues(path):
            name = str(dialogue.get("name"))
            if name not in played:
                continue
            row["dialogues"] += 1
            full = True
            for number, turn in enumerate([t for t in dialogue.get("turns") or [] if isinstance(t, dict)], start=1):
                line = turns.get((program, name, number))
                if line is not None and line.get("error"):
                    row["turns_with_errors"] += 1
                expect = turn.get("expect") or {}
                if not expect:
                    continue
                row["turns_with_expectations"] += 1
                problems = check(expect, line)
                if problems:
                    full = False
                    report["failures"].append({"program": program, "dialogue": name, "turn": number,
                                               "user": turn.get("user"), "expected": expect,
                                               "unmet": problems, "seen": seen(line)})
                else:
                    row["turns_met"] += 1
                    row["met_by_echo"] += echoed(expect, line)
            row["dialogues_fully_met"] += full
        gaps = [r for r in lines if r["program"] == program and r.get("record") == "dialogue" and "oracle_gaps" in r]
        if gaps:  # frontdesk_runner.py --model ideal: model answers given for lack of an oracle
            row["model_calls"] = sum(len(r.get("llm_calls") or []) for r in lines
                                     if r["program"] == program and r.get("record", "turn") == "turn" and "oracle" in r)
            row["oracle_gaps"] = sum(r["oracle_gaps"] for r in gaps)
        report["programs"][program] = row
    total = {k: sum(r[k] for r in report["programs"].values())
             for k in ("dialogues", "turns_with_expectations", "turns_met", "dialogues_fully_met", "turns_with_errors",
                       "met_by_echo")}
    if any("oracle_gaps" in r for r in report["programs"].values()):
        for key in ("model_calls", "oracle_gaps"):
            total[key] = sum(r.get(key, 0) for r in report["programs"].values())
    report["overall"] = total
    return report


def print_report(report: dict[str, Any], failures: bool, out=sys.stdout, table: bool = True) -> None:
    if table:
        print_table(report, out)
    if failures:
        print_failures(report, out)


def print_table(report: dict[str, Any], out=sys.stdout) -> None:
    width = max([24] + [len(p) + 1 for p in report["programs"]])
    header = f"{'program':{width}} {'dialogues':>9} {'turns met':>13} {'dialogues met':>14} {'errors':>7} {'echo':>5}"
    print(header, file=out)
    print("-" * len(header), file=out)

    def line(name: str, r: dict[str, Any]) -> None:
        pct = 100.0 * r["turns_met"] / r["turns_with_expectations"] if r["turns_with_expectations"] else 0.0
        print(f"{name:{width}} {r['dialogues']:>9} {r['turns_met']:>5}/{r['turns_with_expectations']:<4}{pct:>3.0f}% "
              f"{r['dialogues_fully_met']:>6}/{r['dialogues']:<7} {r['turns_with_errors']:>7} {r['met_by_echo']:>5}", file=out)

    for name, r in report["programs"].items():
        line(name, r)
    print("-" * len(header), file=out)
    line("overall", report["overall"])
    if "oracle_gaps" in report["overall"]:
        o = report["overall"]
        print(f"ideal model: {o['oracle_gaps']} of {o['model_calls']} model answers given for lack of an oracle "
              "(route none, no answer, hand_back, empty understand): see each line's llm_calls", file=out)
    for program in report["missing_dialogue_files"]:
        print(f"  (no dialogue file found for {program}: not scored)", file=out)


def print_failures(report: dict[str, Any], out=sys.stdout) -> None:
    if True:
        print("\nturns not met:", file=out)
        for f in report["failures"]:
            print(f"- {f['program']}/{f['dialogue']} turn {f['turn']}: {f['user']!r}", file=out)
            print(f"    unmet:    {'; '.join(f['unmet'])}", file=out)
            s = f["seen"]
            if s:
                bot = " | ".join(t.replace("\n", " ")[:120] for t in s["bot"]) or "(nothing)"
                print(f"    bot said: {bot}", file=out)
                tools = ", ".join(f"{t['name']}({json.dumps(t['args'], ensure_ascii=False)[:80]})" for t in s["tools"])
                print(f"    agents:   {', '.join(s['agents']) or '-'}; tools: {tools or '-'}; ended: {s['ended']}"
                      + (f"; error: {str(s['error'])[:100]}" if s.get("error") else ""), file=out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Score runner JSON lines against the dialogues' expectations.")
    parser.add_argument("results", nargs="+", type=pathlib.Path)
    parser.add_argument("--dialogues", action="append", type=pathlib.Path,
                        help="folder of <program>/dialogues.yml or <program>.yml, or one dialogue file (repeatable)")
    parser.add_argument("--program", help="the program of lines that do not name one")
    parser.add_argument("--json", type=pathlib.Path, help="write the report as JSON here ('-': standard output)")
    parser.add_argument("--failures", action="store_true", help="list every turn not met, expected vs seen")
    parser.add_argument("--quiet", action="store_true", help="no table")
    options = parser.parse_args(argv)
    lines = []
    try:
        for path in options.results:
            chunk = read_lines(path)
            assign_programs(chunk, path, options.program)
            lines += chunk
    except (OSError, ValueError) as exc:
        print(exc, file=sys.stderr)
        return 2
    report = score(lines, options.dialogues or DEFAULT_DIALOGUES)
    print_report(report, options.failures, table=not options.quiet)
    if options.json:
        text = json.dumps(report, indent=2, ensure_ascii=False, default=repr) + "\n"
        if str(options.json) == "-":
            sys.stdout.write(text)
        else:
            options.json.write_text(text, encoding="utf-8")
    total = report["overall"]
    return 0 if total["turns_met"] == total["turns_with_expectations"] else 1


if __name__ == "__main__":
    sys.exit(main())
