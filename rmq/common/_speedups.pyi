"""Types of the compiled twins in _speedups.pyx: the pure functions' own signatures."""

from collections.abc import Iterator

from rmq.common.javahash import index_key_hash as index_key_hash
from rmq.common.javahash import java_hash as java_hash
from rmq.common.message import _decode as decode
from rmq.common.message import encode_batch_into as encode_batch_into
from rmq.common.message import encode_record_into as encode_record_into
from rmq.common.message import prepare_batch as prepare_batch
from rmq.common.recordwalk import Frame
from rmq.common.recordwalk import frame_at as frame_at

class FrameIterator(Iterator[Frame]):
    def __next__(self) -> Frame: ...

def iter_frames(buf: object, pos: int, limit: int) -> FrameIterator: ...

__all__ = [
    "FrameIterator",
    "decode",
    "encode_batch_into",
    "encode_record_into",
    "frame_at",
    "index_key_hash",
    "iter_frames",
    "java_hash",
    "prepare_batch",
]
