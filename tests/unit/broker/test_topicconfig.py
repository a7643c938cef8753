"""TopicConfigManager: the broker's topics, auto-creation and topics.json."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rmq.common.config import BrokerConfig
from rmq.remoting.bodies import TopicConfig, TopicFilterType
from rmq.server.broker.topic.topicconfig import TopicConfigError, TopicConfigManager
from rmq.store.configfile import ConfigFileError

# (name, read/write queue nums, perm) of the topics a default broker named broker-a creates.
DEFAULT_BROKER_TOPICS = [
    ("SELF_TEST_TOPIC", 1, 6),
    ("TBW102", 8, 7),
    ("BenchmarkTest", 1024, 6),
    ("DefaultCluster", 16, 7),
    ("broker-a", 1, 7),
    ("OFFSET_MOVED_EVENT", 1, 6),
    ("SCHEDULE_TOPIC_XXXX", 18, 6),
    ("DefaultCluster_REPLY_TOPIC", 1, 6),
]


def make_manager(
    tmp_path: Path, registered: list[TopicConfig] | None = None, **config: Any
) -> TopicConfigManager:
    broker_config = BrokerConfig(broker_name="broker-a", **config)
    hook = registered.append if registered is not None else None
    return TopicConfigManager(broker_config, tmp_path / "config" / "topics.json", on_register=hook)


def summary(manager: TopicConfigManager) -> list[tuple[str, int, int]]:
    return [
        (name, config.write_queue_nums, config.perm)
        for name, config in manager.topic_config_table.items()
    ]


def pretty_topic(name: str, queues: int, perm: int, *, filter_type: str = "SINGLE_TAG") -> str:
    """One topicConfigTable entry of topics.json, as fastjson's pretty format writes it."""
    return (
        f'\t\t"{name}":{{\n'
        '\t\t\t"order":false,\n'
        f'\t\t\t"perm":{perm},\n'
        f'\t\t\t"readQueueNums":{queues},\n'
        f'\t\t\t"topicFilterType":"{filter_type}",\n'
        f'\t\t\t"topicName":"{name}",\n'
        '\t\t\t"topicSysFlag":0,\n'
        f'\t\t\t"writeQueueNums":{queues}\n'
        "\t\t}"
    )


def test_broker_topics_with_the_default_config(tmp_path: Path) -> None:
    manager = make_manager(tmp_path)
    assert summary(manager) == DEFAULT_BROKER_TOPICS
    for name, config in manager.topic_config_table.items():
        assert config.read_queue_nums == config.write_queue_nums, name
        assert config.topic_filter_type is TopicFilterType.SINGLE_TAG
        assert manager.is_system_topic(name), name
    assert manager.select("RMQ_SYS_TRACE_TOPIC") is None
    assert manager.data_version.counter == 0
    assert not manager.path.exists(), "nothing is written before the first change"


def test_broker_topics_with_auto_create_off_and_trace_on(tmp_path: Path) -> None:
    manager = make_manager(
        tmp_path,
        auto_create_topic_enable=False,
        cluster_topic_enable=False,
        broker_topic_enable=False,
        trace_topic_enable=True,
        msg_trace_topic_name="my_trace",
        broker_cluster_name="c1",
    )
    assert summary(manager) == [
        ("SELF_TEST_TOPIC", 1, 6),
        ("BenchmarkTest", 1024, 6),
        ("c1", 16, 1),
        ("broker-a", 1, 1),
        ("OFFSET_MOVED_EVENT", 1, 6),
        ("SCHEDULE_TOPIC_XXXX", 18, 6),
        ("my_trace", 1, 6),
        ("c1_REPLY_TOPIC", 1, 6),
    ]
    assert manager.broker_topics == {"c1", "broker-a", "c1_REPLY_TOPIC", "my_trace"}


def test_system_topic_checks(tmp_path: Path) -> None:
    manager = make_manager(tmp_path, msg_trace_topic_name="my_trace")
    for topic in ("TBW102", "DefaultCluster", "broker-a", "DefaultCluster_REPLY_TOPIC"):
        assert manager.is_system_topic(topic)
    assert manager.is_system_topic("rmq_sys_anything")
    assert manager.is_system_topic("RMQ_SYS_TRANS_HALF_TOPIC")
    assert not manager.is_system_topic("my_trace"), "a disabled trace topic is not reserved"
    assert not manager.is_system_topic("TopicTest")


