"""The trace record codec (rmq.common.trace) against bodies Apache's Java client 4.9.8 wrote
(captured from RMQ_SYS_TRACE_TOPIC after TraceScenarios.pubSub: one traced send, one traced
consumption), and round trips of every record type."""

from __future__ import annotations

import pytest

from rmq.common.trace import (
    ConsumeReturnType,
    TraceBean,
    TraceContext,
    TraceMessageType,
    TraceType,
    decode_trace_data,
    encode_context,
    trace_views,
)

MSG_ID = "C000020242A04E0E2F2A8142F6660000"
REQUEST_ID = "C000020242A04E0E2F2A8142F6B20002"
JAVA_PUB = (
    "Pub\x011795659849319\x01DefaultRegion\x01CG-cap-producer\x01CapT\x01"
    f"{MSG_ID}\x01TagA\x01key-0\x01127.0.0.1:35289\x016\x0157\x010\x01"
    "7F000001000089D90000000000000000\x01true\x02"
)
JAVA_SUB = (
    f"SubBefore\x011795659849394\x01null\x01CG-cap\x01{REQUEST_ID}\x01{MSG_ID}\x010\x01key-0\x02"
    f"SubAfter\x01{REQUEST_ID}\x01{MSG_ID}\x011\x01true\x01key-0\x010\x011795659849395\x01"
    "CG-cap\x02"
)
"""The two trace message bodies, as stored (the trace messages' KEYS: `<MSG_ID> key-0`)."""


def test_java_pub_record_decodes_and_encodes_back() -> None:
    (ctx,) = decode_trace_data(JAVA_PUB)
    assert ctx.trace_type is TraceType.Pub
    assert (ctx.timestamp, ctx.region_id, ctx.group) == (
        1795659849319,
        "DefaultRegion",
        "CG-cap-producer",
    )
    assert (ctx.cost_time, ctx.success) == (57, True)
    (bean,) = ctx.beans
    assert (bean.topic, bean.msg_id, bean.tags, bean.keys) == ("CapT", MSG_ID, "TagA", "key-0")
    assert (bean.store_host, bean.body_length) == ("127.0.0.1:35289", 6)
    assert bean.msg_type is TraceMessageType.Normal_Msg
    assert bean.offset_msg_id == "7F000001000089D90000000000000000"
    assert encode_context(ctx) == (JAVA_PUB, [MSG_ID, "key-0"])


def test_java_sub_records_decode_and_encode_back() -> None:
    before, after = decode_trace_data(JAVA_SUB)
    assert before.trace_type is TraceType.SubBefore
    assert (before.timestamp, before.region_id, before.group) == (1795659849394, "null", "CG-cap")
    assert before.request_id == after.request_id == REQUEST_ID
    assert (before.beans[0].msg_id, before.beans[0].retry_times) == (MSG_ID, 0)
    assert after.trace_type is TraceType.SubAfter
    assert (after.cost_time, after.success, after.context_code) == (1, True, 0)
    assert (after.timestamp, after.group, after.beans[0].keys) == (1795659849395, "CG-cap", "key-0")
    data = encode_context(before)[0] + encode_context(after)[0]
    assert data == JAVA_SUB


def test_views_of_one_message_are_mqadmins_rows() -> None:
    views = trace_views(MSG_ID, (JAVA_PUB + JAVA_SUB).encode(), "127.0.0.1")
    assert [(v.msg_type, v.group, v.cost_time, v.status) for v in views] == [
        ("Pub", "CG-cap-producer", 57, "success"),
        ("SubBefore", "CG-cap", 0, "success"),
        ("SubAfter", "CG-cap", 1, "success"),
    ]
    assert {v.client_host for v in views} == {"127.0.0.1"}
    assert views[0].offset_msg_id == "7F000001000089D90000000000000000"
    assert trace_views("OTHER", JAVA_PUB.encode(), "127.0.0.1") == []


def test_nulls_and_a_batch_of_sub_records() -> None:
    beans = [TraceBean(msg_id="A", keys=None, retry_times=2), TraceBean(msg_id="B", keys="k1 k2")]
    before = TraceContext(
        TraceType.SubBefore, timestamp=5, region_id=None, group="G", request_id="R", beans=beans
    )
    data, keys = encode_context(before)
    assert data == "SubBefore\x015\x01null\x01G\x01R\x01A\x012\x01null\x02" + (
        "SubBefore\x015\x01null\x01G\x01R\x01B\x010\x01k1 k2\x02"
    )
    assert keys == ["A", "B", "k1", "k2"]
    first, second = decode_trace_data(data)
    assert (first.beans[0].msg_id, first.beans[0].keys, first.beans[0].retry_times) == (
        "A",
        "null",
        2,
    )
    assert second.beans[0].keys == "k1 k2"


def test_sub_after_failed_and_the_cloud_form() -> None:
    after = TraceContext(
        TraceType.SubAfter,
        timestamp=9,
        group="G",
        request_id="R",
        cost_time=3,
        success=False,
        context_code=ConsumeReturnType.FAILED,
        beans=[TraceBean(msg_id="A", keys="k")],
    )
    assert encode_context(after)[0] == "SubAfter\x01R\x01A\x013\x01false\x01k\x014\x019\x01G\x02"
    after.cloud = True
    cloud = encode_context(after)[0]
    assert cloud == "SubAfter\x01R\x01A\x013\x01false\x01k\x014\x01"
    (decoded,) = decode_trace_data(cloud)
    assert (decoded.success, decoded.context_code, decoded.timestamp, decoded.group) == (
        False,
        4,
        0,
        "",
    )


def test_pub_forms_of_older_and_newer_clients() -> None:
    head = "Pub\x011\x01R\x01G\x01T\x01M\x01tag\x01key\x01h:1\x0110\x012\x013\x01"
    (old,) = decode_trace_data(head + "false\x02")
    assert (old.success, old.beans[0].offset_msg_id) == (False, "")
    assert old.beans[0].msg_type is TraceMessageType.Delay_Msg
    (new,) = decode_trace_data(head + "OFF\x01true\x0110.0.0.1\x02")
    assert (new.success, new.beans[0].offset_msg_id, new.beans[0].client_host) == (
        True,
        "OFF",
        "10.0.0.1",
    )


def test_end_transaction_round_trip() -> None:
    bean = TraceBean(
        topic="T",
        msg_id="M",
        tags=None,
        keys="k",
        store_host="h:1",
        msg_type=TraceMessageType.Trans_Msg_Half,
        transaction_id="X",
        transaction_state="COMMIT_MESSAGE",
        from_transaction_check=True,
    )
    ctx = TraceContext(
        TraceType.EndTransaction, timestamp=7, region_id="R", group="G", beans=[bean]
    )
    data, _ = encode_context(ctx)
    assert data == "EndTransaction\x017\x01R\x01G\x01T\x01M\x01null\x01k\x01h:1\x011\x01X\x01" + (
        "COMMIT_MESSAGE\x01true\x02"
    )
    (decoded,) = decode_trace_data(data)
    assert decoded.beans[0].transaction_state == "COMMIT_MESSAGE"
    assert decoded.beans[0].from_transaction_check is True


def test_unknown_types_are_skipped_and_broken_records_refused() -> None:
    assert decode_trace_data("") == []
    assert decode_trace_data("Other\x011\x02") == []
    with pytest.raises(ValueError, match="unreadable trace record"):
        decode_trace_data("Pub\x01not-a-number\x02")
