"""The Java client scenarios: what each driver is given, what its result must show on any
broker, and what rmq still lacks for it.

A `Scenario` names its driver (conformance/drivers, `Driver <driver>`), extra spec keys, and
`checks`: assertions on the result that hold for a correct broker (they are what make the
Apache run a proof of the scenario).  The rmq run must pass the same checks and produce the
same result as Apache after `normalise`.  `missing` names the feature rmq lacks: the rmq run
is then a strict expected failure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

Result = dict[str, Any]


@dataclass(frozen=True)
class Scenario:
    name: str
    driver: str
    spec: Mapping[str, Any] = field(default_factory=dict)
    checks: Callable[[Result], None] | None = None
    missing: str | None = None
    ignore: tuple[str, ...] = ()
    """Result keys not compared between Apache and rmq (still checked by `checks`)."""
    props: Mapping[str, str] = field(default_factory=dict)
    """JVM system properties of the driver (the Java client reads some options only there)."""


def received_all(count: int) -> Callable[[Result], None]:
    """Checks: `count` messages received, queue offsets dense, each where its send said."""

    def check(result: Result) -> None:
        assert result["count"] == count, f"received {result['count']} of {count}"
        assert result.get("denseOffsets", True), "queue offsets are not dense"
        assert result.get("sentWhereReceived", True), "messages not where the send said"

    return check


def normalise(result: Result, scenario: Scenario) -> Result:
    return {key: value for key, value in result.items() if key not in scenario.ignore}