def test_auto_create_from_tbw102_takes_the_smaller_queue_count(tmp_path: Path) -> None:
    registered: list[TopicConfig] = []
    manager = make_manager(tmp_path, registered)

    config, created = manager.create_in_send_message("TopicA", "TBW102", "10.0.0.9:5000", 4, 0)
    assert created
    assert config == TopicConfig(topic_name="TopicA", read_queue_nums=4, write_queue_nums=4)
    assert registered == [config]
    assert manager.data_version.counter == 1
    assert '"TopicA":{' in manager.path.read_text(encoding="utf-8")

    big, created = manager.create_in_send_message("TopicB", "TBW102", "10.0.0.9:5000", 64, 2)
    assert created and big is not None
    assert (big.read_queue_nums, big.write_queue_nums, big.perm) == (8, 8, 6)
    assert big.topic_sys_flag == 2

    again, created = manager.create_in_send_message("TopicA", "TBW102", "10.0.0.9:5000", 4, 0)
    assert again is config and not created
    assert len(registered) == 2
    assert manager.data_version.counter == 2


def test_auto_create_from_the_cluster_topic(tmp_path: Path) -> None:
    manager = make_manager(tmp_path)
    config, created = manager.create_in_send_message("T", "DefaultCluster", "c", 32, 0)
    assert created and config is not None
    assert (config.write_queue_nums, config.perm) == (16, 6)


def test_auto_create_refused(tmp_path: Path) -> None:
    registered: list[TopicConfig] = []
    manager = make_manager(tmp_path, registered, auto_create_topic_enable=False)
    assert manager.create_in_send_message("TopicA", "TBW102", "c", 4, 0) == (None, False)
    assert manager.create_in_send_message("TopicA", "NoSuchTopic", "c", 4, 0) == (None, False)

    manager = make_manager(tmp_path / "second", registered)
    manager.update(TopicConfig(topic_name="Plain", read_queue_nums=2, write_queue_nums=2))
    registered.clear()
    assert manager.create_in_send_message("TopicA", "Plain", "c", 4, 0) == (None, False)
    assert manager.select("TopicA") is None
    assert registered == []


def test_stored_tbw102_loses_inherit_when_auto_create_is_off(tmp_path: Path) -> None:
    first = make_manager(tmp_path)
    first.create_in_send_message("TopicA", "TBW102", "c", 4, 0)  # writes topics.json with TBW102

    manager = make_manager(tmp_path, auto_create_topic_enable=False)
    manager.load()
    tbw102 = manager.select("TBW102")
    assert tbw102 is not None and tbw102.perm == 7
    assert manager.create_in_send_message("TopicB", "TBW102", "c", 4, 0) == (None, False)
    tbw102 = manager.select("TBW102")
    assert tbw102 is not None and tbw102.perm == 6


def test_retry_topic_created_once(tmp_path: Path) -> None:
    registered: list[TopicConfig] = []
    manager = make_manager(tmp_path, registered)
    config = manager.create_retry_topic_if_absent("%RETRY%g1", 1, 6)
    assert config == TopicConfig(topic_name="%RETRY%g1", read_queue_nums=1, write_queue_nums=1)
    assert manager.create_retry_topic_if_absent("%RETRY%g1", 3, 2) is config
    assert registered == [config]
    assert manager.data_version.counter == 1

    unit = manager.create_retry_topic_if_absent("%DLQ%g1", 1, 6, topic_sys_flag=2)
    assert unit.topic_sys_flag == 2


