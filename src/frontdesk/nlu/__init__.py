"""Natural-language understanding without a generative model: deciding between phrased options."""

from frontdesk.nlu.base import Decision, Option, Thresholds, Understanding

__all__ = ["Decision", "Option", "Thresholds", "Understanding"]
