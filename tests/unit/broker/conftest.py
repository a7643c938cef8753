"""Fixtures of the broker unit tests (the harness itself is in ``helpers.py``).

``broker`` is the broker's context of :func:`helpers.make_broker`, its store shut down after
the test.  A module marked ``serving_broker`` (``pytestmark = pytest.mark.serving_broker``)
gets :func:`helpers.serving_broker` under the same name: the broker its tests serve over a
real connection.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rmq.server.broker.context import BrokerContext
from tests.unit.broker.helpers import Clock, running_broker, serving_broker


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "serving_broker: the broker fixture is helpers.serving_broker"
    )


@pytest.fixture
def broker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BrokerContext]:
    served = request.node.get_closest_marker("serving_broker") is not None
    with (serving_broker if served else running_broker)(tmp_path) as running:
        yield running


@pytest.fixture
def clock() -> Clock:
    return Clock()
