"""Custom headers: every header class of RocketMQ 4.9.8, declared once.

A custom header is the typed view of a command's `extFields` (a flat string-to-string map).
Each header below is a slotted, keyword-only dataclass whose fields are the Java class's
fields in Java's declaration order.  The extFields key of a field is its Java name, derived
from the snake_case Python name (`consumer_group` -> `consumerGroup`); the two Java names
that camelCase cannot produce (`clientID`, `classCRC`) are given with `wire(key=...)`.
`wire(short=...)` gives the V2 short key of a field (SendMessageRequestHeaderV2's `a`..`n`).
There is no separate V2 class: a 310/320/325 request decodes straight into
`SendMessageRequestHeader` with `short_keys=True`, and encodes back to the short form the
same way.

The field types, what a bad header raises and how headers are encoded and decoded are
:mod:`rmq.remoting.headercodec`'s (`decode_header`, `encode_header`).
"""

from rmq.remoting.headercodec import Long, header, wire

# ---------------------------------------------------------------------------------------------
# Broker and client headers (org.apache.rocketmq.common.protocol.header)
# ---------------------------------------------------------------------------------------------


@header
class CheckTransactionStateRequestHeader:
    tran_state_table_offset: Long
    commit_log_offset: Long
    msg_id: str | None = None
    transaction_id: str | None = None
    offset_msg_id: str | None = None
    bname: str | None = None


@header
class CheckTransactionStateResponseHeader:
    producer_group: str
    tran_state_table_offset: Long
    commit_log_offset: Long
    commit_or_rollback: int


@header
class CloneGroupOffsetRequestHeader:
    src_group: str
    dest_group: str
    topic: str | None = None
    offline: bool = False


@header
class ConsumeMessageDirectlyResultRequestHeader:
    consumer_group: str
    client_id: str | None = None
    msg_id: str | None = None
    broker_name: str | None = None


@header
class ConsumerSendMsgBackRequestHeader:
    offset: Long
    group: str
    delay_level: int
    origin_msg_id: str | None = None
    origin_topic: str | None = None
    unit_mode: bool = False
    max_reconsume_times: int | None = None
    bname: str | None = None


@header
class CreateAccessConfigRequestHeader:
    access_key: str
    secret_key: str | None = None
    white_remote_address: str | None = None
    admin: bool = False
    default_topic_perm: str | None = None
    default_group_perm: str | None = None
    topic_perms: str | None = None
    group_perms: str | None = None


@header
class CreateTopicRequestHeader:
    topic: str
    default_topic: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_filter_type: str
    topic_sys_flag: int | None = None
    order: bool = False


@header
class DeleteAccessConfigRequestHeader:
    access_key: str


@header
class DeleteSubscriptionGroupRequestHeader:
    group_name: str
    remove_offset: bool = False


@header
class DeleteTopicRequestHeader:
    topic: str


@header
class EndTransactionRequestHeader:
    producer_group: str
    tran_state_table_offset: Long
    commit_log_offset: Long
    commit_or_rollback: int
    from_transaction_check: bool = False
    msg_id: str
    transaction_id: str | None = None
    bname: str | None = None


@header
class EndTransactionResponseHeader:
    pass


@header
class GetAllProducerInfoRequestHeader:
    pass


@header
class GetAllTopicConfigResponseHeader:
    pass


@header
class GetBrokerAclConfigResponseHeader:
    version: str
    all_acl_file_version: str | None = None
    broker_name: str
    broker_addr: str
    cluster_name: str


@header
class GetBrokerConfigResponseHeader:
    version: str


@header
class GetConsumeStatsInBrokerHeader:
    is_order: bool = False


@header
class GetConsumeStatsRequestHeader:
    consumer_group: str
    topic: str | None = None


@header
class GetConsumerConnectionListRequestHeader:
    consumer_group: str


@header
class GetConsumerListByGroupRequestHeader:
    consumer_group: str


@header
class GetConsumerListByGroupResponseHeader:
    pass


