"""Walking IR values: every Ref inside an expression, a template, a node or a whole agent."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from frontdesk.ir.expr import Ref


def refs_in(node: Any) -> Iterator[Ref]:
    """Every Ref inside an IR value (expressions, templates, assignments, nested models and lists)."""
    if isinstance(node, Ref):
        yield node
    elif isinstance(node, BaseModel):
        for name in type(node).model_fields:
            yield from refs_in(getattr(node, name))
    elif isinstance(node, (list, tuple)):
        for item in node:
            yield from refs_in(item)
    elif isinstance(node, dict):
        for item in node.values():
            yield from refs_in(item)
