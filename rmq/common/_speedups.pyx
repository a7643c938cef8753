# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled twins of the per-message hot paths of rmq.common (built by Cython when a compiler
is present at install; selected by rmq.common.compiled; see docs/benchmarks.md, "Compiled hot
paths").

Each function here has a pure-Python reference of the same name and signature that stays the
definition of its behaviour: ``recordwalk.frame_at`` / ``iter_frames``,
``message.encode_record_into`` / ``encode_batch_into`` and ``javahash.java_hash`` /
``index_key_hash``.  The functions only take the path where everything is valid: at the first
check that fails, or an argument they do not expect, they hand the call to the pure function
(kept as ``<module>._pure_<name>``), which raises its own error, so results and errors are the
pure ones by construction.  tests/unit/common/test_speedups.py checks that both agree.

Buffers are read through the buffer protocol for the duration of one call only (never held
between calls of the frame iterator), so an mmap can be closed as soon as its caller is done.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy, memset

from mmap import mmap as _mmap
from zlib import crc32 as _crc32

cdef uint32_t MESSAGE_MAGIC = 0xDAA320A7
cdef Py_ssize_t MAX_TOPIC_BYTES = 127
cdef Py_ssize_t MAX_PROPERTIES_BYTES = 32767
cdef Py_ssize_t SYS_FLAG_POS = 36
cdef Py_ssize_t PREFIX_SIZE = 40
cdef Py_ssize_t TRAILER_LENGTH = 3
cdef int HOST_BITS = 0x30
cdef uint32_t CRC_MASK = 0x7FFFFFFF
# Per layout ((sys_flag >> 4) & 3): host lengths and where the body starts.
cdef Py_ssize_t[4] BORN_LEN = [8, 20, 8, 20]
cdef Py_ssize_t[4] STORE_LEN = [8, 8, 20, 20]
cdef Py_ssize_t[4] BODY_POS = [88, 100, 100, 112]
cdef Py_ssize_t MIN_RECORD_SIZE = 91


cdef inline uint32_t _u32(const uint8_t* p) noexcept nogil:
    return (<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3]


cdef inline int32_t _i32(const uint8_t* p) noexcept nogil:
    return <int32_t>_u32(p)


cdef inline int16_t _i16(const uint8_t* p) noexcept nogil:
    return <int16_t>((<uint32_t>p[0] << 8) | p[1])


cdef inline int64_t _i64(const uint8_t* p) noexcept nogil:
    return <int64_t>((<uint64_t>_u32(p) << 32) | _u32(p + 4))


cdef inline void _put32(uint8_t* p, uint32_t v) noexcept nogil:
    p[0] = v >> 24
    p[1] = (v >> 16) & 0xFF
    p[2] = (v >> 8) & 0xFF
    p[3] = v & 0xFF


cdef inline void _put64(uint8_t* p, uint64_t v) noexcept nogil:
    _put32(p, <uint32_t>(v >> 32))
    _put32(p + 4, <uint32_t>v)


cdef object _recordwalk_module = None
cdef object _message_module = None
cdef object _javahash_module = None
cdef tuple _layouts = None
# Buffers written directly; anything else (a subclass that watches its stores, say) goes to
# the pure encoders.
cdef tuple _PLAIN_BUFFERS = (bytearray, memoryview, _mmap)


cdef object _recordwalk():
    global _recordwalk_module, _layouts
    if _recordwalk_module is None:
        from rmq.common import recordwalk
        _layouts = tuple(recordwalk.LAYOUTS)
        _recordwalk_module = recordwalk
    return _recordwalk_module


cdef object _message():
    global _message_module
    if _message_module is None:
        from rmq.common import message
        _message_module = message
    return _message_module


cdef object _javahash():
    global _javahash_module
    if _javahash_module is None:
        from rmq.common import javahash
        _javahash_module = javahash
    return _javahash_module


# --- framing (rmq.common.recordwalk) ---------------------------------------------------------


