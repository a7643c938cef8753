"""SQL92 message selectors as Apache RocketMQ 4.9.8 parses and evaluates them.

:func:`compile_selector` turns the text of an SQL92 subscription (``a > 14 AND region IN
('eu', 'us')``) into a :class:`Selector`, or raises :class:`SqlSyntaxError` naming the column
it failed at; :meth:`Selector.matches` tells whether a message with the given properties
(every property of the message, system ones such as TAGS and KEYS included, all strings)
is delivered: only when the condition is true, never when it is false, unknown (null) or
fails to evaluate (a property that does not parse as the number it is compared with).

The grammar and its compile-time checks are in :mod:`.parser`, the tree and its three-valued
evaluation in :mod:`.nodes`, Java's value comparisons in :mod:`.values`.  The parser is
written by hand (no parsing library): see docs/decisions.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rmq.common.sqlfilter.nodes import Node
from rmq.common.sqlfilter.parser import SqlSyntaxError, parse
from rmq.common.sqlfilter.values import SqlEvaluationError, Value

__all__ = ["Selector", "SqlEvaluationError", "SqlSyntaxError", "compile_selector"]


@dataclass(frozen=True, slots=True)
class Selector:
    """A compiled SQL92 selector."""

    expression: str
    tree: Node

    def evaluate(self, properties: Mapping[str, str]) -> Value:
        """True, False or None (unknown); raises :class:`SqlEvaluationError` as Java throws."""
        return self.tree.evaluate(properties)

    def matches(self, properties: Mapping[str, str]) -> bool:
        """Whether a message with ``properties`` is delivered (see the module docstring)."""
        try:
            return self.tree.evaluate(properties) is True
        except SqlEvaluationError:
            return False


def compile_selector(expression: str) -> Selector:
    """Parse ``expression``; raises :class:`SqlSyntaxError` when it is not a valid selector."""
    return Selector(expression, parse(expression))
