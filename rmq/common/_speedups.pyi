"""Types of the compiled twins in _speedups.pyx (the pure functions' signatures)."""

from collections.abc import Iterator
from typing import Any

from rmq.common.message import Buffer, MessageRecord, PreparedBatch
from rmq.common.recordwalk import Frame

class FrameIterator(Iterator[Frame]):
    def __init__(self, buf: Any, pos: int, limit: int) -> None: ...
    def __next__(self) -> Frame: ...

def iter_frames(buf: Any, pos: int, limit: int) -> FrameIterator: ...
def frame_at(buf: Any, pos: int, limit: int) -> tuple[tuple[Any, ...], int, int, int, int, int]: ...
def encode_record_into(
    buf: Any,
    pos: int,
    *,
    queue_id: int,
    flag: int,
    queue_offset: int,
    physical_offset: int,
    sys_flag: int,
    born_timestamp: int,
    born_host: bytes,
    store_timestamp: int,
    store_host: bytes,
    reconsume_times: int,
    prepared_transaction_offset: int,
    body: Buffer,
    topic_bytes: bytes,
    properties_bytes: bytes,
) -> int: ...
def encode_batch_into(
    buf: Any,
    pos: int,
    batch: PreparedBatch,
    *,
    queue_id: int,
    queue_offset: int,
    physical_offset: int,
    sys_flag: int,
    born_timestamp: int,
    born_host: bytes,
    store_timestamp: int,
    store_host: bytes,
    reconsume_times: int,
) -> None: ...
def prepare_batch(
    data: Buffer, batch_properties: bytes, topic_bytes: bytes, *, born_v6: bool, store_v6: bool
) -> PreparedBatch: ...
def decode(buf: Any, pos: int, limit: int, with_body: bool) -> MessageRecord: ...
def java_hash(text: str) -> int: ...
def index_key_hash(key: str) -> int: ...
