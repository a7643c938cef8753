"""Typed name server / broker configuration: keys, defaults, parsing, updates."""

import ipaddress
from pathlib import Path
from typing import Any

import pytest

from rmq.common import config, javaprops
from rmq.common.config import (
    BrokerConfig,
    BrokerRole,
    ConfigBlackListError,
    ConfigError,
    FlushDiskType,
    MessageStoreConfig,
    NamesrvConfig,
    NettyClientConfig,
    NettyServerConfig,
)


@pytest.fixture(autouse=True)
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("ROCKETMQ_HOME", raising=False)
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    return home


def test_message_store_defaults_match_java() -> None:
    store = MessageStoreConfig()
    assert store.mapped_file_size_commit_log == 1_073_741_824
    assert store.mapped_file_size_consume_queue == 6_000_000
    assert store.mapped_file_size_consume_queue_ext == 50_331_648
    assert store.max_hash_slot_num == 5_000_000
    assert store.max_index_num == 20_000_000
    assert store.max_message_size == 4_194_304
    assert store.file_reserved_time == 72
    assert store.delete_when == "04"
    assert store.disk_max_used_space_ratio == 75
    assert store.flush_disk_type is FlushDiskType.ASYNC_FLUSH
    assert store.broker_role is BrokerRole.ASYNC_MASTER
    assert store.flush_interval_commit_log == 500
    assert store.flush_commit_log_least_pages == 4
    assert store.flush_least_pages_when_warm_maped_file == 4096
    assert store.destroy_maped_file_interval_forcibly == 120_000
    assert store.sync_flush_timeout == 5000
    assert store.ha_listen_port == 10912
    assert store.check_crc_on_recover is True
    assert store.message_index_enable is True
    assert store.store_path_commit_log is None
    assert store.message_delay_level == (
        "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
    )


def test_broker_defaults_match_java() -> None:
    broker = BrokerConfig()
    assert broker.broker_cluster_name == "DefaultCluster"
    assert broker.broker_id == 0
    assert broker.broker_permission == 6
    assert broker.default_topic_queue_nums == 8
    assert broker.auto_create_topic_enable is True
    assert broker.auto_create_subscription_group is True
    assert broker.trace_topic_enable is False
    assert broker.msg_trace_topic_name == "RMQ_SYS_TRACE_TOPIC"
    assert broker.long_polling_enable is True
    assert broker.short_polling_time_mills == 1000
    assert broker.flush_consumer_offset_interval == 5000
    assert broker.register_name_server_period == 30_000
    assert broker.transaction_time_out == 6000
    assert broker.transaction_check_max == 15
    assert broker.transaction_check_interval == 60_000
    assert broker.acl_enable is False
    assert broker.region_id == "DefaultRegion"
    assert broker.consumer_fallbehind_threshold == 17_179_869_184
    assert broker.config_black_list == "configBlackList;brokerConfigPath"


def test_namesrv_and_netty_defaults_match_java() -> None:
    namesrv = NamesrvConfig()
    assert namesrv.product_env_name == "center"
    assert namesrv.cluster_test is False
    assert namesrv.order_message_enable is False
    assert namesrv.config_black_list == "configBlackList;configStorePath;kvConfigPath"
    assert NettyServerConfig().listen_port == 8888
    assert NettyServerConfig().server_socket_backlog == 1024
    assert NettyClientConfig().connect_timeout_millis == 3000


def test_rmq_only_namesrv_keys() -> None:
    namesrv = NamesrvConfig()
    assert namesrv.scan_not_active_broker_interval == 10_000
    assert namesrv.broker_channel_expired_time == 120_000
    assert config.RMQ_ONLY_KEYS["scanNotActiveBrokerInterval"] == "NamesrvConfig"
    assert config.RMQ_ONLY_KEYS["brokerChannelExpiredTime"] == "NamesrvConfig"
    built, unknown = config.build_config(NamesrvConfig, {"scanNotActiveBrokerInterval": "500"})
    assert (built.scan_not_active_broker_interval, unknown) == (500, [])


