"""Values no process can run with are refused wherever properties are applied (a `-c` file or
UPDATE_BROKER_CONFIG), naming the key and the allowed values, and nothing is changed."""

from __future__ import annotations

import pytest

from rmq.common.config import (
    ConfigError,
    MessageStoreConfig,
    broker_settings,
    build_broker_configs,
    build_namesrv_configs,
)


@pytest.mark.parametrize(
    ("key", "value", "allowed"),
    [
        ("maxMessageSize", "-5", "1..2147483647 (bytes)"),
        ("mappedFileSizeCommitLog", "0", "1..2147483647"),
        ("mappedFileSizeConsumeQueue", "0", "1..2147483647"),
        ("brokerPermission", "99", "0..15"),
        ("brokerPermission", "-1", "0..15"),
        ("storePathRootDir", " ", "a non-empty value"),
        ("fileReservedTime", "-1", "1..2147483647 (hours)"),
        ("deleteWhen", "xx", "hours of the day 0..23"),
        ("brokerIP1", "999.1.1.1", "an IPv4 or IPv6 address"),
        ("maxHashSlotNum", "0", "1..2147483647"),
    ],
)
def test_an_update_refuses_a_value_out_of_range(key: str, value: str, allowed: str) -> None:
    configs, _ = build_broker_configs({})
    settings = broker_settings(configs, {})
    before = settings.properties()

    with pytest.raises(ConfigError) as error:
        settings.update({"flushDiskType": "SYNC_FLUSH", "brokerPermission": "4", key: value})

    assert (error.value.key, error.value.value) == (key, value)
    assert f"{key}={value!r}: expected " in str(error.value)
    assert allowed in str(error.value)
    assert settings.properties() == before
    assert configs.broker.broker_permission == 6


def test_keys_that_must_fit_together_are_checked_together() -> None:
    configs, _ = build_broker_configs({})
    settings = broker_settings(configs, {})
    before = settings.properties()
    for props, words in [
        ({"writeBufferHighWaterMark": "1000", "writeBufferLowWaterMark": "2000"}, "low <= high"),
        ({"maxHashSlotNum": "500000000", "maxIndexNum": "100000000"}, "index files"),
        ({"brokerRole": "SLAVE"}, "a SLAVE's brokerId must be > 0"),
    ]:
        with pytest.raises(ConfigError, match=words):
            settings.update(props)
        assert settings.properties() == before
    with pytest.raises(ConfigError, match="writeBufferLowWaterMark=2000 is above"):
        build_broker_configs(
            {"writeBufferHighWaterMark": "1000", "writeBufferLowWaterMark": "2000"}
        )


def test_a_restart_only_change_waits_for_the_restart() -> None:
    configs, _ = build_broker_configs({})
    settings = broker_settings(configs, {"customKey": "kept"})

    notes = settings.update({"maxMessageSize": "1000", "brokerRole": "SLAVE", "brokerId": "2"})

    assert notes == [
        "maxMessageSize takes effect after a restart",
        "brokerRole takes effect after a restart",
    ]
    assert configs.store.max_message_size == 4 * 1024 * 1024
    assert configs.store.broker_role.value == "ASYNC_MASTER"
    assert configs.broker.broker_id == 2
    shown = settings.properties()
    assert (shown["maxMessageSize"], shown["brokerRole"], shown["customKey"]) == (
        "1000",
        "SLAVE",
        "kept",
    )
    # the saved change is checked with the next ones: a SLAVE needs brokerId > 0
    with pytest.raises(ConfigError, match="a SLAVE's brokerId must be > 0"):
        settings.update({"brokerId": "0"})
    with pytest.raises(ConfigError, match="unknown key customKey"):
        settings.update({"customKey": "changed"})


def test_a_consume_queue_size_is_rounded_as_apache_does() -> None:
    store, _ = build_broker_configs({"mappedFileSizeConsumeQueue": "7"})
    assert store.store.mapped_file_size_consume_queue == 20
    assert MessageStoreConfig(mapped_file_size_consume_queue=7).mapped_file_size_consume_queue == 20


@pytest.mark.parametrize("port", ["65536", "-1"])
def test_a_name_server_port_out_of_range_is_refused(port: str) -> None:
    with pytest.raises(ConfigError, match=r"listenPort=.*expected a whole number 0\.\.65535"):
        build_namesrv_configs({"listenPort": port})
