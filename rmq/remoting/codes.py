"""Numbers of the remoting protocol: request codes, response codes, languages, versions, flags.

Everything here is a constant that travels on the wire.  The request and response codes are
IntEnums so that a command's `code` can be compared with them directly and logged by name;
a code that is not listed (a newer client, a typo) is still a plain int and is answered with
REQUEST_CODE_NOT_SUPPORTED by the server, never rejected while decoding.

Versions are ordinals of Java's `MQVersion.Version` enum: only the few that change behaviour
somewhere in rmq are named (`MQVersion`); `version_desc` names any of them as Java's
`MQVersion.getVersionDesc` does (the broker's remarks and the admin tools print it).  rmq
speaks the Java dialect of the protocol (V2 send headers, string-only extFields, JSON headers
by default) and identifies itself as a 4.9.8 Java peer, so Apache brokers and clients treat
it exactly like their own kind.
"""

from __future__ import annotations

import enum
import functools


class RequestCode(enum.IntEnum):
    """Request codes of RocketMQ 4.9.8 (`RequestCode`), including those with no handler."""

    SEND_MESSAGE = 10
    PULL_MESSAGE = 11
    QUERY_MESSAGE = 12
    QUERY_BROKER_OFFSET = 13
    QUERY_CONSUMER_OFFSET = 14
    UPDATE_CONSUMER_OFFSET = 15
    UPDATE_AND_CREATE_TOPIC = 17
    GET_ALL_TOPIC_CONFIG = 21
    GET_TOPIC_CONFIG_LIST = 22
    GET_TOPIC_NAME_LIST = 23
    UPDATE_BROKER_CONFIG = 25
    GET_BROKER_CONFIG = 26
    TRIGGER_DELETE_FILES = 27
    GET_BROKER_RUNTIME_INFO = 28
    SEARCH_OFFSET_BY_TIMESTAMP = 29
    GET_MAX_OFFSET = 30
    GET_MIN_OFFSET = 31
    GET_EARLIEST_MSG_STORETIME = 32
    VIEW_MESSAGE_BY_ID = 33
    HEART_BEAT = 34
    UNREGISTER_CLIENT = 35
    CONSUMER_SEND_MSG_BACK = 36
    END_TRANSACTION = 37
    GET_CONSUMER_LIST_BY_GROUP = 38
    CHECK_TRANSACTION_STATE = 39
    NOTIFY_CONSUMER_IDS_CHANGED = 40
    LOCK_BATCH_MQ = 41
    UNLOCK_BATCH_MQ = 42
    GET_ALL_CONSUMER_OFFSET = 43
    GET_ALL_DELAY_OFFSET = 45
    CHECK_CLIENT_CONFIG = 46
    UPDATE_AND_CREATE_ACL_CONFIG = 50
    DELETE_ACL_CONFIG = 51
    GET_BROKER_CLUSTER_ACL_INFO = 52
    UPDATE_GLOBAL_WHITE_ADDRS_CONFIG = 53
    # Removed in 4.9.8; named so that a request from an older mqadmin is logged by name.
    GET_BROKER_CLUSTER_ACL_CONFIG = 54
    PUT_KV_CONFIG = 100
    GET_KV_CONFIG = 101
    DELETE_KV_CONFIG = 102
    REGISTER_BROKER = 103
    UNREGISTER_BROKER = 104
    GET_ROUTEINFO_BY_TOPIC = 105
    GET_BROKER_CLUSTER_INFO = 106
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP = 200
    GET_ALL_SUBSCRIPTIONGROUP_CONFIG = 201
    GET_TOPIC_STATS_INFO = 202
    GET_CONSUMER_CONNECTION_LIST = 203
    GET_PRODUCER_CONNECTION_LIST = 204
    WIPE_WRITE_PERM_OF_BROKER = 205
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
    DELETE_SUBSCRIPTIONGROUP = 207
    GET_CONSUME_STATS = 208
    SUSPEND_CONSUMER = 209
    RESUME_CONSUMER = 210
    RESET_CONSUMER_OFFSET_IN_CONSUMER = 211
    RESET_CONSUMER_OFFSET_IN_BROKER = 212
    ADJUST_CONSUMER_THREAD_POOL = 213
    WHO_CONSUME_THE_MESSAGE = 214
    DELETE_TOPIC_IN_BROKER = 215
    DELETE_TOPIC_IN_NAMESRV = 216
    GET_KVLIST_BY_NAMESPACE = 219
    RESET_CONSUMER_CLIENT_OFFSET = 220
    GET_CONSUMER_STATUS_FROM_CLIENT = 221
    INVOKE_BROKER_TO_RESET_OFFSET = 222
    INVOKE_BROKER_TO_GET_CONSUMER_STATUS = 223
    GET_TOPICS_BY_CLUSTER = 224
    QUERY_TOPIC_CONSUME_BY_WHO = 300
    REGISTER_FILTER_SERVER = 301
    REGISTER_MESSAGE_FILTER_CLASS = 302
    QUERY_CONSUME_TIME_SPAN = 303
    GET_SYSTEM_TOPIC_LIST_FROM_NS = 304
    GET_SYSTEM_TOPIC_LIST_FROM_BROKER = 305
    CLEAN_EXPIRED_CONSUMEQUEUE = 306
    GET_CONSUMER_RUNNING_INFO = 307
    QUERY_CORRECTION_OFFSET = 308
    CONSUME_MESSAGE_DIRECTLY = 309
    SEND_MESSAGE_V2 = 310
    GET_UNIT_TOPIC_LIST = 311
    GET_HAS_UNIT_SUB_TOPIC_LIST = 312
    GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST = 313
    CLONE_GROUP_OFFSET = 314
    VIEW_BROKER_STATS_DATA = 315
    CLEAN_UNUSED_TOPIC = 316
    GET_BROKER_CONSUME_STATS = 317
    UPDATE_NAMESRV_CONFIG = 318
    GET_NAMESRV_CONFIG = 319
    SEND_BATCH_MESSAGE = 320
    QUERY_CONSUME_QUEUE = 321
    QUERY_DATA_VERSION = 322
    RESUME_CHECK_HALF_MESSAGE = 323
    SEND_REPLY_MESSAGE = 324
    SEND_REPLY_MESSAGE_V2 = 325
    PUSH_REPLY_MESSAGE_TO_CLIENT = 326
    ADD_WRITE_PERM_OF_BROKER = 327
    GET_ALL_PRODUCER_INFO = 328
    DELETE_EXPIRED_COMMITLOG = 329


