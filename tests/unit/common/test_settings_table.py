"""The settings table (tests/settings_table.py) against the declarations, in one process: it
names every key once, every bad value stops a start with a ConfigError naming the key, value
and what is allowed, and every good value starts.  The same table drives the raw-frame test of
UPDATE_BROKER_CONFIG / UPDATE_NAMESRV_CONFIG (tests/integration/test_settings_update.py)."""

from __future__ import annotations

import pytest

from rmq.common.config import (
    ConfigError,
    ConfigObject,
    build_broker_configs,
    build_namesrv_configs,
    canonical_options,
)
from tests.settings_table import BROKER, NAMESRV, Key


def _keys(*configs: ConfigObject) -> list[str]:
    keys: list[str] = []
    for config in configs:
        keys += [o.key for o in canonical_options(config) if o.key not in keys]
    return keys


def test_the_table_names_every_key_once() -> None:
    broker, _ = build_broker_configs({})
    namesrv, _ = build_namesrv_configs({})
    broker_rows = [row.key for row in BROKER]
    namesrv_rows = [row.key for row in NAMESRV]
    assert len(set(broker_rows)) == len(broker_rows)
    assert len(set(namesrv_rows)) == len(namesrv_rows)
    assert sorted(broker_rows) == sorted(_keys(*broker.all()))
    assert sorted(namesrv_rows) == sorted(_keys(*namesrv.all()))


def _ids(row: Key) -> str:
    return row.key


@pytest.mark.parametrize("row", [r for r in BROKER if r.bad is not None], ids=_ids)
def test_a_bad_broker_value_stops_the_start(row: Key) -> None:
    assert row.bad is not None
    with pytest.raises(ConfigError) as caught:
        build_broker_configs({row.key: row.bad}, config_file="broker.conf")
    message = str(caught.value)
    assert (caught.value.key, caught.value.value) == (row.key, row.bad)
    assert message.startswith("broker.conf: ")
    assert f"{row.key}=" in message and "expected " in message


@pytest.mark.parametrize("row", [r for r in NAMESRV if r.bad is not None], ids=_ids)
def test_a_bad_namesrv_value_stops_the_start(row: Key) -> None:
    assert row.bad is not None
    with pytest.raises(ConfigError) as caught:
        build_namesrv_configs({row.key: row.bad}, config_file="namesrv.conf")
    assert (caught.value.key, caught.value.value) == (row.key, row.bad)
    assert "expected " in str(caught.value)


def test_every_good_value_starts() -> None:
    _, unknown = build_broker_configs({row.key: row.good for row in BROKER})
    assert unknown == []
    _, unknown = build_namesrv_configs({row.key: row.good for row in NAMESRV})
    assert unknown == []
