"""The values an SQL92 selector computes with, and how Java compares them.

Apache's selector evaluates to Java objects: ``Integer`` and ``Long`` (decimal literals, by
range), ``Double`` (floating literals), ``Boolean`` (TRUE / FALSE and every comparison),
``String`` (string literals and every message property: properties are strings on the wire)
and ``null`` (a missing property, NULL, an unknown outcome).  Here they are ``JavaInt``,
``JavaLong``, ``float``, ``bool``, ``str`` and ``None``; the two integer kinds stay apart
because Java converts a string to the *other* side's type before comparing (``a > 14`` parses
the property with ``Integer.valueOf``, ``a > 3000000000`` with ``Long.valueOf``).

:func:`java_compare` is Apache's ``ComparisonExpression.__compare`` with string conversion on
(always on for parsed selectors): operands of different types are brought to one type (a
string to the number or boolean on the other side, an int to long or double, a long to
double), a pairing it does not convert compares as "less" (-1), and a number that does not
parse raises :class:`SqlEvaluationError` (Java's NumberFormatException).  A Boolean on the
left of a String raises too: Apache casts the Boolean to String there (ClassCastException).
The ``parse_*`` functions accept exactly what Java's ``Integer.valueOf``, ``Long.valueOf``,
``Double.valueOf`` and ``Boolean.valueOf`` accept.
"""

from __future__ import annotations

import math
import re
import struct

__all__ = [
    "JavaInt",
    "JavaLong",
    "SqlEvaluationError",
    "Value",
    "double_compare",
    "java_compare",
    "java_equals",
    "negate",
    "parse_double",
]


class SqlEvaluationError(Exception):
    """Evaluation failed (a Java exception in Apache's evaluator): the message does not match."""


class JavaInt(int):
    """A ``java.lang.Integer``."""


class JavaLong(int):
    """A ``java.lang.Long``."""


Value = JavaInt | JavaLong | float | bool | str | None

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_JAVA_TRIM = "".join(chr(c) for c in range(0x21))
_INTEGER = re.compile(r"[+-]?\d+")
_DOUBLE = re.compile(
    r"[+-]?(?:(?P<nan>NaN)|(?P<inf>Infinity)"
    r"|(?P<dec>(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)[fFdD]?"
    r"|(?P<hex>0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?)"
)
_DOUBLE_BITS = struct.Struct(">d")
_LONG_BITS = struct.Struct(">q")


def _number_format(text: str) -> SqlEvaluationError:
    return SqlEvaluationError(f'java.lang.NumberFormatException: For input string: "{text}"')


def _parse_integral(text: str, low: int, high: int) -> int:
    if _INTEGER.fullmatch(text) is None:
        raise _number_format(text)
    value = int(text)
    if not low <= value <= high:
        raise _number_format(text)
    return value


def parse_int(text: str) -> JavaInt:
    """Java's ``Integer.valueOf(String)``."""
    return JavaInt(_parse_integral(text, _INT_MIN, _INT_MAX))


def parse_long(text: str) -> JavaLong:
    """Java's ``Long.valueOf(String)``."""
    return JavaLong(_parse_integral(text, _LONG_MIN, _LONG_MAX))


def parse_double(text: str) -> float:
    """Java's ``Double.valueOf(String)`` (trimmed; NaN, Infinity, hex and f/d suffixes)."""
    trimmed = text.strip(_JAVA_TRIM)
    match = _DOUBLE.fullmatch(trimmed)
    if match is None:
        raise _number_format(text)
    sign = -1.0 if trimmed.startswith("-") else 1.0
    if match["nan"]:
        return math.nan
    if match["inf"]:
        return sign * math.inf
    if match["hex"]:
        return sign * float.fromhex(match["hex"])
    return sign * float(match["dec"])


def parse_boolean(text: str) -> bool:
    """Java's ``Boolean.valueOf(String)``: true only for "true" in any case."""
    return text.isascii() and text.lower() == "true"


def _double_bits(value: float) -> int:
    if value != value:
        return 0x7FF8000000000000
    return int(_LONG_BITS.unpack(_DOUBLE_BITS.pack(value))[0])


def double_compare(left: float, right: float) -> int:
    """Java's ``Double.compare``: -0.0 below 0.0, NaN above everything and equal to itself."""
    if left < right:
        return -1
    if left > right:
        return 1
    left_bits, right_bits = _double_bits(left), _double_bits(right)
    return 0 if left_bits == right_bits else (-1 if left_bits < right_bits else 1)


def java_equals(left: Value, right: Value) -> bool:
    """Java's ``left.equals(right)`` of two non-null values."""
    if type(left) is not type(right):
        return False
    if type(left) is float:
        assert type(right) is float
        return _double_bits(left) == _double_bits(right)
    return left == right


def _sign(left: Value, right: Value) -> int:
    """``compareTo`` of two values of one type."""
    if type(left) is float:
        assert type(right) is float
        return double_compare(left, right)
    assert left is not None and right is not None
    return -1 if left < right else (1 if left > right else 0)  # type: ignore[operator]


def _from_string(text: str, like: Value) -> Value:
    """``text`` converted to the type of ``like`` (a non-string value)."""
    if type(like) is bool:
        return parse_boolean(text)
    if type(like) is JavaInt:
        return parse_int(text)
    if type(like) is JavaLong:
        return parse_long(text)
    return parse_double(text)


def java_compare(left: Value, right: Value) -> int:
    """Apache's ``__compare(left, right, true)`` of two non-null values (module docstring)."""
    left_type, right_type = type(left), type(right)
    if left_type is right_type:
        return _sign(left, right)
    if left_type is bool:
        if right_type is str:
            raise SqlEvaluationError(
                "java.lang.ClassCastException: java.lang.Boolean cannot be cast to java.lang.String"
            )
        return -1
    if left_type is str:
        assert isinstance(left, str)
        return _sign(_from_string(left, right), right)
    if right_type is str:
        assert isinstance(right, str)
        return _sign(left, _from_string(right, left))
    if right_type is bool:
        return -1
    if left_type is float or right_type is float:
        return double_compare(float(left), float(right))  # type: ignore[arg-type]
    return _sign(int(left), int(right))  # type: ignore[arg-type]


def negate(value: Value) -> Value:
    """Apache's unary minus: numbers negate (with Java's overflow), anything else is null."""
    if type(value) is JavaInt:
        return JavaInt(value if value == _INT_MIN else -value)
    if type(value) is JavaLong:
        return JavaLong(value if value == _LONG_MIN else -value)
    if type(value) is float:
        return -value
    return None