@header
class GetConsumerRunningInfoRequestHeader:
    consumer_group: str
    client_id: str
    jstack_enable: bool = False


@header
class GetConsumerStatusRequestHeader:
    topic: str
    group: str
    client_addr: str | None = None


@header
class GetEarliestMsgStoretimeRequestHeader:
    topic: str
    queue_id: int
    bname: str | None = None


@header
class GetEarliestMsgStoretimeResponseHeader:
    timestamp: Long


@header
class GetMaxOffsetRequestHeader:
    topic: str
    queue_id: int
    bname: str | None = None


@header
class GetMaxOffsetResponseHeader:
    offset: Long


@header
class GetMinOffsetRequestHeader:
    topic: str
    queue_id: int
    bname: str | None = None


@header
class GetMinOffsetResponseHeader:
    offset: Long


@header
class GetProducerConnectionListRequestHeader:
    producer_group: str


@header
class GetTopicStatsInfoRequestHeader:
    topic: str


@header
class GetTopicsByClusterRequestHeader:
    cluster: str


@header
class NotifyConsumerIdsChangedRequestHeader:
    consumer_group: str


@header
class PullMessageRequestHeader:
    consumer_group: str
    topic: str
    queue_id: int
    queue_offset: Long
    max_msg_nums: int
    sys_flag: int
    commit_offset: Long
    suspend_timeout_millis: Long
    subscription: str | None = None
    sub_version: Long
    expression_type: str | None = None
    bname: str | None = None


@header
class PullMessageResponseHeader:
    suggest_which_broker_id: Long
    next_begin_offset: Long
    min_offset: Long
    max_offset: Long


@header
class QueryConsumeQueueRequestHeader:
    topic: str | None = None
    queue_id: int = 0
    index: Long = 0
    count: int = 0
    consumer_group: str | None = None


@header
class QueryConsumeTimeSpanRequestHeader:
    topic: str
    group: str


@header
class QueryConsumerOffsetRequestHeader:
    consumer_group: str
    topic: str
    queue_id: int
    bname: str | None = None


@header
class QueryConsumerOffsetResponseHeader:
    offset: Long


@header
class QueryCorrectionOffsetHeader:
    filter_groups: str | None = None
    compare_group: str
    topic: str


@header
class QueryMessageRequestHeader:
    topic: str
    key: str
    max_num: int
    begin_timestamp: Long
    end_timestamp: Long


@header
class QueryMessageResponseHeader:
    index_last_update_timestamp: Long
    index_last_update_phyoffset: Long


@header
class QueryTopicConsumeByWhoRequestHeader:
    topic: str


@header
class ReplyMessageRequestHeader:
    producer_group: str
    topic: str
    default_topic: str
    default_topic_queue_nums: int
    queue_id: int
    sys_flag: int
    born_timestamp: Long
    flag: int
    properties: str | None = None
    reconsume_times: int | None = None
    unit_mode: bool = False
    born_host: str
    store_host: str
    store_timestamp: Long = 0


@header
class ResetOffsetRequestHeader:
    topic: str
    group: str
    timestamp: Long = 0
    is_force: bool = False


@header
class ResumeCheckHalfMessageRequestHeader:
    msg_id: str | None = None


@header
class SearchOffsetRequestHeader:
    topic: str
    queue_id: int
    timestamp: Long
    bname: str | None = None


@header
class SearchOffsetResponseHeader:
    offset: Long


@header
class SendMessageRequestHeader:
    """SEND_MESSAGE / SEND_REPLY_MESSAGE header; with `short_keys` the V2 header of
    SEND_MESSAGE_V2, SEND_BATCH_MESSAGE and SEND_REPLY_MESSAGE_V2."""

    producer_group: str = wire(short="a")
    topic: str = wire(short="b")
    default_topic: str = wire(short="c")
    default_topic_queue_nums: int = wire(short="d")
    queue_id: int = wire(short="e")
    sys_flag: int = wire(short="f")
    born_timestamp: Long = wire(short="g")
    flag: int = wire(short="h")
    properties: str | None = wire(short="i", default=None)
    reconsume_times: int | None = wire(short="j", default=None)
    unit_mode: bool = wire(short="k", default=False)
    batch: bool = wire(short="m", default=False)
    max_reconsume_times: int | None = wire(short="l", default=None)
    bname: str | None = wire(short="n", default=None)


