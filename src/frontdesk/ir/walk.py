"""Walking IR values: every node of a kind (every Ref, every IsSet, ...) inside an expression, a
template, a step or a whole agent."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeVar

from pydantic import BaseModel

from frontdesk.ir.expr import Ref

T = TypeVar("T")


def nodes_in(node: Any, kind: type[T]) -> Iterator[T]:
    """Every instance of `kind` inside an IR value (nested models, lists and mappings), outermost first."""
    if isinstance(node, kind):
        yield node
    if isinstance(node, BaseModel):
        for name in type(node).model_fields:
            yield from nodes_in(getattr(node, name), kind)
    elif isinstance(node, (list, tuple)):
        for item in node:
            yield from nodes_in(item, kind)
    elif isinstance(node, dict):
        for item in node.values():
            yield from nodes_in(item, kind)


def refs_in(node: Any) -> Iterator[Ref]:
    """Every Ref inside an IR value (expressions, templates, assignments, nested models and lists)."""
    return nodes_in(node, Ref)