# Requests whose header is SendMessageRequestHeader written with the V2 short keys a..n.
SHORT_KEY_SEND_CODES = frozenset(
    {RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2}
)


class ResponseCode(enum.IntEnum):
    """Response codes: `RemotingSysResponseCode` (0-4) and `ResponseCode` of 4.9.8."""

    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    REQUEST_CODE_NOT_SUPPORTED = 3
    TRANSACTION_FAILED = 4
    FLUSH_DISK_TIMEOUT = 10
    SLAVE_NOT_AVAILABLE = 11
    FLUSH_SLAVE_TIMEOUT = 12
    MESSAGE_ILLEGAL = 13
    SERVICE_NOT_AVAILABLE = 14
    VERSION_NOT_SUPPORTED = 15
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    TOPIC_EXIST_ALREADY = 18
    PULL_NOT_FOUND = 19
    PULL_RETRY_IMMEDIATELY = 20
    PULL_OFFSET_MOVED = 21
    QUERY_NOT_FOUND = 22
    SUBSCRIPTION_PARSE_FAILED = 23
    SUBSCRIPTION_NOT_EXIST = 24
    SUBSCRIPTION_NOT_LATEST = 25
    SUBSCRIPTION_GROUP_NOT_EXIST = 26
    FILTER_DATA_NOT_EXIST = 27
    FILTER_DATA_NOT_LATEST = 28
    TRANSACTION_SHOULD_COMMIT = 200
    TRANSACTION_SHOULD_ROLLBACK = 201
    TRANSACTION_STATE_UNKNOW = 202
    TRANSACTION_STATE_GROUP_WRONG = 203
    NO_BUYER_ID = 204
    NOT_IN_CURRENT_UNIT = 205
    CONSUMER_NOT_ONLINE = 206
    CONSUME_MSG_TIMEOUT = 207
    NO_MESSAGE = 208
    UPDATE_AND_CREATE_ACL_CONFIG_FAILED = 209
    DELETE_ACL_CONFIG_FAILED = 210
    UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED = 211
    FLOW_CONTROL = 215


