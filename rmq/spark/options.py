"""What a read of the ``rocketmq`` data source asks for: its options.

Everything here is plain Python (no pyspark), shared by the data source, the export job and
the ``rmq spark-export`` command, so each option is parsed in exactly one place.

:class:`ScanBounds` is the selection both modes apply: a set of topics (None: every topic)
and two half-open intervals, store timestamps ``[min_timestamp, max_timestamp)`` in epoch
milliseconds and commitlog offsets ``[min_offset, max_offset)``.  The reader options
(``topics``/``topic``, ``startTimestamp``/``endTimestamp``, ``startOffset``/``endOffset``)
give the bounds.  Start bounds are inclusive, end bounds exclusive, as Kafka's starting and
ending offsets are.

Times are epoch milliseconds or ISO 8601 (``2024-05-01``, ``2024-05-01T12:00:00Z``; a time
without a zone is local), read by :func:`rmq.common.timeutil.parse_time`.

Online offsets (:func:`parse_offsets`) follow the Spark Kafka source and the rocketmq-spark
connector: the words ``earliest`` / ``latest``, or JSON keyed topic -> broker name -> queue id,
``{"TopicA": {"broker-a": {"0": 23, "1": -2}}}``, where -2 means earliest and -1 latest.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from rmq.common.timeutil import parse_time

EARLIEST: Final = -2
LATEST: Final = -1
OFFSET_WORDS: Final = {"earliest": EARLIEST, "latest": LATEST}

NO_LIMIT: Final = 1 << 63
"""An end bound that nothing reaches (offsets and timestamps are Java longs)."""


@dataclass(frozen=True, slots=True)
class QueueOffsets:
    """Parsed ``startingOffsets`` / ``endingOffsets``: ``default`` (EARLIEST or LATEST) for
    every queue not named in ``by_queue`` (topic, broker name, queue id) -> offset."""

    default: int
    by_queue: Mapping[tuple[str, str, int], int]

    def of(self, topic: str, broker_name: str, queue_id: int) -> int:
        return self.by_queue.get((topic, broker_name, queue_id), self.default)


@dataclass(frozen=True, slots=True)
class ScanBounds:
    """The records a scan returns (see the module docstring)."""

    topics: frozenset[str] | None = None
    min_timestamp: int = 0
    max_timestamp: int = NO_LIMIT
    min_offset: int = 0
    max_offset: int = NO_LIMIT

    @property
    def empty(self) -> bool:
        return (
            self.topics == frozenset()
            or self.min_timestamp >= self.max_timestamp
            or self.min_offset >= self.max_offset
        )

    @property
    def limits_time(self) -> bool:
        return self.min_timestamp > 0 or self.max_timestamp < NO_LIMIT

    def admits(self, topic: str, store_timestamp: int, physical_offset: int) -> bool:
        """Whether a record with these values is in the bounds."""
        return (
            (self.topics is None or topic in self.topics)
            and self.min_timestamp <= store_timestamp < self.max_timestamp
            and self.min_offset <= physical_offset < self.max_offset
        )

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> ScanBounds:
        """The bounds the reader options give (see the module docstring)."""
        topics = topic_list(options.get("topics")) + topic_list(options.get("topic"))
        start_ts, end_ts = options.get("startTimestamp"), options.get("endTimestamp")
        start_offset, end_offset = options.get("startOffset"), options.get("endOffset")
        return cls(
            frozenset(topics) if topics else None,
            0 if start_ts is None else parse_time(start_ts),
            NO_LIMIT if end_ts is None else parse_time(end_ts),
            0 if start_offset is None else parse_int(start_offset, "startOffset"),
            NO_LIMIT if end_offset is None else parse_int(end_offset, "endOffset"),
        )


def topic_list(text: str | None) -> list[str]:
    """A comma-separated topic list (blanks dropped)."""
    return [topic.strip() for topic in (text or "").split(",") if topic.strip()]


def parse_int(text: str, name: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"option {name} must be an integer, not {text!r}") from None


def parse_offsets(text: str | None, name: str, default: int) -> QueueOffsets:
    """``startingOffsets`` / ``endingOffsets``: a word or the per-queue JSON."""
    if text is None or not text.strip():
        return QueueOffsets(default, {})
    word = text.strip()
    if word.lower() in OFFSET_WORDS:
        return QueueOffsets(OFFSET_WORDS[word.lower()], {})
    try:
        document: Any = json.loads(word)
    except ValueError:
        raise ValueError(
            f"option {name} must be earliest, latest or JSON such as "
            '{"TopicA": {"broker-a": {"0": 23}}}, not ' + repr(text)
        ) from None
    by_queue = queue_offsets(
        document, f"option {name}", EARLIEST, "a queue offset, -2 (earliest) or -1 (latest)"
    )
    return QueueOffsets(default, by_queue)


def queue_offsets(
    document: Any, what: str, minimum: int, allowed: str
) -> dict[tuple[str, str, int], int]:
    """The offsets of per-queue JSON, ``{"TopicA": {"broker-a": {"0": 23}}}`` (parsed), by
    (topic, broker name, queue id): ``startingOffsets`` / ``endingOffsets`` and a stream's
    offsets in the checkpoint (:mod:`rmq.spark.streamoffsets`) alike.  ValueError, opening
    with ``what``, when it is not such JSON or an offset is not an integer of at least
    ``minimum`` (``allowed`` says what is)."""
    if not isinstance(document, Mapping):
        raise ValueError(f"{what}: the JSON must be an object keyed by topic")
    by_queue: dict[tuple[str, str, int], int] = {}
    for topic, brokers in document.items():
        if not isinstance(brokers, Mapping):
            raise ValueError(f"{what}: {topic!r} must map broker names to queues")
        for broker_name, queues in brokers.items():
            if not isinstance(queues, Mapping):
                raise ValueError(
                    f"{what}: {topic!r} / {broker_name!r} must map queue ids to offsets"
                )
            for queue_id, offset in queues.items():
                if not isinstance(offset, int) or isinstance(offset, bool) or offset < minimum:
                    raise ValueError(
                        f"{what}: offset {offset!r} of {topic} / {broker_name} / {queue_id} "
                        f"must be {allowed}"
                    )
                try:
                    by_queue[topic, broker_name, int(queue_id)] = offset
                except ValueError:
                    raise ValueError(
                        f"{what}: queue id {queue_id!r} of {topic} / {broker_name} "
                        "is not an integer"
                    ) from None
    return by_queue


def parse_ending_offsets(text: str | None) -> QueueOffsets:
    """``endingOffsets``: like :func:`parse_offsets`, default latest, earliest not allowed."""
    ending = parse_offsets(text, "endingOffsets", LATEST)
    if ending.default == EARLIEST or EARLIEST in ending.by_queue.values():
        raise ValueError("option endingOffsets cannot be earliest (-2)")
    return ending


def parse_bool(text: str | None, name: str, default: bool) -> bool:
    if text is None:
        return default
    word = text.strip().lower()
    if word not in ("true", "false"):
        raise ValueError(f"option {name} must be true or false, not {text!r}")
    return word == "true"


def store_paths(options: Mapping[str, str]) -> list[str]:
    """The store directories of an offline read: ``path``, or ``paths`` (the JSON list
    Spark sets for ``load([dir, dir])``)."""
    paths = []
    if options.get("paths"):
        listed = json.loads(options["paths"])
        if not isinstance(listed, list) or not all(isinstance(p, str) for p in listed):
            raise ValueError("option paths must be a JSON list of store directories")
        paths += listed
    if options.get("path"):
        paths.append(options["path"])
    return paths
