"""bench/versus_report.py: the rmq-versus-Apache table generated from a recorded result."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "bench" / "versus_report.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("versus_report", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RESULT: dict[str, Any] = {
    "date": "2026-11-26 05:30 UTC",
    "mode": "quick",
    "machine": {
        "cpu": "AMD EPYC",
        "cores": 2,
        "memory_gib": 24,
        "python": "3.11.7",
        "java": 'openjdk version "17.0.15"',
    },
    "settings": {"brokerRole": "ASYNC_MASTER", "commitlog files": "1 GiB"},
    "figures": [
        {
            "figure": "sync send, 16 in flight",
            "tool": "rmq bench --in-flight 16",
            "unit": "msgs/s",
            "better": "higher",
            "apache": 20000.0,
            "rmq": 15000.0,
        },
        {
            "figure": "p99 latency at 10,000 msg/s",
            "tool": "rmq bench --rate 10000",
            "unit": "ms",
            "better": "lower",
            "apache": 4.0,
            "rmq": 2.0,
        },
        {
            "figure": "push consume",
            "tool": "Apache Consumer",
            "unit": "msgs/s",
            "better": "higher",
            "apache": None,
            "rmq": 5000.0,
            "note": "no TPS line printed",
        },
    ],
}


def test_rows_give_both_figures_and_rmq_over_apache() -> None:
    report = load()
    lines = report.render(RESULT).splitlines()
    assert lines[0] == (
        "Run of 2026-11-26 05:30 UTC (`python bench/versus_apache.py --quick`), AMD EPYC, "
        '2 cores, 24 GiB RAM, Python 3.11.7, openjdk version "17.0.15".'
    )
    assert "Settings on both brokers: brokerRole ASYNC_MASTER, commitlog files 1 GiB." in lines
    rows = [line for line in lines if line.startswith("| ") and "---" not in line]
    assert rows[1:] == [
        "| sync send, 16 in flight | rmq bench --in-flight 16 | msgs/s | 20,000 | 15,000 "
        "| 0.75 | higher |",
        "| p99 latency at 10,000 msg/s | rmq bench --rate 10000 | ms | 4.00 | 2.00 "
        "| **0.50** | lower |",
        "| push consume | Apache Consumer | msgs/s | – | 5,000 | – | higher |",
    ]
    assert lines[-1] == "* push consume (Apache Consumer): no TPS line printed"


def test_failed_steps_are_listed_on_one_line_each() -> None:
    report = load()
    result = {**RESULT, "failures": ["rmq bench produce against rmq:\n  error: no route"]}
    lines = report.render(result).splitlines()
    assert lines[-3:] == [
        "Steps that failed (their figures are missing):",
        "",
        "* rmq bench produce against rmq: error: no route",
    ]


def test_the_block_between_the_markers_is_replaced_and_the_rest_kept(tmp_path: Path) -> None:
    report = load()
    doc = tmp_path / "benchmarks.md"
    doc.write_text(
        f"# Benchmarks\n\nhand-written\n\n{report.BEGIN}\nold table\n{report.END}\n\ntail\n"
    )
    result = tmp_path / "result.json"
    result.write_text(json.dumps(RESULT))
    report.write_doc(json.loads(result.read_text()), doc)
    text = doc.read_text()
    assert "old table" not in text
    assert text.startswith("# Benchmarks\n\nhand-written\n\n")
    assert text.endswith(f"{report.END}\n\ntail\n")
    assert text.count("| sync send, 16 in flight |") == 1
    report.write_doc(RESULT, doc)  # regenerating gives the same page
    assert doc.read_text() == text


def test_markers_are_added_to_a_page_without_them(tmp_path: Path) -> None:
    report = load()
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n")
    report.write_doc(RESULT, doc)
    text = doc.read_text()
    assert text.index(report.BEGIN) < text.index("| push consume |") < text.index(report.END)


def test_the_script_rejects_a_missing_argument() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert "usage: python bench/versus_report.py RESULT.json" in done.stderr
