"""Tests for the knowledge index (FAQ matching, BM25 search) and the grounded-answer prompt."""

from __future__ import annotations

from pathlib import Path

import pytest

from frontdesk.ir.models import FaqEntry, KnowledgeAgent, KnowledgeSource
from frontdesk.llm.base import ChatMessage, ToolCall
from frontdesk.runtime.prompts import NO_ANSWER, build_answer_request, is_no_answer
from frontdesk.runtime.retrieval.documents import Chunk
from frontdesk.runtime.retrieval.index import KnowledgeIndex, Passage
from frontdesk.runtime.retrieval.lexical import faq_similarity, light_stem

# the shared folder beside the repository (../shared), or where the workplace keeps it
SHARED = next((p for p in (Path(__file__).resolve().parents[2] / "shared", Path("/work/shared")) if p.is_dir()),
              Path("/work/shared"))

STORE_FAQ = [
    FaqEntry(q="Thanks, bye", a="Looking forward to serving you again!"),
    FaqEntry(q="What is the return policy?", a="Books can be returned within 30 days."),
    FaqEntry(q="What is the shipping policy?", a="Shipping is free above 20 EUR."),
]


def chunk(text: str, source: str, title: str = "") -> Chunk:
    return Chunk(text=text, source=source, title=title or source, index=0)


@pytest.fixture
def store_index() -> KnowledgeIndex:
    chunks = [
        chunk("Our shop opens at 9 and closes at 18 from Monday to Saturday.", "hours.txt", "opening hours"),
        chunk("A lost or stolen card must be blocked at once in the app or by phone.", "cards.txt", "cards"),
        chunk("Gift vouchers are valid for three years and can be used online.", "vouchers.txt", "vouchers"),
        chunk("Transfers between your own accounts are instant and free.", "transfers.txt", "transfers"),
    ]
    return KnowledgeIndex(chunks, STORE_FAQ)


# ---------------------------------------------------------------------------
# FAQ matching
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("question", ["thanks bye!", "bye, thanks", "Thanks, bye", "THANKS... BYE", "thank you, bye"])
def test_faq_goodbye_variants_match_with_a_high_score(store_index: KnowledgeIndex, question: str) -> None:
    match = store_index.match_faq(question)
    assert match is not None
    entry, score = match
    assert entry.q == "Thanks, bye"
    assert score >= 0.9


def test_faq_prefers_the_return_policy_over_the_shipping_policy(store_index: KnowledgeIndex) -> None:
    match = store_index.match_faq("what is your return policy")
    assert match is not None and match[0].q == "What is the return policy?"
    assert faq_similarity("what is your return policy", "What is the shipping policy?") < store_index.faq_threshold


@pytest.mark.parametrize(
    "question",
    ["Do you sell gift cards?", "I lost my card", "how do I return a book?", "bye", "", "?!"],
)
def test_faq_unrelated_or_partial_questions_do_not_match(store_index: KnowledgeIndex, question: str) -> None:
    assert store_index.match_faq(question) is None


def test_faq_negation_breaks_a_match() -> None:
    index = KnowledgeIndex([], [FaqEntry(q="I want to cancel my order", a="Done.")])
    assert index.match_faq("i want to cancel my order!") is not None
    assert index.match_faq("I don't want to cancel my order") is None


def test_faq_threshold_is_configurable() -> None:
    strict = KnowledgeIndex([], STORE_FAQ, faq_threshold=1.0)
    assert strict.match_faq("what is your return policy") is None
    assert strict.match_faq("bye thanks") is not None
    loose = KnowledgeIndex([], STORE_FAQ, faq_threshold=0.5)
    assert loose.match_faq("how do I return a book? what is the policy")[0].q == "What is the return policy?"


def test_faq_scores_are_between_zero_and_one() -> None:
    for left, right in [("a b c", "c b a"), ("the the the", "the"), ("x", "y"), ("", "x")]:
        assert 0.0 <= faq_similarity(left, right) <= 1.0
    assert faq_similarity("Where are you?", "where are you") == 1.0


def test_light_stem_folds_plurals_only() -> None:
    assert [light_stem(w) for w in ["cards", "policies", "thanks", "address", "status", "card", "bus"]] == [
        "card", "policy", "thank", "address", "status", "card", "bus",
    ]  # fmt: skip


# ---------------------------------------------------------------------------
# Search
# ---------------------------------------------------------------------------


def test_search_ranks_the_relevant_chunk_first(store_index: KnowledgeIndex) -> None:
    passages = store_index.search("What should I do with a stolen card?")
    assert passages[0].source == "cards.txt"
    assert passages[0].score == 1.0
    assert all(0.0 < p.score <= 1.0 for p in passages)
    assert [p.score for p in passages] == sorted((p.score for p in passages), reverse=True)


