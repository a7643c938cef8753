"""Spark's driver without its log and start-up chatter: a failed job reaches rmq as an
exception and is reported as one line (:mod:`rmq.spark.failures`).

A Spark driver started from Python prints, before any work: the JVM's "WARNING: Using
incubator modules: jdk.incubator.vector" (Spark's launcher always adds that module), "Using
Spark's default log4j profile", "Setting default log level to WARN" with a hint about
`sc.setLogLevel`, and WARN lines such as NativeCodeLoader's "Unable to load native-hadoop
library".  None of them is about the user's job.  When a job fails, Spark logs its own
account at ERROR, each time with the whole chain of the failure (TaskSetManager's "aborting
job", FileFormatWriter's "Aborting job" with a hundred lines of Java and Python stack): the
same failure the job's exception carries, which rmq reports in one line.

* `quiet_conf(settings)` gives the driver JVM a log4j2 configuration of its own (through
  `spark.driver.extraJavaOptions`, which spark-submit applies to the driver it launches,
  after any options the settings already hold there): every logger off.  With a
  configuration file Spark prints no profile banner, and since the `org.apache.spark`
  loggers are configured at the root's level Spark sees no need to announce a default
  level.  `QUIET_LEVEL` is the level to keep once the context runs (`sc.setLogLevel`).
* `jvm_noise_filtered()` wraps the JVM's start: the JVM and everything it starts inherit a
  stderr that drops the lines of `JVM_NOISE` (only those, whole lines) and passes everything
  else on, for the life of the JVM.  Python's own stderr is the real one again as soon as the
  block ends.

`rmq --debug spark-export` uses neither: Spark then logs as it always does.
"""

from __future__ import annotations

import atexit
import os
import tempfile
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Final

QUIET_LEVEL: Final = "OFF"

LOG4J2_PROPERTIES: Final = """\
# rmq spark-export: nothing of Spark's log (a failure is reported by rmq, in one line).
# An appender, though nothing reaches it: without one Spark takes log4j for unconfigured
# and loads its default profile.
rootLogger.level = off
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
logger.spark.name = org.apache.spark
logger.spark.level = off
"""

DRIVER_JAVA_OPTIONS: Final = "spark.driver.extraJavaOptions"

JVM_NOISE: Final = (b"WARNING: Using incubator modules:",)
"""Starts of the lines the JVM prints that `jvm_noise_filtered` drops."""

_properties: Path | None = None


def quiet_conf(settings: Mapping[str, str]) -> dict[str, str]:
    """``settings`` with the driver JVM given the log4j2 configuration above (after the
    driver Java options ``settings`` hold already)."""
    global _properties
    if _properties is None:
        handle, name = tempfile.mkstemp(prefix="rmq-log4j2-", suffix=".properties")
        with os.fdopen(handle, "w") as file:
            file.write(LOG4J2_PROPERTIES)
        _properties = Path(name)
        atexit.register(_properties.unlink, missing_ok=True)
    option = f"-Dlog4j2.configurationFile={_properties.as_uri()}"
    theirs = settings.get(DRIVER_JAVA_OPTIONS, "").strip()
    return {**settings, DRIVER_JAVA_OPTIONS: f"{theirs} {option}" if theirs else option}


def _noise(head: bytes) -> bool:
    """Whether a line starting with `head` is, or may yet turn out to be, noise."""
    return any(head.startswith(start) or start.startswith(head) for start in JVM_NOISE)


def filter_noise(data: bytes, at_line_start: bool) -> tuple[bytes, bytes, bool]:
    """Split `data` into what to pass on now, what to hold back (the start of a line that may
    be noise) and whether what is held back starts a line.  A line that cannot be noise is
    passed on at once, even before its end (a progress bar redraws without newlines)."""
    out = bytearray()
    while data:
        end = data.find(b"\n") + 1
        if at_line_start and _noise(data[: end or len(data)]):
            if not end:
                return bytes(out), data, True  # wait for the rest of the line
            if not data.startswith(JVM_NOISE):
                out += data[:end]
            data = data[end:]
            continue
        if not end:
            out += data
            return bytes(out), b"", False
        out += data[:end]
        data = data[end:]
        at_line_start = True
    return bytes(out), b"", True


def _forward(source: int, target: int) -> None:
    """Copy `source` to `target` without the noise lines, until `source` ends."""
    held, at_line_start = b"", True
    with suppress(OSError):
        while chunk := os.read(source, 65536):
            out, held, at_line_start = filter_noise(held + chunk, at_line_start)
            if out:
                os.write(target, out)
        if held and not held.startswith(JVM_NOISE):
            os.write(target, held)
    os.close(source)
    os.close(target)


@contextmanager
def jvm_noise_filtered() -> Iterator[None]:
    """Processes started inside the block get a stderr without `JVM_NOISE` lines."""
    import sys

    sys.stderr.flush()
    real = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)
    thread = threading.Thread(
        target=_forward, args=(read_end, os.dup(real)), name="jvm-stderr", daemon=True
    )
    thread.start()
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(real, 2)
        os.close(real)
