"""How long `frontdesk acdl check` takes on large ACDL files (0.5, 1 and 2 MB): prints seconds and seconds per MB.

The inputs are built from the ACDL conformance files (../shared/conformance/acdl, read at run time),
each copy's specifications renamed so the file stays valid. Two shapes:

- clean: the copies alone (no diagnostics);
- with diagnostics: every other copy also gets a specification with a redefined Name (a warning)
  and an undefined `$name` (an error), so `check` prints about 1,800 diagnostics per MB;
- undefined fragments: thousands of string fragments and as many invocations of undefined
  fragments (each asks "did you mean" among all fragment names).

What is timed is what `check` does: read and parse the file, run the rules, format the diagnostics
with source excerpts. Run: python bench/acdl_reader.py [--sizes 0.5,1,2]
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

from frontdesk.diagnostics import format_all
from frontdesk.acdl import load_acdl

SHARED = next((p for p in (Path(__file__).resolve().parents[2] / "shared", Path("/work/shared")) if p.is_dir()),
              Path("/work/shared"))
CONFORMANCE = SHARED / "conformance/acdl"
SHAPES = ("clean", "with diagnostics", "undefined fragments")


def build_text(megabytes: float, shape: str) -> str:
    """ACDL text of about `megabytes` MB in the given shape (see the module docstring)."""
    target = int(megabytes * 1024 * 1024)
    parts: list[str] = []
    size = 0
    if shape == "undefined fragments":
        i = 0
        while size < target:
            part = (f"StrFrag Piece{i}[@t]: {{\n    SOME_TEXT\n}}\n"
                    f"P{i}[@T]: {{\n    U: {{\n        Frag Pieec{i}[@T]\n    }}\n}}\n\n")
            parts.append(part)
            size += len(part)
            i += 1
        return "".join(parts)
    sources = [p.read_text(encoding="utf-8") for p in sorted(CONFORMANCE.rglob("*.acdl"))]
    if not sources:
        raise SystemExit(f"no ACDL conformance files under {CONFORMANCE}")
    i = 0
    while size < target:
        text = re.sub(r"^([A-Z][A-Za-z0-9_]*)", lambda m: f"{m.group(1)}_{i}", sources[i % len(sources)], flags=re.M)
        if shape == "with diagnostics" and i % 2 == 0:
            text += (f"\nW_{i}[@T]: {{\n    U: {{\n        Name q := env.a[@T]\n        Name q := env.b[@T]\n"
                     f"        $q\n        $undefined_{i}\n    }}\n}}\n")
        part = text.rstrip() + "\n\n"
        parts.append(part)
        size += len(part)
        i += 1
    return "".join(parts)


def time_check(path: Path) -> tuple[float, float, int]:
    """Seconds (wall clock, and CPU time of this process, which other load on the machine barely
    changes) to load, check and format the diagnostics of one file, and how many diagnostics."""
    start, cpu = time.perf_counter(), time.process_time()
    _, diags = load_acdl(path)
    format_all(diags)
    return time.perf_counter() - start, time.process_time() - cpu, len(diags)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0.5,1,2", help="sizes in MB, comma separated")
    parser.add_argument("--shapes", default=",".join(SHAPES), help="shapes to run, comma separated")
    args = parser.parse_args(argv)
    sizes = [float(s) for s in args.sizes.split(",")]
    shapes = [s.strip() for s in args.shapes.split(",") if s.strip() in SHAPES]
    print(f"{'shape':<22}{'MB':>6}{'diagnostics':>13}{'wall s':>9}{'CPU s':>9}{'CPU s per MB':>14}")
    with tempfile.TemporaryDirectory() as folder:
        for shape in shapes:
            for size in sizes:
                path = Path(folder) / f"{shape.replace(' ', '_')}_{size}.acdl"
                path.write_text(build_text(size, shape), encoding="utf-8")
                megabytes = path.stat().st_size / (1024 * 1024)
                wall, cpu, count = time_check(path)
                print(f"{shape:<22}{megabytes:>6.2f}{count:>13}{wall:>9.2f}{cpu:>9.2f}{cpu / megabytes:>14.2f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
