"""SQL92 selector cases with Apache's answers, shared by the unit and conformance tests.

``CASES`` rows are (expression, message properties, outcome) where the outcome is what
Apache 4.9.8's own filter module gives: "invalid" (the expression does not compile), or the
evaluation's "true" / "false" / "null" / "error" (an exception: the message is not
delivered).  tests/conformance/test_sql92_eval.py runs every row through Apache's evaluator
(conformance/drivers SqlEval.java) and fails when an outcome here is not Apache's, so the
table's truth is Apache's; tests/unit/common/test_sqlfilter.py holds rmq to it.

:func:`random_cases` builds more rows (without outcomes) from the grammar, with a seed, for
the conformance test to compare rmq with Apache on expressions nobody wrote by hand.
"""

from __future__ import annotations

import random

CASES: list[tuple[str, dict[str, str], str]] = [
    ("a > 14", {"a": "15"}, "true"),
    ("a > 14", {"a": "14"}, "false"),
    ("a > 14", {"a": "1.5"}, "error"),
    ("a > 14", {}, "null"),
    ("a > 14", {"a": "abc"}, "error"),
    ("a > 14", {"a": " 15"}, "error"),
    ("a > 14", {"a": "+15"}, "true"),
    ("a > 14", {"a": "3000000000"}, "error"),
    ("a > 3000000000", {"a": "3000000001"}, "true"),
    ("a > 14.5", {"a": "15"}, "true"),
    ("a > 14.5", {"a": " 15 "}, "true"),
    ("a > 14.5", {"a": "NaN"}, "true"),
    ("a > 14.5", {"a": "Infinity"}, "true"),
    ("a > 14.5", {"a": "1e3"}, "true"),
    ("a > 14.5", {"a": "0x1p4"}, "true"),
    ("a > 14.5", {"a": "15f"}, "true"),
    ("a > 14.5", {"a": "inf"}, "error"),
    ("a > 14.5", {"a": "1_5"}, "error"),
    ("a = 15", {"a": "15"}, "true"),
    ("a = 15", {"a": "15.0"}, "error"),
    ("a = 15.0", {"a": "15"}, "true"),
    ("a = '15'", {"a": "15"}, "true"),
    ("a = 'x'", {"a": "x"}, "true"),
    ("a = 'x'", {}, "null"),
    ("a <> 'x'", {}, "null"),
    ("a <> 'x'", {"a": "y"}, "true"),
    ("a = 15", {"a": "x"}, "error"),
    ("a = TRUE", {"a": "true"}, "true"),
    ("a = TRUE", {"a": "TRUE"}, "true"),
    ("a = TRUE", {"a": "yes"}, "false"),
    ("TRUE = a", {"a": "true"}, "error"),
    ("a = FALSE", {"a": "x"}, "true"),
    ("a = b", {"a": "1", "b": "1"}, "true"),
    ("a = b", {"a": "1", "b": "1.0"}, "false"),
    ("a > b", {"a": "2", "b": "1.5"}, "true"),
    ("a > b", {"a": "x", "b": "1"}, "error"),
    ("a BETWEEN 1 AND 3", {"a": "2"}, "true"),
    ("a BETWEEN 1 AND 3", {"a": "3"}, "true"),
    ("a BETWEEN 1 AND 3", {"a": "4"}, "false"),
    ("a NOT BETWEEN 1 AND 3", {"a": "4"}, "true"),
    ("a NOT BETWEEN 1 AND 3", {}, "null"),
    ("a BETWEEN 3 AND 1", {"a": "2"}, "invalid"),
    ("a BETWEEN -3 AND -1", {"a": "-2"}, "true"),
    ("a IN ('x', 'y')", {"a": "y"}, "true"),
    ("a IN ('x', 'y')", {"a": "z"}, "false"),
    ("a IN ('x', 'y')", {}, "null"),
    ("a NOT IN ('x', 'y')", {"a": "z"}, "true"),
    ("a NOT IN ('x')", {}, "null"),
    ("a IS NULL", {}, "true"),
    ("a IS NULL", {"a": "x"}, "false"),
    ("a IS NOT NULL", {"a": "x"}, "true"),
    ("a IS NOT NULL", {}, "false"),
    ("a", {"a": "true"}, "false"),
    ("a", {}, "null"),
    ("NOT a", {"a": "x"}, "true"),
    ("NOT a", {}, "null"),
    ("TRUE", {}, "true"),
    ("FALSE", {}, "false"),
    ("NULL", {}, "null"),
    ("1", {}, "invalid"),
    ("'x'", {}, "invalid"),
    ("a > 1 AND b > 1", {"a": "2"}, "null"),
    ("a > 1 AND b > 1", {"a": "0"}, "false"),
    ("a > 1 OR b > 1", {"a": "2"}, "true"),
    ("a > 1 OR b > 1", {"a": "0"}, "null"),
    ("a > 1 OR b > 1", {"a": "x", "b": "2"}, "error"),
    ("b > 1 OR a > 1", {"a": "x", "b": "2"}, "true"),
    ("NOT (a > 1)", {"a": "0"}, "true"),
    ("NOT (a > 1)", {}, "null"),
    ("NOT a > 1", {"a": "0"}, "invalid"),
    ("NOT a = 1", {"a": "0"}, "false"),
    ("NOT a IN ('x')", {"a": "x"}, "invalid"),
    ("a = NULL", {}, "invalid"),
    ("a > 'x'", {}, "invalid"),
    ("a > TRUE", {}, "invalid"),
    ("TRUE = 1", {}, "invalid"),
    ("1 = TRUE", {}, "false"),
    ("a > 0.0", {"a": "1"}, "invalid"),
    ("a > 1E400", {"a": "1"}, "invalid"),
    ("a > 1e-400", {"a": "1"}, "invalid"),
    ("a > 9223372036854775807", {"a": "1"}, "false"),
    ("a > 9223372036854775808", {}, "invalid"),
    ("a > 1 b", {"a": "2"}, "true"),
    ("a > 1 #", {"a": "2"}, "invalid"),
    ("a > 1 b #", {"a": "2"}, "true"),
    ("a > 1 NOT x", {"a": "2"}, "invalid"),
    ("a > 10L", {"a": "11"}, "true"),
    ("a = 0L", {"a": "0"}, "true"),
    ("a = 007", {"a": "0"}, "true"),
    ("a > .5", {"a": "1"}, "true"),
    ("a > 5.", {"a": "6"}, "true"),
    ("a > 5e1", {"a": "51"}, "true"),
    ("a > -5", {"a": "-4"}, "true"),
    ("a > - -5", {"a": "6"}, "true"),
    ("a > +5", {"a": "6"}, "true"),
    ("a = -'x'", {"a": "x"}, "false"),
    ("-a = 1", {"a": "-1"}, "null"),
    ("a = 'it''s'", {"a": "it's"}, "true"),
    ("a = 'unterminated", {}, "invalid"),
    ("(a > 1) = (b > 1)", {"a": "2", "b": "2"}, "true"),
    ("(a > 1) = 'true'", {"a": "2"}, "error"),
    ("'true' = (a > 1)", {"a": "2"}, "true"),
    ("a -- comment\n > 1", {"a": "2"}, "true"),
    ("a /* c */ > 1", {"a": "2"}, "true"),
    ("a > 1 --c", {"a": "2"}, "true"),
    ("a is not null and A IS NULL", {"a": "1"}, "true"),
    ("a.b = 1", {}, "invalid"),
    ("a$_1 = 1", {"a$_1": "1"}, "true"),
    ("a = 1 AND", {}, "invalid"),
    ("(a = 1", {}, "invalid"),
    ("a IN ()", {}, "invalid"),
    ("a IN (1)", {}, "invalid"),
    ("a BETWEEN NULL AND 1", {}, "invalid"),
    ("a BETWEEN 'a' AND 'b'", {}, "invalid"),
    ("a = 1 = TRUE", {"a": "1"}, "true"),
    ("a > 2147483647", {"a": "2147483648"}, "error"),
    ("a > 2147483647", {"a": "99999999999"}, "error"),
    ("a = 1.5", {"a": "1.50"}, "true"),
    ("a = 2147483648", {"a": "2147483648"}, "true"),
    ("a <> 1", {"a": "x"}, "error"),
    ("TAGS = 'x'", {"TAGS": "x"}, "true"),
    ("a > b", {"a": "NaN", "b": "1"}, "true"),
    ("a = b", {"a": "NaN", "b": "NaN"}, "true"),
    ("a >= b", {"a": "-0.0", "b": "0.0"}, "false"),
    ("a > 14", {"a": "١٥"}, "true"),
    ("a > 14", {"a": "15L"}, "error"),
    ("a > 1 AND b IN ('x')", {"a": "x"}, "error"),
    ("NOT NULL", {}, "null"),
    ("NOT TRUE", {}, "false"),
    ("NOT 1", {}, "invalid"),
    ("NOT 'x'", {}, "invalid"),
    ("- a", {}, "invalid"),
    ("a OR b", {"a": "x", "b": "y"}, "false"),
    ("a AND TRUE", {}, "null"),
]

