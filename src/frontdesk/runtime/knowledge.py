"""The knowledge index of a `kb agent`: FAQ matching, BM25 passage search, and the grounded-answer prompt."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from frontdesk.ir.models import FaqEntry, KnowledgeAgent
from frontdesk.llm.base import ChatMessage, LLMRequest
from frontdesk.runtime.documents import Chunk, chunk_documents, load_source

# The exact reply the model gives when the passages do not answer the question.
NO_ANSWER = "NO_ANSWER"

# FAQ answers skip the model, so a match must be close: same content words, same negation.
DEFAULT_FAQ_THRESHOLD = 0.75

# Source name of the FAQ entries that are also searchable as passages.
FAQ_SOURCE = "faq"


@dataclass
class Passage:
    """A retrieved chunk; `score` is relative to the best passage of the same search (best = 1.0)."""

    text: str
    source: str
    score: float
    title: str = ""


# ---------------------------------------------------------------------------
# Words
# ---------------------------------------------------------------------------


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


def _stem_all(words: list[str]) -> list[str]:
    return [light_stem(w) for w in words]


_FUNCTION_WORDS = frozenset(
    """
    a an the and or but if then so than of to in on at by for with from about as into onto over
    under up out off again i me my mine myself we us our ours you your yours yourself he him his
    she her hers it its they them their theirs this that these those there here is am are was
    were be been being do does did doing done have has had having can could would should will
    shall may might must please just also very really any some ok okay hey hi hello
    """.split()
)
_QUESTION_WORDS = frozenset("what how when where why who whom whose which".split())
_NEGATION_WORDS = frozenset("not no never none nothing nobody nor without".split())
_CONTRACTION_REMNANTS = frozenset("s d m ll re ve t".split())

_FUNCTION_WEIGHT = 0.15
_QUESTION_WEIGHT = 0.5
# A question that negates what the other affirms ("I don't want to cancel") scores at most half.
_NEGATION_MISMATCH_FACTOR = 0.5


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
        score *= _NEGATION_MISMATCH_FACTOR
    return score


def _bm25_tokenize(texts: list[str]) -> list[list[str]]:
    import bm25s

    return bm25s.tokenize(
        texts, stopwords="en", stemmer=_stem_all, return_ids=False, show_progress=False
    )


# ---------------------------------------------------------------------------
# The index
# ---------------------------------------------------------------------------


class KnowledgeIndex:
    """What a `kb agent` knows: its FAQ and its document chunks, ready to match and search."""

    def __init__(
        self,
        chunks: list[Chunk],
        faq: list[FaqEntry] | None = None,
        problems: list[str] | None = None,
        faq_threshold: float = DEFAULT_FAQ_THRESHOLD,
    ) -> None:
        self.faq: list[FaqEntry] = list(faq or [])
        self.problems: list[str] = list(problems or [])
        self.faq_threshold = faq_threshold
        # FAQ entries are searchable passages too, so a reworded question still finds them.
        faq_chunks = [
            Chunk(text=f"Q: {entry.q}\nA: {entry.a}", source=FAQ_SOURCE, title=entry.q, index=i)
            for i, entry in enumerate(self.faq)
        ]
        self.chunks: list[Chunk] = list(chunks) + faq_chunks
        self._retriever = None
        self._vocabulary: set[str] = set()
        if self.chunks:
            import bm25s

            corpus_tokens = _bm25_tokenize([f"{c.title}\n{c.text}" for c in self.chunks])
            self._vocabulary = {token for tokens in corpus_tokens for token in tokens}
            if self._vocabulary:
                self._retriever = bm25s.BM25()
                self._retriever.index(corpus_tokens, show_progress=False)

    @classmethod
    def build(
        cls,
        agent: KnowledgeAgent,
        root: Path,
        fetch_urls: bool = True,
        faq_threshold: float = DEFAULT_FAQ_THRESHOLD,
        timeout: float = 5.0,
    ) -> "KnowledgeIndex":
        """Load every source of `agent` (relative to `root`), chunk it and index it; never raises for bad sources."""
        documents = []
        problems: list[str] = []
        for source in agent.sources:
            found, trouble = load_source(source, Path(root), fetch_urls=fetch_urls, timeout=timeout)
            documents.extend(found)
            problems.extend(trouble)
        return cls(chunk_documents(documents), agent.faq, problems, faq_threshold=faq_threshold)

    @property
    def is_empty(self) -> bool:
        return not self.chunks

    def match_faq(self, question: str) -> tuple[FaqEntry, float] | None:
        """The FAQ entry whose question says the same as `question`, with its score, if above the threshold."""
        best: tuple[FaqEntry, float] | None = None
        for entry in self.faq:
            score = faq_similarity(question, entry.q)
            if best is None or score > best[1]:
                best = (entry, score)
        if best is not None and best[1] >= self.faq_threshold:
            return best
        return None

    def search(self, question: str, k: int = 4) -> list[Passage]:
        """The `k` chunks ranked best by BM25; scores relative to the best; [] when no chunk shares a word."""
        if self._retriever is None or k <= 0:
            return []
        query = [t for t in _bm25_tokenize([question])[0] if t in self._vocabulary]
        if not query:
            return []
        scores = self._retriever.get_scores(query)
        ranked = sorted(
            (i for i in range(len(scores)) if scores[i] > 0), key=lambda i: (-float(scores[i]), i)
        )[:k]
        if not ranked:
            return []
        best = float(scores[ranked[0]])
        return [
            Passage(
                text=self.chunks[i].text,
                source=self.chunks[i].source,
                score=round(float(scores[i]) / best, 4),
                title=self.chunks[i].title,
            )
            for i in ranked
        ]


# ---------------------------------------------------------------------------
# The grounded-answer prompt
# ---------------------------------------------------------------------------


def _compact(text: str) -> str:
    lines = (" ".join(line.split()) for line in text.split("\n"))
    return "\n".join(line for line in lines if line)


def render_passages(passages: list[Passage]) -> str:
    """Numbered passages with their source names, as the model sees them."""
    if not passages:
        return "(no passages)"
    blocks = []
    for number, passage in enumerate(passages, start=1):
        heading = f"[{number}] source: {passage.source}"
        if passage.title and passage.title != passage.source:
            heading += f" ({passage.title})"
        blocks.append(f"{heading}\n{_compact(passage.text)}")
    return "\n\n".join(blocks)


def build_answer_request(
    question: str,
    passages: list[Passage],
    history: list[ChatMessage],
    agent: KnowledgeAgent,
    history_limit: int = 6,
) -> LLMRequest:
    """The `kb_answer` request: answer `question` only from `passages`, or reply exactly NO_ANSWER."""
    about = f" {agent.description.strip()}" if agent.description.strip() else ""
    system = (
        f'You are the knowledge-base assistant "{agent.name}".{about}\n'
        "Answer the user's latest question using ONLY the numbered passages below. "
        "Do not use any other knowledge, do not guess, and cite nothing that is not in the passages. "
        f"If the passages do not contain the answer, reply with exactly {NO_ANSWER} and nothing else.\n"
        "Answer briefly and directly, in the language of the question, as a customer-service reply. "
        "Do not mention the passages or their numbers; name a source only if the user asks where "
        "the information comes from.\n\n"
        f"Passages:\n{render_passages(passages)}"
    )
    earlier = [
        ChatMessage(role=m.role, content=m.content)
        for m in history
        if m.role in ("user", "assistant") and m.content and m.content.strip()
    ]
    if earlier and earlier[-1].role == "user" and earlier[-1].content.strip() == question.strip():
        earlier.pop()  # the caller already put the question into the history
    earlier = earlier[-history_limit:] if history_limit > 0 else []
    messages = [ChatMessage(role="system", content=system), *earlier, ChatMessage(role="user", content=question)]
    return LLMRequest(purpose="kb_answer", messages=messages, temperature=0.0)


def is_no_answer(reply: str | None) -> bool:
    """True when a model reply is (or contains) the NO_ANSWER sentinel, or is empty."""
    if reply is None or not reply.strip():
        return True
    return re.search(r"\bNO[_ ]ANSWER\b", reply) is not None
