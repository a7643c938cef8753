"""Property names and the reserved set."""

from __future__ import annotations

from rmq.common import msgconst


def test_reserved_names_are_all_property_names_but_four() -> None:
    names = {value for key, value in vars(msgconst).items() if key.startswith("PROPERTY_")}
    broker_settable = {
        "TRAN_PREPARED_QUEUE_OFFSET",
        "TRANSACTION_CHECK_TIMES",
        "CHECK_IMMUNITY_TIME_IN_SECONDS",
        "INNER_MULTI_DISPATCH",
    }
    assert len(names) == 35
    assert names - broker_settable == msgconst.SYSTEM_PROPERTY_NAMES


def test_key_strings() -> None:
    assert msgconst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX == "UNIQ_KEY"
    assert msgconst.PROPERTY_REAL_QUEUE_ID == "REAL_QID"
    assert msgconst.PROPERTY_TRANSACTION_PREPARED == "TRAN_MSG"
    assert msgconst.PROPERTY_TRACE_SWITCH == "TRACE_ON"
    assert msgconst.KEY_SEPARATOR == " "
