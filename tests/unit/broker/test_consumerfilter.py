"""SQL92 filtering on the broker: the consumer filter registry (consumerFilter.json), pulls
filtered by message properties, and CHECK_CLIENT_CONFIG, with ``enablePropertyFilter`` on."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from rmq.common import fastjson
from rmq.common.properties import encode_properties_bytes
from rmq.common.sysflag import PULL_SUBSCRIPTION, PULL_SUSPEND
from rmq.remoting.bodies import CheckClientRequestBody, SubscriptionData
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import create_request
from rmq.server.broker.context import BrokerContext
from rmq.server.broker.filter.consumerfilter import ConsumerFilterManager
from rmq.store.putmessage import InnerMessage
from tests.unit.broker.helpers import (
    GROUP,
    TOPIC,
    Clock,
    Serving,
    heartbeat_request,
    pull_request,
    records,
    run,
    serving_broker,
    until,
)


@pytest.fixture
def sql_broker(tmp_path: Path) -> Iterator[BrokerContext]:
    with serving_broker(tmp_path, enable_property_filter=True) as running:
        yield running


def put_numbered(broker: BrokerContext, count: int) -> None:
    for index in range(count):
        properties = encode_properties_bytes({"a": str(index), "TAGS": f"T{index % 2}"})
        broker.store.put_message(InnerMessage(TOPIC, 0, b"m%d" % index, properties=properties))


def indexes(response: object) -> list[int]:
    return [int(record.properties["a"]) for record in records(response)]  # type: ignore[arg-type]


def test_pull_with_its_own_sql_subscription_is_filtered(sql_broker: BrokerContext) -> None:
    put_numbered(sql_broker, 20)

    async def scenario() -> None:
        async with Serving(sql_broker) as serving:
            above = await serving.pull(subscription="a > 14", expression_type="SQL92")
            tagged = await serving.pull(
                subscription="TAGS = 'T0' AND a BETWEEN 4 AND 9", expression_type="SQL92"
            )
            nothing = await serving.pull(subscription="a > 100", expression_type="SQL92")
        assert above.code == ResponseCode.SUCCESS
        assert indexes(above) == [15, 16, 17, 18, 19]
        assert indexes(tagged) == [4, 6, 8]
        assert nothing.code == ResponseCode.PULL_RETRY_IMMEDIATELY
        assert nothing.ext_fields is not None and nothing.ext_fields["nextBeginOffset"] == "20"

    run(scenario())


def test_pull_by_the_group_s_registered_filter(sql_broker: BrokerContext) -> None:
    put_numbered(sql_broker, 10)
    subscription = SubscriptionData.from_expression(TOPIC, "a < 3", "SQL92")
    broken = SubscriptionData.from_expression(TOPIC, "a <", "SQL92")
    broken.sub_version = subscription.sub_version + 1

    async def scenario() -> None:
        async with Serving(sql_broker) as serving:
            await serving.invoke(heartbeat_request("c1", GROUP, [subscription]))
            registered = await serving.pull(sys_flag=0, sub_version=subscription.sub_version)
            await serving.invoke(heartbeat_request("c1", GROUP, [broken]))
            missing = await serving.pull(sys_flag=0, sub_version=broken.sub_version)
        assert indexes(registered) == [0, 1, 2]
        assert (missing.code, missing.remark) == (
            ResponseCode.FILTER_DATA_NOT_EXIST,
            "The broker's consumer filter data is not exist!Your expression may be wrong!",
        )

    run(scenario())


def test_pull_refused_while_the_property_filter_is_off(tmp_path: Path) -> None:
    subscription = SubscriptionData.from_expression(TOPIC, "a < 3", "SQL92")
    with serving_broker(tmp_path) as broker:

        async def scenario() -> None:
            async with Serving(broker) as serving:
                await serving.invoke(heartbeat_request("c1", GROUP, [subscription]))
                response = await serving.pull(sys_flag=0, sub_version=subscription.sub_version)
            assert (response.code, response.remark) == (
                ResponseCode.SYSTEM_ERROR,
                "The broker does not support consumer to filter message by SQL92",
            )
            # The filter is registered whatever the setting, as in Apache.
            assert broker.consumer_filter_manager.get(TOPIC, GROUP) is not None

        run(scenario())


def test_check_client_config_compiles_the_expression(sql_broker: BrokerContext) -> None:
    def check(expression: str) -> object:
        subscription = SubscriptionData.from_expression(TOPIC, expression, "SQL92")
        body = CheckClientRequestBody(client_id="c1", group=GROUP, subscription_data=subscription)
        return create_request(RequestCode.CHECK_CLIENT_CONFIG, body=body.encode())

    async def scenario() -> None:
        async with Serving(sql_broker) as serving:
            good = await serving.invoke(check("a > 5 AND b IN ('x', 'y')"))  # type: ignore[arg-type]
            bad = await serving.invoke(check("a > 'x'"))  # type: ignore[arg-type]
        assert good.code == ResponseCode.SUCCESS
        assert bad.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
        assert bad.remark == "invalid SQL92 expression at column 3: Value ''x'' cannot be compared."

    run(scenario())


# -- the registry ----------------------------------------------------------------------------


def manager(broker: BrokerContext, path: Path, clock: Clock) -> ConsumerFilterManager:
    return ConsumerFilterManager(path, broker.broker_config, clock)


def test_registry_versions(sql_broker: BrokerContext, tmp_path: Path, clock: Clock) -> None:
    filters = manager(sql_broker, tmp_path / "consumerFilter.json", clock)
    assert filters.register(TOPIC, GROUP, "a > 1", "SQL92", 10)
    assert not filters.register(TOPIC, GROUP, "a > 2", "SQL92", 9), "an older version is ignored"
    one = filters.get(TOPIC, GROUP)
    assert one is not None and one.data.expression == "a > 1"
    assert filters.register(TOPIC, GROUP, "a > 2", "SQL92", 11)
    one = filters.get(TOPIC, GROUP)
    assert one is not None and (one.data.expression, one.data.client_version) == ("a > 2", 11)
    assert not filters.register(TOPIC, GROUP, "a >", "SQL92", 12)
    assert filters.get(TOPIC, GROUP) is None, "a filter that no longer compiles is removed"
    assert not filters.register(TOPIC, GROUP, "TagA", "TAG", 13)
    assert filters.get(TOPIC, GROUP) is None


def is_dead(filters: ConsumerFilterManager) -> bool:
    one = filters.get(TOPIC, GROUP)
    assert one is not None
    return one.dead


def test_registry_death_and_revival(
    sql_broker: BrokerContext, tmp_path: Path, clock: Clock
) -> None:
    filters = manager(sql_broker, tmp_path / "consumerFilter.json", clock)
    subscription = SubscriptionData.from_expression(TOPIC, "a > 1", "SQL92")
    filters.register_group(GROUP, [subscription])
    clock.now += 1000
    filters.register_group(GROUP, [])
    assert is_dead(filters), "a topic the group left has a dead filter"
    filters.register_group(GROUP, [subscription])
    assert not is_dead(filters), "the same version revives it"
    filters.unregister(GROUP)
    assert is_dead(filters)
    clock.now += sql_broker.broker_config.filter_data_clean_time_span
    filters.persist()
    assert filters.get(TOPIC, GROUP) is None, "dead for the clean span: dropped when persisted"


def test_file_as_apache_writes_it(sql_broker: BrokerContext, tmp_path: Path, clock: Clock) -> None:
    path = tmp_path / "consumerFilter.json"
    filters = manager(sql_broker, path, clock)
    group, topic = "CG-push-sql92-selector", "Conf-push-sql92-selector"
    expression = "index > 5 AND parity = 'even'"
    filters.register(topic, group, expression, "SQL92", 1795659767900)
    clock.now += 1138
    filters.unregister(group)
    one = filters.get(topic, group)
    assert one is not None
    born = one.data.born_time
    filters.persist()
    # The file Apache 4.9.8's broker wrote for this group (its times replaced by ours).
    assert path.read_text(encoding="utf-8") == (
        '{\n\t"filterDataByTopic":{\n\t\t"Conf-push-sql92-selector":{\n'
        '\t\t\t"groupFilterData":{\n\t\t\t\t"CG-push-sql92-selector":{\n'
        '\t\t\t\t\t"bloomFilterData":{\n\t\t\t\t\t\t"bitNum":112,\n'
        '\t\t\t\t\t\t"bitPos":[75,70,65]\n\t\t\t\t\t},\n'
        f'\t\t\t\t\t"bornTime":{born},\n\t\t\t\t\t"clientVersion":1795659767900,\n'
        '\t\t\t\t\t"consumerGroup":"CG-push-sql92-selector",\n\t\t\t\t\t"dead":true,\n'
        f'\t\t\t\t\t"deadTime":{born + 1138},\n'
        '\t\t\t\t\t"expression":"index > 5 AND parity = \'even\'",\n'
        '\t\t\t\t\t"expressionType":"SQL92",\n'
        '\t\t\t\t\t"topic":"Conf-push-sql92-selector"\n\t\t\t\t}\n\t\t\t},\n'
        '\t\t\t"topic":"Conf-push-sql92-selector"\n\t\t}\n\t}\n}'
    )
    reloaded = manager(sql_broker, path, clock)
    reloaded.load()
    again = reloaded.get(topic, group)
    assert again is not None and again.selector is not None
    assert again.selector.matches({"index": "6", "parity": "even"})


def test_loaded_live_filters_count_as_dead(
    sql_broker: BrokerContext, tmp_path: Path, clock: Clock
) -> None:
    path = tmp_path / "consumerFilter.json"
    filters = manager(sql_broker, path, clock)
    filters.register(TOPIC, GROUP, "a > 1", "SQL92", 5)
    filters.persist()
    assert (
        fastjson.loads(path.read_text())["filterDataByTopic"][TOPIC]["groupFilterData"][GROUP][
            "dead"
        ]
        is False
    )
    clock.now += 60_000
    reloaded = manager(sql_broker, path, clock)
    reloaded.load()
    one = reloaded.get(TOPIC, GROUP)
    assert one is not None and one.dead
    assert one.data.dead_time == clock() - 30_000


def _arrive(broker: BrokerContext, a: int) -> None:
    properties = encode_properties_bytes({"a": str(a)})
    result = broker.store.put_message(InnerMessage(TOPIC, 0, b"late", properties=properties))
    broker.pull_hold.notify_message_arriving(TOPIC, 0, result.queue_offset + 1, 0)


def test_parked_sql_pull_wakes_only_for_a_matching_message(sql_broker: BrokerContext) -> None:
    put_numbered(sql_broker, 2)

    async def scenario() -> None:
        async with Serving(sql_broker) as serving:
            request = pull_request(
                offset=2,
                sys_flag=PULL_SUSPEND | PULL_SUBSCRIPTION,
                suspend_ms=20_000,
                subscription="a = 5",
                expression_type="SQL92",
            )
            parked = asyncio.create_task(serving.invoke(request, timeout=30.0))
            await until(lambda: sql_broker.pull_hold.held_count() == 1)
            _arrive(sql_broker, 3)
            assert sql_broker.pull_hold.held_count() == 1, "a message that does not match"
            _arrive(sql_broker, 5)
            assert sql_broker.pull_hold.held_count() == 0
            response = await parked
        assert indexes(response) == [5]

    run(scenario())
