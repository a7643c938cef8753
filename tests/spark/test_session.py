"""Which master a job runs on: the ``master`` argument (``--master``), then
``$RMQ_SPARK_MASTER``, then the master Spark itself was given (``spark-submit --master``,
``spark.master`` in a ``--conf`` or in spark-defaults.conf), then ``local[*]``; the Spark
settings of ``--conf``.

The levels Spark's own configuration decides are read from a JVM that Spark started with
it, so they run in processes of their own (this one's JVM runs the tests' session).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import urllib.parse
from pathlib import Path

import pytest

from rmq.spark.job import parse_settings
from rmq.spark.quiet import DRIVER_JAVA_OPTIONS, quiet_conf
from rmq.spark.session import DEFAULT_MASTER, MASTER_ENV, resolve_master
from tests.spark.cluster import SPARK_SUBMIT, driver_env

pytestmark = pytest.mark.spark

PRINT_MASTER = textwrap.dedent(
    """
    import json, sys
    from rmq.spark.session import resolve_master
    print(resolve_master(*json.loads(sys.argv[1])))
    """
)


def master_in_a_new_process(args: str = "[]", *, conf_dir: Path | None = None, **env: str) -> str:
    """``resolve_master(*args)`` in a process of its own, with ``env`` and, when given,
    spark-defaults.conf of ``conf_dir`` as Spark's configuration."""
    settings = {"SPARK_CONF_DIR": str(conf_dir)} if conf_dir else {}
    done = subprocess.run(
        [sys.executable, "-c", PRINT_MASTER, args],
        capture_output=True,
        text=True,
        timeout=300,
        env=driver_env(**settings, **env),
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()[-1]


@pytest.fixture
def conf_dir(tmp_path: Path) -> Path:
    """Spark's configuration directory, its spark-defaults.conf naming local[3]."""
    (tmp_path / "spark-defaults.conf").write_text("spark.master local[3]\n")
    return tmp_path


def test_the_argument_comes_before_the_environment_and_the_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(MASTER_ENV, "local[2]")
    assert resolve_master("local[1]", {"spark.master": "local[4]"}) == "local[1]"
    assert resolve_master(None, {"spark.master": "local[4]"}) == "local[2]"
    monkeypatch.delenv(MASTER_ENV)
    assert resolve_master(None, {"spark.master": "local[4]"}) == "local[4]"


def test_spark_defaults_conf_comes_after_the_environment(conf_dir: Path) -> None:
    assert master_in_a_new_process(conf_dir=conf_dir) == "local[3]"
    assert master_in_a_new_process(conf_dir=conf_dir, RMQ_SPARK_MASTER="local[2]") == "local[2]"
    assert master_in_a_new_process('["local[1]"]', conf_dir=conf_dir) == "local[1]"


def test_without_any_master_it_is_local(tmp_path: Path) -> None:
    assert master_in_a_new_process(conf_dir=tmp_path) == DEFAULT_MASTER


def test_spark_submit_gives_the_master_unless_rmq_is_told_another(tmp_path: Path) -> None:
    script = tmp_path / "master.py"
    script.write_text(PRINT_MASTER)

    def submitted(*args: str, **env: str) -> str:
        done = subprocess.run(
            [str(SPARK_SUBMIT), "--master", "local[3]", str(script), "[]"],
            capture_output=True,
            text=True,
            timeout=300,
            env={**driver_env(**env), "PYSPARK_PYTHON": sys.executable},
            check=False,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return done.stdout.splitlines()[-1]

    assert submitted() == "local[3]"
    assert submitted(RMQ_SPARK_MASTER="local[2]") == "local[2]"


def test_settings_are_key_value_pairs() -> None:
    assert parse_settings(["a.b=1", "c= x=y", " d =", "a.b=2"]) == {
        "a.b": "2",
        "c": " x=y",
        "d": "",
    }
    for bad in ("no-equals", "=value"):
        with pytest.raises(ValueError, match="a Spark setting is KEY=VALUE"):
            parse_settings([bad])


def test_quiet_driver_options_come_after_those_given() -> None:
    plain = quiet_conf({"spark.app.name": "x"})
    assert plain["spark.app.name"] == "x"
    option, uri = plain[DRIVER_JAVA_OPTIONS].split("=", 1)
    assert option == "-Dlog4j2.configurationFile"
    assert "rootLogger.level = off" in Path(urllib.parse.urlparse(uri).path).read_text()
    joined = quiet_conf({DRIVER_JAVA_OPTIONS: "-Dmine=1"})
    assert joined[DRIVER_JAVA_OPTIONS] == f"-Dmine=1 {plain[DRIVER_JAVA_OPTIONS]}"
