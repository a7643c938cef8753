"""The shop's business operations: placing an order (the case study's confirmOrder), paying
it, and what each service does with the messages it consumes.

The case study's order service calls the coupon, goods and user services over RPC; here the
order command calls their functions on their own databases directly, which keeps the
messaging part, the subject of the example, the same.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from shopdb import (
    MONEY_PAID,
    MONEY_REFUND,
    ORDER_CANCEL,
    ORDER_CONFIRM,
    ORDER_NO_CONFIRM,
    PAY_NO_PAY,
    PAY_PAID,
    PAY_PAYING,
    ShopError,
    connect,
    now_ms,
    transaction,
)

ORDER_TOPIC = "orderTopic"
PAY_TOPIC = "payTopic"
TAG_CANCEL = "order_cancel"
TAG_TIMEOUT = "order_timeout"
TAG_PAID = "paid"

STEPS = ("check", "save", "goods", "coupon", "money", "confirm")


@dataclass
class CancelOrder:
    """The body of an order_cancel message (the case study's CancelOrderMQ, its JSON field
    names)."""

    orderId: str
    couponId: int | None
    goodsId: int
    goodsNumber: int
    userId: int
    userMoney: int

    def body(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode()

    @classmethod
    def parse(cls, body: bytes) -> CancelOrder:
        return cls(**json.loads(body))


def next_id() -> str:
    """A snowflake-style id: milliseconds, then the process id and a counter's low bits."""
    next_id.counter = (getattr(next_id, "counter", 0) + 1) % 4096  # type: ignore[attr-defined]
    return str((now_ms() << 22) | ((os.getpid() & 0x3FF) << 12) | next_id.counter)  # type: ignore[attr-defined]


# --- placing an order -------------------------------------------------------------------------


@dataclass
class OrderRequest:
    user_id: int
    goods_id: int
    goods_number: int
    coupon_id: int | None
    money_paid: int


def place_order(root: Path, request: OrderRequest, fail_at: str | None) -> CancelOrder:
    """Run confirmOrder's steps on the services' databases; returns the order's CancelOrder
    (what a cancel message would carry).  Raises ShopError, with the order saved and
    partly applied, when a step fails (or when `fail_at` names the step to fail after): the
    caller then sends the cancel message that rolls the other services back."""
    goods_db, coupon_db, user_db, order_db = (
        connect(root, s) for s in ("goods", "coupon", "user", "order")
    )
    order_id = next_id()
    cancel = CancelOrder(
        order_id,
        request.coupon_id,
        request.goods_id,
        request.goods_number,
        request.user_id,
        request.money_paid,
    )

    def step_done(step: str) -> None:
        if fail_at == step:
            raise ShopError(f"order {order_id}: failing after step {step!r} as asked")

    # checkOrder: the goods and the user exist, the stock is enough
    goods = goods_db.execute(
        "SELECT * FROM goods WHERE goods_id = ?", (request.goods_id,)
    ).fetchone()
    if goods is None:
        raise ShopError(f"no goods {request.goods_id}")
    user = user_db.execute("SELECT 1 FROM users WHERE user_id = ?", (request.user_id,)).fetchone()
    if user is None:
        raise ShopError(f"no user {request.user_id}")
    if request.goods_number <= 0 or request.goods_number > goods["goods_number"]:
        raise ShopError(f"goods {request.goods_id}: not enough stock")
    step_done("check")
    # savePreOrder: the amounts, the coupon and the balance paid, status NO_CONFIRM
    order_amount = goods["goods_price"] * request.goods_number
    coupon_paid = _coupon_price(coupon_db, request)
    if request.money_paid < 0 or request.money_paid > order_amount - coupon_paid:
        raise ShopError(f"money paid {request.money_paid} out of range")
    with transaction(order_db):
        order_db.execute(
            "INSERT INTO orders (order_id, user_id, order_status, pay_status, goods_id,"
            " goods_number, goods_price, order_amount, coupon_id, coupon_paid, money_paid,"
            " pay_amount, add_time) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                order_id,
                request.user_id,
                ORDER_NO_CONFIRM,
                PAY_NO_PAY,
                request.goods_id,
                request.goods_number,
                goods["goods_price"],
                order_amount,
                request.coupon_id,
                coupon_paid,
                request.money_paid,
                order_amount - coupon_paid - request.money_paid,
                now_ms(),
            ),
        )
    step_done("save")
    try:
        _reduce_goods(goods_db, order_id, request)
        step_done("goods")
        _use_coupon(coupon_db, order_id, request)
        step_done("coupon")
        _pay_money(user_db, order_id, request)
        step_done("money")
        with transaction(order_db):
            order_db.execute(
                "UPDATE orders SET order_status = ?, confirm_time = ? WHERE order_id = ?",
                (ORDER_CONFIRM, now_ms(), order_id),
            )
        step_done("confirm")
    except ShopError as exc:
        exc.cancel = cancel  # type: ignore[attr-defined]
        raise
    return cancel


