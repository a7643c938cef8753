# cython: language_level=3, boundscheck=False, wraparound=False
"""Compiled twin of rmq.remoting.frame.FrameSplitter (built by Cython when a compiler is there
at install; selected by rmq.common.compiled).  Same constructor, methods, frames and errors as
the pure class, which stays the reference (tests/unit/remoting/test_framesplit.py)."""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport int32_t, uint8_t, uint32_t

from rmq.remoting.errors import RemotingProtocolError

DEF_MAX_FRAME_SIZE = 16_777_216


cdef inline int32_t _i32(const uint8_t* p) noexcept nogil:
    return <int32_t>((<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3])


cdef class FrameSplitter:
    """Cuts a byte stream into frames: memoryviews of what follows each length word."""

    cdef Py_ssize_t _max_length
    cdef Py_ssize_t _needed
    cdef bytearray _pending

    def __init__(self, max_frame_size=DEF_MAX_FRAME_SIZE):
        self._max_length = max_frame_size - 4
        self._pending = bytearray()
        self._needed = 0

    def feed(self, data):
        """The frames completed by `data`; raises RemotingProtocolError on a bad length."""
        cdef Py_buffer buf
        cdef const uint8_t* p
        cdef Py_ssize_t position = 0, size, end
        cdef int32_t length
        cdef list frames = []
        if self._pending:
            self._pending += data
            if len(self._pending) < self._needed:
                return frames
            data = bytes(self._pending)
            self._pending.clear()
        view = memoryview(data)
        self._needed = 4
        PyObject_GetBuffer(data, &buf, PyBUF_SIMPLE)
        try:
            p = <const uint8_t*>buf.buf
            size = buf.len
            while size - position >= 4:
                length = _i32(p + position)
                if length < 4:
                    raise RemotingProtocolError(f"frame length {length} is less than 4")
                if length > self._max_length:
                    raise RemotingProtocolError(
                        f"frame of {length + 4} bytes exceeds the maximum of "
                        f"{self._max_length + 4}"
                    )
                end = position + 4 + length
                if end > size:
                    self._needed = end - position
                    break
                frames.append(view[position + 4 : end])
                position = end
        finally:
            PyBuffer_Release(&buf)
        if position < size:
            self._pending += view[position:]
        return frames

    @property
    def pending_bytes(self):
        """Bytes held of a frame not yet complete."""
        return len(self._pending)

    def discard(self):
        """Drop the bytes of the incomplete frame (its connection is closing)."""
        self._pending = bytearray()
