"""Values no process can run with are refused wherever properties are applied (a `-c` file or
UPDATE_BROKER_CONFIG), naming the key and the allowed values, and nothing is changed."""

from __future__ import annotations

import pytest

from rmq.common.config import (
    BrokerConfig,
    ConfigError,
    MessageStoreConfig,
    build_namesrv_configs,
    update_config,
)


@pytest.mark.parametrize(
    ("key", "value", "allowed"),
    [
        ("maxMessageSize", "-5", ">= 1"),
        ("mappedFileSizeCommitLog", "0", ">= 1"),
        ("mappedFileSizeConsumeQueue", "0", ">= 1"),
        ("brokerPermission", "99", "0..15"),
        ("brokerPermission", "-1", "0..15"),
        ("storePathRootDir", " ", "not an empty value"),
    ],
)
def test_update_config_refuses_a_value_out_of_range(key: str, value: str, allowed: str) -> None:
    broker, store = BrokerConfig(), MessageStoreConfig()
    before = (broker.broker_permission, store.max_message_size, store.store_path_root_dir)

    with pytest.raises(ConfigError) as error:
        update_config({"flushDiskType": "SYNC_FLUSH", key: value}, broker, store)

    assert error.value.key == key
    assert allowed in str(error.value)
    assert (broker.broker_permission, store.max_message_size, store.store_path_root_dir) == before
    assert store.flush_disk_type.value == "ASYNC_FLUSH"


def test_a_consume_queue_size_is_rounded_as_apache_does() -> None:
    store = MessageStoreConfig()
    update_config({"mappedFileSizeConsumeQueue": "7"}, store)

    assert store.mapped_file_size_consume_queue == 20


@pytest.mark.parametrize("port", ["65536", "-1"])
def test_a_name_server_port_out_of_range_is_refused(port: str) -> None:
    with pytest.raises(ConfigError, match=r"listenPort=.*expected 0\.\.65535"):
        build_namesrv_configs({"listenPort": port})