def _coupon_price(coupon_db: sqlite3.Connection, request: OrderRequest) -> int:
    if request.coupon_id is None:
        return 0
    coupon = coupon_db.execute(
        "SELECT * FROM coupons WHERE coupon_id = ?", (request.coupon_id,)
    ).fetchone()
    if coupon is None or coupon["user_id"] != request.user_id:
        raise ShopError(f"no coupon {request.coupon_id} for user {request.user_id}")
    if coupon["is_used"]:
        raise ShopError(f"coupon {request.coupon_id} is used")
    return int(coupon["coupon_price"])


def _reduce_goods(conn: sqlite3.Connection, order_id: str, request: OrderRequest) -> None:
    with transaction(conn):
        changed = conn.execute(
            "UPDATE goods SET goods_number = goods_number - ?"
            " WHERE goods_id = ? AND goods_number >= ?",
            (request.goods_number, request.goods_id, request.goods_number),
        ).rowcount
        if changed != 1:
            raise ShopError(f"goods {request.goods_id}: not enough stock")
        conn.execute(
            "INSERT INTO goods_number_log VALUES (?, ?, ?, ?)",
            (request.goods_id, order_id, -request.goods_number, now_ms()),
        )


def _use_coupon(conn: sqlite3.Connection, order_id: str, request: OrderRequest) -> None:
    if request.coupon_id is None:
        return
    with transaction(conn):
        changed = conn.execute(
            "UPDATE coupons SET is_used = 1, order_id = ?, used_time = ?"
            " WHERE coupon_id = ? AND is_used = 0",
            (order_id, now_ms(), request.coupon_id),
        ).rowcount
        if changed != 1:
            raise ShopError(f"coupon {request.coupon_id} is used")


def _pay_money(conn: sqlite3.Connection, order_id: str, request: OrderRequest) -> None:
    if request.money_paid == 0:
        return
    with transaction(conn):
        changed = conn.execute(
            "UPDATE users SET user_money = user_money - ? WHERE user_id = ? AND user_money >= ?",
            (request.money_paid, request.user_id, request.money_paid),
        ).rowcount
        if changed != 1:
            raise ShopError(f"user {request.user_id}: not enough money")
        conn.execute(
            "INSERT INTO user_money_log VALUES (?, ?, ?, ?, ?)",
            (request.user_id, order_id, MONEY_PAID, request.money_paid, now_ms()),
        )


# --- paying -----------------------------------------------------------------------------------


def new_payment(root: Path, order_id: str) -> dict[str, object]:
    """Start paying a confirmed, unpaid order: its pay status becomes PAYING (so its time-out
    no longer cancels it) and a payment row is created (is_paid 1: not yet).  Returns the
    body of its `paid` message."""
    with transaction(connect(root, "order")) as conn:
        order = conn.execute("SELECT * FROM orders WHERE order_id = ?", (order_id,)).fetchone()
        if order is None:
            raise ShopError(f"no order {order_id}")
        changed = conn.execute(
            "UPDATE orders SET pay_status = ?"
            " WHERE order_id = ? AND order_status = ? AND pay_status = ?",
            (PAY_PAYING, order_id, ORDER_CONFIRM, PAY_NO_PAY),
        ).rowcount
        if changed != 1:
            raise ShopError(
                f"order {order_id} cannot be paid (order status {order['order_status']},"
                f" pay status {order['pay_status']})"
            )
    pay_id = next_id()
    with transaction(connect(root, "pay")) as conn:
        conn.execute("INSERT INTO pay VALUES (?, ?, ?, 1)", (pay_id, order_id, order["pay_amount"]))
    return {
        "payId": pay_id,
        "orderId": order_id,
        "userId": order["user_id"],
        "payAmount": order["pay_amount"],
    }