cdef Py_ssize_t _walk_one(const uint8_t* p, Py_ssize_t pos, Py_ssize_t limit, Py_ssize_t* out,
                          int* host_bits) noexcept nogil:
    """The end of the valid record at p[pos:] (out: body_pos, body_end, topic_end), or -1:
    the checks of recordwalk.iter_frames."""
    cdef int32_t size = _i32(p + pos)
    cdef Py_ssize_t end = pos + size
    if _u32(p + pos + 4) != MESSAGE_MAGIC or size < MIN_RECORD_SIZE or end > limit:
        return -1
    host_bits[0] = (_i32(p + pos + SYS_FLAG_POS) >> 4) & 3
    cdef Py_ssize_t body_pos = pos + BODY_POS[host_bits[0]]
    if body_pos + TRAILER_LENGTH > end:
        return -1
    cdef Py_ssize_t body_end = body_pos + _i32(p + body_pos - 4)
    if not (body_pos <= body_end <= end - TRAILER_LENGTH):
        return -1
    cdef Py_ssize_t topic_end = body_end + 1 + p[body_end]
    if topic_end - body_end > MAX_TOPIC_BYTES + 1 or topic_end + 2 > end:
        return -1
    if _i16(p + topic_end) != end - topic_end - 2:
        return -1
    out[0] = body_pos
    out[1] = body_end
    out[2] = topic_end
    return end


cdef tuple _prefix(const uint8_t* p):
    return (
        _i32(p), _u32(p + 4), _i32(p + 8), _i32(p + 12), _i32(p + 16),
        _i64(p + 20), _i64(p + 28), _i32(p + 36),
    )


cdef class FrameIterator:
    """recordwalk.iter_frames: frames the records of buf[pos:limit], stopping quietly."""

    cdef object _buf
    cdef object _pure  # the pure walk, for a limit past the buffer's end
    cdef Py_ssize_t _pos
    cdef Py_ssize_t _limit

    def __cinit__(self, buf, Py_ssize_t pos, Py_ssize_t limit):
        self._buf = buf
        self._pure = None
        self._pos = pos
        self._limit = limit

    def __iter__(self):
        return self

    def __next__(self):
        cdef Py_buffer view
        cdef Py_ssize_t pos = self._pos, end = 0
        cdef Py_ssize_t[3] out = [0, 0, 0]
        cdef int host_bits = 0
        cdef tuple prefix
        if self._pure is not None:
            return next(self._pure)
        if self._buf is None or pos + PREFIX_SIZE > self._limit:
            self._buf = None
            raise StopIteration
        PyObject_GetBuffer(self._buf, &view, PyBUF_SIMPLE)
        try:
            if pos < 0 or self._limit > view.len:  # the pure walk decides these
                self._pure = _recordwalk()._pure_iter_frames(self._buf, pos, self._limit)
                self._buf = None
            else:
                end = _walk_one(<const uint8_t*>view.buf, pos, self._limit, out, &host_bits)
                if end < 0:
                    self._buf = None
                    raise StopIteration
                prefix = _prefix(<const uint8_t*>view.buf + pos)
        finally:
            PyBuffer_Release(&view)
        if self._pure is not None:
            return next(self._pure)
        self._pos = end
        if _layouts is None:
            _recordwalk()
        return (pos, end, prefix, _layouts[host_bits], out[0], out[1], out[2])


def iter_frames(buf, Py_ssize_t pos, Py_ssize_t limit):
    return FrameIterator(buf, pos, limit)


cdef tuple _head(const uint8_t* p, int host_bits):
    cdef Py_ssize_t born_len = BORN_LEN[host_bits], store_len = STORE_LEN[host_bits]
    cdef const uint8_t* q = p + 48 + born_len  # STORETIMESTAMP
    cdef const uint8_t* r = q + 8 + store_len  # RECONSUMETIMES
    return (
        _i32(p), _u32(p + 4), _i32(p + 8), _i32(p + 12), _i32(p + 16),
        _i64(p + 20), _i64(p + 28), _i32(p + 36), _i64(p + 40),
        PyBytes_FromStringAndSize(<const char*>p + 48, born_len),
        _i64(q),
        PyBytes_FromStringAndSize(<const char*>q + 8, store_len),
        _i32(r), _i64(r + 4), _i32(r + 12),
    )