def test_search_uses_titles_and_plurals(store_index: KnowledgeIndex) -> None:
    assert store_index.search("opening hours")[0].source == "hours.txt"
    assert store_index.search("voucher")[0].source == "vouchers.txt"


def test_search_returns_nothing_when_no_term_is_shared(store_index: KnowledgeIndex) -> None:
    assert store_index.search("xylophone quantum") == []
    assert store_index.search("the and of") == []  # stopwords only
    assert store_index.search("") == []


def test_search_respects_k(store_index: KnowledgeIndex) -> None:
    assert len(store_index.search("card shop vouchers transfers policy", k=2)) == 2
    assert store_index.search("card", k=0) == []


def test_faq_entries_are_searchable_passages(store_index: KnowledgeIndex) -> None:
    passages = store_index.search("how long can books be returned")
    assert passages[0].source == "faq"
    assert "returned within 30 days" in passages[0].text


def test_empty_index_searches_and_matches_nothing() -> None:
    index = KnowledgeIndex([], [])
    assert index.is_empty
    assert index.search("anything") == []
    assert index.match_faq("anything") is None


def test_build_loads_sources_and_collects_problems(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "returns.md").write_text("# Returns\n\nReturn unread books within 30 days for a refund.")
    agent = KnowledgeAgent(
        name="store_policy_kb",
        sources=[
            KnowledgeSource(location="docs", kind="directory", path="docs"),
            KnowledgeSource(location="return_policy.pdf", kind="file"),
            KnowledgeSource(location="www.bookstore.com/help-center", kind="url"),
        ],
        faq=STORE_FAQ,
    )
    index = KnowledgeIndex.build(agent, tmp_path, fetch_urls=False)
    assert len(index.problems) == 2
    assert index.problems[0].startswith("return_policy.pdf: not found")
    assert "did not fetch www.bookstore.com/help-center" in index.problems[1]
    assert index.faq == STORE_FAQ
    assert index.search("refund")[0].source == "docs/returns.md"


def test_build_is_quick_for_hundreds_of_chunks(tmp_path: Path) -> None:
    (tmp_path / "many").mkdir()
    for i in range(300):
        (tmp_path / "many" / f"topic_{i:03}.txt").write_text(f"Topic {i} covers subject{i} and general banking help.")
    agent = KnowledgeAgent(name="kb", sources=[KnowledgeSource(location="many", kind="directory", path="many")])
    index = KnowledgeIndex.build(agent, tmp_path)
    assert len(index.chunks) == 300
    assert index.search("subject123")[0].text.startswith("Topic 123 ")


REAL_BANKING_DOCS = SHARED / "conformance/mica/retail_banking"


@pytest.mark.skipif(not (REAL_BANKING_DOCS / "docs").is_dir(), reason="conformance folder not present")
def test_real_banking_docs_answer_a_lost_card_question() -> None:
    agent = KnowledgeAgent(name="kb", sources=[KnowledgeSource(location="docs", kind="directory", path="docs")])
    index = KnowledgeIndex.build(agent, REAL_BANKING_DOCS)
    assert index.problems == []
    passages = index.search("I lost my card, what should I do?")
    assert passages
    assert "lost" in passages[0].source and "card" in passages[0].source
    assert "Block your card" in passages[0].text


# ---------------------------------------------------------------------------
# The grounded-answer prompt
# ---------------------------------------------------------------------------


def test_answer_request_is_grounded_in_numbered_passages() -> None:
    agent = KnowledgeAgent(name="store_policy_kb", description="I answer questions about the store's policy.")
    passages = [
        Passage(text="Books can be returned\n\n   within 30 days.", source="return_policy.pdf", score=1.0),
        Passage(text="Shipping is free above 20 EUR.", source="https://www.bookstore.com/help", score=0.4),
    ]
    request = build_answer_request("Can I return a book?", passages, [], agent)
    assert request.purpose == "kb_answer"
    assert request.temperature == 0.0
    assert [m.role for m in request.messages] == ["system", "user"]
    system = request.messages[0].content
    assert "ONLY the numbered passages" in system
    assert f"reply with exactly {NO_ANSWER}" in system
    assert "store_policy_kb" in system and "store's policy" in system
    assert "[1] source: return_policy.pdf\nBooks can be returned\nwithin 30 days." in system
    assert "[2] source: https://www.bookstore.com/help\nShipping is free above 20 EUR." in system
    assert request.messages[-1].content == "Can I return a book?"


