"""What the streaming pieces make of their options, without Spark running: the followed
export job (``rmq spark-export --follow``), the stream reader's option checks, a sink row
as a message, and the ACL options never shown in a ``repr``.
"""

from __future__ import annotations

from typing import Any

import pytest

from rmq.spark.access import ClientAccess
from rmq.spark.job import DEFAULT_TRIGGER_SECONDS, ExportJob

FOLLOW: dict[str, Any] = {
    "out": "/tmp/out",
    "namesrv": "127.0.0.1:9876",
    "topics": ("T",),
    "follow": True,
    "checkpoint": "/tmp/ckpt",
}


def test_a_followed_job_reads_a_stream_from_earliest_by_default() -> None:
    job = ExportJob(**FOLLOW, max_offsets_per_trigger=50)
    assert job.trigger == DEFAULT_TRIGGER_SECONDS
    assert job.reader_options() == {
        "topics": "T",
        "namesrv": "127.0.0.1:9876",
        "startingOffsets": "earliest",
        "maxOffsetsPerTrigger": "50",
    }
    since = ExportJob(**FOLLOW, since=1700000000000, trigger_seconds=0)
    assert since.trigger == 0
    assert since.reader_options()["startingTimestamp"] == "1700000000000"
    assert "startingOffsets" not in since.reader_options()


@pytest.mark.parametrize(
    ("changes", "complaint"),
    [
        ({"checkpoint": None}, "needs a checkpoint"),
        ({"until": 5}, "no end"),
        ({"ending_offsets": "latest"}, "no end"),
        ({"overwrite": True}, "drop --overwrite"),
        ({"since": 5, "starting_offsets": "latest"}, "not both"),
        ({"max_offsets_per_trigger": 0}, "1 or more"),
        ({"trigger_seconds": -1.0}, "negative"),
        ({"namesrv": None, "store_dirs": ("/s",)}, "running cluster"),
    ],
)
def test_a_followed_job_refuses_what_does_not_apply(
    changes: dict[str, Any], complaint: str
) -> None:
    with pytest.raises(ValueError, match=complaint):
        ExportJob(**{**FOLLOW, **changes})


def test_stream_settings_need_follow() -> None:
    with pytest.raises(ValueError, match="--follow only"):
        ExportJob(out="/o", namesrv="n:1", topics=("T",), checkpoint="/c")


def test_access_options_pass_through_and_the_secret_stays_out_of_reprs() -> None:
    access = ClientAccess("AK", "SECRET-1", "TOKEN-1", tls=True)
    job = ExportJob(out="/o", namesrv="n:1", topics=("T",), access=access)
    options = job.reader_options()
    assert options["accessKey"] == "AK" and options["secretKey"] == "SECRET-1"
    assert options["securityToken"] == "TOKEN-1" and options["tls"] == "true"
    assert ClientAccess.of(options) == access
    assert "SECRET" not in repr(job) and "TOKEN" not in repr(job)
    with pytest.raises(ValueError, match="both"):
        ClientAccess.of({"accessKey": "AK"})


def test_the_stream_reader_checks_its_options() -> None:
    pytest.importorskip("pyspark")
    from rmq.spark.stream import StreamReader

    base = {"namesrv": "127.0.0.1:9876", "topic": "A,B", "topics": "C"}
    reader = StreamReader({**base, "maxOffsetsPerTrigger": "10", "minPartitions": "4"})
    assert reader.topics == ["A", "B", "C"]
    assert (reader.max_rows, reader.min_partitions) == (10, 4)
    assert reader.starting.default == -1  # latest
    for bad, complaint in (
        ({"endingOffsets": "latest"}, "batch reads"),
        ({"maxOffsetsPerTrigger": "0"}, "1 or more"),
        ({"startingOffsets": "earliest", "startingTimestamp": "5"}, "not both"),
        ({"namesrv": ""}, "namesrv"),
        ({"topic": "", "topics": ""}, "topic"),
    ):
        with pytest.raises(ValueError, match=complaint):
            StreamReader({**base, **bad})


def test_a_sink_row_becomes_a_message_with_its_row_key() -> None:
    pytest.importorskip("pyspark")
    from rmq.spark.sink import ROW_KEY_PROPERTY, message_of

    message = message_of(
        {
            "body": bytearray(b"hi"),
            "keys": ["a", None, "b"],
            "tags": "T1",
            "properties": {"city": "Zürich", "UNIQ_KEY": "x", "MIN_OFFSET": "0", "none": None},
        },
        "Default",
        "q:3:1:7",
    )
    assert (message.topic, message.body, message.tags) == ("Default", b"hi", "T1")
    assert message.keys_text == "a b"
    assert message.properties == {"city": "Zürich", ROW_KEY_PROPERTY: "q:3:1:7"}
    assert message_of({"topic": "Own", "body": "é"}, None, "k").body == "é".encode()
    with pytest.raises(ValueError, match="no topic"):
        message_of({"body": b"x"}, None, "k")
