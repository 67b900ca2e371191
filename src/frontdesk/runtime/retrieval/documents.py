"""The texts retrieval works on: a loaded `Document` and the `Chunk`s it is cut into."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Document:
    """The text of one file or web page; `source` is the path (relative to the root) or the URL."""

    text: str
    source: str
    title: str


@dataclass
class Chunk:
    """A piece of a document small enough to retrieve and show to a model; `index` counts within the document."""

    text: str
    source: str
    title: str
    index: int
