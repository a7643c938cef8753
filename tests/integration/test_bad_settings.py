"""Bad settings and damaged metadata files stop `rmq namesrv`, `rmq broker` and `rmq standalone`
with one line naming what is wrong, instead of starting on a wrong guess.

* A config value no process can run with (a port out of range, a non-positive size, a perm
  that is not one, an empty store directory) exits 2 with one error line naming the key.
* A metadata file under `store/config` that is empty falls back to its `.bak` (Apache's
  `ConfigManager.load`); with no usable `.bak` the start stops (exit 1) naming the file,
  unless `startWithEmptyMetadataOnDamage=true`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from rmq.store.layout import CONSUMER_OFFSET_JSON, TOPICS_JSON
from tests.offsets import commit_offset, committed_offset
from tests.procs import (
    LOOPBACK,
    RmqProcess,
    RmqProcesses,
    free_broker_port,
    free_port,
    rmq_command,
    write_properties,
)

GROUP, TOPIC = "DamageGroup", "DamageTopic"


def run_rmq(args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        rmq_command(args),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "HOME": str(home)},
        check=False,
    )


def assert_refused(result: subprocess.CompletedProcess[str], code: int, *words: str) -> None:
    assert result.returncode == code, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("rmq: error:")]
    assert len(errors) == 1, result.stderr
    for word in words:
        assert word in errors[0], errors[0]


BAD_VALUES = [
    ("listenPort", "70000"),
    ("listenPort", "-1"),
    ("maxMessageSize", "-5"),
    ("maxMessageSize", "0"),
    ("brokerPermission", "99"),
    ("mappedFileSizeConsumeQueue", "0"),
    ("mappedFileSizeCommitLog", "0"),
    ("storePathRootDir", ""),
]


@pytest.mark.parametrize(("key", "value"), BAD_VALUES)
def test_the_broker_refuses_a_bad_value(tmp_path: Path, key: str, value: str) -> None:
    conf = write_properties(
        tmp_path / "broker.conf",
        {"brokerIP1": LOOPBACK, "bindAddress": LOOPBACK, "listenPort": free_broker_port()}
        | {key: value},
    )

    assert_refused(run_rmq(["broker", "-c", str(conf)], tmp_path), 2, key)


@pytest.mark.parametrize(("key", "value"), BAD_VALUES[2:])
def test_standalone_refuses_a_bad_value(tmp_path: Path, key: str, value: str) -> None:
    conf = write_properties(tmp_path / "standalone.conf", {"bindAddress": LOOPBACK, key: value})
    args = ["standalone", "-c", str(conf), "--namesrv-port", str(free_port())]

    assert_refused(run_rmq([*args, "--broker-port", str(free_broker_port())], tmp_path), 2, key)


@pytest.mark.parametrize("port", ["70000", "-1"])
def test_the_name_server_refuses_a_port_out_of_range(tmp_path: Path, port: str) -> None:
    conf = write_properties(tmp_path / "namesrv.conf", {"listenPort": port})

    assert_refused(run_rmq(["namesrv", "-c", str(conf)], tmp_path), 2, "listenPort", "0..65535")


def broker_with_offset(rmq_processes: RmqProcesses, offset: int) -> tuple[RmqProcess, Path]:
    """A stopped broker whose store/config holds `offset` for (GROUP, TOPIC, 0), and that
    config directory."""
    broker = rmq_processes.start_broker("damage-broker", namesrv=None)
    commit_offset(broker, GROUP, TOPIC, offset)
    broker.stop_cleanly()
    return broker, broker.home / "store" / "config"


def test_an_empty_offsets_file_falls_back_to_its_backup(rmq_processes: RmqProcesses) -> None:
    broker, config = broker_with_offset(rmq_processes, 42)
    offsets = config / CONSUMER_OFFSET_JSON
    shutil.copyfile(offsets, config / f"{CONSUMER_OFFSET_JSON}.bak")
    offsets.write_bytes(b"")

    restarted = rmq_processes.restart(broker)

    assert committed_offset(restarted, GROUP, TOPIC) == 42
    restarted.stop_cleanly()


@pytest.mark.parametrize("name", [CONSUMER_OFFSET_JSON, TOPICS_JSON])
def test_an_empty_file_without_a_backup_stops_the_start(
    rmq_processes: RmqProcesses, name: str
) -> None:
    broker, config = broker_with_offset(rmq_processes, 42)
    (config / f"{name}.bak").unlink(missing_ok=True)
    (config / name).write_bytes(b"")

    result = run_rmq(list(broker.args), broker.home)

    assert_refused(result, 1, str(config / name), "is empty", "startWithEmptyMetadataOnDamage")


def test_start_with_empty_metadata_on_damage_starts_without_the_file(
    rmq_processes: RmqProcesses,
) -> None:
    broker, config = broker_with_offset(rmq_processes, 42)
    (config / f"{CONSUMER_OFFSET_JSON}.bak").unlink(missing_ok=True)
    (config / CONSUMER_OFFSET_JSON).write_bytes(b"")
    conf = Path(broker.args[-1])
    conf.write_text(conf.read_text() + "startWithEmptyMetadataOnDamage=true\n")

    restarted = rmq_processes.restart(broker)

    assert committed_offset(restarted, GROUP, TOPIC) != 42  # the group starts over
    assert "is empty, and no usable backup: starting without it" in restarted.wait_for_log(
        CONSUMER_OFFSET_JSON
    )
    restarted.stop_cleanly()
