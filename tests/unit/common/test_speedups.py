"""The compiled hot paths (rmq/common/_speedups.pyx) against their pure-Python references.

Every compiled function must give the pure one's bytes, results and errors (type and message)
on generated inputs: records of every host layout with empty and large bodies, properties up to
the record's limit and one past it, out-of-range integers, damaged and truncated buffers,
batches, and strings with every kind of character.  The module is skipped where the extension
was not built (no compiler at install) and runs under ``RMQ_PURE_PYTHON=1`` too (the switch
itself is checked in subprocesses).
"""

from __future__ import annotations

import importlib
import mmap
import os
import subprocess
import sys
from collections.abc import Callable
from functools import partial
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmq.common import compiled, javahash, message, recordwalk
from rmq.common.message import encode_batch, prepare_batch, record_size
from rmq.common.msgid import pack_host
from rmq.common.properties import encode_properties_bytes
from rmq.common.recordwalk import MAX_PROPERTIES_BYTES, MAX_TOPIC_BYTES

try:  # imported directly: the comparison runs under RMQ_PURE_PYTHON=1 too
    fast: ModuleType | None = importlib.import_module("rmq.common._speedups")
except ImportError:
    fast = None
pytestmark = pytest.mark.skipif(fast is None, reason="the compiled extension is not built")

HOSTS = (pack_host("10.0.0.1", 9876), pack_host("fe80::1", 10911))
INT32 = st.one_of(st.sampled_from([0, -1, 2**31 - 1, -(2**31)]), st.integers(-(2**31), 2**31 - 1))
INT64 = st.one_of(st.sampled_from([0, 2**63 - 1, -(2**63)]), st.integers(-(2**63), 2**63 - 1))
# Mostly in range, sometimes one past it: both sides must refuse the same way.
WIDE32 = st.one_of(INT32, st.sampled_from([2**31, -(2**31) - 1]))
WIDE64 = st.one_of(INT64, st.sampled_from([2**63, -(2**63) - 1]))
BODIES = st.one_of(st.binary(max_size=300), st.sampled_from([b"", bytes(70_000)]))
TOPICS = st.one_of(
    st.text(max_size=40).map(lambda text: text.encode()[:MAX_TOPIC_BYTES]),
    st.sampled_from([b"", b"t" * MAX_TOPIC_BYTES, b"t" * (MAX_TOPIC_BYTES + 1)]),
)
PROPERTIES = st.one_of(
    st.dictionaries(st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "WAIT", "a"]), st.text()).map(
        encode_properties_bytes
    ),
    st.sampled_from(
        [b"", b"p" * MAX_PROPERTIES_BYTES, b"p" * (MAX_PROPERTIES_BYTES + 1), b"\x01\x02"]
    ),
)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def outcome(call: Callable[[], Any]) -> tuple[Any, ...]:
    """What a call gave: its result, or its error's type and message."""
    try:
        return ("ok", call())
    except Exception as exc:
        return ("error", type(exc), str(exc))


def record_fields(draw: Callable[[st.SearchStrategy[Any]], Any], wide: bool) -> dict[str, Any]:
    int32, int64 = (WIDE32, WIDE64) if wide else (INT32, INT64)
    return {
        "queue_id": draw(int32),
        "flag": draw(int32),
        "queue_offset": draw(int64),
        "physical_offset": draw(int64),
        "sys_flag": draw(int32),
        "born_timestamp": draw(int64),
        "born_host": draw(st.sampled_from(HOSTS)),
        "store_timestamp": draw(int64),
        "store_host": draw(st.sampled_from(HOSTS)),
        "reconsume_times": draw(int32),
        "prepared_transaction_offset": draw(int64),
        "body": draw(BODIES),
        "topic_bytes": draw(TOPICS),
        "properties_bytes": draw(PROPERTIES),
    }


