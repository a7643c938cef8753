"""Java client scenarios of the producer side: DefaultMQProducer sends of every kind,
TransactionMQProducer, request-reply, message trace and the wire options of the client."""

from __future__ import annotations

from tests.conformance.scenarios import Scenario, received_all

SCENARIOS: list[Scenario] = [
    Scenario(
        "producer sync send",
        "ProducerScenarios.sync",
        {"count": 20, "topics": {"ConfSync": 4}, "topic": "ConfSync"},
        received_all(20),
    ),
]
