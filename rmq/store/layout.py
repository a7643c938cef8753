"""Where everything lives in a store directory, and how store files are named.

A broker's ``storePathRootDir`` holds ``commitlog/`` (unless ``storePathCommitLog`` puts it
elsewhere), ``consumequeue/<topic>/<queueId>/``, ``index/``, ``config/*.json``, and the
``checkpoint``, ``abort`` and ``lock`` files.  :class:`StoreLayout` turns a root directory into
those paths so no other module joins path strings by hand.

Every mapped-file queue (commitlog, each consume queue) names a file by the global byte offset
of its first byte, in 20 zero-padded decimal digits; index files are named by their local
creation time as ``yyyyMMddHHmmssSSS``.  The helpers here create and parse both kinds of names
and list a directory's files in offset order, ignoring anything that is not a store file.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

COMMITLOG_DIR = "commitlog"
CONSUME_QUEUE_DIR = "consumequeue"
INDEX_DIR = "index"
CONFIG_DIR = "config"
CHECKPOINT_FILE = "checkpoint"
ABORT_FILE = "abort"
LOCK_FILE = "lock"

TOPICS_JSON = "topics.json"
CONSUMER_OFFSET_JSON = "consumerOffset.json"
SUBSCRIPTION_GROUP_JSON = "subscriptionGroup.json"
CONSUMER_FILTER_JSON = "consumerFilter.json"
DELAY_OFFSET_JSON = "delayOffset.json"

CONFIG_FILES = (
    TOPICS_JSON,
    CONSUMER_OFFSET_JSON,
    SUBSCRIPTION_GROUP_JSON,
    CONSUMER_FILTER_JSON,
    DELAY_OFFSET_JSON,
)
"""The config files a broker keeps under ``config/`` (each with a ``.bak`` beside it)."""

OFFSET_FILE_NAME_DIGITS = 20
INDEX_FILE_NAME_DIGITS = 17

_QUEUE_ID = re.compile(r"-?[0-9]+")


@dataclass(frozen=True, slots=True)
class StoreLayout:
    """The paths of one store directory (``storePathRootDir``)."""

    root: Path
    commitlog: Path

    @classmethod
    def of(
        cls, root: str | os.PathLike[str], commitlog: str | os.PathLike[str] = ""
    ) -> StoreLayout:
        """The layout rooted at ``root``; ``commitlog`` overrides ``<root>/commitlog`` when set."""
        root_path = Path(root)
        return cls(root_path, Path(commitlog) if commitlog else root_path / COMMITLOG_DIR)

    @property
    def consume_queue_root(self) -> Path:
        return self.root / CONSUME_QUEUE_DIR

    def consume_queue_dir(self, topic: str, queue_id: int) -> Path:
        return self.root / CONSUME_QUEUE_DIR / topic / str(queue_id)

    @property
    def index(self) -> Path:
        return self.root / INDEX_DIR

    @property
    def config(self) -> Path:
        return self.root / CONFIG_DIR

    def config_file(self, name: str) -> Path:
        """``config/<name>``, e.g. ``config_file(TOPICS_JSON)``."""
        return self.root / CONFIG_DIR / name

    @property
    def checkpoint(self) -> Path:
        return self.root / CHECKPOINT_FILE

    @property
    def abort(self) -> Path:
        return self.root / ABORT_FILE

    @property
    def lock(self) -> Path:
        return self.root / LOCK_FILE

    def looks_like_a_store(self) -> bool:
        """Whether anything marks the root as a broker's store: its commitlog directory,
        ``consumequeue/`` or ``index/`` (a broker creates the first two when it first opens
        the store), a ``checkpoint`` file, or a config file (or its ``.bak``) under
        ``config/``.  Without any of them the directory is not a store (a mistyped path, a
        parent directory) and readers refuse it rather than call an empty store healthy."""
        if any(path.is_dir() for path in (self.commitlog, self.consume_queue_root, self.index)):
            return True
        return self.checkpoint.is_file() or any(
            self.config_file(name + suffix).is_file()
            for name in CONFIG_FILES
            for suffix in ("", ".bak")
        )

    def not_a_store(self) -> str | None:
        """Why the root is not a store directory (one sentence), or None when it is one."""
        if not self.root.is_dir():
            return f"{self.root} is not a directory"
        if self.looks_like_a_store():
            return None
        return (
            f"{self.root} is not a RocketMQ store: no {self.commitlog.name}/, "
            f"{CONSUME_QUEUE_DIR}/, {INDEX_DIR}/, {CHECKPOINT_FILE} or "
            f"{CONFIG_DIR}/{TOPICS_JSON} in it"
        )


def offset_file_name(offset: int) -> str:
    """The name of the mapped file whose first byte has global offset ``offset``."""
    if offset < 0:
        raise ValueError(f"file offset must not be negative: {offset}")
    return f"{offset:0{OFFSET_FILE_NAME_DIGITS}d}"


def parse_offset_file_name(name: str) -> int | None:
    """The start offset encoded in a mapped file's name, or None if it is not such a name."""
    if len(name) != OFFSET_FILE_NAME_DIGITS or not name.isascii() or not name.isdigit():
        return None
    return int(name)


def index_file_name(timestamp_ms: int) -> str:
    """The index file name for a creation time: local ``yyyyMMddHHmmssSSS``."""
    seconds, millis = divmod(timestamp_ms, 1000)
    return time.strftime("%Y%m%d%H%M%S", time.localtime(seconds)) + f"{millis:03d}"


def index_file_time(name: str) -> int:
    """The creation time (ms) an index file name encodes (inverse of :func:`index_file_name`)."""
    seconds = time.mktime(time.strptime(name[:14], "%Y%m%d%H%M%S"))
    return int(seconds) * 1000 + int(name[14:])


def is_index_file_name(name: str) -> bool:
    return len(name) == INDEX_FILE_NAME_DIGITS and name.isascii() and name.isdigit()


def list_offset_files(directory: Path) -> list[tuple[int, Path]]:
    """The mapped files of one queue directory as (start offset, path), in offset order.

    Entries whose name is not 20 digits (temporary files, stray directories) are ignored; a
    missing directory has no files.
    """
    try:
        entries = list(os.scandir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return []
    files = []
    for entry in entries:
        offset = parse_offset_file_name(entry.name)
        if offset is not None and entry.is_file():
            files.append((offset, Path(entry.path)))
    files.sort()
    return files


def list_index_files(directory: Path) -> list[Path]:
    """The index files of ``index/`` in creation order (their names sort by time)."""
    try:
        entries = list(os.scandir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(Path(e.path) for e in entries if is_index_file_name(e.name) and e.is_file())


def list_consume_queues(consume_queue_root: Path) -> list[tuple[str, int, Path]]:
    """Every ``consumequeue/<topic>/<queueId>`` directory as (topic, queue id, path), sorted.

    Directories whose queue id part is not an integer are skipped, as the broker does.
    """
    queues = []
    try:
        topics = list(os.scandir(consume_queue_root))
    except (FileNotFoundError, NotADirectoryError):
        return []
    for topic_entry in topics:
        if not topic_entry.is_dir():
            continue
        for queue_entry in os.scandir(topic_entry.path):
            if queue_entry.is_dir() and _is_queue_id(queue_entry.name):
                queues.append((topic_entry.name, int(queue_entry.name), Path(queue_entry.path)))
    queues.sort()
    return queues


def _is_queue_id(name: str) -> bool:
    return _QUEUE_ID.fullmatch(name) is not None
