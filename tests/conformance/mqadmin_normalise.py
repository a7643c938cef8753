"""What may legitimately differ between Apache's and rmq's answers to the same mqadmin command,
and nothing else.

Every rule here is one function with its reason in its docstring; a case of
tests/conformance/mqadmin_cases.py names the rules its output needs (`Case.rules`), and
`normalise` always applies `paths`, `addresses` and `ids` first.  A rule that hid a real
difference would be a defect: rules replace a value by a placeholder that keeps its kind (a
date-time by `<time>`, a number by its shape) and never drop a line, except `foreign`,
`json_document`, `rmq_only_keys`, `monitor_own_group` and `failure`, which say exactly what
they drop and why.

`Where` holds the facts of one cluster the rules need: its addresses, its directories, the
ids of the messages the set-up sent there and the names other modules left on it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from rmq.common.configobjects import RMQ_ONLY_KEYS as CONFIG_RMQ_ONLY_KEYS

Rule = Callable[[str, "Where"], str]

OWN_PREFIX = "Mqa"
"""Every topic and group the mqadmin tests create starts with this."""


@dataclass(frozen=True)
class Where:
    """One cluster as the rules see it."""

    namesrv_addr: str
    broker_addr: str
    paths: Mapping[str, str] = field(default_factory=dict)
    """Directory or file -> placeholder (the store, the servers' homes, the cluster root)."""
    ids: Mapping[str, str] = field(default_factory=dict)
    """Message id the set-up got back -> placeholder naming the message (`<msg-3>`)."""
    foreign: frozenset[str] = frozenset()
    """Topics and groups of other conformance modules on this cluster (`foreign`)."""
    foreign_topics: int = 0
    """How many of `foreign` are topics on the name server."""
    foreign_groups: int = 0
    """How many of `foreign` are subscription groups of the broker."""
    foreign_broker_topics: int = 0
    """How many topics of the broker's own table other conformance modules left."""


# -- helpers -------------------------------------------------------------------------------


def _keep_width(pattern: str, token: Callable[[re.Match[str]], str], text: str) -> str:
    """Replace matches of `pattern` by `token(match)`; where a match was followed by padding
    (two blanks or more), the padding grows or shrinks so that the next column stays where
    Java's `%-Ns` put it."""

    def sub(match: re.Match[str]) -> str:
        new = token(match)
        spaces = match.group("pad")
        if len(spaces) < 2:
            return new + spaces
        return new + " " * max(1, len(match.group(0)) - len(new))

    flags = re.match(r"\(\?[a-z]+\)", pattern)
    head = flags.group(0) if flags else ""
    return re.sub(f"{head}(?:{pattern[len(head) :]})(?P<pad> *)", sub, text)


def _width_sub(old: str, new: str, text: str) -> str:
    return _keep_width(re.escape(old), lambda _: new, text)


def shape(value: str) -> str:
    """A measured value with every number replaced by its kind: `N` (integer) or `F`
    (decimal), sign kept: "0.0 2.31 " -> "F F ", "-1" -> "-N", "3.00" -> "F"."""
    return re.sub(r"\d+\.\d+(?:E-?\d+)?|\d+", lambda m: "F" if "." in m.group(0) else "N", value)


# -- rules ---------------------------------------------------------------------------------


def addresses(text: str, where: Where) -> str:
    """The two clusters run on different free ports: the name server's and the broker's
    address become `<namesrv>` / `<broker>`; as the value of a `...Port` setting the broker's
    ports (listenPort, HA listenPort + 1, fast listenPort - 2) and the name server's become
    `<broker-port>`, `<broker-ha-port>`, `<broker-fast-port>`, `<namesrv-port>`; any other
    `ip:port` is a client connection's ephemeral port and becomes `<client>`.  The broker's
    IP alone (brokerIP1) is the same loopback address in both clusters and stays."""
    broker_port = where.broker_addr.rsplit(":", 1)[1]
    ns_port = where.namesrv_addr.rsplit(":", 1)[-1]
    if where.namesrv_addr:
        text = _width_sub(where.namesrv_addr, "<namesrv>", text)
    text = _width_sub(where.broker_addr, "<broker>", text)
    text = _keep_width(r"\b\d{1,3}(?:\.\d{1,3}){3}:\d+\b", lambda _: "<client>", text)
    ports = {
        broker_port: "<broker-port>",
        str(int(broker_port) + 1): "<broker-ha-port>",
        str(int(broker_port) - 2): "<broker-fast-port>",
    }
    if ns_port:
        ports[ns_port] = "<namesrv-port>"
    return _keep_width(
        r'(?P<key>[Pp]ort"?\s*[=:]\s*"?)(?P<port>\d+)',
        lambda m: m.group("key") + ports.get(m.group("port"), m.group("port")),
        text,
    )


def ids(text: str, where: Where) -> str:
    """Message ids embed the producer's address and start time (unique keys) or the broker's
    address and commitlog offset (offset ids): the ids of messages the set-up sent become the
    name of that message (`<msg-3>`, `<offset-msg-3>`), so a command that shows the wrong
    message still differs; any other 32-hex-digit id becomes `<msgid>`."""
    for value, name in where.ids.items():
        text = _width_sub(value, name, text)
    return _keep_width(r"\b[0-9A-F]{32}\b", lambda _: "<msgid>", text)


def paths(text: str, where: Where) -> str:
    """Each cluster lives in its own temporary directories, named after its kind: the store
    directory, the servers' homes and the cluster's root become placeholders (longest first,
    so `<store>/commitlog` keeps its tail)."""
    for path in sorted(where.paths, key=len, reverse=True):
        text = text.replace(path, where.paths[path])
    return text


def times(text: str, where: Where) -> str:
    """Both clusters run at different moments: date-times (`yyyy-MM-dd HH:mm:ss[,SSS]`) become
    `<time>` and epoch milliseconds (13 digits) `<millis>`."""
    text = _keep_width(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:,\d{3})?", lambda _: "<time>", text)
    return _keep_width(r"(?<![\d.])1\d{12}(?![\d.])", lambda _: "<millis>", text)


def commitlog_offsets(text: str, where: Where) -> str:
    """The other conformance tests wrote different amounts to the two commitlogs before (their
    timings and the trace records' cost times differ), so a message's commitlog offset
    differs: `commitLogOffset=`, `CommitLog Offset:` and `physicOffset=` become `<phy>`."""
    text = re.sub(r"(commitLogOffset=|physicOffset=)\d+", r"\1<phy>", text)
    return re.sub(r"(CommitLog Offset:\s+)\d+", r"\1<phy>", text)


def elapsed(text: str, where: Where) -> str:
    """Round-trip and cost times are measurements: `rt=3ms`, `25ms`, `Avg RT: 7.50` and the
    `#RT` column of checkMsgSendRT and clusterRT keep their shape only."""
    text = _keep_width(r"\b\d+ms\b", lambda _: "Nms", text)
    text = re.sub(r"(Avg RT: )\d+\.\d+", r"\1F", text)
    text = re.sub(r"(?m)^(broker-a +\d+ +(?:true|false) +)\d+", r"\1N", text)
    return _keep_width(
        r"(?m)^(?P<row>DefaultCluster +broker-a +)\d+\.\d+", lambda m: m.group("row") + "F", text
    )


def send_offsets(text: str, where: Where) -> str:
    """sendMsgStatus sends to the broker's own topic (named after the broker), which every
    earlier run of the command on that cluster has written to: each `queueOffset=` counts from
    the first one the run shows (`+0`, `+1`, ...), which still shows one offset per message,
    consecutive, in send order."""
    offsets = [int(found) for found in re.findall(r"queueOffset=(\d+)", text)]
    if not offsets:
        return text
    first = offsets[0]
    return re.sub(r"queueOffset=(\d+)", lambda m: f"queueOffset=+{int(m.group(1)) - first}", text)


def rates(text: str, where: Where) -> str:
    """TPS figures are rates over the last seconds or minute, measured at a different moment on
    each cluster: decimal numbers (`Consume TPS: 0.20`, statsAll's `#InTPS` / `#OutTPS`) and
    consumerProgress's integer `#TPS` column keep their shape only."""
    text = _keep_width(r"\b\d+\.\d+\b", lambda _: "F", text)
    return _keep_width(
        r"(?m)^(?P<row>\S+ +\d+ +V\S+ +\S+ +\S+ +)\d+", lambda m: m.group("row") + "N", text
    )


def runtime_values(text: str, where: Where) -> str:
    """brokerStatus (GET_BROKER_RUNTIME_INFO) is mostly measurement: times, TPS windows,
    latencies, disk ratios, counters of everything the other tests sent.  The values of those
    keys keep their shape (`shape`: how many numbers, integer or decimal, sign, units and
    brackets), which still shows a missing TPS window, a -1 for a time or a different format;
    the constants (versions, thread-pool capacities...) compare exactly.  How many TPS windows
    a broker shows depends on its uptime: the case waits until both show the same number
    (`mqadmin_cases.same_tps_windows`).
    Trailing blanks of a value (an empty TPS window) become `<blank>`, so that `normalise`
    stripping line ends cannot hide them.  The commitlog path in the
    `commitLogDiskRatio_<path>` key is the store directory (`paths`).
    `remainHowManyDataToFlush` is what the asynchronous flush has not written at that instant,
    in Java's human-readable form ("0 B", "12.3 KiB": the unit follows the amount), so its
    value becomes `<size>` when it is such an amount."""
    exact = {
        "brokerVersion",
        "brokerVersionDesc",
        "EndTransactionThreadPoolQueueCapacity",
        "pullThreadPoolQueueCapacity",
        "queryThreadPoolQueueCapacity",
        "sendThreadPoolQueueCapacity",
        "remainTransientStoreBufferNumbs",
        "startAcceptSendRequestTimeStamp",
        "dispatchMaxBuffer",
    }
    out = []
    for line in text.splitlines():
        key, sep, value = line.partition(": ")
        if key.strip() == "remainHowManyDataToFlush" and re.fullmatch(
            r"\d+(\.\d)? [KMGTPE]?i?B", value.strip()
        ):
            line = f"{key}{sep}<size>"
        elif sep and key.strip() not in exact:
            blanks = len(value) - len(value.rstrip(" "))
            line = f"{key}{sep}{shape(value.rstrip(' '))}" + "<blank>" * blanks
        out.append(line)
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def cluster_load(text: str, where: Where) -> str:
    """clusterList's columns after the version are load figures (in/out TPS, page-cache wait,
    hours since the oldest message, disk ratio): they keep their shape only, and as they are
    right-aligned to a width the padding in front of them goes too (one blank each)."""
    return re.sub(
        r"(?m)^(DefaultCluster +broker-a +\d+ +<broker> +V\S+)(.*)$",
        lambda m: m.group(1) + " " + " ".join(shape(m.group(2)).split()),
        text,
    )


def object_ids(text: str, where: Where) -> str:
    """Java objects without a toString print as `Class@<identity hash>`, which differs from run
    to run: the hash becomes `<hash>`."""
    return re.sub(r"(\b[A-Za-z_$][\w$.]*)@[0-9a-f]+\b", r"\1@<hash>", text)


def own_group_size(text: str, where: Where) -> str:
    """exportMetrics' `groupSize` and `topicSize` count the broker's subscription groups and
    topics, those other conformance modules left too (not the same on both clusters: a
    module's scenario may stop early on one): their numbers (`Where.foreign_groups`,
    `Where.foreign_broker_topics`) are subtracted, the rest must match."""
    own_groups = lambda m: f'"groupSize": {int(m.group(1)) - where.foreign_groups} own'  # noqa: E731
    own_topics = lambda m: f'"topicSize": {int(m.group(1)) - where.foreign_broker_topics} own'  # noqa: E731
    text = re.sub(r'"groupSize": (\d+)', own_groups, text)
    return re.sub(r'"topicSize": (\d+)', own_topics, text)


def own_topic_count(text: str, where: Where) -> str:
    """wipeWritePerm / addWritePerm print how many topics of the broker they changed, which
    counts the topics other conformance modules left: their number (`Where.foreign_topics`,
    from the name server's topic list) is subtracted, the rest must match."""
    own = lambda m: f"OK, {int(m.group(1)) - where.foreign_topics} own"  # noqa: E731
    return re.sub(r"OK, (\d+)", own, text)


def monitor_own_group(text: str, where: Where) -> str:
    """startMonitoring's MonitorService starts a push consumer of its own (`__MONITOR_CONSUMER`)
    and its first round, 20 s later, reports on that group too: which of its queues have a
    committed offset by then is timing (the pull of its empty retry queue is held 15 s, and
    Apache's broker answers held pulls only at its next 5-second check, rmq's at the timeout),
    so the lines about `__MONITOR_CONSUMER` are dropped; the lines about the set-up's group
    still compare."""
    kept = [line for line in text.splitlines() if "consumerGroup=__MONITOR_CONSUMER" not in line]
    return "\n".join(kept) + ("\n" if text.endswith("\n") else "")


def unordered(text: str, where: Where) -> str:
    """Lines Java prints while iterating a HashMap, HashSet or Properties come in hash order,
    which depends on the other entries (topics, keys) and on the JVM's hashing of the two
    servers' different values: such output is compared as a sorted list of lines."""
    return "\n".join(sorted(text.splitlines())) + "\n"


BUILT_IN = re.compile(r"[A-Z0-9_]+|BenchmarkTest|CID_ONS-HTTP-PROXY")
"""System topics and groups: TBW102, SCHEDULE_TOPIC_XXXX, RMQ_SYS_*, CID_RMQ_SYS_*, ...
(Apache's TopicValidator and MixAll names)."""


def is_foreign(name: str, cluster: str = "DefaultCluster", broker: str = "broker-a") -> bool:
    """A topic or group some other conformance module created: not ours (`Mqa...`, with their
    retry and DLQ topics), not a built-in (upper-case) name, not the cluster's or the broker's
    own topics."""
    base = re.sub(r"^%(?:RETRY|DLQ)%", "", name)
    if base.startswith(OWN_PREFIX) or base in (cluster, broker, f"{cluster}_REPLY_TOPIC"):
        return False
    return BUILT_IN.fullmatch(base) is None


def _names_foreign(line: str, where: Where) -> bool:
    """Whether `line` names a topic or group of another module (`Where.foreign`)."""
    return not where.foreign.isdisjoint(re.findall(r"[^\s\[\](),=:{}\"']+", line))


def foreign(text: str, where: Where) -> str:
    """Other conformance modules share these clusters and leave their own topics and groups
    behind, not necessarily the same on both (a scenario that fails on rmq stops early): a line
    that names one of them (`Where.foreign`: the `is_foreign` topics the name server lists and
    groups the broker knows, collected right after the command) is dropped."""
    kept = [line for line in text.splitlines() if not _names_foreign(line, where)]
    return "\n".join(kept) + ("\n" if text.endswith("\n") else "")


def trace_reader_lag(text: str, where: Where) -> str:
    """consumerProgress lists the group with which the Java trace scenario reads
    RMQ_SYS_TRACE_TOPIC (`CG-message-trace-...-trace-reader`).  Its lag counts the trace
    messages written since, by every traced client of the later modules, and how many
    messages a trace writer makes of its records depends on when its batches fill or time
    out (Java's AsyncTraceDispatcher and rmq's alike): the number is replaced."""
    return re.sub(r"(?m)^(CG-message-trace-\S*\s.*?)\d+[ \t]*$", r"\g<1><trace lag>", text)


def own_diff_total(text: str, where: Where) -> str:
    """brokerConsumeStats ends with the sum of every row's `#Diff`, which counts the groups of
    other conformance modules too, whose lags depend on when their scenarios stopped; taking
    the `foreign` rows' diffs off it still left totals that differed by a few messages
    between otherwise identical outputs.  The total is mqadmin's own sum (the same Java code
    in both columns), and the rows this module owns are compared one by one, so it is
    replaced by the sum of the rows that `foreign` keeps.  Rows are `topic group broker qid
    brokerOffset consumerOffset diff ...`."""
    own_diff = 0
    for line in text.splitlines():
        cells = line.split()
        if len(cells) >= 7 and cells[6].lstrip("-").isdigit() and not _names_foreign(line, where):
            own_diff += int(cells[6])
    return re.sub(r"Diff Total: -?\d+", f"Diff Total: {own_diff} own", text)


def json_document(text: str, where: Where) -> str:
    """A JSON file mqadmin writes (fastjson, maps in hash order): parsed and written back with
    sorted keys; object members named after another module's topic or group (`foreign`) are
    dropped for the same reason as `foreign`."""

    def clean(value: object) -> object:
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items() if k not in where.foreign}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    return json.dumps(clean(json.loads(text)), indent=1, sort_keys=True) + "\n"


