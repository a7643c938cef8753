"""An export job's parameters and result, checked without Spark (no pyspark import), so
``rmq spark-export`` reports bad options even where pyspark is not installed.

:class:`ExportJob` is what ``rmq spark-export`` and ``spark-submit rmq/spark/export.py`` both
build from their command lines and :func:`rmq.spark.export.run_export` runs;
:class:`ExportResult` is what the run wrote; :func:`parse_settings` reads the Spark settings
both take as ``--conf KEY=VALUE``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from rmq.spark.options import EARLIEST, parse_ending_offsets, parse_offsets

FORMATS: Final = ("parquet", "json", "csv", "orc")
DATE_COLUMN: Final = "date"
PARTITION_COLUMNS: Final = ("topic", DATE_COLUMN, "brokerName", "queueId")


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
        unknown = [column for column in self.partition_by if column not in PARTITION_COLUMNS]
        if unknown:
            raise ValueError(
                f"cannot partition by {', '.join(unknown)}: use {', '.join(PARTITION_COLUMNS)}"
            )

    @property
    def online(self) -> bool:
        return self.namesrv is not None

    def reader_options(self) -> dict[str, str]:
        """The options of the ``rocketmq`` read."""
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
        return {key: str(value) for key, value in options.items() if value not in (None, "")}


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
