"""The shop's databases: one SQLite file per service, as each service of the case study owns
its own tables, and the operations the services perform on them.

goods.db   goods (stock) and goods_number_log (one row per change of an order's stock)
coupon.db  coupons
user.db    users (money, score) and user_money_log (pay and refund rows)
order.db   orders
pay.db     payments

Every database also holds `mq_consumer_log`, the idempotency table of the case study: one
row per consumed message, keyed by (msg_tag, msg_key, group_name).  A message whose row says
SUCCESS is a duplicate (RocketMQ delivers at least once) and is skipped.  Because the
business change and the log row are written in one SQLite transaction, a message is applied
exactly once even when the service dies half way: the next delivery finds no row and
applies it again from scratch.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SERVICES = ("goods", "coupon", "user", "order", "pay")

# order_status and pay_status as the case study numbers them
ORDER_NO_CONFIRM, ORDER_CONFIRM, ORDER_CANCEL = 0, 1, 2
PAY_NO_PAY, PAY_PAYING, PAY_PAID = 0, 1, 2
# user_money_log.money_log_type
MONEY_PAID, MONEY_REFUND = 1, 2
# mq_consumer_log.consumer_status
CONSUME_SUCCESS, CONSUME_FAIL = 1, 2

_CONSUMER_LOG = """
CREATE TABLE mq_consumer_log (
    msg_tag TEXT NOT NULL, msg_key TEXT NOT NULL, group_name TEXT NOT NULL,
    msg_id TEXT, msg_body TEXT, consumer_status INTEGER NOT NULL,
    consumer_times INTEGER NOT NULL DEFAULT 0, duplicates INTEGER NOT NULL DEFAULT 0,
    consumer_timestamp INTEGER, remark TEXT,
    PRIMARY KEY (msg_tag, msg_key, group_name))
