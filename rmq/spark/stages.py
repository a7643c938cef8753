"""How far a Spark job has got: the tasks of the active stages, done and in all.

`watch_stages(spark, report)` polls Spark's status tracker from a thread while the block
runs and calls ``report(tasks done, tasks in all)`` for the stages running at the moment
(an export's write stage runs one task per input split, each writing its files).  Nothing
is reported while no stage runs.  The command line draws this as its progress bar.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

POLL_SECONDS = 0.25


def active_tasks(spark: SparkSession) -> tuple[int, int]:
    """(tasks completed, tasks) over the stages running now."""
    tracker = spark.sparkContext.statusTracker()
    done = total = 0
    for stage_id in tracker.getActiveStageIds():
        info = tracker.getStageInfo(stage_id)
        if info is not None:
            done += info.numCompletedTasks
            total += info.numTasks
    return done, total


@contextmanager
def watch_stages(
    spark: SparkSession, report: Callable[[int, int], None], interval: float = POLL_SECONDS
) -> Iterator[None]:
    """Report the active stages' tasks every `interval` seconds while the block runs."""
    stopped = threading.Event()

    def poll() -> None:
        while not stopped.wait(interval):
            with suppress(Exception):  # the session may be stopping; the job reports errors
                done, total = active_tasks(spark)
                if total:
                    report(done, total)

    thread = threading.Thread(target=poll, name="spark-stages", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stopped.set()
        thread.join(timeout=5)
