"""The name server's request handlers: request code -> route table / KV config / settings.

One async handler per request code the Apache name server serves (its
`DefaultRequestProcessor`), registered on the remoting server by `NamesrvProcessor.register`.
A handler decodes the custom header (a bad one becomes SYSTEM_ERROR in the remoting layer),
calls `RouteInfoManager` or `KVConfigManager` and builds the response.  Codes the name server
does not serve get REQUEST_CODE_NOT_SUPPORTED from the remoting layer; Apache's name server
sends nothing at all for them and its clients time out, which helps nobody.

Bodies are written with `rmq.common.fastjson` exactly as Apache writes them (spec §2.6): bean
properties in alphabetical order, integer map keys bare (`"brokerAddrs":{0:"..."}`), null
properties left out.  The one exception is the route answer to a request of version >= 4.9.4
or with `acceptStandardJsonOnly=true`: standard JSON (quoted and sorted keys, non-ASCII
escaped), as Apache 4.9.4+ sends it (spec §2.8).

REGISTER_BROKER bodies come in three forms (spec §2.5), all decoded by
`decode_register_broker_body`: a bare TopicConfigSerializeWrapper from brokers older than
3.0.11 (version < 37), a RegisterBrokerBody in JSON, or the zlib-compressed binary form
(`compressed=true`: length-prefixed DataVersion JSON, topic configs as
"<name> <read> <write> <perm> <filterType>" text, filter-server list JSON).  A non-zero
`bodyCrc32` header is checked against the body first.
"""

from __future__ import annotations

import logging
import struct
import zlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rmq.common import fastjson, javaprops
from rmq.common.config import (
    ConfigBlackListError,
    ConfigError,
    NamesrvConfigs,
    to_properties,
    update_config,
)
from rmq.remoting.codes import MQVersion, RequestCode, ResponseCode
from rmq.remoting.command import Buffer, RemotingCommand, create_response
from rmq.remoting.connection import Connection
from rmq.remoting.headers import (
    AddWritePermOfBrokerRequestHeader,
    AddWritePermOfBrokerResponseHeader,
    DeleteKVConfigRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    PutKVConfigRequestHeader,
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnRegisterBrokerRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)
from rmq.remoting.server import RemotingServer
from rmq.server.namesrv.kvconfig import NAMESPACE_ORDER_TOPIC_CONFIG, KVConfigManager
from rmq.server.namesrv.routeinfo import (
    BrokerData,
    DataVersion,
    RegisteredTopic,
    RouteInfoManager,
    TopicList,
    TopicRouteData,
    now_millis,
)
from rmq.store.configfile import persist_config_text

log = logging.getLogger("rmq.namesrv")

FAQ_URL = "http://rocketmq.apache.org/docs/faq/"


def suggest_todo(url: str) -> str:
    """The hint Apache appends to some error remarks (`FAQUrl.suggestTodo`)."""
    return f"\nSee {url} for further details."


Handler = Callable[[Connection, RemotingCommand], Awaitable[RemotingCommand]]

_INT32 = struct.Struct(">i")

# -- bodies --------------------------------------------------------------------------------


class RegisterBodyError(ValueError):
    """A REGISTER_BROKER body that cannot be decoded."""


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """What a REGISTER_BROKER body says: topic config version, topics, filter servers.

    `filter_server_list` is None for pre-3.0.11 brokers, whose body has no such list.
    """

    data_version: DataVersion
    topics: list[RegisteredTopic]
    filter_server_list: list[str] | None


