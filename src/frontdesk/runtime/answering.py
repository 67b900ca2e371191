"""The knowledge executor: FAQ answers verbatim, otherwise retrieval plus a grounded answer."""

from __future__ import annotations

import itertools
import re
import threading
from pathlib import Path

from frontdesk.ir.models import KnowledgeAgent, Program
from frontdesk.llm.base import LLMError
from frontdesk.nlu.terms import bm25_tokenize
from frontdesk.runtime import prompts
from frontdesk.runtime.context import Outcome, TurnContext
from frontdesk.runtime.events import EventLog, register_event_type
from frontdesk.runtime.orchestration import governing, unanswered_goes_back
from frontdesk.runtime.policies import policy_message
from frontdesk.runtime.prompts import NO_ANSWER, build_answer_request
from frontdesk.runtime.retrieval.fetch import Fetcher, HttpFetcher
from frontdesk.runtime.retrieval.progress import ProgressCallback
from frontdesk.runtime.state import Frame
from frontdesk.runtime.steps import Done

KB_HISTORY_MESSAGES = 6  # earlier messages a knowledge answer sees, when the question points back at them
# A question that points back at the conversation ("Could I still return it?", "And on Sundays?", "What about
# the other one?") is read with the earlier messages; one that names what it asks about ("Do you deliver to
# Alaska?") is read alone (issue 29: the earlier messages were 14 to 28 prompt tokens a turn on the benchmarks).
_POINTS_BACK = re.compile(
    r"(?i)^\W*(?:and|or|but|so|what about|how about)\b"
    r"|\b(?:it|its|it's|that|this|those|these|they|them|their|theirs|he|she|him|her|one|ones|same|other|else|too|"
    r"also|either|instead|then|again|above|previous|earlier|former|latter)\b"
    r"|(?<!\bis )(?<!\bare )\bthere\b(?! is\b| are\b|'s\b)")
SHORT_QUESTION_WORDS = 3  # "on Sundays?", "how much?": too short to stand alone


def points_back(question: str) -> bool:
    """Whether a question needs the earlier messages to be read (a reference, or too few words)."""
    return bool(_POINTS_BACK.search(question)) or len(question.split()) <= SHORT_QUESTION_WORDS
# A grounded answer is written from at most this many passages, each scoring at least this share of
# the best one: on the intent-shift dialogues the passage that answers ranks in the first three and
# scores at least 0.73 of the best (keyword) or 0.84 (hybrid); on the orchestration benchmark's dialogues
# one scored 0.45 of the best (hybrid: "Do members get anything on their birthday?"); weaker ones only
# cost tokens.
ANSWER_PASSAGES = 3
PASSAGE_FLOOR = 0.4
SMALL_KB_PASSAGES = 8  # with no embedding model, a knowledge base this small is read whole when no keyword matches
# When an LLM writes the answer, a knowledge base whose passages (FAQ entries too) come to at most this many
# characters is read whole, the ranked ones first: the held-out dialogues' pet clinic (4 documents, about
# 2,100 characters) had its poisoning passage ranked below the vaccination one for "my dog ate a bar of dark
# chocolate", and a wrong fallback costs more than some 500 tokens. A larger one gets a second look on a
# miss: when the model finds no answer in the passages it saw, it is asked once more with the passages it
# did not see, best ranked first, then in the sources' order, up to MORE_PASSAGE_CHARS (a reworded question,
# "who am I talking to?", shares no word with the FAQ's "Who are you?"). One call more, on a miss only; the
# budget keeps it flat as a knowledge base grows.
WHOLE_KB_CHARS = 4000
MORE_PASSAGE_CHARS = 6000
# passages ranked for an answer and its second look: more than the second look's budget holds
RANKED_LOOK = 64
NOT_FOUND = "Sorry, I couldn't find information about that."


# A knowledge agent's index is built during the turn that first needs it: the build's progress
# (sources read, texts embedded, see retrieval.progress) goes into that turn's events.
register_event_type(
    "knowledge_progress",
    "progress of building a knowledge agent's index: a stage (load, embed, cached, done) and how far it is",
    ("stage", "done", "total"),
)
# Per stage, an event when it starts, each time another tenth of it is done, and when it ends.
PROGRESS_EVENT_STEPS = 10


