"""The Spark tests' one SparkSession (local[2], UI off, two shuffle partitions), shared by
every test of the run: starting the JVM is what takes time.

The tests need pyspark and pyarrow (PySpark's Python data sources exchange Arrow batches);
without them the directory is skipped, saying so.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

pytest.importorskip(
    "pyspark", reason="the Spark tests need pyspark: pip install -e '.[spark]' in the rmq clone"
)
pytest.importorskip(
    "pyarrow", reason="the Spark tests need pyarrow: pip install -e '.[spark]' in the rmq clone"
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    from rmq.spark.session import build_session

    session = build_session(
        "local[2]", shuffle_partitions=2, conf={"spark.ui.showConsoleProgress": "false"}
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