def test_environment_dependent_defaults(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    monkeypatch.setenv("ROCKETMQ_HOME", "/opt/rocketmq")
    monkeypatch.setenv("NAMESRV_ADDR", "127.0.0.1:9876")
    assert MessageStoreConfig().store_path_root_dir == str(home / "store")
    namesrv = NamesrvConfig()
    assert namesrv.kv_config_path == str(home / "namesrv" / "kvConfig.json")
    assert namesrv.config_store_path == str(home / "namesrv" / "namesrv.properties")
    assert namesrv.rocketmq_home == "/opt/rocketmq"
    broker = BrokerConfig()
    assert broker.namesrv_addr == "127.0.0.1:9876"
    assert broker.broker_name == config.local_host_name()
    assert broker.broker_ip1 == broker.broker_ip2 == config.local_address()
    assert ipaddress.IPv4Address(broker.broker_ip1).version == 4
    assert BrokerConfig(broker_name="broker-a").broker_name == "broker-a"


def test_environment_defaults_are_omitted_when_unset() -> None:
    props = config.to_properties(NamesrvConfig(), BrokerConfig())
    assert "rocketmqHome" not in props
    assert "namesrvAddr" not in props


@pytest.mark.parametrize(
    ("key", "attr"),
    [
        ("mappedFileSizeCommitLog", "mapped_file_size_commit_log"),
        ("storePathRootDir", "store_path_root_dir"),
        ("brokerIP1", "broker_ip1"),
        ("flushDiskType", "flush_disk_type"),
        ("checkCRCOnRecover", "check_crc_on_recover"),
        ("useTLS", "use_tls"),
        ("dLegerSelfId", "d_leger_self_id"),
        ("storePathDLedgerCommitLog", "store_path_d_ledger_commit_log"),
        (
            "scheduleAsyncDeliverMaxResendNum2Blocked",
            "schedule_async_deliver_max_resend_num2_blocked",
        ),
    ],
)
def test_attribute_names_follow_the_mechanical_rule(key: str, attr: str) -> None:
    assert config.java_key_to_attr(key) == attr
    classes = (MessageStoreConfig, BrokerConfig, NettyClientConfig)
    assert any(attr in cls.__dataclass_fields__ for cls in classes)


@pytest.mark.parametrize(
    "cls", [NamesrvConfig, BrokerConfig, MessageStoreConfig, NettyServerConfig, NettyClientConfig]
)
def test_every_printed_key_is_an_attribute_by_the_rule(cls: type[config.ConfigObject]) -> None:
    cfg = cls()
    for key, text in config.to_properties(cfg).items():
        value: Any = getattr(cfg, config.java_key_to_attr(key))
        expected = ("true" if value else "false") if isinstance(value, bool) else str(value)
        assert text == expected


def test_aliases_are_accepted() -> None:
    props = {
        "mapedFileSizeCommitLog": "10240",
        "mapedFileSizeConsumeQueue": "2000",
        "warmMappedFileEnable": "true",
        "destroyMappedFileIntervalForcibly": "5",
        "enableBatchPush": "true",
    }
    store, unknown = config.build_config(MessageStoreConfig, props)
    assert unknown == []
    assert store.mapped_file_size_commit_log == 10240
    assert store.mapped_file_size_consume_queue == 2000
    assert store.warm_maped_file_enable is True
    assert store.destroy_maped_file_interval_forcibly == 5
    assert store.is_enable_batch_push is True


@pytest.mark.parametrize("alias_first", [True, False])
def test_the_real_key_wins_over_its_alias(alias_first: bool) -> None:
    items = [("mapedFileSizeCommitLog", "1"), ("mappedFileSizeCommitLog", "2")]
    props = dict(items if alias_first else reversed(items))
    store, _ = config.build_config(MessageStoreConfig, props)
    assert store.mapped_file_size_commit_log == 2


def test_to_properties_uses_the_real_key_not_the_alias() -> None:
    props = config.to_properties(MessageStoreConfig())
    assert props["mappedFileSizeCommitLog"] == "1073741824"
    # Java prints the field's name, isEnableBatchPush (its setter reads enableBatchPush)
    assert props["isEnableBatchPush"] == "false"
    assert "mapedFileSizeCommitLog" not in props
    assert "enableBatchPush" not in props


def test_one_property_set_feeds_several_configs() -> None:
    broker, store, server = BrokerConfig(), MessageStoreConfig(), NettyServerConfig()
    client = NettyClientConfig()
    props = {
        "brokerName": "broker-a",
        "flushDiskType": "SYNC_FLUSH",
        "listenPort": "20911",
        "writeBufferHighWaterMark": "65536",
        "noSuchKey": "1",
        "alsoUnknown": "",
    }
    unknown = config.apply_properties(props, broker, store, server, client, source="broker.conf")
    assert unknown == ["noSuchKey", "alsoUnknown"]
    assert broker.broker_name == "broker-a"
    assert store.flush_disk_type is FlushDiskType.SYNC_FLUSH
    assert server.listen_port == 20911
    assert server.write_buffer_high_water_mark == client.write_buffer_high_water_mark == 65536


def test_typed_parsing() -> None:
    props = {
        "brokerId": " 3 ",
        "autoCreateTopicEnable": "FALSE",
        "aclEnable": "TRUE",
        "traceOn": " false ",
        "brokerClusterName": " spaced ",
        "consumerFallbehindThreshold": "+9223372036854775807",
    }
    broker, _ = config.build_config(BrokerConfig, props)
    assert broker.broker_id == 3
    assert broker.auto_create_topic_enable is False
    assert broker.acl_enable is True
    assert broker.trace_on is False
    assert broker.broker_cluster_name == " spaced "
    assert broker.consumer_fallbehind_threshold == 2**63 - 1


@pytest.mark.parametrize(
    ("props", "message"),
    [
        (
            {"listenPort": "abc"},
            r"broker\.conf: listenPort='abc': expected a whole number 0\.\.65535$",
        ),
        ({"listenPort": "2147483648"}, "listenPort='2147483648': expected a whole number"),
        ({"listenPort": "1_000"}, "expected a whole number 0..65535"),
        ({"listenPort": "1.5"}, "expected a whole number 0..65535"),
        (
            {"brokerId": "9223372036854775808"},
            r"brokerId='9223372036854775808': expected a whole number -1\.\.9223372036854775807",
        ),
        (
            {"brokerRole": "MASTER"},
            "brokerRole='MASTER': expected one of ASYNC_MASTER, SYNC_MASTER, SLAVE",
        ),
        ({"flushDiskType": "async_flush"}, "expected one of ASYNC_FLUSH, SYNC_FLUSH"),
        ({"autoCreateTopicEnable": "maybe"}, "autoCreateTopicEnable='maybe': expected true or"),
        ({"traceOn": "yes"}, "traceOn='yes': expected true or false"),
    ],
)
def test_bad_values_name_file_key_and_value(props: dict[str, str], message: str) -> None:
    configs = (BrokerConfig(), MessageStoreConfig(), NettyServerConfig())
    with pytest.raises(ConfigError, match=message) as caught:
        config.apply_properties(props, *configs, source="broker.conf")
    ((key, value),) = props.items()
    assert (caught.value.source, caught.value.key, caught.value.value) == (
        "broker.conf",
        key,
        value,
    )


def test_a_bad_value_changes_nothing() -> None:
    server = NettyServerConfig()
    with pytest.raises(ConfigError):
        config.apply_properties({"serverWorkerThreads": "16", "listenPort": "x"}, server)
    assert server.server_worker_threads == 8


@pytest.mark.parametrize(
    ("size", "effective"), [(1000, 1000), (1001, 1020), (19, 20), (6_000_000, 6_000_000)]
)
def test_consume_queue_file_size_rounds_up_to_whole_entries(size: int, effective: int) -> None:
    built, _ = config.build_config(MessageStoreConfig, {"mappedFileSizeConsumeQueue": str(size)})
    assert built.mapped_file_size_consume_queue == effective
    assert (
        MessageStoreConfig(mapped_file_size_consume_queue=size).mapped_file_size_consume_queue
        == effective
    )


@pytest.mark.parametrize(("ratio", "effective"), [(0, 10), (5, 10), (50, 50), (99, 95)])
def test_disk_ratio_is_clamped(ratio: int, effective: int) -> None:
    built, _ = config.build_config(MessageStoreConfig, {"diskMaxUsedSpaceRatio": str(ratio)})
    assert built.disk_max_used_space_ratio == effective


@pytest.mark.parametrize("ratio", ["101", "500", "-1"])
def test_a_disk_ratio_that_is_no_percentage_is_refused(ratio: str) -> None:
    with pytest.raises(ConfigError, match=r"expected a whole number 0\.\.100 \(percent"):
        config.build_config(MessageStoreConfig, {"diskMaxUsedSpaceRatio": ratio})


def test_commit_log_dir() -> None:
    store = MessageStoreConfig(store_path_root_dir="/data/store")
    assert store.commit_log_dir == "/data/store/commitlog"
    store.store_path_commit_log = "/fast/commitlog"
    assert store.commit_log_dir == "/fast/commitlog"


def test_to_properties_text_forms() -> None:
    store = MessageStoreConfig(flush_disk_type=FlushDiskType.SYNC_FLUSH, store_path_root_dir="/s")
    props = config.to_properties(store)
    assert props["flushDiskType"] == "SYNC_FLUSH"
    assert props["messageIndexEnable"] == "true"
    assert props["storePathRootDir"] == "/s"
    assert "storePathCommitLog" not in props


@pytest.mark.parametrize(
    "cls", [NamesrvConfig, BrokerConfig, MessageStoreConfig, NettyServerConfig]
)
def test_to_properties_round_trip(cls: type[config.ConfigObject], tmp_path: Path) -> None:
    original = cls()
    path = tmp_path / "conf.properties"
    path.write_text(javaprops.dumps(config.to_properties(original)), encoding="ascii")
    rebuilt, unknown = config.build_config(cls, config.load_properties_file(path))
    assert unknown == []
    assert rebuilt == original


def test_load_properties_file_reads_utf8_and_falls_back_to_latin1(tmp_path: Path) -> None:
    utf8 = tmp_path / "utf8.conf"
    utf8.write_bytes("# 集群\nbrokerName=b-é\n".encode())
    assert config.load_properties_file(utf8) == {"brokerName": "b-é"}
    latin1 = tmp_path / "latin1.conf"
    latin1.write_bytes("brokerName=b-é\n".encode("iso-8859-1"))
    assert config.load_properties_file(latin1) == {"brokerName": "b-é"}


def test_load_properties_file_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"missing\.conf: cannot read config file"):
        config.load_properties_file(tmp_path / "missing.conf")
    bad = tmp_path / "bad.conf"
    bad.write_text("k=\\uZZZZ\n")
    with pytest.raises(ConfigError, match=r"bad\.conf: line 1"):
        config.load_properties_file(bad)


