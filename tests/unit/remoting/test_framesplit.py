"""The compiled frame splitter (rmq/remoting/_framesplit.pyx) against the pure one.

Streams of frames (empty, small, at the size limit, one past it, lengths below 4) cut into
random chunks give both splitters the same frames, the same pending byte counts after every
chunk and the same errors.  Skipped where the extension was not built.
"""

from __future__ import annotations

import importlib
import struct
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmq.common import compiled
from rmq.remoting import frame
from rmq.remoting.errors import RemotingProtocolError

try:  # imported directly: the comparison runs under RMQ_PURE_PYTHON=1 too
    fast: ModuleType | None = importlib.import_module("rmq.remoting._framesplit")
except ImportError:
    fast = None
pytestmark = pytest.mark.skipif(fast is None, reason="the compiled extension is not built")

MAX_FRAME = 300


@st.composite
def streams(draw: st.DrawFn) -> tuple[bytes, list[int]]:
    """Frames laid end to end (some with bad lengths) and the cut points of the reads."""
    stream = bytearray()
    for _ in range(draw(st.integers(0, 12))):
        length = draw(
            st.one_of(
                st.integers(4, 64),
                st.sampled_from([4, MAX_FRAME - 4, MAX_FRAME - 3, 3, 0, -1, -(2**31)]),
            )
        )
        stream += struct.pack(">i", length) + draw(st.binary(min_size=max(length, 0) // 2))[
            : max(length, 0)
        ].ljust(max(length, 0), b"\x00")
    stream += draw(st.binary(max_size=6))  # a partial length word or frame at the end
    cuts = sorted(draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    return bytes(stream), cuts


def run(splitter: Any, stream: bytes, cuts: list[int]) -> list[Any]:
    """Everything the splitter does with the stream read in these pieces."""
    seen: list[Any] = []
    start = 0
    for cut in [*cuts, len(stream)]:
        try:
            frames = splitter.feed(stream[start:cut])
        except Exception as exc:
            seen.append(("error", type(exc), str(exc)))
            return seen
        seen.append(([bytes(piece) for piece in frames], splitter.pending_bytes))
        start = cut
    splitter.discard()
    seen.append(splitter.pending_bytes)
    return seen


@settings(max_examples=400, deadline=None)
@given(streams())
def test_the_compiled_splitter_cuts_as_the_pure_one(
    stream: tuple[bytes, list[int]],
) -> None:
    assert fast is not None
    data, cuts = stream
    expected = run(frame._PureFrameSplitter(MAX_FRAME), data, cuts)
    assert run(fast.FrameSplitter(MAX_FRAME), data, cuts) == expected


def test_the_default_maximum_is_the_pure_one() -> None:
    assert fast is not None
    big = struct.pack(">i", frame.DEFAULT_MAX_FRAME_SIZE - 3)
    with pytest.raises(RemotingProtocolError) as pure_error:
        frame._PureFrameSplitter().feed(big)
    with pytest.raises(RemotingProtocolError) as fast_error:
        fast.FrameSplitter().feed(big)
    assert str(fast_error.value) == str(pure_error.value)
    selected = frame._PureFrameSplitter if compiled.pure_python_forced() else fast.FrameSplitter
    assert frame.FrameSplitter is selected
