"""The optional parts of Frontdesk and the pip extra that installs each.

`pip install frontdesk` brings what `check`, `compile`, `chat` and `test` need. A command or program
that needs more says which extra to install (`pip install 'frontdesk[serve]'`) instead of failing
with a traceback. Nothing here imports an optional module until asked to.
"""

from __future__ import annotations

import importlib
import importlib.util

# extra -> the modules it brings, in the order they are tried
EXTRAS: dict[str, tuple[str, ...]] = {
    "serve": ("fastapi", "uvicorn", "prometheus_client"),
    "redis": ("redis",),
    "postgres": ("psycopg",),
    "mcp": ("mcp",),
}


class MissingExtra(ImportError):
    """An optional part is used but its extra is not installed; the message says what to install."""

    def __init__(self, extra: str, what: str, module: str) -> None:
        super().__init__(install_hint(extra, what, module))
        self.extra = extra
        self.module = module


def install_hint(extra: str, what: str, module: str | None = None) -> str:
    """E.g. "frontdesk serve needs the 'serve' extra (no module 'fastapi'): pip install 'frontdesk[serve]'"."""
    missing = f" (no module {module!r})" if module else ""
    return f"{what} needs the '{extra}' extra{missing}: pip install 'frontdesk[{extra}]'"


def require(extra: str, what: str) -> None:
    """Import the extra's modules; MissingExtra names the extra when one cannot be imported."""
    for module in EXTRAS[extra]:
        try:
            importlib.import_module(module)
        except ImportError:
            raise MissingExtra(extra, what, module) from None


def missing_module(extra: str) -> str | None:
    """The first of the extra's modules that is not installed, without importing any (None: all are)."""
    for module in EXTRAS[extra]:
        try:
            if importlib.util.find_spec(module) is None:
                return module
        except (ImportError, ValueError):  # a module set to None in sys.modules, or a broken parent
            return module
    return None
