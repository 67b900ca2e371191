"""Mutation fuzzing of the three readers (ABL, ADL, ACDL): no input may escape as an exception or stall.

Seeds are real programs: the examples' and tests' ABL projects (.agent.abl, .tools.abl, .agent.yaml),
ADL programs (agents.yml and the broken-program fixtures) and ACDL files (the tests' fixtures, and the
ACDL and MICA conformance files from ../shared when present). Each input is a seed with one to three
mutations (lines deleted, duplicated, swapped, re-indented or spliced from another file; random bytes
and awkward characters; truncation; deep nesting; huge numbers; very long lines; YAML anchors, alias
bombs and Python tags), read the way `frontdesk check` / `frontdesk acdl check` read it:
load (compile to IR), the static analysis when the load has no error, the IR as JSON, and the
diagnostics formatted as text and as JSON. An outcome is fine when all of that returns; any exception
is a failure, and so is an input slower than the time bound or a YAML Python tag that took effect.

Run: python bench/fuzz_readers.py --abl 30000 --adl 10000 --acdl 10000 --seed 1 [--save DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = next((p for p in (ROOT.parent / "shared", Path("/work/shared")) if p.is_dir()), Path("/work/shared"))
READERS = ("abl", "adl", "acdl")
MAX_PROJECT_FILES = 8
# Folders whose programs are kept out of the seeds: held-out sets stay unseen.
_SKIPPED_PARTS = {"hostile_heldout", "analysis_heldout", "__pycache__", ".venv", "snapshots"}
MAX_INPUT_CHARS = 60_000  # inputs are cut to this size: robustness here, the time large files take in benchmarks
HONOURED = "tag_was_honoured"  # a file a honoured `!!python/...` tag would create (it must never appear)


# ---------------------------------------------------------------------------
# Seeds
# ---------------------------------------------------------------------------


@dataclass
class Seed:
    """One program to mutate: its files by name (text), and extra files copied unchanged (tools.py)."""

    reader: str
    origin: str
    files: dict[str, str]
    extras: dict[str, str] = field(default_factory=dict)


def _kept(path: Path) -> bool:
    return not (_SKIPPED_PARTS & set(path.parts))


def _read(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return None


def _abl_name(name: str) -> bool:
    return name.lower().endswith((".abl", ".agent.yaml", ".agent.yml"))


def collect_seeds(reader: str) -> list[Seed]:
    """Every seed program for one reader, in a stable order."""
    seeds: list[Seed] = []
    bases = [ROOT / "examples", ROOT / "tests"]
    if reader == "abl":
        folders = sorted({p.parent for b in bases for p in b.rglob("*") if p.is_file() and _abl_name(p.name) and _kept(p)})
        for folder in folders:
            files = {p.name: t for p in sorted(folder.iterdir())[:60]
                     if p.is_file() and _abl_name(p.name) and (t := _read(p)) is not None}
            names = sorted(files)[:MAX_PROJECT_FILES]
            if names:
                seeds.append(Seed("abl", str(folder.relative_to(ROOT)), {n: files[n] for n in names}))
    elif reader == "adl":
        paths = [p for b in bases for p in b.rglob("agents.y*ml") if _kept(p)]
        paths += [p for p in (ROOT / "tests" / "adl_broken").glob("*.y*ml")]
        paths += sorted((SHARED / "conformance" / "mica").glob("*/agents.yml"))
        for path in sorted(set(paths)):
            text = _read(path)
            if text is None:
                continue
            extras = {}
            tools = path.parent / "tools.py"
            if tools.is_file() and (tools_text := _read(tools)) is not None:
                extras["tools.py"] = tools_text
            seeds.append(Seed("adl", str(path), {"agents.yml": text}, extras))
    else:
        paths = [p for p in (ROOT / "tests").rglob("*.acdl") if _kept(p)]
        paths += list((SHARED / "conformance" / "acdl").rglob("*.acdl"))
        for path in sorted(set(paths)):
            text = _read(path)
            if text is not None:
                seeds.append(Seed("acdl", str(path), {"spec.acdl": text}))
    return seeds


# ---------------------------------------------------------------------------
# Mutations
# ---------------------------------------------------------------------------

ODD_CHARACTERS = [
    "\x00", "\ufeff", "\r", "\r\n", "\t", "\x0b", "\x0c", "\x1b[31m", "\u2028", "\u2029", "\x85", "\u202e",
    "\u200b", "\u0301", "\U0001f600", "\uff21", "\u0663", "\ud800", "\udfff", "\ufffd", "\x7f", "\\", "\"", "'",
    "{", "}", "[", "]", "(", ")", ":", "-", "#", "//", "/*", "&", "*", "!", "|", ">", "%", "@", "$", "`", "{{", "}}",
]
HUGE_NUMBERS = ["9" * 5000, "1e999999", "-0", "nan", "inf", "0x" + "f" * 400, "1" + "0" * 400 + ".5", "-" + "9" * 80]
YAML_TAGS = [
    "!!python/object/apply:os.makedirs [\"{marker}\"]",
    "!!python/object/new:os.makedirs [\"{marker}\"]",
    "!!python/name:os.system",
    "!!python/module:os",
    "!!binary aGVsbG8=",
    "!include other.yml",
    "!!set {{a, b}}",
    "!!omap [a: 1]",
    "!!timestamp 2001-12-14",
    "!!float .nan",
    "!!int 0b" + "1" * 300,
]


def _alias_bomb(rng: random.Random) -> str:
    levels = rng.randint(6, 12)
    out = ["lol0: &lol0 [\"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\"]"]
    for i in range(1, levels):
        out.append(f"lol{i}: &lol{i} [{', '.join(['*lol' + str(i - 1)] * 9)}]")
    return "\n".join(out)


def _deep(reader: str, fmt: str, rng: random.Random) -> str:
    depth = rng.choice([60, 200, 1000, 5000])
    if fmt == "yaml":
        kind = rng.randrange(4)
        if kind == 0:
            return "deep: " + "[" * depth + "]" * depth
        if kind == 1:
            return "deep: " + "{a: " * depth + "1" + "}" * depth
        if kind == 2:
            return "\n".join(" " * i + "k:" for i in range(min(depth, 3000)))
        return "deep: &x [*x]" if rng.random() < 0.5 else "a: &a\n  b: *a"
    if reader == "acdl":
        kind = rng.randrange(3)
        if kind == 0:
            return "P[@T]: {\n" + "U: {\n" * depth + "}\n" * depth + "}"
        if kind == 1:
            return "P[@T]: {\n    U: f" + "(" * depth + "x" + ")" * depth + "\n}"
        return "P[@T]: {\n    Name x := " + " + ".join(["sys.a"] * depth) + "\n}"
    kind = rng.randrange(3)
    if kind == 0:
        return "\n".join("  " * i + f"K{i}:" for i in range(min(depth, 3000)))
    if kind == 1:
        return "    CHECK: " + "(" * depth + "a" + ")" * depth
    return "    RESPOND: \"" + "{{#if a}}" * depth + "x" + "{{/if}}" * depth + "\""


def mutate(text: str, reader: str, fmt: str, corpus: list[str], rng: random.Random, marker: str) -> str:
    """`text` with one to three random mutations (see the module docstring)."""
    for _ in range(rng.randint(1, 3)):
        lines = text.split("\n")
        at = rng.randrange(len(lines) + 1)
        choice = rng.randrange(18)
        if choice == 0 and lines:  # delete lines
            del lines[at:at + rng.randint(1, 3)]
        elif choice == 1 and lines:  # duplicate a run of lines
            run = lines[at:at + rng.randint(1, 6)]
            lines[at:at] = run * rng.randint(1, 3)
        elif choice == 2 and len(lines) > 1:  # swap two lines
            a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[a], lines[b] = lines[b], lines[a]
        elif choice == 3:  # awkward characters at a random place
            flat = "\n".join(lines)
            pos = rng.randint(0, len(flat))
            text = flat[:pos] + "".join(rng.choice(ODD_CHARACTERS) for _ in range(rng.randint(1, 4))) + flat[pos:]
            continue
        elif choice == 4:  # random bytes (read as Latin-1 so every byte is a character)
            flat = "\n".join(lines)
            pos = rng.randint(0, len(flat))
            noise = bytes(rng.randrange(256) for _ in range(rng.randint(1, 12))).decode("latin-1")
            text = flat[:pos] + noise + flat[pos:]
            continue
        elif choice == 5 and lines:  # re-indent a line
            i = rng.randrange(len(lines))
            stripped = lines[i].lstrip(" \t")
            lines[i] = rng.choice(["", " ", "  ", "   ", "\t", " \t", "    " * rng.randint(1, 12)]) + stripped
        elif choice == 6:  # truncate
            flat = "\n".join(lines)
            text = flat[: rng.randint(0, len(flat))]
            continue
        elif choice == 7 and corpus:  # splice lines from another file
            other = rng.choice(corpus).split("\n")
            start = rng.randrange(len(other))
            lines[at:at] = other[start:start + rng.randint(1, 8)]
        elif choice == 8:
            lines.insert(at, _deep(reader, fmt, rng))
        elif choice == 9:  # a huge number in place of a number or a word
            flat = "\n".join(lines)
            digits = [i for i, ch in enumerate(flat) if ch.isdigit()]
            pos = rng.choice(digits) if digits else rng.randint(0, len(flat))
            text = flat[:pos] + rng.choice(HUGE_NUMBERS) + flat[pos + 1:]
            continue
        elif choice == 10 and lines:  # a very long line
            i = rng.randrange(len(lines))
            lines[i] = lines[i] + (" " + (lines[i].strip() or "x")) * rng.choice([100, 1000, 3000])
        elif choice == 11 and fmt == "yaml":
            bomb = _alias_bomb(rng)
            lines[at:at] = bomb.split("\n") if rng.random() < 0.5 else [f"x: {bomb.splitlines()[-1].split(': ', 1)[1]}"]
            if rng.random() < 0.5:
                lines.insert(0, bomb)
        elif choice == 12 and lines:  # a tag or an anchor on a value
            i = rng.randrange(len(lines))
            tag = rng.choice(YAML_TAGS).format(marker=marker) if fmt == "yaml" or rng.random() < 0.3 else "&a *a"
            head, sep, tail = lines[i].partition(": ")
            lines[i] = f"{head}: {tag}" if sep else f"{lines[i]} {tag}"
        elif choice == 13:  # line ends
            text = "\n".join(lines).replace("\n", rng.choice(["\r\n", "\r", "\n\n", "\u2028", "\x85"]))
            continue
        elif choice == 14 and lines:  # a word replaced by a word from another file
            words = rng.choice(corpus).split() if corpus else ["x"]
            i = rng.randrange(len(lines))
            parts = lines[i].split(" ")
            parts[rng.randrange(len(parts))] = rng.choice(words) if words else ""
            lines[i] = " ".join(parts)
        elif choice == 15 and lines:  # a character dropped (an unclosed quote or bracket, a lost colon)
            i = rng.randrange(len(lines))
            if lines[i]:
                j = rng.randrange(len(lines[i]))
                lines[i] = lines[i][:j] + lines[i][j + 1:]
        elif choice == 16:  # a BOM or whitespace at the very start
            text = rng.choice(["\ufeff", " ", "\t", "\n", "\ufeff\ufeff", "%YAML 1.1\n---\n", "---\n", "...\n"]) + "\n".join(lines)
            continue
        elif choice == 17:  # the whole file repeated
            text = "\n".join(lines * rng.randint(2, 5))
            continue
        text = "\n".join(lines)
    return text[:MAX_INPUT_CHARS]


def to_bytes(text: str, rng: random.Random) -> bytes:
    """The text as file bytes: UTF-8, lone surrogates written as their (invalid) 3-byte forms, and
    sometimes the Latin-1 or UTF-16 encoding instead."""
    data = text.encode("utf-8", "surrogatepass")
    roll = rng.random()
    if roll < 0.01:
        return text.encode("utf-16", "surrogatepass")
    if roll < 0.03:
        return text.encode("latin-1", "replace")
    return data


# ---------------------------------------------------------------------------
# Running one input the way `check` does
# ---------------------------------------------------------------------------


class Stalled(Exception):
    """An input took longer than the hard limit (the reader would hang the process)."""


def _check_program(folder: Path, program_path: Path) -> bool:
    """`frontdesk check`: load (to IR), the analysis when the load has no error, IR JSON, diagnostics
    as text and JSON. True when the program has no error."""
    from frontdesk.analysis import with_analysis
    from frontdesk.cli import _load_program
    from frontdesk.diagnostics import format_all

    program, diags = _load_program(str(program_path))
    if program is not None and not any(d.is_error for d in diags):
        diags = with_analysis(program, diags)
    ok = program is not None and not any(d.is_error for d in diags)
    if ok:
        program.model_dump_json()  # `frontdesk compile` on a program that checks
    _render(diags, format_all)
    return ok


def _render(diags, format_all) -> None:
    format_all(diags).encode("utf-8", "backslashreplace")  # stderr: what cannot be encoded is escaped
    json.dumps([d.to_json() for d in diags], indent=2, ensure_ascii=False).encode("utf-8")  # stdout: strict


def _check_acdl(path: Path) -> bool:
    from frontdesk.diagnostics import format_all
    from frontdesk.acdl import format_acdl, load_acdl

    file_ast, diags = load_acdl(path)
    _render(diags, format_all)
    ok = file_ast is not None and not any(d.is_error for d in diags)
    if ok:
        format_acdl(file_ast)  # `acdl fmt` on a file that checks
    return ok


def _check_text(reader: str, fmt: str, text: str) -> None:
    """The readers that take text, given text that no file decode produces (lone surrogates, NUL...)."""
    from frontdesk.diagnostics import DiagnosticBag

    bag = DiagnosticBag()
    if reader == "acdl":
        from frontdesk.acdl import parse_acdl

        parse_acdl(text, "<fuzz>")
    elif reader == "abl" and fmt == "abl":
        from frontdesk.lang.abl.outline import read_outline

        read_outline(text, "<fuzz>", bag)
    elif reader == "abl":
        from frontdesk.lang.abl.documents import read_yaml_outline

        read_yaml_outline(text, "<fuzz>", bag)
    else:
        from frontdesk.lang.adl.codes import YAML
        from frontdesk.yamlsource.nodes import compose_yaml

        compose_yaml(text, "<fuzz>", bag, YAML)


@dataclass
class ReaderReport:
    reader: str
    inputs: int = 0
    clean: int = 0
    diagnostics_only: int = 0
    exceptions: int = 0
    slow: int = 0
    honoured_tags: int = 0
    slowest: float = 0.0
    slowest_origin: str = ""
    failures: list[str] = field(default_factory=list)  # short descriptions of the first failures

    @property
    def failed(self) -> int:
        return self.exceptions + self.slow + self.honoured_tags

    def line(self) -> str:
        return (f"{self.reader:<5} inputs {self.inputs:>6}  diagnostics-only {self.diagnostics_only:>6}  "
                f"clean {self.clean:>6}  uncaught exceptions {self.exceptions}  over time bound {self.slow}  "
                f"tags honoured {self.honoured_tags}  slowest {self.slowest:.2f} s ({self.slowest_origin})")


class _HardLimit:
    """Raise Stalled in the main thread after `seconds` (SIGALRM); a no-op elsewhere."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.active = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()

    def __enter__(self) -> "_HardLimit":
        if self.active:
            self.previous = signal.signal(signal.SIGALRM, self._fire)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    def _fire(self, *_: object) -> None:
        raise Stalled(f"no result after {self.seconds:.0f} s")

    def __exit__(self, *_: object) -> None:
        if self.active:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)