@SETTINGS
@given(st.data(), st.booleans(), st.integers(-2, 3), st.integers(-40, 40))
def test_encode_record_gives_the_pure_bytes_and_errors(
    data: st.DataObject, wide: bool, pos: int, slack: int
) -> None:
    fields = record_fields(data.draw, wide)
    body_type = data.draw(st.sampled_from([bytes, bytearray, memoryview]))
    fields["body"] = body_type(fields["body"])
    size = record_size(
        len(fields["body"]),
        len(fields["topic_bytes"]),
        len(fields["properties_bytes"]),
        len(fields["born_host"]) == 20,
        len(fields["store_host"]) == 20,
    )
    length = max(0, max(pos, 0) + size + min(slack, 0))  # sometimes too short
    pure_buf, fast_buf = bytearray(b"\xee" * length), bytearray(b"\xee" * length)
    expected = outcome(lambda: message._pure_encode_record_into(pure_buf, pos, **fields))
    assert fast is not None
    assert outcome(lambda: fast.encode_record_into(fast_buf, pos, **fields)) == expected
    assert fast_buf == pure_buf


FIXED: dict[str, Any] = {
    "queue_id": 1,
    "flag": 0,
    "queue_offset": 2,
    "physical_offset": 3,
    "sys_flag": 0,
    "born_timestamp": 4,
    "born_host": HOSTS[0],
    "store_timestamp": 5,
    "store_host": HOSTS[1],
    "reconsume_times": 0,
    "prepared_transaction_offset": 0,
    "body": b"x" * 100,
    "topic_bytes": b"T",
    "properties_bytes": b"a\x01b",
}


def test_encode_record_into_read_only_and_mapped_buffers() -> None:
    fields = FIXED
    assert fast is not None
    expected = outcome(lambda: message._pure_encode_record_into(bytes(400), 0, **fields))
    assert expected[0] == "error"
    assert outcome(lambda: fast.encode_record_into(bytes(400), 0, **fields)) == expected
    pure_map, fast_map = mmap.mmap(-1, 4096), mmap.mmap(-1, 4096)
    written = message._pure_encode_record_into(pure_map, 10, **fields)
    assert fast.encode_record_into(fast_map, 10, **fields) == written
    assert fast_map[:] == pure_map[:]
    pure_map.close()
    fast_map.close()


@st.composite
def record_buffers(draw: st.DrawFn) -> bytearray:
    """Valid records laid end to end, then damaged: bytes changed, a BLANK, a cut."""
    buf = bytearray()
    for _ in range(draw(st.integers(0, 4))):
        fields = record_fields(draw, False)
        if len(fields["topic_bytes"]) > MAX_TOPIC_BYTES:
            fields["topic_bytes"] = b"t"
        if len(fields["properties_bytes"]) > MAX_PROPERTIES_BYTES:
            fields["properties_bytes"] = b""
        size = record_size(
            len(fields["body"]),
            len(fields["topic_bytes"]),
            len(fields["properties_bytes"]),
            len(fields["born_host"]) == 20,
            len(fields["store_host"]) == 20,
        )
        record = bytearray(size)
        message._pure_encode_record_into(record, 0, **fields)
        buf += record
    for _ in range(draw(st.integers(0, 3))):
        if buf:
            buf[draw(st.integers(0, len(buf) - 1))] = draw(st.integers(0, 255))
    if draw(st.booleans()):
        buf += b"\x00\x00\x00\x10\xcb\xd4\x31\x94" + bytes(8)
    buf += draw(st.binary(max_size=120))
    return buf


def frames(walk: Callable[..., Any], buf: Any, pos: int, limit: int) -> tuple[Any, ...]:
    return outcome(lambda: list(walk(buf, pos, limit)))


@SETTINGS
@given(record_buffers(), st.integers(-3, 200), st.integers(-200, 50))
def test_frame_at_and_iter_frames_agree_with_the_pure_walk(
    buf: bytearray, start: int, limit_delta: int
) -> None:
    assert fast is not None
    limit = len(buf) + limit_delta  # sometimes short of the buffer, sometimes past it
    view = memoryview(buf)
    for candidate in (bytes(buf), buf, view):
        assert frames(fast.iter_frames, candidate, start, limit) == frames(
            recordwalk._pure_iter_frames,
            candidate,
            start,
            limit,
        )
    positions = {0, start} | {frame[0] for frame in recordwalk._pure_iter_frames(buf, 0, len(buf))}
    for pos in positions:
        expected = outcome(partial(recordwalk._pure_frame_at, buf, pos, limit))
        assert outcome(partial(fast.frame_at, buf, pos, limit)) == expected
        for with_body in (True, False):
            expected = outcome(partial(message._pure_decode, buf, pos, limit, with_body))
            assert outcome(partial(fast.decode, buf, pos, limit, with_body)) == expected


