"""What a SLAVE broker refuses and what it serves, as raw frames, differential: the same
requests to Apache's broker started with ``brokerRole=SLAVE`` / ``brokerId=1`` and to rmq's,
the answers compared code, remark and the header fields that matter.

No master and no name server are needed: a slave refuses writes on its own (Apache's store
answers every put SERVICE_NOT_AVAILABLE while its role is SLAVE; END_TRANSACTION is refused
before the store, topic and group changes by the admin processor), and serves pulls and
offset requests.  The remark of a refused send ends with the disks' used ratios
(``[CL:  0.42 CQ: ...]``), which differ between the two stores: that one bracket is
normalised.  The Apache answers are asserted to show what each test is about, so two equal
wrong answers cannot pass.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from rmq.common.message import encode_batch
from rmq.common.properties import encode_properties
from rmq.common.sysflag import PULL_COMMIT_OFFSET, PULL_SUBSCRIPTION
from rmq.remoting.bodies import SubscriptionGroupConfig
from rmq.remoting.codes import RequestCode, ResponseCode
from rmq.remoting.command import RemotingCommand
from rmq.remoting.headers import (
    ConsumerSendMsgBackRequestHeader,
    CreateTopicRequestHeader,
    EndTransactionRequestHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    SendMessageRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from tests.conformance.clusters import BROKER_PROPS
from tests.conformance.java import start_apache_broker
from tests.procs import RemotingSession, RmqProcess, RmqProcesses

TOPIC = "RawSlaveTopic"
GROUP = "RawSlaveGroup"
SLAVE_PROPS: dict[str, object] = {**BROKER_PROPS, "brokerRole": "SLAVE", "brokerId": 1}
KINDS = ("apache", "rmq")
_DISK_RATIOS = re.compile(r"\[CL: [^\]]*\]")


@dataclass
class Broker:
    kind: str
    process: RmqProcess
    session: RemotingSession

    def ask(
        self, code: int, header: object | None = None, body: bytes | None = None
    ) -> RemotingCommand:
        return self.session.invoke(self.process.addr, code, header, body=body, timeout=15)


@contextlib.contextmanager
def _brokers(
    factory: pytest.TempPathFactory, role: str, props: dict[str, object]
) -> Iterator[dict[str, Broker]]:
    """An Apache and an rmq broker started with `props`, without a name server."""
    processes = RmqProcesses(factory.mktemp(f"raw-{role}"))
    session = RemotingSession()
    try:
        apache = start_apache_broker(processes, f"apache-{role}", namesrv_addr=None, props=props)
        rmq = processes.start_broker(f"rmq-{role}", namesrv=None, props=props)
        yield {"apache": Broker("apache", apache, session), "rmq": Broker("rmq", rmq, session)}
    finally:
        session.close()
        processes.kill_all()


@pytest.fixture(scope="module")
def slaves(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Broker]]:
    with _brokers(tmp_path_factory, "slave", SLAVE_PROPS) as found:
        yield found


def _answer(response: RemotingCommand) -> tuple[int, str | None]:
    remark = response.remark
    if remark is not None:
        remark = _DISK_RATIOS.sub("[CL: *]", remark)
    return response.code, remark


def _both(
    brokers: dict[str, Broker], code: int, header: object | None, body: bytes | None = None
) -> dict[str, RemotingCommand]:
    return {kind: brokers[kind].ask(code, header, body) for kind in KINDS}


def _send_header(topic: str, *, batch: bool = False) -> SendMessageRequestHeader:
    return SendMessageRequestHeader(
        producer_group="RawSlaveProducer",
        topic=topic,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=0,
        sys_flag=0,
        born_timestamp=1_700_000_000_000,
        flag=0,
        properties=encode_properties({"WAIT": "true", "UNIQ_KEY": "0A0000010000000000000001"}),
        reconsume_times=0,
        batch=batch,
    )


SERVICE_NOT_AVAILABLE_REMARK = (
    "service not available now. It may be caused by one of the following reasons: the "
    "broker's disk is full [CL: *], messages are put to the slave, message store has been "
    "shut down, etc."
)


@pytest.mark.parametrize("code", [RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2])
def test_send_refused(slaves: dict[str, Broker], code: int) -> None:
    answers = _both(slaves, code, _send_header(TOPIC), b"hello slave")
    assert _answer(answers["apache"]) == (
        ResponseCode.SERVICE_NOT_AVAILABLE,
        SERVICE_NOT_AVAILABLE_REMARK,
    )
    assert _answer(answers["rmq"]) == _answer(answers["apache"])


def test_batch_send_refused(slaves: dict[str, Broker]) -> None:
    props = encode_properties({"UNIQ_KEY": "0A0000010000000000000002"}).encode()
    body = encode_batch([(0, b"one", props), (0, b"two", props)])
    answers = _both(slaves, RequestCode.SEND_BATCH_MESSAGE, _send_header(TOPIC, batch=True), body)
    assert answers["apache"].code == ResponseCode.SERVICE_NOT_AVAILABLE
    assert _answer(answers["rmq"]) == _answer(answers["apache"])


def test_refused_send_leaves_the_topic_and_no_message(slaves: dict[str, Broker]) -> None:
    """A refused send still auto-created its topic on the slave (the store refuses after the
    broker's checks), and nothing was stored: a pull of the queue finds no message."""
    for kind in KINDS:
        slaves[kind].ask(RequestCode.SEND_MESSAGE_V2, _send_header(TOPIC), b"x")
    answers = _both(slaves, RequestCode.GET_ALL_TOPIC_CONFIG, None)
    for kind in KINDS:
        assert answers[kind].code == ResponseCode.SUCCESS
        assert answers[kind].body is not None
    listed = {kind: TOPIC.encode() in bytes(answers[kind].body or b"") for kind in KINDS}
    assert listed == {"apache": True, "rmq": True}
    pulls = _both(slaves, RequestCode.PULL_MESSAGE, _pull_header(0))
    assert pulls["apache"].code == ResponseCode.PULL_NOT_FOUND
    assert _pull_answer(pulls["rmq"]) == _pull_answer(pulls["apache"])


def _pull_header(offset: int) -> PullMessageRequestHeader:
    return PullMessageRequestHeader(
        consumer_group=GROUP,
        topic=TOPIC,
        queue_id=0,
        queue_offset=offset,
        max_msg_nums=32,
        sys_flag=PULL_SUBSCRIPTION | PULL_COMMIT_OFFSET,  # a slave stores no commit
        commit_offset=5,
        suspend_timeout_millis=0,
        subscription="*",
        sub_version=0,
        expression_type="TAG",
    )


def _pull_answer(response: RemotingCommand) -> tuple[int, str | None, PullMessageResponseHeader]:
    return response.code, response.remark, response.read_header(PullMessageResponseHeader)


def test_pull_served_with_master_suggested(slaves: dict[str, Broker]) -> None:
    """A slave serves pulls; without slaveReadEnable it suggests the master (id 0); an offset
    past the queue's end is not corrected there (PULL_RETRY_IMMEDIATELY, without
    offsetCheckInSlave) and the commit offset a pull carries is not stored
    (QUERY_CONSUMER_OFFSET answers the queue's min offset for a group without one)."""
    for kind in KINDS:
        slaves[kind].ask(RequestCode.SEND_MESSAGE_V2, _send_header(TOPIC), b"x")
    answers = _both(slaves, RequestCode.PULL_MESSAGE, _pull_header(3))
    code, _, header = _pull_answer(answers["apache"])
    assert code == ResponseCode.PULL_RETRY_IMMEDIATELY  # OFFSET_MOVED, not corrected on a slave
    assert header.suggest_which_broker_id == 0
    assert _pull_answer(answers["rmq"]) == _pull_answer(answers["apache"])
    query = QueryConsumerOffsetRequestHeader(consumer_group=GROUP, topic=TOPIC, queue_id=0)
    offsets = _both(slaves, RequestCode.QUERY_CONSUMER_OFFSET, query)
    found = {
        kind: (offsets[kind].code, (offsets[kind].ext_fields or {}).get("offset")) for kind in KINDS
    }
    assert found["apache"] == (ResponseCode.SUCCESS, "0")  # the queue's min, not the commit 5
    assert found["rmq"] == found["apache"]


def test_offsets_committed_to_a_slave_are_kept(slaves: dict[str, Broker]) -> None:
    """UPDATE_CONSUMER_OFFSET is served by a slave (a consumer whose master is gone commits
    there) and QUERY_CONSUMER_OFFSET reads it back."""
    update = UpdateConsumerOffsetRequestHeader(
        consumer_group=GROUP, topic=TOPIC, queue_id=1, commit_offset=0
    )
    updates = _both(slaves, RequestCode.UPDATE_CONSUMER_OFFSET, update)
    assert updates["apache"].code == ResponseCode.SUCCESS
    assert _answer(updates["rmq"]) == _answer(updates["apache"])
    query = QueryConsumerOffsetRequestHeader(consumer_group=GROUP, topic=TOPIC, queue_id=1)
    answers = _both(slaves, RequestCode.QUERY_CONSUMER_OFFSET, query)
    assert answers["apache"].code == ResponseCode.SUCCESS
    found = {
        kind: (
            answers[kind].code,
            answers[kind].read_header(QueryConsumerOffsetResponseHeader).offset,
        )
        for kind in KINDS
    }
    assert found["rmq"] == found["apache"] == (ResponseCode.SUCCESS, 0)


def test_send_back_refused(slaves: dict[str, Broker]) -> None:
    header = ConsumerSendMsgBackRequestHeader(
        offset=0, group=GROUP, delay_level=0, origin_msg_id=None, origin_topic=TOPIC
    )
    answers = _both(slaves, RequestCode.CONSUMER_SEND_MSG_BACK, header)
    assert answers["apache"].code == ResponseCode.SYSTEM_ERROR
    assert _answer(answers["rmq"]) == _answer(answers["apache"])


def test_end_transaction_refused(slaves: dict[str, Broker]) -> None:
    header = EndTransactionRequestHeader(
        producer_group="RawSlaveProducer",
        tran_state_table_offset=0,
        commit_log_offset=0,
        commit_or_rollback=8,  # TRANSACTION_COMMIT_TYPE
        msg_id="0A00000100002A9F0000000000000000",
    )
    answers = _both(slaves, RequestCode.END_TRANSACTION, header)
    assert answers["apache"].code == ResponseCode.SLAVE_NOT_AVAILABLE
    assert _answer(answers["rmq"]) == _answer(answers["apache"])


def test_topic_change_refused(slaves: dict[str, Broker]) -> None:
    header = CreateTopicRequestHeader(
        topic="RawSlaveCreated",
        default_topic="TBW102",
        read_queue_nums=4,
        write_queue_nums=4,
        perm=6,
        topic_filter_type="SINGLE_TAG",
    )
    answers = _both(slaves, RequestCode.UPDATE_AND_CREATE_TOPIC, header)
    assert answers["apache"].code == ResponseCode.SYSTEM_ERROR
    assert _answer(answers["rmq"]) == _answer(answers["apache"])


# -- a master with slaveReadEnable: suggestWhichBrokerId ---------------------------------------

MASTER_PROPS: dict[str, object] = {
    **BROKER_PROPS,
    "slaveReadEnable": True,
    "accessMessageInMemoryMaxRatio": 0,
}
"""Every consumer that has not read to the commitlog's end counts as lagging past the share
of memory (0 %), so the master points it at a slave."""
SLOW_GROUP = "RawSlaveSlowGroup"
"""whichBrokerWhenConsumeSlowly = 2."""


@pytest.fixture(scope="module")
def masters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Broker]]:
    with _brokers(tmp_path_factory, "master", MASTER_PROPS) as found:
        slow = SubscriptionGroupConfig(group_name=SLOW_GROUP, which_broker_when_consume_slowly=2)
        for master in found.values():
            for n in range(3):
                answer = master.ask(RequestCode.SEND_MESSAGE_V2, _send_header(TOPIC), b"m%d" % n)
                assert answer.code == ResponseCode.SUCCESS, answer.remark
            answer = master.ask(
                RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, slow.encode()
            )
            assert answer.code == ResponseCode.SUCCESS, answer.remark
        yield found


@pytest.mark.parametrize(
    ("group", "offset", "suggested"),
    [
        (GROUP, 0, 1),  # behind: whichBrokerWhenConsumeSlowly, 1 by default
        (SLOW_GROUP, 0, 2),
        (GROUP, 2, 1),  # the last message: the commitlog still ends past its start
        (GROUP, 3, 0),  # nothing read (PULL_NOT_FOUND): the group's brokerId, the master
    ],
)
def test_master_suggests_a_slave_to_a_lagging_consumer(
    masters: dict[str, Broker], group: str, offset: int, suggested: int
) -> None:
    header = _pull_header(offset)
    header.consumer_group = group
    header.max_msg_nums = 1
    answers = _both(masters, RequestCode.PULL_MESSAGE, header)
    _, _, apache = _pull_answer(answers["apache"])
    assert apache.suggest_which_broker_id == suggested
    assert _pull_answer(answers["rmq"]) == _pull_answer(answers["apache"])
