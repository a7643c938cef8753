"""`rmq spark-export`, `spark-submit export.py` and a PySpark job of one's own on a Spark
standalone cluster (tests/spark/cluster.py: a Master and a Worker on this machine, whose
executors run a ``python3`` without pyarrow and rmq and do not see the ``hidden``
directory):

* the export runs on the master it is given: ``--master``, ``$RMQ_SPARK_MASTER``,
  ``spark-submit --master`` (each shows on the cluster, not in a local run: the cluster
  lists the application, or the job fails the way only the cluster's executors fail);
* ``--conf`` passes Spark settings: ``spark.pyspark.python`` gives the executors rmq;
* executors without pyarrow and a store only the driver can read end in one line that says
  what the executors lack and how to give it, and leave no output directory behind;
* a followed export on the cluster, its driver killed with SIGKILL mid-stream and restarted
  from the checkpoint, writes every acknowledged message exactly once
  (:func:`tests.spark.streams.follow_through_kills`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from rmq.spark.failures import PYTHON_HINT, STORE_HINT
from tests.cli_forkserver import run as cli_run
from tests.procs import RmqProcess, RmqProcesses
from tests.spark.cluster import SPARK_HOME, SPARK_SUBMIT, StandaloneCluster, driver_env
from tests.spark.records import build_spec_store, stored_records
from tests.spark.streams import follow_through_kills

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
RUN_SECONDS = 400

# Each test runs a driver JVM and executors on the cluster: half a minute to a minute of two
# cores.  make test runs the first (an export on the cluster); the failures on the cluster
# run under make stress.
ON_THE_CLUSTER_UNDER_STRESS = pytest.mark.stress


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    running = StandaloneCluster(tmp_path_factory.mktemp("spark-cluster"))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_spec_store(tmp_path_factory.mktemp("cluster-store") / "store", count=12).root


@pytest.fixture
def driver_only_store(cluster: StandaloneCluster, store: Path) -> Iterator[Path]:
    """A copy of the store under the directory the cluster's executors do not see."""
    copy = cluster.hidden / "store"
    shutil.copytree(store, copy)
    yield copy
    shutil.rmtree(copy)