def mark_paid(root: Path, pay_id: str) -> None:
    """The pay service's local transaction: the payment is recorded as made (is_paid 2)."""
    with transaction(connect(root, "pay")) as conn:
        if conn.execute("UPDATE pay SET is_paid = 2 WHERE pay_id = ?", (pay_id,)).rowcount != 1:
            raise ShopError(f"no payment {pay_id}")


def payment_state(root: Path, pay_id: str) -> int | None:
    """is_paid of a payment (None: no such payment): what the check-back answers from."""
    row = (
        connect(root, "pay")
        .execute("SELECT is_paid FROM pay WHERE pay_id = ?", (pay_id,))
        .fetchone()
    )
    return None if row is None else int(row["is_paid"])


# --- consumers' changes -----------------------------------------------------------------------


def undo_goods(conn: sqlite3.Connection, cancel: CancelOrder) -> None:
    """Give an order's stock back, if it was taken and not yet given back."""
    taken = conn.execute(
        "SELECT COALESCE(SUM(goods_number), 0) FROM goods_number_log WHERE order_id = ?",
        (cancel.orderId,),
    ).fetchone()[0]
    if taken < 0:
        conn.execute(
            "UPDATE goods SET goods_number = goods_number + ? WHERE goods_id = ?",
            (-taken, cancel.goodsId),
        )
        conn.execute(
            "INSERT INTO goods_number_log VALUES (?, ?, ?, ?)",
            (cancel.goodsId, cancel.orderId, -taken, now_ms()),
        )


def undo_coupon(conn: sqlite3.Connection, cancel: CancelOrder) -> None:
    conn.execute(
        "UPDATE coupons SET is_used = 0, order_id = NULL, used_time = NULL"
        " WHERE coupon_id = ? AND order_id = ?",
        (cancel.couponId, cancel.orderId),
    )


def undo_money(conn: sqlite3.Connection, cancel: CancelOrder) -> None:
    """Refund the balance an order used: only after a payment row, and only once."""
    rows = {
        row["money_log_type"]: row["use_money"]
        for row in conn.execute(
            "SELECT money_log_type, use_money FROM user_money_log"
            " WHERE user_id = ? AND order_id = ?",
            (cancel.userId, cancel.orderId),
        )
    }
    if MONEY_PAID in rows and MONEY_REFUND not in rows:
        conn.execute(
            "UPDATE users SET user_money = user_money + ? WHERE user_id = ?",
            (rows[MONEY_PAID], cancel.userId),
        )
        conn.execute(
            "INSERT INTO user_money_log VALUES (?, ?, ?, ?, ?)",
            (cancel.userId, cancel.orderId, MONEY_REFUND, rows[MONEY_PAID], now_ms()),
        )


def cancel_order(conn: sqlite3.Connection, cancel: CancelOrder) -> None:
    conn.execute(
        "UPDATE orders SET order_status = ? WHERE order_id = ?", (ORDER_CANCEL, cancel.orderId)
    )


def order_paid(conn: sqlite3.Connection, order_id: str) -> None:
    conn.execute(
        "UPDATE orders SET pay_status = ?, pay_time = ? WHERE order_id = ?",
        (PAY_PAID, now_ms(), order_id),
    )


def add_score(conn: sqlite3.Connection, user_id: int, pay_amount: int) -> None:
    """One point per 10 paid."""
    conn.execute(
        "UPDATE users SET user_score = user_score + ? WHERE user_id = ?",
        (pay_amount // 10, user_id),
    )


def expire(conn: sqlite3.Connection, order_id: str) -> bool:
    """An order's time-out came due: cancel it if it is confirmed and nobody started paying
    (in one statement, so a payment starting at the same moment either wins or is refused).
    True when the order is now cancelled and unpaid, by this call or an earlier one: the
    time-out then sends (again: the consumers skip copies) the cancel message."""
    with transaction(conn):
        conn.execute(
            "UPDATE orders SET order_status = ?"
            " WHERE order_id = ? AND order_status = ? AND pay_status = ?",
            (ORDER_CANCEL, order_id, ORDER_CONFIRM, PAY_NO_PAY),
        )
        row = conn.execute(
            "SELECT order_status, pay_status FROM orders WHERE order_id = ?", (order_id,)
        ).fetchone()
    return row is not None and (row["order_status"], row["pay_status"]) == (
        ORDER_CANCEL,
        PAY_NO_PAY,
    )


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll `check` until it holds or `timeout` seconds pass (then ShopError)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise ShopError(f"timed out waiting for {what}")
        time.sleep(0.1)
