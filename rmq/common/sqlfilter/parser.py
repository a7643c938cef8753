"""A recursive-descent parser of Apache's SQL92 selector grammar, with its compile-time checks.

The rules, from ``SelectorParser.jj`` at rocketmq-all-4.9.8 (lowest precedence first)::

    selector    := or                                  (must be a condition)
    or          := and ( OR and )*
    and         := equality ( AND equality )*
    equality    := comparison ( "=" comparison | "<>" comparison | IS NULL | IS NOT NULL )*
    comparison  := unary ( (">" | ">=" | "<" | "<=") unary
                         | [NOT] BETWEEN unary AND unary
                         | [NOT] IN "(" string ( "," string )* ")" )*
    unary       := "+" unary | "-" unary | NOT unary | primary
    primary     := literal | identifier | "(" or ")"
    literal     := string | decimal | float | TRUE | FALSE | NULL

There is no end-of-input rule: parsing stops at the first token no rule continues with, so
``a > 1 b`` means ``a > 1`` (as in Apache).  Note that NOT binds tighter than comparisons:
``NOT a > 1`` is ``(NOT a) > 1``, which the checks reject.

The checks Apache makes while building the tree, each a :class:`SqlSyntaxError` here: operands
of ``>``/``>=``/``<``/``<=`` (and BETWEEN) may not be a string, boolean or NULL literal nor a
condition; ``=``/``<>`` may not have a NULL literal (use IS NULL) and TRUE/FALSE may not be
compared with another kind of literal on the left; BETWEEN's literal bounds must not be null
and the low one must not exceed the high one; IN applies to a property only; a decimal literal
must fit in a Java long (an int when it fits one), a floating literal must be a positive finite
double at least Double.MIN_VALUE (so ``0.0`` is refused, as in Apache); the whole selector
and each side of AND/OR/NOT must be a condition (a bare property counts: it is cast).
"""

from __future__ import annotations

from collections.abc import Callable

from rmq.common.sqlfilter.lexer import EOF, Lexer, LexicalError, Token
from rmq.common.sqlfilter.nodes import (
    And,
    BooleanCast,
    BooleanConstant,
    Compare,
    Constant,
    Equal,
    In,
    Negate,
    Node,
    Not,
    Or,
    Property,
    is_number,
)
from rmq.common.sqlfilter.values import (
    JavaInt,
    JavaLong,
    SqlEvaluationError,
    java_compare,
)

__all__ = ["SqlSyntaxError", "parse"]

_LONG_MAX = 2**63 - 1
_INT_MAX = 2**31 - 1
_DOUBLE_MIN = 5e-324
_COMPARISONS = (">", ">=", "<", "<=")
_COMPARISON_STARTS = frozenset({*_COMPARISONS, "NOT", "BETWEEN", "IN"})
_LITERALS = frozenset({"STRING", "DECIMAL", "FLOAT", "TRUE", "FALSE", "NULL"})


class SqlSyntaxError(ValueError):
    """The text is not a valid selector; ``position`` is the 0-based offset it failed at."""

    def __init__(self, position: int, reason: str) -> None:
        super().__init__(f"invalid SQL92 expression at column {position + 1}: {reason}")
        self.position = position
        self.reason = reason


def parse(text: str) -> Node:
    """The condition ``text`` states (a boolean node), or :class:`SqlSyntaxError`."""
    parser = _Parser(text)
    return parser.as_boolean(parser.or_expression(), 0)


def _describe(token: Token) -> str:
    return "end of expression" if token.kind == EOF else repr(token.image)