class KnowledgeCache:
    """Builds each knowledge agent's index once per process, on first use.

    Web pages come from `fetcher` (default: over HTTP; `NoFetcher()` turns fetching off). With an
    `embedder` retrieval is hybrid (BM25 + embeddings) and the index is cached on disk, in
    `cache_dir` (default: the program folder's `.frontdesk/index`). `on_progress` hears every build's
    progress (the CLI shows a bar); the turn that builds an index also records it as events.
    """

    def __init__(self, program: Program, fetcher: Fetcher | None = None, embedder=None,
                 on_progress: ProgressCallback | None = None, cache_dir: Path | None = None) -> None:
        self.program = program
        self.fetcher: Fetcher = fetcher if fetcher is not None else HttpFetcher()
        self.embedder = embedder
        self.on_progress = on_progress
        self.cache_dir = cache_dir
        self._indexes: dict = {}
        self._reported: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def unreported(self, agent: str, problems: list[str]) -> list[str]:
        """The problems not yet reported in this process (each is reported once, not every turn)."""
        with self._lock:
            fresh = [p for p in problems if (agent, p) not in self._reported]
            self._reported.update((agent, p) for p in fresh)
        return fresh

    def index(self, agent: KnowledgeAgent, on_progress: ProgressCallback | None = None):
        """The agent's index, built now if this is its first use (`on_progress` hears that build too)."""
        from frontdesk.runtime.retrieval.cache import default_cache_dir
        from frontdesk.runtime.retrieval.index import KnowledgeIndex

        with self._lock:
            if agent.name not in self._indexes:
                root = Path(self.program.root or ".")
                # kept on disk for the next process, with or without an embedder (retrieval/cache.py)
                extra = {"embedder": self.embedder, "cache_dir": self.cache_dir or default_cache_dir(root)}
                listeners = [c for c in (self.on_progress, on_progress) if c is not None]
                self._indexes[agent.name] = KnowledgeIndex.build(
                    agent, root, fetcher=self.fetcher, on_progress=_fan_out(listeners), **extra)
            return self._indexes[agent.name]


def _fan_out(listeners: list[ProgressCallback]) -> ProgressCallback | None:
    """One progress callback calling each of `listeners` (None when there are none)."""
    if not listeners:
        return None
    if len(listeners) == 1:
        return listeners[0]

    def call_each(stage: str, done: int, total: int, label: str) -> None:
        for listener in listeners:
            listener(stage, done, total, label)

    return call_each