cdef int _frame(const uint8_t* p, Py_ssize_t pos, Py_ssize_t limit, Py_ssize_t* out) noexcept nogil:
    """The host bits of the valid record at p[pos:] (ending by limit) and, in out, its body,
    topic (position, length), properties and end positions; -1 when it is not one (the checks
    of recordwalk.frame_at, which the caller must have let through pos and limit)."""
    cdef int host_bits = (_i32(p + pos + SYS_FLAG_POS) >> 4) & 3
    cdef Py_ssize_t body_pos = pos + BODY_POS[host_bits], topic_pos, topic_len, props_pos
    cdef int32_t size = _i32(p + pos), body_len, props_len
    cdef Py_ssize_t end = pos + size
    if (
        body_pos > limit
        or _u32(p + pos + 4) != MESSAGE_MAGIC
        or size < body_pos - pos + TRAILER_LENGTH
        or end > limit
    ):
        return -1
    body_len = _i32(p + body_pos - 4)
    topic_pos = body_pos + body_len + 1
    if body_len < 0 or topic_pos + 2 > end:
        return -1
    topic_len = p[topic_pos - 1]
    props_pos = topic_pos + topic_len + 2
    if topic_len > MAX_TOPIC_BYTES or props_pos > end:
        return -1
    props_len = _i16(p + props_pos - 2)
    if props_len < 0 or props_pos + props_len != end:
        return -1
    out[0] = body_pos
    out[1] = topic_pos
    out[2] = topic_len
    out[3] = props_pos
    out[4] = end
    return host_bits


def frame_at(buf, Py_ssize_t pos, Py_ssize_t limit):
    """recordwalk.frame_at; any record it does not accept goes to the pure one (which raises)."""
    cdef Py_buffer view
    cdef int host_bits = -1
    cdef Py_ssize_t[5] out
    cdef tuple head
    if pos >= 0 and pos + MIN_RECORD_SIZE <= limit:
        PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
        try:
            if limit <= view.len:
                host_bits = _frame(<const uint8_t*>view.buf, pos, limit, out)
                if host_bits >= 0:
                    head = _head(<const uint8_t*>view.buf + pos, host_bits)
        finally:
            PyBuffer_Release(&view)
        if host_bits >= 0:
            return head, out[0], out[1], out[2], out[3], out[4]
    return _recordwalk()._pure_frame_at(buf, pos, limit)


cdef object _record_class = None
cdef object _host_str = None
cdef object _decode_properties = None
cdef const char* _HEX = b"0123456789ABCDEF"


cdef object _hex_id(const uint8_t* host, Py_ssize_t host_len, int64_t offset):
    """msgid.offset_msg_id: the store host and the offset, upper-case hex."""
    cdef uint8_t[28] raw
    cdef char[56] text
    cdef Py_ssize_t i, n = host_len + 8
    memcpy(raw, host, host_len)
    _put64(raw + host_len, <uint64_t>offset)
    for i in range(n):
        text[2 * i] = _HEX[raw[i] >> 4]
        text[2 * i + 1] = _HEX[raw[i] & 15]
    return text[:2 * n].decode("ascii")


