"""AdminProcessor: the admin requests of a broker, driven with RemotingCommands against a real
BrokerController (real store in tmp_path, real managers; the server is never started)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rmq.common import fastjson, javaprops
from rmq.common.config import build_broker_configs, build_namesrv_configs
from rmq.remoting.bodies import (
    ConsumeFromWhere,
    ConsumeType,
    MessageModel,
    SubscriptionData,
    TopicRouteData,
)
from rmq.remoting.codes import LanguageCode, RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand, create_request
from rmq.remoting.headers import (
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumeStatsRequestHeader,
    GetEarliestMsgStoretimeRequestHeader,
    GetMaxOffsetRequestHeader,
    GetMinOffsetRequestHeader,
    GetProducerConnectionListRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicStatsInfoRequestHeader,
    SearchOffsetRequestHeader,
)
from rmq.server.broker.client.clientmanager import ClientChannelInfo
from rmq.server.broker.controller import BrokerController
from rmq.server.broker.stats.stats import BrokerStats
from rmq.server.namesrv.kvconfig import KVConfigManager
from rmq.server.namesrv.processor import NamesrvProcessor
from rmq.server.namesrv.routeinfo import RouteInfoManager
from rmq.store.putmessage import InnerMessage, PutMessageResult, PutMessageStatus
from tests.unit.broker.helpers import FakeChannel
from tests.unit.broker.helpers import call as call_handler

BROKER = "broker-a"
CLIENT = ("127.0.0.1", 50000)
"""The address of the admin tool's connection."""

# GET_BROKER_RUNTIME_INFO keys of Apache 4.9.8 (spec §2.6) that every broker reports.
RUNTIME_INFO_KEYS = {
    "brokerVersionDesc",
    "brokerVersion",
    "msgPutTotalYesterdayMorning",
    "msgPutTotalTodayMorning",
    "msgPutTotalTodayNow",
    "msgGetTotalYesterdayMorning",
    "msgGetTotalTodayMorning",
    "msgGetTotalTodayNow",
    "sendThreadPoolQueueSize",
    "sendThreadPoolQueueCapacity",
    "pullThreadPoolQueueSize",
    "pullThreadPoolQueueCapacity",
    "queryThreadPoolQueueSize",
    "queryThreadPoolQueueCapacity",
    "EndTransactionQueueSize",
    "EndTransactionThreadPoolQueueCapacity",
    "dispatchBehindBytes",
    "pageCacheLockTimeMills",
    "sendThreadPoolQueueHeadWaitTimeMills",
    "pullThreadPoolQueueHeadWaitTimeMills",
    "queryThreadPoolQueueHeadWaitTimeMills",
    "earliestMessageTimeStamp",
    "startAcceptSendRequestTimeStamp",
    "remainTransientStoreBufferNumbs",
    "remainHowManyDataToFlush",
    "commitLogDirCapacity",
    "bootTimestamp",
    "runtime",
    "putMessageEntireTimeMax",
    "putMessageTimesTotal",
    "putMessageFailedTimes",
    "putMessageSizeTotal",
    "putMessageDistributeTime",
    "putMessageAverageSize",
    "dispatchMaxBuffer",
    "getMessageEntireTimeMax",
    "putTps",
    "getFoundTps",
    "getMissTps",
    "getTotalTps",
    "getTransferedTps",
    "putLatency99",
    "putLatency999",
    "commitLogDiskRatio",
    "consumeQueueDiskRatio",
    "commitLogMinOffset",
    "commitLogMaxOffset",
}


def make_controller(tmp_path: Path, **props: str) -> BrokerController:
    file_props = {
        "brokerName": BROKER,
        "brokerIP1": "127.0.0.1",
        "listenPort": "10911",
        "storePathRootDir": str(tmp_path / "store"),
        "mappedFileSizeCommitLog": str(1024 * 1024),
        "mappedFileSizeConsumeQueue": str(1000 * 20),
        "maxHashSlotNum": "100",
        "maxIndexNum": "400",
        "customKey": "kept",
        **props,
    }
    conf = tmp_path / "broker.conf"
    conf.write_text(javaprops.dumps(file_props), encoding="utf-8")
    configs, _ = build_broker_configs(file_props, config_file=str(conf))
    return BrokerController(configs, config_file=str(conf), file_properties=file_props)


