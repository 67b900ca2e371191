"""`frontdesk --help` and `frontdesk check` import only what they use: not the server (FastAPI,
uvicorn, Starlette, Prometheus, the server's pydantic models), not the Redis or PostgreSQL drivers,
not the MCP SDK and not the local models' torch. Each command runs in a fresh interpreter, which
then lists the modules it holds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("fastapi", "uvicorn", "starlette", "redis", "psycopg", "mcp", "prometheus_client", "torch",
         "transformers", "sentence_transformers", "frontdesk.server")

# Runs the CLI's main() with the given arguments, then writes the names of the loaded modules as JSON.
PROBE = """
import json, os, sys
for name in os.environ.get("PROBE_PRELOAD", "").split():
    __import__(name)
sys.argv = ["frontdesk", *json.loads(os.environ["PROBE_ARGS"])]
from frontdesk.cli import main
try:
    main()
except SystemExit:
    pass
with open(os.environ["PROBE_OUT"], "w", encoding="utf-8") as f:
    json.dump(sorted(sys.modules), f)
"""


def loaded_modules(tmp_path: Path, *args: str, preload: str = "") -> set[str]:
    out = tmp_path / "modules.json"
    env = {**os.environ, "PROBE_ARGS": json.dumps(args), "PROBE_OUT": str(out), "PROBE_PRELOAD": preload}
    result = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=120)
    assert out.exists(), result.stderr
    return set(json.loads(out.read_text(encoding="utf-8")))


def heavy_in(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize("args", [
    ("--help",),
    ("check", "examples/bookstore"),  # ADL
    ("check", "examples/support_hub"),  # ABL, with a supervisor
], ids=["help", "check-adl", "check-abl"])
def test_the_command_imports_no_optional_or_heavy_module(tmp_path, args):
    modules = loaded_modules(tmp_path, *args)
    assert "frontdesk.cli" in modules  # the command did run
    assert heavy_in(modules) == []


def test_the_probe_sees_a_module_that_was_imported(tmp_path):
    # the check above is not vacuous: a heavy module loaded on the way is reported
    modules = loaded_modules(tmp_path, "--help", preload="frontdesk.server.auth")
    assert heavy_in(modules) == ["frontdesk.server", "frontdesk.server.auth"]