def decode_register_broker_body(
    body: Buffer | None, *, compressed: bool, with_filter_servers: bool
) -> BrokerRegistration:
    """Decode a REGISTER_BROKER body (see the module docstring for its three forms).

    Without a body the broker has no topics and version (counter 0, timestamp 0).
    """
    if not body:
        return BrokerRegistration(DataVersion(0, 0), [], [] if with_filter_servers else None)
    try:
        if not with_filter_servers:
            data_version, topics = _topic_config_wrapper(fastjson.loads(body))
            return BrokerRegistration(data_version, topics, None)
        if compressed:
            return _decode_compressed_body(zlib.decompress(body))
        document = _object(fastjson.loads(body), "RegisterBrokerBody")
        data_version, topics = _topic_config_wrapper(document.get("topicConfigSerializeWrapper"))
        filter_servers = document.get("filterServerList") or []
        return BrokerRegistration(data_version, topics, [str(addr) for addr in filter_servers])
    except (ValueError, TypeError, AttributeError, zlib.error, struct.error) as exc:
        raise RegisterBodyError(f"Failed to decode RegisterBrokerBody: {exc}") from exc


def _object(value: Any, what: str) -> dict[Any, Any]:
    if not isinstance(value, dict):
        raise RegisterBodyError(f"{what} is not a JSON object")
    return value


def _data_version(value: Any) -> DataVersion:
    """A DataVersion JSON object; missing fields take Java's defaults (now, counter 0)."""
    document = _object(value, "dataVersion")
    return DataVersion(
        timestamp=int(document.get("timestamp", now_millis())),
        counter=int(document.get("counter", 0)),
    )


def _topic_config_wrapper(value: Any) -> tuple[DataVersion, list[RegisteredTopic]]:
    document = _object(value if value is not None else {}, "topicConfigSerializeWrapper")
    raw_version = document.get("dataVersion")
    data_version = _data_version(raw_version if raw_version is not None else {})
    table = _object(document.get("topicConfigTable") or {}, "topicConfigTable")
    topics = [
        _topic_config(str(name), _object(config, "TopicConfig")) for name, config in table.items()
    ]
    return data_version, topics


def _topic_config(name: str, config: Mapping[str, Any]) -> RegisteredTopic:
    defaults = RegisteredTopic(name)
    return RegisteredTopic(
        topic_name=str(config.get("topicName") or name),
        read_queue_nums=int(config.get("readQueueNums", defaults.read_queue_nums)),
        write_queue_nums=int(config.get("writeQueueNums", defaults.write_queue_nums)),
        perm=int(config.get("perm", defaults.perm)),
        topic_sys_flag=int(config.get("topicSysFlag", defaults.topic_sys_flag)),
    )


_TOPIC_FILTER_TYPES = frozenset({"SINGLE_TAG", "MULTI_TAG"})


def _topic_config_from_text(text: str) -> RegisteredTopic:
    """TopicConfig's text form "<name> <read> <write> <perm> <filterType>" (no sysflag)."""
    parts = text.split(" ")
    while parts and not parts[-1]:
        parts.pop()
    if len(parts) != 5 or parts[4] not in _TOPIC_FILTER_TYPES:
        raise RegisterBodyError(f"bad topic config {text!r}")
    name, read, write, perm, _ = parts
    return RegisteredTopic(name, int(read), int(write), int(perm))


def _decode_compressed_body(data: bytes) -> BrokerRegistration:
    view = memoryview(data)
    position = 0

    def read_int() -> int:
        nonlocal position
        (value,) = _INT32.unpack_from(view, position)
        position += 4
        return int(value)

    def read_block() -> bytes:
        nonlocal position
        length = read_int()
        if length < 0 or position + length > len(view):
            raise RegisterBodyError("a length runs past the end of the compressed body")
        block = bytes(view[position : position + length])
        position += length
        return block

    data_version = _data_version(fastjson.loads(read_block()))
    topics = [_topic_config_from_text(read_block().decode("utf-8")) for _ in range(read_int())]
    filter_servers = fastjson.loads(read_block())
    return BrokerRegistration(
        data_version,
        topics,
        [str(addr) for addr in filter_servers] if filter_servers is not None else None,
    )


def data_version_json(version: DataVersion) -> dict[str, int]:
    return {"counter": version.counter, "timestamp": version.timestamp}


def broker_data_json(broker: BrokerData) -> dict[str, Any]:
    return {
        "brokerAddrs": dict(broker.broker_addrs),
        "brokerName": broker.broker_name,
        "cluster": broker.cluster,
    }


