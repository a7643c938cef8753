"""Java client scenarios of the consumer side: push consumers (concurrently, orderly,
clustering, broadcasting, filters, where to start, retries to the DLQ), the lite pull consumer
and the pull consumer."""

from __future__ import annotations

from tests.conformance.scenarios import Scenario

SCENARIOS: list[Scenario] = []