def test_answer_request_keeps_the_last_few_history_messages() -> None:
    agent = KnowledgeAgent(name="kb")
    history = [ChatMessage(role="user", content=f"message {i}") for i in range(10)]
    history += [
        ChatMessage(role="assistant", content=None, tool_calls=[ToolCall(name="lookup")]),
        ChatMessage(role="tool", content="tool output", tool_call_id="1"),
        ChatMessage(role="system", content="internal"),
        ChatMessage(role="assistant", content="How can I help?"),
        ChatMessage(role="user", content="Where is my parcel?"),  # the question itself, already recorded
    ]
    request = build_answer_request("Where is my parcel?", [], history, agent, history_limit=3)
    contents = [m.content for m in request.messages[1:]]
    assert contents == ["message 8", "message 9", "How can I help?", "Where is my parcel?"]
    assert "(no passages)" in request.messages[0].content
    assert all(m.role in ("user", "assistant") for m in request.messages[1:])


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("NO_ANSWER", True),
        ("  NO_ANSWER.\n", True),
        ("`NO_ANSWER`", True),
        ("", True),
        (None, True),
        ("Books can be returned within 30 days.", False),
        ("There is no answer fee.", False),
    ],
)
def test_is_no_answer(reply: str | None, expected: bool) -> None:
    assert is_no_answer(reply) is expected


# ---------------------------------------------------------------------------------------------
# BM25 words: bm25s's English stop words and the Snowball stemmer, the same for passages and questions
# ---------------------------------------------------------------------------------------------

BOOKSTORE = Path(__file__).resolve().parent.parent / "examples" / "bookstore"


def test_question_words_are_stop_words_and_word_forms_share_a_stem() -> None:
    from frontdesk.nlu.terms import bm25_tokenize as _bm25_tokenize

    assert _bm25_tokenize(["How long does shipping usually take?"]) == [["long", "ship", "usual", "take"]]
    shipped, ships = _bm25_tokenize(["Books are shipped", "Pageturn ships books"])
    assert "ship" in shipped and "ship" in ships
    assert "doe" not in _bm25_tokenize(["Why does it fail?"])[0]


def test_keyword_search_finds_the_delivery_times_table_for_a_shipping_time_question() -> None:
    agent = KnowledgeAgent(name="store_policy_kb",
                           sources=[KnowledgeSource(location="policies", kind="directory", path="policies")])
    index = KnowledgeIndex.build(agent, BOOKSTORE)
    assert not index.uses_embeddings
    best = index.search("how long does shipping usually take?")[0]
    assert best.source == "policies/shipping.md"
    assert "Delivery time (business days)" in best.text and "| Standard | 4 to 7 | $4.99 |" in best.text
    free = index.search("Is standard shipping free for orders over $35?")[0]
    assert "Standard shipping is free on orders of $35 or more" in free.text


def test_markdown_tables_lose_their_padding_so_a_section_stays_in_one_chunk(tmp_path: Path) -> None:
    (tmp_path / "fees.md").write_text(
        "# Fees\n\n| Option        | Fee      |\n|:--------------|---------:|\n| Standard      | $4.99    |\n",
        encoding="utf-8")
    agent = KnowledgeAgent(name="kb", sources=[KnowledgeSource(location="fees.md", kind="file", path="fees.md")])
    index = KnowledgeIndex.build(agent, tmp_path)
    assert index.chunks[0].text == "# Fees\n\n| Option | Fee |\n|---|---|\n| Standard | $4.99 |"


def test_an_extractive_answer_reads_table_rows_list_lead_ins_and_never_answers_with_a_question() -> None:
    from frontdesk.runtime.answering import extractive_answer

    shipping = Passage(text=(
        "## Options and fees\n| Option | Delivery time (business days) | Fee |\n|---|---|---|\n"
        "| Standard | 4 to 7 | $4.99 |\n| Next day | 1 | $19.99 |\n"), source="shipping.md", score=1.0)
    answer = extractive_answer("How many business days does standard delivery take?", [shipping])
    assert "Option: Standard; Delivery time (business days): 4 to 7; Fee: $4.99." in answer
    payees = Passage(text=(
        "What do I need to add a payee?\n- The payee's name\n- Their 8-digit account number\n\n"
        "How many payees can I have?\nUp to 100 payees per customer."), source="payees.txt", score=1.0)
    answer = extractive_answer("What do I need to add a payee?", [payees])
    assert "Their 8-digit account number" in answer and "?" not in answer
    members = Passage(text="Members get:\n- 10% off every full-price book\n- free standard shipping",
                      source="membership.md", score=1.0)
    assert extractive_answer("Do members get 10% off?", [members]).startswith("Members get: 10% off every")
