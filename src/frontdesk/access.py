"""What a program may reach beyond its own folder: the environment variables and the folders the operator grants it.

A program's author is trusted to write the program, not to read the operator's secrets. So:

- a program reads an environment variable (an `{env.NAME}` hole of an HTTP tool or an MCP server)
  only when the operator grants it: `--allow-env NAME` (repeatable; `*` and `?` patterns allowed) on
  the command line, or `FRONTDESK_ALLOW_ENV` (names or patterns, separated by commas or spaces).
  Frontdesk's own `FRONTDESK_*` variables (the LLM key, the API tokens, ...) are never granted.
- the files a program names (Python tool files, knowledge sources, an MCP server's folder, command
  and path arguments) resolve inside the program's folder, symbolic links followed, or inside a
  folder the operator grants with `--allow-path DIR` or `FRONTDESK_ALLOW_PATH` (folders separated
  by the OS path separator).

The program itself may write nothing here: its `config.yml` is the author's. `reach_diagnostics`
is what `frontdesk check` reports about it; the tool bindings ask `ProgramEnvironment` and
`escape` again when they run.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
from collections.abc import Iterable, Iterator, Mapping
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from frontdesk.diagnostics import Diagnostic, Severity, Span

ALLOW_ENV = "FRONTDESK_ALLOW_ENV"
ALLOW_PATH = "FRONTDESK_ALLOW_PATH"
OWN_PREFIX = "FRONTDESK_"

# codes (docs/diagnostics.md, "What a program reaches")
PATH_ESCAPE = "FD060"
OWN_VARIABLE = "FD061"
ENV_NOT_GRANTED = "FD062"
ENV_READ = "FD063"

# the --allow-env and --allow-path options' help, the same in every command that has them
ALLOW_ENV_HELP = ("An environment variable the program may read (repeatable; * and ? patterns; FRONTDESK_* "
                  "never). Added to FRONTDESK_ALLOW_ENV; see docs/security.md.")
ALLOW_PATH_HELP = ("A folder outside its own the program may use files from (repeatable). Added to "
                   "FRONTDESK_ALLOW_PATH.")

ENV_HOLE = re.compile(r"\{\{\s*env\.([A-Za-z_]\w*)\s*\}\}|\{env\.([A-Za-z_]\w*)\}")

_granted_env: list[str] = []  # granted by command-line options in this process
_granted_paths: list[Path] = []


def grant(env: Iterable[str] = (), paths: Iterable[str | os.PathLike] = ()) -> None:
    """Grant programs run by this process the variables `env` (names or patterns) and the folders
    `paths` (the command line's --allow-env and --allow-path)."""
    _granted_env.extend(n.strip() for n in env if n and n.strip())
    _granted_paths.extend(Path(p).expanduser().resolve() for p in paths if str(p).strip())


def revoke_all() -> None:
    """Forget what `grant` granted (tests)."""
    _granted_env.clear()
    _granted_paths.clear()


@contextlib.contextmanager
def granting(env: Iterable[str]) -> Iterator[None]:
    """Grant the variables `env` while the block runs (a conversation test's own `env:`, whose values
    the test sets, so nothing of the operator's is read)."""
    added = [n for n in env if n and not is_own(n)]
    _granted_env.extend(added)
    try:
        yield
    finally:
        for name in added:
            _granted_env.remove(name)


def granted_env() -> list[str]:
    """The names and patterns the operator grants: FRONTDESK_ALLOW_ENV and --allow-env."""
    written = re.split(r"[,\s]+", os.environ.get(ALLOW_ENV, ""))
    return [n for n in written if n] + list(_granted_env)


def granted_paths() -> list[Path]:
    """The folders the operator grants besides the program's: FRONTDESK_ALLOW_PATH and --allow-path."""
    written = [p for p in os.environ.get(ALLOW_PATH, "").split(os.pathsep) if p.strip()]
    return [Path(p).expanduser().resolve() for p in written] + list(_granted_paths)


def is_own(name: str) -> bool:
    """Whether a variable is one of Frontdesk's own settings (never readable by a program)."""
    return name.upper().startswith(OWN_PREFIX)


def env_refusal(name: str, grants: list[str] | None = None) -> str | None:
    """Why a program may not read the variable `name` (None: it may)."""
    if is_own(name):
        return f"{name} is one of Frontdesk's own settings, which no program may read"
    patterns = granted_env() if grants is None else grants
    if any(fnmatchcase(name, p) for p in patterns):
        return None
    return (f"the operator has not granted the environment variable {name} to programs "
            f"(run with --allow-env {name} or add it to {ALLOW_ENV})")


class EnvRefused(Exception):
    """A program asked for a variable it may not read; the text names the variable, never its value."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(reason)
        self.name = name


class ProgramEnvironment:
    """The environment as a program sees it. Without `values`: the process's environment, each
    variable only when the operator grants it (asked at each read, so grants made later count).
    With `values`: exactly those (the embedding code chose them). `FRONTDESK_*` is refused either way."""

    def __init__(self, values: Mapping[str, str] | None = None) -> None:
        self.values = values

    def read(self, name: str) -> str | None:
        """The variable's value, None when it is not set; EnvRefused when the program may not read it."""
        if self.values is not None:
            if is_own(name):
                raise EnvRefused(name, env_refusal(name, []) or "")
            return self.values.get(name)
        reason = env_refusal(name)
        if reason is not None:
            raise EnvRefused(name, reason)
        return os.environ.get(name)


def program_environment(env: Mapping[str, str] | ProgramEnvironment | None) -> ProgramEnvironment:
    """`env` as a ProgramEnvironment (None: the process's, as the operator grants it)."""
    return env if isinstance(env, ProgramEnvironment) else ProgramEnvironment(env)


def env_names(text: str) -> list[str]:
    """The variables the `{env.NAME}` holes of a template read."""
    return [m.group(1) or m.group(2) for m in ENV_HOLE.finditer(text)]


# ---- paths -------------------------------------------------------------------------------------


def escape(root: str | os.PathLike, location: str | os.PathLike, base: str | os.PathLike | None = None) -> str | None:
    """Why `location` (relative to `base`, default the program folder `root`) may not be used: it
    resolves (symbolic links followed) outside the program folder and every granted folder. None: inside."""
    home = Path(root or ".").resolve()
    start = Path(base) if base is not None else home
    if not start.is_absolute():
        start = home / start
    try:
        target = (start / Path(os.path.expanduser(str(location)))).resolve()
    except (OSError, RuntimeError, ValueError) as exc:
        return f"{location} cannot be resolved ({exc})"
    for folder in [home, *granted_paths()]:
        if target == folder or folder in target.parents:
            return None
    return (f"{location} is outside the program folder {home} (it resolves to {target}); a program reaches "
            f"only its own files unless the operator grants a folder (--allow-path DIR or {ALLOW_PATH})")


def looks_like_path(arg: str) -> str | None:
    """The path an MCP server's command-line argument names, if it names one (`--dir=/data` names /data)."""
    value = arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg
    if not value or "://" in value or ENV_HOLE.search(value):
        return None
    if value.startswith(("/", "~", ".")) or "/" in value or os.sep in value:
        return value
    return None


def _installed(command: str) -> bool:
    """Whether a command is a program the operator installed: Frontdesk's own Python, or a file in a
    folder of PATH."""
    try:
        found = Path(command).expanduser().resolve()
        if found == Path(sys.executable).resolve() or Path(command).expanduser() == Path(sys.executable):
            return True
        on_path = shutil.which(Path(command).name)
        return on_path is not None and Path(on_path).resolve() == found
    except (OSError, RuntimeError, ValueError):
        return False


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def mcp_escapes(root: str | os.PathLike, command: str, args: Iterable[str], cwd: str | None) -> Iterator[str]:
    """Why an MCP server's folder, command or path arguments may not be used (nothing: all inside). A
    command named without a folder is looked up on PATH; one with a folder must be inside, or be
    Frontdesk's Python or a program on PATH."""
    if cwd:
        problem = escape(root, cwd)
        if problem:
            yield f"its folder (cwd) {problem}"
            return
    base = Path(root or ".") / cwd if cwd else Path(root or ".")
    if command and ("/" in command or os.sep in command) and not ENV_HOLE.search(command) \
            and not _installed(command if Path(command).is_absolute() else str(base / command)):
        problem = escape(root, command, base)
        if problem:
            yield f"its command {problem}"
    for arg in args:
        named = looks_like_path(arg)
        if named is None and arg and not arg.startswith("-") and not ENV_HOLE.search(arg) \
                and _exists(base / arg):
            named = arg  # a plain file name: a symbolic link inside could still lead out
        if named is not None:
            problem = escape(root, named, base)
            if problem:
                yield f"its argument {arg!r}: {problem}"


# ---- what `frontdesk check` says ---------------------------------------------------------------


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def env_reads(program: Any) -> dict[str, Span | None]:
    """The environment variables a program's tools read, each with the first place that reads it."""
    from frontdesk.ir.models import HttpBinding, McpBinding

    found: dict[str, Span | None] = {}
    for tool in program.tools.values():
        binding = tool.binding
        if isinstance(binding, HttpBinding):
            texts = [binding.url, *binding.headers.values(), *(binding.query or {}).values(), *_strings(binding.body)]
        elif isinstance(binding, McpBinding):
            server = binding.server
            texts = [server.url or "", server.command or "", *server.args, *server.env.values(),
                     *server.headers.values()]
        else:
            continue
        for text in texts:
            for name in env_names(text):
                found.setdefault(name, tool.span)
    return found


def reach_diagnostics(program: Any) -> list[Diagnostic]:
    """What a program reaches outside its folder: an error for each file it names outside (FD060) and
    each Frontdesk variable it reads (FD061); a warning for each variable the operator has not granted
    (FD062); a note for each granted one (FD063)."""
    from frontdesk.ir.models import KnowledgeAgent, McpBinding, PythonBinding

    root = program.root or "."
    out: list[Diagnostic] = []
    hint = "move the file into the program's folder, or ask the operator to grant its folder (--allow-path DIR)"
    modules_seen: set[str] = set()
    for tool in program.tools.values():
        binding = tool.binding
        if isinstance(binding, PythonBinding) and binding.module not in modules_seen:
            modules_seen.add(binding.module)  # one error per file, at its first tool
            problem = escape(root, binding.module)
            if problem:
                out.append(Diagnostic(PATH_ESCAPE, f"tool {tool.name}: its Python file {problem}", tool.span,
                                      Severity.ERROR, hint))
    servers_seen: set[str] = set()
    for tool in program.tools.values():
        binding = tool.binding
        if isinstance(binding, McpBinding) and binding.server.command and binding.server.name not in servers_seen:
            servers_seen.add(binding.server.name)
            server = binding.server
            for problem in mcp_escapes(root, server.command or "", server.args, server.cwd):
                out.append(Diagnostic(PATH_ESCAPE, f"MCP server {server.name}: {problem}", tool.span,
                                      Severity.ERROR, hint))
    for agent in program.agents.values():
        if isinstance(agent, KnowledgeAgent):
            for source in agent.sources:
                if source.kind != "url" and source.path is not None:
                    problem = escape(root, source.path)
                    if problem:
                        out.append(Diagnostic(PATH_ESCAPE, f"knowledge source {source.location}: {problem}",
                                              source.span, Severity.ERROR, hint))
    grants = granted_env()
    for name, span in sorted(env_reads(program).items()):
        if is_own(name):
            out.append(Diagnostic(OWN_VARIABLE, f"the program reads {name}, one of Frontdesk's own settings, "
                                  "which no program may read", span, Severity.ERROR,
                                  "give the tool a variable of its own, e.g. {env.SHOP_API_KEY}"))
        elif env_refusal(name, grants):
            out.append(Diagnostic(ENV_NOT_GRANTED, f"the program reads the environment variable {name}, which the "
                                  "operator has not granted: calls that need it will fail", span, Severity.WARNING,
                                  f"the operator grants it with --allow-env {name} or {ALLOW_ENV}={name}"))
        else:
            out.append(Diagnostic(ENV_READ, f"the program reads the environment variable {name} (granted)", span,
                                  Severity.INFO))
    return out
