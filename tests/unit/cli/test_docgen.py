"""Generated completions and man pages: committed copies are current, --check catches drift."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from rmq.cli import docgen
from rmq.cli.main import COMMANDS


def test_committed_completions_and_man_pages_are_current() -> None:
    stale = docgen.stale_files(docgen.generate(), docgen.SOURCE_ROOT)
    assert stale == [], f"stale generated files {stale}: run python -m rmq.cli.docgen"


def docgen_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rmq.cli.docgen", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_check_reports_changed_missing_and_leftover_files(tmp_path: Path) -> None:
    assert docgen_cli("--out", str(tmp_path)).returncode == 0
    assert docgen_cli("--check", "--out", str(tmp_path)).returncode == 0

    (tmp_path / "man" / "rmq-profile-list.1").write_text("old\n")
    (tmp_path / "completions" / "rmq.fish").unlink()
    (tmp_path / "man" / "rmq-removed.1").write_text("gone\n")
    result = docgen_cli("--check", "--out", str(tmp_path))
    assert result.returncode == 1
    assert result.stderr == (
        "stale generated files: completions/rmq.fish, man/rmq-profile-list.1, "
        "man/rmq-removed.1; run python -m rmq.cli.docgen\n"
    )

    assert docgen_cli("--out", str(tmp_path)).returncode == 0
    assert not (tmp_path / "man" / "rmq-removed.1").exists()
    assert docgen_cli("--check", "--out", str(tmp_path)).returncode == 0


def test_one_man_page_per_command_and_subcommand() -> None:
    files = docgen.generate()
    pages = sorted(name for name in files if name.startswith("man/"))
    assert "man/rmq.1" in pages
    for name in COMMANDS:
        assert f"man/rmq-{name}.1" in pages
    assert {"man/rmq-profile-list.1", "man/rmq-profile-delete.1"} <= set(pages)


def test_man_page_sections() -> None:
    page = docgen.generate()["man/rmq-profile-delete.1"]
    assert page.startswith('.TH "RMQ\\-PROFILE\\-DELETE" "1" "" "rmq ')
    lines = page.splitlines()
    synopsis = lines.index(".SH SYNOPSIS")
    assert lines[synopsis + 1 : synopsis + 3] == [".B rmq profile delete", "[OPTIONS] NAME"]
    assert "\\fB\\-y, \\-\\-yes\\fR" in lines
    assert lines[-2:] == [".SH SEE ALSO", ".BR rmq\\-profile (1)"]
    root = docgen.generate()["man/rmq.1"]
    for section in (".SH ENVIRONMENT", ".SH FILES", ".SH EXIT STATUS"):
        assert section in root
    assert "\\fBNAMESRV_ADDR\\fR" in root
    assert "\\fB130\\fR" in root