def test_iter_frames_holds_no_buffer_between_records() -> None:
    """A walk left half way does not keep its mmap from closing."""
    fields = FIXED
    mapped = mmap.mmap(-1, 4096)
    size = message._pure_encode_record_into(mapped, 0, **fields)
    message._pure_encode_record_into(mapped, size, **fields)
    assert fast is not None
    walk = fast.iter_frames(mapped, 0, len(mapped))
    assert next(walk)[:2] == (0, size)
    mapped.close()  # raises BufferError while an export is held
    assert mapped.closed


@st.composite
def batches(draw: st.DrawFn) -> tuple[bytes, bytes, bytes]:
    messages = draw(
        st.lists(
            st.tuples(INT32, BODIES, PROPERTIES.filter(lambda p: len(p) <= 2000)),
            min_size=1,
            max_size=6,
        )
    )
    batch_properties = draw(st.sampled_from([b"", b"WAIT\x01true", b"KEYS\x01k1 k2\x02TAGS\x01t"]))
    topic = draw(st.sampled_from([b"T", b"t" * MAX_TOPIC_BYTES]))
    return encode_batch(messages), batch_properties, topic


@SETTINGS
@given(
    batches(),
    st.sampled_from(HOSTS),
    st.sampled_from(HOSTS),
    st.booleans(),
    st.integers(0, 5),
    st.integers(-2, 2),
    st.data(),
)
def test_encode_batch_gives_the_pure_bytes_and_errors(
    batch_body: tuple[bytes, bytes, bytes],
    born: bytes,
    store: bytes,
    wide: bool,
    pos: int,
    slack: int,
    data: st.DataObject,
) -> None:
    body, batch_properties, topic = batch_body
    prepared = prepare_batch(
        body, batch_properties, topic, born_v6=len(born) == 20, store_v6=len(store) == 20
    )
    if data.draw(st.booleans()):  # hosts that do not match the prepared layout, sometimes
        born = data.draw(st.sampled_from(HOSTS))
    int32, int64 = (WIDE32, WIDE64) if wide else (INT32, st.integers(0, 2**62))
    fields: dict[str, Any] = {
        "queue_id": data.draw(int32),
        "queue_offset": data.draw(int64),
        "physical_offset": data.draw(int64),
        "sys_flag": data.draw(int32),
        "born_timestamp": data.draw(int64),
        "born_host": born,
        "store_timestamp": data.draw(int64),
        "store_host": store,
        "reconsume_times": data.draw(int32),
    }
    length = max(0, pos + prepared.total_size + min(slack, 0))
    pure_buf, fast_buf = bytearray(length), bytearray(length)
    expected = outcome(lambda: message._pure_encode_batch_into(pure_buf, pos, prepared, **fields))
    assert fast is not None
    assert outcome(lambda: fast.encode_batch_into(fast_buf, pos, prepared, **fields)) == expected
    assert fast_buf == pure_buf


PROPERTY_NAMES = st.sampled_from([b"TAGS", b"KEYS", b"UNIQ_KEY", b"TAG", b"", b"a", b"\xff"])
PROPERTY_BYTES = st.binary(max_size=8).map(lambda raw: raw.replace(b"\x02", b""))
# Property strings as Java writes them and as they should not be: duplicates, 0x01 inside
# values, empty names or values, invalid UTF-8, a trailing 0x02.
RAW_PROPERTIES = st.lists(
    st.tuples(PROPERTY_NAMES, st.sampled_from([b"\x01", b"", b"\x01\x01"]), PROPERTY_BYTES),
    max_size=5,
).map(lambda pairs: b"\x02".join(name + sep + value for name, sep, value in pairs))


