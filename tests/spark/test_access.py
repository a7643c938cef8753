"""The ``rocketmq`` source and sink on a broker with ACL on (``aclEnable``, plain_acl.yml):
with ``accessKey`` / ``secretKey`` options the sink sends and the stream reads; without them
the broker refuses; the secret appears neither in query plans nor in a stream's progress.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from tests.procs import RmqProcess, RmqProcesses

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

TOPIC = "SparkAclTopic"
KEYS = ("SparkAclKey", "SparkAclSecretValue42")
PLAIN_ACL = f"""\
globalWhiteRemoteAddresses:
accounts:
  - accessKey: {KEYS[0]}
    secretKey: {KEYS[1]}
    admin: true
"""


@pytest.fixture(scope="module")
def acl_namesrv(module_processes: RmqProcesses) -> Iterator[RmqProcess]:
    home = module_processes.root / "spark-acl-home"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "plain_acl.yml").write_text(PLAIN_ACL, encoding="utf-8")
    namesrv = module_processes.start_namesrv("spark-acl-namesrv")
    broker = module_processes.start_broker(
        "spark-acl-broker",
        namesrv=namesrv,
        props={"aclEnable": True},
        env={"ROCKETMQ_HOME": str(home)},
    )
    yield namesrv
    for process in (broker, namesrv):
        process.stop_cleanly()


def test_keys_as_options_sign_the_sink_and_the_stream_and_stay_hidden(
    spark: SparkSession,
    acl_namesrv: RmqProcess,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    keys = {"accessKey": KEYS[0], "secretKey": KEYS[1]}
    rows = spark.createDataFrame([(f"acl {n}",) for n in range(12)], "body string")
    sink = rows.write.format("rocketmq").mode("append").option("namesrv", acl_namesrv.addr)
    sink = sink.option("topic", TOPIC)
    with pytest.raises(Exception, match=r"sending row \d+ to topic"):
        sink.save()  # unsigned: the broker refuses
    sink.options(**keys).save()

    stream = (
        spark.readStream.format("rocketmq")
        .option("namesrv", acl_namesrv.addr)
        .option("topic", TOPIC)
        .option("startingOffsets", "earliest")
        .options(**keys)
        .load()
    )
    query = (
        stream.selectExpr("CAST(body AS STRING) AS text")
        .writeStream.format("memory")
        .queryName("spark_acl_rows")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    try:
        query.processAllAvailable()
        texts = sorted(row.text for row in spark.table("spark_acl_rows").collect())
        query.explain(extended=True)
        progress = json.dumps([p.json for p in query.recentProgress])
    finally:
        query.stop()
    assert texts == sorted(f"acl {n}" for n in range(12))

    batch = (
        spark.read.format("rocketmq")
        .option("namesrv", acl_namesrv.addr)
        .option("topic", TOPIC)
        .options(**keys)
        .load()
    )
    assert batch.count() == 12
    batch.explain(extended=True)
    shown = capsys.readouterr().out + progress
    assert "== Physical Plan ==" in shown
    assert KEYS[1] not in shown
