"""SubscriptionGroupManager: consumer-group settings and subscriptionGroup.json."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmq.common.config import BrokerConfig
from rmq.remoting.bodies import SubscriptionGroupConfig
from rmq.server.broker.subscription.subscriptiongroup import SubscriptionGroupManager
from rmq.store.configfile import ConfigFileError

PREDEFINED = [
    "TOOLS_CONSUMER",
    "FILTERSRV_CONSUMER",
    "SELF_TEST_C_GROUP",
    "CID_ONS-HTTP-PROXY",
    "CID_ONSAPI_PULL",
    "CID_ONSAPI_PERMISSION",
    "CID_ONSAPI_OWNER",
]


def make_manager(tmp_path: Path, *, auto_create: bool = True) -> SubscriptionGroupManager:
    broker_config = BrokerConfig(broker_name="broker-a", auto_create_subscription_group=auto_create)
    return SubscriptionGroupManager(broker_config, tmp_path / "config" / "subscriptionGroup.json")


def pretty_group(name: str, *, retry_max_times: int = 16) -> str:
    """One subscriptionGroupTable entry, as fastjson's pretty format writes it."""
    return (
        f'\t\t"{name}":{{\n'
        '\t\t\t"brokerId":0,\n'
        '\t\t\t"consumeBroadcastEnable":true,\n'
        '\t\t\t"consumeEnable":true,\n'
        '\t\t\t"consumeFromMinEnable":true,\n'
        f'\t\t\t"groupName":"{name}",\n'
        '\t\t\t"notifyConsumerIdsChangedEnable":true,\n'
        f'\t\t\t"retryMaxTimes":{retry_max_times},\n'
        '\t\t\t"retryQueueNums":1,\n'
        '\t\t\t"whichBrokerWhenConsumeSlowly":1\n'
        "\t\t}"
    )


def test_predefined_groups_have_the_default_settings(tmp_path: Path) -> None:
    manager = make_manager(tmp_path)
    assert list(manager.subscription_group_table) == PREDEFINED
    for name, config in manager.subscription_group_table.items():
        assert config == SubscriptionGroupConfig(group_name=name)
    assert manager.data_version.counter == 0


def test_find_auto_creates_when_enabled(tmp_path: Path) -> None:
    manager = make_manager(tmp_path)
    assert manager.find("g1", auto_create=False) is None
    assert manager.data_version.counter == 0

    config = manager.find("g1", auto_create=True)
    assert config == SubscriptionGroupConfig(group_name="g1")
    assert manager.data_version.counter == 1
    assert '"g1":{' in manager.path.read_text(encoding="utf-8")

    assert manager.find("g1", auto_create=True) is config
    assert manager.find("g1", auto_create=False) is config
    assert manager.data_version.counter == 1


def test_find_without_auto_create_only_creates_system_groups(tmp_path: Path) -> None:
    manager = make_manager(tmp_path, auto_create=False)
    assert manager.find("g1", auto_create=True) is None
    assert "g1" not in manager.subscription_group_table
    assert manager.find("TOOLS_CONSUMER", auto_create=True) is not None

    system = manager.find("CID_RMQ_SYS_TRANS", auto_create=True)
    assert system == SubscriptionGroupConfig(group_name="CID_RMQ_SYS_TRANS")
    assert manager.data_version.counter == 1


def test_update_and_delete(tmp_path: Path) -> None:
    manager = make_manager(tmp_path)
    manager.update(SubscriptionGroupConfig(group_name="g1", retry_max_times=3))
    changed = SubscriptionGroupConfig(group_name="g1", consume_enable=False)
    manager.update(changed)
    assert manager.find("g1", auto_create=False) is changed
    assert manager.data_version.counter == 2

    assert manager.delete("g1")
    assert manager.find("g1", auto_create=False) is None
    assert manager.data_version.counter == 3
    assert not manager.delete("g1")
    assert manager.data_version.counter == 3


