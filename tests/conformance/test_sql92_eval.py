"""SQL92 selectors: rmq's parser and evaluator against Apache's (no servers involved).

The table of tests/unit/common/sqlcases.py and a few hundred generated expressions are
compiled and evaluated by Apache 4.9.8's own filter module (conformance/drivers SqlEval.java)
and by rmq.common.sqlfilter: the table's outcomes must be Apache's, and rmq's must equal
Apache's for every case (compiles or not; true, false, null or an evaluation error).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conformance.java import ensure_built, run_driver
from tests.unit.common.sqlcases import CASES, random_cases
from tests.unit.common.test_sqlfilter import outcome


def apache_outcomes(cases: list[tuple[str, dict[str, str]]], home: Path) -> list[str]:
    ensure_built()
    spec = {"cases": [{"expression": e, "properties": p} for e, p in cases]}
    results = run_driver("SqlEval.evaluate", spec, home=home)["results"]
    return [r["value"] if r["compiled"] else "invalid" for r in results]


def _differences(
    cases: list[tuple[str, dict[str, str]]], first: list[str], second: list[str]
) -> list[tuple[str, dict[str, str], str, str]]:
    return [
        (case[0], case[1], one, other)
        for case, one, other in zip(cases, first, second, strict=True)
        if one != other
    ]


@pytest.mark.matrix("SQL92 selectors", "case table (Apache's answers)", "rmq")
def test_table_is_apaches_and_rmqs(tmp_path: Path) -> None:
    cases = [(e, p) for e, p, _ in CASES]
    apache = apache_outcomes(cases, tmp_path)
    assert _differences(cases, [expected for _, _, expected in CASES], apache) == []
    assert _differences(cases, apache, [outcome(e, p) for e, p in cases]) == []


@pytest.mark.matrix("SQL92 selectors", "generated expressions", "rmq")
def test_generated_expressions_agree(tmp_path: Path) -> None:
    cases = random_cases(seed=13, count=600)
    apache = apache_outcomes(cases, tmp_path)
    assert len(set(apache)) == 5, "the generated cases must reach every outcome"
    assert _differences(cases, apache, [outcome(e, p) for e, p in cases]) == []
