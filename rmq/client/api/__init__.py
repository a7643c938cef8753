"""The client side of the RocketMQ protocol: one async function per request a client sends.

Every function takes the `RemotingClient` to send with and the address of the name server
or broker to ask, builds the request from the header classes of `rmq.remoting.headers` and
the bodies of `rmq.remoting.bodies`, and returns a typed result.  Nothing here keeps state,
retries or picks addresses: that is the job of `ClientInstance` (name server failover, route
cache) and of the producer and consumers (which broker, which queue, how often).

Errors, as the Java client's `MQClientAPIImpl` raises them:

* a broker answering with a code the call does not accept -> `MQBrokerError(code, remark,
  addr)`; the codes a call does accept are listed in its docstring (a send accepts SUCCESS
  and the three "stored, but" codes; a pull the four pull statuses);
* a name server doing so -> `MQClientError(code, remark)`, and TOPIC_NOT_EXIST for a route
  -> `RouteNotFound`;
* connection failures and timeouts -> the remoting layer's `RemotingConnectError` /
  `RemotingTimeoutError`, unchanged.

Timeouts are in seconds.  `request_broker` / `request_namesrv` are the two checks every
function goes through, public so that the admin API can send the requests that have no
function here without writing the checks again.

One module per request family, all re-exported here so callers write `api.send_message`:

* `request`: the two checks (`request_broker`, `request_namesrv`);
* `acl`: the plain ACL's admin requests (50-53), used as `rmq.client.api.acl` (not
  re-exported);
* `namesrv`: routes, cluster and topic lists, topic deletion and KV config on name servers;
* `send`: sends (`SendRequestTemplate`, `send_message`, `SendResult`) and send-back;
* `pull`: pulls and a queue's offsets (`pull_message`, consumer offsets, min/max, search);
* `group`: heartbeats, unregistering, a group's members, queue locks, CHECK_CLIENT_CONFIG;
* `lookup`: messages by offset message id and by key;
* `consumercalls`: what a broker asks a group's consumers for: offset reset, their offsets,
  running info, direct consumption;
* `brokeradmin`: creating and deleting topics on a broker, topic stats, runtime info;
* `consumerqueries`: who consumes a topic, group progress and time spans, consume queue
  entries, producers, correction and cloned offsets, system topics;
* `storeadmin`: a broker's store maintenance, stats items and half-message resume;
* `transaction`: END_TRANSACTION, a transactional producer's commit / rollback / unknown.
"""

from rmq.client.api.brokeradmin import (
    create_topic_request,
    delete_topic_in_broker,
    delete_topic_in_broker_request,
    get_broker_runtime_info,
    get_topic_stats_info,
    update_and_create_topic,
)
from rmq.client.api.consumercalls import (
    consume_message_directly,
    get_consumer_running_info,
    invoke_broker_to_get_consumer_status,
    invoke_broker_to_reset_offset,
)
from rmq.client.api.consumerqueries import (
    clone_group_offset,
    fetch_consume_stats_in_broker,
    get_all_producer_info,
    get_system_topic_list_from_broker,
    query_consume_queue,
    query_consume_time_span,
    query_correction_offset,
    query_topic_consume_by_who,
)
from rmq.client.api.group import (
    check_client_config,
    get_consumer_id_list,
    lock_batch_mq,
    send_heartbeat,
    unlock_batch_mq,
    unregister_client,
)
from rmq.client.api.lookup import (
    QueryResult,
    query_message,
    view_message,
)
from rmq.client.api.namesrv import (
    delete_topic_in_namesrv,
    delete_topic_in_namesrv_request,
    get_all_topic_list,
    get_broker_cluster_info,
    get_kv_config,
    get_topic_route,
    get_topics_by_cluster,
    put_kv_config,
    put_kv_config_request,
)
from rmq.client.api.pull import (
    PullResult,
    PullStatus,
    get_earliest_msg_store_time,
    get_max_offset,
    get_min_offset,
    pull_message,
    query_consumer_offset,
    search_offset,
    update_consumer_offset,
    update_consumer_offset_oneway,
)
from rmq.client.api.request import (
    body_of,
    request_broker,
    request_namesrv,
)
from rmq.client.api.send import (
    SendRequestTemplate,
    SendResult,
    SendStatus,
    consumer_send_msg_back,
    send_message,
    send_message_oneway,
    send_request,
    send_result,
)
from rmq.client.api.storeadmin import (
    clean_expired_consume_queue,
    clean_unused_topic,
    delete_expired_commitlog,
    resume_check_half_message,
    view_broker_stats_data,
)
from rmq.client.api.transaction import end_transaction_oneway, end_transaction_request

__all__ = [
    "PullResult",
    "PullStatus",
    "QueryResult",
    "SendRequestTemplate",
    "SendResult",
    "SendStatus",
    "body_of",
    "check_client_config",
    "clean_expired_consume_queue",
    "clean_unused_topic",
    "clone_group_offset",
    "consume_message_directly",
    "consumer_send_msg_back",
    "create_topic_request",
    "delete_expired_commitlog",
    "delete_topic_in_broker",
    "delete_topic_in_broker_request",
    "delete_topic_in_namesrv",
    "delete_topic_in_namesrv_request",
    "end_transaction_oneway",
    "end_transaction_request",
    "fetch_consume_stats_in_broker",
    "get_all_producer_info",
    "get_all_topic_list",
    "get_broker_cluster_info",
    "get_broker_runtime_info",
    "get_consumer_id_list",
    "get_consumer_running_info",
    "get_earliest_msg_store_time",
    "get_kv_config",
    "get_max_offset",
    "get_min_offset",
    "get_system_topic_list_from_broker",
    "get_topic_route",
    "get_topic_stats_info",
    "get_topics_by_cluster",
    "invoke_broker_to_get_consumer_status",
    "invoke_broker_to_reset_offset",
    "lock_batch_mq",
    "pull_message",
    "put_kv_config",
    "put_kv_config_request",
    "query_consume_queue",
    "query_consume_time_span",
    "query_consumer_offset",
    "query_correction_offset",
    "query_message",
    "query_topic_consume_by_who",
    "request_broker",
    "request_namesrv",
    "resume_check_half_message",
    "search_offset",
    "send_heartbeat",
    "send_message",
    "send_message_oneway",
    "send_request",
    "send_result",
    "unlock_batch_mq",
    "unregister_client",
    "update_and_create_topic",
    "update_consumer_offset",
    "update_consumer_offset_oneway",
    "view_broker_stats_data",
    "view_message",
]
