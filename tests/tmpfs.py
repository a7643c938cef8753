"""A small tmpfs for the tests of full disks, a filler file to fill it, and empty files to use
up its inodes.

Mounting needs root (CI runs as root): :func:`mounted_tmpfs` skips the test, with the reason,
when it is not root or the mount fails.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def mounted_tmpfs(mount: Path, size_mib: int, inodes: int | None = None) -> Iterator[Path]:
    """Mount a ``size_mib`` MiB tmpfs (of at most ``inodes`` files and directories) at
    ``mount`` (created) for the block; lazily unmounted after it (stop the processes using it
    first)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount.mkdir(parents=True, exist_ok=True)
    options = f"size={size_mib}m" + (f",nr_inodes={inodes}" if inodes is not None else "")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path, leave: int) -> Path:
    """A filler file that leaves ``leave`` bytes free on ``disk``."""
    stat = os.statvfs(disk)
    filler = disk / "filler"
    with filler.open("wb") as out:
        os.posix_fallocate(out.fileno(), 0, stat.f_bavail * stat.f_frsize - leave)
    return filler


def use_up_inodes(disk: Path) -> list[Path]:
    """Empty files under ``disk/inodes`` until no file can be created (ENOSPC): every later
    creation of a file on ``disk`` fails until they are deleted.  Returns them."""
    folder = disk / "inodes"
    folder.mkdir()
    made: list[Path] = []
    while True:
        path = folder / str(len(made))
        try:
            path.touch()
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
            return made
        made.append(path)
