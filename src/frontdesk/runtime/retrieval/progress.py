"""How an index build reports its progress: a callback, called with a stage, a count done, a total and a label."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

# on_progress(stage, done, total, label): `label` names what is being built (a knowledge agent).
# The stages, in order:
#   "load"   after each source is read: done sources of `total`;
#   "embed"  before the first batch (done = 0), then after every batch: done texts of `total`;
#   "cached" instead of both when the index came from the on-disk cache: done = total = its chunks;
#   "done"   last, always: done = total = the chunks of the finished index, FAQ entries included.
ProgressCallback = Callable[[str, int, int, str], None]

LOAD = "load"
EMBED = "embed"
CACHED = "cached"
DONE = "done"


def report(on_progress: ProgressCallback | None, stage: str, done: int, total: int, label: str) -> None:
    """Call `on_progress` if there is one; a failing callback never breaks the build."""
    if on_progress is None:
        return
    with contextlib.suppress(Exception):  # a progress display must not take the index down
        on_progress(stage, done, total, label)
