"""UPDATE_BROKER_CONFIG and UPDATE_NAMESRV_CONFIG over raw frames to real `rmq broker` and
`rmq namesrv` processes, key by key (tests/settings_table.py), and through `rmq broker-config
set` and `rmq mqadmin updateBrokerConfig`.

* A bad value, an unknown key or a black-listed key is refused (SYSTEM_ERROR with a remark
  naming the key; NO_PERMISSION for the black list) and changes nothing: GET_*_CONFIG answers
  the same text and data version as before.
* A good value is taken: GET_*_CONFIG shows it, and the answer's remark has one line for a
  key that does not take effect at once.
* What the lines say holds: a restart-only key (maxMessageSize) is not used until the broker
  restarts, a key applied at once (autoCreateTopicEnable) is.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from rmq.common import javaprops
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand
from tests.cli_forkserver import run as cli_run
from tests.floods import send_message
from tests.procs import RemotingSession, RmqProcess, RmqProcesses, rmq_command, unique
from tests.settings_table import AT_ONCE, BLACK_LISTED, BROKER, NAMESRV, Key

UPDATE = {"broker": RequestCode.UPDATE_BROKER_CONFIG, "namesrv": RequestCode.UPDATE_NAMESRV_CONFIG}
GET = {"broker": RequestCode.GET_BROKER_CONFIG, "namesrv": RequestCode.GET_NAMESRV_CONFIG}


@pytest.fixture
def namesrv_for_test(rmq_processes: RmqProcesses) -> RmqProcess:
    return rmq_processes.start_namesrv("settings-ns")


def update(session: RemotingSession, kind: str, addr: str, body: str) -> RemotingCommand:
    return session.invoke(addr, UPDATE[kind], body=body.encode("utf-8"))


def shown(session: RemotingSession, kind: str, addr: str) -> tuple[bytes, str | None]:
    """GET_*_CONFIG's body and the broker's data version (the name server has none)."""
    response = session.invoke(addr, GET[kind])
    assert response.code == ResponseCode.SUCCESS, response.remark
    return bytes(response.body or b""), (response.ext_fields or {}).get("version")


def check_every_key(kind: str, addr: str, rows: list[Key]) -> None:
    with RemotingSession() as session:
        for row in rows:
            line = javaprops.dumps({row.key: row.bad if row.bad is not None else row.good})
            before = shown(session, kind, addr)
            answer = update(session, kind, addr, line)
            if row.note == BLACK_LISTED:
                assert (answer.code, answer.remark) == (
                    ResponseCode.NO_PERMISSION,
                    "Can not update config in black list.",
                ), row
                assert shown(session, kind, addr) == before, row
                continue
            if row.bad is not None:
                assert answer.code == ResponseCode.SYSTEM_ERROR, (row, answer.remark)
                assert f"{row.key}=" in (answer.remark or ""), (row, answer.remark)
                assert "expected " in (answer.remark or ""), (row, answer.remark)
                assert shown(session, kind, addr) == before, row
                answer = update(session, kind, addr, javaprops.dumps({row.key: row.good}))
            assert answer.code == ResponseCode.SUCCESS, (row, answer.remark)
            if row.note is AT_ONCE:
                assert answer.remark is None, (row, answer.remark)
            else:
                assert answer.remark is not None and row.note in answer.remark, (row, answer)
                assert answer.remark.startswith(row.key), (row, answer.remark)
            settings = javaprops.loads(shown(session, kind, addr)[0].decode("utf-8"))
            assert settings[row.key] == row.good, row


def test_every_broker_key(rmq_processes: RmqProcesses) -> None:
    broker = rmq_processes.start_broker("settings-broker", namesrv=None)

    check_every_key("broker", broker.addr, BROKER)

    with RemotingSession() as session:  # still serving, on the port it started with
        runtime = session.invoke(broker.addr, RequestCode.GET_BROKER_RUNTIME_INFO)
        assert runtime.code == ResponseCode.SUCCESS
    written = javaprops.loads(Path(broker.args[-1]).read_text(encoding="utf-8"))
    assert (written["maxMessageSize"], written["listenPort"]) == ("1048576", "20911")
    broker.stop_cleanly()


def test_every_name_server_key(rmq_processes: RmqProcesses) -> None:
    namesrv = rmq_processes.start_namesrv("settings-namesrv")

    check_every_key("namesrv", namesrv.addr, NAMESRV)

    written = javaprops.loads((rmq_processes.root / "settings-namesrv.conf").read_text("utf-8"))
    assert written["serverChannelMaxIdleTimeSeconds"] == "60"
    namesrv.stop_cleanly()


def test_a_refused_update_changes_nothing(rmq_processes: RmqProcesses) -> None:
    broker = rmq_processes.start_broker("refusing-broker", namesrv=None)
    conf = Path(broker.args[-1])
    with RemotingSession() as session:
        before = shown(session, "broker", broker.addr)
        for body, remark in [
            (
                "autoCreateTopicEnable=false\nnoSuchKey=1\n",
                "unknown key noSuchKey: not a setting of rmq's broker (nothing was changed)",
            ),
            (
                "autoCreateTopicEnable=false\nfileReservedTime=-1\n",
                "fileReservedTime='-1': expected a whole number 1..2147483647 (hours)",
            ),
            (
                "autoCreateTopicEnable=maybe\n",
                "autoCreateTopicEnable='maybe': expected true or false",
            ),
            (
                "writeBufferHighWaterMark=1000\nwriteBufferLowWaterMark=2000\n",
                "writeBufferLowWaterMark=2000 is above writeBufferHighWaterMark=1000: expected"
                " low <= high (or either 0: Netty's defaults)",
            ),
            ("brokerRole=SLAVE\n", "brokerId=0: a SLAVE's brokerId must be > 0"),
        ]:
            file_before = conf.read_text(encoding="utf-8")
            answer = update(session, "broker", broker.addr, body)
            assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR, remark)
            assert shown(session, "broker", broker.addr) == before
            assert conf.read_text(encoding="utf-8") == file_before
        # autoCreateTopicEnable is still on: a new topic is created on its first send
        sent = send_message(session, broker.addr, unique("StillAutoCreated"), b"x")
        assert sent.code == ResponseCode.SUCCESS, sent.remark
    broker.stop_cleanly()


def test_the_lines_of_the_answer_hold(rmq_processes: RmqProcesses) -> None:
    broker = rmq_processes.start_broker("honest-broker", namesrv=None)
    body = b"m" * 2000
    with RemotingSession() as session:
        answer = update(session, "broker", broker.addr, "maxMessageSize=1000\n")
        assert (answer.code, answer.remark) == (
            ResponseCode.SUCCESS,
            "maxMessageSize takes effect after a restart",
        )
        taken = send_message(session, broker.addr, unique("Big"), body)
        assert taken.code == ResponseCode.SUCCESS, taken.remark

        answer = update(session, "broker", broker.addr, "autoCreateTopicEnable=false\n")
        assert (answer.code, answer.remark) == (ResponseCode.SUCCESS, None)
        refused = send_message(session, broker.addr, unique("NotCreated"), b"x")
        assert refused.code == ResponseCode.TOPIC_NOT_EXIST, refused.remark
    broker.stop_cleanly()

    restarted = rmq_processes.restart(broker)
    with RemotingSession() as session:
        too_big = send_message(session, restarted.addr, "TBW102", body)
        assert too_big.code == ResponseCode.MESSAGE_ILLEGAL, too_big.remark
        assert "msg body length limit 1000B" in (too_big.remark or "")
    restarted.stop_cleanly()


def run_rmq(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "NAMESRV_ADDR"}
    return cli_run(
        rmq_command(list(args)),
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "HOME": str(home)},
        stdin=subprocess.DEVNULL,
        check=False,
    )


def test_broker_config_set_names_the_refused_key_and_the_restart(
    rmq_processes: RmqProcesses, namesrv_for_test: RmqProcess
) -> None:
    broker = rmq_processes.start_broker("cli-broker", namesrv=namesrv_for_test)
    home, ns = rmq_processes.root, namesrv_for_test.addr

    unknown = run_rmq(home, "broker-config", "set", "noSuchKey", "1", "--broker", broker.addr)
    assert unknown.returncode == 1, unknown
    assert unknown.stdout == ""
    assert unknown.stderr == (
        "rmq: error: SYSTEM_ERROR(1): unknown key noSuchKey: not a setting of rmq's broker"
        f" (nothing was changed) (broker {broker.addr})\n"
    )

    restart = run_rmq(home, "broker-config", "set", "maxMessageSize", "1000", "-n", ns)
    assert restart.returncode == 0, restart
    assert (
        restart.stderr == f"rmq: note: {broker.addr}: maxMessageSize takes effect after a restart\n"
    )
    assert broker.addr in restart.stdout

    at_once = run_rmq(home, "broker-config", "set", "brokerPermission", "6", "-n", ns)
    assert (at_once.returncode, at_once.stderr) == (0, "")

    unknown = run_rmq(home, "namesrv-config", "set", "noSuchKey", "1", "-n", ns)
    assert unknown.returncode == 1, unknown
    assert "unknown key noSuchKey: not a setting of rmq's name server" in unknown.stderr
    broker.stop_cleanly()


def test_mqadmin_update_broker_config_prints_the_refusal(
    rmq_processes: RmqProcesses, namesrv_for_test: RmqProcess
) -> None:
    broker = rmq_processes.start_broker("mqadmin-broker", namesrv=namesrv_for_test)
    home = rmq_processes.root
    refusal = (
        "org.apache.rocketmq.client.exception.MQBrokerException: CODE: 1  DESC: unknown key"
        " noSuchKey: not a setting of rmq's broker (nothing was changed) BROKER:"
        f" {broker.addr}\nFor more information, please visit the url,"
        " http://rocketmq.apache.org/docs/faq/\n"
    )

    by_addr = run_rmq(
        home, "mqadmin", "updateBrokerConfig", "-b", broker.addr, "-k", "noSuchKey", "-v", "1"
    )
    assert (by_addr.returncode, by_addr.stdout) == (1, "")
    assert by_addr.stderr == (
        "org.apache.rocketmq.tools.command.SubCommandException: UpdateBrokerConfigSubCommand"
        f" command failed\nCaused by: {refusal}"
    )

    by_cluster = run_rmq(
        home,
        "mqadmin",
        "updateBrokerConfig",
        "-n",
        namesrv_for_test.addr,
        "-c",
        "DefaultCluster",
        "-k",
        "noSuchKey",
        "-v",
        "1",
    )
    assert (by_cluster.returncode, by_cluster.stdout, by_cluster.stderr) == (1, "", refusal)

    taken = run_rmq(
        home, "mqadmin", "updateBrokerConfig", "-b", broker.addr, "-k", "maxMessageSize", "-v", "9"
    )
    assert (taken.returncode, taken.stderr) == (0, "")
    assert taken.stdout == f"update broker config success, {broker.addr}\n"
    broker.stop_cleanly()
