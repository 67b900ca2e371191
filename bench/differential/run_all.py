"""Run MICA and Frontdesk on every program of the harness against the shared model server (issue 25).

    .venv/bin/python bench/differential/run_all.py --mica-python /work/mica-venv/bin/python \\
        [--out /tmp/differential] [--only NAME ...] [--skip-mica] [--frontdesk-src OTHER_TREE/src]

For each program: start shared_model.py on it and its dialogues, play the dialogues with
mica_runner.py (in MICA's environment, `--announce`) and with frontdesk_runner.py (`--base-url`,
`--announce`), and write `<out>/<label>.mica.jsonl`, `<label>.frontdesk.jsonl` and the server's
request log `<label>.requests.jsonl`. Compare the two sides afterwards with compare.py `--explain`
(README.md shows the commands). MICA needs `--skip-validation --wrap-main` for the held-out bots
(MICA_NOTES.md says why).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SHARED = ROOT.parent / "shared"
CONFORMANCE = SHARED / "conformance" / "mica"
MICA_SOURCE = SHARED / "reference" / "mica"


def programs() -> list[dict]:
    """(label, program folder, dialogues, tool files, MICA flags) of every program of the harness."""
    found = []
    for bot in sorted(p for p in (HERE / "heldout").iterdir() if (p / "agents.yml").is_file()):
        found.append({"label": f"heldout:{bot.name}", "program": bot, "dialogues": bot / "dialogues.yml",
                      "tools": [], "mica": ["--skip-validation", "--wrap-main"]})
    for name in ("bookstore", "retail_banking"):
        found.append({"label": f"examples:{name}", "program": ROOT / "examples" / name,
                      "dialogues": HERE / "example_dialogues" / f"{name}.yml", "tools": [], "mica": []})
        found.append({"label": f"conformance:{name}", "program": CONFORMANCE / name,
                      "dialogues": HERE / "example_dialogues" / f"{name}.yml",
                      "tools": [ROOT / "examples" / name / "tools.py"], "mica": []})
    for name in ("kb_agent_example", "custom_llm_example", "customer_service"):
        found.append({"label": f"conformance:{name}", "program": CONFORMANCE / name,
                      "dialogues": HERE / "conformance_dialogues" / f"{name}.yml", "tools": [], "mica": []})
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="MICA and Frontdesk on every program, one shared model server.")
    parser.add_argument("--mica-python", default="/work/mica-venv/bin/python")
    parser.add_argument("--out", default="/tmp/differential")
    parser.add_argument("--only", action="append", default=[], help="labels (or parts of labels) to run")
    parser.add_argument("--skip-mica", action="store_true", help="keep the MICA lines of an earlier run")
    parser.add_argument("--frontdesk-src", type=pathlib.Path, default=ROOT / "src",
                        help="the Frontdesk tree the runner plays (a baseline worktree's src/); the server "
                             "always runs this checkout's")
    options = parser.parse_args(argv)
    out = pathlib.Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    python = sys.executable
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    for item in programs():
        label = item["label"]
        if options.only and not any(o in label for o in options.only):
            continue
        stem = out / label.replace(":", ".")
        tools = [a for t in item["tools"] for a in ("--tools", str(t))]
        log = pathlib.Path(f"{stem}.requests.jsonl")
        log.unlink(missing_ok=True)
        server = subprocess.Popen([python, str(HERE / "shared_model.py"), str(item["program"]), str(item["dialogues"]),
                                   "--log", str(log), *tools], stdout=subprocess.PIPE, text=True, env=env)
        try:
            line = server.stdout.readline()
            if "listening on" not in line:
                print(f"{label}: the shared model server did not start", file=sys.stderr)
                continue
            url = line.split("listening on", 1)[1].strip()
            print(f"{label}: server {url}", flush=True)
            if not options.skip_mica:
                subprocess.run([options.mica_python, str(HERE / "mica_runner.py"), str(item["program"]),
                                str(item["dialogues"]), "--base-url", url, "--announce", "--continue-after-error",
                                "--program-label", label,
                                "--env", "FRONTDESK_EXAMPLE_TODAY=2026-11-22", "--fresh-dir-env",
                                "FRONTDESK_EXAMPLE_DB_DIR", *tools, *item["mica"], "--out", f"{stem}.mica.jsonl"],
                               env={**os.environ, "PYTHONPATH": str(MICA_SOURCE)}, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, check=False)
            subprocess.run([python, str(HERE / "frontdesk_runner.py"), str(item["program"]), str(item["dialogues"]),
                            "--base-url", url, "--announce", "--program-label", label, *tools,
                            "--out", f"{stem}.frontdesk.jsonl"],
                           env={**env, "PYTHONPATH": str(options.frontdesk_src)}, check=False)
        finally:
            server.terminate()
            server.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
