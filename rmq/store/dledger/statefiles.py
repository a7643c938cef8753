"""The two small text files beside a DLedger node's data: ``checkpoint`` and ``currterm``.

Both are ``key=value`` lines written the way DLedger 0.3.1.2 writes them (``IOUtils``): the new
text goes to ``<name>.tmp``, the old file's text (if any) is copied to ``<name>.bak``, the old
file is deleted and the temporary one renamed into place.  A reader that finds no file, or a
torn one, falls back to ``<name>.bak`` here (Apache would start from nothing: see
docs/spec-notes.md).  Lines come out in the order Java 9+'s ``Properties`` iterates them
(``committedIndex`` before ``endIndex``; ``voteLeader`` before ``currTerm``).

* ``checkpoint``: ``committedIndex`` and ``endIndex``; only ``committedIndex`` is read back.
* ``currterm``: ``currTerm`` (the node's term) and ``voteLeader`` (whom it voted for in that
  term, empty for nobody).
"""

from __future__ import annotations

import contextlib
import os
from typing import NamedTuple

from rmq.common import javaprops

CHECKPOINT_FILE = "checkpoint"
TERM_FILE = "currterm"


def _write(path: str, lines: list[tuple[str, str]]) -> None:
    text = "".join(f"{key}={value}\n" for key, value in lines)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    temporary = path + ".tmp"
    with open(temporary, "w", encoding="ascii") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    with contextlib.suppress(FileNotFoundError):
        with open(path, "rb") as old:
            previous = old.read()
        with open(path + ".bak", "wb") as bak:
            bak.write(previous)
    os.replace(temporary, path)


def _read(path: str, required: str) -> dict[str, str] | None:
    for candidate in (path, path + ".bak"):
        try:
            with open(candidate, encoding="latin-1") as src:
                props = javaprops.loads(src.read())
        except (OSError, ValueError):
            continue
        if props.get(required, "").strip():
            return props
    return None


def write_checkpoint(base_dir: str, end_index: int, committed_index: int) -> None:
    _write(
        os.path.join(base_dir, CHECKPOINT_FILE),
        [("committedIndex", str(committed_index)), ("endIndex", str(end_index))],
    )


def read_committed_index(base_dir: str) -> int | None:
    """``committedIndex`` from the checkpoint, or None when there is none."""
    props = _read(os.path.join(base_dir, CHECKPOINT_FILE), "committedIndex")
    if props is None:
        return None
    try:
        return int(props["committedIndex"].strip())
    except ValueError:
        return None


class TermState(NamedTuple):
    term: int
    vote_for: str | None


def write_term(base_dir: str, state: TermState) -> None:
    _write(
        os.path.join(base_dir, TERM_FILE),
        [("voteLeader", state.vote_for or ""), ("currTerm", str(state.term))],
    )


def read_term(base_dir: str) -> TermState:
    """The persisted term and vote (term 0, no vote, when there is no file)."""
    props = _read(os.path.join(base_dir, TERM_FILE), "currTerm")
    if props is None:
        return TermState(0, None)
    try:
        term = int(props["currTerm"].strip())
    except ValueError:
        term = 0
    return TermState(term, props.get("voteLeader") or None)
