"""A failed Spark job in one line: what failed and, when the cluster's setup is the cause,
what the executors lack and how to give it to them.

Spark reports a failed task as the whole chain of it: the driver's Java stack, the Python
traceback of the worker that failed, the exception at its bottom (a hundred lines and more).
Three causes lie in how the cluster is set up rather than in the job, and get a line that
says how to fix them:

* the Python Spark runs for its workers (``PYSPARK_PYTHON``, ``python3`` unless set) lacks
  a module the job needs, pyarrow (PySpark's Python data sources exchange Arrow batches) or
  rmq itself: ``ModuleNotFoundError: No module named ...`` in the chain;
* that Python does not exist where a worker looks: ``Cannot run program "..."``;
* an executor cannot read a store file the driver planned from: the offline reader raises
  :class:`StoreUnreadable` there (:mod:`rmq.spark.offline`), whose message names the host
  and the file.

Anything else is the last ``...Error: ...`` / ``...Exception: ...`` line of the chain.

:class:`SparkJobError` is the line (``message; hint``); :func:`one_line_errors` turns any
exception of its block into one, the export job runs in it (``rmq spark-export`` prints it
as ``rmq: error: ...``), and a PySpark job of one's own can too::

    with one_line_errors():
        spark.read.format("rocketmq").load("/mnt/store").groupBy("topic").count().show()

Nothing here imports pyspark until a block fails.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

DEFAULT_WORKER_PYTHON: Final = "python3"
"""What Spark runs for its Python workers when neither PYSPARK_PYTHON nor
spark.pyspark.python says otherwise."""

PYTHON_HINT: Final = (
    "install rmq with its spark extra (pip install '<clone>[spark]') into a Python at the "
    "same path on every worker and set "
    "PYSPARK_PYTHON (or --conf spark.pyspark.python) to that path"
)
STORE_HINT: Final = (
    "give a store path every worker can read: a shared mount, or a copy at the same path "
    "on each node"
)

_MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '(?P<module>[^'.]+)")
_CANNOT_RUN = re.compile(
    r'Cannot run program "(?P<program>[^"]+)"(?:[^:\n]*: error=\d+, (?P<why>[^\n]+))?'
)
_STORE_UNREADABLE = re.compile(r"\bStoreUnreadable: (?P<what>[^\n]+)")
_EXCEPTION_LINE = re.compile(r"^\s*[\w.]*(Error|Exception): .+")


class StoreUnreadable(RuntimeError):
    """Raised on an executor that cannot open a file of the store it was given to read
    (the driver could: it planned the read from the same files)."""

    def __init__(self, host: str, path: str, reason: str) -> None:
        super().__init__(f"the executor on {host} cannot read {path}: {reason}")


class SparkJobError(RuntimeError):
    """A failed Spark job as one line: what failed; what to do (when known)."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(f"{message}; {hint}" if hint else message)
        self.message = message
        self.hint = hint


def explain(exc: BaseException, worker_python: str | None = None) -> SparkJobError:
    """The one line of a Spark failure; ``worker_python`` is the interpreter Spark ran for
    its Python workers (named in the line when it lacks something)."""
    if isinstance(exc, SparkJobError):
        return exc
    text = str(exc)
    python = worker_python or DEFAULT_WORKER_PYTHON
    if found := _MISSING_MODULE.search(text):
        return SparkJobError(
            f"the Python of Spark's workers ({python}) has no module {found['module']}",
            PYTHON_HINT,
        )
    if found := _CANNOT_RUN.search(text):
        why = f" ({found['why'].strip()})" if found["why"] else ""
        return SparkJobError(
            f"Spark's workers cannot run the Python {found['program']}{why}", PYTHON_HINT
        )
    if found := _STORE_UNREADABLE.search(text):
        return SparkJobError(found["what"].strip(), STORE_HINT)
    lines = text.splitlines() or [type(exc).__name__]
    causes = [line.strip() for line in lines if _EXCEPTION_LINE.match(line)]
    return SparkJobError(causes[-1] if causes else lines[0].strip())


def _worker_python() -> str | None:
    """The Python the running SparkContext starts its workers with, if one runs."""
    try:
        from pyspark import SparkContext
    except ImportError:
        return None
    context = SparkContext._active_spark_context
    return None if context is None else str(context.pythonExec)


@contextmanager
def one_line_errors() -> Iterator[None]:
    """Raise any exception of the block as the :class:`SparkJobError` of its one line (the
    original is its ``__cause__``)."""
    try:
        yield
    except SparkJobError:
        raise
    except Exception as exc:
        raise explain(exc, _worker_python()) from exc