def namesrv_settings(**namesrv: Any) -> config.LiveSettings[config.NamesrvConfigs]:
    configs = config.NamesrvConfigs(NamesrvConfig(**namesrv), NettyServerConfig())
    return config.namesrv_settings(configs, {})


def test_namesrv_update_refuses_black_listed_keys() -> None:
    settings = namesrv_settings()
    props = {"orderMessageEnable": "true", "kvConfigPath": "/tmp/kv", "rocketmqHome": "/x"}
    with pytest.raises(ConfigBlackListError) as caught:
        settings.update(props)
    assert caught.value.keys == ["kvConfigPath", "rocketmqHome"]
    assert "kvConfigPath, rocketmqHome" in str(caught.value)
    assert settings.configs.namesrv.order_message_enable is False


def test_configured_black_list_adds_keys() -> None:
    settings = namesrv_settings(config_black_list="configBlackList;orderMessageEnable")
    with pytest.raises(ConfigBlackListError, match="orderMessageEnable"):
        settings.update({"orderMessageEnable": "true"})
    with pytest.raises(ConfigBlackListError, match="configStorePath"):
        settings.update({"configStorePath": "/x"})


def test_broker_update_applies_allowed_keys_and_refuses_unknown_ones() -> None:
    configs, _ = config.build_broker_configs({})
    settings = config.broker_settings(configs, {})
    for refused in ("brokerConfigPath", "rocketmqHome", "configBlackList"):
        with pytest.raises(ConfigBlackListError):
            settings.update({refused: "x"})
    with pytest.raises(ConfigError, match="unknown key what: not a setting of rmq's broker"):
        settings.update({"brokerPermission": "4", "what": "1"})
    assert configs.broker.broker_permission == 6
    notes = settings.update({"brokerPermission": "4", "mapedFileSizeConsumeQueue": "30"})
    assert notes == ["mappedFileSizeConsumeQueue takes effect after a restart"]
    assert configs.broker.broker_permission == 4
    assert configs.store.mapped_file_size_consume_queue == 6_000_000
    assert settings.properties()["mappedFileSizeConsumeQueue"] == "40"


