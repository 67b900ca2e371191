"""Reading the `sources:` of a `kb agent` into documents: local files and folders, and web pages through a `Fetcher`."""

from __future__ import annotations

from pathlib import Path

from frontdesk.access import escape
from frontdesk.ir.models import KnowledgeSource
from frontdesk.runtime.retrieval.documents import Document
from frontdesk.runtime.retrieval.fetch import (
    DEFAULT_TIMEOUT,
    Fetcher,
    FetchError,
    default_fetcher,
)
from frontdesk.runtime.retrieval.loaders import (
    display_path,
    load_directory,
    load_file,
    load_page,
)
from frontdesk.runtime.retrieval.progress import LOAD, ProgressCallback, report


def load_source(
    source: KnowledgeSource,
    root: Path,
    fetch_urls: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
    *,
    fetcher: Fetcher | None = None,
) -> tuple[list[Document], list[str]]:
    """Read one `sources:` entry into documents; problems are sentences for the author, never exceptions.

    Web pages come from `fetcher`; without one, from HTTP with `timeout` when `fetch_urls`, else not at all.
    """
    root = Path(root)
    location = source.location
    try:
        if source.kind == "url":
            fetched = (fetcher or default_fetcher(fetch_urls, timeout)).fetch(location)
            if isinstance(fetched, FetchError):
                return [], [fetched.message]
            return load_page(fetched, location)
        if source.path is None:
            return [], [f"{location}: not found (looked in {root})"]
        outside = escape(root, source.path)  # `check` reports it too (FD060)
        if outside:
            return [], [f"{location}: not read: {outside}"]
        path = root / source.path
        if path.is_dir():
            return load_directory(path, root, location)
        if path.is_file():
            return load_file(path, display_path(path, root))
        return [], [f"{location}: not found (looked for {path})"]
    except Exception as error:  # noqa: BLE001 - last line of defence: bad input must never crash the bot
        return [], [f"could not load {location}: {error or type(error).__name__}"]


def load_sources(
    sources: list[KnowledgeSource],
    root: Path,
    fetcher: Fetcher,
    already_loaded: dict[int, tuple[list[Document], list[str]]] | None = None,
    on_progress: ProgressCallback | None = None,
    label: str = "",
) -> tuple[list[Document], list[list[str]]]:
    """All documents of `sources` in order, and each source's problems (those in `already_loaded` are not read again)."""
    already_loaded = already_loaded or {}
    documents: list[Document] = []
    per_source: list[list[str]] = []
    for position, source in enumerate(sources):
        if position in already_loaded:
            found, trouble = already_loaded[position]
        else:
            found, trouble = load_source(source, root, fetcher=fetcher)
        documents.extend(found)
        per_source.append(list(trouble))
        report(on_progress, LOAD, position + 1, len(sources), label)
    return documents, per_source
