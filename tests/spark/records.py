"""What the Spark tests compare: message records (the CLI.md schema) as
``rmq inspect STORE_DIR export`` writes them, and the same records rebuilt from exported
Spark rows."""

from __future__ import annotations

import base64
import json
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, Row

from rmq.cli.main import run
from tests.specstore import ROLLBACK, SpecStore

Record = dict[str, Any]

COMPRESSED = 0x1  # sysFlag bit 0: the body is zlib-compressed


def stored_records(
    root: Path,
    keep: Callable[[Record], bool] = lambda record: True,
    broker_name: str | None = None,
    *,
    damaged: bool = False,
) -> list[Record]:
    """Every record of the store that ``keep`` accepts, as ``rmq inspect ... export`` gives
    it (NDJSON in commitlog order); it exits 1 when it met ``damaged`` records."""
    with tempfile.TemporaryDirectory() as directory:
        out = Path(directory) / "export.ndjson"
        args = ["inspect", str(root), "export", "--out", str(out)]
        code = run([*args, *(["--broker-name", broker_name] if broker_name else [])])
        assert code == (1 if damaged else 0)
        records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    return [record for record in records if keep(record)]


def _record(row: Row) -> Record:
    body = None if row.body is None else bytes(row.body)
    body_fields: Record
    try:
        body_fields = {"body": None if body is None else body.decode("utf-8")}
    except UnicodeDecodeError:
        assert body is not None
        body_fields = {"body": base64.b64encode(body).decode("ascii"), "bodyEncoding": "base64"}
    return {
        "topic": row.topic,
        "brokerName": row.brokerName,
        "queueId": row.queueId,
        "queueOffset": row.queueOffset,
        "commitLogOffset": row.commitLogOffset,
        "msgId": row.msgId,
        "offsetMsgId": row.offsetMsgId,
        "tags": row.tags,
        "keys": list(row["keys"]),
        "properties": dict(row.properties),
        **body_fields,
        "bodyCrc": row.bodyCrc,
        "flag": row.flag,
        "sysFlag": row.sysFlag,
        "bornTimestamp": row.bornMillis,
        "storeTimestamp": row.storeMillis,
        "bornHost": row.bornHost,
        "storeHost": row.storeHost,
        "reconsumeTimes": row.reconsumeTimes,
        "preparedTransactionOffset": row.preparedTransactionOffset,
    }


def exported_records(df: DataFrame) -> list[Record]:
    """The rows of ``df`` as message records, ordered by broker name and commitlog offset
    (timestamps converted to epoch milliseconds by Spark itself)."""
    rows = (
        df.selectExpr(
            "*",
            "unix_millis(bornTimestamp) AS bornMillis",
            "unix_millis(storeTimestamp) AS storeMillis",
        )
        .orderBy("brokerName", "commitLogOffset")
        .collect()
    )
    return [_record(row) for row in rows]


def build_spec_store(
    root: Path, *, count: int = 60, file_size: int = 1024, rare_every: int = 5
) -> SpecStore:
    """A multi-file store written byte by byte from the spec layouts: ``count`` records of
    TopicTest and, every ``rare_every``-th, of Rare, on three queues, with text, binary and
    zlib-compressed bodies, keys, tags and unique keys, plus one ROLLBACK record of Rare
    (in no consume queue) in the middle."""
    store = SpecStore(
        root, commitlog_file_size=file_size, cq_file_size=20 * 8, index_entries=count * 4
    )
    for n in range(count):
        topic = "Rare" if n % rare_every == 0 else "TopicTest"
        if n % 7 == 3:
            body, sys_flag = zlib.compress(f"compressed-{n} ".encode() * 20), COMPRESSED
        elif n % 4 == 1:
            body, sys_flag = bytes([0xFF, 0xFE, n % 256]) * 5, 0
        else:
            body, sys_flag = f"body-{n} ü".encode() * (1 + n % 3), 0
        store.append(
            topic,
            n % 3,
            body,
            keys=f"key-{n} shared" if n % 2 else None,
            uniq=f"UNIQ{n:04d}",
            tags="TagA" if n % 3 else None,
            sys_flag=sys_flag,
        )
        if n == count // 2:
            store.append("Rare", 0, b"rolled back", keys="rb", sys_flag=ROLLBACK)
    return store.write()
