"""Embedding understanding: pick the option whose example phrases are nearest to the message.

An option's score is the cosine similarity between the message and the option's examples,
aggregated as the best example's similarity blended with the mean of the top few (one lucky
example counts for less than several close ones). The thresholds then tell a sure decision
from one an LLM should confirm; the defaults per task were calibrated on the labelled
messages of bench/understanding/ (see its README).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from functools import lru_cache

import numpy as np

from frontdesk.nlu.base import Decision, Option, Task, Thresholds
from frontdesk.nlu.embeddings import Embedder, get_default_embedder
from frontdesk.nlu.terms import bm25_tokenize  # one tokenizer for every keyword match

# Calibrated with `python bench/accuracy.py --threshold-sweep` (bench/understanding/README.md).
DEFAULT_THRESHOLDS: dict[Task, Thresholds] = {
    "route": Thresholds(accept=0.35, margin=0.12, reject=0.20),
    "claims": Thresholds(accept=0.40, margin=0.10, reject=0.20),
}

# Routing adds a keyword score to the embedding score: the share of the message's content words
# (stop words dropped, stemmed, weighted by how few options use them) that an option's examples
# hold. "recommend" is in one agent's phrases only, where sentence embeddings blur "recommend a
# book" and "order a book". 0 turns it off.
LEXICAL_WEIGHT: dict[Task, float] = {"route": 0.2, "claims": 0.0}

TOP_K = 3  # examples averaged with the best one
BEST_WEIGHT = 0.75  # weight of the best example's similarity in an option's score
# Sentence embeddings hardly tell "yes" from "no": the similarity of an example whose yes/no
# polarity contradicts the message's is multiplied by this.
POLARITY_PENALTY = 0.5

_AFFIRMATIVE = {"yes", "yeah", "yep", "yup", "yea", "yeh", "ya", "yah", "aye", "sure", "ok", "okay",
                "absolutely", "definitely", "certainly", "correct", "affirmative", "indeed", "confirm", "confirmed"}
_NEGATIVE_START = {"no", "nope", "nah", "naw", "never", "nothing", "not", "negative"}
_NEGATION = {"no", "not", "never", "nothing", "nope", "nah", "dont", "don't", "cant", "can't", "won't",
             "wont", "didn't", "didnt", "doesn't", "doesnt", "isn't", "isnt", "aren't", "wasn't"}
_ACKNOWLEDGEMENT = {"ok", "okay", "alright", "right", "fine", "great", "cool"}
_FILLER = {"actually", "well", "oh", "um", "umm", "uh", "hmm", "ah", "erm", "so", "and", "but", "then"}
_AFFIRMATIVE_PHRASE = re.compile(r"^(that'?s|that is|it'?s|it is) (right|correct|fine|true|ok|okay)\b"
                                 r"|^of course\b|^go ahead\b|^please do\b")


@lru_cache(maxsize=4096)
def polarity(text: str) -> int:
    """+1 for an affirmative answer ("yes", "sure, go ahead"), -1 for a negative one ("no thanks",
    "I don't need one"), 0 otherwise. English only; deliberately simple."""
    lowered = text.lower().replace("\u2019", "'")
    words = re.findall(r"[a-z']+", lowered)
    while words and words[0] in _FILLER and len(words) > 1:  # "actually yes", "oh no"
        words = words[1:]
    if not words:
        return 0
    if words[0] in _ACKNOWLEDGEMENT and len(words) > 1 and words[1] in _NEGATIVE_START:
        return -1  # "OK, no thanks, that's the lot": the no is the answer, the OK only hears the question
    if words[0] in _NEGATIVE_START:
        return -1
    if words[0] in _AFFIRMATIVE or _AFFIRMATIVE_PHRASE.match(" ".join(words)):
        return 1
    if any(w in _NEGATION or w.endswith("n't") for w in words):
        return -1
    return 0


def option_score(similarities: np.ndarray, top_k: int = TOP_K, best_weight: float = BEST_WEIGHT) -> float:
    """One option's score from the similarities of its examples to the message, in 0..1."""
    if similarities.size == 0:
        return 0.0
    ranked = np.sort(similarities)[::-1]
    best = float(ranked[0])
    top_mean = float(ranked[:top_k].mean())
    return min(1.0, max(0.0, best_weight * best + (1.0 - best_weight) * top_mean))