@pytest.fixture
def controller(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[BrokerController]:
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    broker = make_controller(tmp_path)
    broker.context.store.start()
    yield broker
    broker.context.store.shutdown()


def call(
    broker: BrokerController, code: int, header: object | None = None, body: bytes | None = None
) -> RemotingCommand:
    request = create_request(code, header, body=body)
    handler = broker.admin_processor.handlers().get(code, broker.admin_processor.not_supported)
    return call_handler(handler, request, CLIENT)


def put(broker: BrokerController, topic: str, queue_id: int, count: int) -> list[int]:
    """Store `count` messages; returns their store timestamps."""
    timestamps = []
    for index in range(count):
        result = broker.context.store.put_message(
            InnerMessage(topic, queue_id, f"body-{index}".encode())
        )
        assert result.ok, result
        timestamps.append(result.store_timestamp)
    return timestamps


def create_topic(broker: BrokerController, topic: str, queues: int = 4, **fields: Any) -> None:
    header = CreateTopicRequestHeader(
        topic=topic,
        default_topic="TBW102",
        read_queue_nums=queues,
        write_queue_nums=queues,
        perm=fields.pop("perm", 6),
        topic_filter_type=fields.pop("topic_filter_type", "SINGLE_TAG"),
        **fields,
    )
    response = call(broker, RequestCode.UPDATE_AND_CREATE_TOPIC, header)
    assert response.code == ResponseCode.SUCCESS, response


def json_body(response: RemotingCommand) -> Any:
    assert response.code == ResponseCode.SUCCESS, response
    return fastjson.loads(response.body or b"")


# -- topics ------------------------------------------------------------------------------


def test_created_topic_is_served_persisted_and_listed(controller: BrokerController) -> None:
    create_topic(controller, "Orders", queues=3, perm=4, topic_filter_type="MULTI_TAG")

    table = json_body(call(controller, RequestCode.GET_ALL_TOPIC_CONFIG))["topicConfigTable"]
    assert table["Orders"] == {
        "order": False,
        "perm": 4,
        "readQueueNums": 3,
        "topicFilterType": "MULTI_TAG",
        "topicName": "Orders",
        "topicSysFlag": 0,
        "writeQueueNums": 3,
    }
    stored = fastjson.loads(controller.context.topic_config_manager.path.read_text())
    assert stored["topicConfigTable"]["Orders"]["readQueueNums"] == 3


@pytest.mark.parametrize(
    ("topic", "remark"),
    [
        (
            "bad topic",
            "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$",
        ),
        ("TBW102", "The topic[TBW102] is conflict with system topic."),
        (BROKER, f"The topic[{BROKER}] is conflict with system topic."),
        ("rmq_sys_mine", "The topic[rmq_sys_mine] is conflict with system topic."),
    ],
)
def test_create_topic_refuses_bad_names_and_system_topics(
    controller: BrokerController, topic: str, remark: str
) -> None:
    header = CreateTopicRequestHeader(
        topic=topic,
        default_topic="TBW102",
        read_queue_nums=1,
        write_queue_nums=1,
        perm=6,
        topic_filter_type="SINGLE_TAG",
    )
    response = call(controller, RequestCode.UPDATE_AND_CREATE_TOPIC, header)
    assert (response.code, response.remark) == (ResponseCode.SYSTEM_ERROR, remark)


def test_create_topic_refuses_an_unknown_filter_type(controller: BrokerController) -> None:
    header = CreateTopicRequestHeader(
        topic="T",
        default_topic="TBW102",
        read_queue_nums=1,
        write_queue_nums=1,
        perm=6,
        topic_filter_type="REGEX",
    )
    response = call(controller, RequestCode.UPDATE_AND_CREATE_TOPIC, header)
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert controller.context.topic_config_manager.select("T") is None


def test_delete_topic_drops_config_and_consume_queues(controller: BrokerController) -> None:
    create_topic(controller, "Gone")
    create_topic(controller, "Kept")
    put(controller, "Gone", 0, 2)
    put(controller, "Kept", 0, 1)
    queue_dir = controller.context.store.layout.consume_queue_dir("Gone", 0)
    assert queue_dir.exists()

    response = call(
        controller, RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader(topic="Gone")
    )

    assert response.code == ResponseCode.SUCCESS
    assert controller.context.topic_config_manager.select("Gone") is None
    assert not queue_dir.parent.exists()
    assert controller.context.store.get_max_offset_in_queue("Gone", 0) == 0
    assert controller.context.store.get_max_offset_in_queue("Kept", 0) == 1


def test_delete_topic_refuses_system_topics(controller: BrokerController) -> None:
    response = call(
        controller, RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader(topic="TBW102")
    )
    assert (response.code, response.remark) == (
        ResponseCode.SYSTEM_ERROR,
        "The topic[TBW102] is conflict with system topic.",
    )
    assert controller.context.topic_config_manager.select("TBW102") is not None


def test_topic_stats_body_and_values(controller: BrokerController) -> None:
    create_topic(controller, "Stats", queues=2)
    timestamps = put(controller, "Stats", 1, 3)

    response = call(
        controller, RequestCode.GET_TOPIC_STATS_INFO, GetTopicStatsInfoRequestHeader(topic="Stats")
    )

    assert response.code == ResponseCode.SUCCESS
    queue = '{{"brokerName":"{}","queueId":{},"topic":"Stats"}}'
    expected = (
        '{"offsetTable":{'
        + queue.format(BROKER, 0)
        + ':{"lastUpdateTimestamp":0,"maxOffset":0,"minOffset":0},'
        + queue.format(BROKER, 1)
        + f':{{"lastUpdateTimestamp":{timestamps[-1]},"maxOffset":3,"minOffset":0}}'
        + "}}"
    )
    assert bytes(response.body or b"").decode() == expected


def test_topic_stats_of_an_unknown_topic(controller: BrokerController) -> None:
    response = call(
        controller, RequestCode.GET_TOPIC_STATS_INFO, GetTopicStatsInfoRequestHeader(topic="Nope")
    )
    assert (response.code, response.remark) == (
        ResponseCode.TOPIC_NOT_EXIST,
        "topic[Nope] not exist",
    )


def test_a_slave_refuses_topic_and_group_changes(tmp_path: Path) -> None:
    slave = make_controller(tmp_path, brokerRole="SLAVE", brokerId="1")
    remark = (
        "Can't modify topic or subscription group from slave broker, "
        "please execute it from master broker."
    )
    create = CreateTopicRequestHeader(
        topic="T",
        default_topic="TBW102",
        read_queue_nums=1,
        write_queue_nums=1,
        perm=6,
        topic_filter_type="SINGLE_TAG",
    )
    requests = [
        (RequestCode.UPDATE_AND_CREATE_TOPIC, create, None),
        (RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader(topic="T"), None),
        (RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, b'{"groupName":"g"}'),
        (
            RequestCode.DELETE_SUBSCRIPTIONGROUP,
            DeleteSubscriptionGroupRequestHeader(group_name="g"),
            None,
        ),
    ]
    for code, header, body in requests:
        response = call(slave, code, header, body)
        assert (response.code, response.remark) == (ResponseCode.SYSTEM_ERROR, remark)
    assert slave.context.topic_config_manager.select("T") is None


# -- offsets and lookups -----------------------------------------------------------------


def test_queue_offsets_and_times(controller: BrokerController) -> None:
    create_topic(controller, "Q", queues=1)
    timestamps = put(controller, "Q", 0, 4)

    def offset(code: int, header: object) -> int:
        response = call(controller, code, header)
        assert response.code == ResponseCode.SUCCESS
        fields = response.ext_fields or {}
        return int(fields.get("offset", fields.get("timestamp", "nan")))

    assert offset(RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader(topic="Q", queue_id=0)) == 4
    assert offset(RequestCode.GET_MIN_OFFSET, GetMinOffsetRequestHeader(topic="Q", queue_id=0)) == 0
    earliest = GetEarliestMsgStoretimeRequestHeader(topic="Q", queue_id=0)
    assert offset(RequestCode.GET_EARLIEST_MSG_STORETIME, earliest) == timestamps[0]
    search = SearchOffsetRequestHeader(topic="Q", queue_id=0, timestamp=timestamps[2])
    expected = controller.context.store.get_offset_in_queue_by_time("Q", 0, timestamps[2])
    assert offset(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, search) == expected
    unknown = GetMaxOffsetRequestHeader(topic="Unknown", queue_id=0)
    assert offset(RequestCode.GET_MAX_OFFSET, unknown) == 0


def test_consume_stats_per_queue(controller: BrokerController) -> None:
    create_topic(controller, "C", queues=2)
    timestamps = put(controller, "C", 0, 5)
    controller.context.consumer_offset_manager.commit("127.0.0.1", "group-c", "C", 0, 2)

    header = GetConsumeStatsRequestHeader(consumer_group="group-c")
    response = call(controller, RequestCode.GET_CONSUME_STATS, header)

    assert response.code == ResponseCode.SUCCESS
    queue = '{{"brokerName":"{}","queueId":{},"topic":"C"}}'
    expected = (
        '{"consumeTps":0.0,"offsetTable":{'
        + queue.format(BROKER, 0)
        + f':{{"brokerOffset":5,"consumerOffset":2,"lastTimestamp":{timestamps[1]}}},'
        + queue.format(BROKER, 1)
        + ':{"brokerOffset":0,"consumerOffset":0,"lastTimestamp":0}}}'
    )
    assert bytes(response.body or b"").decode() == expected


def test_consume_stats_skip_topics_the_online_group_does_not_subscribe(
    controller: BrokerController,
) -> None:
    create_topic(controller, "A", queues=1)
    create_topic(controller, "B", queues=1)
    offsets = controller.context.consumer_offset_manager
    offsets.commit("127.0.0.1", "g", "A", 0, 0)
    offsets.commit("127.0.0.1", "g", "B", 0, 0)
    register_consumer(controller, "g", FakeChannel("10.0.0.1:1"), topics=["A"])

    body = json_body(
        call(
            controller,
            RequestCode.GET_CONSUME_STATS,
            GetConsumeStatsRequestHeader(consumer_group="g"),
        )
    )

    assert [key["topic"] for key in body["offsetTable"]] == ["A"]


def test_all_consumer_offsets_and_delay_offsets(controller: BrokerController) -> None:
    controller.context.consumer_offset_manager.commit("127.0.0.1", "g", "T", 1, 7)
    response = call(controller, RequestCode.GET_ALL_CONSUMER_OFFSET)
    assert bytes(response.body or b"") == b'{"offsetTable":{"T@g":{1:7}}}'

    response = call(controller, RequestCode.GET_ALL_DELAY_OFFSET)
    assert bytes(response.body or b"") == b'{"offsetTable":{}}'

    delay_file = controller.context.store.layout.config_file("delayOffset.json")
    delay_file.parent.mkdir(parents=True, exist_ok=True)
    delay_file.write_text('{\n\t"offsetTable":{1:5,3:0\n\t}\n}')
    assert not [key for key in runtime_info(controller) if key.startswith("scheduleMessage")]
    controller.context.schedule_service.load()
    response = call(controller, RequestCode.GET_ALL_DELAY_OFFSET)
    assert bytes(response.body or b"") == b'{"offsetTable":{1:5,3:0}}'
    # runtime info: "<delivered up to>,<schedule queue max offset>" per level, as Apache's
    info = runtime_info(controller)
    assert (info["scheduleMessageOffset_1"], info["scheduleMessageOffset_3"]) == ("5,0", "0,0")


# -- subscription groups -----------------------------------------------------------------


def test_subscription_group_create_list_and_delete_with_offsets(
    controller: BrokerController,
) -> None:
    body = json.dumps({"groupName": "g1", "retryMaxTimes": 3, "consumeBroadcastEnable": False})
    response = call(controller, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body.encode())
    assert response.code == ResponseCode.SUCCESS

    table = json_body(call(controller, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG))
    assert table["subscriptionGroupTable"]["g1"]["retryMaxTimes"] == 3
    assert table["subscriptionGroupTable"]["g1"]["consumeBroadcastEnable"] is False
    assert table["dataVersion"]["counter"] == 1

    controller.context.consumer_offset_manager.commit("127.0.0.1", "g1", "T", 0, 4)
    header = DeleteSubscriptionGroupRequestHeader(group_name="g1", remove_offset=True)
    assert (
        call(controller, RequestCode.DELETE_SUBSCRIPTIONGROUP, header).code == ResponseCode.SUCCESS
    )

    table = json_body(call(controller, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG))
    assert "g1" not in table["subscriptionGroupTable"]
    assert controller.context.consumer_offset_manager.query("g1", "T", 0) == -1


def test_subscription_group_with_a_bad_body(controller: BrokerController) -> None:
    response = call(controller, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=b"[1]")
    assert response.code == ResponseCode.SYSTEM_ERROR


# -- clients -----------------------------------------------------------------------------


def register_consumer(
    broker: BrokerController, group: str, channel: FakeChannel, topics: list[str]
) -> None:
    info = ClientChannelInfo(channel, f"{channel.remote_addr}@1", LanguageCode.CPP, 333)
    broker.context.client_manager.register_consumer(
        group,
        info,
        ConsumeType.CONSUME_PASSIVELY,
        MessageModel.CLUSTERING,
        ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        [SubscriptionData.from_expression(topic, "*") for topic in topics],
        True,
    )


def test_consumer_connection_list(controller: BrokerController) -> None:
    header = GetConsumerConnectionListRequestHeader(consumer_group="cg")
    response = call(controller, RequestCode.GET_CONSUMER_CONNECTION_LIST, header)
    assert (response.code, response.remark) == (
        ResponseCode.CONSUMER_NOT_ONLINE,
        "the consumer group[cg] not online",
    )

    register_consumer(controller, "cg", FakeChannel("10.0.0.9:4000"), topics=["T"])
    body = json_body(call(controller, RequestCode.GET_CONSUMER_CONNECTION_LIST, header))

    assert body["connectionSet"] == [
        {
            "clientAddr": "10.0.0.9:4000",
            "clientId": "10.0.0.9:4000@1",
            "language": "CPP",
            "version": 333,
        }
    ]
    assert body["consumeType"] == "CONSUME_PASSIVELY"
    assert body["messageModel"] == "CLUSTERING"
    assert list(body["subscriptionTable"]) == ["T"]


def test_producer_connection_list(controller: BrokerController) -> None:
    header = GetProducerConnectionListRequestHeader(producer_group="pg")
    response = call(controller, RequestCode.GET_PRODUCER_CONNECTION_LIST, header)
    assert (response.code, response.remark) == (
        ResponseCode.SYSTEM_ERROR,
        "the producer group[pg] not exist",
    )

    channel = FakeChannel("10.0.0.7:5000")
    info = ClientChannelInfo(channel, "producer-1", LanguageCode.JAVA, 409)
    controller.context.client_manager.register_producer("pg", info)
    body = json_body(call(controller, RequestCode.GET_PRODUCER_CONNECTION_LIST, header))
    assert body == {
        "connectionSet": [
            {
                "clientAddr": "10.0.0.7:5000",
                "clientId": "producer-1",
                "language": "JAVA",
                "version": 409,
            }
        ]
    }


# -- settings ----------------------------------------------------------------------------


def config_text(response: RemotingCommand) -> dict[str, str]:
    assert response.code == ResponseCode.SUCCESS, response
    return javaprops.loads(bytes(response.body or b"").decode("utf-8"))


def test_broker_config_lists_every_setting_and_file_key(controller: BrokerController) -> None:
    response = call(controller, RequestCode.GET_BROKER_CONFIG)
    settings = config_text(response)

    assert settings["brokerName"] == BROKER
    assert settings["listenPort"] == "10911"
    assert settings["flushDiskType"] == "ASYNC_FLUSH"
    assert settings["clientWorkerThreads"] == "4"
    assert settings["customKey"] == "kept"
    # never unset in Java: the directory in use (<storePathRootDir>/commitlog when not set)
    assert settings["storePathCommitLog"] == controller.context.store_config.commit_log_dir
    # the bloom filter's bits for 32 consumers at 20 %, as Apache's broker sets it at start
    assert settings["bitMapLengthConsumeQueueExt"] == "112"
    version = json.loads((response.ext_fields or {})["version"])
    assert version["counter"] == 0
    assert set(version) == {"counter", "timestamp"}


def test_update_broker_config_applies_persists_and_bumps_the_version(
    controller: BrokerController,
) -> None:
    body = b"autoCreateSubscriptionGroup=false\ndefaultTopicQueueNums=5\n"
    response = call(controller, RequestCode.UPDATE_BROKER_CONFIG, body=body)

    assert response.code == ResponseCode.SUCCESS
    assert response.remark == (
        "defaultTopicQueueNums takes effect after a restart, for the TBW102 the broker creates"
        " at start (a topic already in topics.json keeps its queues)"
    )
    assert controller.context.broker_config.auto_create_subscription_group is False
    assert controller.context.broker_config.default_topic_queue_nums == 8
    written = javaprops.loads(controller.context.config_path.read_text(encoding="utf-8"))
    assert written["defaultTopicQueueNums"] == "5"
    assert written["autoCreateSubscriptionGroup"] == "false"
    assert written["customKey"] == "kept"
    after = call(controller, RequestCode.GET_BROKER_CONFIG)
    assert config_text(after)["defaultTopicQueueNums"] == "5"
    assert json.loads((after.ext_fields or {})["version"])["counter"] == 1


def test_update_broker_config_refuses_unknown_keys_and_changes_nothing(
    controller: BrokerController,
) -> None:
    body = b"autoCreateSubscriptionGroup=false\ncustomKey=changed\nneverSeenKey=1\n"
    response = call(controller, RequestCode.UPDATE_BROKER_CONFIG, body=body)

    assert (response.code, response.remark) == (
        ResponseCode.SYSTEM_ERROR,
        "unknown keys customKey, neverSeenKey: not a setting of rmq's broker (nothing was changed)",
    )
    assert controller.context.broker_config.auto_create_subscription_group is True
    after = call(controller, RequestCode.GET_BROKER_CONFIG)
    assert config_text(after)["customKey"] == "kept"
    assert json.loads((after.ext_fields or {})["version"])["counter"] == 0


@pytest.mark.parametrize("key", ["brokerConfigPath", "rocketmqHome", "configBlackList"])
def test_update_broker_config_refuses_black_listed_keys(
    controller: BrokerController, key: str
) -> None:
    body = f"defaultTopicQueueNums=5\n{key}=x\n".encode()
    response = call(controller, RequestCode.UPDATE_BROKER_CONFIG, body=body)
    assert (response.code, response.remark) == (
        ResponseCode.NO_PERMISSION,
        "Can not update config in black list.",
    )
    assert controller.context.broker_config.default_topic_queue_nums == 8


def test_update_broker_config_refuses_a_bad_value(controller: BrokerController) -> None:
    response = call(controller, RequestCode.UPDATE_BROKER_CONFIG, body=b"listenPort=abc\n")
    assert (response.code, response.remark) == (
        ResponseCode.SYSTEM_ERROR,
        "listenPort='abc': expected a whole number 0..65535",
    )
    assert controller.context.netty_config.listen_port == 10911


def test_a_broker_permission_change_reaches_the_name_server_with_the_next_registration(
    controller: BrokerController, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configs, _ = build_namesrv_configs({})
    namesrv = NamesrvProcessor(RouteInfoManager(), KVConfigManager(tmp_path / "kv.json"), configs)

    def register_and_route() -> TopicRouteData:
        """Hand the broker's REGISTER_BROKER to the name server; its route of Orders."""
        header, data = controller.registration.registration()
        registered = call_handler(
            namesrv.register_broker,
            create_request(RequestCode.REGISTER_BROKER, header, body=data),
            CLIENT,
        )
        assert registered.code == ResponseCode.SUCCESS
        request = create_request(
            RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic="Orders")
        )
        route = call_handler(namesrv.get_route_info_by_topic, request, CLIENT)
        assert route.code == ResponseCode.SUCCESS
        return TopicRouteData.decode(route.body or b"")

    create_topic(controller, "Orders")
    assert [queue.perm for queue in register_and_route().queue_datas] == [6]
    version = controller.context.topic_config_manager.data_version
    requested: list[bool] = []

    def request(force: bool = False) -> None:
        requested.append(force)

    monkeypatch.setattr(controller.registration, "request", request)

    response = call(controller, RequestCode.UPDATE_BROKER_CONFIG, body=b"brokerPermission=4\n")

    assert response.code == ResponseCode.SUCCESS
    assert requested == [True]
    assert controller.context.topic_config_manager.data_version.counter == version.counter + 1
    stored = fastjson.loads(
        controller.context.topic_config_manager.path.read_text(encoding="utf-8")
    )
    assert stored["dataVersion"]["counter"] == version.counter + 1
    assert [queue.perm for queue in register_and_route().queue_datas] == [4]


# -- runtime info ------------------------------------------------------------------------


def runtime_info(broker: BrokerController) -> dict[str, str]:
    table: dict[str, str] = json_body(call(broker, RequestCode.GET_BROKER_RUNTIME_INFO))["table"]
    return table


def test_runtime_info_has_the_apache_keys_with_real_values(controller: BrokerController) -> None:
    create_topic(controller, "R", queues=1)
    put(controller, "R", 0, 3)
    for _ in range(3):
        controller.context.stats.on_put(
            controller.context.store.put_message(InnerMessage("R", 0, b"x")), 2
        )

    info = runtime_info(controller)

    assert RUNTIME_INFO_KEYS - set(info) == set()
    assert (info["brokerVersionDesc"], info["brokerVersion"]) == ("V4_9_8", "409")
    assert info["msgPutTotalTodayNow"] == "3"
    assert info["putMessageTimesTotal"] == "3"
    assert info["commitLogMinOffset"] == "0"
    assert info["commitLogMaxOffset"] == str(controller.context.store.max_physical_offset())
    # Apache reads 2 * maxMessageSize bytes at the minimum offset: -1 until that much is written
    assert info["earliestMessageTimeStamp"] == "-1"
    assert info["putMessageEntireTimeMax"] == "2"
    assert info["remainTransientStoreBufferNumbs"] == "2147483647"
    assert re.fullmatch(r"\[ 0 days, 0 hours, 0 minutes, \d+ seconds \]", info["runtime"])
    for key in ("putTps", "getFoundTps", "getMissTps", "getTotalTps", "getTransferedTps"):
        assert re.fullmatch(r"(\d+\.\d+)? (\d+\.\d+)? (\d+\.\d+)?", info[key]), (key, info[key])
    assert 0.0 <= float(info["commitLogDiskRatio"]) <= 1.0
    assert (
        info[f"commitLogDiskRatio_{controller.context.store.layout.commitlog}"]
        == info["commitLogDiskRatio"]
    )
    assert re.fullmatch(
        r"Total : \d+\.\d [KMGTPE]iB, Free : \d+\.\d [KMGTPE]iB\.", info["commitLogDirCapacity"]
    )


def test_runtime_info_earliest_time_once_two_max_messages_are_written(
    controller: BrokerController,
) -> None:
    create_topic(controller, "E", queues=1)
    timestamps = put(controller, "E", 0, 3)
    written = controller.context.store.max_physical_offset()
    controller.context.store_config.max_message_size = written // 2 + 1
    assert runtime_info(controller)["earliestMessageTimeStamp"] == "-1"
    controller.context.store_config.max_message_size = written // 2
    assert runtime_info(controller)["earliestMessageTimeStamp"] == str(timestamps[0])


def test_runtime_info_tps_windows_empty_until_enough_samples() -> None:
    now = [1_000_000]
    stats = BrokerStats(clock=lambda: now[0])
    for _ in range(9):
        now[0] += 1000
        stats.sample()
    info = stats.runtime_info()
    assert info["putTps"] == "  "
    assert info["putMessageDistributeTime"] == "null"  # no minute complete yet
    assert info["getTotalTps"] == "0.0 0.0 0.0"
    now[0] += 1000
    stats.sample()
    assert stats.runtime_info()["putTps"] == "0.0  "


def test_runtime_info_tps_windows_and_latency() -> None:
    now = [1_000_000]
    stats = BrokerStats(clock=lambda: now[0])
    put_result = PutMessageResult(PutMessageStatus.PUT_OK, 0, wrote_bytes=100, queue_offset=0)
    for second in range(1, 61):
        now[0] += 1000
        for _ in range(second % 3):
            stats.on_put(put_result, 5)
        stats.on_get(4)
        stats.on_get(0)
        stats.sample()
    info = stats.runtime_info()

    # 61 samples (one at start): the 10 s and 60 s windows are full, the 600 s one is not
    # (Apache needs window + 1 samples and leaves the word empty; the total TPS says 0.0).
    ten, sixty, six_hundred = info["putTps"].split(" ")
    assert float(ten) == pytest.approx(sum(second % 3 for second in range(51, 61)) / 10)
    assert float(sixty) == pytest.approx(1.0)
    assert six_hundred == ""
    assert info["getFoundTps"] == "1.0 1.0 "
    assert info["getMissTps"] == "1.0 1.0 "
    assert info["getTotalTps"] == "2.0 2.0 0.0"
    assert info["getTransferedTps"] == "4.0 4.0 "
    assert info["msgGetTotalTodayNow"] == "240"
    assert info["putMessageDistributeTime"].startswith("[<=0ms]:0 [0~10ms]:60 [10~50ms]:0 ")
    assert info["putLatency99"] == "4.98"
    assert info["putMessageAverageSize"] == "100.0"
    assert info["putMessageFailedTimes"] == "0"
    stats.on_put(PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE), 0)
    assert stats.runtime_info()["putMessageFailedTimes"] == "1"
    assert stats.runtime_info()["putMessageTimesTotal"] == info["putMessageTimesTotal"]


def test_day_totals_roll_at_midnight() -> None:
    stats = BrokerStats(clock=lambda: 0)
    stats.on_get(10)
    stats.record_day()
    stats.on_get(5)
    stats.record_day()
    info = stats.runtime_info()
    assert info["msgGetTotalYesterdayMorning"] == "10"
    assert info["msgGetTotalTodayMorning"] == "15"
    assert info["msgGetTotalTodayNow"] == "15"


def test_unknown_codes_are_not_supported(controller: BrokerController) -> None:
    response = call(controller, 9999)
    assert (response.code, response.remark) == (
        ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
        " request type 9999 not supported",
    )


def test_get_all_topic_config_answers_an_empty_ext_fields_header(
    controller: BrokerController,
) -> None:
    response = call(controller, RequestCode.GET_ALL_TOPIC_CONFIG)
    assert response.ext_fields == {}
    assert time.time() * 1000 >= json_body(response)["dataVersion"]["timestamp"]
