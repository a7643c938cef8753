"""The recovery report files of a store (``<store>/recovery/*.json``), read back offline.

The broker writes one when its recovery skipped damaged commitlog bytes, cut or removed
anything, or grew a short file back (:mod:`rmq.store.recoveryreport` writes them).
:func:`load_reports` reads them, oldest first; :func:`span_bytes` reads the first bytes of a
skipped span from the commitlog file, where the damaged bytes were left.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rmq.store.errors import StoreError
from rmq.store.recoveryreport import REPORT_DIR


def load_reports(root: Path) -> list[dict[str, Any]]:
    """Every report under ``root``, oldest first, each with its file name as ``report``."""
    directory = root / REPORT_DIR
    if not directory.is_dir():
        return []
    reports: list[dict[str, Any]] = []
    for path in sorted(directory.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise StoreError(f"cannot read the recovery report {path}: {exc}") from exc
        if not isinstance(data, dict):
            raise StoreError(f"{path} is not a recovery report (not a JSON object)")
        reports.append({"report": path.name, **data})
    return reports


def span_bytes(commitlog_dir: Path, span: dict[str, Any], limit: int) -> bytes:
    """Up to ``limit`` bytes of a skipped span, read from its commitlog file (b"" when the
    file is gone, e.g. deleted by expiry since)."""
    path = commitlog_dir / str(span["file"])
    try:
        with path.open("rb") as file:
            file.seek(int(span["position"]))
            return file.read(min(int(span["length"]), limit))
    except FileNotFoundError:
        return b""
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from exc