@st.composite
def raw_batches(draw: st.DrawFn) -> bytes:
    """Batch bodies, sometimes cut short or with a bad length, sometimes over-long properties."""
    messages = draw(
        st.lists(
            st.tuples(
                INT32,
                st.binary(max_size=40),
                st.one_of(RAW_PROPERTIES, st.just(b"p" * (MAX_PROPERTIES_BYTES - 5))),
            ),
            max_size=5,
        )
    )
    body = bytearray(encode_batch(messages))
    if body and draw(st.booleans()):
        body[draw(st.integers(0, len(body) - 1))] = draw(st.integers(0, 255))
    if draw(st.booleans()):
        body = body[: draw(st.integers(0, len(body)))]
    return bytes(body)


@SETTINGS
@given(
    raw_batches(),
    st.one_of(RAW_PROPERTIES, st.sampled_from([b"", b"p" * 10])),
    st.sampled_from([b"", b"T", b"t" * MAX_TOPIC_BYTES, b"t" * (MAX_TOPIC_BYTES + 1)]),
    st.booleans(),
    st.booleans(),
    st.sampled_from([bytes, bytearray, memoryview]),
)
def test_prepare_batch_gives_the_pure_batch_and_errors(
    body: bytes,
    batch_properties: bytes,
    topic: bytes,
    born_v6: bool,
    store_v6: bool,
    body_type: Callable[[bytes], Any],
) -> None:
    assert fast is not None
    data = body_type(body)
    expected = outcome(
        lambda: message._pure_prepare_batch(
            data, batch_properties, topic, born_v6=born_v6, store_v6=store_v6
        )
    )
    got = outcome(
        lambda: fast.prepare_batch(
            data, batch_properties, topic, born_v6=born_v6, store_v6=store_v6
        )
    )
    assert got == expected


TEXTS = st.one_of(
    st.text(),
    st.text(alphabet=st.characters(codec="ascii"), min_size=5, max_size=60),
    st.text(alphabet=st.characters(min_codepoint=0x80, max_codepoint=0xFFFF)),
    st.text(alphabet=st.characters(min_codepoint=0x10000)),
    st.sampled_from(["", "a", "polygenelubricants", "\ud800", "x\udfffy", "\U0001f600"]),
)


@settings(max_examples=500, deadline=None)
@given(TEXTS)
def test_java_hashes_agree_with_the_pure_ones(text: str) -> None:
    assert fast is not None
    expected = outcome(lambda: javahash._pure_java_hash(text))
    assert outcome(lambda: fast.java_hash(text)) == expected
    expected = outcome(lambda: javahash._pure_index_key_hash(text))
    assert outcome(lambda: fast.index_key_hash(text)) == expected


def test_known_java_hashes() -> None:
    """Values Java gives (``"polygenelubricants".hashCode()`` is Integer.MIN_VALUE)."""
    assert fast is not None
    assert fast.java_hash("polygenelubricants") == -(2**31)
    assert fast.index_key_hash("polygenelubricants") == 0
    assert fast.java_hash("TagA") == 2598919
    assert fast.java_hash("\U0001f600") == 0xD83D * 31 + 0xDE00  # its two UTF-16 units


SELECTED = (
    "from rmq.common import javahash, message, recordwalk\n"
    "print(recordwalk.frame_at is recordwalk._pure_frame_at,"
    " recordwalk.iter_frames is recordwalk._pure_iter_frames,"
    " message.encode_record_into is message._pure_encode_record_into,"
    " message.encode_batch_into is message._pure_encode_batch_into,"
    " message.prepare_batch is message._pure_prepare_batch,"
    " message._decode is message._pure_decode,"
    " javahash.java_hash is javahash._pure_java_hash,"
    " javahash.index_key_hash is javahash._pure_index_key_hash)"
)