def topic_route_json(route: TopicRouteData) -> dict[str, Any]:
    """TopicRouteData as fastjson writes it (properties in alphabetical order)."""
    return {
        "brokerDatas": [broker_data_json(broker) for broker in route.broker_datas],
        "filterServerTable": route.filter_server_table,
        "orderTopicConf": route.order_topic_conf,
        "queueDatas": [
            {
                "brokerName": queue.broker_name,
                "perm": queue.perm,
                "readQueueNums": queue.read_queue_nums,
                "topicSysFlag": queue.topic_sys_flag,
                "writeQueueNums": queue.write_queue_nums,
            }
            for queue in route.queue_datas
        ],
    }


def topic_list_json(topics: TopicList) -> dict[str, Any]:
    return {"brokerAddr": topics.broker_addr, "topicList": topics.topic_list}


def kv_table_json(table: Mapping[str, str]) -> dict[str, Any]:
    return {"table": dict(table)}


def _success(header: object | None = None, body: bytes | None = None) -> RemotingCommand:
    return create_response(ResponseCode.SUCCESS, None, header, body=body)


def _json_body(value: Any, *, standard: bool = False) -> bytes:
    return fastjson.dumps_bytes(value, standard=standard)


def _topic_list_response(topics: TopicList) -> RemotingCommand:
    return _success(body=_json_body(topic_list_json(topics)))


def _topic_list_handler(listing: Callable[[], TopicList]) -> Handler:
    """The handler of a topic list request without a header."""

    async def handler(connection: Connection, request: RemotingCommand) -> RemotingCommand:
        return _topic_list_response(listing())

    return handler


# -- the processor -------------------------------------------------------------------------


