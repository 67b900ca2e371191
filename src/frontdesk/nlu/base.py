"""The understanding protocol: choose which phrased option a user message expresses, with a confidence."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

Task = Literal["route", "claims"]


@dataclass(frozen=True)
class Option:
    """One possible meaning: `key` is what the runtime acts on (a case number, an agent name,
    `switch:<agent>`); `examples` are phrases that express it (claims examples, descriptions,
    FAQ questions)."""

    key: str
    examples: tuple[str, ...]
    # How much each example counts (1.0 each when empty): phrases mined from documents say
    # less about what a user wants done than an agent's own description and examples.
    weights: tuple[float, ...] = ()
    # The phrases whose words the keyword score reads (all `examples` when empty): a router leaves
    # out a flow's answers to its own questions ("The one linked to my current account").
    keyword_examples: tuple[str, ...] = ()

    def weight_list(self) -> list[float]:
        return list(self.weights) if len(self.weights) == len(self.examples) else [1.0] * len(self.examples)


@dataclass(frozen=True)
class Thresholds:
    """When a decision is sure enough to skip the LLM, and when it means "none of these".

    accept: the best option's score must reach this ...
    margin: ... and beat the runner-up by this much, for a sure decision;
    reject: below this best score the message matches no option (a sure "none").
    Between reject and accept the decision is unsure: an LLM decides when one is configured.
    """

    accept: float = 0.6
    margin: float = 0.05
    reject: float = 0.3


@dataclass
class Decision:
    choice: str | None  # the best option's key, or None for "none of these"
    score: float  # the best option's score (0..1)
    margin: float  # best score minus the runner-up's
    sure: bool  # decided without needing an LLM
    scores: dict[str, float] = field(default_factory=dict)
    best: str | None = None  # the best-scoring option even when the choice is None
    decided_by: str = "embedding"


@runtime_checkable
class Understanding(Protocol):
    name: str

    def decide(self, message: str, options: list[Option], task: Task,
               thresholds: Thresholds | None = None) -> Decision: ...
