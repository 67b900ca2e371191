"""Words for retrieval: light stemming and FAQ question similarity by weighted word overlap (BM25 terms
are `frontdesk.nlu.terms`, shared with the matcher's keyword scores)."""

from __future__ import annotations

import re
import unicodedata


def light_stem(word: str) -> str:
    """Fold English plurals (cards -> card, policies -> policy, thanks -> thank); nothing more aggressive."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes", "zzes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is", "ous")):
        return word[:-1]
    return word


_FUNCTION_WORDS = frozenset(
    ["a", "an", "the", "and", "or", "but", "if", "then", "so", "than", "of", "to", "in", "on", "at", "by", "for", "with", "from", "about", "as", "into", "onto", "over", "under", "up", "out", "off", "again", "i", "me", "my", "mine", "myself", "we", "us", "our", "ours", "you", "your", "yours", "yourself", "he", "him", "his", "she", "her", "hers", "it", "its", "they", "them", "their", "theirs", "this", "that", "these", "those", "there", "here", "is", "am", "are", "was", "were", "be", "been", "being", "do", "does", "did", "doing", "done", "have", "has", "had", "having", "can", "could", "would", "should", "will", "shall", "may", "might", "must", "please", "just", "also", "very", "really", "any", "some", "ok", "okay", "hey", "hi", "hello"]
)
_QUESTION_WORDS = frozenset(["what", "how", "when", "where", "why", "who", "whom", "whose", "which"])
_NEGATION_WORDS = frozenset(["not", "no", "never", "none", "nothing", "nobody", "nor", "without"])
_CONTRACTION_REMNANTS = frozenset(["s", "d", "m", "ll", "re", "ve", "t"])

_FUNCTION_WEIGHT = 0.15
_QUESTION_WEIGHT = 0.5
# A question that negates what the other affirms ("I don't want to cancel") scores at most half.
NEGATION_MISMATCH_FACTOR = 0.5


def _normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("`", "'")
    text = re.sub(r"\bcan't\b|\bcannot\b", "can not", text)
    text = re.sub(r"\bwon't\b", "will not", text)
    text = re.sub(r"n't\b", " not", text)
    return text


def _faq_words(text: str) -> dict[str, float]:
    """Distinct words of a question with their weight in the overlap score."""
    weights: dict[str, float] = {}
    for raw in re.findall(r"[^\W_]+", _normalise(text)):
        if raw in _CONTRACTION_REMNANTS:
            continue
        word = light_stem(raw)
        if raw in _FUNCTION_WORDS or word in _FUNCTION_WORDS:
            weight = _FUNCTION_WEIGHT
        elif raw in _QUESTION_WORDS:
            weight = _QUESTION_WEIGHT
        else:
            weight = 1.0
        weights[word] = weight
    return weights


def faq_similarity(question: str, faq_question: str) -> float:
    """Weighted word overlap (Dice) of two questions in 0..1, ignoring case, punctuation and word order."""
    left = _faq_words(question)
    right = _faq_words(faq_question)
    if not left or not right:
        return 0.0
    shared = sum(weight for word, weight in left.items() if word in right)
    score = 2.0 * shared / (sum(left.values()) + sum(right.values()))
    if _NEGATION_WORDS.isdisjoint(left) != _NEGATION_WORDS.isdisjoint(right):
        score *= NEGATION_MISMATCH_FACTOR
    return score


def negation_mismatch(question: str, other: str) -> bool:
    """True when one of the two negates ("I don't want to cancel") and the other does not."""
    return _NEGATION_WORDS.isdisjoint(_faq_words(question)) != _NEGATION_WORDS.isdisjoint(_faq_words(other))
