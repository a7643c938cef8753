"""Apache RocketMQ 4.9.8's own programs, run from the jars `make apache` fetched.

* `java_argv` builds a `java` command line on conformance/apache/lib with the options JDK 17
  needs for 4.9.x, a small heap, `user.home` and the client log root pointed at a directory
  of the test's (Java takes `user.home` from the password file, not from HOME).
* `start_apache_namesrv` / `start_apache_broker` start NamesrvStartup and BrokerStartup as
  `RmqProcesses` members (same logs, readiness and kill-at-the-end as rmq's servers) with
  `ROCKETMQ_HOME` = conformance/apache/home, which holds the logback files they load.
* `run_driver` runs one scenario driver (conformance/drivers) with its spec as JSON on stdin
  and returns the JSON it printed; `run_mqadmin` runs MQAdminStartup and returns its stdout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.procs import (
    LOOPBACK,
    RmqProcess,
    RmqProcesses,
    free_broker_port,
    free_port,
    wait_registered,
    write_properties,
)

ROOT = Path(__file__).resolve().parents[2]
APACHE = ROOT / "conformance" / "apache"
LIB = APACHE / "lib"
ROCKETMQ_HOME = APACHE / "home"
DRIVER_CLASSES = ROOT / "conformance" / "drivers" / "classes"

JDK17_OPTIONS = (
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
)
"""What 4.9.x needs on JDK 17: unmapping files (nio, jdk.internal.ref, sun.nio.ch) and
fastjson's reflection into java.lang / java.util."""

SERVER_HEAP = ("-Xms128m", "-Xmx512m", "-XX:MaxDirectMemorySize=256m", "-XX:+UseSerialGC")
"""Apache's servers with the JVM's full compilers: what the benchmarks measure them with."""
TEST_SERVER_HEAP = (*SERVER_HEAP, "-XX:TieredStopAtLevel=1")
"""Apache's servers in the tests (the default): C1 only.  A test's server lives seconds to
minutes, over which C2's compiling costs more CPU than it saves (a broker's first 25 s: 6.6
CPU-s with C2, 3.9 without)."""
CLIENT_HEAP = ("-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")


def ensure_built() -> None:
    """Fail with the one command that fixes it when `make apache` has not run."""
    missing = [p for p in (LIB / ".stamp", DRIVER_CLASSES / ".stamp", DRIVER_JAR) if not p.exists()]
    if missing:
        raise AssertionError(f"{', '.join(map(str, missing))} missing: run `make apache` first")
    if shutil.which("java") is None:
        raise AssertionError("java is not on PATH")


DRIVER_JAR = DRIVER_CLASSES / "drivers.jar"
CLIENT_ARCHIVE = DRIVER_CLASSES / "clients.jsa"
"""The class-data archive of the client programs (mqadmin and the drivers): a JVM mapping it
starts with the classes it lists already parsed and verified, a third less CPU per run for
the hundreds of short client runs of a conformance run.  Written by `make_client_archive`;
a JVM that cannot use it (other jars, another JDK) runs without it, silently."""


def classpath(*, drivers: bool = False, client: bool = False) -> str:
    """Apache's jars; the drivers' jar first for the drivers and, so that both share one
    class-data archive (which fixes the class path), for every client program."""
    parts = [str(DRIVER_JAR)] if drivers or client else []
    parts.append(str(LIB / "*"))
    return os.pathsep.join(parts)


def _client_sharing(heap: Sequence[str]) -> tuple[str, ...]:
    if heap is not CLIENT_HEAP or not CLIENT_ARCHIVE.is_file():
        return ()
    # -Xlog:disable: where the archive does not fit, no warning on the program's stdout
    return (f"-XX:SharedArchiveFile={CLIENT_ARCHIVE}", "-Xlog:disable")


def make_client_archive(home: Path) -> None:
    """Write `CLIENT_ARCHIVE` from one mqadmin run (it loads the client, remoting and Netty
    classes every client program uses), unless it is newer than the jars."""
    newest = max(path.stat().st_mtime for path in (*LIB.glob("*.jar"), DRIVER_JAR))
    if CLIENT_ARCHIVE.is_file() and CLIENT_ARCHIVE.stat().st_mtime > newest:
        return
    partial = CLIENT_ARCHIVE.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    CLIENT_ARCHIVE.unlink(missing_ok=True)
    argv = java_argv(
        "org.apache.rocketmq.tools.command.MQAdminStartup",
        # an address nothing listens on: the command fails at once, its classes loaded
        ["topicList", "-n", f"{LOOPBACK}:1"],
        home=home,
    )
    argv[1:1] = [f"-XX:ArchiveClassesAtExit={partial}", "-Xlog:disable"]
    subprocess.run(
        argv, capture_output=True, timeout=120, env=java_env(home), cwd=home, check=False
    )
    if partial.is_file():
        partial.replace(CLIENT_ARCHIVE)


def java_argv(
    main: str,
    args: Sequence[str] = (),
    *,
    home: Path,
    heap: Sequence[str] = CLIENT_HEAP,
    drivers: bool = False,
    props: Mapping[str, str] | None = None,
) -> list[str]:
    """`java ... main args...` with `user.home`, the temporary directory and every log under
    `home`."""
    (home / "tmp").mkdir(parents=True, exist_ok=True)
    system = {
        "user.home": str(home),
        # the servers' self-signed TLS test certificate (tls.test.mode.enable, on by default)
        # is written to Netty's temporary directory and never deleted
        "java.io.tmpdir": str(home / "tmp"),
        "rocketmq.home.dir": str(ROCKETMQ_HOME),
        "rmq.conformance.logs": str(home / "logs"),
        "rocketmq.client.logRoot": str(home / "logs"),
        "rocketmq.client.logLevel": "WARN",
        "java.net.preferIPv4Stack": "true",
        **(props or {}),
    }
    client = heap is CLIENT_HEAP
    return [
        "java",
        *heap,
        *_client_sharing(heap),
        *JDK17_OPTIONS,
        # no /tmp/hsperfdata file: a JVM finding another's locked there warns on stdout
        "-XX:-UsePerfData",
        *(f"-D{key}={value}" for key, value in system.items()),
        "-cp",
        classpath(drivers=drivers, client=client),
        main,
        *args,
    ]