@pytest.mark.parametrize(
    ("topic", "remark"),
    [
        ("", "The specified topic is blank."),
        (
            "bad topic",
            "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$",
        ),
        ("t" * 128, "The specified topic is longer than topic max length."),
        ("TBW102", "The topic[TBW102] is conflict with system topic."),
        ("DefaultCluster", "The topic[DefaultCluster] is conflict with system topic."),
        ("broker-a", "The topic[broker-a] is conflict with system topic."),
        ("rmq_sys_x", "The topic[rmq_sys_x] is conflict with system topic."),
    ],
)
def test_update_and_delete_refuse_bad_and_system_topics(
    tmp_path: Path, topic: str, remark: str
) -> None:
    manager = make_manager(tmp_path)
    with pytest.raises(TopicConfigError) as update_error:
        manager.update(TopicConfig(topic_name=topic))
    assert str(update_error.value) == remark
    with pytest.raises(TopicConfigError) as delete_error:
        manager.delete(topic)
    assert str(delete_error.value) == remark
    assert manager.data_version.counter == 0


def test_update_and_delete(tmp_path: Path) -> None:
    registered: list[TopicConfig] = []
    manager = make_manager(tmp_path, registered)
    created = TopicConfig(topic_name="TopicTest", read_queue_nums=4, write_queue_nums=4)
    manager.update(created)
    changed = TopicConfig(topic_name="TopicTest", read_queue_nums=8, write_queue_nums=8, perm=4)
    manager.update(changed)
    assert manager.select("TopicTest") is changed
    assert registered == [created, changed]
    assert manager.data_version.counter == 2

    assert manager.delete("TopicTest")
    assert manager.select("TopicTest") is None
    assert manager.data_version.counter == 3
    assert "TopicTest" not in manager.path.read_text(encoding="utf-8")
    assert not manager.delete("TopicTest")
    assert manager.data_version.counter == 3
    assert registered == [created, changed], "a delete is not registered"


def test_topics_json_is_written_in_fastjson_pretty_format(tmp_path: Path) -> None:
    manager = make_manager(tmp_path)
    manager.update(
        TopicConfig(
            topic_name="TopicTest",
            read_queue_nums=4,
            write_queue_nums=4,
            topic_filter_type=TopicFilterType.MULTI_TAG,
        )
    )
    version = manager.data_version
    entries = [pretty_topic(*topic) for topic in DEFAULT_BROKER_TOPICS]
    entries.append(pretty_topic("TopicTest", 4, 6, filter_type="MULTI_TAG"))
    expected = (
        "{\n"
        '\t"dataVersion":{\n'
        '\t\t"counter":1,\n'
        f'\t\t"timestamp":{version.timestamp}\n'
        "\t},\n"
        '\t"topicConfigTable":{\n' + ",\n".join(entries) + "\n\t}\n"
        "}"
    )
    assert manager.path.read_text(encoding="utf-8") == expected


APACHE_TOPICS_JSON = """{
\t"dataVersion":{
\t\t"counter":5,
\t\t"timestamp":1700000000123
\t},
\t"topicConfigTable":{
\t\t"TopicTest":{
\t\t\t"order":true,
\t\t\t"perm":6,
\t\t\t"readQueueNums":4,
\t\t\t"topicFilterType":"MULTI_TAG",
\t\t\t"topicName":"TopicTest",
\t\t\t"topicSysFlag":0,
\t\t\t"writeQueueNums":4
\t\t},
\t\t"TBW102":{
\t\t\t"order":false,
\t\t\t"perm":7,
\t\t\t"readQueueNums":2,
\t\t\t"topicFilterType":"SINGLE_TAG",
\t\t\t"topicName":"TBW102",
\t\t\t"topicSysFlag":0,
\t\t\t"writeQueueNums":2
\t\t}
\t}
}"""


def test_load_an_apache_topics_json(tmp_path: Path) -> None:
    manager = make_manager(tmp_path)
    manager.path.parent.mkdir(parents=True)
    manager.path.write_text(APACHE_TOPICS_JSON, encoding="utf-8")
    manager.load()

    assert (manager.data_version.counter, manager.data_version.timestamp) == (5, 1700000000123)
    assert manager.select("TopicTest") == TopicConfig(
        topic_name="TopicTest",
        read_queue_nums=4,
        write_queue_nums=4,
        topic_filter_type=TopicFilterType.MULTI_TAG,
        order=True,
    )
    assert manager.is_order_topic("TopicTest")
    tbw102 = manager.select("TBW102")
    assert tbw102 is not None and tbw102.write_queue_nums == 2, "stored settings win"
    assert manager.select("SCHEDULE_TOPIC_XXXX") is not None, "broker topics stay"

    config, _ = manager.create_in_send_message("New", "TBW102", "c", 4, 0)
    assert config is not None and config.write_queue_nums == 2
    assert manager.data_version.counter == 6


