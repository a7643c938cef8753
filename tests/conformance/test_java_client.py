"""Apache's Java client (4.9.8) against Apache's broker and against rmq's: every scenario of
tests/conformance/scenarios.py, differential (the Apache result is the expected one)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.conformance import consumer_scenarios, producer_scenarios
from tests.conformance.clusters import Cluster
from tests.conformance.conftest import Differential
from tests.conformance.java import run_driver
from tests.conformance.scenarios import Scenario, normalise

SECTION = "Java client scenarios"
SCENARIOS = producer_scenarios.SCENARIOS + consumer_scenarios.SCENARIOS


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower()


def _run(scenario: Scenario, cluster: Cluster, home: Path) -> dict[str, Any]:
    slug = _slug(scenario.name)
    spec = {
        "namesrv": cluster.namesrv_addr,
        "topic": f"Conf-{slug}",
        "group": f"CG-{slug}",
        **scenario.spec,
    }
    result = run_driver(
        scenario.driver, spec, home=home / cluster.kind / slug, props=scenario.props
    )
    if scenario.checks is not None:
        scenario.checks(result)
    return result


def _cases() -> list[Any]:
    cases = []
    for scenario in SCENARIOS:
        for kind in ("apache", "rmq"):
            marks = [
                pytest.mark.matrix(SECTION, scenario.name, "Apache" if kind == "apache" else "rmq")
            ]
            if kind == "rmq" and scenario.missing:
                marks.append(pytest.mark.xfail(strict=True, reason=f"missing {scenario.missing}"))
            cases.append(
                pytest.param(scenario, kind, marks=marks, id=f"{_slug(scenario.name)}-{kind}")
            )
    return cases


@pytest.mark.parametrize(("scenario", "kind"), _cases())
def test_scenario(
    scenario: Scenario,
    kind: str,
    request: pytest.FixtureRequest,
    differential: Differential,
    java_home: Path,
) -> None:
    expected = differential.apache_result(
        scenario.name, lambda apache: _run(scenario, apache, java_home)
    )
    if kind == "apache":
        return
    rmq: Cluster = request.getfixturevalue("rmq")
    actual = _run(scenario, rmq, java_home)
    assert normalise(actual, scenario) == normalise(expected, scenario)
