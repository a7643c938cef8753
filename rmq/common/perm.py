"""Topic and broker permission bits (RocketMQ ``PermName``).

A perm is a small int: READ 4, WRITE 2, INHERIT 1 (PRIORITY 8 exists but 4.9 never uses it).
mqadmin shows it as three characters ``RWX`` with ``-`` for a missing bit, e.g. 6 -> ``RW-``.
``parse_perm`` accepts what people type: a number (``6``) or letters (``RW``, ``rw-``, ``RWX``).
"""

from __future__ import annotations

PERM_PRIORITY = 0x8
PERM_READ = 0x4
PERM_WRITE = 0x2
PERM_INHERIT = 0x1

DEFAULT_TOPIC_PERM = PERM_READ | PERM_WRITE

_LETTERS = {"R": PERM_READ, "W": PERM_WRITE, "X": PERM_INHERIT}


def is_readable(perm: int) -> bool:
    return perm & PERM_READ == PERM_READ


def is_writeable(perm: int) -> bool:
    return perm & PERM_WRITE == PERM_WRITE


def is_inherited(perm: int) -> bool:
    return perm & PERM_INHERIT == PERM_INHERIT


def perm_to_string(perm: int) -> str:
    """mqadmin's rendering: ``R``/``W``/``X`` or ``-`` in that order."""
    return (
        ("R" if is_readable(perm) else "-")
        + ("W" if is_writeable(perm) else "-")
        + ("X" if is_inherited(perm) else "-")
    )


def parse_perm(text: str) -> int:
    """Parse ``6``, ``RW``, ``rw-`` or ``RWX`` into perm bits; raises ValueError otherwise."""
    value = text.strip().upper()
    if value.isdigit():
        return int(value)
    if not value or any(char not in _LETTERS and char != "-" for char in value):
        raise ValueError(f"invalid perm {text!r}: use a number or the letters R, W, X")
    perm = 0
    for char in value:
        perm |= _LETTERS.get(char, 0)
    return perm
