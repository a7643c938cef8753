"""A small tmpfs for the tests of full disks, and a filler file to fill it.

Mounting needs root (CI runs as root): :func:`mounted_tmpfs` skips the test, with the reason,
when it is not root or the mount fails.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def mounted_tmpfs(mount: Path, size_mib: int) -> Iterator[Path]:
    """Mount a ``size_mib`` MiB tmpfs at ``mount`` (created) for the block; lazily unmounted
    after it (stop the processes using it first)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_mib}m", "tmpfs", str(mount)],
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
