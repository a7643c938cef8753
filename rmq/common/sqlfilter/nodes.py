"""The expression tree of an SQL92 selector and its evaluation over message properties.

One class per kind of Apache's expression objects, with the same evaluation (three-valued:
True, False or None for null/unknown):

* :class:`Constant` (string / number literals) and :class:`BooleanConstant` (TRUE, FALSE,
  NULL); :class:`Property`, a message property (a string, or None when absent);
  :class:`Negate` (unary minus: None for anything but a number).
* :class:`Equal` (``=``; ``<>`` is NOT of it, ``IS NULL`` compares with NULL): null on
  exactly one side gives None when it is the left side and False when it is the right one,
  two nulls are equal, otherwise Java equality or else :func:`~.values.java_compare`.
* :class:`Compare` (``>``, ``>=``, ``<``, ``<=``; BETWEEN is built from them): None when a
  side is null; two strings are compared as doubles (an evaluation error when one does not
  parse), anything else with :func:`~.values.java_compare`.
* :class:`In` (``IN`` / ``NOT IN`` over string literals; None for a missing property),
  :class:`Not`, :class:`And`, :class:`Or` (Java's short-circuit three-valued logic),
  :class:`BooleanCast` (a bare property used as a condition: False unless it is a boolean,
  which a property never is; None when absent).

``is_boolean`` marks Apache's ``BooleanExpression``s, ``text`` is how Apache prints a node
(used in messages).  An evaluation error (:class:`~.values.SqlEvaluationError`) ends the
whole evaluation, as the Java exception does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from rmq.common.sqlfilter.values import (
    JavaInt,
    JavaLong,
    SqlEvaluationError,
    Value,
    double_compare,
    java_compare,
    java_equals,
    negate,
    parse_double,
)

Properties = Mapping[str, str]


class Node:
    """One expression of a selector."""

    is_boolean = False

    def evaluate(self, properties: Properties) -> Value:
        raise NotImplementedError

    @property
    def text(self) -> str:
        raise NotImplementedError


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@dataclass(frozen=True, slots=True)
class Constant(Node):
    value: Value

    def evaluate(self, properties: Properties) -> Value:
        return self.value

    @property
    def text(self) -> str:
        value = self.value
        if value is None:
            return "NULL"
        if type(value) is bool:
            return "TRUE" if value else "FALSE"
        if isinstance(value, str):
            return _quote(value)
        return repr(value) if type(value) is float else str(int(value))


@dataclass(frozen=True, slots=True)
class BooleanConstant(Constant):
    is_boolean = True


@dataclass(frozen=True, slots=True)
class Property(Node):
    name: str

    def evaluate(self, properties: Properties) -> Value:
        return properties.get(self.name)

    @property
    def text(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Negate(Node):
    operand: Node

    def evaluate(self, properties: Properties) -> Value:
        return negate(self.operand.evaluate(properties))

    @property
    def text(self) -> str:
        return f"(- {self.operand.text})"


@dataclass(frozen=True, slots=True)
class _Binary(Node):
    """A condition on two operands, printed ``(left <symbol> right)``."""

    left: Node
    right: Node
    is_boolean = True
    symbol = ""

    @property
    def text(self) -> str:
        return f"({self.left.text} {self.symbol} {self.right.text})"


@dataclass(frozen=True, slots=True)
class Equal(_Binary):
    symbol = "=="

    def evaluate(self, properties: Properties) -> Value:
        left = self.left.evaluate(properties)
        right = self.right.evaluate(properties)
        if left is None or right is None:
            if left is None and right is None:
                return True
            return None if left is None else False
        return java_equals(left, right) or java_compare(left, right) == 0


_ORDERINGS: dict[str, Callable[[int], bool]] = {
    ">": lambda sign: sign > 0,
    ">=": lambda sign: sign >= 0,
    "<": lambda sign: sign < 0,
    "<=": lambda sign: sign <= 0,
}


@dataclass(frozen=True, slots=True)
class Compare(_Binary):
    operator: str = ">"

    def evaluate(self, properties: Properties) -> Value:
        left = self.left.evaluate(properties)
        if left is None:
            return None
        right = self.right.evaluate(properties)
        if right is None:
            return None
        if type(left) is str and type(right) is str:
            try:
                sign = double_compare(parse_double(left), parse_double(right))
            except SqlEvaluationError as exc:
                raise SqlEvaluationError(
                    f"It's illegal to compare string by '>=', '>', '<', '<='. lv={left}, rv={right}"
                ) from exc
        else:
            sign = java_compare(left, right)
        return _ORDERINGS[self.operator](sign)

    @property
    def text(self) -> str:
        return f"({self.left.text} {self.operator} {self.right.text})"


@dataclass(frozen=True, slots=True)
class In(Node):
    operand: Property
    values: frozenset[str]
    negated: bool
    is_boolean = True

    def evaluate(self, properties: Properties) -> Value:
        value = self.operand.evaluate(properties)
        if type(value) is not str:
            return None
        return (value in self.values) is not self.negated

    @property
    def text(self) -> str:
        symbol = "NOT IN" if self.negated else "IN"
        listed = ", ".join(sorted(self.values))
        return f"{self.operand.text} {symbol} ( {listed} )"


@dataclass(frozen=True, slots=True)
class Not(Node):
    operand: Node
    is_boolean = True

    def evaluate(self, properties: Properties) -> Value:
        value = self.operand.evaluate(properties)
        return None if value is None else not value

    @property
    def text(self) -> str:
        return f"(NOT {self.operand.text})"


@dataclass(frozen=True, slots=True)
class BooleanCast(Node):
    operand: Node
    is_boolean = True

    def evaluate(self, properties: Properties) -> Value:
        value = self.operand.evaluate(properties)
        if value is None:
            return None
        return value if type(value) is bool else False

    @property
    def text(self) -> str:
        return self.operand.text


@dataclass(frozen=True, slots=True)
class _Logic(_Binary):
    """AND / OR: the ``decisive`` value on either side decides (the right side is not
    evaluated when the left one did); otherwise null on a side makes the outcome null."""

    decisive = False

    def evaluate(self, properties: Properties) -> Value:
        decisive = self.decisive
        left = self.left.evaluate(properties)
        if left is decisive:
            return decisive
        right = self.right.evaluate(properties)
        if right is decisive:
            return decisive
        return None if left is None or right is None else not decisive


@dataclass(frozen=True, slots=True)
class And(_Logic):
    symbol = "&&"
    decisive = False


@dataclass(frozen=True, slots=True)
class Or(_Logic):
    symbol = "||"
    decisive = True


def is_number(value: Value) -> bool:
    """A Java Number (not a Boolean)."""
    return type(value) in (JavaInt, JavaLong, float)