class EmbeddingUnderstanding:
    """Decides between phrased options with sentence embeddings; no LLM is involved.

    `embedder` defaults to the shared local model (get_default_embedder), resolved on the first
    decision. `thresholds` overrides the per-task defaults for every task; a `thresholds`
    argument to `decide` overrides both.
    """

    name = "embedding"

    def __init__(self, embedder: Embedder | None = None, thresholds: Thresholds | None = None,
                 *, top_k: int = TOP_K, best_weight: float = BEST_WEIGHT,
                 polarity_penalty: float = POLARITY_PENALTY,
                 lexical_weight: dict[Task, float] | None = None):
        self._embedder = embedder
        self.thresholds = thresholds
        self.top_k = top_k
        self.best_weight = best_weight
        self.polarity_penalty = polarity_penalty
        self.lexical_weight = dict(LEXICAL_WEIGHT if lexical_weight is None else lexical_weight)

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = get_default_embedder()
        return self._embedder

    def thresholds_for(self, task: Task) -> Thresholds:
        if self.thresholds is not None:
            return self.thresholds
        return DEFAULT_THRESHOLDS.get(task, Thresholds())

    def scores(self, message: str, options: list[Option]) -> dict[str, float]:
        """Every option's score for the message (options with no examples score 0)."""
        examples = [e for option in options for e in option.examples]
        vectors = self.embedder.encode([message, *examples])
        similarities = vectors[1:] @ vectors[0]
        similarities = similarities * np.array([w for option in options for w in option.weight_list()])
        stance = polarity(message)
        if stance and self.polarity_penalty != 1.0:
            contradicts = np.array([polarity(e) == -stance for e in examples], dtype=bool)
            similarities = np.where(contradicts, similarities * self.polarity_penalty, similarities)
        result: dict[str, float] = {}
        start = 0
        for option in options:
            count = len(option.examples)
            score = option_score(similarities[start:start + count], self.top_k, self.best_weight)
            result[option.key] = max(score, result.get(option.key, 0.0))
            start += count
        return result

    def decide(self, message: str, options: list[Option], task: Task,
               thresholds: Thresholds | None = None) -> Decision:
        limits = thresholds or self.thresholds_for(task)
        if not options or not message.strip():
            # nothing to choose from, or nothing said: surely none of the options
            return Decision(choice=None, score=0.0, margin=0.0, sure=True,
                            scores={option.key: 0.0 for option in options}, best=None,
                            decided_by=self.name)
        scores = self.scores(message, options)
        weight = self.lexical_weight.get(task, 0.0)
        if weight:
            lexical = keyword_scores(message, options)
            scores = {key: min(1.0, (1.0 - weight) * value + weight * lexical.get(key, 0.0))
                      for key, value in scores.items()}
        return decision_from_scores(scores, limits, self.name)


def _terms(text: str) -> list[str]:
    """Content words, stemmed; yes/no words say nothing about which task is meant."""
    return [t for t in bm25_tokenize([text])[0] if t not in _POLAR_TERMS]


_POLAR_TERMS = frozenset(_AFFIRMATIVE | _NEGATIVE_START | _NEGATION | {"please", "thank", "thanks", "right"})


_TERMS_KEPT = 16384  # options whose words are remembered (a router of 1,000 members has 1,000)
_option_vocabularies: OrderedDict[tuple[str, ...], frozenset[str]] = OrderedDict()
_vocabulary_lock = threading.Lock()


def _option_terms(examples: tuple[str, ...]) -> frozenset[str]:
    return _vocabularies([examples])[0]


def _vocabularies(example_sets: list[tuple[str, ...]]) -> list[frozenset[str]]:
    """The content words of each option's examples, tokenized in one call for all the options not seen
    before (a tokenizer call has a fixed cost: 1,000 calls take most of a second, one call a few ms)."""
    with _vocabulary_lock:
        missing = list(dict.fromkeys(e for e in example_sets if e not in _option_vocabularies))
    found: dict[tuple[str, ...], frozenset[str]] = {}
    if missing:
        flat = [text for examples in missing for text in examples]
        terms = bm25_tokenize(flat) if flat else []
        at = 0
        for examples in missing:
            found[examples] = frozenset(t for words in terms[at:at + len(examples)] for t in words
                                        if t not in _POLAR_TERMS)
            at += len(examples)
        with _vocabulary_lock:
            _option_vocabularies.update(found)
            while len(_option_vocabularies) > _TERMS_KEPT:
                _option_vocabularies.popitem(last=False)
    with _vocabulary_lock:
        return [found[e] if e in found else _option_vocabularies[e] for e in example_sets]


def keyword_scores(message: str, options: list[Option]) -> dict[str, float]:
    """Each option's share (0..1) of the message's content words that its examples also use, a word
    counting the more the fewer options use it (a word every option uses counts nothing)."""
    vocabularies = dict(zip([option.key for option in options],
                            _vocabularies([option.keyword_examples or option.examples for option in options])))
    words = set(_terms(message))
    count = len(vocabularies)
    weight = {}
    for word in words:
        used_by = sum(word in vocabulary for vocabulary in vocabularies.values())
        if used_by:
            weight[word] = float(np.log((count + 1) / used_by))
    total = sum(weight.values())
    if total <= 0:
        return {key: 0.0 for key in vocabularies}
    return {key: sum(w for word, w in weight.items() if word in vocabulary) / total
            for key, vocabulary in vocabularies.items()}


def first_term_positions(message: str, options: list[Option]) -> dict[str, int]:
    """Per option, where in the message (in content words) the first word its examples use stands."""
    words = _terms(message)
    out: dict[str, int] = {}
    for option in options:
        vocabulary = _option_terms(option.keyword_examples or option.examples)
        at = next((i for i, word in enumerate(words) if word in vocabulary), None)
        if at is not None:
            out[option.key] = at
    return out


def decision_from_scores(scores: dict[str, float], thresholds: Thresholds,
                         decided_by: str = "embedding") -> Decision:
    """Apply the thresholds to the options' scores.

    best < reject: a sure "none"; best >= accept and a margin over the runner-up >= margin: a sure
    choice of the best; otherwise unsure, with the best option as the choice (an LLM may overrule).
    """
    if not scores:
        return Decision(choice=None, score=0.0, margin=0.0, sure=True, scores={}, best=None,
                        decided_by=decided_by)
    ranked = sorted(scores.items(), key=lambda item: item[1], reverse=True)
    best_key, best = ranked[0]
    runner_up = ranked[1][1] if len(ranked) > 1 else 0.0
    margin = best - runner_up
    if best < thresholds.reject:
        choice, sure = None, True
    elif best >= thresholds.accept and margin >= thresholds.margin:
        choice, sure = best_key, True
    else:
        choice, sure = best_key, False
    return Decision(choice=choice, score=best, margin=margin, sure=sure, scores=dict(scores),
                    best=best_key, decided_by=decided_by)