"""

_SCHEMAS = {
    "goods": [
        """CREATE TABLE goods (goods_id INTEGER PRIMARY KEY, goods_name TEXT NOT NULL,
           goods_number INTEGER NOT NULL, goods_price INTEGER NOT NULL)""",
        """CREATE TABLE goods_number_log (goods_id INTEGER NOT NULL, order_id TEXT NOT NULL,
           goods_number INTEGER NOT NULL, log_time INTEGER NOT NULL)""",
    ],
    "coupon": [
        """CREATE TABLE coupons (coupon_id INTEGER PRIMARY KEY, coupon_price INTEGER NOT NULL,
           user_id INTEGER NOT NULL, order_id TEXT, is_used INTEGER NOT NULL DEFAULT 0,
           used_time INTEGER)""",
    ],
    "user": [
        """CREATE TABLE users (user_id INTEGER PRIMARY KEY, user_name TEXT NOT NULL,
           user_money INTEGER NOT NULL, user_score INTEGER NOT NULL DEFAULT 0)""",
        """CREATE TABLE user_money_log (user_id INTEGER NOT NULL, order_id TEXT NOT NULL,
           money_log_type INTEGER NOT NULL, use_money INTEGER NOT NULL,
           create_time INTEGER NOT NULL, PRIMARY KEY (user_id, order_id, money_log_type))""",
    ],
    "order": [
        """CREATE TABLE orders (order_id TEXT PRIMARY KEY, user_id INTEGER NOT NULL,
           order_status INTEGER NOT NULL, pay_status INTEGER NOT NULL,
           goods_id INTEGER NOT NULL, goods_number INTEGER NOT NULL,
           goods_price INTEGER NOT NULL, order_amount INTEGER NOT NULL,
           coupon_id INTEGER, coupon_paid INTEGER NOT NULL, money_paid INTEGER NOT NULL,
           pay_amount INTEGER NOT NULL, add_time INTEGER NOT NULL, confirm_time INTEGER,
           pay_time INTEGER)""",
    ],
    "pay": [
        """CREATE TABLE pay (pay_id TEXT PRIMARY KEY, order_id TEXT NOT NULL,
           pay_amount INTEGER NOT NULL, is_paid INTEGER NOT NULL)""",
    ],
}

SEED: dict[str, list[tuple[str, tuple[object, ...]]]] = {
    "goods": [("INSERT INTO goods VALUES (?, ?, ?, ?)", (1, "phone", 10, 1000))],
    "coupon": [
        ("INSERT INTO coupons (coupon_id, coupon_price, user_id) VALUES (?, ?, ?)", (c, 100, 1))
        for c in (1, 2, 3)
    ],
    "user": [("INSERT INTO users VALUES (?, ?, ?, ?)", (1, "alice", 5000, 0))],
}


class ShopError(Exception):
    """A business rule refused the operation (the case study's ShopCode)."""


def now_ms() -> int:
    return int(time.time() * 1000)


def connect(root: Path, service: str) -> sqlite3.Connection:
    """A connection to `service`'s database; autocommit, transactions opened explicitly."""
    conn = sqlite3.connect(root / f"{service}.db", timeout=30.0, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode=WAL")
    return conn


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def setup(root: Path) -> None:
    """Create every service's database with the case study's starting data."""
    root.mkdir(parents=True, exist_ok=True)
    for service in SERVICES:
        path = root / f"{service}.db"
        if path.exists():
            raise ShopError(f"{path} exists: the shop is already set up")
        with connect(root, service) as conn:
            for statement in (*_SCHEMAS[service], _CONSUMER_LOG):
                conn.execute(statement)
            for statement, values in SEED.get(service, []):
                conn.execute(statement, values)


def consume_once(
    conn: sqlite3.Connection,
    group: str,
    tag: str,
    key: str,
    msg_id: str,
    body: str,
    apply: Callable[[sqlite3.Connection], None],
) -> bool:
    """Apply a consumed message once: False (and a duplicate counted) when the consumer log
    already has it as SUCCESS, else `apply` and the SUCCESS row in one transaction.

    When `apply` raises, its changes are rolled back, the failure is counted in the log (as
    FAIL, with the number of attempts) and the exception propagates.
    """
    try:
        with transaction(conn):
            row = conn.execute(
                "SELECT consumer_status FROM mq_consumer_log"
                " WHERE msg_tag = ? AND msg_key = ? AND group_name = ?",
                (tag, key, group),
            ).fetchone()
            if row is not None and row["consumer_status"] == CONSUME_SUCCESS:
                conn.execute(
                    "UPDATE mq_consumer_log SET duplicates = duplicates + 1"
                    " WHERE msg_tag = ? AND msg_key = ? AND group_name = ?",
                    (tag, key, group),
                )
                return False
            apply(conn)
            _log(conn, group, tag, key, msg_id, body, CONSUME_SUCCESS, None)
            return True
    except ShopError as exc:
        with transaction(conn):
            _log(conn, group, tag, key, msg_id, body, CONSUME_FAIL, str(exc))
        raise


def _log(
    conn: sqlite3.Connection,
    group: str,
    tag: str,
    key: str,
    msg_id: str,
    body: str,
    status: int,
    remark: str | None,
) -> None:
    conn.execute(
        "INSERT INTO mq_consumer_log (msg_tag, msg_key, group_name, msg_id, msg_body,"
        " consumer_status, consumer_times, consumer_timestamp, remark)"
        " VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?)"
        " ON CONFLICT (msg_tag, msg_key, group_name) DO UPDATE SET"
        " consumer_status = excluded.consumer_status, consumer_times = consumer_times + 1,"
        " consumer_timestamp = excluded.consumer_timestamp, remark = excluded.remark,"
        " msg_id = excluded.msg_id",
        (tag, key, group, msg_id, body, status, now_ms(), remark),
    )


def snapshot(root: Path) -> dict[str, Any]:
    """Every table of every service as lists of rows (what `shop.py show` prints)."""
    state: dict[str, Any] = {}
    for service in SERVICES:
        with connect(root, service) as conn:
            tables = [
                row["name"]
                for row in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
                )
            ]
            state[service] = {
                table: [dict(row) for row in conn.execute(f"SELECT * FROM {table}")]
                for table in tables
            }
    return state


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
