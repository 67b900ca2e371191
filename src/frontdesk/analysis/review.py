"""`frontdesk check --llm`: ask a language model the ADL paper's review question (its Appendix D.3) about a
program's source, to show beside the deterministic findings. The answer is advice; the findings of
`frontdesk.analysis.lint` are what the check's exit status follows."""

from __future__ import annotations

from pathlib import Path

from frontdesk.ir.models import Program
from frontdesk.llm.base import ChatMessage, LLMRequest

REVIEW_QUESTION = ('Is there any infinite loop in the logic of this chatbot? If so, please point it out. '
                   'Otherwise, simply reply "No."')
MAX_SOURCE_CHARS = 60_000  # what is sent of the program's files, at most


def program_text(program: Program) -> str:
    """The program's own source files (not its knowledge documents), each under a `# file:` line."""
    root = Path(program.root or ".")
    parts: list[str] = []
    for relative in program.sources:
        path = root / relative
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        parts.append(f"# file: {relative}\n{text.rstrip()}\n")
    text = "\n".join(parts)
    if len(text) > MAX_SOURCE_CHARS:
        text = text[:MAX_SOURCE_CHARS] + "\n# (the rest of the program is left out: it is too long)\n"
    return text


def review_request(program: Program) -> LLMRequest:
    return LLMRequest(purpose="other", plan="Review", temperature=0.0,
                      messages=[ChatMessage(role="user", content=f"{program_text(program)}\n{REVIEW_QUESTION}")])


def ask_review(llm, program: Program) -> str:
    """The model's answer, in words (an empty answer is said to be empty)."""
    response = llm.complete(review_request(program))
    text = (response.content or "").strip()
    return text or "(the model gave an empty answer)"
