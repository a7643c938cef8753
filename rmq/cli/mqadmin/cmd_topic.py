"""mqadmin commands of the topic family: topics, subscription groups, order confs, store
maintenance and queue allocation, printing what mqadmin 4.9.8 prints.

Where mqadmin walks a Java hash set (the masters of a cluster), the lines come in that set's
order; the admin operations (`rmq.client.adminops.topic`) return them so.  A command with
neither of its `-b` / `-c` targets prints its usage, as mqadmin does.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from rmq.cli.mqadmin.javafmt import jprintf, jstr, parse_bool, parse_int
from rmq.cli.mqadmin.registry import Invocation, MqadminFailure, Opt, failing, subcommand

if TYPE_CHECKING:
    from rmq.remoting.bodies import MessageQueue, SubscriptionGroupConfig, TopicConfig


def topic_config_text(config: TopicConfig) -> str:
    """`TopicConfig.toString()`."""
    from rmq.common.perm import perm_to_string

    return (
        f"TopicConfig [topicName={config.topic_name}, readQueueNums={config.read_queue_nums}, "
        f"writeQueueNums={config.write_queue_nums}, perm={perm_to_string(config.perm)}, "
        f"topicFilterType={config.topic_filter_type.name}, "
        f"topicSysFlag={config.topic_sys_flag}, order={jstr(config.order)}]"
    )


def group_config_text(config: SubscriptionGroupConfig) -> str:
    """`SubscriptionGroupConfig.toString()`."""
    return (
        f"SubscriptionGroupConfig [groupName={config.group_name}, "
        f"consumeEnable={jstr(config.consume_enable)}, "
        f"consumeFromMinEnable={jstr(config.consume_from_min_enable)}, "
        f"consumeBroadcastEnable={jstr(config.consume_broadcast_enable)}, "
        f"retryQueueNums={config.retry_queue_nums}, retryMaxTimes={config.retry_max_times}, "
        f"brokerId={config.broker_id}, "
        f"whichBrokerWhenConsumeSlowly={config.which_broker_when_consume_slowly}, "
        f"notifyConsumerIdsChangedEnable={jstr(config.notify_consumer_ids_changed_enable)}]"
    )


# -- topics ---------------------------------------------------------------------------------


@subcommand(
    1,
    "updateTopic",
    "Update or create topic",
    Opt("b", "brokerAddr", True, False, "create topic to which broker", group="target"),
    Opt("c", "clusterName", True, False, "create topic to which cluster", group="target"),
    Opt("t", "topic", True, True, "topic name"),
    Opt("r", "readQueueNums", True, False, "set read queue nums"),
    Opt("w", "writeQueueNums", True, False, "set write queue nums"),
    Opt("p", "perm", True, False, "set topic's permission(2|4|6), intro[2:W 4:R; 6:RW]"),
    Opt("o", "order", True, False, "set topic's order(true|false)"),
    Opt("u", "unit", True, False, "is unit topic (true|false)"),
    Opt("s", "hasUnitSub", True, False, "has unit sub (true|false)"),
)
async def update_topic(inv: Invocation) -> None:
    from rmq.client.adminops.topic import cluster_order_conf, put_order_conf
    from rmq.common.javahash import java_hash_order
    from rmq.remoting.bodies import TopicConfig

    with failing("UpdateTopicSubCommand"):
        config = TopicConfig(topic_name=inv.value("t") or "", read_queue_nums=8, write_queue_nums=8)
        if inv.has("r"):
            config.read_queue_nums = parse_int(inv.value("r"))
        if inv.has("w"):
            config.write_queue_nums = parse_int(inv.value("w"))
        if inv.has("p"):
            config.perm = parse_int(inv.value("p"))
        config.topic_sys_flag = (1 if parse_bool(inv.value("u")) else 0) | (
            2 if parse_bool(inv.value("s")) else 0
        )
        config.order = parse_bool(inv.value("o"))
        broker, cluster = inv.value("b"), inv.value("c")
        if broker is None and cluster is None:
            inv.print_usage()
            return
        async with inv.admin() as admin:
            if broker is not None:
                update = await admin.create_or_update_topic(config, broker_addr=broker)
                if update.order_conf is not None:
                    jprintf(
                        inv.out,
                        "%s",
                        f"set broker orderConf. isOrder=true, orderConf=[{update.order_conf}]",
                    )
                jprintf(inv.out, "create topic to %s success.%n", broker)
            else:
                update = await admin.create_or_update_topic(config, cluster=cluster)
                for addr in java_hash_order(update.broker_addrs):
                    jprintf(inv.out, "create topic to %s success.%n", addr)
                if config.order:
                    # mqadmin writes the broker names in its hash set's order
                    info = await admin.cluster_info()
                    conf = cluster_order_conf(info, cluster or "", config.write_queue_nums)
                    await put_order_conf(admin, config.topic_name, conf)
                    jprintf(
                        inv.out, "set cluster orderConf. isOrder=%s, orderConf=[%s]", True, conf
                    )
        jprintf(inv.out, "%s", topic_config_text(config))


@subcommand(
    2,
    "deleteTopic",
    "Delete topic from broker and NameServer.",
    Opt("t", "topic", True, True, "topic name"),
    Opt("c", "clusterName", True, True, "delete topic from which cluster"),
)
async def delete_topic(inv: Invocation) -> None:
    with failing("DeleteTopicSubCommand"):
        topic, cluster = inv.value("t") or "", inv.value("c") or ""
        async with inv.admin() as admin:
            await admin.delete_topic(topic, cluster)
        jprintf(inv.out, "delete topic [%s] from cluster [%s] success.%n", topic, cluster)
        jprintf(inv.out, "delete topic [%s] from NameServer success.%n", topic)


@subcommand(
    6,
    "updateTopicPerm",
    "Update topic perm",
    Opt("b", "brokerAddr", True, False, "create topic to which broker"),
    Opt("c", "clusterName", True, False, "create topic to which cluster"),
    Opt("t", "topic", True, True, "topic name"),
    Opt("p", "perm", True, True, "set topic's permission(2|4|6), intro[2:W; 4:R; 6:RW]"),
)
async def update_topic_perm(inv: Invocation) -> None:
    from rmq.client.adminops.topic import NOT_A_MASTER, update_topic_perm

    with failing("UpdateTopicPermSubCommand"):
        topic = inv.value("t") or ""
        broker, cluster = inv.value("b"), inv.value("c")
        async with inv.admin() as admin:
            if broker is None and cluster is None:
                await admin.topic_route(topic)
                parse_int(inv.value("p"))
                inv.print_usage()
                return
            perm = parse_int(inv.value("p"))
            try:
                done = await update_topic_perm(
                    admin, topic, perm, broker_addr=broker, cluster=None if broker else cluster
                )
            except Exception as exc:
                if str(exc) == NOT_A_MASTER:
                    jprintf(inv.out, "%s%n", NOT_A_MASTER)
                raise
        if done.unchanged:
            jprintf(inv.out, "new perm equals to the old one!%n")
            return
        for addr in done.broker_addrs:
            jprintf(
                inv.out,
                "update topic perm from %s to %s in %s success.%n",
                done.old_perm,
                perm,
                addr,
            )
        if broker is not None:
            jprintf(inv.out, "%s.%n", topic_config_text(done.config))


@subcommand(
    8,
    "topicStatus",
    "Examine topic Status info",
    Opt("t", "topic", True, True, "topic name"),
)
async def topic_status(inv: Invocation) -> None:
    from rmq.cli.topic import human_time
    from rmq.client.admin import AdminError

    with failing("TopicStatusSubCommand"):
        async with inv.admin() as admin:
            try:
                rows = await admin.topic_status(inv.value("t") or "")
            except AdminError as exc:
                if exc.failures:
                    raise
                rows = []
        header = ("#Broker Name", "#QID", "#Min Offset", "#Max Offset", "#Last Updated")
        jprintf(inv.out, "%-32s  %-4s  %-20s  %-20s    %s%n", *header)
        for row in rows:
            jprintf(
                inv.out,
                "%-32s  %-4d  %-20d  %-20d    %s%n",
                row.broker_name[:32],
                row.queue_id,
                row.min_offset,
                row.max_offset,
                human_time(row.last_update_timestamp),
            )


@subcommand(
    40,
    "allocateMQ",
    "Allocate MQ",
    Opt("t", "topic", True, True, "topic name"),
    Opt("i", "ipList", True, True, "ipList"),
)
async def allocate_mq(inv: Invocation) -> None:
    from rmq.client.adminops.topic import allocate_queues

    with failing("AllocateMQSubCommand"):
        clients = (inv.value("i") or "").split(",")
        async with inv.admin() as admin:
            shares = await allocate_queues(admin, inv.value("t") or "", clients)
        jprintf(inv.out, "%s%n", allocation_json(shares))


def allocation_json(shares: dict[str, list[MessageQueue]]) -> str:
    """fastjson's compact form of mqadmin's RebalanceResult."""
    result = {
        client: [
            {"brokerName": mq.broker_name, "queueId": mq.queue_id, "topic": mq.topic}
            for mq in queues
        ]
        for client, queues in shares.items()
    }
    return json.dumps({"result": result}, separators=(",", ":"), ensure_ascii=False)


# -- order conf -----------------------------------------------------------------------------


@subcommand(
    34,
    "updateOrderConf",
    "Create or update or delete order conf",
    Opt("t", "topic", True, True, "topic name"),
    Opt("v", "orderConf", True, False, "set order conf [eg. brokerName1:num;brokerName2:num]"),
    Opt("m", "method", True, True, "option type [eg. put|get|delete"),
)
async def update_order_conf(inv: Invocation) -> None:
    from rmq.client.adminops.topic import delete_order_conf, order_conf, put_order_conf

    with failing("UpdateOrderConfCommand"):
        topic, method = inv.value("t") or "", inv.value("m")
        if method not in ("get", "put", "delete"):
            inv.print_usage()
            return
        async with inv.admin() as admin:
            if method == "get":
                conf = await order_conf(admin, topic)
                jprintf(inv.out, "get orderConf success. topic=[%s], orderConf=[%s] ", topic, conf)
            elif method == "put":
                conf = inv.value("v") or ""
                if not conf.strip():
                    raise ValueError("please set orderConf with option -v.")
                await put_order_conf(admin, topic, conf)
                jprintf(
                    inv.out, "update orderConf success. topic=[%s], orderConf=[%s]", topic, conf
                )
            else:
                await delete_order_conf(admin, topic)
                jprintf(inv.out, "delete orderConf success. topic=[%s]", topic)


# -- store maintenance ----------------------------------------------------------------------


async def _maintenance(inv: Invocation, what: str, command_class: str) -> None:
    from rmq.client.adminops.topic import Maintenance, store_maintenance

    with failing(command_class):
        async with inv.admin() as admin:
            asked = await store_maintenance(
                admin, Maintenance[what], broker_addr=inv.value("b"), cluster=inv.value("c")
            )
        if not asked:
            inv.out.write("false")
            raise MqadminFailure(f"{command_class} command failed: no broker to ask")
        inv.out.write("success")


@subcommand(
    35,
    "cleanExpiredCQ",
    "Clean expired ConsumeQueue on broker.",
    Opt("b", "brokerAddr", True, False, "Broker address"),
    Opt("c", "cluster", True, False, "clustername"),
)
async def clean_expired_cq(inv: Invocation) -> None:
    await _maintenance(inv, "CLEAN_EXPIRED_CONSUMEQUEUE", "CleanExpiredCQSubCommand")


@subcommand(
    36,
    "deleteExpiredCommitLog",
    "Delete expired CommitLog files",
    Opt("n", "namesrvAddr", True, False, "Name server address"),
    Opt("b", "brokerAddr", True, False, "Broker address"),
    Opt("c", "cluster", True, False, "clustername"),
)
async def delete_expired_commitlog(inv: Invocation) -> None:
    await _maintenance(inv, "DELETE_EXPIRED_COMMITLOG", "DeleteExpiredCommitLogSubCommand")


@subcommand(
    37,
    "cleanUnusedTopic",
    "Clean unused topic on broker.",
    Opt("b", "brokerAddr", True, False, "Broker address"),
    Opt("c", "cluster", True, False, "cluster name"),
)
async def clean_unused_topic(inv: Invocation) -> None:
    await _maintenance(inv, "CLEAN_UNUSED_TOPIC", "CleanUnusedTopicCommand")


# -- subscription groups --------------------------------------------------------------------


@subcommand(
    3,
    "updateSubGroup",
    "Update or create subscription group",
    Opt("b", "brokerAddr", True, False, "create subscription group to which broker"),
    Opt("c", "clusterName", True, False, "create subscription group to which cluster"),
    Opt("g", "groupName", True, True, "consumer group name"),
    Opt("s", "consumeEnable", True, False, "consume enable"),
    Opt("m", "consumeFromMinEnable", True, False, "from min offset"),
    Opt("d", "consumeBroadcastEnable", True, False, "broadcast"),
    Opt("q", "retryQueueNums", True, False, "retry queue nums"),
    Opt("r", "retryMaxTimes", True, False, "retry max times"),
    Opt("i", "brokerId", True, False, "consumer from which broker id"),
    Opt("w", "whichBrokerWhenConsumeSlowly", True, False, "which broker id when consume slowly"),
    Opt("a", "notifyConsumerIdsChanged", True, False, "notify consumerId changed"),
)
async def update_sub_group(inv: Invocation) -> None:
    from rmq.client.adminops.topic import update_subscription_group
    from rmq.remoting.bodies import SubscriptionGroupConfig

    with failing("UpdateSubGroupSubCommand"):
        config = SubscriptionGroupConfig(
            group_name=inv.value("g") or "",
            consume_broadcast_enable=False,
            consume_from_min_enable=False,
        )
        if inv.has("s"):
            config.consume_enable = parse_bool(inv.value("s"))
        if inv.has("m"):
            config.consume_from_min_enable = parse_bool(inv.value("m"))
        if inv.has("d"):
            config.consume_broadcast_enable = parse_bool(inv.value("d"))
        if inv.has("q"):
            config.retry_queue_nums = parse_int(inv.value("q"))
        if inv.has("r"):
            config.retry_max_times = parse_int(inv.value("r"))
        if inv.has("i"):
            config.broker_id = parse_int(inv.value("i"), 64)
        if inv.has("w"):
            config.which_broker_when_consume_slowly = parse_int(inv.value("w"), 64)
        if inv.has("a"):
            config.notify_consumer_ids_changed_enable = parse_bool(inv.value("a"))
        broker, cluster = inv.value("b"), inv.value("c")
        if broker is None and cluster is None:
            inv.print_usage()
            return
        async with inv.admin() as admin:
            update = await update_subscription_group(
                admin, config, broker_addr=broker, cluster=None if broker else cluster
            )
        for addr in update.outcome.done:
            jprintf(inv.out, "create subscription group to %s success.%n", addr)
        if broker is not None and update.outcome.failures:
            raise next(iter(update.outcome.failures.values()))
        jprintf(inv.out, "%s", group_config_text(config))
        if update.outcome.failures:
            failed = ", ".join(update.outcome.failures)
            raise MqadminFailure(
                f"UpdateSubGroupSubCommand command failed: not created on {failed}"
            )


@subcommand(
    4,
    "deleteSubGroup",
    "Delete subscription group from broker.",
    Opt("b", "brokerAddr", True, False, "delete subscription group from which broker"),
    Opt("c", "clusterName", True, False, "delete subscription group from which cluster"),
    Opt("g", "groupName", True, True, "subscription group name"),
    Opt("r", "removeOffset", True, False, "remove offset"),
)
async def delete_sub_group(inv: Invocation) -> None:
    from rmq.client.adminops.topic import delete_subscription_group

    with failing("DeleteSubscriptionGroupCommand"):
        group = inv.value("g") or ""
        broker, cluster = inv.value("b"), inv.value("c")
        if broker is None and cluster is None:
            inv.print_usage()
            return
        async with inv.admin() as admin:
            done = await delete_subscription_group(
                admin,
                group,
                remove_offset=parse_bool(inv.value("r")),
                broker_addr=broker,
                cluster=None if broker else cluster,
            )
        for addr in done.broker_addrs:
            if broker is not None:
                jprintf(
                    inv.out,
                    "delete subscription group [%s] from broker [%s] success.%n",
                    group,
                    addr,
                )
            else:
                jprintf(
                    inv.out,
                    "delete subscription group [%s] from broker [%s] in cluster [%s] success.%n",
                    group,
                    addr,
                    cluster,
                )
        if done.failure is not None:
            raise done.failure
        for deletion in done.topic_deletions:
            jprintf(
                inv.out,
                "delete topic [%s] from cluster [%s] success.%n",
                deletion.topic,
                deletion.cluster,
            )
            jprintf(inv.out, "delete topic [%s] from NameServer success.%n", deletion.topic)
        if done.topic_failure is not None:
            raise done.topic_failure


@subcommand(
    46,
    "getConsumerConfig",
    "Get consumer config by subscription group name!",
    Opt("g", "groupName", True, True, "subscription group name"),
)
async def get_consumer_config(inv: Invocation) -> None:
    from rmq.client.adminops.topic import group_configs

    with failing("GetConsumerConfigSubCommand"):
        async with inv.admin() as admin:
            found = await group_configs(admin, inv.value("g") or "")
        for at in found:
            jprintf(
                inv.out,
                "=============================%s:%s=============================\n",
                at.cluster,
                at.broker_name,
            )
            config = at.config
            for name, value in (
                ("groupName", config.group_name),
                ("consumeEnable", config.consume_enable),
                ("consumeFromMinEnable", config.consume_from_min_enable),
                ("consumeBroadcastEnable", config.consume_broadcast_enable),
                ("retryQueueNums", config.retry_queue_nums),
                ("retryMaxTimes", config.retry_max_times),
                ("brokerId", config.broker_id),
                ("whichBrokerWhenConsumeSlowly", config.which_broker_when_consume_slowly),
                ("notifyConsumerIdsChangedEnable", config.notify_consumer_ids_changed_enable),
            ):
                jprintf(inv.out, "%s%-40s=  %s\n", "", name, value)
