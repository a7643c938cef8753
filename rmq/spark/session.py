"""The SparkSession of rmq's Spark jobs: local by default, bound to loopback, quiet.

:func:`build_session` returns the running session when there is one (under ``spark-submit``
and in tests that share one), else starts one.  With a local master (``local``,
``local[N]``, ``local[*]``, the default) nothing listens beyond this machine and the Python
workers run the interpreter that runs rmq:

* ``SPARK_LOCAL_IP=127.0.0.1`` and ``spark.driver.host`` / ``spark.driver.bindAddress``
  127.0.0.1: the driver's block manager and RPC endpoints listen on loopback only (and Spark
  stops warning that the host name resolves to a loopback address);
* ``PYSPARK_PYTHON`` = ``sys.executable``: executors import ``rmq`` from the same environment.

With a cluster master (``spark://``, ``yarn``, ``k8s://``) both are left to the cluster's
configuration: executors must reach the driver, and they run their own Python, which must
have rmq installed (see docs/spark.md).  ``master=None`` leaves the master to
``spark-submit --master`` or ``spark.master``.

Every session gets: the web UI off, ``shuffle_partitions`` shuffle partitions (the export
shuffles nothing big), UTC as the session time zone (timestamps in JSON/CSV and the ``date``
partition column do not depend on the machine's zone), and the ``rocketmq`` data source
registered with filter pushdown on.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Final

from pyspark.sql import SparkSession

from rmq.spark.datasource import register

LOOPBACK: Final = "127.0.0.1"
DEFAULT_MASTER: Final = "local[*]"
DEFAULT_SHUFFLE_PARTITIONS: Final = 4
APP_NAME: Final = "rmq"


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


def effective_master(master: str | None) -> str:
    """``master``, else the one ``spark-submit`` gave the JVM it started, else local[*]."""
    if master is not None:
        return master
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        from pyspark import SparkConf

        found: str = SparkConf().get("spark.master", DEFAULT_MASTER)
        return found
    return DEFAULT_MASTER


def build_session(
    master: str | None = DEFAULT_MASTER,
    *,
    app_name: str = APP_NAME,
    shuffle_partitions: int = DEFAULT_SHUFFLE_PARTITIONS,
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """The session to run on (see the module docstring); ``conf`` adds Spark settings."""
    master = effective_master(master)
    builder = SparkSession.builder.appName(app_name).master(master)
    settings = {
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.sql.session.timeZone": "UTC",
    }
    if is_local(master):
        os.environ["SPARK_LOCAL_IP"] = LOOPBACK
        os.environ["PYSPARK_PYTHON"] = sys.executable
        settings["spark.driver.host"] = LOOPBACK
        settings["spark.driver.bindAddress"] = LOOPBACK
    for key, value in {**settings, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    register(spark)
    return spark
