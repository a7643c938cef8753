"""The e-commerce case study of the RocketMQ tutorial, on rmq's client.

    shop.py setup DIR                          create the services' databases
    shop.py serve DIR SERVICE [-n NS]          run a service's consumers (goods, coupon, user,
                                               order) until SIGINT/SIGTERM
    shop.py order DIR [-n NS] --user U --goods G --number N [--coupon C] [--money M]
                      [--fail-at STEP] [--cancel-level L]
                                               place an order (prints it as JSON)
    shop.py pay DIR ORDER_ID [-n NS] [--answer-by-check]
                                               pay an order through a transactional message
    shop.py show DIR                           every service's tables as JSON
    shop.py wait DIR --order ID --status S     wait until an order is cancelled / paid
    shop.py wait DIR --key K --tag T --count N [--duplicates]
                                               wait until N services consumed (skipped a
                                               duplicate of) the message with tag T, key K

Messages (topic, tag, keys, who consumes):

* orderTopic / order_cancel / order id: an order that fails half way is rolled back by every
  service: the goods service gives the stock back, the coupon service frees the coupon, the
  user service refunds the balance, the order service marks the order cancelled.  One
  BROADCASTING group, order_orderTopic_cancel_group, so every service gets every message.
* orderTopic / order_timeout / order id: sent with a delay level when an order is
  confirmed; when it comes due and the order is still unpaid, the order service cancels it
  (an order_cancel message).
* payTopic / paid / payment id: a transactional message whose local transaction records the
  payment; only a committed payment is delivered, to the order service (pay status) and
  the user service (points).  The broker's check-back asks the payment table.

Every consumer applies a message once: its service's mq_consumer_log is keyed by (tag, key,
group) (shopdb.consume_once), so a redelivered or re-sent message changes nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import signal
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path

import services as svc
import shopdb

from rmq.client.consumer import (
    ConsumeFromWhere,
    ConsumeStatus,
    MessageExt,
    MessageModel,
    PushConsumer,
)
from rmq.client.message import Message
from rmq.client.producer import Producer

Change = Callable[[sqlite3.Connection], None]
"""What a consumed message changes in its service's database."""

DEFAULT_NAMESRV = os.environ.get("RMQ_NAMESRV", "127.0.0.1:9876")
CANCEL_GROUP = "order_orderTopic_cancel_group"
TIMEOUT_GROUP = "order_orderTopic_timeout_group"
PRODUCER_GROUP = "orderProducerGroup"
PAY_PRODUCER_GROUP = "payProducerGroup"
DEFAULT_CANCEL_LEVEL = 16  # 30m with the broker's default messageDelayLevel


def _emit(record: dict[str, object]) -> None:
    print(json.dumps(record, sort_keys=True), flush=True)


# --- consumers --------------------------------------------------------------------------------


