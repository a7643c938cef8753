"""What the fuzz suites share: their budgets and the mutation strategy.

Every fuzz test is parametrised over two budgets: ``short`` runs in ``make test`` (a few
seconds per target) and ``stress`` runs only under ``make stress`` (``RMQ_STRESS=1``,
marker ``stress``), where the decoder targets together run 10^6 cases.

:func:`mutated` turns seed inputs (real frames, records, expressions...) into mutants: a few
bit flips, byte overwrites, interesting 32-bit integers written over any position (lengths
are where most decoders go wrong), truncations, insertions, deletions and splices of two
seeds, so the cases get past a decoder's first checks instead of dying at its framing.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmq.remoting.codes import RequestCode, SerializeType
from rmq.remoting.frame import decode_frame, encode_frame

T = TypeVar("T")

STRESS = os.environ.get("RMQ_STRESS") == "1"

DECODER_TARGETS = 8
STRESS_DECODER_CASES = 1_000_000 // DECODER_TARGETS
"""Cases per decoder target under ``make stress``: the eight targets together run 10^6."""

STRESS_MARKS = [
    pytest.mark.stress,
    pytest.mark.timeout(3600),
    pytest.mark.skipif(not STRESS, reason="set RMQ_STRESS=1 (make stress)"),
]
"""The marks of a test (or parameter) that runs only under ``make stress``."""


def budgets(short: int, stress: int) -> list[Any]:
    """The two ``cases`` parameters of a fuzz test: ``short`` always, ``stress`` only under
    ``make stress``."""
    return [
        pytest.param(short, id="short"),
        pytest.param(stress, id="stress", marks=STRESS_MARKS),
    ]


def fuzz(strategy: st.SearchStrategy[T], check: Callable[[T], None], cases: int) -> None:
    """Run ``check`` on ``cases`` examples of ``strategy`` (no example database, no deadline:
    the machine is shared and a slow example is not a failure)."""

    @settings(
        max_examples=cases,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def run(value: T) -> None:
        check(value)

    run()


_INTERESTING = tuple(
    struct.pack(">I", value & 0xFFFFFFFF)
    for value in (0, 1, -1, 2, 7, 8, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 2**31 - 1, 2**31)
)
"""Big-endian 32-bit values around the edges of the sizes and lengths decoders read."""


def _flip(data: bytearray, where: float, bit: int) -> None:
    if data:
        data[int(where * len(data)) % len(data)] ^= 1 << bit


def _overwrite(data: bytearray, where: float, value: bytes) -> None:
    if data:
        position = int(where * len(data)) % len(data)
        data[position : position + len(value)] = value


def _truncate(data: bytearray, where: float) -> None:
    del data[int(where * len(data)) :]


def _insert(data: bytearray, where: float, value: bytes) -> None:
    position = int(where * (len(data) + 1))
    data[position:position] = value


def _delete(data: bytearray, where: float, length: int) -> None:
    position = int(where * len(data))
    del data[position : position + length]


_fraction = st.floats(0, 1, exclude_max=True)
_mutations = st.one_of(
    st.tuples(st.just(_flip), _fraction, st.integers(0, 7)),
    st.tuples(st.just(_overwrite), _fraction, st.binary(min_size=1, max_size=4)),
    st.tuples(st.just(_overwrite), _fraction, st.sampled_from(_INTERESTING)),
    st.tuples(st.just(_truncate), _fraction),
    st.tuples(st.just(_insert), _fraction, st.binary(min_size=1, max_size=16)),
    st.tuples(st.just(_delete), _fraction, st.integers(1, 16)),
)


def _apply(seed: bytes, steps: Sequence[tuple[Any, ...]], splice: bytes | None) -> bytes:
    data = bytearray(seed)
    for operation, *arguments in steps:
        operation(data, *arguments)
    if splice is not None:
        data += splice[len(splice) // 2 :]
    return bytes(data)


def mutated(seeds: Sequence[bytes], *, max_steps: int = 4) -> st.SearchStrategy[bytes]:
    """Seeds with 0..``max_steps`` mutations each, now and then spliced with another seed."""
    assert seeds, "mutation needs seeds"
    return st.builds(
        _apply,
        st.sampled_from(seeds),
        st.lists(_mutations, max_size=max_steps),
        st.none() | st.sampled_from(seeds),
    )


def _with_length(data: bytes) -> bytes:
    """`data` with its first four bytes rewritten as the length of the rest (a frame prefix)."""
    return struct.pack(">i", max(len(data) - 4, 0)) + data[4:]


_field_values = st.one_of(
    st.integers(-(2**63), 2**63).map(str),
    st.sampled_from(["", "-1", "0", "true", "2147483648", "9223372036854775808", "%", "*"]),
    st.text(max_size=12),
)


def _command_variant(
    seed: bytes, code: int | None, fields: dict[str, str | None], flag: int | None, body: bytes
) -> bytes:
    command = decode_frame(memoryview(seed)[4:])
    if code is not None:
        command.code = code
    if flag is not None:
        command.flag = flag
    ext_fields = dict(command.ext_fields or {})
    for key, value in fields.items():
        if value is None:
            ext_fields.pop(key, None)
        else:
            ext_fields[key] = value
    command.ext_fields = ext_fields
    command.body = body or command.body
    command.serialize_type = SerializeType(command.serialize_type ^ (len(fields) & 1))
    return encode_frame(command)


@st.composite
def _commands(draw: st.DrawFn, seeds: Sequence[bytes]) -> bytes:
    seed = draw(st.sampled_from(seeds))
    keys = list((decode_frame(memoryview(seed)[4:]).ext_fields or {}).keys())
    key = st.sampled_from(keys) | st.text(max_size=6) if keys else st.text(max_size=6)
    return _command_variant(
        seed,
        draw(st.none() | st.sampled_from(list(RequestCode)) | st.integers(-(2**15), 2**15 - 1)),
        draw(st.dictionaries(key, st.none() | _field_values, max_size=4)),
        draw(st.none() | st.sampled_from([0, 1, 2, 3])),
        draw(st.binary(max_size=64)),
    )


def mutated_frames(seeds: Sequence[bytes]) -> st.SearchStrategy[bytes]:
    """Frame seeds (length prefix included) mutated three ways: as bytes; as bytes with the
    length prefix made right again, so the mutants reach the header decoder; and as
    commands, decoded and re-encoded with another code, flag, body or serialize type and
    with extFields added, dropped or given odd values, so they reach the request handlers."""
    commands = _commands(seeds)
    return st.one_of(
        commands, commands, mutated(seeds, max_steps=2).map(_with_length), mutated(seeds)
    )