class ProgressEvents:
    """A progress callback that records a build's progress as `knowledge_progress` events of a turn,
    a few per stage (see PROGRESS_EVENT_STEPS) however many batches it takes."""

    def __init__(self, log: EventLog, agent: str) -> None:
        self.log = log
        self.agent = agent
        self._last: tuple[str, int] | None = None  # the stage and step of the last event

    def __call__(self, stage: str, done: int, total: int, label: str) -> None:
        step = PROGRESS_EVENT_STEPS if total <= 0 else min(PROGRESS_EVENT_STEPS, done * PROGRESS_EVENT_STEPS // total)
        if self._last is not None and self._last[0] == stage and self._last[1] == step:
            return
        self._last = (stage, step)
        self.log.emit("knowledge_progress", self.agent, stage=stage, done=done, total=total)


class KnowledgeExecutor:
    def run(self, frame: Frame, ctx: TurnContext) -> Outcome:
        """Answer the message. The program's entry agent (a kb agent as `main`) answers every question of
        the session: it waits for the first one, and after each answer (or no answer) for the next, so
        the conversation does not end after one question."""
        agent: KnowledgeAgent = ctx.program.agents[frame.agent]  # type: ignore[assignment]
        if ctx.state.stack[:1] != [frame]:
            return self._answer(agent, frame, ctx)
        if not ctx.input.available_to(frame):
            frame.started = True
            return Outcome.wait()
        outcome = self._answer(agent, frame, ctx)
        return Outcome.wait() if isinstance(outcome, Done) else outcome

    def _answer(self, agent: KnowledgeAgent, frame: Frame, ctx: TurnContext) -> Outcome:
        inp = ctx.input
        if inp.available_to(frame):
            question = inp.take(frame, "question")
        else:  # called by another agent: it answers the user's latest message
            question = inp.text or ctx.last_user_message()
        index = ctx.knowledge.index(agent, ProgressEvents(ctx.log, agent.name))
        frame.started = True
        for problem in ctx.knowledge.unreported(agent.name, index.problems):
            ctx.log.emit("warning", agent.name, where="knowledge sources", message=problem)
        faq = index.match_faq(question)
        if faq is not None:
            entry, score = faq
            ctx.log.emit("condition_evaluated", agent.name, condition=f"FAQ: {entry.q}", result=True,
                         by="faq match", score=round(score, 3))
            ctx.say(agent.name, entry.a, frame)
            return Outcome.done("success", "answered from the FAQ")
        ranked = index.search(question, k=RANKED_LOOK)
        passages = [p for p in ranked[:ANSWER_PASSAGES] if p.score >= PASSAGE_FLOOR]
        whole = ctx.llm_classifies and index.total_chars <= WHOLE_KB_CHARS
        if whole:
            passages = _unseen(index, ranked, [], WHOLE_KB_CHARS * 2)  # all of it, the ranked ones first
        elif not passages and ctx.llm_classifies and not index.uses_embeddings:
            # keywords cannot see a paraphrase ("my money back" for "refund"): a small knowledge base is
            # read whole by the model, which says when it holds no answer (MICA always sends its top k)
            passages = index.every_passage(SMALL_KB_PASSAGES)
        ctx.log.emit("step", agent.name, action="retrieve", question=question,
                     passages=_shown(passages))
        others = self._successors(agent, ctx)
        # (a draft of a drafting strategy, made before anyone knows the message is for this agent, gets no
        # second look: its no answer just loses to another agent's draft)
        more = [] if whole or not ctx.llm_classifies or ctx.orchestration.get("speculative") \
            else _unseen(index, ranked, passages, MORE_PASSAGE_CHARS)
        if not passages and more:
            passages, more = more, []  # nothing matched: the second look is the first
            ctx.log.emit("step", agent.name, action="retrieve more: no passage matched the question",
                         passages=_shown(passages))
        if not passages and not others:
            return self._no_answer(agent, frame, ctx, "no passage matches the question")
        if not ctx.llm_classifies:
            # No LLM, or one too small to ground an answer: quote what the sources say.
            answer = extractive_answer(question, passages, ctx.knowledge.embedder)
            ctx.log.emit("step", agent.name, action="extractive answer", source=passages[0].source)
            ctx.say(agent.name, answer, frame)
            return Outcome.done("success", "answered with sentences from the sources")
        history = ctx.state.history
        asked_at = max((i for i, item in enumerate(history) if item.role == "user"), default=len(history))
        earlier = prompts.history_messages(history[:asked_at], KB_HISTORY_MESSAGES) \
            if points_back(question) or others else []
        request = build_answer_request(question, passages, earlier, agent, others=others)
        try:
            response = ctx.complete(request, agent.name)
        except LLMError as exc:
            ctx.log.emit("error", agent.name, where="knowledge answer", message=str(exc))
            ctx.say(agent.name, "Here is what I found: " + passages[0].text.strip(), frame)
            return Outcome.done("success", "answered with the best passage (no LLM)")
        passed = self._pass_on(response, others, agent, frame, ctx)
        if passed is not None:
            return passed
        answer = (response.content or "").strip()
        if (not answer or NO_ANSWER in answer) and more:
            # the passages it saw do not answer: one more look, at those it did not see
            ctx.log.emit("step", agent.name, action="retrieve more: the first passages did not answer",
                         passages=_shown(more))
            request = build_answer_request(question, more, earlier, agent, others=others)
            try:
                response = ctx.complete(request, agent.name)
            except LLMError as exc:
                ctx.log.emit("error", agent.name, where="knowledge answer", message=str(exc))
                return self._no_answer(agent, frame, ctx, "the sources do not answer the question")
            passed = self._pass_on(response, others, agent, frame, ctx)
            if passed is not None:
                return passed
            answer = (response.content or "").strip()
        if not answer or NO_ANSWER in answer:
            return self._no_answer(agent, frame, ctx, "the sources do not answer the question")
        ctx.say(agent.name, answer, frame)
        return Outcome.done("success", "answered from the sources")

    def child_finished(self, frame: Frame, child, ctx: TurnContext) -> None:
        pass

    @staticmethod
    def _successors(agent: KnowledgeAgent, ctx: TurnContext) -> list:
        """Under the `autonomous` strategy, the knowledge agent that answered last reads the next message
        first: the other members it may name instead of answering (none otherwise)."""
        if ctx.orchestration.get("autonomous") != agent.name:
            return []
        found = governing(ctx)
        if found is None:
            return []
        router = found[1]
        return [ctx.program.agents[m.agent] for m in router.members
                if m.agent != agent.name and m.agent in ctx.program.agents and m.agent not in ctx.input.passed]

    def _pass_on(self, response, others: list, agent: KnowledgeAgent, frame: Frame, ctx: TurnContext) -> Outcome | None:
        """Autonomous: the answer names another agent the message is for; it gets the message."""
        passed = self._passed_to(response, others)
        if passed is None:
            return None
        ctx.input.give_back(frame, f"{prompts.PASS_TOOL} {passed}")
        ctx.input.also = passed
        ctx.log.emit("route_decided", agent.name, agent=passed, by="autonomous",
                     reason=f"{agent.name} named the agent the message is for")
        return Outcome.done("success", f"passed the message to {passed}")

    @staticmethod
    def _passed_to(response, others: list) -> str | None:
        names = {a.name for a in others}
        for call in response.tool_calls or []:
            if call.name == prompts.PASS_TOOL and call.arguments.get("agent") in names:
                return call.arguments["agent"]
        return None

    def _no_answer(self, agent: KnowledgeAgent, frame: Frame, ctx: TurnContext, reason: str) -> Outcome:
        if unanswered_goes_back(ctx, frame):  # the local model may have sent it to the wrong agent
            return Outcome.done("success", "gave the message back")
        ctx.log.emit("fallback", agent.name, reason=reason,
                     policy=agent.fallback.shown() if agent.fallback else None)
        text = policy_message(agent.fallback) if agent.fallback and agent.fallback.kind == "text" else NOT_FOUND
        ctx.say(agent.name, text, frame)
        return Outcome.done("error", reason)


def _shown(passages: list) -> list[dict]:
    """What a `retrieve` step event says of the passages the model is shown."""
    return [{"source": p.source, "score": round(p.score, 3)} for p in passages]


def _unseen(index, ranked: list, shown: list, budget: int) -> list:
    """The passages of `index` not in `shown`: the `ranked` ones first (best first), then the rest in the
    sources' order, as many as fit in `budget` characters (at least one)."""
    seen = {(p.source, p.text) for p in shown}
    out, used = [], 0
    for passage in itertools.chain(ranked, index.passages_in_order()):
        key = (passage.source, passage.text)
        if key in seen:
            continue
        if out and used + len(passage.text) > budget:
            break
        seen.add(key)
        out.append(passage)
        used += len(passage.text)
    return out


MAX_ANSWER_SENTENCES = 3
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[a-z0-9]+")


def extractive_answer(question: str, passages, embedder=None) -> str:
    """The sentences of the best passages that answer the question best: the one that answers it best
    first, then the others in their sources' order (its own passage first).

    A sentence is scored together with what it stands under (a heading, an FAQ question, a list's
    lead-in), so "Their 8-digit account number" answers "What do I need to add a payee?"; how well
    that heading alone fits the question counts too, so the rule of the section the question is about
    leads ("You can return any book within 30 days" under "Returning a book" for "What is your return
    policy?", not "After 60 days we cannot accept returns." under "Refunds"). Questions in the sources
    are never the answer; a Markdown table row becomes a sentence of its header's names and the row's
    values ("Option: Standard; Delivery time (business days): 4 to 7")."""
    units: list[tuple[int, str, str]] = []  # (passage rank, lead, sentence)
    items: set[int] = set()  # the units that are items of a list (steps, what is needed)
    seen: set[str] = set()
    for rank, passage in enumerate(passages[:EXTRACT_PASSAGES]):
        for lead, text, item in _answer_sentences(passage.text, with_items=True):
            if text not in seen:  # chunks overlap: a sentence is said once
                seen.add(text)
                if item:
                    items.add(len(units))
                units.append((rank, lead, text))
    if not units:
        return passages[0].text.strip()
    scored = [f"{lead} {text}".strip() for _, lead, text in units]
    leads = sorted({lead for _, lead, _ in units if lead})
    if embedder is not None:
        vectors = embedder.encode([question] + scored + leads)
        scores = list(vectors[1:len(scored) + 1] @ vectors[0])
        fits = dict(zip(leads, vectors[len(scored) + 1:] @ vectors[0]))
    else:
        asked = set(_WORD.findall(question.lower()))

        def overlap(t: str) -> float:
            return len(asked & set(_WORD.findall(t.lower()))) / (1 + len(t.split()) ** 0.5)

        scores = [overlap(t) for t in scored]
        fits = {lead: overlap(lead) for lead in leads}
    # Prefer the better passages: a small bonus, by the passage's score relative to the best, keeps
    # their sentences ahead of equal ones from the next.
    weight = [float(getattr(p, "score", 1.0) or 0.0) for p in passages[:EXTRACT_PASSAGES]]
    # The first sentence under a heading or question usually says what the section is about ("You
    # can return any book within 30 days" under "Returning a book"): it gets a small bonus too.
    first = [i == 0 or units[i][1] != units[i - 1][1] for i in range(len(units))]
    # A heading that names what the question asks about, word for word ("return" in "Returning a book"
    # for "What is your return policy?"), tells its section apart where the embeddings blur two
    # neighbours ("Refunds"): the share of the question's terms it holds counts too.
    asked_terms = set(bm25_tokenize([question])[0])
    named = {lead: len(asked_terms & set(terms)) / len(asked_terms) if asked_terms else 0.0
             for lead, terms in zip(leads, bm25_tokenize(leads) if leads else [])}
    total = [scores[i] + HEADING_WEIGHT * float(fits.get(units[i][1], 0.0)) + HEADING_TERMS * named.get(units[i][1], 0.0)
             + PASSAGE_BONUS * weight[units[i][0]] + (LEAD_BONUS if first[i] else 0.0) for i in range(len(units))]
    ranked = sorted(range(len(units)), reverse=True, key=lambda i: total[i])
    chosen = ranked[:MAX_ANSWER_SENTENCES]
    # the sentence that answers best first (a list it is an item of: that list's chosen items, in their
    # order, since steps and what is needed read in order); then the others in the sources' order, its
    # passage first
    best = chosen[0]
    lead_group = [best]
    if best in items:
        lead_group = sorted(i for i in chosen if i in items and units[i][:2] == units[best][:2])
    rest = sorted((i for i in chosen if i not in lead_group),
                  key=lambda i: (units[i][0] != units[best][0], units[i][0], i))
    keep = lead_group + rest
    out: list[str] = []
    shown_lead = None
    for i in keep:
        _, lead, text = units[i]
        if lead.endswith(":") and lead != shown_lead:
            out.append(f"{lead} {text}")  # "Members get: 10% off every full-price book"
        else:
            out.append(text)
        shown_lead = lead if lead.endswith(":") else None
    return " ".join(part if part.endswith((".", "!", ":")) else part + "." for part in out)


EXTRACT_PASSAGES = 3
PASSAGE_BONUS = 0.05
LEAD_BONUS = 0.05
# How much the fit of a sentence's heading (or FAQ question, or lead-in) to the question adds to its score.
HEADING_WEIGHT = 0.3
HEADING_TERMS = 0.1


def _answer_sentences(text: str, with_items: bool = False) -> list:
    """A passage's sentences that can answer something, each with the line it stands under: whole
    sentences (not headings, not questions, not the cut-off start of a chunk), list items under a
    lead-in, and table rows read out with their header. `with_items` adds whether each is a list item."""
    out: list[tuple[str, str, bool]] = []
    header: list[str] | None = None
    heading = lead = ""
    path: list[str] = []  # the headings above, outermost first
    for line in _unwrap(text).splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("|"):
            cells = [c.strip() for c in stripped.strip("|").split("|")]
            if all(set(c) <= set("-: ") for c in cells):
                continue  # the |---|---| line under the header
            if header is None:
                header = cells
                continue
            out.append((heading, "; ".join(f"{h}: {c}" if h else c for h, c in zip(header, cells) if c), False))
            continue
        header = None
        item = bool(_BLOCK_START.match(line)) and not stripped.startswith(("#", ">", "|"))
        if stripped.startswith("#"):
            level = len(stripped) - len(stripped.lstrip("#"))
            del path[level - 1:]
            path.append(stripped.lstrip("#").strip())
            heading, lead = ": ".join(path), ""  # "Returns and refunds: Returning a book"
            continue
        if not item and stripped.endswith("?"):
            heading, lead = stripped, ""  # an FAQ question
            continue
        if not item and stripped.endswith(":") and len(stripped.split()) <= 12:
            lead = stripped
            continue
        if not item:
            lead = ""
        for part in _SENTENCE.split(stripped):
            part = _ITEM_MARK.sub("", part).strip()
            whole = len(part.split()) >= 5 and (part[:1].isupper() or part[:1].isdigit())
            if part and not part.endswith("?") and (whole or (item and (lead or heading))):
                out.append((lead or heading, part, item))
    return out if with_items else [(lead, part) for lead, part, _ in out]


_ITEM_MARK = re.compile(r"^\s*(?:[-*>]+|\d+[.)])\s*")


_BLOCK_START = re.compile(r"\s*([#>|*-]|\d+[.)]\s)")


def _unwrap(text: str) -> str:
    """Join hard-wrapped lines back into paragraphs, keeping headings, list items and tables apart."""
    lines: list[str] = []
    for line in text.splitlines():
        previous = lines[-1] if lines else ""
        joins = (previous.strip() and line.strip() and not _BLOCK_START.match(line)
                 and not previous.lstrip().startswith(("#", "|")) and not previous.rstrip().endswith((".", "!", "?", ":")))
        if joins:
            lines[-1] = previous.rstrip() + " " + line.strip()
        else:
            lines.append(line)
    return "\n".join(lines)
