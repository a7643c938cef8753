"""The one line of a failed Spark job, from the text Spark gives (the chains below are cut
from real failures: the Java stack, then the worker's Python traceback); test_cluster.py
produces the same failures on a cluster."""

from __future__ import annotations

import pytest

from rmq.spark.failures import (
    PYTHON_HINT,
    STORE_HINT,
    SparkJobError,
    StoreUnreadable,
    explain,
    one_line_errors,
)

pytestmark = pytest.mark.spark

JAVA_STACK = "\n".join(
    [
        "\tat org.apache.spark.sql.execution.datasources.FileFormatWriter$.write(x.scala:213)",
        "\tat py4j.ClientServerConnection.run(ClientServerConnection.java:108)",
    ]
)
MISSING_PYARROW = f"""An error occurred while calling o58.save.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 3 in stage 0.0 failed
4 times, most recent failure: Lost task 3.3 in stage 0.0 (TID 11) (127.0.0.1 executor 0):
org.apache.spark.api.python.PythonException: [PYTHON_EXCEPTION] An exception was thrown from
the Python worker: Traceback (most recent call last):
  File "/opt/spark/python/lib/pyspark.zip/pyspark/serializers.py", line 483, in loads
    return cloudpickle.loads(obj, encoding=encoding)
ModuleNotFoundError: No module named 'pyarrow'
 SQLSTATE: 38000
{JAVA_STACK}
"""
STORE_GONE = f"""Job aborted due to stage failure: Task 0 in stage 0.0 failed 4 times:
org.apache.spark.api.python.PythonException: [PYTHON_EXCEPTION] Traceback (most recent call last):
  File "/opt/rmq/rmq/spark/offline.py", line 457, in read_range
    raise StoreUnreadable(socket.gethostname(), exc.filename or part.root, reason) from exc
{"rmq.spark.failures.StoreUnreadable: the executor on node-7 cannot read "}\
{"/data/store/commitlog/00000000000000000000: No such file or directory"}
 SQLSTATE: 38000
{JAVA_STACK}
"""
NO_PYTHON = f"""Job aborted due to stage failure: Task 0 in stage 0.0 failed 4 times:
java.io.IOException: Cannot run program "/opt/rmq-venv/bin/python": error=2, \
No such file or directory
{JAVA_STACK}
"""
OTHER = f"""An error occurred while calling o41.load.
: org.apache.spark.sql.AnalysisException: [PYTHON_DATA_SOURCE_ERROR] Traceback:
ValueError: option maxPartitionBytes must be an integer, not 'x'
 SQLSTATE: 38000
{JAVA_STACK}
"""


@pytest.mark.parametrize(
    ("text", "python", "line"),
    [
        (
            MISSING_PYARROW,
            None,
            f"the Python of Spark's workers (python3) has no module pyarrow; {PYTHON_HINT}",
        ),
        (
            MISSING_PYARROW.replace("'pyarrow'", "'rmq.spark'"),
            "/usr/bin/python3.11",
            f"the Python of Spark's workers (/usr/bin/python3.11) has no module rmq; {PYTHON_HINT}",
        ),
        (
            NO_PYTHON,
            None,
            "Spark's workers cannot run the Python /opt/rmq-venv/bin/python "
            f"(No such file or directory); {PYTHON_HINT}",
        ),
        (
            STORE_GONE,
            None,
            "the executor on node-7 cannot read /data/store/commitlog/00000000000000000000: "
            f"No such file or directory; {STORE_HINT}",
        ),
        (OTHER, None, "ValueError: option maxPartitionBytes must be an integer, not 'x'"),
        ("", None, "RuntimeError"),
    ],
)
def test_a_failure_is_one_line(text: str, python: str | None, line: str) -> None:
    failure = explain(RuntimeError(text), python)
    assert str(failure) == line
    assert "\n" not in str(failure)


def test_the_executors_message_is_the_store_line() -> None:
    raised = StoreUnreadable("node-7", "/data/store/commitlog/0", "Permission denied")
    assert str(
        explain(RuntimeError(f"...\n{type(raised).__module__}.StoreUnreadable: {raised}"))
    ) == (
        f"the executor on node-7 cannot read /data/store/commitlog/0: Permission denied; "
        f"{STORE_HINT}"
    )


def test_a_block_raises_the_line_with_the_failure_as_its_cause() -> None:
    original = RuntimeError(MISSING_PYARROW)
    with pytest.raises(SparkJobError) as caught, one_line_errors():
        raise original
    # The Python named is the running session's, if this process runs one.
    assert caught.value.message.startswith("the Python of Spark's workers (")
    assert caught.value.message.endswith(") has no module pyarrow")
    assert caught.value.hint == PYTHON_HINT
    assert caught.value.__cause__ is original
