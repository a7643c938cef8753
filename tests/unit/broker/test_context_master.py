"""The master addresses a broker context keeps from its registration results."""

from __future__ import annotations

from pathlib import Path

from tests.unit.broker.helpers import make_broker


def test_registration_results_set_the_master_and_notify(tmp_path: Path) -> None:
    broker = make_broker(tmp_path, broker={"broker_id": 1})
    calls: list[tuple[str | None, str | None]] = []
    broker.master_listeners.append(
        lambda: calls.append((broker.master_addr, broker.ha_master_addr))
    )
    try:
        assert (broker.master_addr, broker.ha_master_addr) == (None, None)
        broker.set_master("10.0.0.1:10911", "10.0.0.2:10912")
        broker.set_master("10.0.0.1:10911", "10.0.0.2:10912")
        broker.set_master(None, None)
        # a result without haServerAddr keeps the HA address (Apache updates it only when set)
        assert calls == [("10.0.0.1:10911", "10.0.0.2:10912"), (None, "10.0.0.2:10912")]
    finally:
        broker.store.shutdown()


def test_configured_ha_master_address_wins(tmp_path: Path) -> None:
    broker = make_broker(tmp_path, store={"ha_master_address": "10.9.9.9:20912"})
    short = make_broker(tmp_path / "short", store={"ha_master_address": "a:1"})
    try:
        assert broker.ha_master_addr == "10.9.9.9:20912"
        broker.set_master("10.0.0.1:10911", "10.0.0.2:10912")
        assert (broker.master_addr, broker.ha_master_addr) == ("10.0.0.1:10911", "10.9.9.9:20912")
        assert short.ha_master_addr is None  # Apache ignores a value under 6 characters
    finally:
        broker.store.shutdown()
        short.store.shutdown()
