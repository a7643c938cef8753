"""A Spark standalone cluster on this machine for the tests: a Master and one Worker started
from pyspark's ``bin/spark-class``, bound to 127.0.0.1 on free ports, the Worker registered
with the Master (its web UI's ``/json/`` lists it ALIVE) before a test runs.

The Worker, and the executors it starts, see the machine the way another node of a cluster
would see it:

* **another Python**: ``python3`` on the Worker's PATH is a bare virtualenv of the same
  Python version, without pyarrow and without rmq.  Spark runs ``python3`` for its Python
  workers unless ``PYSPARK_PYTHON`` / ``spark.pyspark.python`` say otherwise, so a job that
  names no Python has executors that lack both; a job that names the tests' interpreter
  (the same path on this "node") has them.  The driver, run by a test, finds the tests'
  environment first on its PATH (``driver_env``), as a client machine with rmq installed.
* **other files**: the Worker runs in a mount namespace of its own (``unshare -m``) in which
  :attr:`StandaloneCluster.hidden` is covered by an empty tmpfs, so a store under it is one
  only the driver can read.  That takes root (CI runs as root); the tests are skipped
  otherwise, saying so.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, Final

import pyspark
import pytest

from tests.procs import LOOPBACK, free_port

SPARK_HOME: Final = Path(pyspark.__file__).parent
SPARK_CLASS: Final = SPARK_HOME / "bin" / "spark-class"
SPARK_SUBMIT: Final = SPARK_HOME / "bin" / "spark-submit"
START_SECONDS: Final = 180.0


EXECUTOR_JAVA_OPTIONS: Final = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""The executors' JVMs, as tests/conftest.py's drivers and daemons: a few seconds of work each,
half the CPU time without the optimising compiler."""


@functools.cache
def _driver_conf_dir() -> Path:
    conf = Path(tempfile.mkdtemp(prefix="rmq-spark-driver-conf-"))
    atexit.register(shutil.rmtree, conf, True)
    (conf / "spark-defaults.conf").write_text(
        f"spark.executor.defaultJavaOptions {EXECUTOR_JAVA_OPTIONS}\n"
    )
    return conf


def driver_env(**extra: str) -> dict[str, str]:
    """The environment of a driver run by a test: loopback addresses, the tests' Python
    environment first on the PATH, none of the caller's RMQ_* settings, a Spark configuration
    directory that gives the executors `EXECUTOR_JAVA_OPTIONS`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RMQ_")}
    env.pop("PYSPARK_PYTHON", None)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["SPARK_LOCAL_IP"] = LOOPBACK
    env["SPARK_CONF_DIR"] = str(_driver_conf_dir())
    return {**env, **extra}


class StandaloneCluster:
    """Master and Worker processes (see the module docstring); :meth:`stop` ends both."""

    def __init__(self, root: Path) -> None:
        if os.geteuid() != 0:
            pytest.skip("the Spark cluster's worker hides files in a mount namespace: needs root")
        if shutil.which("unshare") is None:
            pytest.skip("the Spark cluster's worker needs unshare(1)")
        self.root = root
        self.hidden = root / "hidden"
        self.hidden.mkdir(parents=True)
        self.bare = root / "bare-python"
        subprocess.run(
            [sys.executable, "-m", "venv", "--without-pip", str(self.bare)],
            check=True,
            timeout=120,
        )
        lacks = subprocess.run(
            [str(self.bare / "bin" / "python3"), "-c", "import pyarrow"],
            capture_output=True,
            check=False,
        )
        assert lacks.returncode != 0, "the workers' python3 must lack pyarrow"
        ports: list[int] = []
        for _ in range(4):
            ports.append(free_port(avoid=ports))
        self.master_port, self.master_ui, self.worker_port, self.worker_ui = ports
        self.master_url = f"spark://{LOOPBACK}:{self.master_port}"
        self.web_url = f"http://{LOOPBACK}:{self.master_ui}"
        self.properties = root / "spark-defaults.conf"
        self.properties.write_text("spark.master.rest.enabled false\n")
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("RMQ_", "PYSPARK_"))},
            "SPARK_HOME": str(SPARK_HOME),
            "SPARK_LOCAL_IP": LOOPBACK,
            "SPARK_CONF_DIR": str(root),
        }
        self.master: subprocess.Popen[bytes] | None = None
        self.worker: subprocess.Popen[bytes] | None = None
        try:
            self.master = self._start("master", self._master_argv(), self.env)
            bare_first = f"{self.bare / 'bin'}{os.pathsep}{self.env.get('PATH', '')}"
            self.worker = self._start(
                "worker", self._worker_argv(), {**self.env, "PATH": bare_first}
            )
            self._wait_for_worker()
        except BaseException:
            self.stop()
            raise

    def _master_argv(self) -> list[str]:
        return [
            str(SPARK_CLASS),
            "org.apache.spark.deploy.master.Master",
            *("--host", LOOPBACK, "--port", str(self.master_port)),
            *("--webui-port", str(self.master_ui), "--properties-file", str(self.properties)),
        ]

    def _worker_argv(self) -> list[str]:
        """The Worker, in a mount namespace where :attr:`hidden` is an empty tmpfs."""
        hide = 'mount -t tmpfs rmq-hidden "$0" && exec "$@"'
        return [
            *("unshare", "-m", "--propagation", "private", "sh", "-c", hide, str(self.hidden)),
            str(SPARK_CLASS),
            "org.apache.spark.deploy.worker.Worker",
            *("--host", LOOPBACK, "--port", str(self.worker_port)),
            *("--webui-port", str(self.worker_ui), "--cores", "2", "--memory", "1g"),
            *("--work-dir", str(self.root / "work"), "--properties-file", str(self.properties)),
            self.master_url,
        ]

    def _start(self, name: str, argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        with (self.root / f"{name}.log").open("wb") as log:
            return subprocess.Popen(
                argv,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def log(self, name: str, lines: int = 30) -> str:
        text = (self.root / f"{name}.log").read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def state(self) -> dict[str, Any]:
        """The Master's state as its web UI gives it."""
        with urllib.request.urlopen(f"{self.web_url}/json/", timeout=10) as response:
            state: dict[str, Any] = json.load(response)
        return state

    def _wait_for_worker(self) -> None:
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            for name, process in (("master", self.master), ("worker", self.worker)):
                if process is None or process.poll() is not None:
                    raise AssertionError(f"the Spark {name} exited:\n{self.log(name)}")
            try:
                workers = self.state()["workers"]
            except (OSError, ValueError):  # not listening yet, or an HTML page while it starts
                workers = []
            if any(worker["state"] == "ALIVE" for worker in workers):
                return
            time.sleep(0.5)
        raise AssertionError(
            f"no worker registered within {START_SECONDS:.0f} s:\n"
            f"{self.log('master')}\n{self.log('worker')}"
        )

    def app_names(self) -> list[str]:
        """The names of the applications the Master has run or runs."""
        state = self.state()
        return [app["name"] for app in state["activeapps"] + state["completedapps"]]

    def stop(self) -> None:
        """SIGTERM to each process group started (the Worker's holds its executors), SIGKILL
        to what is left after a while."""
        started = [p for p in (self.worker, self.master) if p is not None]
        for process in started:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process in started:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