def decode(buf, Py_ssize_t pos, Py_ssize_t limit, with_body):
    """message._decode: the MessageRecord at buf[pos:] (the pure one for anything it does not
    accept, which raises RecordError)."""
    global _record_class, _host_str, _decode_properties
    cdef Py_buffer view
    cdef const uint8_t* p
    cdef int host_bits
    cdef Py_ssize_t[5] out
    cdef Py_ssize_t born_len, store_len
    cdef const uint8_t* q
    cdef const uint8_t* r
    cdef tuple fields = None
    if _record_class is None:
        from rmq.common import msgid
        _record_class = _message().MessageRecord
        _decode_properties = _message().decode_properties_bytes
        _host_str = msgid.host_str
    if pos >= 0 and pos + MIN_RECORD_SIZE <= limit:
        PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
        try:
            p = <const uint8_t*>view.buf
            host_bits = _frame(p, pos, limit, out) if limit <= view.len else -1
            if host_bits >= 0:
                born_len = BORN_LEN[host_bits]
                store_len = STORE_LEN[host_bits]
                q = p + pos + 48 + born_len  # STORETIMESTAMP
                r = q + 8 + store_len  # RECONSUMETIMES
                fields = (
                    _i32(p + pos), _u32(p + pos + 4), _i32(p + pos + 8), _i32(p + pos + 12),
                    _i32(p + pos + 16), _i64(p + pos + 20), _i64(p + pos + 28),
                    _i32(p + pos + 36), _i64(p + pos + 40),
                    _host_str((<const char*>p)[pos + 48:pos + 48 + born_len]),
                    _i64(q),
                    _host_str((<const char*>q)[8:8 + store_len]),
                    _i32(r), _i64(r + 4),
                    (<const char*>p)[out[0]:out[1] - 1] if with_body else None,
                    (<const char*>p)[out[1]:out[1] + out[2]].decode("utf-8", "replace"),
                    _decode_properties((<const char*>p)[out[3]:out[4]]),
                    _hex_id(q + 8, store_len, _i64(p + pos + 28)),
                )
        finally:
            PyBuffer_Release(&view)
        if fields is not None:
            return tuple.__new__(_record_class, fields)
    return _message()._pure_decode(buf, pos, limit, with_body)


# --- encoding (rmq.common.message) -----------------------------------------------------------


cdef inline uint8_t* _put_head(
    uint8_t* p, int32_t size, int32_t crc, int32_t queue_id, int32_t flag, int64_t queue_offset,
    int64_t physical_offset, int32_t sys_flag, int64_t born_timestamp, const uint8_t* born_host,
    Py_ssize_t born_len, int64_t store_timestamp, const uint8_t* store_host,
    Py_ssize_t store_len, int32_t reconsume_times, int64_t prepared, int32_t body_len,
) noexcept nogil:
    """The fixed part of a record at p; returns where the body goes."""
    _put32(p, <uint32_t>size)
    _put32(p + 4, MESSAGE_MAGIC)
    _put32(p + 8, <uint32_t>crc)
    _put32(p + 12, <uint32_t>queue_id)
    _put32(p + 16, <uint32_t>flag)
    _put64(p + 20, <uint64_t>queue_offset)
    _put64(p + 28, <uint64_t>physical_offset)
    _put32(p + 36, <uint32_t>sys_flag)
    _put64(p + 40, <uint64_t>born_timestamp)
    memcpy(p + 48, born_host, born_len)
    p += 48 + born_len
    _put64(p, <uint64_t>store_timestamp)
    memcpy(p + 8, store_host, store_len)
    p += 8 + store_len
    _put32(p, <uint32_t>reconsume_times)
    _put64(p + 4, <uint64_t>prepared)
    _put32(p + 12, <uint32_t>body_len)
    return p + 16


cdef int _host_bits(Py_ssize_t born_len, Py_ssize_t store_len) noexcept nogil:
    if (born_len != 8 and born_len != 20) or (store_len != 8 and store_len != 20):
        return -1
    return (born_len == 20) | (store_len == 20) << 1


