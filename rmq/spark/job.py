"""An export job's parameters and result, checked without Spark (no pyspark import), so
``rmq spark-export`` reports bad options even where pyspark is not installed.

:class:`ExportJob` is what ``rmq spark-export`` and ``spark-submit rmq/spark/export.py`` both
build from their command lines and :func:`rmq.spark.export.run_export` runs (with
``follow``, :func:`rmq.spark.follow.run_follow`: a stream into files);
:class:`ExportResult` is what the run wrote; :func:`parse_settings` reads the Spark settings
both take as ``--conf KEY=VALUE``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from rmq.spark.access import ClientAccess
from rmq.spark.options import EARLIEST, parse_ending_offsets, parse_offsets

FORMATS: Final = ("parquet", "json", "csv", "orc")
DATE_COLUMN: Final = "date"
PARTITION_COLUMNS: Final = ("topic", DATE_COLUMN, "brokerName", "queueId")
DEFAULT_TRIGGER_SECONDS: Final = 5.0
"""How often a followed export (``--follow``) looks for new messages."""


@dataclass(frozen=True)
class ExportJob:
    """What to export and where to.  Offline with ``store_dirs``, online with ``namesrv``;
    the constructor checks the combination and raises ValueError naming what is wrong."""

    out: str
    format: str = "parquet"
    store_dirs: tuple[str, ...] = ()
    namesrv: str | None = None
    topics: tuple[str, ...] = ()
    since: int | None = None
    until: int | None = None
    starting_offsets: str | None = None
    ending_offsets: str | None = None
    partition_by: tuple[str, ...] = ()
    overwrite: bool = False
    max_partition_bytes: int | None = None
    broker_name: str | None = None
    follow: bool = False
    checkpoint: str | None = None
    trigger_seconds: float | None = None
    max_offsets_per_trigger: int | None = None
    access: ClientAccess = field(default_factory=ClientAccess)
    """ACL keys and TLS of an online export (never in the repr: rmq.spark.access)."""

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ValueError(f"unknown format {self.format!r}: use one of {', '.join(FORMATS)}")
        if bool(self.store_dirs) == bool(self.namesrv):
            raise ValueError("give store directories (offline) or a name server (online)")
        if self.namesrv:
            if not self.topics:
                raise ValueError("an online export needs a topic")
            if self.max_partition_bytes is not None or self.broker_name is not None:
                raise ValueError(
                    "max partition bytes and broker name are for store directories only"
                )
            parse_offsets(self.starting_offsets, "startingOffsets", EARLIEST)
            parse_ending_offsets(self.ending_offsets)
        elif self.starting_offsets is not None or self.ending_offsets is not None:
            raise ValueError("starting and ending offsets are for online exports only")
        self._check_follow()
        unknown = [column for column in self.partition_by if column not in PARTITION_COLUMNS]
        if unknown:
            raise ValueError(
                f"cannot partition by {', '.join(unknown)}: use {', '.join(PARTITION_COLUMNS)}"
            )

    def _check_follow(self) -> None:
        """A followed export: a stream from a running cluster with a checkpoint."""
        if not self.follow:
            if (
                self.checkpoint is not None
                or self.max_offsets_per_trigger is not None
                or self.trigger_seconds is not None
            ):
                raise ValueError(
                    "a checkpoint, a trigger and max offsets per trigger are for --follow only"
                )
            return
        if not self.namesrv:
            raise ValueError("--follow reads a running cluster: give a name server, not stores")
        if not self.checkpoint:
            raise ValueError("--follow needs a checkpoint directory (--checkpoint)")
        if self.until is not None or self.ending_offsets is not None:
            raise ValueError("--follow has no end: drop --until and --ending-offsets")
        if self.since is not None and self.starting_offsets is not None:
            raise ValueError("give --since or --starting-offsets, not both")
        if self.overwrite:
            raise ValueError("--follow adds to its output directory: drop --overwrite")
        if self.trigger_seconds is not None and self.trigger_seconds < 0:
            raise ValueError("the trigger interval cannot be negative")
        if self.max_offsets_per_trigger is not None and self.max_offsets_per_trigger < 1:
            raise ValueError("max offsets per trigger must be 1 or more")

    @property
    def trigger(self) -> float:
        """Seconds between a followed export's micro-batches."""
        return DEFAULT_TRIGGER_SECONDS if self.trigger_seconds is None else self.trigger_seconds

    @property
    def online(self) -> bool:
        return self.namesrv is not None

    def reader_options(self) -> dict[str, str]:
        """The options of the ``rocketmq`` read (a stream's with ``follow``)."""
        if self.follow:
            stream = {
                "topics": ",".join(self.topics),
                "namesrv": self.namesrv,
                "startingOffsets": self.starting_offsets
                or (None if self.since is not None else "earliest"),
                "startingTimestamp": self.since,
                "maxOffsetsPerTrigger": self.max_offsets_per_trigger,
            }
            return {
                **{key: str(value) for key, value in stream.items() if value not in (None, "")},
                **self.access.to_options(),
            }
        options = {
            "topics": ",".join(self.topics),
            "startTimestamp": self.since,
            "endTimestamp": self.until,
            "namesrv": self.namesrv,
            "startingOffsets": self.starting_offsets,
            "endingOffsets": self.ending_offsets,
            "maxPartitionBytes": self.max_partition_bytes,
            "brokerName": self.broker_name,
        }
        return {
            **{key: str(value) for key, value in options.items() if value not in (None, "")},
            **(self.access.to_options() if self.online else {}),
        }


@dataclass(frozen=True)
class ExportResult:
    """What was written: rows per topic, the output directory, its format and data files."""

    out: str
    format: str
    rows_by_topic: dict[str, int] = field(default_factory=dict)
    files: int = 0

    @property
    def rows(self) -> int:
        return sum(self.rows_by_topic.values())

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "rows": self.rows}


def parse_settings(texts: Iterable[str]) -> dict[str, str]:
    """Spark settings from ``KEY=VALUE`` texts (the value may hold ``=``; a later key wins)."""
    settings = {}
    for text in texts:
        key, equals, value = text.partition("=")
        if not equals or not key.strip():
            raise ValueError(f"a Spark setting is KEY=VALUE, not {text!r}")
        settings[key.strip()] = value
    return settings
