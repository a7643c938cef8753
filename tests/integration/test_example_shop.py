"""examples/shop, the tutorial's e-commerce case study, run end to end: `run.sh` against a
real rmq name server and broker (delay levels of a few seconds, a one-second transaction
check), then the shop's final state checked against what its three orders must leave.

Order A (2 phones at 1000, coupon 1 worth 100, 500 from the balance) is paid through a
transactional message whose outcome is left to the broker's check-back; order B fails after
its last step and is rolled back by a broadcast cancel message; order C is never paid and
its delayed time-out cancels it; B's cancel message sent again changes nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.procs import RmqProcesses

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "shop"

# Level 3 (the orders' time-out) at 8 s: order A's payment, committed by the check-back a
# second or two after its half message, must come first even on a loaded machine.
BROKER_PROPS = {
    "messageDelayLevel": "1s 1s 8s 2s 3s 3s 4s 4s 5s 5s 6s 6s 7s 7s 8s 8s 9s 9s",
    "transactionTimeOut": 1000,
    "transactionCheckInterval": 1000,
}


def run_shop(tmp_path: Path) -> tuple[dict[str, Any], Path]:
    procs = RmqProcesses(tmp_path)
    try:
        namesrv = procs.start_namesrv()
        procs.start_broker(namesrv=namesrv, props=BROKER_PROPS)
        shop_dir = tmp_path / "shop"
        env = {
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "PYTHON": sys.executable,
            "RMQ_NAMESRV": namesrv.addr,
            "SHOP_DIR": str(shop_dir),
            "SHOP_CANCEL_LEVEL": "3",
            "SHOP_CHECK_BACK": "1",
            "HOME": str(tmp_path / "home"),
        }
        result = subprocess.run(
            ["bash", str(EXAMPLE / "run.sh")],
            capture_output=True,
            env=env,
            timeout=300,
        )
        logs = "".join(
            f"\n--- {log.name}\n{log.read_text()}" for log in sorted(shop_dir.glob("*.log"))
        )
        assert result.returncode == 0, result.stderr.decode() + logs
        left = subprocess.run(["pgrep", "-f", f"shop.py serve {shop_dir} "], capture_output=True)
        assert left.returncode == 1, f"run.sh left its services running: {left.stdout!r}"
        return json.loads(result.stdout.decode().strip().splitlines()[-1]), shop_dir
    finally:
        procs.kill_all()


def by_order(rows: list[dict[str, Any]], key: str = "order_id") -> dict[str, dict[str, Any]]:
    return {row[key]: row for row in rows}


def test_the_shop_case_study_end_to_end(tmp_path: Path) -> None:
    state, shop_dir = run_shop(tmp_path)
    orders = sorted(state["order"]["orders"], key=lambda row: row["add_time"])
    assert [row["goods_number"] for row in orders] == [2, 1, 3]
    a, b, c = (row["order_id"] for row in orders)

    # A: confirmed and paid (1400 = 2000 - coupon 100 - balance 500); B and C cancelled
    assert [(row["order_status"], row["pay_status"]) for row in orders] == [(1, 2), (2, 0), (2, 0)]
    assert orders[0]["pay_amount"] == 1400
    assert state["pay"]["pay"] == [
        {
            "pay_id": state["pay"]["pay"][0]["pay_id"],
            "order_id": a,
            "pay_amount": 1400,
            "is_paid": 2,
        }
    ]
    # stock: only A's two phones are gone; B's and C's came back once each
    assert state["goods"]["goods"][0]["goods_number"] == 10 - 2
    stock_log = sorted(
        (row["order_id"], row["goods_number"]) for row in state["goods"]["goods_number_log"]
    )
    assert stock_log == sorted([(a, -2), (b, -1), (b, 1), (c, -3), (c, 3)])
    # coupons: 1 used by A, 2 and 3 given back
    coupons = {
        row["coupon_id"]: (row["is_used"], row["order_id"]) for row in state["coupon"]["coupons"]
    }
    assert coupons == {1: (1, a), 2: (0, None), 3: (0, None)}
    # balance: A's 500 spent, B's 300 and C's 200 refunded; 140 points for A's 1400
    user = state["user"]["users"][0]
    assert (user["user_money"], user["user_score"]) == (5000 - 500, 140)
    money_log = sorted(
        (row["order_id"], row["money_log_type"], row["use_money"])
        for row in state["user"]["user_money_log"]
    )
    assert money_log == sorted([(a, 1, 500), (b, 1, 300), (b, 2, 300), (c, 1, 200), (c, 2, 200)])

    # every service applied each cancel once and skipped the re-sent copy of B's
    for service in ("goods", "coupon", "user", "order"):
        cancels = {
            row["msg_key"]: (row["consumer_status"], row["consumer_times"], row["duplicates"])
            for row in state[service]["mq_consumer_log"]
            if row["msg_tag"] == "order_cancel"
        }
        assert cancels == {b: (1, 1, 1), c: (1, 1, 0)}, service
    # the order service handled both time-outs (A's found it paid) and A's payment
    order_log = {(row["msg_tag"], row["msg_key"]) for row in state["order"]["mq_consumer_log"]}
    assert {("order_timeout", a), ("order_timeout", c)} <= order_log
    pay_id = state["pay"]["pay"][0]["pay_id"]
    assert ("paid", pay_id) in order_log
    assert ("paid", pay_id) in {
        (row["msg_tag"], row["msg_key"]) for row in state["user"]["mq_consumer_log"]
    }
    assert json.loads((shop_dir / "order.log").read_text().splitlines()[0]) == {
        "ready": True,
        "service": "order",
    }
