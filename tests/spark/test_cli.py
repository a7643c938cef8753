"""`rmq spark-export` and the spark-submit entry of the same job, on a store built from the
spec: the files written (CSV and JSON, read back with Python's own csv and json modules)
hold every record the offline reader gives; bad command lines fail before Spark starts;
without pyspark the command says how to install it; a failed write leaves nothing of its own.
"""

from __future__ import annotations

import base64
import csv
import datetime
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pyspark
import pytest
from pyspark.sql import SparkSession

from rmq.cli.main import run
from rmq.spark.export import _Output
from tests.spark.records import Record, build_spec_store, stored_records

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
INTS = (
    "queueId",
    "queueOffset",
    "commitLogOffset",
    "bodyCrc",
    "flag",
    "sysFlag",
    "reconsumeTimes",
    "preparedTransactionOffset",
)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_spec_store(tmp_path_factory.mktemp("cli") / "store", count=30).root


def from_text(fields: dict[str, Any], topic: str | None = None) -> Record:
    """A message record from a row of the CSV or JSON files (CSV: everything is text, null
    is empty; JSON: null fields are left out; both: body base64, timestamps ISO 8601)."""

    def value(name: str) -> Any:
        text = fields.get(name)
        return None if text in (None, "") else text

    def structured(name: str) -> Any:
        text = fields[name]
        return json.loads(text) if isinstance(text, str) else text

    def millis(name: str) -> int:
        return round(datetime.datetime.fromisoformat(fields[name]).timestamp() * 1000)

    body = base64.b64decode(fields["body"])
    try:
        body_fields: Record = {"body": body.decode("utf-8")}
    except UnicodeDecodeError:
        body_fields = {"body": fields["body"], "bodyEncoding": "base64"}
    return {
        "topic": topic or fields["topic"],
        "brokerName": value("brokerName"),
        "msgId": fields["msgId"],
        "offsetMsgId": fields["offsetMsgId"],
        "tags": value("tags"),
        "keys": structured("keys"),
        "properties": structured("properties"),
        **body_fields,
        "bornTimestamp": millis("bornTimestamp"),
        "storeTimestamp": millis("storeTimestamp"),
        "bornHost": fields["bornHost"],
        "storeHost": fields["storeHost"],
        **{name: int(fields[name]) for name in INTS},
    }


def by_offset(records: list[Record]) -> list[Record]:
    return sorted(records, key=lambda record: record["commitLogOffset"])


def test_csv_export_partitioned_by_topic_and_date(
    spark: object, store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "csv"
    args = ["spark-export", str(store), "--out", str(out), "--format", "csv"]
    assert run([*args, "--partition-by", "topic,date", "--master", "local[2]"]) == 0
    expected = stored_records(store)
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["TOPIC", "ROWS"]
    rows = {line.split()[0]: int(line.split()[1]) for line in table[1:-1]}
    assert rows == {t: sum(r["topic"] == t for r in expected) for t in ("Rare", "TopicTest")}
    assert table[-1].startswith(f"{len(expected)} rows in ") and str(out) in table[-1]

    exported = []
    for path in out.glob("topic=*/date=*/*.csv"):
        topic = path.parent.parent.name.removeprefix("topic=")
        assert path.parent.name == "date=2023-11-14"
        with path.open(newline="", encoding="utf-8") as file:
            exported += [from_text(fields, topic) for fields in csv.DictReader(file)]
    assert by_offset(exported) == expected

    assert run(args) == 1
    assert "already exists; pass --overwrite" in capsys.readouterr().err


# spark-submit starts a JVM of its own for the job (the longest of the module):
# under make stress; test_session.py's spark-submit test stays in make test.
@pytest.mark.stress
def test_the_job_runs_under_spark_submit(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "json"
    spark_submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    script = ROOT / "rmq" / "spark" / "export.py"
    args = [str(store), "--out", str(out), "--format", "json", "--topic", "Rare"]
    result = subprocess.run(
        [str(spark_submit), "--master", "local[1]", str(script), *args],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    expected = stored_records(store, lambda r: r["topic"] == "Rare")
    summary = json.loads(result.stdout.splitlines()[-1])
    assert summary["rows_by_topic"] == {"Rare": len(expected)} and summary["rows"] == len(expected)
    # spark-submit passes the driver's stderr on to its stdout.
    assert f"rmq: writing json to {out}" in result.stdout
    lines = [line for path in out.glob("part-*.json") for line in path.read_text().splitlines()]
    assert by_offset([from_text(json.loads(line)) for line in lines]) == expected


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--out", "x"], "an online export needs a topic"),
        (["STORE", "-n", "127.0.0.1:9876", "--out", "x"], "not both"),
        (["STORE", "--out", "x", "--starting-offsets", "earliest"], "for online exports only"),
        (["--out", "x", "-t", "T", "--ending-offsets", "earliest"], "cannot be earliest"),
        (["--out", "x", "-t", "T", "--starting-offsets", "{"], "startingOffsets must be"),
        (["STORE", "--out", "x", "--since", "yesterday"], "is not a time: use epoch milliseconds"),
        (["STORE", "--out", "x", "--partition-by", "body"], "cannot partition by body"),
        (["STORE", "--out", "x", "--format", "avro"], "'avro' is not one of"),
        (["STORE", "--out", "x", "--conf", "spark.x"], "a Spark setting is KEY=VALUE"),
        (["--out", "x", "-t", "T", "--follow"], "needs a checkpoint directory"),
        (["STORE", "--out", "x", "--follow", "--checkpoint", "c"], "reads a running cluster"),
        (["--out", "x", "-t", "T", "--checkpoint", "c"], "for --follow only"),
        (["--out", "x", "-t", "T", "--follow", "--checkpoint", "c", "--until", "0"], "no end"),
    ],
)
def test_bad_command_lines_fail_before_spark_starts(
    store: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [str(store) if arg == "STORE" else arg for arg in args]
    assert run(["spark-export", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


def test_without_pyspark_the_command_says_how_to_install_it(store: Path, tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        sys.modules["pyspark"] = None  # what an environment without pyspark gives
        from rmq.cli.main import run
        sys.exit(run(["spark-export", {str(store)!r}, "--out", {str(tmp_path / "out")!r}]))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1
    root = Path(__file__).resolve().parents[2]  # the source tree of the editable install
    assert result.stderr == (
        "rmq: error: Spark export needs pyspark, which is not installed; install rmq's spark "
        f"extra: {sys.executable} -m pip install -e '{root}[spark]'\n"
    )
    assert not (tmp_path / "out").exists()


def test_a_failed_write_leaves_nothing_of_its_own(spark: SparkSession, tmp_path: Path) -> None:
    """What run_export removes after a failed write (a failure on a cluster is in
    test_cluster.py): a directory the write created, else only its _temporary."""
    for created in (True, False):
        out = tmp_path / f"out-{created}"
        (out / "_temporary" / "0" / "task_1").mkdir(parents=True)
        (out / "_temporary" / "0" / "task_1" / "part-0.json").write_text("{}\n")
        (out / "kept.json").write_text("{}\n")
        _Output(spark, str(out)).discard_failed_write(created=created)
        left = sorted(p.name for p in out.iterdir()) if out.exists() else None
        assert left == (None if created else ["kept.json"])