def test_build_namesrv_configs() -> None:
    configs, unknown = config.build_namesrv_configs({"orderMessageEnable": "true", "x": "1"})
    assert configs.server.listen_port == config.NAMESRV_LISTEN_PORT == 9876
    assert configs.namesrv.order_message_enable is True
    assert unknown == ["x"]
    from_file, _ = config.build_namesrv_configs({}, config_file="/etc/namesrv.conf")
    assert from_file.namesrv.config_store_path == "/etc/namesrv.conf"


def test_build_broker_configs_applies_startup_rules() -> None:
    configs, unknown = config.build_broker_configs({"brokerId": "5", "haListenPort": "1"})
    assert unknown == []
    assert configs.server.listen_port == config.BROKER_LISTEN_PORT == 10911
    assert configs.store.ha_listen_port == 10912
    assert configs.broker.broker_id == 0
    custom, _ = config.build_broker_configs({"listenPort": "30911"})
    assert custom.store.ha_listen_port == 30912
    slave, _ = config.build_broker_configs({"brokerRole": "SLAVE", "brokerId": "1"})
    assert slave.broker.broker_id == 1
    assert set(config.to_properties(*slave.all())) >= {
        "listenPort",
        "brokerId",
        "clientWorkerThreads",
    }


def test_build_broker_configs_rejects_bad_startup_values() -> None:
    with pytest.raises(
        ConfigError, match=r"broker\.conf: brokerId=0: a SLAVE's brokerId must be > 0"
    ):
        config.build_broker_configs({"brokerRole": "SLAVE"}, config_file="broker.conf")
    with pytest.raises(ConfigError, match="namesrvAddr='host-without-port'"):
        config.build_broker_configs({"namesrvAddr": "host-without-port"})
    configs, _ = config.build_broker_configs({"namesrvAddr": "10.0.0.1:9876;ns2:9876"})
    assert configs.broker.namesrv_addr == "10.0.0.1:9876;ns2:9876"