@pytest.mark.parametrize(("switch", "pure"), [("1", "True"), ("0", "False"), (None, "False")])
def test_the_switch_selects_the_pure_functions(switch: str | None, pure: str) -> None:
    env = dict(os.environ)
    env.pop(compiled.PURE_PYTHON_ENV, None)
    if switch is not None:
        env[compiled.PURE_PYTHON_ENV] = switch
    result = subprocess.run(
        [sys.executable, "-c", SELECTED], env=env, capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == [pure] * 8


def test_every_extension_source_is_listed() -> None:
    """setup.py compiles every rmq/**/*.pyx; compiled.EXTENSIONS names the same modules."""
    root = os.path.dirname(os.path.dirname(recordwalk.__file__))
    sources = set()
    for folder, _, names in os.walk(root):
        for name in names:
            if name.endswith(".pyx"):
                relative = os.path.relpath(os.path.join(folder, name[:-4]), os.path.dirname(root))
                sources.add(relative.replace(os.sep, "."))
    assert sources == set(compiled.EXTENSIONS)
    forced = compiled.pure_python_forced()
    state = f"pure ({compiled.PURE_PYTHON_ENV})" if forced else "compiled"
    assert compiled.status() == dict.fromkeys(compiled.EXTENSIONS, state)


def test_valid_input_never_reaches_the_pure_functions(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled functions do the work themselves (the agreement tests would pass as well
    if they handed everything to the pure ones)."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("handed to the pure function")

    for module, name in (
        (recordwalk, "_pure_frame_at"),
        (recordwalk, "_pure_iter_frames"),
        (message, "_pure_encode_record_into"),
        (message, "_pure_encode_batch_into"),
        (message, "_pure_prepare_batch"),
        (message, "_pure_decode"),
        (javahash, "_pure_java_hash"),
        (javahash, "_pure_index_key_hash"),
    ):
        monkeypatch.setattr(module, name, refuse)
    assert fast is not None
    buf = bytearray(4096)
    size = fast.encode_record_into(buf, 0, **FIXED)
    assert fast.frame_at(buf, 0, size)[5] == size
    record = fast.decode(buf, 0, size, True)
    assert (record.body, record.topic, record.properties) == (b"x" * 100, "T", {"a": "b"})
    assert [frame[:2] for frame in fast.iter_frames(buf, 0, len(buf))] == [(0, size)]
    body = encode_batch([(0, b"a", b"TAGS\x01x"), (1, b"", b"KEYS\x01k\x02UNIQ_KEY\x01u")])
    batch = fast.prepare_batch(body, b"WAIT\x01true", b"T", born_v6=False, store_v6=True)
    assert batch.keys == [None, "k"]
    fields = {key: FIXED[key] for key in ("queue_id", "queue_offset", "physical_offset")}
    fast.encode_batch_into(
        buf, size, batch, **fields, sys_flag=0, born_timestamp=1, born_host=HOSTS[0],
        store_timestamp=2, store_host=HOSTS[1], reconsume_times=0,
    )  # fmt: skip
    assert fast.java_hash("TagA") == 2598919
    assert fast.index_key_hash("T#k") == abs(fast.java_hash("T#k"))


@pytest.mark.parametrize("odd", [bytearray, str, list])
def test_a_batch_with_unexpected_parts_is_the_pure_ones_business(odd: Callable[..., Any]) -> None:
    """Parts a prepared batch never holds (a bytearray, text, a list as a trailer) give what
    the pure encoder gives, bytes written and error alike."""
    assert fast is not None
    body = encode_batch([(0, b"a" * 10, b"TAGS\x01x"), (1, b"bb", b"")])
    batch = prepare_batch(body, b"", b"T", born_v6=False, store_v6=False)
    trailer = batch.trailers[1]
    odd_part: Any = odd(trailer.decode("latin-1")) if odd is str else odd(trailer)
    batch = batch._replace(trailers=[batch.trailers[0], odd_part])
    fields: dict[str, Any] = {
        "queue_id": 1, "queue_offset": 0, "physical_offset": 0, "sys_flag": 0,
        "born_timestamp": 1, "born_host": HOSTS[0], "store_timestamp": 2,
        "store_host": HOSTS[0], "reconsume_times": 0,
    }  # fmt: skip
    pure_buf, fast_buf = bytearray(batch.total_size), bytearray(batch.total_size)
    expected = outcome(lambda: message._pure_encode_batch_into(pure_buf, 0, batch, **fields))
    assert outcome(lambda: fast.encode_batch_into(fast_buf, 0, batch, **fields)) == expected
    assert fast_buf == pure_buf
