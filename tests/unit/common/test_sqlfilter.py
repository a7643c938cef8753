"""The SQL92 selector parser and evaluator (rmq.common.sqlfilter) against Apache's answers.

The table (tests/unit/common/sqlcases.py) is checked against Apache's own evaluator by the
conformance suite; here rmq is held to it, and properties of the evaluation that hold for
every input are checked with generated ones.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rmq.common.sqlfilter import (
    SqlEvaluationError,
    SqlSyntaxError,
    compile_selector,
)
from tests.unit.common.sqlcases import CASES


def outcome(expression: str, properties: dict[str, str]) -> str:
    """What rmq makes of one case, in the table's terms."""
    try:
        selector = compile_selector(expression)
    except SqlSyntaxError:
        return "invalid"
    try:
        value = selector.evaluate(properties)
    except SqlEvaluationError:
        return "error"
    return "null" if value is None else str(value).lower()


@pytest.mark.parametrize(("expression", "properties", "expected"), CASES)
def test_case_table(expression: str, properties: dict[str, str], expected: str) -> None:
    assert outcome(expression, properties) == expected


def test_syntax_error_names_the_column() -> None:
    with pytest.raises(SqlSyntaxError) as raised:
        compile_selector("a > 1 AND b >")
    assert raised.value.position == 13
    assert "column 14" in str(raised.value)
    with pytest.raises(SqlSyntaxError, match="column 3: unexpected character '#'"):
        compile_selector("a # 1")


def test_matches_only_true() -> None:
    selector = compile_selector("a > 14")
    assert selector.matches({"a": "15"})
    assert not selector.matches({"a": "14"})
    assert not selector.matches({})
    assert not selector.matches({"a": "x"})


@given(st.integers(min_value=-(2**31), max_value=2**31 - 1), st.integers(-1000, 1000))
def test_integer_comparisons_follow_numbers(value: int, bound: int) -> None:
    properties = {"a": str(value)}
    assert compile_selector(f"a > {bound}").matches(properties) is (value > bound)
    assert compile_selector(f"a <= {bound}").matches(properties) is (value <= bound)
    assert compile_selector(f"a = {bound}").matches(properties) is (value == bound)
    assert compile_selector(f"a <> {bound}").matches(properties) is (value != bound)


@given(
    st.integers(-50, 50),
    st.integers(-50, 50),
    st.integers(-50, 50),
)
def test_between_is_both_bounds(value: int, low: int, high: int) -> None:
    low, high = min(low, high), max(low, high)
    properties = {"a": str(value)}
    inside = low <= value <= high
    assert compile_selector(f"a BETWEEN {low} AND {high}").matches(properties) is inside
    assert compile_selector(f"a NOT BETWEEN {low} AND {high}").matches(properties) is not inside


@given(st.text(max_size=8), st.lists(st.text(max_size=4), min_size=1, max_size=4))
def test_in_is_membership(value: str, listed: list[str]) -> None:
    literal = ", ".join("'" + item.replace("'", "''") + "'" for item in listed)
    properties = {"a": value}
    assert compile_selector(f"a IN ({literal})").matches(properties) is (value in listed)
    assert compile_selector(f"a NOT IN ({literal})").matches(properties) is (value not in listed)


_LITERAL_VALUES = {"TRUE": True, "FALSE": False, "NULL": None}


def _kleene_and(left: bool | None, right: bool | None) -> bool | None:
    if left is False or right is False:
        return False
    return None if left is None or right is None else True


@pytest.mark.parametrize("left", list(_LITERAL_VALUES))
@pytest.mark.parametrize("right", list(_LITERAL_VALUES))
def test_logic_is_three_valued(left: str, right: str) -> None:
    lv, rv = _LITERAL_VALUES[left], _LITERAL_VALUES[right]
    assert compile_selector(f"{left} AND {right}").evaluate({}) is _kleene_and(lv, rv)
    negated = _kleene_and(None if lv is None else not lv, None if rv is None else not rv)
    expected_or = None if negated is None else not negated
    assert compile_selector(f"{left} OR {right}").evaluate({}) is expected_or
    assert compile_selector(f"NOT {left}").evaluate({}) is (None if lv is None else not lv)