cdef Py_ssize_t _encode_record(
    object buf, Py_ssize_t pos, int32_t queue_id, int32_t flag, int64_t queue_offset,
    int64_t physical_offset, int32_t sys_flag, int64_t born_timestamp, bytes born_host,
    int64_t store_timestamp, bytes store_host, int32_t reconsume_times, int64_t prepared,
    object body, bytes topic_bytes, bytes properties_bytes,
) except -2:
    """Write the record; -1 when a check fails (the caller then runs the pure encoder)."""
    cdef Py_ssize_t topic_len = len(topic_bytes), props_len = len(properties_bytes)
    cdef Py_ssize_t born_len = len(born_host), store_len = len(store_host)
    cdef int host_bits = _host_bits(born_len, store_len)
    cdef Py_buffer out, src
    cdef Py_ssize_t body_len, end
    cdef uint8_t* p
    if topic_len > MAX_TOPIC_BYTES or props_len > MAX_PROPERTIES_BYTES or host_bits < 0 or pos < 0:
        return -1
    crc = _crc32(body)
    PyObject_GetBuffer(body, &src, PyBUF_SIMPLE)
    try:
        body_len = src.len
        end = pos + BODY_POS[host_bits] + body_len + 1 + topic_len + 2 + props_len
        if body_len > 0x7FFFFFFF or end - pos > 0x7FFFFFFF:
            return -1
        if PyObject_GetBuffer(buf, &out, PyBUF_WRITABLE) < 0:
            return -1
        try:
            if end > out.len:
                return -1
            p = _put_head(
                <uint8_t*>out.buf + pos, <int32_t>(end - pos), <int32_t>(crc & CRC_MASK),
                queue_id, flag, queue_offset, physical_offset,
                (sys_flag & ~HOST_BITS) | host_bits << 4, born_timestamp, born_host, born_len,
                store_timestamp, store_host, store_len, reconsume_times, prepared,
                <int32_t>body_len,
            )
            memcpy(p, src.buf, body_len)
            p += body_len
            p[0] = <uint8_t>topic_len
            memcpy(p + 1, <const char*>topic_bytes, topic_len)
            p += 1 + topic_len
            p[0] = <uint8_t>(props_len >> 8)
            p[1] = <uint8_t>props_len
            memcpy(p + 2, <const char*>properties_bytes, props_len)
        finally:
            PyBuffer_Release(&out)
    finally:
        PyBuffer_Release(&src)
    return end - pos


def encode_record_into(
    buf, pos, *, queue_id, flag, queue_offset, physical_offset, sys_flag, born_timestamp,
    born_host, store_timestamp, store_host, reconsume_times, prepared_transaction_offset, body,
    topic_bytes, properties_bytes,
):
    """message.encode_record_into (the pure one for anything it does not accept)."""
    cdef Py_ssize_t written = -1
    if (
        type(buf) in _PLAIN_BUFFERS
        and type(born_host) is bytes and type(store_host) is bytes
        and type(topic_bytes) is bytes and type(properties_bytes) is bytes
    ):
        try:
            written = _encode_record(
                buf, pos, queue_id, flag, queue_offset, physical_offset, sys_flag,
                born_timestamp, born_host, store_timestamp, store_host, reconsume_times,
                prepared_transaction_offset, body, topic_bytes, properties_bytes,
            )
        except (OverflowError, TypeError, BufferError):
            written = -1
    if written >= 0:
        return written
    return _message()._pure_encode_record_into(
        buf, pos, queue_id=queue_id, flag=flag, queue_offset=queue_offset,
        physical_offset=physical_offset, sys_flag=sys_flag, born_timestamp=born_timestamp,
        born_host=born_host, store_timestamp=store_timestamp, store_host=store_host,
        reconsume_times=reconsume_times, prepared_transaction_offset=prepared_transaction_offset,
        body=body, topic_bytes=topic_bytes, properties_bytes=properties_bytes,
    )


