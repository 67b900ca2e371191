"""Parts of a line of ABL: its characters outside quotes and brackets, and its comma-separated items.
Plain text functions, below everything else of the front end."""

from __future__ import annotations


def top_level(text: str):
    """(position, character) of each character of `text` outside quotes and brackets (the brackets
    themselves and the quotes are not given)."""
    depth, quote = 0, ""
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0:
            yield i, ch


def split_top(text: str, sep: str = ",") -> list[tuple[str, int]]:
    """The parts of `text` between `sep` characters outside quotes and brackets, each stripped and
    with the offset where it starts; empty parts are left out."""
    parts: list[tuple[str, int]] = []
    start = 0
    for i, ch in top_level(text):
        if ch == sep:
            parts.append((text[start:i], start))
            start = i + 1
    parts.append((text[start:], start))
    out = []
    for part, at in parts:
        stripped = part.strip()
        if stripped:
            out.append((stripped, at + len(part) - len(part.lstrip())))
    return out


def split_list(text: str) -> list[str]:
    """The items of a comma list (`a, f(b, c), "d, e"`): the parts of split_top without offsets."""
    return [part for part, _ in split_top(text)]
