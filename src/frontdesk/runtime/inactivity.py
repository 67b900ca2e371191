"""Inactivity rules at run time: which rule is due for a session that has waited for its user so long,
and what it says.

ADL states these in an agent's `exit` (or `fallback`) policy text (read by lang/adl/policy_text.py);
ABL's EXECUTION `session_timeout_ms` ends an idle session. A server runs them on a timer
(frontdesk.server.app); `Engine.idle` runs one.
"""

from __future__ import annotations

from collections.abc import Iterable

from frontdesk.ir.models import InactivityRule

DEFAULT_REMINDER = "Are you still there? I'm here whenever you're ready."
DEFAULT_GOODBYE = "It looks like you've stepped away, so I'll close this conversation. Goodbye!"


def rules_of(agent) -> list[InactivityRule]:
    """An agent's timed rules: those its exit and fallback policy texts state, and ABL's EXECUTION
    session_timeout as an end."""
    rules = [r for policy in (agent.exit, agent.fallback) if policy is not None for r in policy.inactivity]
    timeout = agent.rules.execution.session_timeout
    if timeout:
        rules.append(InactivityRule(after=float(timeout), action="end"))
    return rules


def longest_silence(program) -> float:
    """The longest delay of any inactivity rule in the program (0: it has none)."""
    return max((r.after for agent in program.agents.values() for r in rules_of(agent)), default=0.0)


def due(rules: Iterable[InactivityRule], idle: float, fired: Iterable[float]) -> InactivityRule | None:
    """The rule to run for a session idle for `idle` seconds whose rules at the delays `fired` ran already
    since the user's last message: the latest one that is due and has not run (an end wins over the
    reminders it passed, so a long-gone user is told good-bye, not reminded first)."""
    done = set(fired)
    ready = [r for r in rules if r.after <= idle and r.after not in done]
    return max(ready, key=lambda r: r.after) if ready else None


def said(rule: InactivityRule) -> str:
    """What the bot says when `rule` runs."""
    return rule.text or (DEFAULT_GOODBYE if rule.action == "end" else DEFAULT_REMINDER)