cdef int _encode_batch(
    object buf, Py_ssize_t pos, object batch, int32_t queue_id, int64_t queue_offset,
    int64_t physical_offset, int32_t sys_flag, int64_t born_timestamp, bytes born_host,
    int64_t store_timestamp, bytes store_host, int32_t reconsume_times,
) except -2:
    """Write the batch's records; -1 when a check fails (the caller then runs the pure one)."""
    cdef int host_bits = batch.host_bits
    cdef Py_ssize_t born_len = len(born_host), store_len = len(store_host)
    cdef Py_ssize_t total = batch.total_size, start = pos, end = pos + total, count, i
    cdef Py_ssize_t body_len, trailer_len, size
    cdef int64_t base = physical_offset - pos
    cdef list flags = batch.flags, bodies = batch.bodies, trailers = batch.trailers
    cdef list sizes = batch.sizes, crcs = batch.body_crcs
    cdef Py_buffer out, src
    cdef uint8_t* p
    cdef uint8_t* q
    cdef int32_t first_size
    cdef bytes trailer
    if not 0 <= host_bits <= 3 or born_len != BORN_LEN[host_bits] or store_len != STORE_LEN[host_bits]:
        return -1
    count = len(sizes)
    if pos < 0 or len(flags) != count or len(bodies) != count or len(trailers) != count:
        return -1
    if len(crcs) != count or count == 0 or queue_offset > 0x7FFFFFFFFFFFFFFF - count:
        return -1
    if end - pos > 0x7FFFFFFFFFFFFFFF - physical_offset:
        return -1
    sys_flag = (sys_flag & ~HOST_BITS) | host_bits << 4
    # Every value is converted before anything is written.
    cdef int32_t[::1] c_flags = _int32s(flags)
    cdef int32_t[::1] c_crcs = _int32s(crcs)
    cdef int32_t[::1] c_sizes = _int32s(sizes)
    if PyObject_GetBuffer(buf, &out, PyBUF_WRITABLE) < 0:
        return -1
    try:
        if end > out.len:
            return -1
        # Every record is checked before anything is written: nothing below can fail.
        size = 0
        for i in range(count):
            if type(trailers[i]) is not bytes:
                return -1
            PyObject_GetBuffer(bodies[i], &src, PyBUF_SIMPLE)
            body_len = src.len
            PyBuffer_Release(&src)
            if body_len > 0x7FFFFFFF:
                return -1
            if BODY_POS[host_bits] + body_len + len(<bytes>trailers[i]) != c_sizes[i]:
                return -1
            size += c_sizes[i]
        if size != total:
            return -1
        q = <uint8_t*>out.buf
        p = q + pos
        for i in range(count):
            trailer = trailers[i]
            trailer_len = len(trailer)
            PyObject_GetBuffer(bodies[i], &src, PyBUF_SIMPLE)
            body_len = src.len
            p = _put_head(
                p, 0 if i == 0 else c_sizes[i], c_crcs[i], queue_id, c_flags[i],
                queue_offset + i, base + (p - q), sys_flag, born_timestamp, born_host,
                born_len, store_timestamp, store_host, store_len, reconsume_times, 0,
                <int32_t>body_len,
            )
            memcpy(p, src.buf, body_len)
            PyBuffer_Release(&src)
            p += body_len
            memcpy(p, <const char*>trailer, trailer_len)
            p += trailer_len
        _put32(q + start, <uint32_t>c_sizes[0])
    finally:
        PyBuffer_Release(&out)
    return 0


cdef object _int32s(list values):
    from array import array
    cdef object typed = array("i", values)  # OverflowError out of range
    if typed.itemsize != 4:
        raise TypeError("int is not 32-bit here")
    return typed


def encode_batch_into(
    buf, pos, batch, *, queue_id, queue_offset, physical_offset, sys_flag, born_timestamp,
    born_host, store_timestamp, store_host, reconsume_times,
):
    """message.encode_batch_into (the pure one for anything it does not accept)."""
    cdef int done = -1
    if type(buf) in _PLAIN_BUFFERS and type(born_host) is bytes and type(store_host) is bytes:
        try:
            done = _encode_batch(
                buf, pos, batch, queue_id, queue_offset, physical_offset, sys_flag,
                born_timestamp, born_host, store_timestamp, store_host, reconsume_times,
            )
        except (OverflowError, TypeError, BufferError):
            done = -1
    if done == 0:
        return None
    return _message()._pure_encode_batch_into(
        buf, pos, batch, queue_id=queue_id, queue_offset=queue_offset,
        physical_offset=physical_offset, sys_flag=sys_flag, born_timestamp=born_timestamp,
        born_host=born_host, store_timestamp=store_timestamp, store_host=store_host,
        reconsume_times=reconsume_times,
    )


