"""How a message id given by a person is looked up: one rule for `rmq message get` (online,
over the admin API) and `rmq inspect STORE by-id` (offline, over a store's files).

Clients print two ids per message and people paste either: the offset message id (store
host + commitlog offset, `rmq.common.msgid.decode_offset_msg_id`) and the unique key
(UNIQ_KEY, what clients call msgId).  Both are 32 hex characters for IPv4, so the text alone
does not say which one it is; a unique key even decodes as an offset id, to the producer's
IP with a "port" made of its pid and random bits.

* `offset_id_of`: the id is an offset id only when it decodes to an address the caller
  knows holds messages (a broker the name server lists; offline, the store host of the
  record at the decoded offset).  Anything else is looked up as a unique key, and the
  decoded address is never used: an address that only came out of decoding a pasted id is
  not one to connect to.
* `unique_key_matches`: the records with a unique key, in the order they are shown: those
  of user topics first, then the copies in retry, dead-letter and system topics (a retried
  or delayed message keeps its UNIQ_KEY), each earliest stored first.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from rmq.common.message import MessageRecord
from rmq.common.msgid import OffsetMsgId, decode_offset_msg_id
from rmq.common.naming import is_internal_topic


def offset_id_of(msg_id: str, hosts: Collection[str]) -> OffsetMsgId | None:
    """``msg_id`` decoded as an offset message id when it names one of ``hosts`` (addresses
    as ``ip:port``); None when it is to be looked up as a unique key."""
    try:
        where = decode_offset_msg_id(msg_id)
    except ValueError:
        return None
    return where if where.address in hosts else None


def unique_key_matches(records: Iterable[MessageRecord], key: str) -> list[MessageRecord]:
    """The records whose UNIQ_KEY is ``key``: user topics first, earliest stored first."""
    return sorted(
        (record for record in records if record.uniq_key == key),
        key=lambda record: (
            is_internal_topic(record.topic),
            record.store_timestamp,
            record.physical_offset,
        ),
    )