def metric_rates(text: str, where: Where) -> str:
    """exportMetrics' `*Tps` members are rates over the last seconds or minute (the stats
    items' minute window for schedule and transaction TPS, whose span depends on when each
    broker's 10 s sampling last ran), and `messageAverageSize` averages the puts each broker
    counted, which include the re-puts of its transaction check and delay timers on Apache's
    (its commitlog counts every put; rmq's runtime counters count client sends only, a known
    difference of GET_BROKER_RUNTIME_INFO): their values keep their shape only (`shape`).
    So do `scheduleOneDayInNum` and `transOneDayInNum`: mqadmin takes them from the stats
    items' day window, else the hour's, else the minute's, and which window holds a put made
    a minute or two before (a consumer's retry of another module, stored on the delay topic)
    depends on when each broker last sampled."""
    return re.sub(
        r'(?m)^(\s*"(?:\w*Tps|messageAverageSize|scheduleOneDayInNum|transOneDayInNum)": )'
        r"(.*?)(,?)$",
        lambda m: m.group(1) + shape(m.group(2)) + m.group(3),
        text,
    )


RMQ_ONLY_KEYS = tuple(sorted(CONFIG_RMQ_ONLY_KEYS))
"""Settings rmq documents as its own additions (docs/namesrv.md and docs/broker.md, "rmq-only",
the RocketMQ 5 keys; marked `rmq_only` where they are declared, rmq/common/configobjects.py):
Apache 4.9 has no such setting, so it cannot print them."""