cdef inline object _value(const uint8_t* p, Py_ssize_t start, Py_ssize_t end):
    return (<const char*>p)[start:end].decode("utf-8", "replace")


cdef void _scan_properties(const uint8_t* p, Py_ssize_t length, Py_ssize_t* spans) noexcept nogil:
    """The last TAGS, KEYS and UNIQ_KEY values of a property string (properties.py's rules:
    pairs split on 0x02, the name ends at the first 0x01, empty names and values dropped, the
    last pair of a name wins): spans[2k], spans[2k + 1] = value start and end, -1 if absent."""
    cdef Py_ssize_t start = 0, end, sep
    while start <= length:
        end = start
        while end < length and p[end] != 0x02:
            end += 1
        sep = start
        while sep < end and p[sep] != 0x01:
            sep += 1
        if start < sep < end - 1:
            if sep - start == 4 and memcmp(p + start, b"TAGS", 4) == 0:
                spans[0] = sep + 1
                spans[1] = end
            elif sep - start == 4 and memcmp(p + start, b"KEYS", 4) == 0:
                spans[2] = sep + 1
                spans[3] = end
            elif sep - start == 8 and memcmp(p + start, b"UNIQ_KEY", 8) == 0:
                spans[4] = sep + 1
                spans[5] = end
        start = end + 1


cdef object _prepare_batch(object data, bytes batch_properties, bytes topic_bytes, int host_bits):
    """PreparedBatch of a batch body, or None when a check fails (the caller then runs the
    pure prepare_batch, which raises)."""
    cdef Py_ssize_t topic_len = len(topic_bytes), batch_len = len(batch_properties)
    cdef Py_ssize_t head_size = BODY_POS[host_bits], pos = 0, limit, body_pos, props_len_pos
    cdef Py_ssize_t end, props_len, inner_len, merged_len, trailer_len, total = 0, k
    cdef int32_t flag, body_len
    cdef int16_t inner_props_len
    cdef bint separator
    cdef Py_buffer src
    cdef const uint8_t* p
    cdef uint8_t* t
    cdef Py_ssize_t[6] spans
    cdef list flags = [], bodies = [], trailers = [], sizes = [], crcs = []
    cdef list tags_codes = [], keys = [], uniq_keys = []
    if topic_len > MAX_TOPIC_BYTES:
        return None
    message = _message()
    overrides = message.decode_properties_bytes(batch_properties)
    tags_override = overrides.get("TAGS")
    keys_override = overrides.get("KEYS")
    uniq_override = overrides.get("UNIQ_KEY")
    tags_code = _javahash().tags_code
    view = memoryview(data)
    PyObject_GetBuffer(view, &src, PyBUF_SIMPLE)
    try:
        p = <const uint8_t*>src.buf
        limit = src.len
        while pos < limit:
            body_pos = pos + 20
            if body_pos > limit:
                return None
            flag = _i32(p + pos + 12)
            body_len = _i32(p + pos + 16)
            props_len_pos = body_pos + body_len
            if body_len < 0 or props_len_pos + 2 > limit:
                return None
            inner_props_len = _i16(p + props_len_pos)
            end = props_len_pos + 2 + inner_props_len
            if inner_props_len < 0 or end > limit:
                return None
            inner_len = inner_props_len
            if batch_len == 0:
                merged_len = inner_len
                separator = False
            elif inner_len == 0:
                merged_len = batch_len
                separator = False
            else:
                separator = p[end - 1] != 0x02
                merged_len = inner_len + separator + batch_len
            if merged_len > MAX_PROPERTIES_BYTES:
                return None
            trailer_len = 1 + topic_len + 2 + merged_len
            trailer = PyBytes_FromStringAndSize(NULL, trailer_len)
            t = <uint8_t*><char*>trailer
            t[0] = <uint8_t>topic_len
            memcpy(t + 1, <const char*>topic_bytes, topic_len)
            t += 1 + topic_len
            t[0] = <uint8_t>(merged_len >> 8)
            t[1] = <uint8_t>merged_len
            t += 2
            memcpy(t, p + end - inner_len, inner_len)
            t += inner_len
            if separator:
                t[0] = 0x02
                t += 1
            memcpy(t, <const char*>batch_properties, batch_len)
            body = view[body_pos:props_len_pos]
            flags.append(flag)
            bodies.append(body)
            trailers.append(trailer)
            sizes.append(head_size + body_len + trailer_len)
            total += head_size + body_len + trailer_len
            crcs.append(_crc32(body) & CRC_MASK)
            for k in range(6):
                spans[k] = -1
            _scan_properties(p + end - inner_len, inner_len, spans)
            if tags_override is not None:
                tags = tags_override
            elif spans[0] >= 0:
                tags = _value(p + end - inner_len, spans[0], spans[1])
            else:
                tags = None
            tags_codes.append(tags_code(tags))
            if keys_override is not None:
                keys.append(keys_override)
            elif spans[2] >= 0:
                keys.append(_value(p + end - inner_len, spans[2], spans[3]))
            else:
                keys.append(None)
            if uniq_override is not None:
                uniq_keys.append(uniq_override)
            elif spans[4] >= 0:
                uniq_keys.append(_value(p + end - inner_len, spans[4], spans[5]))
            else:
                uniq_keys.append(None)
            pos = end
    finally:
        PyBuffer_Release(&src)
    return message.PreparedBatch(
        host_bits, total, flags, bodies, trailers, sizes, crcs, tags_codes, keys, uniq_keys
    )