def test_subscription_group_json_is_written_in_fastjson_pretty_format(tmp_path: Path) -> None:
    manager = make_manager(tmp_path)
    manager.update(SubscriptionGroupConfig(group_name="g1", retry_max_times=3))
    entries = [pretty_group(name) for name in PREDEFINED]
    entries.append(pretty_group("g1", retry_max_times=3))
    expected = (
        "{\n"
        '\t"dataVersion":{\n'
        '\t\t"counter":1,\n'
        f'\t\t"timestamp":{manager.data_version.timestamp}\n'
        "\t},\n"
        '\t"subscriptionGroupTable":{\n' + ",\n".join(entries) + "\n\t}\n"
        "}"
    )
    assert manager.path.read_text(encoding="utf-8") == expected


APACHE_SUBSCRIPTION_GROUP_JSON = """{
\t"dataVersion":{
\t\t"counter":9,
\t\t"timestamp":1700000000000
\t},
\t"subscriptionGroupTable":{
\t\t"TOOLS_CONSUMER":{
\t\t\t"brokerId":0,
\t\t\t"consumeBroadcastEnable":true,
\t\t\t"consumeEnable":false,
\t\t\t"consumeFromMinEnable":true,
\t\t\t"groupName":"TOOLS_CONSUMER",
\t\t\t"notifyConsumerIdsChangedEnable":true,
\t\t\t"retryMaxTimes":16,
\t\t\t"retryQueueNums":1,
\t\t\t"whichBrokerWhenConsumeSlowly":1
\t\t},
\t\t"please_rename_unique_group_name_4":{
\t\t\t"brokerId":1,
\t\t\t"consumeBroadcastEnable":false,
\t\t\t"consumeEnable":true,
\t\t\t"consumeFromMinEnable":false,
\t\t\t"groupName":"please_rename_unique_group_name_4",
\t\t\t"notifyConsumerIdsChangedEnable":false,
\t\t\t"retryMaxTimes":3,
\t\t\t"retryQueueNums":2,
\t\t\t"whichBrokerWhenConsumeSlowly":2
\t\t}
\t}
}"""


def test_load_an_apache_subscription_group_json(tmp_path: Path) -> None:
    manager = make_manager(tmp_path)
    manager.path.parent.mkdir(parents=True)
    manager.path.write_text(APACHE_SUBSCRIPTION_GROUP_JSON, encoding="utf-8")
    manager.load()

    assert (manager.data_version.counter, manager.data_version.timestamp) == (9, 1700000000000)
    tools = manager.find("TOOLS_CONSUMER", auto_create=False)
    assert tools is not None and not tools.consume_enable, "stored settings win"
    assert manager.find("please_rename_unique_group_name_4", auto_create=False) == (
        SubscriptionGroupConfig(
            group_name="please_rename_unique_group_name_4",
            consume_from_min_enable=False,
            consume_broadcast_enable=False,
            retry_queue_nums=2,
            retry_max_times=3,
            broker_id=1,
            which_broker_when_consume_slowly=2,
            notify_consumer_ids_changed_enable=False,
        )
    )
    assert set(PREDEFINED) <= set(manager.subscription_group_table)


def test_load_falls_back_to_the_backup_and_refuses_garbage(tmp_path: Path) -> None:
    manager = make_manager(tmp_path)
    manager.path.parent.mkdir(parents=True)
    manager.path.write_text("", encoding="utf-8")
    backup = manager.path.with_name("subscriptionGroup.json.bak")
    backup.write_text(APACHE_SUBSCRIPTION_GROUP_JSON, encoding="utf-8")
    manager.load()
    assert manager.data_version.counter == 9

    backup.write_text("{", encoding="utf-8")
    manager.path.write_text("[1,", encoding="utf-8")
    with pytest.raises(ConfigFileError):
        make_manager(tmp_path).load()


def test_wrapper_and_restart(tmp_path: Path) -> None:
    manager = make_manager(tmp_path)
    manager.find("g1", auto_create=True)
    manager.update(SubscriptionGroupConfig(group_name="g2", retry_queue_nums=4))
    wrapper = manager.subscription_group_wrapper()
    assert wrapper.data_version == manager.data_version
    assert wrapper.subscription_group_table == dict(manager.subscription_group_table)

    restarted = make_manager(tmp_path)
    restarted.load()
    assert restarted.data_version == manager.data_version
    assert dict(restarted.subscription_group_table) == dict(manager.subscription_group_table)