HARNESS_KEYS = ("rocketmqHome",)
"""Apache's servers refuse to start without ROCKETMQ_HOME and print it among their settings;
rmq's need none (docs/broker.md, "Differences from Apache") and the harness gives them none."""


def rmq_only_keys(text: str, where: Where) -> str:
    """Config listings (getNamesrvConfig, getBrokerConfig, exportConfigs): the lines of
    `RMQ_ONLY_KEYS` (rmq's documented additions) and of `HARNESS_KEYS` (ROCKETMQ_HOME, which
    only Apache's servers have) are dropped on both sides; every other key and value still
    compares."""
    dropped = "|".join(map(re.escape, RMQ_ONLY_KEYS + HARNESS_KEYS))
    return re.sub(rf'(?m)^\s*"?(?:{dropped})"?\s*[=:].*\n?', "", text)


_JAVA_FAILURE = re.compile(
    r"STDERR org\.apache\.rocketmq\.tools\.command\.SubCommandException: (?P<head>.+ failed)\n"
    r"(?:STDERR \tat .*\n)*"
    r"STDERR Caused by: \S+: CODE: (?P<code>-?\d+)  DESC: (?P<desc>.*)\n"
    r"(?:STDERR (?:\tat |\t\.\.\. |For more information, |See http).*\n)*"
)
_RMQ_FAILURE = re.compile(
    r"STDERR org\.apache\.rocketmq\.tools\.command\.SubCommandException: (?P<head>.+ failed): "
    r"[A-Z_]+\((?P<code>-?\d+)\): (?P<desc>.*)\n"
)


def failure(text: str, where: Where) -> str:
    """A command that fails: Apache's mqadmin prints SubCommandException's stack trace, whose
    cause says `CODE: <code>  DESC: <remark>` (and a FAQ link), rmq's prints the exception on
    one line, `...: <Class> command failed: <CODE_NAME>(<code>): <remark>`.  Both become
    `STDERR <failed: <Class> command failed; CODE <code>: <remark>>`; the stack frames (where
    in Java's code the exception came from, which rmq has no counterpart of) and the FAQ
    link are dropped."""

    def failed(match: re.Match[str]) -> str:
        return f"STDERR <failed: {match['head']}; CODE {match['code']}: {match['desc']}>\n"

    return _RMQ_FAILURE.sub(failed, _JAVA_FAILURE.sub(failed, text))


def normalise(text: str, where: Where, rules: Iterable[Rule]) -> str:
    """`addresses` and `ids`, then `rules` in order; trailing blanks of lines stripped (the
    padding of a last column depends on the width of what a rule replaced)."""
    for rule in (paths, addresses, ids, *rules):
        text = rule(text, where)
    return "\n".join(line.rstrip() for line in text.splitlines())