@header
class SendMessageResponseHeader:
    msg_id: str
    queue_id: int
    queue_offset: Long
    transaction_id: str | None = None


@header
class UnregisterClientRequestHeader:
    client_id: str = wire(key="clientID")
    producer_group: str | None = None
    consumer_group: str | None = None


@header
class UnregisterClientResponseHeader:
    pass


@header
class UpdateConsumerOffsetRequestHeader:
    consumer_group: str
    topic: str
    queue_id: int
    commit_offset: Long
    bname: str | None = None


@header
class UpdateConsumerOffsetResponseHeader:
    pass


@header
class UpdateGlobalWhiteAddrsConfigRequestHeader:
    global_white_addrs: str
    acl_file_full_path: str | None = None
    """@CFNotNull in Java, yet Apache's broker accepts a request without it (mqadmin's
    updateGlobalWhiteAddr without -p sends none): the default file."""


@header
class ViewBrokerStatsDataRequestHeader:
    stats_name: str
    stats_key: str


@header
class ViewMessageRequestHeader:
    offset: Long


@header
class ViewMessageResponseHeader:
    pass


# ---------------------------------------------------------------------------------------------
# Filter server headers (header.filtersrv; no 4.9.8 process serves them)
# ---------------------------------------------------------------------------------------------


@header
class RegisterFilterServerRequestHeader:
    filter_server_addr: str


@header
class RegisterFilterServerResponseHeader:
    broker_name: str
    broker_id: Long = 0


@header
class RegisterMessageFilterClassRequestHeader:
    consumer_group: str
    topic: str
    class_name: str
    class_crc: int = wire(key="classCRC")


# ---------------------------------------------------------------------------------------------
# Name server headers (header.namesrv)
# ---------------------------------------------------------------------------------------------


@header
class AddWritePermOfBrokerRequestHeader:
    broker_name: str


@header
class AddWritePermOfBrokerResponseHeader:
    add_topic_count: int


@header
class DeleteKVConfigRequestHeader:
    namespace: str
    key: str


@header
class DeleteTopicFromNamesrvRequestHeader:
    topic: str
    cluster_name: str | None = None


@header
class GetKVConfigRequestHeader:
    namespace: str
    key: str


@header
class GetKVConfigResponseHeader:
    value: str | None = None


@header
class GetKVListByNamespaceRequestHeader:
    namespace: str


@header
class GetRouteInfoRequestHeader:
    topic: str
    accept_standard_json_only: bool | None = None


@header
class PutKVConfigRequestHeader:
    namespace: str
    key: str
    value: str


@header
class QueryDataVersionRequestHeader:
    broker_name: str
    broker_addr: str
    cluster_name: str
    broker_id: Long


@header
class QueryDataVersionResponseHeader:
    changed: bool


@header
class RegisterBrokerRequestHeader:
    broker_name: str
    broker_addr: str
    cluster_name: str
    ha_server_addr: str
    broker_id: Long
    compressed: bool = False
    body_crc32: int = 0


@header
class RegisterBrokerResponseHeader:
    ha_server_addr: str | None = None
    master_addr: str | None = None


@header
class RegisterOrderTopicRequestHeader:
    topic: str
    order_topic_string: str


@header
class UnRegisterBrokerRequestHeader:
    broker_name: str
    broker_addr: str
    cluster_name: str
    broker_id: Long


@header
class WipeWritePermOfBrokerRequestHeader:
    broker_name: str


@header
class WipeWritePermOfBrokerResponseHeader:
    wipe_topic_count: int
