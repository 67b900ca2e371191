"""Which of a router's members a model call names, when the router has many (issue 29).

A routing call, a flow's `understand` call (its `switch:<agent>` choices) and a reasoning step
(`finish.next`, `hand_back.to`) each list the agents the user may turn to. Listing every member makes
a call's prompt grow with the program: at 1,000 members one routing call carries tens of thousands of
tokens. So a call lists a shortlist instead:

- a router of at most SHORTLIST members lists them all (nothing changes for such programs);
- otherwise the SHORTLIST members that score best for the user's message: by the embedding model when
  there is one (the same scores its routing decision reads), else by the keyword score (the share of
  the message's rarer words an agent's phrases use);
- and always the agents the conversation is engaged with: every agent with a task waiting (a suspended
  thread), the member the router handed a message to last, and any member the message names.

The members keep the program's order in the call. A routing call that answers "none" from a cut list
is asked once more, with the next WIDER members by score (orchestration.llm_route): a message whose
words miss its agent costs one more call, never a wrong route.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from frontdesk.nlu.matcher import keyword_scores

if TYPE_CHECKING:
    from frontdesk.runtime.context import TurnContext

SHORTLIST = 8  # members a call lists when the router has more
# members the second routing call lists, after a "none" from the shortlist: with the shortlist, every member
# of a router of up to 64 is offered by then. (It was 24: a 40-member held-out bot lost "Great, that's
# everything. Bye!", which has no word of any member's, for its 40th member: in neither call.)
WIDER = 56


def member_scores(ctx: TurnContext, message: str, names: list[str]) -> dict[str, float]:
    """How well each member fits the message: embedding scores with an understanding model, else keywords."""
    options = ctx.agent_options(names)
    if ctx.understanding is not None:
        scores = getattr(ctx.understanding, "scores", None)
        if scores is not None:
            try:
                return scores(message, options)
            except Exception as exc:  # noqa: BLE001 - a broken local model falls back to the words
                ctx.log.emit("error", None, where="shortlist by embedding", message=f"{type(exc).__name__}: {exc}")
    return keyword_scores(message, options)


def engaged(ctx: TurnContext, names: list[str], last: str | None = None) -> set[str]:
    """Members the conversation is engaged with: a task of theirs waits, the router handed them the last
    message, or the message names them ("talk to billing_disputes")."""
    waiting = {t.base.agent for t in ctx.state.threads.values()}
    text = " " + " ".join(re.findall(r"[a-z0-9]+", (ctx.input.text or "").lower())) + " "
    named = {n for n in names if len(n) > 3 and f" {' '.join(re.findall(r'[a-z0-9]+', n.lower()))} " in text}
    return (waiting | named | ({last} if last else set())) & set(names)


def shortlist(ctx: TurnContext, agents: list[Any], about: str | None, last: str | None = None
              ) -> tuple[list[Any], list[Any]]:
    """(the members a call lists, in `agents`' order; the others, best first). `agents` have a `.name`;
    `about` names the agent asking (for the trace)."""
    pool = list(agents)
    message = ctx.input.text or ctx.last_user_message() or ""
    if len(pool) <= SHORTLIST or not message.strip():
        return pool, []
    names = [a.name for a in pool]
    key = (message, tuple(names))
    fresh = key not in ctx.shortlists
    if fresh:
        ctx.shortlists[key] = member_scores(ctx, message, names)
    scores = ctx.shortlists[key]
    order = {n: i for i, n in enumerate(names)}
    ranked = sorted(names, key=lambda n: (-scores.get(n, 0.0), order[n]))
    kept = set(ranked[:SHORTLIST]) | engaged(ctx, names, last)
    if fresh:
        ctx.log.emit("step", about, action="shortlisted the members a call lists", listed=len(kept),
                     of=len(names), best=ranked[:3])
    by_name = {a.name: a for a in pool}
    return [a for a in pool if a.name in kept], [by_name[n] for n in ranked if n not in kept]
