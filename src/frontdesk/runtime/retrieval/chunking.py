"""Cutting documents into chunks: paragraphs kept whole, long ones split by sentence, then by word."""

from __future__ import annotations

import re

from frontdesk.runtime.retrieval.documents import Chunk, Document

# The defaults of `chunk_documents` (an index cache is keyed by the values used).
DEFAULT_CHUNK_CHARS = 800
DEFAULT_CHUNK_OVERLAP = 100

_HEADING_LINE = re.compile(r"^\s{0,3}#{1,6}\s+\S")
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"')\]]*\s+")


def _split_paragraphs(text: str) -> list[str]:
    """Blank-line separated blocks; a Markdown heading line always starts a new block."""
    blocks: list[str] = []
    current: list[str] = []
    for line in text.split("\n"):
        if not line.strip():
            if current:
                blocks.append("\n".join(current))
                current = []
            continue
        if _HEADING_LINE.match(line) and current:
            blocks.append("\n".join(current))
            current = []
        current.append(line)
    if current:
        blocks.append("\n".join(current))
    return blocks


def _split_words(text: str, max_chars: int) -> list[str]:
    pieces: list[str] = []
    current = ""
    for word in text.split():
        while len(word) > max_chars:  # a single "word" longer than a chunk: the only hard cut
            if current:
                pieces.append(current)
                current = ""
            pieces.append(word[:max_chars])
            word = word[max_chars:]
        if not current:
            current = word
        elif len(current) + 1 + len(word) <= max_chars:
            current += " " + word
        else:
            pieces.append(current)
            current = word
    if current:
        pieces.append(current)
    return pieces


def _split_sentences(text: str) -> list[str]:
    sentences = []
    for line in text.split("\n"):
        for sentence in _SENTENCE_END.split(line.strip()):
            if sentence.strip():
                sentences.append(sentence.strip())
    return sentences


def _units(paragraph: str, max_chars: int) -> list[str]:
    """Pieces of a paragraph no longer than `max_chars`: the paragraph, else sentences, else words."""
    if len(paragraph) <= max_chars:
        return [paragraph]
    units: list[str] = []
    for sentence in _split_sentences(paragraph):
        if len(sentence) <= max_chars:
            units.append(sentence)
        else:
            units.extend(_split_words(sentence, max_chars))
    return units


def _tail(text: str, overlap: int) -> str:
    """The end of `text`, at most `overlap` characters, starting at a sentence or word boundary."""
    if overlap <= 0 or not text:
        return ""
    if len(text) <= overlap:
        return text
    window = text[-overlap:]
    sentence_start = re.search(r"[.!?]\s+(\S)", window)
    if sentence_start:
        return window[sentence_start.start(1):].strip()
    space = re.search(r"\s", window)
    if space is None:
        return ""
    return window[space.end():].strip()


def chunk_documents(
    docs: list[Document], max_chars: int = DEFAULT_CHUNK_CHARS, overlap: int = DEFAULT_CHUNK_OVERLAP
) -> list[Chunk]:
    """Cut documents into chunks of at most `max_chars` characters.

    Paragraphs (blank lines, Markdown headings) are kept whole and small ones packed together;
    longer ones split by sentence, then by word. A chunk that continues the previous one's text
    starts with up to `overlap` characters of it. Words are never cut unless one alone exceeds
    `max_chars`.
    """
    if max_chars < 20:
        raise ValueError("max_chars must be at least 20")
    overlap = max(0, min(overlap, max_chars // 2))
    chunks: list[Chunk] = []
    for doc in docs:
        pieces: list[str] = []
        current = ""
        current_is_heading_only = False
        for paragraph in _split_paragraphs(doc.text):
            is_heading = bool(_HEADING_LINE.match(paragraph)) and "\n" not in paragraph
            starts_section = bool(_HEADING_LINE.match(paragraph))
            units = _units(paragraph, max_chars)
            for position, unit in enumerate(units):
                separator = "\n\n" if position == 0 else " "
                if position == 0 and starts_section and current and not current_is_heading_only:
                    pieces.append(current)  # a new section starts a new chunk, without overlap
                    current = ""
                if not current:
                    current = unit
                elif len(current) + len(separator) + len(unit) <= max_chars:
                    current += separator + unit
                else:
                    pieces.append(current)
                    carried = _tail(current, overlap)
                    if carried and len(carried) + len(separator) + len(unit) <= max_chars:
                        current = carried + separator + unit
                    else:
                        current = unit
                current_is_heading_only = is_heading and current == unit
        if current:
            pieces.append(current)
        for index, piece in enumerate(pieces):
            chunks.append(Chunk(text=piece, source=doc.source, title=doc.title, index=index))
    return chunks
