"""The SPARK_HOME the tests' local Spark drivers run from: pip's pyspark directory without its
``python/`` folder.

A pip-installed pyspark is its own SPARK_HOME, and Spark puts ``$SPARK_HOME/python/lib/
pyspark.zip`` first on every Python worker's path. Python compiles a zip's modules on every
import (it cannot cache their bytecode), so each worker spent about 2 s of CPU importing
pyspark before it connected back to the JVM, instead of 0.4 s from site-packages; Spark waits
10 s for that connection, which a busy machine missed ("Python worker failed to connect
back"). A home of links to everything else in the package (bin, jars, conf, ...) makes the
workers import the installed, compiled pyspark of the same version. The standalone cluster's
daemons keep the real home (tests/spark/cluster.py): its workers' python has no pyspark and
needs the zip.
"""

from __future__ import annotations

import atexit
import importlib.util
import shutil
import tempfile
from pathlib import Path


def linked_spark_home() -> Path | None:
    """Make the linked home in a fresh temporary directory (removed at exit), or None
    without pyspark."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        return None
    package = Path(spec.origin).parent
    home = Path(tempfile.mkdtemp(prefix="rmq-spark-home-"))
    atexit.register(shutil.rmtree, home, True)
    for entry in package.iterdir():
        if entry.name != "python":
            (home / entry.name).symlink_to(entry)
    return home