class Service:
    """One service process: its consumers, each applying messages through consume_once."""

    def __init__(self, root: Path, name: str, namesrv: str) -> None:
        self.root = root
        self.name = name
        self.namesrv = namesrv
        self.conn = shopdb.connect(root, name)
        self.consumers: list[PushConsumer] = []
        self.producer: Producer | None = None

    def consumer(self, group: str, topic: str, tags: str, *, broadcast: bool) -> PushConsumer:
        consumer = PushConsumer(
            group,
            self.namesrv,
            instance_name=f"shop-{self.name}",
            message_model=MessageModel.BROADCASTING if broadcast else MessageModel.CLUSTERING,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            offset_store_dir=self.root / "offsets",
        )
        consumer.subscribe(topic, tags)
        self.consumers.append(consumer)
        return consumer

    def apply(self, group: str, msg: MessageExt, change: Change) -> None:
        tag, key = msg.tags or "", " ".join(msg.keys)
        applied = shopdb.consume_once(
            self.conn, group, tag, key, msg.msg_id, msg.body.decode(), change
        )
        _emit({"service": self.name, "tag": tag, "key": key, "applied": applied})

    async def run(self) -> None:
        undo = {
            "goods": svc.undo_goods,
            "coupon": svc.undo_coupon,
            "user": svc.undo_money,
            "order": svc.cancel_order,
        }[self.name]

        async def on_cancel(msgs: list[MessageExt]) -> ConsumeStatus:
            for msg in msgs:
                cancel = svc.CancelOrder.parse(msg.body)
                self.apply(CANCEL_GROUP, msg, functools.partial(undo, cancel=cancel))
            return ConsumeStatus.CONSUME_SUCCESS

        self.consumer(CANCEL_GROUP, svc.ORDER_TOPIC, svc.TAG_CANCEL, broadcast=True)
        self.consumers[-1].register_listener(on_cancel)
        if self.name in ("order", "user"):
            self._pay_consumer()
        if self.name == "order":
            self._timeout_consumer()
        if self.producer is not None:
            await self.producer.start()
        for consumer in self.consumers:
            await consumer.start()
        _emit({"service": self.name, "ready": True})
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        for consumer in self.consumers:
            await consumer.shutdown()
        if self.producer is not None:
            await self.producer.shutdown()

    def _pay_consumer(self) -> None:
        group = f"{self.name}_payTopic_group"

        async def on_paid(msgs: list[MessageExt]) -> ConsumeStatus:
            for msg in msgs:
                paid = json.loads(msg.body)
                if self.name == "order":
                    change = functools.partial(svc.order_paid, order_id=paid["orderId"])
                else:
                    change = functools.partial(
                        svc.add_score, user_id=paid["userId"], pay_amount=paid["payAmount"]
                    )
                self.apply(group, msg, change)
            return ConsumeStatus.CONSUME_SUCCESS

        self.consumer(group, svc.PAY_TOPIC, svc.TAG_PAID, broadcast=False)
        self.consumers[-1].register_listener(on_paid)

    def _timeout_consumer(self) -> None:
        self.producer = Producer(PRODUCER_GROUP, self.namesrv, instance_name="shop-order")

        async def on_timeout(msgs: list[MessageExt]) -> ConsumeStatus:
            for msg in msgs:
                cancel = svc.CancelOrder.parse(msg.body)
                if svc.expire(self.conn, cancel.orderId):
                    assert self.producer is not None
                    await send_cancel(self.producer, cancel)
                self.apply(TIMEOUT_GROUP, msg, lambda conn: None)
            return ConsumeStatus.CONSUME_SUCCESS

        self.consumer(TIMEOUT_GROUP, svc.ORDER_TOPIC, svc.TAG_TIMEOUT, broadcast=False)
        self.consumers[-1].register_listener(on_timeout)


async def send_cancel(producer: Producer, cancel: svc.CancelOrder) -> None:
    await producer.send(
        Message(svc.ORDER_TOPIC, cancel.body(), tags=svc.TAG_CANCEL, keys=cancel.orderId)
    )


# --- commands ---------------------------------------------------------------------------------


async def serve(args: argparse.Namespace) -> int:
    service = Service(Path(args.dir), args.service, args.namesrv)
    await service.run()
    return 0


async def order(args: argparse.Namespace) -> int:
    root = Path(args.dir)
    request = svc.OrderRequest(args.user, args.goods, args.number, args.coupon, args.money)
    producer = Producer(PRODUCER_GROUP, args.namesrv)
    await producer.start()
    try:
        try:
            cancel = svc.place_order(root, request, args.fail_at)
        except shopdb.ShopError as exc:
            rollback: svc.CancelOrder | None = getattr(exc, "cancel", None)
            if rollback is not None:
                await send_cancel(producer, rollback)
            _emit({"orderId": rollback.orderId if rollback else None, "error": str(exc)})
            return 1
        timeout = Message(
            svc.ORDER_TOPIC,
            cancel.body(),
            tags=svc.TAG_TIMEOUT,
            keys=cancel.orderId,
            delay_level=args.cancel_level,
        )
        await producer.send(timeout)
        _emit({"orderId": cancel.orderId, "status": "confirmed"})
        return 0
    finally:
        await producer.shutdown()


