"""The SparkSession of rmq's Spark jobs: its master, loopback-only when local, quiet.

:func:`build_session` returns the running session when there is one (in tests that share
one), else starts one.  Its master (:func:`resolve_master`) is the first of:

1. the ``master`` argument (``rmq spark-export --master``, ``export.py --master``);
2. ``$RMQ_SPARK_MASTER``;
3. the master Spark itself was given: ``spark-submit --master`` (to the JVM that runs the
   job), ``spark.master`` among the session's settings (``--conf``) or in Spark's
   configuration (``spark-defaults.conf``);
4. ``local[*]``.

Reading 3 takes Spark's JVM: it is started first (with the session's settings, as PySpark
starts it, through ``spark-submit``) or, under ``spark-submit``, joined, and its
configuration is asked.

With a local master (``local``, ``local[N]``, ``local[*]``) nothing listens beyond this
machine and the Python workers run the interpreter that runs rmq: ``spark.driver.host`` and
``spark.driver.bindAddress`` are 127.0.0.1 (and ``SPARK_LOCAL_IP``, which also keeps a JVM
started afterwards from warning that the host name resolves to a loopback address), and
``PYSPARK_PYTHON`` is ``sys.executable``.
With a cluster master (``spark://``, ``yarn``, ``k8s://``) the driver's addresses are left
to Spark (executors must reach the driver) and the workers run the Python the cluster's
configuration names: ``spark.pyspark.python`` (a setting or Spark's configuration, as
spark-submit applies it) becomes ``PYSPARK_PYTHON``, which PySpark reads; unset, Spark runs
``python3``.  That Python must have rmq installed (docs/spark.md, "On a cluster").

Every session gets: the web UI off, ``shuffle_partitions`` shuffle partitions (the export
shuffles nothing big), UTC as the session time zone (timestamps in JSON/CSV and the ``date``
partition column do not depend on the machine's zone), and the ``rocketmq`` data source.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any, Final

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

from rmq.spark.datasource import register

LOOPBACK: Final = "127.0.0.1"
DEFAULT_MASTER: Final = "local[*]"
MASTER_ENV: Final = "RMQ_SPARK_MASTER"
MASTER_CONF: Final = "spark.master"
PYTHON_CONF: Final = "spark.pyspark.python"
DEFAULT_SHUFFLE_PARTITIONS: Final = 4
APP_NAME: Final = "rmq"


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


def _jvm_conf(settings: Mapping[str, str]) -> Any:
    """The Spark configuration of the driver JVM (its ``spark.*`` system properties), the
    JVM started with ``settings`` unless it runs already (under spark-submit, or started
    before in this process)."""
    SparkContext._ensure_initialized(
        conf=SparkConf(loadDefaults=False).setAll(list(settings.items()))
    )
    assert SparkContext._jvm is not None
    return SparkContext._jvm.org.apache.spark.SparkConf(True)


def resolve_master(master: str | None = None, conf: Mapping[str, str] | None = None) -> str:
    """The master a session built with ``master`` and the settings ``conf`` runs on (see the
    module docstring).  May start Spark's JVM, with ``conf``."""
    settings = dict(conf or {})
    chosen = master or os.environ.get(MASTER_ENV) or settings.get(MASTER_CONF)
    if chosen:
        return chosen
    running = SparkContext._active_spark_context
    if running is not None:
        return str(running.master)
    found: str = _jvm_conf(settings).get(MASTER_CONF, "")
    return found or DEFAULT_MASTER


def build_session(
    master: str | None = None,
    *,
    app_name: str = APP_NAME,
    shuffle_partitions: int = DEFAULT_SHUFFLE_PARTITIONS,
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """The session to run on (see the module docstring); ``conf`` adds Spark settings."""
    settings = {
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.sql.session.timeZone": "UTC",
        **(conf or {}),
    }
    master = resolve_master(master, settings)
    settings[MASTER_CONF] = master
    if is_local(master):
        os.environ["SPARK_LOCAL_IP"] = LOOPBACK
        os.environ["PYSPARK_PYTHON"] = sys.executable
        settings["spark.driver.host"] = LOOPBACK
        settings["spark.driver.bindAddress"] = LOOPBACK
    elif SparkContext._active_spark_context is None:
        python = settings.get(PYTHON_CONF) or _jvm_conf(settings).get(PYTHON_CONF, "")
        if python:
            os.environ["PYSPARK_PYTHON"] = python
    builder = SparkSession.builder.appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    register(spark)
    return spark
