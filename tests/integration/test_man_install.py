"""`man rmq` after installing: the Makefile's install step copies man/*.1 into the virtualenv's
share/man/man1 (an editable install installs no data files), a wheel carries them there
(pyproject's data-files), and man finds them from the virtualenv's bin on PATH."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from rmq.cli.docgen import SOURCE_ROOT

PAGES = sorted(path.name for path in (SOURCE_ROOT / "man").glob("*.1"))


def fake_venv(root: Path) -> Path:
    """A virtualenv directory as the Makefile sees one (its bin/python exists)."""
    bin_dir = root / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").symlink_to(sys.executable)
    return root / "venv"


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_the_makefile_installs_the_pages_where_man_finds_them(tmp_path: Path) -> None:
    venv = fake_venv(tmp_path)
    stamp = venv / "share" / "man" / "man1" / ".rmq-pages"
    make = ["make", "-C", str(SOURCE_ROOT), f"VENV={venv}", str(stamp)]
    subprocess.run(make, check=True, capture_output=True, timeout=60)
    installed = sorted(path.name for path in stamp.parent.glob("*.1"))
    assert installed == PAGES and "rmq.1" in installed
    # stamped: a second run copies nothing
    again = subprocess.run([*make, "--question"], capture_output=True, timeout=60)
    assert again.returncode == 0, again.stdout

    if shutil.which("man") is None:
        pytest.skip("needs man to check the lookup")
    env = {**os.environ, "MANPATH": "", "PATH": f"{venv / 'bin'}:{os.environ['PATH']}"}
    for page in ("rmq", "rmq-consume", "rmq-topic-create"):
        found = subprocess.run(
            ["man", "-w", page], env=env, capture_output=True, text=True, timeout=60
        )
        assert found.stdout.strip() == str(stamp.parent / f"{page}.1"), found.stderr
    shown = subprocess.run(
        ["man", "rmq-consume"],
        env={**env, "MANPAGER": "cat", "PAGER": "cat", "MANWIDTH": "100"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "EXAMPLES" in shown.stdout and "rmq consume Orders --from @-1h -e" in shown.stdout


def test_a_wheel_carries_the_pages_to_share_man_man1(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(SOURCE_ROOT / name, source / name)
    shutil.copytree(SOURCE_ROOT / "man", source / "man")
    (source / "rmq").mkdir()
    shutil.copy(SOURCE_ROOT / "rmq" / "__init__.py", source / "rmq" / "__init__.py")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), "."],
        cwd=source,
        env={**os.environ, "RMQ_NO_COMPILE": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = tmp_path.glob("rmq-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    prefix = next(name for name in names if name.endswith("rmq.1")).rsplit("/", 1)[0]
    assert prefix.endswith(".data/data/share/man/man1")
    assert sorted(name.rsplit("/", 1)[1] for name in names if name.startswith(prefix)) == PAGES
