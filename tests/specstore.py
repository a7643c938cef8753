"""Store directories built byte by byte from the spec layouts (§3.1, §4.3-§4.7), for tests.

Nothing here uses rmq's own writers: records, BLANKs, consume queue entries, the index file,
the checkpoint and the config files are packed with ``struct`` (and written as text) straight
from the spec tables, so readers are checked against the format, not against our encoder.
:class:`SpecStore` collects records and writes the directory; :func:`build` makes the small
sample store most reader tests start from; :func:`flip` damages one byte.
"""

from __future__ import annotations

import socket
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path

MESSAGE_MAGIC = 0xDAA320A7
BLANK_MAGIC = 0xCBD43194
# §3.1 fixed part, IPv4 hosts: TOTALSIZE, MAGICCODE, BODYCRC, QUEUEID, FLAG, QUEUEOFFSET,
# PHYSICALOFFSET, SYSFLAG, BORNTIMESTAMP, BORNHOST, STORETIMESTAMP, STOREHOSTADDRESS,
# RECONSUMETIMES, PREPARED TRANSACTION OFFSET.
RECORD_HEAD = struct.Struct(">iIiiiqqiq8sq8siq")
CQ_ENTRY = struct.Struct(">qiq")
INDEX_HEADER = struct.Struct(">qqqqii")
INDEX_ENTRY = struct.Struct(">iqii")
BORN_HOST = socket.inet_aton("10.0.0.5") + struct.pack(">i", 50000)
STORE_HOST = socket.inet_aton("192.168.1.10") + struct.pack(">i", 10911)
T0 = 1_700_000_000_000
ROLLBACK = 0xC


def java_hash(text: str) -> int:
    h = 0
    for unit in struct.unpack(f"<{len(text.encode('utf-16-le')) // 2}H", text.encode("utf-16-le")):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def index_hash(key: str) -> int:
    h = java_hash(key)
    return 0 if h == -(1 << 31) else abs(h)


def spec_record(
    *,
    topic: str,
    queue_id: int,
    queue_offset: int,
    physical_offset: int,
    body: bytes,
    properties: dict[str, str],
    store_timestamp: int,
    sys_flag: int = 0,
) -> bytes:
    props = "\x02".join(f"{k}\x01{v}" for k, v in properties.items()).encode()
    topic_bytes = topic.encode()
    total = 84 + 4 + len(body) + 1 + len(topic_bytes) + 2 + len(props)
    head = RECORD_HEAD.pack(
        total,
        MESSAGE_MAGIC,
        zlib.crc32(body) & 0x7FFFFFFF,
        queue_id,
        0,
        queue_offset,
        physical_offset,
        sys_flag,
        store_timestamp - 5,
        BORN_HOST,
        store_timestamp,
        STORE_HOST,
        0,
        0,
    )
    return (
        head
        + struct.pack(">i", len(body))
        + body
        + struct.pack(">b", len(topic_bytes))
        + topic_bytes
        + struct.pack(">h", len(props))
        + props
    )


@dataclass
class Stored:
    topic: str
    queue_id: int
    queue_offset: int
    physical_offset: int
    size: int
    body: bytes