def java_env(home: Path, rocketmq_home: Path = ROCKETMQ_HOME) -> dict[str, str]:
    return {**os.environ, "HOME": str(home), "ROCKETMQ_HOME": str(rocketmq_home)}


def start_apache_namesrv(
    processes: RmqProcesses,
    name: str = "apache-namesrv",
    *,
    jvm_props: Mapping[str, str] | None = None,
    heap: Sequence[str] = TEST_SERVER_HEAP,
) -> RmqProcess:
    """Apache's NamesrvStartup on a free loopback port; `jvm_props` adds -D properties
    (e.g. tls.server.mode)."""
    port = free_port()
    home = processes.root / f"{name}-home"
    conf = write_properties(processes.root / f"{name}.properties", {"listenPort": port})
    argv = java_argv(
        "org.apache.rocketmq.namesrv.NamesrvStartup",
        ["-c", str(conf)],
        home=home,
        heap=heap,
        props=jvm_props,
    )
    return processes.start(
        name, (), port=port, home=home, env=java_env(home), command=argv, ready_timeout=60
    )


def start_apache_broker(
    processes: RmqProcesses,
    name: str,
    *,
    namesrv_addr: str | None,
    props: Mapping[str, object],
    rocketmq_home: Path = ROCKETMQ_HOME,
    heap: Sequence[str] = TEST_SERVER_HEAP,
    ready_timeout: float = 60,
    jvm_props: Mapping[str, str] | None = None,
) -> RmqProcess:
    """Apache's BrokerStartup -c <conf>, registered with `namesrv_addr` when it returns
    (None: no name server).

    The conf binds everything to 127.0.0.1 on free ports (listenPort, listenPort - 2,
    listenPort + 1) and stores under `<root>/<name>-home/store`; `props` adds or overrides.
    `rocketmq_home` is its ROCKETMQ_HOME (logback files, and `conf/plain_acl.yml` with ACL on);
    `heap` its JVM memory options; `ready_timeout` how long it may take to listen and register;
    `jvm_props` adds -D properties (e.g. tls.server.mode).
    """
    port = free_broker_port()
    home = processes.root / f"{name}-home"
    store = home / "store"
    conf_props: dict[str, object] = {
        "brokerIP1": LOOPBACK,
        "listenPort": port,
        **({"namesrvAddr": namesrv_addr} if namesrv_addr is not None else {}),
        "storePathRootDir": store,
        "storePathCommitLog": store / "commitlog",
        **props,
    }
    conf = write_properties(processes.root / f"{name}.conf", conf_props)
    argv = java_argv(
        "org.apache.rocketmq.broker.BrokerStartup",
        ["-c", str(conf)],
        home=home,
        heap=heap,
        props={"rocketmq.home.dir": str(rocketmq_home), **(jvm_props or {})},
    )
    env = java_env(home, rocketmq_home)
    process = processes.start(
        name, (), port=port, home=home, env=env, command=argv, ready_timeout=ready_timeout
    )
    if namesrv_addr is not None:
        wait_registered(namesrv_addr, process.addr, ready_timeout, process)
    return process


class DriverError(AssertionError):
    """A scenario driver failed: its error, trace and output are in the message."""


def run_java(
    main: str,
    args: Sequence[str],
    *,
    home: Path,
    timeout: float,
    drivers: bool = False,
    props: Mapping[str, str] | None = None,
    input_text: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run Java class `main` with `args` in `home` until it exits (subprocess.TimeoutExpired
    after `timeout` s); its stdout and stderr as text (undecodable bytes replaced)."""
    argv = java_argv(main, args, home=home, drivers=drivers, props=props)
    return subprocess.run(
        argv,
        input=input_text,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=timeout,
        env=java_env(home),
        cwd=home,
        check=False,
    )


def run_driver(
    scenario: str,
    spec: Mapping[str, Any],
    *,
    home: Path,
    timeout: float = 120,
    props: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Run conformance driver `scenario` with `spec` on stdin; return its RESULT object.

    `props` are JVM system properties (-Dkey=value), e.g. the client's
    `rocketmq.serialize.type`."""
    try:
        done = run_java(
            "rmq.conformance.Driver",
            [scenario],
            home=home,
            timeout=timeout,
            drivers=True,
            props=props,
            input_text=json.dumps(spec),
        )
    except subprocess.TimeoutExpired as exc:
        raise DriverError(f"driver {scenario} did not finish within {timeout}s") from exc
    stdout = done.stdout
    results = [line[7:] for line in stdout.splitlines() if line.startswith("RESULT ")]
    if not results:
        raise DriverError(
            f"driver {scenario} printed no RESULT (exit {done.returncode})\n{stdout}\n"
            f"{done.stderr[-4000:]}"
        )
    result: dict[str, Any] = json.loads(results[-1])
    if "error" in result:
        raise DriverError(f"driver {scenario}: {result['error']}\n{result.get('trace', '')}")
    return result


def run_mqadmin(
    args: Sequence[str], *, home: Path, timeout: float = 60, input_text: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Apache's mqadmin (MQAdminStartup args...); stdout and stderr as text."""
    return run_java(
        "org.apache.rocketmq.tools.command.MQAdminStartup",
        args,
        home=home,
        timeout=timeout,
        input_text=input_text,
    )