class _Parser:
    def __init__(self, text: str) -> None:
        self._lexer = Lexer(text)
        self._ahead: list[Token] = []

    # -- tokens ---------------------------------------------------------------------------

    def _peek(self, distance: int = 0) -> Token:
        while len(self._ahead) <= distance:
            try:
                self._ahead.append(self._lexer.next_token())
            except LexicalError as exc:
                raise SqlSyntaxError(exc.position, str(exc)) from None
        return self._ahead[distance]

    def _next(self) -> Token:
        token = self._peek()
        del self._ahead[0]
        return token

    def _expect(self, kind: str) -> Token:
        token = self._peek()
        if token.kind != kind:
            raise SqlSyntaxError(token.position, f"expected {kind}, found {_describe(token)}")
        return self._next()

    # -- checks Apache makes while building ------------------------------------------------

    @staticmethod
    def as_boolean(node: Node, position: int) -> Node:
        if node.is_boolean:
            return node
        if isinstance(node, Property):
            return BooleanCast(node)
        raise SqlSyntaxError(
            position, f"Expression will not result in a boolean value: {node.text}"
        )

    @staticmethod
    def _check_ordered(node: Node, position: int) -> None:
        if isinstance(node, Constant):
            if not is_number(node.value):
                raise SqlSyntaxError(position, f"Value '{node.text}' cannot be compared.")
        elif node.is_boolean:
            raise SqlSyntaxError(position, f"Value '{node.text}' cannot be compared.")

    def _ordered(self, operator: str, left: Node, right: Node, position: int) -> Node:
        self._check_ordered(left, position)
        self._check_ordered(right, position)
        return Compare(left, right, operator)

    @staticmethod
    def _equal(left: Node, right: Node, position: int) -> Node:
        for operand in (left, right):
            if isinstance(operand, Constant) and operand.value is None:
                raise SqlSyntaxError(position, f"'{operand.text}' cannot be compared.")
        if (
            isinstance(left, BooleanConstant)
            and isinstance(right, Constant)
            and not isinstance(right, BooleanConstant)
        ):
            raise SqlSyntaxError(position, f"'{left.text}' cannot be compared with '{right.text}'")
        return Equal(left, right)

    def _between(self, value: Node, low: Node, high: Node, position: int) -> Node:
        if isinstance(low, Constant) and isinstance(high, Constant):
            if low.value is None or high.value is None:
                raise SqlSyntaxError(position, "Illegal values of between, values can not be null!")
            try:
                reversed_bounds = java_compare(high.value, low.value) < 0
            except SqlEvaluationError as exc:
                raise SqlSyntaxError(position, str(exc)) from None
            if reversed_bounds:
                raise SqlSyntaxError(
                    position,
                    f"Illegal values of between, left value({low.text}) must less than or "
                    f"equal to right value({high.text})",
                )
        return And(
            self._ordered(">=", value, low, position), self._ordered("<=", value, high, position)
        )

    # -- rules ----------------------------------------------------------------------------

    def _binary_logic(
        self, keyword: str, operand: Callable[[], Node], build: Callable[[Node, Node], Node]
    ) -> Node:
        left = operand()
        while self._peek().kind == keyword:
            position = self._next().position
            right = operand()
            left = build(self.as_boolean(left, position), self.as_boolean(right, position))
        return left

    def or_expression(self) -> Node:
        return self._binary_logic("OR", self._and_expression, Or)

    def _and_expression(self) -> Node:
        return self._binary_logic("AND", self._equality_expression, And)

    def _equality_expression(self) -> Node:
        left = self._comparison_expression()
        while (token := self._peek()).kind in ("=", "<>", "IS"):
            self._next()
            if token.kind == "IS":
                if self._peek().kind == "NULL":
                    self._next()
                    left = Equal(left, BooleanConstant(None))
                else:
                    self._expect("NOT")
                    self._expect("NULL")
                    left = Not(Equal(left, BooleanConstant(None)))
                continue
            equal = self._equal(left, self._comparison_expression(), token.position)
            left = equal if token.kind == "=" else Not(equal)
        return left

    def _comparison_expression(self) -> Node:
        left = self._unary_expression()
        while (token := self._peek()).kind in _COMPARISON_STARTS:
            position = token.position
            if token.kind in _COMPARISONS:
                self._next()
                left = self._ordered(token.kind, left, self._unary_expression(), position)
                continue
            negated = token.kind == "NOT"
            if negated and self._peek(1).kind not in ("BETWEEN", "IN"):
                following = self._peek(1)
                raise SqlSyntaxError(
                    following.position,
                    f"expected BETWEEN or IN after NOT, found {_describe(following)}",
                )
            if negated:
                self._next()
            if self._next().kind == "BETWEEN":
                low = self._unary_expression()
                self._expect("AND")
                high = self._unary_expression()
                if negated:
                    left = Or(
                        self._ordered("<", left, low, position),
                        self._ordered(">", left, high, position),
                    )
                else:
                    left = self._between(left, low, high, position)
                continue
            values = self._string_list()
            if not isinstance(left, Property):
                raise SqlSyntaxError(
                    position, f"Expected a property for In expression, got: {left.text}"
                )
            left = In(left, values, negated)
        return left

    def _string_list(self) -> frozenset[str]:
        self._expect("(")
        values = [self._string()]
        while self._peek().kind == ",":
            self._next()
            values.append(self._string())
        self._expect(")")
        return frozenset(values)

    def _string(self) -> str:
        image = self._expect("STRING").image
        return image[1:-1].replace("''", "'")

    def _unary_expression(self) -> Node:
        token = self._peek()
        if token.kind == "+":
            self._next()
            return self._unary_expression()
        if token.kind == "-":
            self._next()
            return Negate(self._unary_expression())
        if token.kind == "NOT":
            self._next()
            return Not(self.as_boolean(self._unary_expression(), token.position))
        return self._primary_expression()

    def _primary_expression(self) -> Node:
        token = self._next()
        kind = token.kind
        if kind in _LITERALS:
            return self._literal(token)
        if kind == "ID":
            return Property(token.image)
        if kind == "(":
            inner = self.or_expression()
            self._expect(")")
            return inner
        raise SqlSyntaxError(token.position, f"unexpected {_describe(token)}")

    @staticmethod
    def _literal(token: Token) -> Constant:
        kind, image = token.kind, token.image
        if kind == "STRING":
            return Constant(image[1:-1].replace("''", "'"))
        if kind == "DECIMAL":
            number = int(image.rstrip("lL"))
            if number > _LONG_MAX:
                raise SqlSyntaxError(token.position, f'For input string: "{image}"')
            return Constant(JavaInt(number) if number <= _INT_MAX else JavaLong(number))
        if kind == "FLOAT":
            value = float(image)
            if value == float("inf"):
                raise SqlSyntaxError(
                    token.position, f"{image} is greater than 1.7976931348623157E308"
                )
            if value < _DOUBLE_MIN:
                raise SqlSyntaxError(token.position, f"{image} is less than 4.9E-324")
            return Constant(value)
        return BooleanConstant({"TRUE": True, "FALSE": False, "NULL": None}[kind])