@dataclass
class SpecStore:
    """Builds a store directory from the spec layouts."""

    root: Path
    commitlog_file_size: int = 1024
    cq_file_size: int = 100
    hash_slots: int = 16
    index_entries: int = 64
    log: bytearray = field(default_factory=bytearray)
    records: list[Stored] = field(default_factory=list)
    queues: dict[tuple[str, int], list[tuple[int, int, int]]] = field(default_factory=dict)
    index: list[tuple[int, int, int]] = field(default_factory=list)

    def append(
        self,
        topic: str,
        queue_id: int,
        body: bytes,
        *,
        keys: str | None = None,
        uniq: str | None = None,
        tags: str | None = None,
        sys_flag: int = 0,
    ) -> Stored:
        properties = {}
        if keys is not None:
            properties["KEYS"] = keys
        if tags is not None:
            properties["TAGS"] = tags
        if uniq is not None:
            properties["UNIQ_KEY"] = uniq
        dispatched = sys_flag != ROLLBACK
        queue = self.queues.setdefault((topic, queue_id), [])
        queue_offset = len(queue) if dispatched else 0
        store_timestamp = T0 + 1000 * len(self.records)
        probe = spec_record(
            topic=topic,
            queue_id=queue_id,
            queue_offset=0,
            physical_offset=0,
            body=body,
            properties=properties,
            store_timestamp=0,
        )
        remaining = self.commitlog_file_size - len(self.log) % self.commitlog_file_size
        if len(probe) + 8 > remaining:  # §4.3 end-of-file rule
            self.log += struct.pack(">iI", remaining, BLANK_MAGIC) + bytes(remaining - 8)
        physical_offset = len(self.log)
        self.log += spec_record(
            topic=topic,
            queue_id=queue_id,
            queue_offset=queue_offset,
            physical_offset=physical_offset,
            body=body,
            properties=properties,
            store_timestamp=store_timestamp,
            sys_flag=sys_flag,
        )
        if dispatched:
            queue.append((physical_offset, len(probe), java_hash(tags) if tags else 0))
        if sys_flag != ROLLBACK:
            for key in ([uniq] if uniq else []) + (keys.split(" ") if keys else []):
                if key:
                    self.index.append(
                        (index_hash(f"{topic}#{key}"), physical_offset, store_timestamp)
                    )
        stored = Stored(topic, queue_id, queue_offset, physical_offset, len(probe), body)
        self.records.append(stored)
        return stored

    def commitlog_path(self, physical_offset: int) -> tuple[Path, int]:
        start = physical_offset - physical_offset % self.commitlog_file_size
        return self.root / "commitlog" / f"{start:020d}", physical_offset - start

    def write(self, *, with_index: bool = True) -> SpecStore:
        size = self.commitlog_file_size
        (self.root / "commitlog").mkdir(parents=True)
        for start in range(0, max(len(self.log), 1), size):
            chunk = bytes(self.log[start : start + size])
            (self.root / "commitlog" / f"{start:020d}").write_bytes(
                chunk + bytes(size - len(chunk))
            )
        for (topic, queue_id), entries in self.queues.items():
            directory = self.root / "consumequeue" / topic / str(queue_id)
            directory.mkdir(parents=True)
            data = b"".join(CQ_ENTRY.pack(*entry) for entry in entries)
            for start in range(0, max(len(data), 1), self.cq_file_size):
                chunk = data[start : start + self.cq_file_size]
                (directory / f"{start:020d}").write_bytes(
                    chunk + bytes(self.cq_file_size - len(chunk))
                )
        if with_index:
            self.write_index()
        (self.root / "checkpoint").write_bytes(
            struct.pack(">qqq", T0 + 3000, T0 + 2000, T0 + 1000) + bytes(4096 - 24)
        )
        (self.root / "config").mkdir()
        (self.root / "config" / "topics.json").write_text(
            '{\n\t"dataVersion":{\n\t\t"counter":1,\n\t\t"timestamp":1\n\t}\n}'
        )
        return self

    def write_index(self) -> None:
        (self.root / "index").mkdir(exist_ok=True)
        slots, entries = self.hash_slots, self.index_entries
        data = bytearray(40 + slots * 4 + entries * 20)
        heads: dict[int, int] = {}
        begin = 0
        for number, (key_hash, physical_offset, stored) in enumerate(self.index, start=1):
            slot = key_hash % slots
            diff = 0 if begin <= 0 else (stored - begin) // 1000
            INDEX_ENTRY.pack_into(
                data,
                40 + slots * 4 + number * 20,
                key_hash,
                physical_offset,
                diff,
                heads.get(slot, 0),
            )
            heads[slot] = number
            if number == 1:
                begin = stored
        for slot, number in heads.items():
            struct.pack_into(">i", data, 40 + slot * 4, number)
        last = self.index[-1] if self.index else (0, 0, 0)
        first = self.index[0] if self.index else (0, 0, 0)
        INDEX_HEADER.pack_into(
            data, 0, first[2], last[2], first[1], last[1], len(heads), len(self.index) + 1
        )
        self.index_path.write_bytes(bytes(data))

    def write_config(self, name: str, text: str, backup: str | None = None) -> Path:
        """``config/<name>`` with ``text`` (and ``<name>.bak`` with ``backup``), as given."""
        path = self.root / "config" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if backup is not None:
            path.with_name(name + ".bak").write_text(backup, encoding="utf-8")
        return path

    @property
    def index_path(self) -> Path:
        return self.root / "index" / "20240222172627123"

    def cq_path(self, topic: str, queue_id: int, queue_offset: int) -> tuple[Path, int]:
        position = queue_offset * 20
        start = position - position % self.cq_file_size
        return (
            self.root / "consumequeue" / topic / str(queue_id) / f"{start:020d}",
            position - start,
        )

    def index_entry_position(self, number: int) -> int:
        return 40 + self.hash_slots * 4 + number * 20


def build(tmp_path: Path, *, with_index: bool = True) -> SpecStore:
    store = SpecStore(tmp_path / "store")
    for n in range(12):
        store.append(
            "TopicTest" if n % 3 else "Orders",
            n % 2,
            f"body-{n}".encode() * (3 + n % 4),
            keys=f"key{n} shared" if n % 4 else None,
            uniq=f"UNIQ{n:04d}",
            tags="TagA" if n % 2 else "TagB",
        )
    store.append("TopicTest", 0, b"rolled back", keys="key-rb", sys_flag=ROLLBACK)
    return store.write(with_index=with_index)


def flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x40
    path.write_bytes(bytes(data))