def spark_export(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``rmq spark-export args`` run from ``cwd`` (not the source tree, whose rmq a Python
    started there would import)."""
    return cli_run(
        [sys.executable, "-m", "rmq", "spark-export", *args],
        capture_output=True,
        text=True,
        timeout=RUN_SECONDS,
        env=driver_env(**env),
        cwd=cwd,
        check=False,
    )


def store_failure(host_path: Path) -> str:
    """The line of a store the executors cannot read (the first file a task opens)."""
    return f"cannot read {host_path}/commitlog/"


def test_an_export_runs_on_the_master_given_with_the_python_given(
    cluster: StandaloneCluster, store: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    done = spark_export(
        tmp_path,
        str(store),
        *("--out", str(out), "--format", "json", "-o", "json"),
        *("--master", cluster.master_url, "--conf", f"spark.pyspark.python={sys.executable}"),
        *("--conf", "spark.app.name=rmq-cluster-export"),
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == f"rmq: starting Spark ({cluster.master_url})"
    # In a pipe, stderr holds only rmq's phases (test_quiet.py checks a local run the same
    # way under make stress).
    assert all(line.startswith("rmq: ") for line in lines), done.stderr
    assert f"rmq: writing json to {out}" in lines
    summary = json.loads(done.stdout)
    assert summary["rows"] == len(stored_records(store)) > 0
    assert "rmq-cluster-export" in cluster.app_names()


@ON_THE_CLUSTER_UNDER_STRESS
def test_executors_without_pyarrow_end_in_one_line(
    cluster: StandaloneCluster, store: Path, tmp_path: Path
) -> None:
    """The master from $RMQ_SPARK_MASTER; no Python named, so the executors run the
    cluster's python3, which lacks pyarrow (a local run would have succeeded)."""
    out = tmp_path / "out"
    done = spark_export(
        tmp_path,
        str(store),
        "--out",
        str(out),
        "--format",
        "json",
        RMQ_SPARK_MASTER=cluster.master_url,
    )
    assert done.returncode == 1, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == f"rmq: starting Spark ({cluster.master_url})"
    assert f"rmq: writing json to {out}" in lines  # failed in the executors, not in planning
    assert lines[-1] == (
        "rmq: error: Spark export failed: the Python of Spark's workers (python3) has no "
        f"module pyarrow; {PYTHON_HINT}"
    )
    assert all(line.startswith("rmq: ") for line in lines), done.stderr
    assert not out.exists(), list(out.rglob("*"))


@pytest.mark.stress  # backs a statement of docs/spark.md about Spark, not one of rmq's own
def test_the_driver_plans_with_the_workers_python(
    cluster: StandaloneCluster, store: Path, tmp_path: Path
) -> None:
    """Spark plans the read in a Python worker on the driver's machine, running the same
    ``python3``: on a driver whose python3 lacks rmq and pyarrow the export fails there."""
    done = spark_export(
        tmp_path,
        str(store),
        *("--out", str(tmp_path / "out"), "--master", cluster.master_url),
        PATH=f"{cluster.bare / 'bin'}{os.pathsep}{os.environ['PATH']}",
        SPARK_HOME=str(SPARK_HOME),  # with pyspark's zip, as the bare python3 needs
    )
    assert done.returncode == 1, done.stderr
    lines = done.stderr.splitlines()
    assert not any(line.startswith("rmq: writing") for line in lines), done.stderr
    assert re.fullmatch(
        r"rmq: error: Spark export failed: the Python of Spark's workers \(python3\) has no "
        rf"module (pyarrow|rmq); {re.escape(PYTHON_HINT)}",
        lines[-1],
    ), done.stderr


@ON_THE_CLUSTER_UNDER_STRESS
def test_a_store_only_the_driver_reads_ends_in_one_line_under_spark_submit(
    cluster: StandaloneCluster, driver_only_store: Path, tmp_path: Path
) -> None:
    """spark-submit's --master is the one the job runs on: a local run would read the store."""
    out = tmp_path / "out"
    done = cli_run(
        [
            str(SPARK_SUBMIT),
            *("--master", cluster.master_url),
            *("--conf", f"spark.pyspark.python={sys.executable}"),
            str(ROOT / "rmq" / "spark" / "export.py"),
            *(str(driver_only_store), "--out", str(out), "--format", "json"),
        ],
        capture_output=True,
        text=True,
        timeout=RUN_SECONDS,
        env=driver_env(),
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    # spark-submit passes the driver's stderr on to its stdout.
    errors = [line for line in done.stdout.splitlines() if line.startswith("rmq: error: ")]
    assert len(errors) == 1, done.stdout[-3000:]
    assert errors[0].startswith("rmq: error: the executor on ")
    assert store_failure(driver_only_store) in errors[0]
    assert errors[0].endswith(f": No such file or directory; {STORE_HINT}")
    assert f"rmq: starting Spark ({cluster.master_url})" in done.stdout
    assert not out.exists(), list(out.rglob("*"))


@ON_THE_CLUSTER_UNDER_STRESS
def test_a_pyspark_job_gets_the_line_as_its_exception(
    cluster: StandaloneCluster, driver_only_store: Path, tmp_path: Path
) -> None:
    script = textwrap.dedent(
        f"""
        import json, sys
        from rmq.spark.failures import SparkJobError, one_line_errors
        from rmq.spark.session import build_session

        spark = build_session(
            {cluster.master_url!r}, conf={{"spark.pyspark.python": sys.executable}}
        )
        try:
            with one_line_errors():
                spark.read.format("rocketmq").load({str(driver_only_store)!r}).count()
        except SparkJobError as exc:
            print(json.dumps(str(exc)))
        spark.stop()
        """
    )
    done = cli_run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=RUN_SECONDS,
        env=driver_env(),
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    message = json.loads(done.stdout.splitlines()[-1])
    assert message.startswith("the executor on ")
    assert store_failure(driver_only_store) in message
    assert message.endswith(f": No such file or directory; {STORE_HINT}")


@pytest.fixture(scope="module")
def broker(module_processes: RmqProcesses, namesrv: RmqProcess) -> Iterator[RmqProcess]:
    process = module_processes.start_broker("cluster-broker", namesrv=namesrv)
    yield process
    process.stop_cleanly()


# Two driver JVMs on the cluster take minutes of two cores: under make stress (the local kill
# runs in make test).
@pytest.mark.stress
@pytest.mark.timeout(900)
def test_a_followed_export_on_the_cluster_killed_mid_stream_writes_every_message_once(
    cluster: StandaloneCluster,
    broker: RmqProcess,
    namesrv: RmqProcess,
    spark: SparkSession,
    tmp_path: Path,
) -> None:
    """The driver runs here (client mode), the micro-batches' tasks in the cluster's
    executors; the output is read back in this process's local session."""
    follow_through_kills(
        spark,
        namesrv.addr,
        "ClusterFollow",
        tmp_path,
        kills=1,
        extra=(
            *("--master", cluster.master_url, "--conf", f"spark.pyspark.python={sys.executable}"),
            *("--conf", "spark.app.name=rmq-cluster-follow"),
        ),
        start_seconds=300,
    )
    assert "rmq-cluster-follow" in cluster.app_names()
