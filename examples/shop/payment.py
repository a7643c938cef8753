"""The pay service's side of a payment: the `paid` message as a transactional message.

The case study's pay service must tell the order and user services about a payment exactly
when the payment is recorded.  It uses a local message table and a thread pool; RocketMQ's
transactional messages do it with no table: the `paid` message is sent as a half message,
the local transaction records the payment, and the message becomes visible only if that
committed.  When the pay service cannot say (it died between the two, simulated here by
`answer_by_check`), the broker asks it later (CHECK_TRANSACTION_STATE) and the check reads
the payment table.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import services as svc

from rmq.client.api import SendResult
from rmq.client.consumer import MessageExt
from rmq.client.message import Message
from rmq.client.transaction import LocalTransactionState, TransactionProducer

PAID, NOT_PAID = 2, 1


async def pay_order(
    root: Path, order_id: str, namesrv: str, group: str, *, answer_by_check: bool = False
) -> int:
    """Pay `order_id`; prints the payment as JSON.  With `answer_by_check` the local
    transaction's answer is withheld (UNKNOW) and the command waits until the broker's
    check-back has been answered from the payment table."""
    payment = svc.new_payment(root, order_id)
    pay_id = str(payment["payId"])
    checked = asyncio.Event()

    def execute(msg: Message, result: SendResult) -> LocalTransactionState:
        svc.mark_paid(root, pay_id)
        if answer_by_check:
            return LocalTransactionState.UNKNOW
        return LocalTransactionState.COMMIT_MESSAGE

    def check(msg: MessageExt) -> LocalTransactionState:
        state = svc.payment_state(root, " ".join(msg.keys))
        checked.set()
        if state == PAID:
            return LocalTransactionState.COMMIT_MESSAGE
        if state is None:
            return LocalTransactionState.ROLLBACK_MESSAGE
        return LocalTransactionState.UNKNOW

    async with TransactionProducer(group, namesrv, execute=execute, check=check) as producer:
        message = Message(
            svc.PAY_TOPIC, json.dumps(payment).encode(), tags=svc.TAG_PAID, keys=pay_id
        )
        result = await producer.send_in_transaction(message)
        if answer_by_check:
            await asyncio.wait_for(checked.wait(), timeout=180.0)
    state = "checked" if answer_by_check else result.local_transaction_state.name
    print(json.dumps({**payment, "transaction": state}, sort_keys=True), file=sys.stdout)
    return 0