class LanguageCode(enum.IntEnum):
    """The sender's language: the enum name travels in JSON headers, the value in binary ones."""

    JAVA = 0
    CPP = 1
    DOTNET = 2
    PYTHON = 3
    DELPHI = 4
    ERLANG = 5
    RUBY = 6
    OTHER = 7
    HTTP = 8
    GO = 9
    PHP = 10
    OMS = 11
    RUST = 12


class SerializeType(enum.IntEnum):
    """How a frame's header is encoded: the high byte of the frame's second int32."""

    JSON = 0
    ROCKETMQ = 1


# Bits of a command's `flag`.
RPC_TYPE = 0x1  # set on responses
RPC_ONEWAY = 0x2  # set on requests that expect no response


class MQVersion(enum.IntEnum):
    """Ordinals of `MQVersion.Version` that change behaviour somewhere in rmq."""

    V3_0_7_SNAPSHOT = 28  # the first client that takes offset resets and status calls
    V3_0_11 = 37  # namesrv: REGISTER_BROKER bodies carry the filter-server list from here on
    V3_1_8_SNAPSHOT = 62  # the first client that answers running info and direct consumption
    V3_4_9 = 121  # broker honours maxReconsumeTimes in send headers from here on
    V4_6_0 = 333  # what the C++ client 2.x sends
    V4_9_4 = 401  # namesrv answers GET_ROUTEINFO_BY_TOPIC with standard JSON from here on
    V4_9_8 = 409
    HIGHER_VERSION = 612  # the last ordinal; anything larger means "newer than we know"


def _releases() -> list[tuple[int, int, int]]:
    """The releases of `MQVersion.Version` from 3.1.8 on: 3.3 to 3.9 have no x.y.0."""
    early = [
        (3, minor, patch) for minor in (1, 2) for patch in range(10) if (minor, patch) >= (1, 8)
    ]
    late_three = [(3, minor, patch) for minor in range(3, 10) for patch in range(1, 10)]
    return (
        early
        + late_three
        + [(major, minor, patch) for major in (4, 5) for minor in range(10) for patch in range(10)]
    )


@functools.cache
def _version_names() -> tuple[str, ...]:
    """The names of `MQVersion.Version`, by ordinal: 3.0.0's alphas, betas and final, then
    a SNAPSHOT and a release of every version, then HIGHER_VERSION."""
    names = ["V3_0_0_SNAPSHOT", "V3_0_0_ALPHA1", *(f"V3_0_0_BETA{n}" for n in range(1, 6))]
    for n in range(6, 10):
        names += [f"V3_0_0_BETA{n}_SNAPSHOT", f"V3_0_0_BETA{n}"]
    names.append("V3_0_0_FINAL")
    versions = [(3, 0, n) for n in range(1, 16)] + [(3, 1, n) for n in range(8)] + _releases()
    for major, minor, patch in versions:
        names += [f"V{major}_{minor}_{patch}_SNAPSHOT", f"V{major}_{minor}_{patch}"]
    names.append("HIGHER_VERSION")
    assert names[MQVersion.V3_0_7_SNAPSHOT] == "V3_0_7_SNAPSHOT"
    assert names[MQVersion.V4_9_8] == "V4_9_8" and len(names) == MQVersion.HIGHER_VERSION + 1
    return tuple(names)


def version_desc(version: int) -> str:
    """`MQVersion.getVersionDesc`: the `Version` enum name of an ordinal (V4_9_8 for 409);
    past the last one, the last one (HIGHER_VERSION); a negative one as its number (Java
    would fail)."""
    if version < 0:
        return str(version)
    names = _version_names()
    return names[min(version, len(names) - 1)]


# The version rmq puts on every command it sends, requests and responses alike.
CURRENT_VERSION: int = MQVersion.V4_9_8.value

# The language rmq declares on every command it sends (see the module docstring).
CURRENT_LANGUAGE = LanguageCode.JAVA


def code_name(code: int, codes: type[enum.IntEnum]) -> str:
    """`NAME(code)` for logs, looked up in `codes`; an unknown code prints as its number."""
    try:
        return f"{codes(code).name}({code})"
    except ValueError:
        return str(code)