_NAMES = ("a", "b", "c")
_NUMBERS = ("0", "1", "14", "-3", "2147483648", "1.5", "5.", ".25", "1e2", "10L", "007")
_STRINGS = ("'x'", "'15'", "'true'", "''", "'it''s'")
_PROPERTY_VALUES = ("15", "14", "1.5", "x", "true", "-3", "", " 7", "NaN", "3000000000", "1e2")


def _operand(rng: random.Random, depth: int) -> str:
    roll = rng.random()
    if roll < 0.45:
        return rng.choice(_NAMES)
    if roll < 0.75:
        return rng.choice(_NUMBERS)
    if roll < 0.85:
        return rng.choice(_STRINGS)
    if roll < 0.9:
        return rng.choice(("TRUE", "FALSE", "NULL"))
    if roll < 0.95 or depth <= 0:
        return "-" + _operand(rng, depth)
    return "(" + _condition(rng, depth - 1) + ")"


def _condition(rng: random.Random, depth: int) -> str:
    roll = rng.random()
    left = _operand(rng, depth)
    if depth > 0 and roll < 0.25:
        joiner = rng.choice((" AND ", " OR "))
        return _condition(rng, depth - 1) + joiner + _condition(rng, depth - 1)
    if depth > 0 and roll < 0.32:
        return "NOT " + _condition(rng, depth - 1)
    if roll < 0.6:
        operator = rng.choice(("=", "<>", ">", ">=", "<", "<="))
        return f"{left} {operator} {_operand(rng, depth)}"
    if roll < 0.72:
        negated = rng.choice(("", "NOT "))
        return f"{left} {negated}BETWEEN {_operand(rng, depth)} AND {_operand(rng, depth)}"
    if roll < 0.84:
        negated = rng.choice(("", "NOT "))
        listed = ", ".join(rng.sample(_STRINGS, rng.randint(1, 3)))
        return f"{left} {negated}IN ({listed})"
    if roll < 0.94:
        return f"{left} IS {rng.choice(('', 'NOT '))}NULL"
    return left


def random_cases(seed: int, count: int) -> list[tuple[str, dict[str, str]]]:
    """``count`` generated (expression, properties) pairs; the same for the same seed."""
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        expression = _condition(rng, 2)
        properties = {name: rng.choice(_PROPERTY_VALUES) for name in _NAMES if rng.random() < 0.7}
        cases.append((expression, properties))
    return cases