class NamesrvProcessor:
    """Serves the name server's request codes from its route table, KV config and settings.

    `file_properties` are the keys of the `-c` file that no config object knows: Apache keeps
    them in its config view, so GET_NAMESRV_CONFIG shows them and UPDATE_NAMESRV_CONFIG may
    change them.
    """

    def __init__(
        self,
        routes: RouteInfoManager,
        kv: KVConfigManager,
        configs: NamesrvConfigs,
        file_properties: Mapping[str, str] | None = None,
    ) -> None:
        self.routes = routes
        self.kv = kv
        self.configs = configs
        self._extra_properties = {
            key: value
            for key, value in (file_properties or {}).items()
            if key not in to_properties(*configs.all())
        }

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.PUT_KV_CONFIG: self.put_kv_config,
            RequestCode.GET_KV_CONFIG: self.get_kv_config,
            RequestCode.DELETE_KV_CONFIG: self.delete_kv_config,
            RequestCode.QUERY_DATA_VERSION: self.query_data_version,
            RequestCode.REGISTER_BROKER: self.register_broker,
            RequestCode.UNREGISTER_BROKER: self.unregister_broker,
            RequestCode.GET_ROUTEINFO_BY_TOPIC: self.get_route_info_by_topic,
            RequestCode.GET_BROKER_CLUSTER_INFO: self.get_broker_cluster_info,
            RequestCode.WIPE_WRITE_PERM_OF_BROKER: self.wipe_write_perm_of_broker,
            RequestCode.ADD_WRITE_PERM_OF_BROKER: self.add_write_perm_of_broker,
            RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: _topic_list_handler(
                self.routes.get_all_topic_list
            ),
            RequestCode.DELETE_TOPIC_IN_NAMESRV: self.delete_topic_in_namesrv,
            RequestCode.GET_KVLIST_BY_NAMESPACE: self.get_kv_list_by_namespace,
            RequestCode.GET_TOPICS_BY_CLUSTER: self.get_topics_by_cluster,
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS: _topic_list_handler(
                self.routes.get_system_topic_list
            ),
            RequestCode.GET_UNIT_TOPIC_LIST: _topic_list_handler(self.routes.get_unit_topic_list),
            RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST: _topic_list_handler(
                self.routes.get_has_unit_sub_topic_list
            ),
            RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: _topic_list_handler(
                self.routes.get_has_unit_sub_ununit_topic_list
            ),
            RequestCode.UPDATE_NAMESRV_CONFIG: self.update_namesrv_config,
            RequestCode.GET_NAMESRV_CONFIG: self.get_namesrv_config,
        }

    def register(self, server: RemotingServer) -> None:
        for code, handler in self.handlers().items():
            server.register(code, handler)

    # -- KV config -----------------------------------------------------------------------

    async def put_kv_config(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(PutKVConfigRequestHeader)
        self.kv.put(header.namespace, header.key, header.value)
        return _success()

    async def get_kv_config(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(GetKVConfigRequestHeader)
        value = self.kv.get(header.namespace, header.key)
        if value is None:
            return create_response(
                ResponseCode.QUERY_NOT_FOUND,
                f"No config item, Namespace: {header.namespace} Key: {header.key}",
            )
        return _success(GetKVConfigResponseHeader(value=value))

    async def delete_kv_config(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(DeleteKVConfigRequestHeader)
        self.kv.delete(header.namespace, header.key)
        return _success()

    async def get_kv_list_by_namespace(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(GetKVListByNamespaceRequestHeader)
        table = self.kv.get_namespace(header.namespace)
        if table is None:
            return create_response(
                ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {header.namespace}"
            )
        return _success(body=_json_body(kv_table_json(table)))

    # -- broker registration -------------------------------------------------------------

    async def register_broker(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(RegisterBrokerRequestHeader)
        body = request.body
        if header.body_crc32 != 0:
            crc32 = zlib.crc32(body) & 0x7FFFFFFF if body else 0
            if crc32 != header.body_crc32:
                log.warning("registerBroker from %s: crc32 not match", connection)
                return create_response(ResponseCode.SYSTEM_ERROR, "crc32 not match")
        try:
            registration = decode_register_broker_body(
                body,
                compressed=header.compressed,
                with_filter_servers=request.version >= MQVersion.V3_0_11,
            )
        except RegisterBodyError as exc:
            log.warning("registerBroker from %s: %s", connection, exc)
            return create_response(ResponseCode.SYSTEM_ERROR, str(exc))
        result = self.routes.register_broker(
            header.cluster_name,
            header.broker_addr,
            header.broker_name,
            header.broker_id,
            header.ha_server_addr,
            registration.data_version,
            registration.topics,
            registration.filter_server_list,
            connection,
        )
        order_topic_config = self.kv.get_namespace(NAMESPACE_ORDER_TOPIC_CONFIG)
        return _success(
            RegisterBrokerResponseHeader(
                ha_server_addr=result.ha_server_addr, master_addr=result.master_addr
            ),
            _json_body(kv_table_json(order_topic_config))
            if order_topic_config is not None
            else None,
        )

    async def unregister_broker(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(UnRegisterBrokerRequestHeader)
        self.routes.unregister_broker(
            header.cluster_name, header.broker_addr, header.broker_name, header.broker_id
        )
        log.info(
            "broker %s (%s id %d) unregistered",
            header.broker_addr,
            header.broker_name,
            header.broker_id,
        )
        return _success()

    async def query_data_version(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(QueryDataVersionRequestHeader)
        reported: DataVersion | None = None
        if request.body:
            document = fastjson.loads(request.body)
            reported = _data_version(document) if document is not None else None
        changed = reported is None or self.routes.is_broker_topic_config_changed(
            header.broker_addr, reported
        )
        if not changed:
            self.routes.touch_broker(header.broker_addr)
        known = self.routes.query_broker_data_version(header.broker_addr)
        return _success(
            QueryDataVersionResponseHeader(changed=changed),
            _json_body(data_version_json(known)) if known is not None else None,
        )

    # -- routes and clusters -------------------------------------------------------------

    async def get_route_info_by_topic(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(GetRouteInfoRequestHeader)
        route = self.routes.pickup_topic_route_data(header.topic)
        if route is None:
            log.debug(
                "GET_ROUTEINFO_BY_TOPIC topic=%s from %s -> TOPIC_NOT_EXIST",
                header.topic,
                connection,
            )
            return create_response(
                ResponseCode.TOPIC_NOT_EXIST,
                f"No topic route info in name server for the topic: {header.topic}"
                + suggest_todo(FAQ_URL),
            )
        if self.configs.namesrv.order_message_enable:
            route.order_topic_conf = self.kv.get(NAMESPACE_ORDER_TOPIC_CONFIG, header.topic)
        standard = request.version >= MQVersion.V4_9_4 or bool(header.accept_standard_json_only)
        return _success(body=_json_body(topic_route_json(route), standard=standard))

    async def get_broker_cluster_info(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        info = self.routes.get_all_cluster_info()
        return _success(
            body=_json_body(
                {
                    "brokerAddrTable": {
                        name: broker_data_json(broker)
                        for name, broker in info.broker_addr_table.items()
                    },
                    "clusterAddrTable": info.cluster_addr_table,
                }
            )
        )

    async def wipe_write_perm_of_broker(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(WipeWritePermOfBrokerRequestHeader)
        count = self.routes.wipe_write_perm_of_broker(header.broker_name)
        log.info(
            "wipe write perm of broker[%s], client: %s, %d", header.broker_name, connection, count
        )
        return _success(WipeWritePermOfBrokerResponseHeader(wipe_topic_count=count))

    async def add_write_perm_of_broker(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(AddWritePermOfBrokerRequestHeader)
        count = self.routes.add_write_perm_of_broker(header.broker_name)
        log.info(
            "add write perm of broker[%s], client: %s, %d", header.broker_name, connection, count
        )
        return _success(AddWritePermOfBrokerResponseHeader(add_topic_count=count))

    async def delete_topic_in_namesrv(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(DeleteTopicFromNamesrvRequestHeader)
        self.routes.delete_topic(header.topic, header.cluster_name or None)
        return _success()

    # -- topic lists ---------------------------------------------------------------------

    async def get_topics_by_cluster(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = request.read_header(GetTopicsByClusterRequestHeader)
        return _topic_list_response(self.routes.get_topics_by_cluster(header.cluster))

    # -- the name server's own settings --------------------------------------------------

    def config_properties(self) -> dict[str, str]:
        """Every setting as Java keys and text: the `-c` file's extra keys, then the configs."""
        return {**self._extra_properties, **to_properties(*self.configs.all())}

    async def get_namesrv_config(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        return _success(body=javaprops.dumps(self.config_properties()).encode("utf-8"))

    async def update_namesrv_config(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        log.info("updateConfig called by %s", connection)
        if not request.body:
            return _success()
        try:
            props = javaprops.loads(bytes(request.body).decode("utf-8"))
        except (UnicodeDecodeError, javaprops.PropertiesSyntaxError) as exc:
            return create_response(ResponseCode.SYSTEM_ERROR, f"string2Properties error: {exc}")
        try:
            unknown = update_config(props, *self.configs.all(), source="UPDATE_NAMESRV_CONFIG")
        except ConfigBlackListError as exc:
            log.warning("updateConfig from %s refused: %s", connection, exc)
            return create_response(
                ResponseCode.NO_PERMISSION, "Can not update config in black list."
            )
        except ConfigError as exc:
            return create_response(ResponseCode.SYSTEM_ERROR, str(exc))
        for key in unknown:
            if key in self._extra_properties:
                self._extra_properties[key] = props[key]
        path = self.configs.namesrv.config_store_path
        try:
            persist_config_text(path, javaprops.dumps(self.config_properties()))
        except OSError as exc:
            log.error("updateConfig: cannot persist the config to %s: %s", path, exc)
            return create_response(
                ResponseCode.SYSTEM_ERROR,
                f"config updated in memory but not persisted to {path}: {exc.strerror}",
            )
        return _success()