async def pay(args: argparse.Namespace) -> int:
    from payment import pay_order

    return await pay_order(
        Path(args.dir),
        args.order_id,
        args.namesrv,
        PAY_PRODUCER_GROUP,
        answer_by_check=args.answer_by_check,
    )


def show(args: argparse.Namespace) -> int:
    print(shopdb.dumps(shopdb.snapshot(Path(args.dir))))
    return 0


def wait(args: argparse.Namespace) -> int:
    root = Path(args.dir)
    if args.order is not None:
        conn = shopdb.connect(root, "order")
        states = {"cancelled": (shopdb.ORDER_CANCEL, None), "paid": (None, shopdb.PAY_PAID)}
        status, pay_status = states[args.status]

        def order_reached() -> bool:
            row = conn.execute(
                "SELECT order_status, pay_status FROM orders WHERE order_id = ?", (args.order,)
            ).fetchone()
            if row is None:
                return False
            if status is not None:
                return bool(row["order_status"] == status)
            return bool(row["pay_status"] == pay_status)

        svc.wait_for(order_reached, args.timeout, f"order {args.order} {args.status}")
    else:
        column = "duplicates" if args.duplicates else "consumer_times"

        def logged() -> bool:
            total = 0
            for service in ("goods", "coupon", "user", "order"):
                row = (
                    shopdb.connect(root, service)
                    .execute(
                        f"SELECT {column} FROM mq_consumer_log WHERE msg_key = ? AND msg_tag = ?",
                        (args.key, args.tag),
                    )
                    .fetchone()
                )
                total += 0 if row is None else min(int(row[column]), 1)
            return bool(total >= args.count)

        what = "skipped" if args.duplicates else "consumed"
        svc.wait_for(logged, args.timeout, f"{args.count} services {what} {args.tag} {args.key}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="shop.py", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("setup", "serve", "order", "pay", "show", "wait"):
        sub = commands.add_parser(name)
        sub.add_argument("dir")
        if name in ("serve", "order", "pay"):
            sub.add_argument("-n", "--namesrv", default=DEFAULT_NAMESRV)
    commands.choices["serve"].add_argument("service", choices=("goods", "coupon", "user", "order"))
    order_parser = commands.choices["order"]
    order_parser.add_argument("--user", type=int, required=True)
    order_parser.add_argument("--goods", type=int, required=True)
    order_parser.add_argument("--number", type=int, required=True)
    order_parser.add_argument("--coupon", type=int)
    order_parser.add_argument("--money", type=int, default=0)
    order_parser.add_argument("--fail-at", choices=svc.STEPS)
    order_parser.add_argument("--cancel-level", type=int, default=DEFAULT_CANCEL_LEVEL)
    pay_parser = commands.choices["pay"]
    pay_parser.add_argument("order_id")
    pay_parser.add_argument(
        "--answer-by-check",
        action="store_true",
        help="leave the transaction unknown and answer the broker's check-back instead",
    )
    wait_parser = commands.choices["wait"]
    target = wait_parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--order", metavar="ID", help="wait for this order's --status")
    target.add_argument("--key", help="wait until --count services logged --tag and --key")
    wait_parser.add_argument("--status", choices=("cancelled", "paid"), default="cancelled")
    wait_parser.add_argument("--tag", default=svc.TAG_CANCEL)
    wait_parser.add_argument("--duplicates", action="store_true", help="count skipped copies")
    wait_parser.add_argument("--count", type=int, default=1)
    wait_parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args(argv)
    try:
        if args.command == "setup":
            shopdb.setup(Path(args.dir))
            return 0
        if args.command == "show":
            return show(args)
        if args.command == "wait":
            return wait(args)
        runner = {"serve": serve, "order": order, "pay": pay}[args.command]
        return asyncio.run(runner(args))
    except shopdb.ShopError as exc:
        print(f"shop: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