def test_a_dledger_broker_takes_its_id_from_its_role_and_needs_its_peers() -> None:
    peers = "n0-127.0.0.1:40911;n1-127.0.0.1:40912;n2-127.0.0.1:40913"
    props = {"enableDLegerCommitLog": "true", "dLegerPeers": peers, "dLegerSelfId": "n1"}
    configs, _ = config.build_broker_configs({**props, "brokerRole": "SLAVE"})
    assert configs.broker.broker_id == -1
    with pytest.raises(ConfigError, match="dLegerSelfId=n3: enableDLegerCommitLog needs"):
        config.build_broker_configs({**props, "dLegerSelfId": "n3"})
    with pytest.raises(ConfigError, match="dLegerPeers entry 'n0:40911' is not <id>-<host>:<port>"):
        config.build_broker_configs({**props, "dLegerPeers": "n0:40911"})


@pytest.mark.parametrize("port", ["0", "2", "65535"])
def test_build_broker_configs_needs_room_for_the_fast_and_ha_ports(port: str) -> None:
    with pytest.raises(ConfigError, match=rf"listenPort={port}: expected 3\.\.65534") as caught:
        config.build_broker_configs({"listenPort": port}, config_file="broker.conf")
    assert (caught.value.source, caught.value.key, caught.value.value) == (
        "broker.conf",
        "listenPort",
        port,
    )


@pytest.mark.parametrize("port", [3, 65534])
def test_build_broker_configs_accepts_the_edge_ports(port: int) -> None:
    configs, _ = config.build_broker_configs({"listenPort": str(port)})
    assert configs.server.listen_port - config.FAST_PORT_OFFSET >= 1
    assert configs.store.ha_listen_port == port + 1 <= 65535
