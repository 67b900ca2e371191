"""Text for display: cut to a length, with a mark where it was cut. Imports nothing of Frontdesk."""

from __future__ import annotations

ERROR_DETAIL_LIMIT = 200  # characters of a reply or an exception an error message quotes


def cut(text: str, limit: int, mark: str = "…") -> str:
    """`text` as it is when it fits in `limit` characters; else its start and `mark`, `limit` in all."""
    return text if len(text) <= limit else text[: limit - len(mark)] + mark


def clip(text: str, limit: int, mark: str = "…") -> str:
    """`text` on one line (each run of white space, line breaks included, one space), cut to `limit`."""
    return cut(" ".join(text.split()), limit, mark)


def error_text(text: str, limit: int = ERROR_DETAIL_LIMIT) -> str:
    """Text an error message quotes (a model's reply, a server's answer): on one line, cut with "..."."""
    return clip(text, limit, "...")


def error_detail(exc: BaseException, limit: int = ERROR_DETAIL_LIMIT) -> str:
    """An exception's message (or its type's name when it has none), as `error_text` quotes it."""
    return error_text(str(exc) or type(exc).__name__, limit)
