"""Permission bits and their mqadmin rendering."""

from __future__ import annotations

import pytest

from rmq.common.perm import (
    PERM_INHERIT,
    PERM_READ,
    PERM_WRITE,
    is_inherited,
    is_readable,
    is_writeable,
    parse_perm,
    perm_to_string,
)


@pytest.mark.parametrize(
    ("perm", "text"), [(6, "RW-"), (7, "RWX"), (2, "-W-"), (4, "R--"), (1, "--X"), (0, "---")]
)
def test_perm_to_string(perm: int, text: str) -> None:
    assert perm_to_string(perm) == text
    assert parse_perm(text) == perm


def test_priority_bit_is_not_shown() -> None:
    assert perm_to_string(8 | 6) == "RW-"


def test_bit_tests() -> None:
    assert (PERM_READ, PERM_WRITE, PERM_INHERIT) == (4, 2, 1)
    assert is_readable(6) and is_writeable(6) and not is_inherited(6)
    assert not is_readable(2) and is_inherited(7)


@pytest.mark.parametrize(("text", "perm"), [("6", 6), (" rw ", 6), ("R", 4), ("wx", 3)])
def test_parse_perm(text: str, perm: int) -> None:
    assert parse_perm(text) == perm


@pytest.mark.parametrize("text", ["", "RWZ", "read"])
def test_parse_perm_rejects_garbage(text: str) -> None:
    with pytest.raises(ValueError, match="use a number or the letters R, W, X"):
        parse_perm(text)