def prepare_batch(data, batch_properties, topic_bytes, *, born_v6, store_v6):
    """message.prepare_batch (the pure one for anything it does not accept)."""
    batch = None
    if (
        type(batch_properties) is bytes and type(topic_bytes) is bytes
        and type(born_v6) is bool and type(store_v6) is bool
    ):
        batch = _prepare_batch(
            data, batch_properties, topic_bytes, (born_v6 is True) | (store_v6 is True) << 1
        )
    if batch is not None:
        return batch
    return _message()._pure_prepare_batch(
        data, batch_properties, topic_bytes, born_v6=born_v6, store_v6=store_v6
    )


# --- Java String.hashCode (rmq.common.javahash) ----------------------------------------------


cdef int _unsigned_hash(str text, uint32_t* out):
    """text.hashCode() over UTF-16 units, unsigned; -1 for a lone surrogate (not UTF-16)."""
    cdef uint32_t h = 0
    cdef Py_UCS4 ch
    cdef uint32_t unit
    for ch in text:
        unit = <uint32_t>ch
        if unit < 0xD800:
            h = 31 * h + unit
        elif unit <= 0xDFFF:
            return -1
        elif unit <= 0xFFFF:
            h = 31 * h + unit
        else:
            unit -= 0x10000
            h = 31 * h + (0xD800 + (unit >> 10))
            h = 31 * h + (0xDC00 + (unit & 0x3FF))
    out[0] = h
    return 0


def java_hash(text):
    """javahash.java_hash: ``text.hashCode()`` as a signed 32-bit int."""
    cdef uint32_t h
    if type(text) is not str or _unsigned_hash(text, &h) < 0:
        return _javahash()._pure_java_hash(text)
    return <int32_t>h


def index_key_hash(key):
    """javahash.index_key_hash: ``abs(hashCode)``, MIN_VALUE -> 0."""
    cdef uint32_t h
    if type(key) is not str or _unsigned_hash(key, &h) < 0:
        return _javahash()._pure_index_key_hash(key)
    if h < 0x80000000:
        return h
    return 0x100000000 - h if h != 0x80000000 else 0
