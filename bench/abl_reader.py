"""How long the ABL reader takes on long program text (issue 23): a 1,000-line signature, and 1 MB and
2 MB files of several shapes. Each input is generated, written to a temporary folder and timed twice:
`read` is the outline reader alone (read_document), `check` the whole of `frontdesk check` (compile,
then the static analysis when the program has no error); each as wall-clock and CPU seconds (the CPU
figure is the steadier one on a shared machine). The target: a 1 MB .agent.abl read in under
2 s. Each case runs in a child process with a time limit, so a reader that stalls shows as "> LIMIT".

Run: .venv/bin/python bench/abl_reader.py [--only NAME ...] [--limit SECONDS] [--json FILE]
(PYTHONPATH=other/src runs it against another copy of Frontdesk, e.g. the one before a change.)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MB = 1_000_000
HEAD = 'AGENT: Bench_Agent\nGOAL: "Answer questions about orders"\n'


def _fill(unit, size: int) -> list[str]:
    """Lines from unit(i) until they hold `size` characters."""
    lines, total, i = [], 0, 0
    while total < size:
        line = unit(i)
        lines.append(line)
        total += len(line) + 1
        i += 1
    return lines


def signature(n_lines: int, width: int = 0) -> str:
    """One TOOLS signature whose parameters take `n_lines` lines (each padded to about `width`)."""
    pad = "x" * max(0, width - 40)
    params = "".join(f'    p{i}: string = "{pad}",\n' if pad else f"    p{i}: string,\n" for i in range(n_lines))
    return HEAD + "TOOLS:\n  search_orders(\n" + params + "    last: string\n  ) -> {found: boolean}\n"


def signature_of_size(size: int) -> str:
    """One signature of about `size` characters (lines of about 100)."""
    return signature(size // 100, width=100)


def sections(size: int) -> str:
    """An agent of the usual sections, each long: GATHER fields, TOOLS, CONSTRAINTS on the fields
    (lines of about 70 characters on average, below the reader's 20,000-line limit)."""
    fields = _fill(lambda i: f'  field_{i}:\n    prompt: "What is the value number {i} of the order you '
                   f'placed with us last month?"\n    type: string', size // 3)
    tools = _fill(lambda i: f"  tool_{i}(order_id: string, amount: number = 1, note: string = \"n\") "
                  f"-> {{ok: boolean, id: string}}", size // 3)
    rules = _fill(lambda i: f"  - REQUIRE field_{i % len(fields)} IS SET OR field_{(i + 1) % len(fields)} "
                  f"IS SET\n    ON_FAIL: \"Please tell me the value number {i} of the order\"", size // 3)
    return HEAD + "GATHER:\n" + "\n".join(fields) + "\nTOOLS:\n" + "\n".join(tools) + \
        "\nCONSTRAINTS:\n" + "\n".join(rules) + "\n"


def continued_lines(size: int) -> str:
    """Many multi-line signatures of long continuation lines (three lines of about 300 characters each)."""
    pad = "y" * 240

    def tool(i: int) -> str:
        return (f"  tool_{i}(\n    a: string = \"{pad}\",\n    b: string = \"{pad}\"\n  ) -> {{\n"
                f"    ok: boolean, note: string, detail: string, more: string, pad_{pad[:200]}: string\n  }}")
    return HEAD + "TOOLS:\n" + "\n".join(_fill(tool, size)) + "\n"


def long_line(size: int) -> str:
    """One very long line: the GOAL as one quoted text."""
    return HEAD.split("\n")[0] + '\nGOAL: "' + ("word " * (size // 5)) + '"\n'


def long_list(size: int) -> str:
    """A long list: LIMITATIONS with one quoted item a line."""
    return HEAD + "LIMITATIONS:\n" + "\n".join(
        _fill(lambda i: f'  - "Cannot change order number {i} once it has shipped to the customer"', size)) + "\n"


def yaml_sections(size: int) -> str:
    """The .agent.yaml form: GATHER fields and TOOLS."""
    fields = _fill(lambda i: f'  field_{i}:\n    prompt: "What is the value number {i} of the order?"\n'
                   f"    type: string", size // 2)
    tools = _fill(lambda i: f"  - 'tool_{i}(order_id: string, amount: number = 1) -> {{ok: boolean}}'", size // 2)
    return "agent: Bench_Agent\ngoal: Answer questions about orders\ngather:\n" + "\n".join(fields) + \
        "\ntools:\n" + "\n".join(tools) + "\n"


def unknown_handoffs(count: int) -> str:
    """Constraints whose ON_FAIL hands off to agents the project lacks (an error each, located by name)."""
    return HEAD + 'GATHER:\n  account:\n    prompt: "Which account?"\nCONSTRAINTS:\n' + "".join(
        f"  - REQUIRE account IS SET\n    ON_FAIL:\n      HANDOFF: Missing_Agent_{i}\n" for i in range(count))


CASES = {
    "signature_500_lines": (lambda: signature(500), ".agent.abl"),
    "signature_1000_lines": (lambda: signature(1000), ".agent.abl"),
    "signature_1000_lines_of_200": (lambda: signature(1000, width=200), ".agent.abl"),
    "1mb_sections": (lambda: sections(MB), ".agent.abl"),
    "1mb_one_signature": (lambda: signature_of_size(MB), ".agent.abl"),
    "1mb_continued_lines": (lambda: continued_lines(MB), ".agent.abl"),
    "1mb_one_line": (lambda: long_line(MB), ".agent.abl"),
    "1mb_long_list": (lambda: long_list(MB), ".agent.abl"),
    "1mb_yaml": (lambda: yaml_sections(MB), ".agent.yaml"),
    "1.9mb_one_signature": (lambda: signature_of_size(19 * MB // 10), ".agent.abl"),
    "1.9mb_continued_lines": (lambda: continued_lines(19 * MB // 10), ".agent.abl"),
    "1.9mb_one_line": (lambda: long_line(19 * MB // 10), ".agent.abl"),
    "6000_unknown_handoffs": (lambda: unknown_handoffs(6000), ".agent.abl"),
}


def run_case(name: str) -> dict:
    """Time one case in this process (the child's side)."""
    from frontdesk.diagnostics import DiagnosticBag
    from frontdesk.lang import load_program
    from frontdesk.lang.abl.documents import read_document

    make, suffix = CASES[name]
    text = make()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"bench{suffix}"
        path.write_text(text, encoding="utf-8")
        start, cpu = time.perf_counter(), time.process_time()
        read_document(path, str(path), DiagnosticBag())
        read, read_cpu = time.perf_counter() - start, time.process_time() - cpu
        start, cpu = time.perf_counter(), time.process_time()
        program, diags = load_program(path)
        if program is not None and not any(d.is_error for d in diags):
            from frontdesk.analysis import with_analysis

            diags = with_analysis(program, diags)
        check, check_cpu = time.perf_counter() - start, time.process_time() - cpu
    errors = sorted({d.code for d in diags if d.is_error})
    return {"case": name, "bytes": len(text.encode()), "lines": text.count("\n"), "read_s": round(read, 3),
            "read_cpu_s": round(read_cpu, 3), "check_s": round(check, 3), "check_cpu_s": round(check_cpu, 3),
            "errors": errors}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="case names (default: all)")
    parser.add_argument("--limit", type=float, default=120.0, help="seconds a case may take")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--case", default=None, help=argparse.SUPPRESS)  # the child's side
    args = parser.parse_args()
    if args.case:
        print(json.dumps(run_case(args.case)))
        return 0
    results = []
    print(f"{'case':30} {'bytes':>9} {'lines':>7} {'read s':>8} {'(cpu)':>8} {'check s':>8} {'(cpu)':>8}  errors")
    for name in args.only or list(CASES):
        try:
            done = subprocess.run([sys.executable, __file__, "--case", name], capture_output=True, text=True,
                                  timeout=args.limit, check=True)
            result = json.loads(done.stdout.strip().splitlines()[-1])
        except subprocess.TimeoutExpired:
            result = {"case": name, "errors": [f"> {args.limit:g} s"]}
        except (subprocess.CalledProcessError, ValueError, IndexError) as exc:
            tail = (getattr(exc, "stderr", "") or str(exc)).strip().splitlines()[-1:]
            result = {"case": name, "errors": [f"failed: {' '.join(tail)}"]}
        results.append(result)
        shown = {k: result.get(k, "-") for k in ("bytes", "lines", "read_s", "read_cpu_s", "check_s", "check_cpu_s")}
        print(f"{name:30} {shown['bytes']:>9} {shown['lines']:>7} {shown['read_s']:>8} {shown['read_cpu_s']:>8} "
              f"{shown['check_s']:>8} {shown['check_cpu_s']:>8}  {', '.join(result['errors']) or '-'}", flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