def test_load_falls_back_to_the_backup(tmp_path: Path) -> None:
    manager = make_manager(tmp_path)
    manager.path.parent.mkdir(parents=True)
    manager.path.write_text('{"dataVersion":{"coun', encoding="utf-8")
    manager.path.with_name("topics.json.bak").write_text(APACHE_TOPICS_JSON, encoding="utf-8")
    manager.load()
    assert manager.select("TopicTest") is not None
    assert manager.data_version.counter == 5


def test_load_refuses_unreadable_files(tmp_path: Path) -> None:
    manager = make_manager(tmp_path)
    manager.path.parent.mkdir(parents=True)
    manager.path.write_text("not json", encoding="utf-8")
    with pytest.raises(ConfigFileError):
        manager.load()


def test_changes_survive_a_restart(tmp_path: Path) -> None:
    manager = make_manager(tmp_path)
    manager.update(TopicConfig(topic_name="Kept", read_queue_nums=3, write_queue_nums=3))
    manager.create_in_send_message("Auto", "TBW102", "c", 4, 0)
    manager.delete("Kept")
    manager.update(TopicConfig(topic_name="Kept2", read_queue_nums=5, write_queue_nums=5))

    restarted = make_manager(tmp_path)
    restarted.load()
    assert restarted.data_version == manager.data_version
    assert dict(restarted.topic_config_table) == dict(manager.topic_config_table)
    assert restarted.select("Kept") is None


def test_order_topics_from_the_name_server(tmp_path: Path) -> None:
    manager = make_manager(tmp_path)
    manager.update(TopicConfig(topic_name="A"))
    manager.update(TopicConfig(topic_name="B", order=True))
    wrapper_before = manager.topic_config_wrapper()

    manager.update_order_topic_config({"A", "Unknown"})
    assert manager.is_order_topic("A")
    assert not manager.is_order_topic("B")
    assert not manager.is_order_topic("Unknown")
    assert manager.data_version.counter == 3
    assert wrapper_before.topic_config_table["B"].order, "snapshots do not change"

    manager.update_order_topic_config({"A"})
    assert manager.data_version.counter == 3, "no change, no new version"


def test_wrapper_for_registration_of_a_read_only_broker(tmp_path: Path) -> None:
    manager = make_manager(tmp_path)
    manager.update(
        TopicConfig(
            topic_name="T",
            read_queue_nums=2,
            write_queue_nums=3,
            topic_filter_type=TopicFilterType.MULTI_TAG,
            topic_sys_flag=1,
            order=True,
        )
    )
    full = manager.topic_config_wrapper()
    assert full.data_version == manager.data_version
    assert full.topic_config_table == dict(manager.topic_config_table)

    read_only = manager.topic_config_wrapper(broker_permission=4)
    assert read_only.topic_config_table["T"] == TopicConfig(
        topic_name="T", read_queue_nums=2, write_queue_nums=3, perm=4
    )
    assert {config.perm for config in read_only.topic_config_table.values()} == {4}
    assert manager.topic_config_wrapper(broker_permission=6).topic_config_table == dict(
        manager.topic_config_table
    )


def test_next_data_version_is_persisted_without_touching_the_table(tmp_path: Path) -> None:
    registered: list[TopicConfig] = []
    manager = make_manager(tmp_path, registered)
    manager.update(TopicConfig(topic_name="T"))
    before = manager.data_version
    table = dict(manager.topic_config_table)

    manager.next_data_version()

    assert manager.data_version.counter == before.counter + 1
    assert manager.data_version.timestamp >= before.timestamp
    assert dict(manager.topic_config_table) == table
    assert registered == [TopicConfig(topic_name="T")], "the caller decides to re-register"
    restarted = make_manager(tmp_path)
    restarted.load()
    assert restarted.data_version == manager.data_version