def _warm_up(seed: Seed, work: Path) -> None:
    """Read one seed untimed first: imports and grammar tables are built once, not in input 0's time."""
    folder = work / "warm_up"
    folder.mkdir()
    for name, body in {**seed.extras, **seed.files}.items():
        (folder / name).write_text(body, encoding="utf-8")
    try:
        if seed.reader == "acdl":
            _check_acdl(folder / "spec.acdl")
        else:
            _check_program(folder, folder / "agents.yml" if seed.reader == "adl" else folder)
    except Exception:  # noqa: BLE001 - the runs that follow count failures
        pass
    shutil.rmtree(folder, ignore_errors=True)


def run_reader(reader: str, count: int, seed: int | str, time_bound: float = 10.0, hard_limit: float = 60.0,
               save: Path | None = None, keep: int = 5, progress: bool = False) -> ReaderReport:
    """Run `count` mutated inputs through one reader; the report counts outcomes and failures."""
    rng = random.Random(f"{reader}:{seed}")
    seeds = collect_seeds(reader)
    if not seeds:
        raise SystemExit(f"no {reader} seeds found")
    corpus = [t for s in seeds for t in s.files.values()]
    report = ReaderReport(reader)
    work = Path(tempfile.mkdtemp(prefix=f"fuzz_{reader}_"))
    try:
        _warm_up(seeds[0], work)
        for n in range(count):
            chosen = rng.choice(seeds)
            files = dict(chosen.files)
            target = rng.choice(sorted(files))
            fmt = "yaml" if target.lower().endswith((".yml", ".yaml")) else ("acdl" if reader == "acdl" else "abl")
            folder = work / f"in{n}"
            marker = folder / HONOURED
            text = mutate(files[target], reader, fmt, corpus, rng, str(marker))
            if rng.random() < 0.15 and len(files) > 1:  # a second file of the project changed as well
                other = rng.choice(sorted(files))
                files[other] = mutate(files[other], reader, fmt, corpus, rng, str(marker))
            files[target] = text
            folder.mkdir()
            for name, body in {**chosen.extras, **files}.items():
                (folder / name).write_bytes(body.encode("utf-8", "surrogatepass") if name != target else to_bytes(body, rng))
            start = time.perf_counter()
            error: str | None = None
            ok = False
            try:
                with _HardLimit(hard_limit):
                    if reader == "acdl":
                        ok = _check_acdl(folder / target)
                    elif reader == "adl":
                        ok = _check_program(folder, folder / "agents.yml")
                    else:
                        ok = _check_program(folder, folder)
                    if any(0xD800 <= ord(ch) <= 0xDFFF or ch == "\x00" for ch in text):
                        _check_text(reader, fmt, text)
            except Exception:  # noqa: BLE001 - every escaping exception is what this harness counts
                error = traceback.format_exc()
            elapsed = time.perf_counter() - start
            report.inputs += 1
            if elapsed > report.slowest:
                report.slowest, report.slowest_origin = elapsed, f"input {n} from {chosen.origin}"
            problem = None
            if error is not None:
                report.exceptions += 1
                problem = error.strip().splitlines()[-1]
            elif elapsed > time_bound:
                report.slow += 1
                problem = f"took {elapsed:.1f} s (bound {time_bound:.0f} s)"
            elif marker.exists():
                report.honoured_tags += 1
                problem = "a YAML Python tag took effect"
            elif ok:
                report.clean += 1
            else:
                report.diagnostics_only += 1
            if problem is not None:
                if len(report.failures) < 50:
                    report.failures.append(f"input {n} ({chosen.origin}, {target}): {problem}")
                if save is not None and report.failed <= keep:
                    kept = save / reader / f"input{n}"
                    shutil.copytree(folder, kept, dirs_exist_ok=True)
                    (kept / "FAILURE.txt").write_text(f"seed {chosen.origin}\nchanged {target}\n\n{error or problem}\n")
            shutil.rmtree(folder, ignore_errors=True)
            if progress and (n + 1) % 1000 == 0:
                print(f"  {reader}: {n + 1} inputs, {report.failed} failures", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--abl", type=int, default=300, help="inputs for the ABL reader")
    parser.add_argument("--adl", type=int, default=300, help="inputs for the ADL reader")
    parser.add_argument("--acdl", type=int, default=300, help="inputs for the ACDL reader")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--time-bound", type=float, default=10.0, help="seconds one input may take")
    parser.add_argument("--save", type=Path, default=Path(tempfile.gettempdir()) / "fuzz_readers_failures",
                        help="folder for the first failing inputs of each reader")
    parser.add_argument("--jobs", type=int, default=1, help="processes per reader (each with its own seed)")
    parser.add_argument("--progress", action="store_true")
    args = parser.parse_args(argv)
    total_failed = 0
    start = time.perf_counter()
    for reader in READERS:
        count = getattr(args, reader)
        if count <= 0:
            continue
        if args.jobs > 1:
            report = _run_parallel(reader, count, args)
        else:
            report = run_reader(reader, count, args.seed, args.time_bound, save=args.save, progress=args.progress)
        print(report.line(), flush=True)
        for failure in report.failures[:10]:
            print(f"    {failure}")
        total_failed += report.failed
    print(f"total: {total_failed} failures in {time.perf_counter() - start:.0f} s"
          + (f"; failing inputs saved under {args.save}" if total_failed else ""))
    return 1 if total_failed else 0


def _run_parallel(reader: str, count: int, args: argparse.Namespace) -> ReaderReport:
    """`count` inputs shared among `--jobs` processes, job j seeded "<seed>.<j>"; the reports summed."""
    from concurrent.futures import ProcessPoolExecutor

    shares = [count // args.jobs + (1 if j < count % args.jobs else 0) for j in range(args.jobs)]
    with ProcessPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(run_reader, reader, share, f"{args.seed}.{j}", args.time_bound, 60.0,
                               args.save / f"job{j}", 5, args.progress) for j, share in enumerate(shares)]
        parts = [f.result() for f in futures]
    total = ReaderReport(reader)
    for part in parts:
        for name in ("inputs", "clean", "diagnostics_only", "exceptions", "slow", "honoured_tags"):
            setattr(total, name, getattr(total, name) + getattr(part, name))
        total.failures += part.failures
        if part.slowest > total.slowest:
            total.slowest, total.slowest_origin = part.slowest, part.slowest_origin
    return total


if __name__ == "__main__":
    sys.exit(main())
